// A cost model of moving bytes through kernel TCP sockets, for the copies lesson: what the
// CPUs of the two hosts do (system calls, two copies, per-packet protocol work, interrupts,
// wake-ups) and how long the transfer takes when the slowest stage sets the pace.
// Every parameter has a default with its source (configs/README.md, "The copies lesson's
// cost model") and can be overridden from JSON.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace rdmasim::learn {

struct KernelTcpParams {
  double copy_gbps = 80;              // memcpy bandwidth of one core (10 GB/s)
  double syscall_ns = 100;            // entering and leaving the kernel once
  double per_packet_ns = 800;         // TCP/IP work per segment or ACK, sent or received
  double interrupt_ns = 1000;         // one interrupt: entry, handler, NAPI poll scheduling
  uint32_t coalesce_frames = 32;      // frames per interrupt (interrupt moderation)
  double wakeup_ns = 3000;            // waking the blocked receiver: a context switch
  uint32_t mss = 1448;                // 1500 B MTU - 20 IPv4 - 20 TCP - 12 timestamps
  uint32_t app_chunk = 131072;        // bytes per send()/recv() the application asks for
  uint32_t ack_every = 2;             // delayed ACK: one ACK per two segments (RFC 1122 4.2.3.2)
  double post_ns = 100;               // RDMA side: building a WQE and writing the doorbell (user space)
  double poll_ns = 50;                // RDMA side: one ibv_poll_cq that finds a completion
  double wire_overhead_bytes = 90;    // per segment on the wire: IP 20 + TCP 32 + Ethernet 18 + preamble/IFG 20

  // Reads the keys of `j` it knows (each a number of the right range); throws
  // std::invalid_argument naming a key it does not know or a bad value.
  static KernelTcpParams from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
};

// Per host: what its CPU did, in the model's own counts.
struct HostWork {
  uint64_t cpu_copy_bytes = 0, syscalls = 0, interrupts = 0, context_switches = 0, packets = 0;
  double syscall_ns = 0, copy_ns = 0, protocol_ns = 0, interrupt_ns = 0, wakeup_ns = 0, app_ns = 0;
  double busy_ns() const { return syscall_ns + copy_ns + protocol_ns + interrupt_ns + wakeup_ns + app_ns; }
  nlohmann::json to_json() const;
};

struct KernelTcpRun {
  uint64_t segments = 0, acks = 0;
  HostWork sender, receiver;
  double first_segment_ns = 0;        // one segment through every stage
  double bottleneck_gbps = 0;         // the slowest stage's rate (wire, sender CPU, receiver CPU)
  std::string bottleneck;             // which one
  double latency_ns = 0;              // send() called -> the last byte in the receiver's buffer
};

// `bytes` through the model over a path of `rate_gbps` and `path_latency_ns` (propagation
// and switching, one way) with `hops` store-and-forward serializations.
KernelTcpRun model_kernel_tcp(const KernelTcpParams& p, uint64_t bytes, double rate_gbps, double path_latency_ns,
                              int hops);

}  // namespace rdmasim::learn
