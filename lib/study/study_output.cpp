// A study's output files and its stdout summary.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/study/figures.h"
#include "lib/study/study.h"

namespace rdmasim::study {
namespace {

using nlohmann::json;

double fct_ns(const FlowResult& r, const FlowSpec& f) { return r.finished ? to_ns(r.finish - f.start) : -1; }

double goodput_gbps(const FlowResult& r, const FlowSpec& f) {
  const Time fct = r.finish - f.start;
  return r.finished && fct > 0 ? static_cast<double>(f.bytes) * 8 / to_ns(fct) : 0;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(path + ": cannot write: " + strerror(errno));
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string fmt(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

json flows_json(const StudySpec& spec, const StudyResult& result) {
  json out = json::array();
  for (size_t k = 0; k < spec.flows.size(); ++k) {
    const FlowSpec& f = spec.flows[k];
    const FlowResult& r = result.flows[k];
    const double fct = fct_ns(r, f);
    const double ideal = to_ns(r.ideal_fct);
    json bins = json::array();
    for (uint64_t b : r.rx_bins) bins.push_back(static_cast<double>(b) * 8 / to_ns(spec.goodput_bin));
    json j = {{"id", k}, {"name", f.name}, {"src", result.nic_names.at(f.src)},
              {"dst", result.nic_names.at(f.dst)}, {"op", op_name(f.op)}, {"qp", qp_name(f.qp)},
              {"priority", f.priority}, {"bytes", f.bytes}, {"messages", f.messages},
              {"message_bytes", f.message_bytes}, {"window", f.window},
              {"start_ns", to_ns(f.start)},
              {"first_byte_ns", r.first_byte < 0 ? json() : json(to_ns(r.first_byte))},
              {"last_byte_ns", r.last_byte < 0 ? json() : json(to_ns(r.last_byte))},
              {"finish_ns", r.finished ? json(to_ns(r.finish)) : json()},
              {"fct_ns", r.finished ? json(fct) : json()},
              {"goodput_gbps", r.finished ? json(goodput_gbps(r, f)) : json()},
              {"bottleneck_gbps", r.bottleneck_gbps},
              {"ideal_fct_ns", ideal},
              {"slowdown", r.finished && ideal > 0 ? json(fct / ideal) : json()},
              {"bytes_received", r.bytes_received},
              {"messages_completed", r.messages_completed},
              {"status", r.finished ? "finished" : "failed"},
              {"goodput_series", {{"bin_ns", to_ns(spec.goodput_bin)}, {"gbps", bins}}}};
    if (!r.finished) j["error"] = r.error;
    out.push_back(j);
  }
  return out;
}

static json programs_json(const StudyResult& result) {
  json a = json::array();
  for (const ProgramResult& p : result.programs) {
    json by_cause = json::object();
    Time busy = 0;
    for (const auto& [cause, t] : p.cpu_busy) {
      by_cause[cause] = to_ns(t);
      busy += t;
    }
    a.push_back({{"program", p.program}, {"host", p.host}, {"rank", p.rank}, {"ok", p.ok},
                 {"outcome", p.outcome}, {"end_ns", p.end < 0 ? json(nullptr) : json(to_ns(p.end))},
                 {"cpu_busy_ns", to_ns(busy)}, {"cpu_busy_ns_by_cause", by_cause}});
  }
  return a;
}

void write_outputs(const StudySpec& spec, const StudyResult& result, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create: " + ec.message());
  const json flows = flows_json(spec, result);
  write_file(dir + "/flows.json", flows.dump(1) + "\n");
  std::ostringstream csv;
  csv << "id,name,src,dst,op,qp,priority,bytes,start_ns,first_byte_ns,last_byte_ns,finish_ns,fct_ns,"
         "goodput_gbps,bottleneck_gbps,ideal_fct_ns,slowdown,status\n";
  // Shortest text that reads back as the same double (times keep their picoseconds).
  auto num = [](const json& v) { return v.is_null() ? std::string() : v.dump(); };
  for (const json& j : flows) {
    csv << j["id"].get<size_t>() << "," << csv_field(j["name"]) << "," << csv_field(j["src"]) << ","
        << csv_field(j["dst"]) << "," << j["op"].get<std::string>() << "," << j["qp"].get<std::string>() << ","
        << j["priority"].get<int>() << "," << j["bytes"].get<uint64_t>() << "," << num(j["start_ns"]) << ","
        << num(j["first_byte_ns"]) << "," << num(j["last_byte_ns"]) << "," << num(j["finish_ns"]) << ","
        << num(j["fct_ns"]) << "," << num(j["goodput_gbps"]) << "," << num(j["bottleneck_gbps"]) << ","
        << num(j["ideal_fct_ns"]) << "," << num(j["slowdown"]) << "," << j["status"].get<std::string>() << "\n";
  }
  write_file(dir + "/flows.csv", csv.str());
  write_file(dir + "/fct.txt", fct_txt(spec, result));
  write_file(dir + "/summary.json", summary_json(spec, result).dump(1) + "\n");
  write_file(dir + "/counters.json", result.counters.dump(1) + "\n");
  if (!result.queues.empty()) {
    // One row per sample, port and class that was non-empty at any sample of the port.
    std::ostringstream q;
    q << "time_ns,port,class,depth_bytes\n";
    for (const PortSeries& ps : result.queues) {
      std::array<bool, 8> used{};
      for (const auto& s : ps.samples)
        for (int c = 0; c < 8; ++c) used[c] = used[c] || s[c] != 0;
      if (std::none_of(used.begin(), used.end(), [](bool b) { return b; })) used[0] = true;
      for (size_t i = 0; i < ps.samples.size(); ++i)
        for (int c = 0; c < 8; ++c)
          if (used[c])
            q << json(to_ns(ps.start + static_cast<Time>(i) * ps.interval)).dump() << "," << ps.port << "," << c
              << "," << ps.samples[i][c] << "\n";
    }
    write_file(dir + "/queues.csv", q.str());
  }
  write_file(dir + "/report.html", report_html(spec, result));
  if (!result.programs.empty()) {
    write_file(dir + "/programs.json", programs_json(result).dump(1) + "\n");
    std::string log;
    for (const ProgramLine& l : result.program_output) log += program_line(l) + "\n";
    write_file(dir + "/programs.log", log);
  }
}

// The HPCC simulator's fct.txt line (third.cc, qp_finish): "%08x %08x %u %u %lu %lu %lu %lu"
// = sip dip sport dport size start_ns fct_ns standalone_fct_ns, written as each flow
// finishes. Times are whole ns (rounded down); standalone_fct is the ideal FCT.
std::string fct_txt(const StudySpec& spec, const StudyResult& result) {
  std::vector<size_t> order;
  for (size_t k = 0; k < spec.flows.size(); ++k)
    if (result.flows[k].finished) order.push_back(k);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return result.flows[a].finish < result.flows[b].finish; });
  std::string out;
  for (size_t k : order) {
    const FlowSpec& f = spec.flows[k];
    const FlowResult& r = result.flows[k];
    // RoCEv2: the data packets' UDP ports; elsewhere (no UDP) the QPNs at the two ends.
    const bool udp = r.udp_sport != 0;
    char line[160];
    snprintf(line, sizeof line, "%08x %08x %u %u %llu %lld %lld %lld\n", result.nic_ipv4.at(f.src),
             result.nic_ipv4.at(f.dst), udp ? r.udp_sport : r.data_src_qpn, udp ? 4791u : r.data_dst_qpn,
             static_cast<unsigned long long>(f.bytes), static_cast<long long>(f.start / kNanosecond),
             static_cast<long long>((r.finish - f.start) / kNanosecond),
             static_cast<long long>(r.ideal_fct / kNanosecond));
    out += line;
  }
  return out;
}

std::string program_line(const ProgramLine& l) {
  char t[48];
  snprintf(t, sizeof t, "%.9f", static_cast<double>(l.at) / static_cast<double>(kSecond));
  return std::string("[") + t + " " + l.host + "]" + (l.stream == 2 ? " (stderr) " : " ") + l.text;
}

std::string summary(const StudySpec& spec, const StudyResult& result, bool wall_time) {
  std::ostringstream s;
  s << "study " << spec.name << ": " << spec.flows.size() << " flows; fabric (" << spec.fabric_source
    << ") " << result.fabric_summary << "\n";
  s << "simulated " << fmt(to_us(result.end)) << " us";
  if (wall_time) s << " in " << fmt(result.wall_seconds) << " s";
  s << " (" << result.events << " events)\n";
  std::vector<double> fcts, slow;
  size_t done = 0;
  for (size_t k = 0; k < spec.flows.size(); ++k) {
    const FlowResult& r = result.flows[k];
    if (!r.finished) continue;
    ++done;
    fcts.push_back(fct_ns(r, spec.flows[k]) / 1000);
    slow.push_back(fct_ns(r, spec.flows[k]) / to_ns(r.ideal_fct));
  }
  s << "flows: " << done << " finished, " << spec.flows.size() - done << " failed";
  if (!fcts.empty()) {
    std::sort(fcts.begin(), fcts.end());
    std::sort(slow.begin(), slow.end());
    s << "; FCT min/median/max " << fmt(fcts.front()) << "/" << fmt(fcts[fcts.size() / 2]) << "/"
      << fmt(fcts.back()) << " us; slowdown median " << fmt(slow[slow.size() / 2]) << " max "
      << fmt(slow.back());
  }
  s << "\n";
  const Headline h = headline(spec, result);
  s << "fabric: " << h.drops << " drops, " << h.lost_on_links << " packets lost on links, " << h.pause_frames
    << " PFC frames sent, " << h.ecn_marks << " ECN marks\n";
  if (!result.programs.empty()) {
    size_t ok = 0;
    for (const ProgramResult& p : result.programs) ok += p.ok;
    s << "programs: " << result.programs.size() << " instances, " << ok << " returned 0, "
      << result.programs.size() - ok << " failed; " << result.program_output.size()
      << " lines of output (programs.log)\n";
  }
  for (const std::string& f : result.failures) s << "FAILED " << f << "\n";
  return s.str();
}

}  // namespace rdmasim::study
