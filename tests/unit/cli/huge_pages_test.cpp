// When `rdmasim study` re-executes itself with glibc.malloc.hugetlb=1 (apps/rdmasim/huge_pages.h).
#include <doctest/doctest.h>

#include "apps/rdmasim/huge_pages.h"

using rdmasim::cli::HugePageFacts;
using rdmasim::cli::huge_page_tunables;

TEST_CASE("huge pages: asked for when the kernel gives them on request or always") {
  // The tunable's name and value as glibc 2.35+ reads them (glibc manual, "Memory
  // Allocation Tunables": 1 = madvise transparent huge pages).
  CHECK(huge_page_tunables({nullptr, nullptr, nullptr, "madvise"}) == "glibc.malloc.hugetlb=1");
  CHECK(huge_page_tunables({nullptr, nullptr, nullptr, "always"}) == "glibc.malloc.hugetlb=1");
  // Other tunables the user set stay, joined with ':' (GLIBC_TUNABLES's separator).
  CHECK(huge_page_tunables({"glibc.malloc.tcache_count=0", nullptr, nullptr, "madvise"}) ==
        "glibc.malloc.tcache_count=0:glibc.malloc.hugetlb=1");
  CHECK(huge_page_tunables({"", nullptr, nullptr, "madvise"}) == "glibc.malloc.hugetlb=1");
  // RDMASIM_HUGE_PAGES other than "0" does not opt out.
  CHECK(huge_page_tunables({nullptr, "1", nullptr, "madvise"}) == "glibc.malloc.hugetlb=1");
}

TEST_CASE("huge pages: no re-execution when it would do nothing, undo a choice, or loop") {
  // The user's own setting (0 or 1), and the re-executed process itself, which has it.
  CHECK_FALSE(huge_page_tunables({"glibc.malloc.hugetlb=0", nullptr, nullptr, "madvise"}));
  CHECK_FALSE(huge_page_tunables({"glibc.malloc.hugetlb=1", nullptr, nullptr, "madvise"}));
  CHECK_FALSE(huge_page_tunables({"glibc.malloc.tcache_count=0:glibc.malloc.hugetlb=1", nullptr,
                                  nullptr, "madvise"}));
  // The opt-out.
  CHECK_FALSE(huge_page_tunables({nullptr, "0", nullptr, "madvise"}));
  // No transparent huge pages in this kernel, or no sysfs file to say.
  CHECK_FALSE(huge_page_tunables({nullptr, nullptr, nullptr, "never"}));
  CHECK_FALSE(huge_page_tunables({nullptr, nullptr, nullptr, ""}));
  // Under valgrind (its preload library is vgpreload_<tool>-<platform>.so) an exec would
  // leave the tool.
  CHECK_FALSE(huge_page_tunables(
      {nullptr, nullptr, "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so", "madvise"}));
  CHECK(huge_page_tunables({nullptr, nullptr, "/usr/lib/libfoo.so", "madvise"}) == "glibc.malloc.hugetlb=1");
}
