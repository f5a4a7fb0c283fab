// `rdmasim compare`: several runs (study folders, or a sweep's folder) on one page.
#include <fstream>
#include <iostream>

#include "apps/rdmasim/commands.h"
#include "lib/study/compare.h"

namespace rdmasim::cli {

int run_compare(const CompareArgs& a) {
  std::vector<study::CompareRun> runs;
  try {
    runs = study::load_runs(a.dirs);
  } catch (const std::exception& e) {
    std::cerr << "rdmasim compare: " << e.what() << "\n";
    return kExitUsage;
  }
  std::ofstream out(a.out, std::ios::trunc);
  out << study::compare_html(runs);
  out.close();
  if (!out) {
    std::cerr << "rdmasim compare: " << a.out << ": cannot write\n";
    return kExitFailed;
  }
  std::cout << "compared " << runs.size() << " runs: " << a.out << "\n";
  return kExitOk;
}

}  // namespace rdmasim::cli
