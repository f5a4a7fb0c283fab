#include "lib/learn/kernel_tcp.h"

#include <algorithm>
#include <stdexcept>

namespace rdmasim::learn {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

KernelTcpParams KernelTcpParams::from_json(const nlohmann::json& j) {
  KernelTcpParams p;
  if (j.is_null()) return p;
  if (!j.is_object()) throw std::invalid_argument("the cost model must be a JSON object");
  auto num = [&](const std::string& k, double* v, double lo) {
    if (!j[k].is_number() || j[k].get<double>() < lo)
      throw std::invalid_argument(k + ": expected a number >= " + std::to_string(lo));
    *v = j[k].get<double>();
  };
  auto count = [&](const std::string& k, uint32_t* v) {
    if (!j[k].is_number_unsigned() || j[k].get<uint64_t>() < 1 || j[k].get<uint64_t>() > (1u << 30))
      throw std::invalid_argument(k + ": expected an integer 1..2^30");
    *v = j[k].get<uint32_t>();
  };
  for (const auto& [k, v] : j.items()) {
    if (k == "copy_gbps") num(k, &p.copy_gbps, 0.001);
    else if (k == "syscall_ns") num(k, &p.syscall_ns, 0);
    else if (k == "per_packet_ns") num(k, &p.per_packet_ns, 0);
    else if (k == "interrupt_ns") num(k, &p.interrupt_ns, 0);
    else if (k == "wakeup_ns") num(k, &p.wakeup_ns, 0);
    else if (k == "post_ns") num(k, &p.post_ns, 0);
    else if (k == "poll_ns") num(k, &p.poll_ns, 0);
    else if (k == "wire_overhead_bytes") num(k, &p.wire_overhead_bytes, 0);
    else if (k == "coalesce_frames") count(k, &p.coalesce_frames);
    else if (k == "mss") count(k, &p.mss);
    else if (k == "app_chunk") count(k, &p.app_chunk);
    else if (k == "ack_every") count(k, &p.ack_every);
    else throw std::invalid_argument(k + ": not a parameter of the cost model (configs/README.md)");
    (void)v;
  }
  return p;
}

nlohmann::json KernelTcpParams::to_json() const {
  return {{"copy_gbps", copy_gbps}, {"syscall_ns", syscall_ns}, {"per_packet_ns", per_packet_ns},
          {"interrupt_ns", interrupt_ns}, {"coalesce_frames", coalesce_frames}, {"wakeup_ns", wakeup_ns},
          {"mss", mss}, {"app_chunk", app_chunk}, {"ack_every", ack_every}, {"post_ns", post_ns},
          {"poll_ns", poll_ns}, {"wire_overhead_bytes", wire_overhead_bytes}};
}

nlohmann::json HostWork::to_json() const {
  return {{"cpu_copy_bytes", cpu_copy_bytes}, {"syscalls", syscalls}, {"interrupts", interrupts},
          {"context_switches", context_switches}, {"packets_processed", packets},
          {"cpu_busy_ns", busy_ns()},
          {"cpu_busy_ns_by_cause", {{"system_call", syscall_ns}, {"copy", copy_ns}, {"protocol", protocol_ns},
                                    {"interrupt", interrupt_ns}, {"wake_up", wakeup_ns}, {"application", app_ns}}}};
}

KernelTcpRun model_kernel_tcp(const KernelTcpParams& p, uint64_t bytes, double rate_gbps, double path_latency_ns,
                              int hops) {
  KernelTcpRun r;
  const double copy_ns_per_byte = 8 / p.copy_gbps;
  r.segments = ceil_div(bytes, p.mss);
  r.acks = ceil_div(r.segments, p.ack_every);
  // Sender: send() per app chunk, each copying its bytes into the socket buffer; TCP/IP
  // builds each segment and takes each ACK; ACK arrivals interrupt it, coalesced.
  HostWork& s = r.sender;
  s.syscalls = ceil_div(bytes, p.app_chunk);
  s.cpu_copy_bytes = bytes;
  s.packets = r.segments + r.acks;
  s.interrupts = ceil_div(r.acks, p.coalesce_frames);
  // Receiver: each interrupt batch of coalesce_frames segments wakes the application,
  // whose recv() calls (at most app_chunk each) copy the batch out of the socket buffer.
  HostWork& d = r.receiver;
  d.interrupts = ceil_div(r.segments, p.coalesce_frames);
  d.context_switches = d.interrupts;
  d.packets = r.segments + r.acks;
  d.cpu_copy_bytes = bytes;
  for (uint64_t seg = 0; seg < r.segments; seg += p.coalesce_frames) {
    const uint64_t first = seg * p.mss;
    const uint64_t batch = std::min<uint64_t>(bytes, (seg + p.coalesce_frames) * p.mss) - first;
    d.syscalls += ceil_div(batch, p.app_chunk);
  }
  for (HostWork* h : {&s, &d}) {
    h->syscall_ns = static_cast<double>(h->syscalls) * p.syscall_ns;
    h->copy_ns = static_cast<double>(h->cpu_copy_bytes) * copy_ns_per_byte;
    h->protocol_ns = static_cast<double>(h->packets) * p.per_packet_ns;
    h->interrupt_ns = static_cast<double>(h->interrupts) * p.interrupt_ns;
    h->wakeup_ns = static_cast<double>(h->context_switches) * p.wakeup_ns;
  }
  // The stages run as a pipeline: the slowest sets the rate of the bulk, and the first
  // segment pays every stage once.
  const double wire_gbps = rate_gbps * p.mss / (p.mss + p.wire_overhead_bytes);
  const double sender_gbps = static_cast<double>(bytes) * 8 / s.busy_ns();
  const double receiver_gbps = static_cast<double>(bytes) * 8 / d.busy_ns();
  r.bottleneck_gbps = wire_gbps, r.bottleneck = "the wire";
  if (sender_gbps < r.bottleneck_gbps) r.bottleneck_gbps = sender_gbps, r.bottleneck = "the sender's CPU";
  if (receiver_gbps < r.bottleneck_gbps) r.bottleneck_gbps = receiver_gbps, r.bottleneck = "the receiver's CPU";
  const double seg = std::min<double>(static_cast<double>(bytes), p.mss);
  const double serialize = (seg + p.wire_overhead_bytes) * 8 / rate_gbps;
  r.first_segment_ns = p.syscall_ns + seg * copy_ns_per_byte + p.per_packet_ns + hops * serialize + path_latency_ns +
                       p.interrupt_ns + p.per_packet_ns + p.wakeup_ns + p.syscall_ns + seg * copy_ns_per_byte;
  r.latency_ns = r.first_segment_ns + (static_cast<double>(bytes) - seg) * 8 / r.bottleneck_gbps;
  return r;
}

}  // namespace rdmasim::learn
