// The HCA's use of the host's PCIe link (HcaConfig::pcie, sim/host/pcie.h): what each work
// request, received packet and completion costs in PCIe transactions.
//
// Sizes follow mlx5 (rdma-core providers/mlx5/qp.c): a send WQE is 64 B basic blocks
// holding a 16 B control segment, a 16 B remote-address segment for RDMA and atomics, a
// 16 B atomic segment, then 16 B per data pointer or the inline data (4 B header, 16 B
// aligned). A doorbell record write is 8 B; a CQE is 64 B. A WQE that is inline and at most
// 256 B goes whole in the MMIO write (mlx5's BlueFlame register is 256 B), so the NIC has
// no WQE to fetch and no payload to read.
#include "sim/nic/hca_impl.h"
#include "sim/nic/iwarp.h"

namespace rdmasim::nic {

namespace {

constexpr uint32_t kDoorbellBytes = 8;
constexpr uint32_t kCqeBytes = 64;
constexpr uint32_t kBlueFlameBytes = 256;

uint32_t wqe_bytes(const SendWqe& w) {
  uint32_t b = 16;  // control segment
  const WrOpcode op = w.wr.opcode;
  const bool rdma = op == WrOpcode::RdmaWrite || op == WrOpcode::RdmaWriteWithImm ||
                    op == WrOpcode::RdmaRead;
  const bool atomic = op == WrOpcode::AtomicCmpAndSwp || op == WrOpcode::AtomicFetchAndAdd;
  if (rdma || atomic) b += 16;
  if (atomic) b += 16;
  if (w.wr.send_flags & kSendInline) {
    b += (4 + static_cast<uint32_t>(w.wr.inline_data.size()) + 15) / 16 * 16;
  } else {
    b += 16 * static_cast<uint32_t>(w.wr.sgl.size());
  }
  return (b + 63) / 64 * 64;
}

}  // namespace

Time Hca::Impl::pcie_post(const Qp& qp, SendWqe& w) {
  const Time now = engine.now();
  const uint32_t size = wqe_bytes(w);
  const bool is_inline = (w.wr.send_flags & kSendInline) != 0;
  Time fetched;
  if (is_inline && size <= kBlueFlameBytes) {
    fetched = pcie.mmio_write(now, size, host::PcieOp::BlueFlame, qp.qpn);
  } else {
    const Time rung = pcie.mmio_write(now, kDoorbellBytes, host::PcieOp::Doorbell, qp.qpn);
    fetched = pcie.dma_read(rung, size, host::PcieOp::WqeFetch, qp.qpn).end();
  }
  w.pcie_read = !is_inline && !w.is_read_or_atomic() && !w.is_local_op() && w.length > 0;
  return fetched;
}

// A NIC reads a message's payload as it sends it: it keeps `read_ahead` bytes (at most
// kReadRing packets) requested beyond the packet it sends next, across the WQEs it has
// fetched, so a stream is not held while one message's reads are on the link, and a long
// message does not book the link for its whole length (which would hold every other
// transaction of the host behind it). Each packet's bytes are one DMA read, issued now.
void Hca::Impl::pcie_read_ahead(Qp& qp) {
  const uint64_t window = pcie.config().read_ahead;
  uint64_t ahead = 0;
  uint32_t count = 0;
  const auto more = [&] { return ahead < window && count < SendWqe::kReadRing; };
  for (size_t i = 0; i < qp.resp_queue.size() && more(); ++i) {
    RdmaPacket& p = *qp.resp_queue[i];
    if (p.dma_wanted) {
      p.dma_wanted = false;
      p.dma_ready = pcie.dma_read(engine.now(), p.payload_len, host::PcieOp::PayloadRead, qp.qpn).end();
    }
    ahead += p.payload_len;
    ++count;
  }
  for (size_t i = qp.tx_wqe; i < qp.sq.size() && more(); ++i) {
    SendWqe& w = qp.sq[i];
    if (!w.fetched) break;  // the NIC has not seen this WQE yet, nor those after it
    if (!w.pcie_read) continue;
    const uint32_t pkts = (w.length + qp.mtu - 1) / qp.mtu;
    for (uint32_t k = i == qp.tx_wqe ? qp.tx_pkt : 0; k < pkts && more(); ++k) {
      const uint32_t bytes = std::min(qp.mtu, w.length - k * qp.mtu);
      if (k >= w.read_pkts) {
        w.read_ready[k % SendWqe::kReadRing] =
            pcie.dma_read(engine.now(), bytes, host::PcieOp::PayloadRead, qp.qpn).end();
        w.read_pkts = k + 1;
      }
      ahead += bytes;
      ++count;
    }
  }
}

bool Hca::Impl::dma_hold(Qp& qp) {
  if (!pcie.enabled()) return false;
  // iWARP: only when TCP would take a new FPDU (iwarp_next), never in front of its own
  // segments (unsent data, retransmissions).
  if (qp.tcp && (qp.tcp->aborted || qp.tcp->tcp.can_send() || qp.tcp->tcp.has_unsent())) return false;
  pcie_read_ahead(qp);
  // IRN resends first; their bytes were read the first time (as for go-back-N below).
  if (qp.resp_queue.empty() && irn(qp) && irn_has_retx(qp)) return false;
  Time ready = 0;
  if (!qp.resp_queue.empty()) {
    ready = qp.resp_queue.front()->dma_ready;
  } else if (qp.tx_wqe < qp.sq.size()) {
    const SendWqe& w = qp.sq[qp.tx_wqe];
    // A packet read more than a ring ago is being sent again (go-back-N): its bytes were
    // read the first time (a NIC would read them again; not modelled).
    if (w.pcie_read && w.eligible && qp.tx_pkt < w.read_pkts &&
        qp.tx_pkt + SendWqe::kReadRing >= w.read_pkts)
      ready = w.read_ready[qp.tx_pkt % SendWqe::kReadRing];
  }
  if (ready <= engine.now()) return false;
  qp.in_active = false;
  if (!engine.is_pending(qp.dma_wake)) {
    const uint32_t qpn = qp.qpn;
    qp.dma_wake = later(ready - engine.now(), [this, qpn] {
      auto it = qps.find(qpn);
      if (it == qps.end()) return;
      it->second->dma_wake = EventId{};
      kick(*it->second);
    });
  }
  return true;
}

void Hca::Impl::pcie_placed(uint32_t qpn, uint64_t bytes) {
  if (pcie.enabled() && bytes) pcie.dma_write(engine.now(), bytes, host::PcieOp::PayloadWrite, qpn);
}

void Hca::Impl::pcie_read_response(Qp& qp, uint32_t first_pkt) {
  if (!pcie.enabled()) return;
  for (size_t i = first_pkt; i < qp.resp_queue.size(); ++i) qp.resp_queue[i]->dma_wanted = true;
}

}  // namespace rdmasim::nic
