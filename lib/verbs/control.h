// Shared by the exported control-path files (device.cpp, memory.cpp, queues.cpp): the
// front end's helpers, the hardware forwarding, and rdma-core's 1.1 symbol binding.
#pragma once

#include <cerrno>

#include "lib/backend/hardware.h"
#include "lib/verbs/objects.h"

// The calls that also exist at IBVERBS_1.0 (compat.cpp) are defined under a private name
// and exported as the default name@@IBVERBS_1.1, as rdma-core does.
#define RDMASIM_V11(name) rdmasim_v11_##name
#define RDMASIM_SYMVER_V11(name) __asm__(".symver rdmasim_v11_" #name ", " #name "@@IBVERBS_1.1");

namespace rdmasim::verbs {

using Hw = backend::HardwareTable;
using backend::forward;
inline bool hardware() { return backend::hardware_selected(); }

template <typename T>
T* fail(int err) {
  errno = err;
  return nullptr;
}

inline Context* ctx_of(ibv_context* c) { return Context::from(c); }
inline backend::Backend& backend_of(ibv_context* c) { return *ctx_of(c)->device->backend; }

// rdma-core's channel and async fds block in read() until an event arrives; an application
// that wants EAGAIN sets O_NONBLOCK itself. The daemon hands them out non-blocking.
void make_blocking(int fd);

// Context ops installed by open_context (device.cpp), defined beside their objects.
ibv_cq_ex* create_cq_ex_op(ibv_context* c, ibv_cq_init_attr_ex* attr);   // queues.cpp
ibv_qp* create_qp_ex_op(ibv_context* c, ibv_qp_init_attr_ex* attr);      // queues.cpp
ibv_mw* alloc_mw_op(ibv_pd* pd, ibv_mw_type type);                       // memory.cpp
int dealloc_mw_op(ibv_mw* mw);                                           // memory.cpp
ibv_td* alloc_td_op(ibv_context* c, ibv_td_init_attr* attr);            // memory.cpp
int dealloc_td_op(ibv_td* td);                                           // memory.cpp
ibv_pd* alloc_parent_domain_op(ibv_context* c, ibv_parent_domain_init_attr* attr);  // memory.cpp
ibv_srq* create_srq_ex_op(ibv_context* c, ibv_srq_init_attr_ex* attr);   // queues.cpp
// The front end's object for a QP or SRQ the backend made (queues.cpp): registered in the
// context's tables. adopt_qp takes the type, CQs, SRQ, PD and context of `attr`.
ibv_qp* adopt_qp(ibv_context* c, const backend::QpRings& r, const ibv_qp_init_attr_ex& attr);
Srq* adopt_srq(ibv_pd* pd, const backend::SrqRing& r, void* srq_context);
// XRC (xrc.cpp): the XRC SRQ of ibv_create_srq_ex, and the context ops.
ibv_srq* create_xrc_srq(ibv_context* c, ibv_srq_init_attr_ex* attr);
void install_xrc_ops(verbs_context& v);
int advise_mr_op(ibv_pd* pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg, uint32_t n);  // memory.cpp
ibv_dm* alloc_dm_op(ibv_context* c, ibv_alloc_dm_attr* attr);            // dm.cpp
int free_dm_op(ibv_dm* dm);                                              // dm.cpp
ibv_mr* reg_dm_mr_op(ibv_pd* pd, ibv_dm* dm, uint64_t offset, size_t length, unsigned int access);  // dm.cpp
// What rdmasim does not implement: EOPNOTSUPP / NULL+EOPNOTSUPP in every other slot of
// verbs_context and the pre-1.1 ibv_context_ops entries (absent.cpp).
void install_absent_ops(verbs_context& v);

// The port's attributes and GID table from the backend (device.cpp).
int query_port_info(ibv_context* c, uint8_t port, backend::PortInfo* out);

}  // namespace rdmasim::verbs
