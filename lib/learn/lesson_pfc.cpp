// Lesson `pfc`: an 8:1 incast on a two-switch RoCEv2 fabric, three times — lossy Ethernet,
// PFC, and PFC with ECN marking and DCQCN — with a victim flow that shares the incast's
// uplink but not its destination, so PFC's head-of-line blocking shows.
//
//   s1 s2 v                s3 s4 s5 s6 s7 s8 r w
//    \  | /                  \  \  |  |  / / / /
//      sw0 === 400 Gb/s uplink === sw1
//
// s1..s8 each WRITE `size` bytes to r (8:1 into r's 100 Gb/s port); v WRITEs 4 x size to w
// through the same uplink. The uplink carries at most 300 Gb/s (s1, s2, v) of its 400, and
// w's port is idle, so anything that slows v is not congestion of its own path.
#include <algorithm>
#include <string>

#include "lib/learn/lesson.h"
#include "lib/learn/page.h"
#include "lib/learn/scenario.h"

namespace rdmasim::learn {
namespace {

using nlohmann::json;

constexpr int kSenders = 8;
constexpr Time kSample = us(2);

// Switch port numbers follow the order of `links` (configs/README.md, "Switch entry"):
// sw0: s1, s2 = 0, 1, v = 2, uplink = 3; sw1: uplink = 0, s3..s8 = 1..6, r = 7, w = 8.
constexpr const char* kIncastPort = "sw1/7";   // sw1 toward r: where the incast queues
constexpr const char* kUplinkPort = "sw0/3";   // sw0 toward sw1: paused by sw1's PFC
constexpr const char* kUplinkInPort = "sw1/0"; // sw1 toward sw0: sends those pauses
constexpr const char* kVictimNic = "v/mlx5_0"; // v's NIC: paused by sw0 in turn

enum class Mode { Lossy, Pfc, Dcqcn };

struct Run {
  Mode mode;
  const char* key;
  const char* title;
  ScenarioResult r;
};

json fabric_for(Mode m) {
  json hosts = json::array(), links = json::array();
  int ip = 1;
  auto host = [&](const std::string& n, const char* sw) {
    hosts.push_back({{"name", n}, {"ip", "127.0.2." + std::to_string(ip++)}});
    links.push_back({{"a", n}, {"b", sw}});
  };
  for (int i = 1; i <= 2; ++i) host("s" + std::to_string(i), "sw0");
  host("v", "sw0");
  links.push_back({{"a", "sw0"}, {"b", "sw1"}, {"rate_gbps", 400}});
  for (int i = 3; i <= 8; ++i) host("s" + std::to_string(i), "sw1");
  host("r", "sw1");
  host("w", "sw1");
  // Round-robin ingress arbitration so the senders share fairly (configs/README.md).
  json sw = {{"forwarding_latency_ns", 200}, {"ingress_arbitration", "round_robin"}};
  json nic = json::object();
  if (m == Mode::Lossy) {
    sw["queue_kb"] = 256;   // a shallow drop-tail queue per port and class, like a commodity switch's share
  } else {
    sw["queue_kb"] = 8192;  // lossless: PFC, not the queue limit, bounds what is held
    sw["pfc"] = {{"xoff_kb", 64}, {"xon_kb", 32}};
  }
  if (m == Mode::Dcqcn) {
    // Marking well below the PFC threshold, so congestion control acts before pauses.
    sw["ecn"] = {{"kmin_kb", 10}, {"kmax_kb", 100}, {"pmax", 0.2}};
    nic["cc"] = {{"algorithm", "dcqcn"}, {"preset", "paper"}, {"g", 0.0048828125}, {"alpha_update_us", 1},
                 {"ai_rate_mbps", 200}, {"hai_rate_mbps", 1000}};
  }
  return {{"name", "pfc-lesson"}, {"link_layer", "roce"}, {"seed", 1},
          {"link", {{"rate_gbps", 100}, {"latency_ns", 400}}},
          {"switch", sw}, {"nic", nic}, {"hosts", hosts},
          {"switches", json::array({{{"name", "sw0"}}, {{"name", "sw1"}}})}, {"links", links}};
}

ScenarioSpec spec_for(Mode m, uint64_t size, const std::string& out_dir) {
  ScenarioSpec s;
  s.fabric = fabric_for(m);
  // NIC indices follow `hosts`: s1, s2 = 0, 1, v = 2, s3..s8 = 3..8, r = 9, w = 10.
  const size_t v = 2, r = 9, w = 10;
  for (int i = 0; i < kSenders; ++i) {
    const size_t src = i < 2 ? static_cast<size_t>(i) : static_cast<size_t>(i + 1);
    s.flows.push_back({"s" + std::to_string(i + 1) + "->r", src, r, size, 65536, 4});
  }
  s.flows.push_back({"v->w (victim)", v, w, 4 * size, 65536, 4});
  s.sample_interval = kSample;
  s.time_limit = ms(200);
  // 4.096 us * 2^10 = 4.2 ms: a lost tail packet costs that long (man ibv_modify_qp timeout).
  s.ack_timeout = 10;
  s.watch_ports = {kIncastPort, kUplinkPort, kVictimNic};
  if (m != Mode::Lossy) {   // captures of the lossless runs: r's link and the victim's
    s.capture_dir = out_dir;
    s.capture_prefix = m == Mode::Pfc ? "pfc_" : "dcqcn_";
    s.capture_nics = {r, v};
  }
  return s;
}

uint64_t sum_ports(const json& fc, const char* key) {
  uint64_t n = 0;
  for (const auto& [name, port] : fc.items())
    if (port.is_object() && port.contains(key)) n += port[key].get<uint64_t>();
  return n;
}

uint64_t port_value(const json& fc, const char* port, const char* key) {
  return fc.contains(port) && fc[port].contains(key) ? fc[port][key].get<uint64_t>() : 0;
}

// A class-0 figure of a port's counters ("classes" lists only classes that saw traffic).
uint64_t class0(const json& fc, const char* port, const char* key) {
  if (!fc.contains(port) || !fc[port].contains("classes") || !fc[port]["classes"].contains("0")) return 0;
  return fc[port]["classes"]["0"][key].get<uint64_t>();
}

uint64_t paused_ns(const json& fc, const char* port) { return class0(fc, port, "paused_ns"); }

json run_figures(const Run& run, uint64_t size) {
  const ScenarioResult& r = run.r;
  Time incast_end = 0;
  for (int i = 0; i < kSenders; ++i) incast_end = std::max(incast_end, r.flows[i].finish);
  const FlowOutcome& victim = r.flows[kSenders];
  uint64_t retx = 0, timeouts = 0, cnps = 0, cuts = 0;
  for (const auto& h : r.hcas) retx += h.retransmitted_packets, timeouts += h.timeouts, cnps += h.cnps_sent,
                                cuts += h.rate_cuts;
  uint64_t qmax = 0;
  for (uint64_t q : r.ports[0].depth_bytes) qmax = std::max(qmax, q);
  const double incast_us = to_ns(incast_end) / 1e3, victim_us = to_ns(victim.finish) / 1e3;
  return {{"all_finished", r.all_finished},
          {"drops", sum_ports(r.fabric_counters, "drops")},
          {"pause_frames", sum_ports(r.fabric_counters, "pauses_sent")},
          {"pause_frames_uplink", port_value(r.fabric_counters, kUplinkInPort, "pauses_sent")},
          {"uplink_paused_ns", paused_ns(r.fabric_counters, kUplinkPort)},
          {"victim_nic_paused_ns", paused_ns(r.fabric_counters, kVictimNic)},
          {"ecn_marked", sum_ports(r.fabric_counters, "ecn_marked")},
          {"retransmitted_packets", retx},
          {"ack_timeouts", timeouts},
          {"cnps_sent", cnps},
          {"rate_cuts", cuts},
          {"incast_queue_max_bytes", class0(r.fabric_counters, kIncastPort, "queue_max_bytes")},
          {"incast_queue_max_sampled_bytes", qmax},
          {"incast_completion_us", incast_us},
          {"incast_goodput_gbps", incast_us > 0 ? kSenders * size * 8 / (incast_us * 1e3) : 0},
          {"victim_completion_us", victim_us},
          {"victim_goodput_gbps", victim_us > 0 ? 4 * size * 8 / (victim_us * 1e3) : 0},
          {"end_us", to_ns(r.end) / 1e3}};
}

std::vector<double> times_us(size_t n) {
  std::vector<double> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<double>(i) * to_ns(kSample) / 1e3;
  return t;
}

void draw_run(Page& page, const Run& run, const json& fig) {
  const ScenarioResult& r = run.r;
  page.heading(run.title);
  const auto t = times_us(r.ports[0].depth_bytes.size());
  Plot q{"Queue toward r (sw1 port 7)", "time (us)", "KB queued", {}, 0};
  Series qs{"queue", t, {}, false, true};
  for (uint64_t b : r.ports[0].depth_bytes) qs.y.push_back(static_cast<double>(b) / 1000.0);
  q.series.push_back(qs);
  page.figure(line_plot(q), run.mode == Mode::Lossy
      ? "The queue fills to its 256 KiB limit and stays there: every packet that arrives then is dropped, and "
        "the senders must retransmit (go-back-N) or wait for a timeout."
      : run.mode == Mode::Pfc
          ? "The queue stays a little above the PFC threshold: sw1 pauses whoever feeds it instead of dropping."
          : "DCQCN cuts the senders' rates when packets come back ECN-marked, so the queue hovers near the "
            "marking threshold instead of PFC's.");
  Plot pz{"PFC pause state (1 = paused)", "time (us)", "paused", {}, 1};
  pz.series.push_back({"uplink sw0 -> sw1", t, {}, true, true});
  pz.series.push_back({"victim v's NIC", t, {}, true, false});
  for (uint8_t p : r.ports[1].paused) pz.series[0].y.push_back(p);
  for (uint8_t p : r.ports[2].paused) pz.series[1].y.push_back(p);
  page.figure(line_plot(pz), run.mode == Mode::Lossy
      ? "Flat at 0: without PFC nothing is ever paused — the switch drops instead."
      : "When sw1's buffer for the uplink passes XOFF it pauses the whole uplink, then sw0 fills and pauses "
        "the senders behind it, v included: pauses walk upstream.");
  Plot rate{"Per-flow arrival rate", "time (us)", "Gb/s", {}, 100};
  for (size_t k = 0; k < r.flows.size(); ++k) {
    Series s{k == kSenders ? "victim v->w" : (k == 0 ? "incast s1..s8" : ""), t, r.flows[k].rate_gbps, false,
             k == kSenders};
    if (k != 0 && k != kSenders) s.label = "";
    rate.series.push_back(s);
  }
  std::swap(rate.series[1], rate.series[kSenders]);   // the victim second, so its colour stays apart
  rate.series.resize(2);   // s1 stands for the incast senders (they share fairly); all are in summary.json
  page.figure(line_plot(rate), run.mode == Mode::Lossy
      ? "The incast senders crawl (retransmissions, timeouts) while the victim runs at full speed: its path "
        "is not congested and nothing pauses it."
      : run.mode == Mode::Pfc
          ? "The victim v->w should run near 100 Gb/s — w's port is idle — but it is paused with the incast "
            "traffic it shares the uplink with: head-of-line blocking."
          : "With the senders slowed at the source, pauses are rare and the victim keeps more of the uplink.");
  page.table({"drops", "PFC frames", "uplink paused", "retransmitted", "ECN marks", "incast done", "victim done"},
             {{std::to_string(fig["drops"].get<uint64_t>()), std::to_string(fig["pause_frames"].get<uint64_t>()),
               num(fig["uplink_paused_ns"].get<uint64_t>() / 1e3, 1) + " us",
               std::to_string(fig["retransmitted_packets"].get<uint64_t>()),
               std::to_string(fig["ecn_marked"].get<uint64_t>()),
               num(fig["incast_completion_us"].get<double>(), 1) + " us",
               num(fig["victim_completion_us"].get<double>(), 1) + " us"}});
}

}  // namespace

LessonOutput lesson_pfc(const LessonOptions& o) {
  std::vector<Run> runs = {{Mode::Lossy, "lossy", "1. Lossy Ethernet, no PFC", {}},
                           {Mode::Pfc, "pfc", "2. PFC (lossless class)", {}},
                           {Mode::Dcqcn, "pfc_ecn_dcqcn", "3. PFC + ECN + DCQCN", {}}};
  LessonOutput out;
  Narration& n = out.story;
  n.heading("pfc: 8 senders WRITE " + std::to_string(o.size) + " B each to r through one 100 Gb/s port");
  n.note("A victim flow v->w (" + std::to_string(4 * o.size) + " B) shares the sw0->sw1 uplink with two of them.");
  json summary = {{"lesson", "pfc"}, {"fabric", o.fabric}, {"size_bytes", o.size}, {"senders", kSenders},
                  {"sample_interval_ns", to_ns(kSample)}};
  Page page("rdmasim learn pfc: incast, PFC, ECN and DCQCN");
  page.para("Eight hosts each write " + std::to_string(o.size) + " bytes by RDMA WRITE to one receiver r: 800 Gb/s "
            "offered to one 100 Gb/s port. Two of the senders are behind a second switch, sharing its 400 Gb/s "
            "uplink with a victim flow from v to w: the uplink has room for all three, and w's port is idle. The same incast runs three "
            "times.");
  for (Run& run : runs) {
    run.r = run_scenario(spec_for(run.mode, o.size, o.out_dir));
    const json fig = run_figures(run, o.size);
    summary["runs"][run.key] = fig;
    summary["runs"][run.key]["flows"] = json::array();
    for (size_t k = 0; k < run.r.flows.size(); ++k)
      summary["runs"][run.key]["flows"].push_back({{"finished", run.r.flows[k].finished},
                                                    {"finish_us", to_ns(run.r.flows[k].finish) / 1e3},
                                                    {"bytes_received", run.r.flows[k].bytes_received}});
    summary["runs"][run.key]["fabric_counters"] = run.r.fabric_counters;
    for (const auto& c : run.r.captures) out.captures.push_back(c);
    n.heading(run.title);
    std::vector<std::pair<Time, std::string>> steps = {
        {us(fig["incast_completion_us"].get<double>()), "the incast is done (its last WRITE completed)"},
        {us(fig["victim_completion_us"].get<double>()), "the victim flow v->w is done"}};
    const auto first_pause = [&](size_t port, const std::string& what) {
      for (size_t i = 0; i < run.r.ports[port].paused.size(); ++i)
        if (run.r.ports[port].paused[i]) return steps.push_back({static_cast<Time>(i) * kSample, what});
    };
    first_pause(1, "first seen paused: the uplink sw0 -> sw1 (sw1's buffer for it passed XOFF, 64 KiB)");
    first_pause(2, "first seen paused: v's own NIC (sw0 is full now: the pause walked upstream)");
    std::sort(steps.begin(), steps.end());
    for (const auto& [t, what] : steps) n.step(t, what);
    n.figure("drops " + std::to_string(fig["drops"].get<uint64_t>()) + ", PFC frames " +
             std::to_string(fig["pause_frames"].get<uint64_t>()) + ", retransmitted packets " +
             std::to_string(fig["retransmitted_packets"].get<uint64_t>()) + ", ECN marks " +
             std::to_string(fig["ecn_marked"].get<uint64_t>()));
    n.figure("incast goodput " + num(fig["incast_goodput_gbps"].get<double>()) + " Gb/s, victim " +
             num(fig["victim_goodput_gbps"].get<double>()) + " Gb/s (its idle path could carry 100)");
    draw_run(page, run, fig);
  }
  const json& a = summary["runs"]["lossy"];
  const json& b = summary["runs"]["pfc"];
  const json& c = summary["runs"]["pfc_ecn_dcqcn"];
  const std::string tradeoff =
      "Without PFC the switch drops (" + std::to_string(a["drops"].get<uint64_t>()) +
      " packets) and RoCE's go-back-N turns each loss into retransmissions and timeouts: the incast's goodput "
      "falls to " + num(a["incast_goodput_gbps"].get<double>()) + " Gb/s. PFC makes the class lossless (" +
      std::to_string(b["drops"].get<uint64_t>()) + " drops, " + std::to_string(b["pause_frames"].get<uint64_t>()) +
      " pause frames) but a pause stops a whole link: the victim, which only shares the uplink, gets " +
      num(b["victim_goodput_gbps"].get<double>()) + " Gb/s instead of " + num(a["victim_goodput_gbps"].get<double>()) +
      ". ECN + DCQCN slow the senders at the source, so PFC is the last resort (" +
      std::to_string(c["pause_frames"].get<uint64_t>()) + " pause frames) and the victim gets " +
      num(c["victim_goodput_gbps"].get<double>()) + " Gb/s.";
  n.heading("The trade-off");
  n.note(tradeoff);
  page.heading("The trade-off");
  page.para(tradeoff);
  if (!out.captures.empty())
    page.para("Captures (both directions of each link, open them in Wireshark): pfc_r.pcap and pfc_v.pcap are r's and "
              "the victim's links in run 2 (PFC frames), dcqcn_r.pcap and dcqcn_v.pcap the same in run 3 (CE marks, "
              "CNPs and fewer PFC frames).");
  summary["captures"] = json::array();
  for (const auto& c2 : out.captures) summary["captures"].push_back(c2.substr(c2.rfind('/') + 1));
  out.summary = summary;
  out.html = page.html();
  return out;
}

}  // namespace rdmasim::learn
