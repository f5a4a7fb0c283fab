// The shared defaults of the backend ops table: each operation is EOPNOTSUPP until a
// backend overrides it.
#include "lib/backend/backend.h"

#include <sys/mman.h>

namespace rdmasim::backend {

void Mapping::unmap() {
  if (base && owned) munmap(base, len);
  base = nullptr;
  len = 0;
}

int Backend::device_info(DeviceInfo*) { return kNotSupported; }
int Backend::query_device(ibv_device_attr*) { return kNotSupported; }
int Backend::query_port(uint8_t, PortInfo*) { return kNotSupported; }
int Backend::open_context(ContextLinks*) { return kNotSupported; }
int Backend::next_async_event(uint32_t*, uint32_t*) { return kNotSupported; }
int Backend::alloc_pd(uint32_t*) { return kNotSupported; }
int Backend::dealloc_pd(uint32_t) { return kNotSupported; }
int Backend::reg_mr(uint32_t, uint64_t, uint64_t, uint64_t, uint32_t, MrKeys*) { return kNotSupported; }
int Backend::rereg_mr(uint32_t, uint32_t, uint32_t, uint64_t, uint64_t, uint32_t, MrKeys*) {
  return kNotSupported;
}
int Backend::dereg_mr(uint32_t) { return kNotSupported; }
int Backend::alloc_mw(uint32_t, ibv_mw_type, uint32_t*, uint32_t*) { return kNotSupported; }
int Backend::dealloc_mw(uint32_t) { return kNotSupported; }
int Backend::create_comp_channel(ChannelRing*) { return kNotSupported; }
int Backend::destroy_comp_channel(uint32_t) { return kNotSupported; }
int Backend::create_cq(uint32_t, uint32_t, uint32_t, CqRing*) { return kNotSupported; }
int Backend::destroy_cq(uint32_t) { return kNotSupported; }
int Backend::resize_cq(uint32_t, uint32_t, CqRing*) { return kNotSupported; }
int Backend::alloc_dm(uint64_t, uint32_t, uint32_t*, Mapping*) { return kNotSupported; }
int Backend::free_dm(uint32_t) { return kNotSupported; }
int Backend::advise_mr(uint32_t, uint32_t, uint32_t, const ibv_sge&) { return kNotSupported; }
int Backend::reg_dm_mr(uint32_t, uint32_t, uint64_t, uint64_t, uint32_t, MrKeys*) { return kNotSupported; }
int Backend::create_srq(uint32_t, const ibv_srq_attr&, SrqRing*) { return kNotSupported; }
int Backend::modify_srq(uint32_t, const ibv_srq_attr&, int) { return kNotSupported; }
int Backend::query_srq(uint32_t, ibv_srq_attr*) { return kNotSupported; }
int Backend::destroy_srq(uint32_t) { return kNotSupported; }
int Backend::create_qp(const QpRequest&, QpRings*) { return kNotSupported; }
int Backend::open_xrcd(bool, uint64_t, uint64_t, uint32_t, uint32_t*) { return kNotSupported; }
int Backend::close_xrcd(uint32_t) { return kNotSupported; }
int Backend::create_xrc_srq(uint32_t, uint32_t, uint32_t, const ibv_srq_attr&, SrqRing*) {
  return kNotSupported;
}
int Backend::open_qp(uint32_t, uint32_t, QpRings*) { return kNotSupported; }
int Backend::modify_qp(uint32_t, const ibv_qp_attr&, int) { return kNotSupported; }
int Backend::query_qp(uint32_t, int, ibv_qp_attr*, ibv_qp_init_attr*) { return kNotSupported; }
int Backend::destroy_qp(uint32_t) { return kNotSupported; }

}  // namespace rdmasim::backend
