// `rdmasim study`: parses a study file, runs it in-process, writes its outputs.
#include <cstdlib>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/rdmasim/commands.h"
#include "apps/rdmasim/progress.h"
#include "lib/study/study.h"
#include "sim/topo/fabric.h"

namespace rdmasim::cli {

int run_study(const StudyArgs& a) {
  nlohmann::json j;
  std::string why;
  if (!load_json(a.study, &j, &why)) {
    std::cerr << "rdmasim: " << why << "\n";
    return kExitUsage;
  }
  study::StudySpec spec;
  try {
    // Paths inside the study (a fabric config file) are relative to the study file.
    const size_t slash = a.study.rfind('/');
    spec = study::parse_study(j, slash == std::string::npos ? "." : a.study.substr(0, slash));
  } catch (const topo::ConfigError& e) {
    for (const auto& line : e.errors()) std::cerr << a.study << ": " << line << "\n";
    return kExitUsage;
  }
  const std::string out = a.out.empty() ? spec.name + ".out" : a.out;
  try {
    study::RunOptions opts;
    opts.timeline = a.timeline;
    // RDMASIM_PROGRESS_AFTER=S: show the line after S seconds instead of 1 (tests use 0).
    if (const char* after = getenv("RDMASIM_PROGRESS_AFTER")) opts.progress_after = atof(after);
    if (progress_wanted(a.quiet))
      opts.progress = [](const study::Progress& p, bool done) { progress_show(done ? "" : progress_text(p)); };
    const study::StudyResult result = study::run_study(spec, opts);
    study::write_outputs(spec, result, out);
    if (!a.quiet) std::cout << study::summary(spec, result) << "outputs in " << out << "/\n";
    return result.ok ? kExitOk : kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << "rdmasim study: " << e.what() << "\n";
    return kExitFailed;
  }
}

}  // namespace rdmasim::cli
