#include "apps/rdmasim/huge_pages.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace rdmasim::cli {
namespace {

constexpr const char* kTunable = "glibc.malloc.hugetlb";

// "always [madvise] never" -> "madvise"; "" when the file cannot be read.
std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return text.substr(open + 1, close - open - 1);
}

}  // namespace

std::optional<std::string> huge_page_tunables(const HugePageFacts& f) {
  if (f.opt_out && std::strcmp(f.opt_out, "0") == 0) return std::nullopt;
  if (f.tunables && std::strstr(f.tunables, kTunable)) return std::nullopt;
  if (f.thp_mode != "always" && f.thp_mode != "madvise") return std::nullopt;
  if (f.preload && std::strstr(f.preload, "vgpreload")) return std::nullopt;
  // hugetlb=1: malloc advises MADV_HUGEPAGE on what it takes from the kernel (sbrk and
  // mmap); 2 would ask for reserved hugetlbfs pages, which a machine rarely has.
  std::string value = std::string(kTunable) + "=1";
  if (f.tunables && *f.tunables) value = std::string(f.tunables) + ":" + value;
  return value;
}

void prefer_huge_pages(char** argv) {
  const HugePageFacts facts{std::getenv("GLIBC_TUNABLES"), std::getenv("RDMASIM_HUGE_PAGES"),
                            std::getenv("LD_PRELOAD"), thp_mode()};
  const std::optional<std::string> value = huge_page_tunables(facts);
  if (!value) return;
  const std::optional<std::string> before =
      facts.tunables ? std::optional<std::string>(facts.tunables) : std::nullopt;
  if (setenv("GLIBC_TUNABLES", value->c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // No /proc, or no exec allowed: run here, with ordinary pages.
  if (before) setenv("GLIBC_TUNABLES", before->c_str(), 1);
  else unsetenv("GLIBC_TUNABLES");
}

}  // namespace rdmasim::cli
