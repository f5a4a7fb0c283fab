// Lesson `transports`: the same two hosts on InfiniBand, RoCEv2 and iWARP — the header bytes
// each packet carries, goodput over message sizes, small-message latency, and 1 % loss.
#include "lib/learn/lesson.h"
#include "lib/learn/page.h"
#include "lib/learn/scenario.h"
#include "sim/topo/fabric.h"

namespace rdmasim::learn {
namespace {

using nlohmann::json;

struct Transport {
  const char* key;
  const char* name;
  const char* headers;   // what each data packet carries besides the payload
};

// Header layouts: IBTA Vol 1 ch. 9 and annex A17 (RoCEv2); RFC 5040/5041/5044 (iWARP).
constexpr Transport kTransports[] = {
    {"ib", "InfiniBand", "LRH 8 + BTH 12 (+ RETH 16 on a WRITE's first packet) + ICRC 4 + VCRC 2"},
    {"roce", "RoCEv2", "Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 (+ RETH 16 first) + ICRC 4 + FCS 4, + preamble/gap 20"},
    {"iwarp", "iWARP", "Ethernet 14 + IPv4 20 + TCP 32 + MPA 2 + DDP/RDMAP 14 + CRC32c 4 + FCS 4, + preamble/gap 20"},
};

constexpr uint32_t kSizes[] = {64, 256, 1024, 4096, 16384, 65536, 262144};

// The default two-host fabric (configs/default.json) on link layer `ll`; iWARP keeps its own
// default Ethernet MTU (1500: its TCP segments), the others the default's 4096.
json fabric_for(const std::string& ll, double loss) {
  json f = topo::default_fabric_config();
  f["link_layer"] = ll;
  if (ll == "iwarp") f.erase("mtu");
  if (loss > 0)
    for (auto& l : f["links"]) l["loss_rate"] = loss;
  return f;
}

ScenarioResult write_run(const std::string& ll, uint64_t bytes, uint32_t msg, uint32_t window, double loss,
                         const std::string& capture_dir = "") {
  ScenarioSpec s;
  s.fabric = fabric_for(ll, loss);
  s.flows.push_back({"client->server", 1, 0, bytes, msg, window});
  s.sample_interval = us(10);
  s.time_limit = ms(2000);
  // 4.096 us * 2^8 = 1 ms ACK timeout (man ibv_modify_qp), as iWARP's TCP minimum RTO
  // (configs/README.md, iWARP min_rto_us 1000): both wait about as long for a lost tail.
  s.ack_timeout = 8;
  if (!capture_dir.empty()) {
    s.capture_dir = capture_dir;
    s.capture_prefix = ll + "_";
    s.capture_nics = {1};
  }
  ScenarioResult r = run_scenario(s);
  if (!r.all_finished) throw std::runtime_error("transports: a " + ll + " run did not finish: " + r.flows[0].error);
  return r;
}

}  // namespace

LessonOutput lesson_transports(const LessonOptions& o) {
  LessonOutput out;
  Narration& n = out.story;
  json summary = {{"lesson", "transports"}, {"captured_fabric", o.fabric}, {"size_bytes", o.size}};
  Page page("rdmasim learn transports: InfiniBand, RoCEv2, iWARP");
  page.para("Two hosts through one switch at 100 Gb/s, three times: the same RC RDMA WRITEs carried by InfiniBand, "
            "by RoCEv2 (InfiniBand's transport over UDP/IP on Ethernet) and by iWARP (RDMA over TCP). MTU 4096 on IB "
            "and RoCE, the Ethernet MTU 1500 on iWARP.");
  n.heading("transports: the same RDMA WRITEs on InfiniBand, RoCEv2 and iWARP");
  std::vector<std::vector<std::string>> hdr_rows, loss_rows;
  std::vector<Bar> lat_bars;
  Plot gp{"Goodput vs message size (" + std::to_string(32) + " messages, 8 in flight)", "message size (log2 B)",
          "Gb/s", {}, 100};
  for (const Transport& t : kTransports) {
    json tj;
    // Header bytes: one WRITE of `size` bytes; the requester's wire bytes beyond the payload,
    // per packet it sent (HcaCounters count wire bytes).
    const ScenarioResult one = write_run(t.key, o.size, static_cast<uint32_t>(o.size), 1, 0,
                                         t.key == o.fabric ? o.out_dir : "");
    for (const auto& c : one.captures) out.captures.push_back(c);
    const auto& req = one.hcas[1];
    const double per_pkt = static_cast<double>(req.tx_bytes - o.size) / static_cast<double>(req.tx_packets);
    tj["header_bytes_per_packet"] = per_pkt;
    tj["packets_for_size"] = req.tx_packets;
    tj["wire_efficiency"] = static_cast<double>(o.size) / static_cast<double>(req.tx_bytes);
    hdr_rows.push_back({t.name, std::to_string(req.tx_packets), num(per_pkt, 1), num(100.0 * o.size / req.tx_bytes, 1) + " %",
                        t.headers});
    // Small-message latency: one 64-byte WRITE, post to completion (the ACK's return).
    const ScenarioResult small = write_run(t.key, 64, 64, 1, 0);
    tj["write_64b_latency_ns"] = to_ns(small.flows[0].finish);
    lat_bars.push_back({t.name, to_ns(small.flows[0].finish) / 1e3, num(to_ns(small.flows[0].finish) / 1e3, 3) + " us"});
    // Goodput over message sizes.
    Series s{t.name, {}, {}, false, false};
    json g = json::array();
    for (uint32_t m : kSizes) {
      const ScenarioResult r = write_run(t.key, uint64_t{m} * 32, m, 8, 0);
      const double gbps = static_cast<double>(m) * 32 * 8 / static_cast<double>(to_ns(r.flows[0].finish));
      int lg = 0;
      while ((1u << lg) < m) ++lg;
      s.x.push_back(lg);
      s.y.push_back(gbps);
      g.push_back({{"message_bytes", m}, {"goodput_gbps", gbps}});
    }
    gp.series.push_back(s);
    tj["goodput"] = g;
    // 1 % loss on both links: 1 MiB in 64 KiB WRITEs.
    const ScenarioResult lossy = write_run(t.key, 1 << 20, 65536, 4, 0.01);
    const ScenarioResult clean = write_run(t.key, 1 << 20, 65536, 4, 0);
    uint64_t lost = 0;
    for (const auto& l : lossy.fabric_counters["links"])
      lost += l["a_to_b"]["lost_packets"].get<uint64_t>() + l["b_to_a"]["lost_packets"].get<uint64_t>();
    const uint64_t retx = lossy.hcas[1].retransmitted_packets + lossy.tcp_retransmits;
    const uint64_t tmo = lossy.hcas[1].timeouts + lossy.tcp_timeouts;
    const double t_clean = to_ns(clean.flows[0].finish) / 1e3, t_lossy = to_ns(lossy.flows[0].finish) / 1e3;
    tj["loss_1pct"] = {{"lost_packets", lost}, {"retransmitted", retx}, {"timeouts", tmo},
                       {"naks_sent", lossy.hcas[0].naks_sent}, {"completion_us", t_lossy},
                       {"completion_no_loss_us", t_clean},
                       {"goodput_gbps", 8.0 * (1 << 20) / (t_lossy * 1e3)}};
    loss_rows.push_back({t.name, std::to_string(lost), std::to_string(retx), std::to_string(tmo),
                         num(t_clean, 1) + " us", num(t_lossy, 1) + " us"});
    summary["transports"][t.key] = tj;
    n.heading(t.name);
    n.note("each packet carries " + std::string(t.headers));
    n.figure(std::to_string(o.size) + " B take " + std::to_string(req.tx_packets) + " packets, " + num(per_pkt, 1) +
             " header bytes each: " + num(100.0 * o.size / req.tx_bytes, 1) + " % of the wire is payload");
    n.figure("a 64 B WRITE completes in " + num(to_ns(small.flows[0].finish) / 1e3, 3) + " us; 64 KiB messages reach " +
             num(s.y[5]) + " Gb/s");
    n.figure("1 % loss: " + std::to_string(lost) + " packets lost, " + std::to_string(retx) + " retransmitted, " +
             std::to_string(tmo) + " timeouts: 1 MiB in " + num(t_lossy, 1) + " us instead of " + num(t_clean, 1));
  }
  page.heading("Header bytes");
  page.table({"transport", "packets for " + std::to_string(o.size) + " B", "header bytes / packet", "payload share",
              "what they are"}, hdr_rows);
  page.figure(line_plot(gp), "Small messages waste the link on headers and per-message work; from a few KiB on, "
              "all three approach line rate. iWARP's smaller frames (1500 B MTU) leave it a little below.");
  page.figure(bar_chart("64 B RDMA WRITE, post to completion", "us", lat_bars),
              "Microseconds, not milliseconds: the time is the wire, two switch hops each way and the NICs. The "
              "differences are frame sizes and header bytes at 100 Gb/s.");
  page.heading("1 % packet loss on both links");
  page.table({"transport", "lost", "retransmitted", "timeouts", "no loss", "1 % loss"}, loss_rows);
  page.para("RoCEv2 and InfiniBand use the RC transport's go-back-N: a gap makes the responder NAK, and the requester "
            "resends everything from the lost packet on, so one loss costs a window of retransmissions (and a lost "
            "tail waits for the ACK timeout). iWARP rides on TCP: selective recovery by fast retransmit, but the "
            "congestion window halves at every loss. InfiniBand is lossless by design: credit-based link-level flow "
            "control means a switch never drops for lack of buffer; the losses here are bit errors, which no flow "
            "control can prevent, so IB recovers the same way RoCE does.");
  summary["captures"] = json::array();
  for (const auto& c : out.captures) summary["captures"].push_back(c.substr(c.rfind('/') + 1));
  out.summary = summary;
  out.html = page.html();
  return out;
}

}  // namespace rdmasim::learn
