// A run's structured event trace: every packet a port of the fabric transmits and every
// PCIe transaction of every HCA, one event each, in simulated-time order. The lessons draw
// from it (lib/learn) and `--timeline FILE` writes it as JSON lines (rdmasim study, the
// daemon): {"t_ps", "end_ps", "component", "event", "qp", "psn", "bytes", "payload"}.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/time.h"
#include "sim/topo/fabric.h"

namespace rdmasim::nic {
class Hca;
}

namespace rdmasim::trace {

struct TimelineEvent {
  Time t = 0;             // a packet: its last bit left the port; PCIe: issued
  Time end = 0;           // a packet: = t (it reaches the far end a link latency later); PCIe: last byte delivered
  std::string component;  // "client/mlx5_0" (a NIC port), "sw0/1" (a switch port), "client/pcie"
  std::string event;      // the opcode ("RDMA READ Request", "Acknowledge"; iWARP "TCP" with
                          // payload, "TCP_ACK" without; "IB_CREDIT", "PFC_PAUSE", "CNP") or PCIe op
  uint32_t qp = 0;        // destination QP (packets), the QP (PCIe); 0: none
  int64_t psn = -1;       // BTH PSN, or the TCP sequence number on iWARP; -1: none
  uint64_t bytes = 0;     // wire bytes (packets), payload bytes (PCIe)
  uint64_t payload = 0;   // packets: payload bytes (iWARP: TCP data; 0: headers only); PCIe: = bytes
};

// One line of JSON (no newline): the keys above, times in picoseconds.
std::string timeline_json(const TimelineEvent& e);

class Timeline {
 public:
  using Sink = std::function<void(const TimelineEvent&)>;
  // Observes every egress port of `fabric` (keeping any tap already set, e.g. a capture,
  // which still sees every packet) and the PCIe link of each HCA; hcas[i] is NIC i's (null:
  // none). Detaches in the destructor: it must go before the fabric and the HCAs.
  Timeline(topo::Fabric& fabric, const std::vector<nic::Hca*>& hcas, Sink sink);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;
  uint64_t events() const { return events_; }

 private:
  struct PortTap;
  void emit(const TimelineEvent& e);
  Sink sink_;
  uint64_t events_ = 0;
  std::vector<std::unique_ptr<PortTap>> taps_;
  std::vector<nic::Hca*> hcas_;
};

// A Timeline writing JSON lines into `path` (std::runtime_error when it cannot be created).
class TimelineFile {
 public:
  TimelineFile(const std::string& path, topo::Fabric& fabric, const std::vector<nic::Hca*>& hcas);
  ~TimelineFile();
  uint64_t events() const { return timeline_->events(); }

 private:
  struct Out;
  std::unique_ptr<Out> out_;
  std::unique_ptr<Timeline> timeline_;
};

}  // namespace rdmasim::trace
