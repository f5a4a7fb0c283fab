// `rdmasim sweep`: every point of a cross product of parameter values as its own study, in
// its own folder, N child processes at once; then summary.csv with a row per point.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "apps/rdmasim/commands.h"
#include "apps/rdmasim/progress.h"
#include "lib/study/study.h"
#include "lib/study/sweep.h"
#include "sim/topo/fabric.h"

namespace rdmasim::cli {
namespace {

using nlohmann::json;

std::string point_label(const std::vector<study::Vary>& vary, const study::SweepPoint& p) {
  std::string l;
  for (size_t i = 0; i < vary.size(); ++i) l += (i ? ", " : "") + vary[i].path + "=" + study::value_text(p.values[i]);
  return l;
}

// The child: runs one point with its stdout and stderr in its folder; never returns.
[[noreturn]] void run_point(const study::StudySpec& spec, const std::string& dir) {
  const int out = open((dir + "/stdout.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = open((dir + "/stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out >= 0) dup2(out, STDOUT_FILENO);
  if (err >= 0) dup2(err, STDERR_FILENO);
  int status = kExitFailed;
  try {
    const study::StudyResult result = study::run_study(spec);
    study::write_outputs(spec, result, dir);
    std::cout << study::summary(spec, result);
    status = result.ok ? kExitOk : kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << "rdmasim sweep: " << e.what() << "\n";
  }
  std::cout.flush();
  std::cerr.flush();
  _exit(status);
}

std::string status_text(int wstatus) {
  if (WIFEXITED(wstatus)) {
    const int c = WEXITSTATUS(wstatus);
    return c == kExitOk ? "ok" : c == kExitFailed ? "failed" : "exit " + std::to_string(c);
  }
  if (WIFSIGNALED(wstatus)) return std::string("killed by signal ") + std::to_string(WTERMSIG(wstatus));
  return "unknown";
}

}  // namespace

int run_sweep(const SweepArgs& a) {
  json j;
  std::string why;
  if (!load_json(a.study, &j, &why)) {
    std::cerr << "rdmasim: " << why << "\n";
    return kExitUsage;
  }
  const size_t slash = a.study.rfind('/');
  const std::string base = slash == std::string::npos ? "." : a.study.substr(0, slash);
  std::vector<study::Vary> vary;
  std::vector<study::SweepPoint> points;
  try {
    std::set<std::string> seen;
    for (const std::string& v : a.vary) {
      vary.push_back(study::parse_vary(v));
      if (!seen.insert(vary.back().path).second)
        throw study::SweepError("--vary " + vary.back().path + ": given twice");
    }
    points = study::expand_sweep(j, vary, base);
  } catch (const study::SweepError& e) {
    std::cerr << "rdmasim sweep: " << e.what() << "\n";
    return kExitUsage;
  }
  // Every point must be a valid study before any runs.
  std::vector<study::StudySpec> specs;
  for (const study::SweepPoint& p : points) {
    try {
      specs.push_back(study::parse_study(p.study, base));
    } catch (const topo::ConfigError& e) {
      for (const auto& line : e.errors())
        std::cerr << "rdmasim sweep: " << point_label(vary, p) << ": " << line << "\n";
      return kExitUsage;
    }
  }
  const std::string out = a.out.empty() ? j.value("name", std::string("study")) + ".sweep" : a.out;
  std::error_code ec;
  for (const study::SweepPoint& p : points) {
    std::filesystem::create_directories(out + "/" + p.name, ec);
    std::ofstream f(out + "/" + p.name + "/study.json");
    f << p.study.dump(1) << "\n";
    if (ec || !f) {
      std::cerr << "rdmasim sweep: " << out << "/" << p.name << ": cannot write: "
                << (ec ? ec.message() : std::string(strerror(errno))) << "\n";
      return kExitFailed;
    }
  }

  const bool show = progress_wanted(a.quiet);
  const size_t jobs = std::max(1u, a.jobs);
  std::map<pid_t, size_t> running;
  std::vector<std::string> status(points.size(), "not run");
  size_t next = 0, done = 0;
  std::cout.flush();
  while (next < points.size() || !running.empty()) {
    while (next < points.size() && running.size() < jobs) {
      const pid_t pid = fork();
      if (pid == 0) run_point(specs[next], out + "/" + points[next].name);
      if (pid < 0) {
        status[next++] = std::string("fork failed: ") + strerror(errno);
        continue;
      }
      running[pid] = next++;
    }
    if (running.empty()) break;
    int ws = 0;
    const pid_t pid = waitpid(-1, &ws, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    status[it->second] = status_text(ws);
    running.erase(it);
    ++done;
    if (show)
      progress_show("sweep: " + std::to_string(done) + "/" + std::to_string(points.size()) + " points done, " +
                    std::to_string(running.size()) + " running");
  }
  if (show) progress_show("");

  std::ofstream csv(out + "/summary.csv");
  csv << study::summary_csv_header(vary);
  size_t ok = 0;
  for (size_t k = 0; k < points.size(); ++k) {
    json s;
    std::ifstream in(out + "/" + points[k].name + "/summary.json");
    bool have = false;
    if (in) try {
        s = json::parse(in);
        have = true;
      } catch (const json::exception&) {
      }
    csv << study::summary_csv_row(points[k], status[k], have ? &s : nullptr);
    ok += status[k] == "ok";
    if (!a.quiet) std::cout << points[k].name << "  " << point_label(vary, points[k]) << ": " << status[k] << "\n";
  }
  csv.close();
  if (!csv) {
    std::cerr << "rdmasim sweep: " << out << "/summary.csv: cannot write\n";
    return kExitFailed;
  }
  if (!a.quiet)
    std::cout << "sweep: " << points.size() << " points, " << ok << " ok, " << points.size() - ok
              << " not; summary in " << out << "/summary.csv\n";
  return ok == points.size() ? kExitOk : kExitFailed;
}

}  // namespace rdmasim::cli
