// A host's PCIe link between its memory (the root complex) and its NIC, as transactions.
//
// Each direction is one serial resource of the link's data rate: a transaction's TLPs take
// their wire bytes (payload plus per-TLP overhead) / rate, after whatever that direction is
// already carrying, and then the link's one-way latency. Toward the device, posted writes
// (the CPU's MMIO) pass queued read completions, as PCIe's ordering rules let them (a
// doorbell waits for no DMA stream; the completions behind it slip by its wire time). A DMA
// read is a read request
// (device -> host), the host's memory access, then completions (host -> device). Posted
// writes (MMIO doorbells from the CPU; payload and CQE writes from the NIC) complete when
// their last byte arrives. Nothing here knows what a QP or a verb is: the HCA model
// (sim/nic) decides which transactions a work request costs.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "sim/core/time.h"

namespace rdmasim::host {

// What a transaction is for (the lesson `hello` and the timeline name them).
enum class PcieOp : uint8_t {
  Doorbell,      // CPU -> NIC MMIO write of the doorbell record (8 B)
  BlueFlame,     // CPU -> NIC MMIO write of a whole small WQE (no fetch needed)
  WqeFetch,      // NIC reads the WQE from host memory
  PayloadRead,   // NIC reads message bytes from host memory (gather, READ responder)
  PayloadWrite,  // NIC writes received bytes into host memory
  CqeWrite,      // NIC writes a completion entry
};
std::string_view pcie_op_name(PcieOp op);

struct PcieConfig {
  bool enabled = false;
  uint32_t gen = 3;              // 3, 4 or 5: 8, 16, 32 GT/s per lane, 128b/130b coding
  uint32_t lanes = 16;
  Time latency = ns(125);        // one way, device <-> root complex
  Time host_read = ns(175);      // the root complex answering a read from memory
  uint32_t max_payload = 256;    // bytes per write or completion TLP (MPS)
  uint32_t max_read_request = 512;  // bytes per read request (MRRS)
  // Payload bytes the NIC keeps requested ahead of the next packet it sends (it reads a
  // message as it sends it, not all at once; at most 16 packets: sim/nic/pcie_hooks.cpp).
  uint32_t read_ahead = 16384;
  uint32_t tlp_overhead = 24;    // framing 2 + sequence 2 + LCRC 4 + 4DW header 16 (64-bit address)
  uint32_t cpl_overhead = 20;    // completions: 3DW header 12 + 8
};

// Data rate of a link: GT/s per lane x lanes x 128/130 (Gen3 and later coding).
Rate pcie_rate(uint32_t gen, uint32_t lanes);
// The generation a x16 NIC of `link` needs so that PCIe is not its bottleneck: Gen3
// (126 Gb/s) up to 100 Gb/s, Gen4 (252 Gb/s) up to 200 Gb/s, Gen5 beyond.
uint32_t pcie_gen_for(Rate link);

struct PcieTransaction {
  PcieOp op = PcieOp::Doorbell;
  uint32_t qpn = 0;
  uint64_t bytes = 0;   // payload bytes (not TLP overhead)
  Time start = 0;       // issued
  Time end = 0;         // last byte delivered
};

// A DMA read in flight: when each prefix of its bytes has reached the device.
struct DmaRead {
  Time data_start = 0;  // completions start leaving the root complex
  Time latency = 0;
  Rate rate;
  uint32_t max_payload = 256, cpl_overhead = 20;
  uint64_t bytes = 0;
  // Time the first `upto` bytes (1..bytes) are at the device; 0 bytes: data_start + latency.
  Time ready(uint64_t upto) const;
  Time end() const { return ready(bytes); }
};

class PcieLink {
 public:
  explicit PcieLink(PcieConfig config);

  const PcieConfig& config() const { return config_; }
  bool enabled() const { return config_.enabled; }
  Rate rate() const { return rate_; }

  // CPU -> NIC posted write of `bytes`, issued at `now`: the time its last byte arrives.
  Time mmio_write(Time now, uint32_t bytes, PcieOp op, uint32_t qpn);
  // NIC -> host posted write: the time its last byte reaches the root complex.
  Time dma_write(Time now, uint64_t bytes, PcieOp op, uint32_t qpn);
  // NIC reads `bytes` of host memory, issued at `now`.
  DmaRead dma_read(Time now, uint64_t bytes, PcieOp op, uint32_t qpn);

  // Busy time of each direction so far (wire time of the TLPs).
  Time busy_to_host() const { return busy_up_; }
  Time busy_to_device() const { return busy_down_; }
  uint64_t transactions() const { return count_; }

  // The transactions since recording started (off by default: a long run would grow it).
  void record(bool on) { recording_ = on; }
  const std::vector<PcieTransaction>& log() const { return log_; }
  // Called with each transaction as it is issued (its start is the engine's now); empty: none.
  void set_observer(std::function<void(const PcieTransaction&)> fn) { observer_ = std::move(fn); }

 private:
  // Puts `wire` bytes on one direction whose free time is `free`: returns when they left.
  Time occupy(Time& free, Time& busy, Time now, uint64_t wire);
  uint64_t wire_bytes(uint64_t bytes, uint32_t overhead) const;
  void note(PcieOp op, uint32_t qpn, uint64_t bytes, Time start, Time end);

  PcieConfig config_;
  Rate rate_;
  Time up_free_ = 0, down_free_ = 0;   // to host, to device (all traffic)
  Time mmio_free_ = 0;                 // to device: posted writes only
  Time busy_up_ = 0, busy_down_ = 0;
  uint64_t count_ = 0;
  bool recording_ = false;
  std::vector<PcieTransaction> log_;
  std::function<void(const PcieTransaction&)> observer_;
};

}  // namespace rdmasim::host
