// Parsing a study file: the fabric, flows and generators, observation settings.
#include <algorithm>
#include <fstream>
#include <map>
#include <random>

#include "lib/study/flow_cdf.h"
#include "lib/study/study.h"
#include "sim/topo/config_reader.h"
#include "sim/topo/fabric.h"
#include "sim/topo/fabric_spec.h"

namespace rdmasim::study {
namespace {

using nlohmann::json;
using topo::ConfigReader;
using topo::index;
using topo::join;

#define RDMASIM_FLOW_KEYS "op", "qp", "message_bytes", "messages", "bytes", "start_ns", \
    "priority", "window"

constexpr uint32_t kMaxMessage = 1u << 30;

// "programs": [{"path", "hosts": [...] | "all", "args": [...]}] and "fibers".
void read_programs(ConfigReader& r, const json& study, const std::string& root,
                   const std::string& base_dir, const topo::FabricSpec& fs, StudySpec& spec) {
  std::vector<std::string> all;
  for (const topo::NicSpec& n : fs.nics)
    if (std::find(all.begin(), all.end(), n.nic.host) == all.end()) all.push_back(n.nic.host);
  if (study.contains("fibers")) {
    const json& f = study["fibers"];
    const std::string p = join(root, "fibers");
    if (r.object(f, p, {"empty_poll_ns", "stack_kib", "spin_cap"})) {
      spec.spin_cap = static_cast<uint32_t>(r.integer(f, "spin_cap", p, 1024, 0, 1 << 30,
                                                      "polls one coalesced wait spans at most, 0 (off)..2^30"));
      spec.empty_poll_cost = ns(r.integer(f, "empty_poll_ns", p, 50, 1, 1'000'000'000,
                                          "CPU ns of one poll of an empty CQ, >= 1"));
      spec.stack_kib = static_cast<uint32_t>(r.integer(f, "stack_kib", p, 1024, 16, 1 << 20,
                                                       "a fiber stack size in KiB, 16..1048576"));
    }
  }
  if (!study.contains("programs")) return;
  const json& a = study["programs"];
  const std::string p = join(root, "programs");
  if (!a.is_array() || a.empty()) {
    r.error(p, a, "is not a non-empty array", "a list of programs {\"path\", \"hosts\", \"args\"}");
    return;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string pp = index(p, i);
    if (!r.object(a[i], pp, {"path", "hosts", "args"})) continue;
    ProgramSpec prog;
    prog.path = r.string(a[i], "path", pp, std::nullopt, "the path of a shared object exporting rdmasim_main");
    if (!prog.path.empty() && prog.path[0] != '/') prog.path = base_dir + "/" + prog.path;
    const json hosts = a[i].contains("hosts") ? a[i]["hosts"] : json("all");
    const std::string hp = join(pp, "hosts");
    if (hosts == json("all")) {
      prog.hosts = all;
    } else if (!hosts.is_array() || hosts.empty()) {
      r.error(hp, hosts, "is neither \"all\" nor a non-empty array", "\"all\" or a list of host names");
    } else {
      for (size_t k = 0; k < hosts.size(); ++k) {
        const json& h = hosts[k];
        if (!h.is_string() || std::find(all.begin(), all.end(), h.get<std::string>()) == all.end())
          r.error(index(hp, k), h, "names no host of the fabric", "a host name");
        else if (std::find(prog.hosts.begin(), prog.hosts.end(), h.get<std::string>()) != prog.hosts.end())
          r.error(index(hp, k), h, "is listed twice", "each host once");
        else
          prog.hosts.push_back(h.get<std::string>());
      }
    }
    if (a[i].contains("args")) {
      const json& args = a[i]["args"];
      const std::string ap = join(pp, "args");
      if (!args.is_array()) r.error(ap, args, "is not an array", "a list of strings");
      else
        for (size_t k = 0; k < args.size(); ++k) {
          if (!args[k].is_string()) r.error(index(ap, k), args[k], "is not a string", "a string");
          else prog.args.push_back(args[k].get<std::string>());
        }
    }
    spec.programs.push_back(std::move(prog));
  }
}

// The fabric config: inline object, a path (relative to the study's directory) or the
// embedded default. Errors of the fabric itself are kept as the fabric reports them, with
// the file name in front when it came from a file.
json load_fabric(ConfigReader& r, const json& study, const std::string& base_dir,
                 std::string* source, std::string* prefix) {
  if (!study.contains("fabric")) {
    *source = "embedded default";
    return topo::default_fabric_config();
  }
  const json& f = study["fabric"];
  if (f.is_object()) {
    *source = "inline";
    return f;
  }
  if (!f.is_string()) {
    r.error("study.fabric", f, "is not a fabric",
            "an inline fabric object, a path to a fabric config, or no key (the default fabric)");
    return json();
  }
  std::string path = f.get<std::string>();
  if (!path.empty() && path[0] != '/' && !base_dir.empty()) path = base_dir + "/" + path;
  *source = path;
  *prefix = path + ": ";
  std::ifstream in(path);
  if (!in) {
    r.error("study.fabric", f, "cannot be opened (" + path + ")", "a readable fabric config file");
    return json();
  }
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    r.error("study.fabric", path + ": " + std::string(e.what()) + "; expected a JSON fabric config");
    return json();
  }
}

struct Endpoints {
  std::map<std::string, size_t> by_name;   // "host/device", and "host" for one-NIC hosts
  std::vector<std::string> names;          // per NIC, the shortest name
};

Endpoints endpoints(const topo::FabricSpec& fs) {
  Endpoints e;
  std::map<std::string, int> per_host;
  for (const topo::NicSpec& n : fs.nics) ++per_host[n.nic.host];
  for (size_t i = 0; i < fs.nics.size(); ++i) {
    const topo::HostNic& n = fs.nics[i].nic;
    e.by_name[n.host + "/" + n.device] = i;
    if (per_host[n.host] == 1) e.by_name[n.host] = i;
    e.names.push_back(per_host[n.host] == 1 ? n.host : n.host + "/" + n.device);
  }
  return e;
}

// The flow keys shared by flows, generators and "defaults", read over `f`.
void read_flow_keys(ConfigReader& r, const json& j, const std::string& path, FlowSpec& f,
                    bool* has_bytes, bool* has_messages) {
  const std::string op = r.string(j, "op", path, op_name(f.op), "\"write\", \"read\" or \"send\"");
  if (op == "write") f.op = Op::Write;
  else if (op == "read") f.op = Op::Read;
  else if (op == "send") f.op = Op::Send;
  else r.error(join(path, "op"), json(op), "is not an operation", "\"write\", \"read\" or \"send\"");
  const std::string qp = r.string(j, "qp", path, qp_name(f.qp), "\"rc\", \"uc\" or \"ud\"");
  if (qp == "rc") f.qp = QpKind::RC;
  else if (qp == "uc") f.qp = QpKind::UC;
  else if (qp == "ud") f.qp = QpKind::UD;
  else r.error(join(path, "qp"), json(qp), "is not a QP type", "\"rc\", \"uc\" or \"ud\"");
  f.message_bytes = static_cast<uint32_t>(r.integer(j, "message_bytes", path, f.message_bytes, 1,
                                                    kMaxMessage, "a message size in bytes, 1..2^30"));
  if (j.contains("messages")) {
    f.messages = static_cast<uint64_t>(r.integer(j, "messages", path, std::nullopt, 1, 1'000'000'000,
                                                 "a message count >= 1"));
    *has_messages = true;
    *has_bytes = false;
  }
  if (j.contains("bytes")) {
    f.bytes = static_cast<uint64_t>(r.integer(j, "bytes", path, std::nullopt, 1, int64_t{1} << 50,
                                              "a total size in bytes >= 1"));
    *has_bytes = true;
    *has_messages = false;
  }
  if (j.contains("messages") && j.contains("bytes"))
    r.error(path, "has both \"messages\" and \"bytes\"; expected one of them");
  f.start = ns(r.integer(j, "start_ns", path, f.start / kNanosecond, 0, 1'000'000'000'000'000,
                         "a start time in ns >= 0"));
  f.priority = static_cast<uint8_t>(r.integer(j, "priority", path, f.priority, 0, 7,
                                              "a traffic class / SL 0..7"));
  f.window = static_cast<uint32_t>(r.integer(j, "window", path, f.window, 1, 4096,
                                             "messages outstanding per flow, 1..4096"));
}

// Resolves a host name into a NIC index, recording an error for an unknown one.
bool host(ConfigReader& r, const Endpoints& ep, const json& v, const std::string& path, size_t* out) {
  if (!v.is_string() || !ep.by_name.count(v.get<std::string>())) {
    r.error(path, v, "names no host of the fabric", "a host name (or \"host/device\" on a multi-NIC host)");
    return false;
  }
  *out = ep.by_name.at(v.get<std::string>());
  return true;
}

// "hosts"/"senders": a list of host names, or missing = every NIC in fabric order.
std::vector<size_t> host_list(ConfigReader& r, const Endpoints& ep, const json& g,
                              const std::string& path, const char* key) {
  std::vector<size_t> out;
  if (!g.contains(key)) {
    for (size_t i = 0; i < ep.names.size(); ++i) out.push_back(i);
    return out;
  }
  const json& a = g[key];
  const std::string p = join(path, key);
  if (!a.is_array() || a.empty()) {
    r.error(p, a, "is not a non-empty array", "a list of host names");
    return out;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    size_t h = 0;
    if (!host(r, ep, a[i], index(p, i), &h)) continue;
    if (std::find(out.begin(), out.end(), h) != out.end())
      r.error(index(p, i), a[i], "is listed twice", "each host once");
    else
      out.push_back(h);
  }
  return out;
}

void finish_flow(ConfigReader& r, const std::string& path, FlowSpec& f, bool has_bytes,
                 const topo::FabricSpec& fs) {
  if (has_bytes) {
    f.messages = (f.bytes + f.message_bytes - 1) / f.message_bytes;
  } else {
    f.bytes = f.messages * f.message_bytes;
  }
  if (f.src == f.dst) r.error(path, "sends from a host to itself; expected src != dst");
  if (f.qp != QpKind::RC && fs.link_layer == net::LinkLayer::IWarp)
    r.error(join(path, "qp"), json(qp_name(f.qp)), "is not available on an iWARP fabric", "\"rc\"");
  if (f.qp == QpKind::UC && f.op == Op::Read)
    r.error(join(path, "op"), json("read"), "is not carried by UC QPs", "\"write\" or \"send\" with \"qp\": \"uc\"");
  if (f.qp == QpKind::UD && f.op != Op::Send)
    r.error(join(path, "op"), json(op_name(f.op)), "is not carried by UD QPs", "\"send\" with \"qp\": \"ud\"");
  if (f.qp == QpKind::UD && f.message_bytes > fs.mtu)
    r.error(join(path, "message_bytes"), json(f.message_bytes), "is above the MTU of a UD message",
            "at most " + std::to_string(fs.mtu) + " bytes (the fabric's MTU)");
}

// "poisson": flows arriving at each host as a Poisson process whose mean inter-arrival is
// mean size x 8 / (load x the host's link rate), sizes drawn from a CDF file, destinations
// uniform over the other hosts: the generator of the HPCC paper's evaluation
// (traffic_gen.py), so the offered load per host link is `load`.
void read_poisson(ConfigReader& r, const json& g, const std::string& path, const FlowSpec& defaults,
                  const Endpoints& ep, const topo::FabricSpec& fs, const std::string& base_dir,
                  std::vector<FlowSpec>& flows) {
  if (!r.object(g, path, {"type", "hosts", "load", "cdf", "duration_us", "seed", "op", "qp",
                          "message_bytes", "start_ns", "priority", "window"}))
    return;
  FlowSpec base = defaults;
  bool has_bytes = true, has_messages = false;
  read_flow_keys(r, g, path, base, &has_bytes, &has_messages);
  const double load = r.number(g, "load", path, std::nullopt, 0, true, 1, "an offered load per host link, 0 < load <= 1");
  const double duration_us = r.number(g, "duration_us", path, std::nullopt, 0, true, 1e9,
                                      "the span of arrivals in us > 0");
  const uint64_t seed = static_cast<uint64_t>(r.integer(g, "seed", path, 1, 0, INT64_MAX, "a seed >= 0"));
  std::string cdf_path = r.string(g, "cdf", path, std::nullopt, "the path of a flow-size CDF file (configs/workloads/)");
  const std::vector<size_t> hosts = host_list(r, ep, g, path, "hosts");
  if (!r.ok()) return;
  if (hosts.size() < 2) {
    r.error(join(path, "hosts"), "has fewer than 2 hosts; expected at least 2 for Poisson arrivals");
    return;
  }
  if (!cdf_path.empty() && cdf_path[0] != '/' && !base_dir.empty()) cdf_path = base_dir + "/" + cdf_path;
  FlowSizeCdf cdf;
  std::string why;
  if (!cdf.load(cdf_path, &why)) {
    r.error(join(path, "cdf"), g["cdf"], why, "a CDF file of \"<size in bytes> <cumulative percent>\" lines");
    return;
  }
  std::mt19937_64 rng(seed);
  const double mean = cdf.mean();
  const Time end = base.start + from_ns_double(duration_us * 1000);
  // Arrivals host by host, then merged by start time (host order breaking ties).
  std::vector<std::pair<Time, FlowSpec>> made;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const double rate_bps = static_cast<double>(fs.links[static_cast<size_t>(fs.nic_link[hosts[i]])].rate.bps);
    std::exponential_distribution<double> gap(load * rate_bps / (mean * 8));   // per second
    std::uniform_int_distribution<size_t> other(0, hosts.size() - 2);
    double t = base.start / 1e12;
    for (;;) {
      t += gap(rng);
      const Time at = from_ns_double(t * 1e9);
      if (at >= end) break;
      FlowSpec f = base;
      f.src = hosts[i];
      const size_t d = other(rng);
      f.dst = hosts[d >= i ? d + 1 : d];
      f.start = at;
      f.bytes = cdf.sample(rng);
      f.name = ep.names[f.src] + "->" + ep.names[f.dst] + " (" + path.substr(6) + " poisson)";
      finish_flow(r, path, f, true, fs);
      made.emplace_back(at, std::move(f));
    }
  }
  std::stable_sort(made.begin(), made.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& m : made) flows.push_back(std::move(m.second));
}

void read_generator(ConfigReader& r, const json& g, const std::string& path, const FlowSpec& defaults,
                    bool def_bytes, const Endpoints& ep, const topo::FabricSpec& fs,
                    const std::string& base_dir, std::vector<FlowSpec>& flows) {
  const std::string type = g.is_object() ? g.value("type", std::string()) : std::string();
  if (type == "poisson") return read_poisson(r, g, path, defaults, ep, fs, base_dir, flows);
  if (type == "incast") {
    if (!r.object(g, path, {"type", "senders", "dst", "start_jitter_ns", "seed", RDMASIM_FLOW_KEYS})) return;
  } else if (type == "permutation" || type == "all_to_all") {
    if (!r.object(g, path, {"type", "hosts", "start_jitter_ns", "seed", RDMASIM_FLOW_KEYS})) return;
  } else {
    if (!r.object(g, path, {"type"})) return;
    r.error(join(path, "type"), g.value("type", json()), "is not a generator",
            "\"incast\", \"permutation\", \"all_to_all\" or \"poisson\"");
    return;
  }
  FlowSpec base = defaults;
  bool has_bytes = def_bytes, has_messages = !def_bytes;
  read_flow_keys(r, g, path, base, &has_bytes, &has_messages);
  const Time jitter = ns(r.integer(g, "start_jitter_ns", path, 0, 0, 1'000'000'000'000,
                                   "a start jitter in ns >= 0"));
  const uint64_t seed = static_cast<uint64_t>(r.integer(g, "seed", path, 1, 0, INT64_MAX, "a seed >= 0"));
  std::mt19937_64 rng(seed);
  std::vector<std::pair<size_t, size_t>> pairs;
  if (type == "incast") {
    size_t dst = 0;
    if (!g.contains("dst")) {
      r.error(join(path, "dst"), "is missing; expected the receiving host");
      return;
    }
    if (!host(r, ep, g["dst"], join(path, "dst"), &dst)) return;
    for (size_t s : host_list(r, ep, g, path, "senders"))
      if (s != dst || g.contains("senders")) pairs.emplace_back(s, dst);
  } else if (type == "permutation") {
    // A random derangement: every host sends to one other host and receives from one.
    const std::vector<size_t> hosts = host_list(r, ep, g, path, "hosts");
    if (hosts.size() < 2) {
      r.error(join(path, "hosts"), "has fewer than 2 hosts; expected at least 2 for a permutation");
      return;
    }
    std::vector<size_t> perm = hosts;
    do {
      std::shuffle(perm.begin(), perm.end(), rng);
    } while ([&] {
      for (size_t i = 0; i < hosts.size(); ++i)
        if (perm[i] == hosts[i]) return true;
      return false;
    }());
    for (size_t i = 0; i < hosts.size(); ++i) pairs.emplace_back(hosts[i], perm[i]);
  } else {
    const std::vector<size_t> hosts = host_list(r, ep, g, path, "hosts");
    for (size_t a : hosts)
      for (size_t b : hosts)
        if (a != b) pairs.emplace_back(a, b);
  }
  std::uniform_int_distribution<Time> jit(0, std::max<Time>(0, jitter - 1));
  for (size_t k = 0; k < pairs.size(); ++k) {
    FlowSpec f = base;
    f.src = pairs[k].first;
    f.dst = pairs[k].second;
    if (jitter > 0) f.start += jit(rng);
    f.name = ep.names[f.src] + "->" + ep.names[f.dst] + " (" + path.substr(6) + " " + type + ")";
    finish_flow(r, path, f, has_bytes, fs);
    flows.push_back(f);
  }
}

}  // namespace

const char* op_name(Op op) {
  switch (op) {
    case Op::Write: return "write";
    case Op::Read: return "read";
    case Op::Send: return "send";
  }
  return "?";
}

const char* qp_name(QpKind qp) {
  switch (qp) {
    case QpKind::RC: return "rc";
    case QpKind::UC: return "uc";
    case QpKind::UD: return "ud";
  }
  return "?";
}

StudySpec parse_study(const json& study, const std::string& base_dir) {
  ConfigReader r;
  const std::string root = "study";
  StudySpec spec;
  if (!r.object(study, root, {"name", "fabric", "observe", "time_limit_us", "goodput_bin_ns",
                              "defaults", "flows", "generators", "programs", "fibers", "flow_driver"}))
    throw topo::ConfigError(r.errors());
  spec.name = r.string(study, "name", root, "study", "a study name");
  spec.time_limit = from_ns_double(1000.0 * r.number(study, "time_limit_us", root, 100'000, 0, true,
                                                     1e12, "a simulated time limit in us > 0"));
  spec.goodput_bin = ns(r.integer(study, "goodput_bin_ns", root, 1000, 1, 1'000'000'000'000,
                                  "a goodput bin width in ns >= 1"));

  std::string prefix;
  json fabric = load_fabric(r, study, base_dir, &spec.fabric_source, &prefix);
  if (!r.ok()) throw topo::ConfigError(r.errors());
  // The study's "observe" replaces the fabric's; its errors are reported at study.observe.
  const bool own_observe = study.contains("observe");
  if (own_observe) {
    if (!fabric.is_object()) fabric = json::object();
    json observe = study["observe"];
    // The study's own key; the rest (queue sampling, the ports) is the fabric's.
    if (observe.is_object() && observe.contains("link_sample_ns")) {
      spec.link_sample = ns(r.integer(observe, "link_sample_ns", join(root, "observe"), 0, 0, 1'000'000'000'000,
                                      "a link sampling period in ns >= 0 (0 = off)"));
      observe.erase("link_sample_ns");
    }
    fabric["observe"] = observe;
  }
  topo::FabricSpec fs;
  try {
    fs = topo::parse_fabric(fabric);
  } catch (const topo::ConfigError& e) {
    std::vector<std::string> lines;
    for (const std::string& line : e.errors()) {
      if (own_observe && line.rfind("fabric.observe", 0) == 0)
        lines.push_back("study.observe" + line.substr(14));
      else
        lines.push_back(prefix + line);
    }
    throw topo::ConfigError(lines);
  }
  spec.fabric = fabric;
  const Endpoints ep = endpoints(fs);
  {  // kept for the run without the routes: the run computes them and frees them after set-up
    auto parsed = std::make_shared<topo::FabricSpec>(fs);
    parsed->routes.reset();
    spec.parsed_fabric = std::move(parsed);
  }

  FlowSpec defaults;
  bool def_bytes = false, def_messages = true;
  defaults.messages = 1;
  if (study.contains("defaults") &&
      r.object(study["defaults"], join(root, "defaults"), {RDMASIM_FLOW_KEYS}))
    read_flow_keys(r, study["defaults"], join(root, "defaults"), defaults, &def_bytes, &def_messages);

  if (study.contains("flows")) {
    const json& a = study["flows"];
    const std::string p = join(root, "flows");
    if (!a.is_array()) {
      r.error(p, a, "is not an array", "a list of flows {\"src\", \"dst\", ...}");
    } else {
      for (size_t i = 0; i < a.size(); ++i) {
        const std::string fp = index(p, i);
        if (!r.object(a[i], fp, {"name", "src", "dst", RDMASIM_FLOW_KEYS})) continue;
        FlowSpec f = defaults;
        bool has_bytes = def_bytes, has_messages = def_messages;
        read_flow_keys(r, a[i], fp, f, &has_bytes, &has_messages);
        bool ok = true;
        for (const char* side : {"src", "dst"}) {
          if (!a[i].contains(side)) {
            r.error(join(fp, side), std::string("is missing; expected a host name"));
            ok = false;
          } else {
            ok = host(r, ep, a[i][side], join(fp, side), side[0] == 's' ? &f.src : &f.dst) && ok;
          }
        }
        f.name = r.string(a[i], "name", fp,
                          (ok ? ep.names[f.src] + "->" + ep.names[f.dst] + " " : "") + "(" + fp.substr(6) + ")",
                          "a flow name");
        if (ok) finish_flow(r, fp, f, has_bytes, fs);
        spec.flows.push_back(f);
      }
    }
  }
  if (study.contains("generators")) {
    const json& a = study["generators"];
    const std::string p = join(root, "generators");
    if (!a.is_array()) {
      r.error(p, a, "is not an array", "a list of generators {\"type\": \"incast\", ...}");
    } else {
      for (size_t i = 0; i < a.size(); ++i)
        read_generator(r, a[i], index(p, i), defaults, def_bytes, ep, fs, base_dir, spec.flows);
    }
  }
  read_programs(r, study, root, base_dir, fs, spec);
  const std::string driver = r.string(study, "flow_driver", root, "builtin", "\"builtin\" or \"programs\"");
  if (driver == "programs") {
    spec.flow_driver = FlowDriver::Programs;
    // flows.c opens its host's first device: a flow's NIC must be its host's only one.
    bool reported = false;
    for (const FlowSpec& f : spec.flows)
      for (size_t nic : {f.src, f.dst})
        if (!reported && ep.names[nic].find('/') != std::string::npos) {
          r.error(join(root, "flow_driver"), json(driver), "needs one NIC per host (" + ep.names[nic] +
                  " is one of several)", "\"builtin\" for flows on multi-NIC hosts");
          reported = true;
        }
  } else if (driver != "builtin") {
    r.error(join(root, "flow_driver"), json(driver), "is not a flow driver", "\"builtin\" or \"programs\"");
  }
  if (r.ok() && spec.flows.empty() && spec.programs.empty())
    r.error(root, "has no flows; expected \"flows\", \"generators\" or \"programs\" with at least one");
  if (!r.ok()) throw topo::ConfigError(r.errors());
  return spec;
}

}  // namespace rdmasim::study
