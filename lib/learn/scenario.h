// A lesson's run: a fabric, RC flows of RDMA WRITEs (or READs) driven straight on the HCA
// models, in virtual time, with what a lesson draws sampled on a fixed grid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/time.h"
#include "sim/nic/hca.h"
#include "sim/trace/timeline.h"

namespace rdmasim::learn {

// One flow: `bytes` of payload from NIC `src` to NIC `dst` in messages of `message_bytes`,
// `window` of them posted at once, on its own RC QP pair. A READ flow's requester is `dst`
// (it reads src's memory), so the payload still goes src -> dst.
struct FlowDef {
  std::string name;
  size_t src = 0, dst = 0;
  uint64_t bytes = 0;
  uint32_t message_bytes = 65536;
  uint32_t window = 4;
  bool read = false;
  Time start = 0;
};

struct ScenarioSpec {
  nlohmann::json fabric;              // a fabric config (configs/README.md)
  std::vector<FlowDef> flows;
  Time sample_interval = us(2);       // the grid of every series below
  Time time_limit = ms(20);
  // The RC local ACK timeout exponent (4.096 us * 2^n, man ibv_modify_qp) of every QP.
  uint8_t ack_timeout = 14;
  std::vector<std::string> watch_ports;  // egress ports by counters name ("sw1/0", "h1/mlx5_0")
  // Captures: one file per NIC named here (index into nics()), holding both directions of
  // that NIC's link (its own egress and the switch port facing it).
  std::string capture_dir;
  std::string capture_prefix;         // file names: <prefix><host>.pcap
  std::vector<size_t> capture_nics;
  // The run's structured event trace (sim/trace/timeline.h): every packet a port sends and
  // every PCIe transaction, as it happens. Empty: not observed.
  trace::Timeline::Sink on_event;
};

struct FlowOutcome {
  bool finished = false;
  std::string error;
  Time first_byte = -1, last_byte = -1, finish = -1;   // finish: the last completion reached its CQ
  uint64_t bytes_received = 0;        // payload bytes that reached the receiving NIC
  std::vector<double> rate_gbps;      // payload arriving per sample interval, Gb/s
};

struct PortTrace {
  std::string name;
  std::vector<uint64_t> depth_bytes;  // bytes queued in all classes at each sample
  std::vector<uint8_t> paused;        // 1 when class 0 is paused by PFC at the sample
};

struct ScenarioResult {
  bool all_finished = false;
  std::vector<FlowOutcome> flows;
  std::vector<PortTrace> ports;       // in watch_ports order
  nlohmann::json fabric_counters;     // topo::Fabric::counters()
  std::vector<nic::HcaCounters> hcas; // per NIC
  std::vector<std::string> nic_names;
  std::vector<std::string> captures;  // files written
  Time end = 0;
  uint64_t events = 0;
  // The applications' own work, as the runner does it: verbs calls (posts, completions
  // taken) and the bytes the NICs moved by DMA. No CPU copy or system call happens on this
  // path; the runner has no call that would count one.
  uint64_t posts = 0, completions = 0;
  uint64_t dma_read_bytes = 0, dma_write_bytes = 0;
  // iWARP: the NICs' TCP connections, summed (Hca::tcp_report).
  uint64_t tcp_retransmits = 0, tcp_timeouts = 0;
};

// Runs to the last flow's completion or the time limit. Throws topo::ConfigError for a bad
// fabric, std::runtime_error when the HCA refuses a set-up step or a watched port is unknown.
ScenarioResult run_scenario(const ScenarioSpec& spec);

// The IPv4-mapped GID of a RoCE address, and the verbs MTU enum of a byte size.
std::array<uint8_t, 16> ipv4_gid(uint32_t ip);
uint8_t mtu_enum(uint32_t mtu);

}  // namespace rdmasim::learn
