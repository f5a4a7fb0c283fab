// Lesson `copies`: the same transfer by RDMA WRITE (run on the HCA models) and through a
// modelled kernel TCP socket path (kernel_tcp.h), side by side: bytes a CPU copied, system
// calls, interrupts, CPU time per host, latency and goodput.
#include <cmath>
#include <stdexcept>

#include "lib/learn/kernel_tcp.h"
#include "lib/learn/lesson.h"
#include "lib/learn/page.h"
#include "lib/learn/scenario.h"
#include "sim/topo/fabric.h"

namespace rdmasim::learn {
namespace {

using nlohmann::json;

// The two-host fabric: configs/default.json (server and client through one switch, 100 Gb/s,
// 400 ns links, 200 ns forwarding), on the link layer asked for.
json two_hosts(const std::string& fabric) {
  json f = topo::default_fabric_config();
  f["link_layer"] = fabric;
  return f;
}

double path_latency_ns(const json& f) {
  double ns = 0;
  for (const auto& l : f["links"]) ns += l.value("latency_ns", 0.0);
  for (const auto& s : f["switches"]) ns += s.value("forwarding_latency_ns", 200.0);
  return ns;
}

const char* kSources[][2] = {
    {"copy_gbps", "10 GB/s, of the order of one core's memcpy on a DDR4 server; measure this machine with "
                  "build/tests/bench/memcpy_bench and pass it in --params"},
    {"syscall_ns", "about 100 ns for the kernel entry and exit: L. Rizzo, netmap (USENIX ATC 2012), sec. 2, "
                   "breakdown of a ~950 ns sendto()"},
    {"per_packet_ns", "the rest of that sendto() path (UDP/IP, Ethernet, driver) in the same breakdown; TCP does "
                      "more per segment, so this is on the low side"},
    {"interrupt_ns", "an estimate (entry, handler, NAPI scheduling: of the order of a microsecond), not a measurement"},
    {"coalesce_frames", "an estimate of interrupt moderation (ethtool -C rx-frames; adaptive moderation varies it); "
                        "time-based moderation is not modelled"},
    {"wakeup_ns", "a context switch to the woken receiver, of the order of microseconds: C. Li, C. Ding, K. Shen, "
                  "Quantifying the cost of context switch (ExpCS 2007)"},
    {"mss", "1500 B Ethernet MTU - 20 IPv4 - 20 TCP - 12 TCP timestamps"},
    {"app_chunk", "iperf3's default TCP block, 128 KiB"},
    {"ack_every", "delayed ACK, one per two full segments (RFC 1122 4.2.3.2, RFC 5681 4.2)"},
    {"post_ns", "an estimate: a 64 B WQE written to the send queue and an 8 B doorbell MMIO write, in user space"},
    {"poll_ns", "an estimate: one ibv_poll_cq reading a 64 B CQE from host memory"},
    {"wire_overhead_bytes", "IPv4 20 + TCP 32 (with timestamps) + Ethernet 14 + FCS 4 + preamble 8 + gap 12"},
};

json path_json(const HostWork& snd, const HostWork& rcv, double latency_ns, uint64_t bytes) {
  return {{"cpu_copy_bytes", snd.cpu_copy_bytes + rcv.cpu_copy_bytes},
          {"syscalls", snd.syscalls + rcv.syscalls},
          {"interrupts", snd.interrupts + rcv.interrupts},
          {"context_switches", snd.context_switches + rcv.context_switches},
          {"cpu_busy_ns", {{"sender", snd.busy_ns()}, {"receiver", rcv.busy_ns()}}},
          {"hosts", {{"sender", snd.to_json()}, {"receiver", rcv.to_json()}}},
          {"latency_ns", latency_ns},
          {"goodput_gbps", static_cast<double>(bytes) * 8 / latency_ns}};
}

}  // namespace

LessonOutput lesson_copies(const LessonOptions& o) {
  KernelTcpParams p;
  try {
    p = KernelTcpParams::from_json(o.params);
  } catch (const std::invalid_argument& e) {
    throw LessonError(std::string("copies --params: ") + e.what());
  }
  const uint64_t S = o.size;
  const json fabric = two_hosts(o.fabric);

  // RDMA: one WRITE of S bytes from client (NIC 1) to server (NIC 0) on the HCA models.
  ScenarioSpec spec;
  spec.fabric = fabric;
  spec.flows.push_back({"client->server WRITE", 1, 0, S, static_cast<uint32_t>(S), 1});
  spec.sample_interval = us(1);
  spec.time_limit = ms(500);
  spec.capture_dir = o.out_dir;
  spec.capture_prefix = "rdma_";
  spec.capture_nics = {1};
  const ScenarioResult r = run_scenario(spec);
  if (!r.all_finished) throw std::runtime_error("copies: the RDMA WRITE did not complete: " + r.flows[0].error);
  // What the applications did, from the runner's own counts: the client posted and polled;
  // the server ran no code for the WRITE. The payload moved by DMA (NIC reads at the
  // client, writes at the server): r.dma_read_bytes and r.dma_write_bytes.
  HostWork rs, rr;
  rs.app_ns = static_cast<double>(r.posts) * p.post_ns + static_cast<double>(r.completions) * p.poll_ns;
  const double rdma_latency = p.post_ns + static_cast<double>(to_ns(r.flows[0].finish)) + p.poll_ns;

  const double rate = fabric["links"][0].value("rate_gbps", 100.0);
  const KernelTcpRun t = model_kernel_tcp(p, S, rate, path_latency_ns(fabric), 2);

  LessonOutput out;
  json rdma = path_json(rs, rr, rdma_latency, S);
  rdma["verbs_posts"] = r.posts;
  rdma["verbs_completions_polled"] = r.completions;
  rdma["nic_dma_read_bytes"] = r.dma_read_bytes;
  rdma["nic_dma_write_bytes"] = r.dma_write_bytes;
  rdma["packets"] = r.hcas[1].tx_packets;
  json tcp = path_json(t.sender, t.receiver, t.latency_ns, S);
  tcp["segments"] = t.segments;
  tcp["acks"] = t.acks;
  tcp["bottleneck"] = t.bottleneck;
  tcp["bottleneck_gbps"] = t.bottleneck_gbps;
  tcp["first_segment_ns"] = t.first_segment_ns;
  json sources = json::object();
  for (const auto& s : kSources) sources[s[0]] = s[1];
  out.summary = {{"lesson", "copies"}, {"fabric", o.fabric}, {"size_bytes", S},
                 {"paths", {{"rdma_write", rdma}, {"tcp", tcp}}},
                 {"model", p.to_json()}, {"model_sources", sources},
                 {"captures", json::array({"rdma_client.pcap"})}};
  out.captures = r.captures;

  Narration& n = out.story;
  n.heading("copies: " + std::to_string(S) + " B from client to server, twice");
  n.heading("RDMA WRITE (simulated on the HCA models)");
  n.step(0, "client: builds a WQE and rings the doorbell (user space: no system call)");
  n.step(r.flows[0].first_byte, "server's NIC: first payload packet arrives; it DMAs it into the registered buffer");
  n.step(r.flows[0].last_byte, "server's NIC: last payload packet placed; the server's CPU has done nothing");
  n.step(r.flows[0].finish, "client's NIC: the ACK is back, the completion is in the CQ; the client polls it");
  n.figure("CPU copies 0 B, system calls 0, interrupts 0; NIC DMA " + std::to_string(r.dma_read_bytes) +
           " B read at the client, " + std::to_string(r.dma_write_bytes) + " B written at the server");
  n.figure("latency " + num(rdma_latency / 1e3, 2) + " us, goodput " + num(rdma["goodput_gbps"].get<double>()) +
           " Gb/s; CPU busy: client " + num(rs.busy_ns(), 0) + " ns, server 0 ns");
  n.heading("Kernel TCP sockets (the cost model, configs/README.md)");
  n.note("client: " + std::to_string(t.sender.syscalls) + " send() calls copy " + std::to_string(S) +
         " B into the socket buffer; TCP cuts it into " + std::to_string(t.segments) + " segments");
  n.note("server: " + std::to_string(t.receiver.interrupts) + " interrupts, " + std::to_string(t.receiver.syscalls) +
         " recv() calls copying " + std::to_string(S) + " B out of the kernel, " +
         std::to_string(t.receiver.context_switches) + " wake-ups");
  n.figure("CPU copies " + std::to_string(2 * S) + " B (2 x payload), system calls " +
           std::to_string(t.sender.syscalls + t.receiver.syscalls) + ", interrupts " +
           std::to_string(t.sender.interrupts + t.receiver.interrupts));
  n.figure("latency " + num(t.latency_ns / 1e3, 2) + " us, goodput " + num(tcp["goodput_gbps"].get<double>()) +
           " Gb/s (bound by " + t.bottleneck + "); CPU busy: client " + num(t.sender.busy_ns() / 1e3, 1) +
           " us, server " + num(t.receiver.busy_ns() / 1e3, 1) + " us");

  Page page("rdmasim learn copies: zero-copy, kernel bypass, CPU offload");
  page.para("The same " + std::to_string(S) + " bytes go from client to server twice: once by one RDMA WRITE, "
            "simulated packet by packet on the HCA models of a " + o.fabric + " fabric, and once through kernel TCP "
            "sockets, whose costs come from the documented model below (not a simulation of every instruction).");
  page.figure(bar_chart("Bytes copied by a CPU", "B",
                        {{"RDMA WRITE", 0, "0 B (the NICs moved " + std::to_string(r.dma_read_bytes) + " B by DMA)"},
                         {"TCP", static_cast<double>(2 * S), std::to_string(2 * S) + " B = 2 x payload"}}),
              "RDMA's bar is empty: the server's NIC writes the data straight into the registered buffer (zero-copy). "
              "TCP copies every byte twice: user to kernel at the client, kernel to user at the server.");
  page.figure(bar_chart("System calls and interrupts on the data path", "",
                        {{"RDMA syscalls", 0, "0"},
                         {"RDMA interrupts", 0, "0"},
                         {"TCP syscalls", static_cast<double>(t.sender.syscalls + t.receiver.syscalls), ""},
                         {"TCP interrupts", static_cast<double>(t.sender.interrupts + t.receiver.interrupts), ""}}),
              "The RDMA application talks to the NIC through memory it shares with it (kernel bypass): no system "
              "call, and it polls the completion instead of waiting for an interrupt.");
  page.figure(bar_chart("CPU busy time per host", "us",
                        {{"RDMA client", rs.busy_ns() / 1e3, num(rs.busy_ns() / 1e3, 3) + " us"},
                         {"RDMA server", 0, "0 us"},
                         {"TCP client", t.sender.busy_ns() / 1e3, num(t.sender.busy_ns() / 1e3, 1) + " us"},
                         {"TCP server", t.receiver.busy_ns() / 1e3, num(t.receiver.busy_ns() / 1e3, 1) + " us"}}),
              "CPU offload: the RDMA server's CPU did nothing at all, the client's only posted one WQE and polled "
              "one completion. TCP keeps both CPUs busy for about as long as the transfer takes.");
  const auto cause = [](const HostWork& h) {
    return std::vector<Bar>{{"system calls", h.syscall_ns / 1e3, ""}, {"copies", h.copy_ns / 1e3, ""},
                            {"protocol", h.protocol_ns / 1e3, ""}, {"interrupts", h.interrupt_ns / 1e3, ""},
                            {"wake-ups", h.wakeup_ns / 1e3, ""}};
  };
  page.figure(bar_chart("TCP server's CPU time by cause", "us", cause(t.receiver)),
              "Where the receiving CPU's time goes: per-packet protocol work and the copy dominate; bigger copies "
              "(a faster memcpy) or fewer packets (bigger segments, coalescing) move these bars.");
  page.figure(bar_chart("Latency of the whole transfer", "us",
                        {{"RDMA WRITE", rdma_latency / 1e3, num(rdma_latency / 1e3, 2) + " us"},
                         {"TCP", t.latency_ns / 1e3, num(t.latency_ns / 1e3, 2) + " us (" + t.bottleneck + ")"}}),
              "RDMA's time is the wire's: " + std::to_string(S) + " B at line rate plus the path. TCP is set by its "
              "slowest stage, here " + t.bottleneck + ". RDMA's latency is to the completion at the client (after "
              "the ACK came back); TCP's to the last byte in the server's buffer.");
  std::vector<std::vector<std::string>> rows;
  const json pj = p.to_json();
  for (const auto& s : kSources) rows.push_back({s[0], pj[s[0]].dump(), s[1]});
  page.heading("The cost model");
  page.para("Override any of these with --params FILE (a JSON object with these keys).");
  page.table({"parameter", "value", "source"}, rows);
  page.para("Capture: rdma_client.pcap holds both directions of the client's link (the WRITE's packets and the "
            "server's ACKs).");
  out.html = page.html();
  return out;
}

}  // namespace rdmasim::learn
