// Memory-region checks and DMA: lkey/rkey lookup, bounds, access rights, gather/scatter.
#include "sim/nic/hca_impl.h"

namespace rdmasim::nic {

const Mr* Hca::Impl::check_local(uint32_t pd, const Sge& sge, uint32_t access) const {
  auto it = mrs.find(sge.lkey);
  if (it == mrs.end()) return nullptr;
  const Mr& mr = it->second;
  if (mr.pd != pd || (mr.access & access) != access) return nullptr;
  if (sge.addr < mr.addr || sge.addr - mr.addr > mr.length ||
      sge.length > mr.length - (sge.addr - mr.addr))
    return nullptr;
  return &mr;
}

const Mr* Hca::Impl::check_remote(const Qp& qp, uint32_t rkey, uint64_t va, uint64_t len,
                                  uint32_t access) const {
  const uint32_t pd = access_pd(qp);
  auto in_range = [&](uint64_t base, uint64_t size) {
    return va >= base && va - base <= size && len <= size - (va - base);
  };
  auto it = mrs.find(rkey);
  if (it == mrs.end()) {
    // A memory window (IBTA 10.6.7.3): the exact current key, bound, same PD, a type 2
    // window only through its QP; its own bounds and rights (a zero-length window grants
    // nothing, as rxe_lookup_mw has it). The MR behind it is known to exist: dereg is EBUSY.
    auto w = mws.find(rkey >> 8);
    if (w == mws.end()) return nullptr;
    const Mw& mw = w->second;
    if (mw.rkey != rkey || !mw.bound || mw.length == 0 || mw.pd != pd) return nullptr;
    if (mw.type == MwType::Type2 && mw.qpn != qp.qpn) return nullptr;
    if ((mw.access & access) != access || !in_range(mw.addr, mw.length)) return nullptr;
    auto m = mrs.find(mw.mr);
    return m == mrs.end() ? nullptr : &m->second;
  }
  const Mr& mr = it->second;
  if (mr.pd != pd || (mr.access & access) != access) return nullptr;
  if (!in_range(mr.iova, mr.length)) return nullptr;
  return &mr;
}

bool Hca::Impl::start_gather(uint32_t pd, SendWqe& w) const {
  bool bytes = false;      // some SGE is in memory that holds bytes
  // Every such memory is read a packet at a time. Not on iWARP: its DDP framing takes a
  // segment's message offset from its payload_offset (iwarp_frame), so its packets keep
  // slices of the message's one gathered buffer.
  bool by_packet = !is_iwarp();
  for (const Sge& s : w.wr.sgl) {
    if (s.length == 0) continue;
    const Mr* mr = check_local(pd, s, 0);
    if (!mr) return false;
    if (is_timing_only(mr->mem)) continue;
    bytes = true;
    by_packet = by_packet && mr->mem->reads_by_packet();
  }
  w.data.reset();
  w.gather_by_packet = bytes && by_packet;
  if (!bytes || by_packet) return true;  // no bytes to carry, or read as packets are built
  return gather(pd, w.wr.sgl, 0, w.length, w.data);
}

bool Hca::Impl::packet_bytes(const Qp& qp, const SendWqe& w, uint32_t off, uint32_t len,
                             net::Packet& p) const {
  if (reliable(qp.init.type) && !is_iwarp()) {
    uint64_t start = 0;  // message offset of the SGE's first byte
    for (const Sge& s : w.wr.sgl) {
      if (off >= start + s.length) {
        start += s.length;
        continue;
      }
      if (off + len > start + s.length) break;  // spans SGEs: gathered
      const Mr* mr = check_local(qp.init.pd, s, 0);
      if (!mr) return false;
      if (!mr->held) break;
      p.held = mr->held;
      p.payload_offset = static_cast<uint32_t>(s.addr - mr->addr + (off - start));
      return true;
    }
  }
  if (!gather(qp.init.pd, w.wr.sgl, off, len, p.payload)) return false;
  p.payload_offset = 0;
  return true;
}

std::shared_ptr<net::HeldBytes> Hca::Impl::new_held(const Mr& mr) {
  if (!mr.mem || !mr.mem->reads_by_packet() || (mr.access & kAccessOnDemand)) return nullptr;
  auto h = std::make_shared<net::HeldBytes>();
  h->at = reinterpret_cast<const uint8_t*>(mr.addr);
  return h;
}

void Hca::Impl::let_go_held(Mr& mr) {
  if (!mr.held) return;
  if (mr.held.use_count() > 1) {
    net::HeldBytes& h = *mr.held;
    h.copy.assign(h.at, h.at + mr.length);
    h.at = h.copy.data();
  }
  mr.held.reset();
}

bool Hca::Impl::gather(uint32_t pd, const std::vector<Sge>& sgl, uint32_t off, uint32_t len,
                       net::Payload& out) const {
  auto buf = std::make_shared<net::Bytes>(len);
  uint64_t skip = off;  // message bytes before this SGE still to pass
  uint32_t at = 0;
  for (const Sge& s : sgl) {
    if (at == len) break;
    if (s.length == 0) continue;
    if (skip >= s.length) {
      skip -= s.length;
      continue;
    }
    const Mr* mr = check_local(pd, s, 0);
    const uint32_t n = std::min<uint32_t>(len - at, s.length - static_cast<uint32_t>(skip));
    if (!mr || !mr->mem->read(s.addr + skip, buf->data() + at, n)) return false;
    at += n;
    skip = 0;
  }
  if (at != len) return false;  // the SGL is shorter than the message (cannot happen: length is its sum)
  out = std::move(buf);
  return true;
}

bool write_dma(MemorySpace& mem, uint64_t addr, const uint8_t* src, size_t len) {
  if (src || is_timing_only(&mem)) return mem.write(addr, src, len);
  // Bytes from timing-only memory are zeros (memory.h).
  static constexpr size_t kZeros = 4096;
  static constexpr uint8_t zeros[kZeros] = {};
  for (size_t done = 0; done < len;) {
    const size_t n = std::min(kZeros, len - done);
    if (!mem.write(addr + done, zeros, n)) return false;
    done += n;
  }
  return true;
}

bool Hca::Impl::scatter(uint32_t pd, const std::vector<Sge>& sgl, uint32_t off,
                        const uint8_t* src, uint32_t len) const {
  for (const Sge& s : sgl) {
    if (len == 0) return true;
    if (off >= s.length) {
      off -= s.length;
      continue;
    }
    const uint32_t n = std::min(len, s.length - off);
    const Mr* mr = check_local(pd, s, kAccessLocalWrite);
    if (!mr || !write_dma(*mr->mem, s.addr + off, src, n)) return false;
    if (src) src += n;
    len -= n;
    off = 0;
  }
  return len == 0;
}

}  // namespace rdmasim::nic
