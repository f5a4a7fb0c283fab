// Transparent huge pages for the simulator's heap. A large study is bound by cache and TLB
// misses on its ports, packets and event queue; with 4 KiB pages a 1024-host fabric's 80 MB
// of state needs some 20,000 TLB entries, with 2 MiB pages 40. Debian's kernels give huge
// pages only to memory that asks for them (transparent_hugepage=madvise), and glibc's
// malloc asks only when the tunable glibc.malloc.hugetlb=1 is set before the process
// starts, so `rdmasim study` sets it and executes itself again, once.
#pragma once

#include <optional>
#include <string>

namespace rdmasim::cli {

// What decides whether to re-execute, read from the environment and the kernel.
struct HugePageFacts {
  const char* tunables = nullptr;   // $GLIBC_TUNABLES (nullptr: unset)
  const char* opt_out = nullptr;    // $RDMASIM_HUGE_PAGES ("0" keeps the process as it is)
  const char* preload = nullptr;    // $LD_PRELOAD (valgrind's preload: not under valgrind)
  std::string thp_mode;             // the bracketed word of .../transparent_hugepage/enabled
};

// The GLIBC_TUNABLES value to re-execute with, or nothing: when the user opted out, already
// chose glibc.malloc.hugetlb themselves (or this is the re-executed process), the kernel has
// no transparent huge pages ("never", or no such file), or valgrind runs the process (an
// exec would escape it).
std::optional<std::string> huge_page_tunables(const HugePageFacts& facts);

// Reads the facts; when huge_page_tunables() gives a value, sets it and executes
// /proc/self/exe with argv. Returns only when it did not (or the exec failed: the run goes
// on with ordinary pages, the environment as it was).
void prefer_huge_pages(char** argv);

}  // namespace rdmasim::cli
