// The study runner: parsing (errors, generators), in-process runs of every op and QP type,
// FCT against the ideal, time-limit failures, and the output files.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/study/study.h"
#include "sim/net/headers.h"
#include "sim/topo/fabric.h"

namespace rdmasim::study {
namespace {

using nlohmann::json;

// Every error line of parsing `j` ("" when valid).
std::string errors(const json& j, const std::string& base = RDMASIM_SOURCE_DIR "/configs/studies") {
  try {
    parse_study(j, base);
  } catch (const topo::ConfigError& e) {
    std::string out;
    for (const std::string& s : e.errors()) out += s + "\n";
    REQUIRE(!out.empty());
    return out;
  }
  return "";
}

bool has(const std::string& all, const std::string& text) {
  if (all.find(text) != std::string::npos) return true;
  FAIL("no error contains \"" << text << "\"; got: " << all);
  return false;
}

json one_flow(json flow) {
  json f = {{"src", "client"}, {"dst", "server"}};
  for (auto it = flow.begin(); it != flow.end(); ++it) f[it.key()] = it.value();
  return {{"name", "t"}, {"flows", {f}}};
}

json load(const std::string& name) {
  std::ifstream in(std::string(RDMASIM_SOURCE_DIR) + "/configs/studies/" + name);
  REQUIRE(in.good());
  return json::parse(in);
}

TEST_CASE("study: errors name the JSON path, the value and what was expected") {
  CHECK(has(errors({{"flows", json::array()}, {"colour", 1}}), "study.colour: unknown key; expected one of name, fabric"));
  CHECK(has(errors(one_flow({{"src", "nobody"}})), "study.flows[0].src: \"nobody\" names no host of the fabric"));
  CHECK(has(errors(one_flow({{"message_bytes", -3}})), "study.flows[0].message_bytes: -3 is negative"));
  CHECK(has(errors(one_flow({{"message_bytes", "big"}})), "study.flows[0].message_bytes: \"big\" is not an integer"));
  CHECK(has(errors(one_flow({{"op", "atomic"}})), "study.flows[0].op: \"atomic\" is not an operation"));
  CHECK(has(errors(one_flow({{"qp", "xrc"}})), "study.flows[0].qp: \"xrc\" is not a QP type"));
  CHECK(has(errors(one_flow({{"priority", 8}})), "study.flows[0].priority: 8 is out of range"));
  CHECK(has(errors(one_flow({{"bytes", 10}, {"messages", 2}})), "has both \"messages\" and \"bytes\""));
  CHECK(has(errors(one_flow({{"dst", "client"}})), "study.flows[0]: sends from a host to itself"));
  CHECK(has(errors(one_flow({{"qp", "uc"}, {"op", "read"}})), "study.flows[0].op: \"read\" is not carried by UC QPs"));
  CHECK(has(errors(one_flow({{"qp", "ud"}, {"op", "send"}, {"message_bytes", 8192}})),
            "study.flows[0].message_bytes: 8192 is above the MTU of a UD message"));
  CHECK(has(errors({{"fabric", {{"link_layer", "iwarp"}, {"topology", {{"type", "star"}}}}},
                    {"flows", {{{"src", "host1"}, {"dst", "host2"}, {"qp", "uc"}}}}}),
            "study.flows[0].qp: \"uc\" is not available on an iWARP fabric; expected \"rc\""));
  CHECK(has(errors(one_flow({{"speed", 1}})), "study.flows[0].speed: unknown key"));
  CHECK(has(errors({{"flows", json::array()}}), "study: has no flows"));
  CHECK(has(errors({{"generators", {{{"type", "ring"}}}}}), "study.generators[0].type: \"ring\" is not a generator"));
  CHECK(has(errors({{"generators", {{{"type", "incast"}}}}}), "study.generators[0].dst: is missing"));
  CHECK(has(errors({{"time_limit_us", 0}, {"flows", json::array()}}), "study.time_limit_us: 0"));
  // The fabric: a missing file, bad JSON, the fabric's own errors (file name in front),
  // and the study's "observe" reported at study.observe.
  CHECK(has(errors({{"fabric", "no_such.json"}, {"flows", json::array()}}), "study.fabric: \"no_such.json\" cannot be opened"));
  CHECK(has(errors({{"fabric", 3}, {"flows", json::array()}}), "study.fabric: 3 is not a fabric"));
  CHECK(has(errors({{"fabric", {{"hosts", 1}}}, {"flows", json::array()}}), "fabric.hosts: 1 is not a non-empty array"));
  const std::string dir = std::filesystem::temp_directory_path() / ("study_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/bad.json") << "{\"name\": ";
  std::ofstream(dir + "/neg.json") << R"({"hosts": [{"name": "a", "ip": "127.0.1.1"}], "links": [], "mtu": -1})";
  CHECK(has(errors({{"fabric", "bad.json"}, {"flows", json::array()}}, dir), "study.fabric: " + dir + "/bad.json: [json.exception.parse_error"));
  CHECK(has(errors({{"fabric", "neg.json"}, {"flows", json::array()}}, dir), dir + "/neg.json: fabric.mtu: -1 is negative"));
  std::filesystem::remove_all(dir);
  CHECK(has(errors({{"observe", {{"queue_sample_ns", -1}}}, {"flows", json::array()}}),
            "study.observe.queue_sample_ns: -1 is negative"));
  // Every shipped study is valid.
  for (const char* s : {"incast_15to1_roce.json", "incast_15to1_ib.json", "dcqcn_2flows.json"})
    CHECK_MESSAGE(errors(load(s)) == "", s);
}

TEST_CASE("study: generators") {
  const json star = {{"topology", {{"type", "star"}, {"hosts", 6}}}};
  auto pairs = [&](json gen) {
    std::vector<std::pair<size_t, size_t>> out;
    for (const FlowSpec& f : parse_study({{"fabric", star}, {"generators", {gen}}}, "").flows)
      out.emplace_back(f.src, f.dst);
    return out;
  };
  // incast: every other host to dst, once each.
  const auto inc = pairs({{"type", "incast"}, {"dst", "host6"}});
  REQUIRE(inc.size() == 5);
  for (size_t i = 0; i < 5; ++i) CHECK(inc[i] == std::make_pair(i, size_t{5}));
  CHECK(pairs({{"type", "incast"}, {"dst", "host1"}, {"senders", {"host2", "host3"}}}).size() == 2);
  // permutation: a derangement (each host sends once, receives once, never to itself),
  // the same for the same seed.
  const auto p1 = pairs({{"type", "permutation"}, {"seed", 1}});
  const auto p2 = pairs({{"type", "permutation"}, {"seed", 2}});
  std::set<size_t> srcs, dsts;
  for (const auto& [s, d] : p1) {
    CHECK(s != d);
    srcs.insert(s);
    dsts.insert(d);
  }
  CHECK(srcs.size() == 6);
  CHECK(dsts.size() == 6);
  CHECK(p1 == pairs({{"type", "permutation"}, {"seed", 1}}));
  // Two seeds giving the same of the 265 derangements of 6 would be a 1/265 chance; these two differ.
  CHECK(p1 != p2);
  // all_to_all: n (n - 1) ordered pairs.
  CHECK(pairs({{"type", "all_to_all"}}).size() == 30);
  CHECK(pairs({{"type", "all_to_all"}, {"hosts", {"host1", "host2", "host3"}}}).size() == 6);
  // Start jitter: uniform in [start, start + jitter).
  const StudySpec j = parse_study({{"fabric", star}, {"generators", {{{"type", "all_to_all"}, {"start_ns", 1000},
                                                                     {"start_jitter_ns", 500}}}}}, "");
  std::set<Time> starts;
  for (const FlowSpec& f : j.flows) {
    CHECK(f.start >= ns(1000));
    CHECK(f.start < ns(1500));
    starts.insert(f.start);
  }
  CHECK(starts.size() > 1);
  // bytes -> messages, the last one shorter.
  const StudySpec b = parse_study(one_flow({{"bytes", 100000}, {"message_bytes", 65536}}), "");
  CHECK(b.flows[0].messages == 2);
  CHECK(b.flows[0].bytes == 100000);
}

// The default fabric: client -> sw0 -> server, 100 Gb/s links of 400 ns, forwarding 200 ns.
// A 1 MiB RC WRITE in 4096 B packets: 256 packets of 4096 + 44 + 38 = 4178 wire bytes,
// 334.24 ns each at 100 Gb/s: 85565.44 ns at the bottleneck; plus the data path's 1000 ns of
// propagation and forwarding and the ACK's 1000 ns back: ideal 87565.44 ns.
TEST_CASE("study: a 1 MiB RC WRITE on the default fabric: ideal FCT from the formula, FCT just above it") {
  const StudySpec spec = parse_study(one_flow({{"bytes", 1 << 20}, {"message_bytes", 1 << 18}}), "");
  const StudyResult r = run_study(spec);
  REQUIRE(r.ok);
  const FlowResult& f = r.flows[0];
  CHECK(f.ideal_fct == ps(87'565'440));
  CHECK(f.bottleneck_gbps == 100);
  CHECK(f.finish > f.ideal_fct);
  // What the ideal leaves out: the HCA's WQE and receive latencies (100 ns each, data and
  // ACK), one more store-and-forward serialization (334 ns) and the ACK's own (< 100 ns):
  // under 1 us in all; 2 us is allowed.
  CHECK(f.finish - f.ideal_fct < us(2));
  CHECK(f.first_byte > 0);
  CHECK(f.last_byte < f.finish);
  CHECK(f.bytes_received == 1u << 20);
  CHECK(f.messages_completed == 4);
}

TEST_CASE("study: every op and QP type delivers its bytes") {
  struct Case {
    const char* op;
    const char* qp;
    uint32_t msg;
  };
  for (const Case& c : {Case{"write", "rc", 65536}, Case{"read", "rc", 65536}, Case{"send", "rc", 65536},
                        Case{"write", "uc", 65536}, Case{"send", "uc", 65536}, Case{"send", "ud", 4096}}) {
    CAPTURE(c.op);
    CAPTURE(c.qp);
    const StudySpec spec = parse_study(one_flow({{"op", c.op}, {"qp", c.qp}, {"message_bytes", c.msg},
                                                 {"messages", 20}, {"window", 3}}), "");
    const StudyResult r = run_study(spec);
    CHECK(r.ok);
    const FlowResult& f = r.flows[0];
    CHECK(f.finished);
    // A lossless path: exactly the payload arrives, nothing is retransmitted.
    CHECK(f.bytes_received == 20ull * c.msg);
    CHECK(f.finish >= f.ideal_fct);
    CHECK(f.error == "");
  }
}

TEST_CASE("study: a flow's priority is its traffic class on the wire") {
  // RoCE: GRH traffic class priority << 5, so the class (DSCP >> 3) is the priority. The
  // default fabric's sw0 port 0 faces server (links in config order).
  const StudyResult r = run_study(parse_study(one_flow({{"priority", 5}, {"bytes", 65536}}), ""));
  REQUIRE(r.ok);
  const json& classes = r.counters["fabric"]["sw0/0"]["classes"];
  REQUIRE(classes.contains("5"));
  CHECK(classes["5"]["tx_bytes"].get<uint64_t>() > 65536);   // payload plus headers
  CHECK_FALSE(classes.contains("0"));
}

TEST_CASE("study: RC write, read and send on an iWARP fabric (the NIC's TCP carries them)") {
  json st = {{"fabric", {{"link_layer", "iwarp"}, {"topology", {{"type", "star"}, {"hosts", 3}}}}},
             {"time_limit_us", 10000},
             {"flows", {{{"src", "host1"}, {"dst", "host3"}, {"op", "write"}, {"bytes", 262144}},
                        {{"src", "host2"}, {"dst", "host3"}, {"op", "send"}, {"bytes", 262144}},
                        {{"src", "host2"}, {"dst", "host1"}, {"op", "read"}, {"bytes", 262144}}}}};
  const StudyResult r = run_study(parse_study(st, ""));
  for (const std::string& f : r.failures) MESSAGE(f);
  CHECK(r.ok);
  for (const FlowResult& f : r.flows) {
    CHECK(f.finished);
    CHECK(f.bytes_received == 262144);   // no loss: no TCP retransmission
    // The ideal counts MTU-sized packets; iWARP's FPDUs are smaller (more headers), so it
    // stays a lower bound.
    CHECK(f.finish >= f.ideal_fct);
  }
  // counters.json shows each NIC's TCP connections: host2 has two QPs (the send to host3,
  // the read from host1), each of which sent segments (data or ACKs) and, with no loss,
  // never retransmitted.
  const json& tcp = r.counters["hcas"]["host2/mlx5_0"]["tcp"];
  REQUIRE(tcp.size() == 2);
  for (const json& t : tcp) {
    CHECK(t["segments_sent"].get<uint64_t>() > 0);
    CHECK(t["retransmits"].get<uint64_t>() == 0);
    CHECK(t["timeouts"].get<uint64_t>() == 0);
  }
  CHECK_FALSE(r.counters["hcas"]["host1/mlx5_0"].contains("cc"));  // no DCQCN on iWARP
}

TEST_CASE("study: a flow that cannot finish by the time limit fails, named") {
  // 10 MiB at 100 Gb/s needs > 800 us; the limit is 100 us.
  const StudySpec spec = parse_study({{"time_limit_us", 100}, {"flows", {{{"name", "slow"}, {"src", "client"},
                                       {"dst", "server"}, {"bytes", 10 << 20}}}}}, "");
  const StudyResult r = run_study(spec);
  CHECK_FALSE(r.ok);
  REQUIRE(r.failures.size() == 1);
  CHECK(r.failures[0].rfind("slow: did not finish by the time limit", 0) == 0);
  CHECK_FALSE(r.flows[0].finished);
}

// Reads a CSV file into rows of fields (no quoted commas in these files' numeric columns).
std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) row.push_back(cell);
    rows.push_back(row);
  }
  return rows;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

struct IncastOutputs {
  json flows, counters;
  std::vector<std::vector<std::string>> queues;
  std::string html;
};

IncastOutputs run_shipped(const std::string& name) {
  const StudySpec spec = parse_study(load(name), RDMASIM_SOURCE_DIR "/configs/studies");
  const StudyResult r = run_study(spec);
  for (const std::string& f : r.failures) MESSAGE(f);
  REQUIRE(r.ok);
  const std::string dir = std::filesystem::temp_directory_path() / ("study_out_" + std::to_string(getpid()));
  write_outputs(spec, r, dir);
  IncastOutputs o{read_json(dir + "/flows.json"), read_json(dir + "/counters.json"), read_csv(dir + "/queues.csv"), ""};
  std::ifstream h(dir + "/report.html");
  o.html.assign(std::istreambuf_iterator<char>(h), {});
  const auto csv = read_csv(dir + "/flows.csv");
  CHECK(csv.size() == spec.flows.size() + 1);
  CHECK(csv[0][0] == "id");
  std::filesystem::remove_all(dir);
  return o;
}

// The shipped 15:1 studies: hosts 1..15 each RC WRITE 2 MiB (64 KiB messages, 4 in flight)
// to host16 over one 100 Gb/s switch port (sw0/15).
void check_incast(const IncastOutputs& o, net::LinkLayer ll) {
  const json& fab = o.counters["fabric"];
  REQUIRE(o.flows.size() == 15);
  uint64_t drops = 0;
  for (const auto& [name, port] : fab.items())
    if (port.contains("drops")) drops += port["drops"].get<uint64_t>();
  CHECK(drops == 0);
  // Utilization of the bottleneck while the flows run: the data bytes it carried over
  // rate x (last arrival - first arrival + one packet time), as wire bytes.
  double first = 1e30, last = 0, first_finish = 1e30;
  for (const json& f : o.flows) {
    first = std::min(first, f["first_byte_ns"].get<double>());
    last = std::max(last, f["last_byte_ns"].get<double>());
    first_finish = std::min(first_finish, f["finish_ns"].get<double>());
    // FCT >= ideal, and the ideal is the lone-flow ideal: 15 flows sharing take ~15x.
    CHECK(f["fct_ns"].get<double>() >= f["ideal_fct_ns"].get<double>());
    CHECK(f["slowdown"].get<double>() > 10);
  }
  const uint32_t wire = net::base_wire_bytes(ll, 4096);
  const double pkt_ns = wire * 8 / 100.0;
  const double tx = static_cast<double>(fab["sw0/15"]["classes"]["0"]["tx_bytes"].get<uint64_t>());
  const double util = tx * 8 / 100.0 / (last - first + pkt_ns);
  MESSAGE("bottleneck utilization " << util);
  CHECK(util >= 0.99);
  // Fair share: 1/15 of the bottleneck's payload rate, 100 Gb/s x 4096 / wire bytes, over the
  // interval when all 15 run (after the last first byte, before the first finish), from
  // the 1 us goodput bins, within the issue's 1%. On RoCE the shipped study's switch serves
  // the ingress ports round robin ("ingress_arbitration"), so two senders differ by about a
  // packet at any time; with a FIFO egress a resumed ingress's whole PFC burst (~13 packets)
  // enters at once and the 1% does not hold (measured 1.1-1.2%, see tests/unit/fabric).
  const double fair = 100.0 * 4096 / wire / 15;
  size_t b0 = 0, b1 = 0;
  for (const json& f : o.flows) b0 = std::max(b0, static_cast<size_t>(f["first_byte_ns"].get<double>() / 1000) + 2);
  b1 = static_cast<size_t>(first_finish / 1000) - 2;
  REQUIRE(b1 > b0 + 1000);
  double worst = 0, sum = 0;
  for (const json& f : o.flows) {
    const json& g = f["goodput_series"]["gbps"];
    double s = 0;
    for (size_t b = b0; b < b1; ++b) s += g[b].get<double>();
    const double mean = s / static_cast<double>(b1 - b0);
    sum += mean;
    worst = std::max(worst, std::abs(mean - fair) / fair);
  }
  MESSAGE("worst deviation from the fair share " << worst * 100 << "%, aggregate " << sum << " Gb/s");
  CHECK(worst <= 0.01);
  CHECK(sum >= 0.99 * 15 * fair);
  // queues.csv: sw0/15's depth was sampled (only sw0's ports were selected) and peaked.
  REQUIRE(o.queues.size() > 1);
  CHECK(o.queues[0] == std::vector<std::string>{"time_ns", "port", "class", "depth_bytes"});
  uint64_t peak = 0;
  std::set<std::string> ports;
  for (size_t i = 1; i < o.queues.size(); ++i) {
    ports.insert(o.queues[i][1]);
    if (o.queues[i][1] == "sw0/15") peak = std::max<uint64_t>(peak, std::stoull(o.queues[i][3]));
  }
  CHECK(ports.size() == 16);
  // The sampled peak is at most the high-water mark, and at least it minus what the port can
  // drain in one 1 us sample interval (3 packets of 334 ns; arrivals only add).
  const uint64_t hwm = fab["sw0/15"]["classes"]["0"]["queue_max_bytes"].get<uint64_t>();
  CHECK(peak <= hwm);
  CHECK(peak + 3 * wire >= hwm);
  // report.html: self-contained; goodput, per-flow goodput (15 flows: more than the 8 drawn
  // one by one), FCT CDF, FCT vs size, slowdown buckets and queues always, the PFC pause
  // timeline where PFC paused a port (RoCE; IB has credits instead); no CC rate and no link
  // heat map (no CC, no observe.link_sample_ns in these studies).
  size_t svgs = 0;
  for (size_t p = o.html.find("<svg"); p != std::string::npos; p = o.html.find("<svg", p + 1)) ++svgs;
  CHECK(svgs == (ll == net::LinkLayer::RoCEv2 ? 7u : 6u));
  for (const char* id : {"goodput", "flow_goodput", "fct_cdf", "fct_size", "slowdown_buckets", "queues"})
    CHECK(o.html.find(std::string("id=\"") + id + "\"") != std::string::npos);
  CHECK((o.html.find("id=\"pauses\"") != std::string::npos) == (ll == net::LinkLayer::RoCEv2));
  CHECK(o.html.find("<script") == std::string::npos);
  CHECK(o.html.find("src=\"http") == std::string::npos);
}

TEST_CASE("study: shipped 15:1 RoCE incast with PFC: lossless, pauses upstream, bottleneck busy, fair") {
  const IncastOutputs o = run_shipped("incast_15to1_roce.json");
  check_incast(o, net::LinkLayer::RoCEv2);
  uint64_t pauses_up = 0;
  for (int p = 0; p < 15; ++p) pauses_up += o.counters["fabric"]["sw0/" + std::to_string(p)]["pauses_sent"].get<uint64_t>();
  CHECK(pauses_up > 0);
  CHECK(o.counters["fabric"]["host1/mlx5_0"]["pauses_received"].get<uint64_t>() > 0);
}

TEST_CASE("study: shipped 15:1 InfiniBand incast: lossless through credits, no pauses") {
  const IncastOutputs o = run_shipped("incast_15to1_ib.json");
  check_incast(o, net::LinkLayer::InfiniBand);
  for (const auto& [name, port] : o.counters["fabric"].items()) {
    if (!port.contains("classes")) continue;
    CHECK(port["pauses_sent"] == 0);
    for (const auto& [c, cls] : port["classes"].items())
      if (cls.contains("credits_available_bytes")) CHECK(cls["credits_available_bytes"].get<int64_t>() >= 0);
  }
}

TEST_CASE("study: shipped DCQCN study: CNPs, rate cuts and each sender's rate series in counters.json") {
  const IncastOutputs o = run_shipped("dcqcn_2flows.json");
  const json& h = o.counters["hcas"];
  CHECK(h["r/mlx5_0"]["cnps_sent"].get<uint64_t>() > 0);
  for (const char* s : {"s1/mlx5_0", "s2/mlx5_0"}) {
    REQUIRE(h[s]["cc"].size() == 1);
    CHECK(h[s]["cc"][0]["algorithm"] == "dcqcn");
    CHECK(h[s]["cc"][0]["rate_cuts"].get<uint64_t>() > 0);
    CHECK(h[s]["cc"][0]["samples"].size() > 2);
  }
}

}  // namespace
}  // namespace rdmasim::study
