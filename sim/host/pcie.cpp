#include "sim/host/pcie.h"

#include <algorithm>

namespace rdmasim::host {

std::string_view pcie_op_name(PcieOp op) {
  switch (op) {
    case PcieOp::Doorbell: return "doorbell";
    case PcieOp::BlueFlame: return "blueflame";
    case PcieOp::WqeFetch: return "wqe_fetch";
    case PcieOp::PayloadRead: return "payload_read";
    case PcieOp::PayloadWrite: return "payload_write";
    case PcieOp::CqeWrite: return "cqe_write";
  }
  return "?";
}

Rate pcie_rate(uint32_t gen, uint32_t lanes) {
  const uint64_t gts = gen <= 3 ? 8 : gen == 4 ? 16 : 32;  // GT/s per lane
  return Rate{gts * 1'000'000'000ull * lanes * 128 / 130};
}

uint32_t pcie_gen_for(Rate link) {
  if (link.bps <= 100'000'000'000ull) return 3;
  if (link.bps <= 200'000'000'000ull) return 4;
  return 5;
}

Time DmaRead::ready(uint64_t upto) const {
  upto = std::min(upto, bytes);
  const uint64_t tlps = (upto + max_payload - 1) / max_payload;
  return data_start + tx_time(rate, upto + tlps * cpl_overhead) + latency;
}

PcieLink::PcieLink(PcieConfig config)
    : config_(config), rate_(pcie_rate(config.gen, config.lanes)) {}

uint64_t PcieLink::wire_bytes(uint64_t bytes, uint32_t overhead) const {
  const uint64_t tlps = std::max<uint64_t>(1, (bytes + config_.max_payload - 1) / config_.max_payload);
  return bytes + tlps * overhead;
}

Time PcieLink::occupy(Time& free, Time& busy, Time now, uint64_t wire) {
  const Time start = std::max(now, free);
  const Time t = tx_time(rate_, wire);
  free = start + t;
  busy += t;
  return free;
}

void PcieLink::note(PcieOp op, uint32_t qpn, uint64_t bytes, Time start, Time end) {
  ++count_;
  if (recording_) log_.push_back({op, qpn, bytes, start, end});
  if (observer_) observer_({op, qpn, bytes, start, end});
}

Time PcieLink::mmio_write(Time now, uint32_t bytes, PcieOp op, uint32_t qpn) {
  // Posted writes queue among themselves only; completions queued toward the device (read
  // data already promised) move back by the write's wire time.
  const uint64_t wire = wire_bytes(bytes, config_.tlp_overhead);
  const Time left = occupy(mmio_free_, busy_down_, now, wire);
  const Time t = tx_time(rate_, wire);
  down_free_ = std::max(down_free_, left - t) + t;
  const Time end = left + config_.latency;
  note(op, qpn, bytes, now, end);
  return end;
}

Time PcieLink::dma_write(Time now, uint64_t bytes, PcieOp op, uint32_t qpn) {
  const Time left = occupy(up_free_, busy_up_, now, wire_bytes(bytes, config_.tlp_overhead));
  const Time end = left + config_.latency;
  note(op, qpn, bytes, now, end);
  return end;
}

DmaRead PcieLink::dma_read(Time now, uint64_t bytes, PcieOp op, uint32_t qpn) {
  // Read requests (header only, one per MRRS bytes) go to the host back to back; the host
  // answers the first after host_read; the completions then stream back.
  const uint64_t requests = std::max<uint64_t>(1, (bytes + config_.max_read_request - 1) / config_.max_read_request);
  const Time first_req = occupy(up_free_, busy_up_, now, config_.tlp_overhead);
  if (requests > 1) occupy(up_free_, busy_up_, first_req, (requests - 1) * config_.tlp_overhead);
  const Time answer = first_req + config_.latency + config_.host_read;
  DmaRead r;
  r.data_start = std::max(answer, down_free_);
  r.latency = config_.latency;
  r.rate = rate_;
  r.max_payload = config_.max_payload;
  r.cpl_overhead = config_.cpl_overhead;
  r.bytes = bytes;
  const uint64_t tlps = std::max<uint64_t>(1, (bytes + config_.max_payload - 1) / config_.max_payload);
  const Time t = tx_time(rate_, bytes + tlps * config_.cpl_overhead);
  down_free_ = r.data_start + t;
  busy_down_ += t;
  note(op, qpn, bytes, now, r.end());
  return r;
}

}  // namespace rdmasim::host
