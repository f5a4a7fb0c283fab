#include "lib/study/sweep.h"

#include <fstream>

#include "lib/study/figures.h"
#include "sim/topo/fabric.h"

namespace rdmasim::study {
namespace {

using nlohmann::json;

// Headline figures in summary.csv, in this order (the keys of headline_json).
constexpr const char* kColumns[] = {"flows", "finished", "last_finish_us", "fct_p50_us", "fct_p99_us",
                                    "slowdown_p50", "slowdown_p95", "slowdown_p99", "goodput_gbps", "drops",
                                    "pause_frames", "ecn_marks", "paused_us", "max_queue_kb"};

std::vector<std::string> split_values(const std::string& s) {
  std::vector<std::string> out(1);
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '\\' && i + 1 < s.size()) out.back() += c, out.back() += s[++i];
      else if (c == '"') quoted = false, out.back() += c;
      else out.back() += c;
      continue;
    }
    if (c == '"') quoted = true;
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

std::string csv(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
}

const char* type_name(const json& j) {
  return j.is_object() ? "an object" : j.is_array() ? "an array" : j.is_string() ? "a string"
         : j.is_number() ? "a number" : j.is_boolean() ? "a boolean" : "null";
}

// A fabric given as a file (or none: the default) becomes inline.
void inline_fabric(json& study, const std::string& path, const std::string& base_dir) {
  if (!study.contains("fabric")) {
    study["fabric"] = topo::default_fabric_config();
    return;
  }
  if (!study["fabric"].is_string()) return;
  std::string file = study["fabric"].get<std::string>();
  if (!file.empty() && file[0] != '/' && !base_dir.empty()) file = base_dir + "/" + file;
  std::ifstream in(file);
  if (!in) throw SweepError("--vary " + path + ": the study's fabric " + file + " cannot be read");
  try {
    study["fabric"] = json::parse(in);
  } catch (const json::exception& e) {
    throw SweepError("--vary " + path + ": the study's fabric " + file + " is not JSON: " + e.what());
  }
}

}  // namespace

Vary parse_vary(const std::string& arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    throw SweepError("--vary " + arg + ": expected PATH=VALUE[,VALUE...]");
  Vary v{arg.substr(0, eq), {}};
  const std::string rest = arg.substr(eq + 1);
  if (rest.empty()) throw SweepError("--vary " + v.path + ": no value");
  for (const std::string& t : split_values(rest)) {
    if (t.empty()) throw SweepError("--vary " + v.path + ": an empty value in \"" + rest + "\"");
    try {
      v.values.push_back(json::parse(t));
    } catch (const json::exception&) {
      if (t.front() == '"' || t.front() == '[' || t.front() == '{')
        throw SweepError("--vary " + v.path + ": " + t + " is not valid JSON");
      v.values.push_back(t);   // a bare word: a string
    }
  }
  return v;
}

void set_path(json& study, const std::string& path, const json& value, const std::string& base_dir) {
  std::vector<std::string> segs(1);
  for (char c : path) {
    if (c == '.') segs.emplace_back();
    else segs.back() += c;
  }
  for (const std::string& s : segs)
    if (s.empty()) throw SweepError("--vary " + path + ": an empty segment in the path");
  if (segs[0] == "fabric" && segs.size() > 1) inline_fabric(study, path, base_dir);
  json* at = &study;
  std::string walked;
  for (size_t i = 0; i < segs.size(); ++i) {
    const std::string& s = segs[i];
    const bool last = i + 1 == segs.size();
    const std::string where = walked.empty() ? "the study" : walked;
    if (at->is_object()) {
      if (!at->contains(s) && !last)
        throw SweepError("--vary " + path + ": " + where + " has no key \"" + s + "\"");
      at = &(*at)[s];
    } else if (at->is_array()) {
      if (!is_index(s) || std::stoul(s) >= at->size())
        throw SweepError("--vary " + path + ": \"" + s + "\" is not an index of " + where + " (an array of " +
                         std::to_string(at->size()) + ")");
      at = &(*at)[std::stoul(s)];
    } else {
      throw SweepError("--vary " + path + ": " + where + " is " + type_name(*at) + ", not an object or array");
    }
    walked += (walked.empty() ? "" : ".") + s;
  }
  *at = value;
}

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::vector<SweepPoint> expand_sweep(const json& study, const std::vector<Vary>& vary, const std::string& base_dir) {
  size_t n = 1;
  for (const Vary& v : vary) n *= v.values.size();
  std::vector<SweepPoint> points;
  char name[32];
  for (size_t k = 0; k < n; ++k) {
    SweepPoint p;
    snprintf(name, sizeof name, "p%03zu", k);
    p.name = name;
    p.study = study;
    std::string label;
    size_t rest = k;
    std::vector<size_t> idx(vary.size());
    for (size_t i = vary.size(); i-- > 0;) {   // the last --vary changes fastest
      idx[i] = rest % vary[i].values.size();
      rest /= vary[i].values.size();
    }
    for (size_t i = 0; i < vary.size(); ++i) {
      const json& v = vary[i].values[idx[i]];
      set_path(p.study, vary[i].path, v, base_dir);
      p.values.push_back(v);
      label += (i ? ", " : "") + vary[i].path + "=" + value_text(v);
    }
    p.study["name"] = study.value("name", std::string("study")) + " [" + label + "]";
    points.push_back(std::move(p));
  }
  return points;
}

std::string summary_csv_header(const std::vector<Vary>& vary) {
  std::string h = "point,dir";
  for (const Vary& v : vary) h += "," + csv(v.path);
  h += ",status";
  for (const char* c : kColumns) h += std::string(",") + c;
  return h + "\n";
}

std::string summary_csv_row(const SweepPoint& p, const std::string& status, const json* summary) {
  std::string r = p.name + "," + p.name;
  for (const json& v : p.values) r += "," + csv(value_text(v));
  r += "," + status;
  for (const char* c : kColumns) {
    r += ",";
    if (summary && summary->contains("headline") && (*summary)["headline"].contains(c))
      r += (*summary)["headline"][c].dump();
  }
  return r + "\n";
}

}  // namespace rdmasim::study
