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
  const uint32_t pd = qp.init.pd;
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

bool Hca::Impl::gather(uint32_t pd, const std::vector<Sge>& sgl, net::Payload& out) const {
  size_t total = 0;
  bool bytes = false;  // some SGE is in memory that holds bytes
  for (const Sge& s : sgl) {
    if (s.length == 0) continue;
    const Mr* mr = check_local(pd, s, 0);
    if (!mr) return false;
    total += s.length;
    bytes = bytes || !is_timing_only(mr->mem);
  }
  out.reset();
  if (!bytes) return true;  // nothing or only timing-only memory: no bytes to carry
  auto buf = std::make_shared<net::Bytes>();
  buf->resize(total);
  size_t at = 0;
  for (const Sge& s : sgl) {
    if (s.length == 0) continue;
    if (!check_local(pd, s, 0)->mem->read(s.addr, buf->data() + at, s.length)) return false;
    at += s.length;
  }
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
