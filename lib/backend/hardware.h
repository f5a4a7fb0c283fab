// The hardware backend: with RDMASIM_BACKEND=hardware every exported verbs call goes through
// one table of the real rdma-core libibverbs' functions, loaded with dlmopen(LM_ID_NEWLM)
// so its providers bind to it and not to us. Its objects reach the program unchanged, so
// the inline fast path (context->ops) jumps straight into the real provider.
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <type_traits>

// Exported by rdma-core 44 but not declared in <infiniband/verbs.h> (driver.h has them);
// the front end defines them with these signatures.
extern "C" int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num,
                                  unsigned int index, int* type);
extern "C" int ibv_dontfork_range(void* base, size_t size);
extern "C" int ibv_dofork_range(void* base, size_t size);

// Every function the front end forwards, by its exported (default-version) name.
#define RDMASIM_HARDWARE_FUNCTIONS(X)                                                       \
  X(ibv_get_device_list) X(ibv_free_device_list) X(ibv_get_device_name)                     \
  X(ibv_get_device_guid) X(ibv_get_device_index) X(ibv_open_device) X(ibv_close_device)     \
  X(ibv_import_device) X(ibv_query_device) X(ibv_query_port) X(ibv_query_gid)               \
  X(_ibv_query_gid_ex) X(_ibv_query_gid_table) X(ibv_query_gid_type) X(ibv_query_pkey)      \
  X(ibv_get_pkey_index) X(ibv_get_async_event) X(ibv_ack_async_event) X(ibv_alloc_pd)       \
  X(ibv_dealloc_pd) X(ibv_import_pd) X(ibv_unimport_pd) X(ibv_reg_mr_iova2) X(ibv_reg_mr)   \
  X(ibv_reg_mr_iova) X(ibv_reg_dmabuf_mr) X(ibv_rereg_mr) X(ibv_dereg_mr) X(ibv_import_mr)  \
  X(ibv_unimport_mr) X(ibv_import_dm) X(ibv_unimport_dm) X(ibv_create_ah) X(ibv_destroy_ah) \
  X(ibv_init_ah_from_wc) X(ibv_create_ah_from_wc) X(ibv_resolve_eth_l2_from_gid)            \
  X(ibv_attach_mcast) X(ibv_detach_mcast) X(ibv_create_comp_channel)                        \
  X(ibv_destroy_comp_channel) X(ibv_get_cq_event) X(ibv_ack_cq_events) X(ibv_create_cq)     \
  X(ibv_resize_cq) X(ibv_destroy_cq) X(ibv_create_srq) X(ibv_modify_srq) X(ibv_query_srq)   \
  X(ibv_destroy_srq) X(ibv_create_qp) X(ibv_qp_to_qp_ex) X(ibv_modify_qp) X(ibv_query_qp)   \
  X(ibv_query_qp_data_in_order) X(ibv_query_ece) X(ibv_set_ece) X(ibv_destroy_qp)           \
  X(ibv_fork_init) X(ibv_is_fork_initialized) X(ibv_dontfork_range) X(ibv_dofork_range)

namespace rdmasim::backend {

// The real library's functions; a field is null when the library or that symbol is missing.
struct HardwareTable {
#define RDMASIM_HARDWARE_FIELD(name) decltype(&::name) name = nullptr;
  RDMASIM_HARDWARE_FUNCTIONS(RDMASIM_HARDWARE_FIELD)
#undef RDMASIM_HARDWARE_FIELD
};

// True when RDMASIM_BACKEND=hardware (read once).
bool hardware_selected();
// The table, resolved once (at load in hardware mode; see hardware.cpp).
const HardwareTable& hardware_table();

// What a forwarded call returns when the real function is missing: EOPNOTSUPP, or NULL
// with errno EOPNOTSUPP; nothing for a void call.
template <typename R>
R hardware_unavailable() {
  errno = EOPNOTSUPP;
  if constexpr (std::is_void_v<R>) return;
  else if constexpr (std::is_pointer_v<R>) return nullptr;
  else return static_cast<R>(EOPNOTSUPP);
}

// Calls the function `Field` of `table`, or returns its documented failure when it is null.
template <auto Field, typename... Args>
auto call_in(const HardwareTable& table, Args... args) {
  const auto fn = table.*Field;
  using R = decltype(fn(args...));
  if (!fn) return hardware_unavailable<R>();
  return fn(args...);
}

// Calls the real library's `Field` (the front end's one line per exported call).
template <auto Field, typename... Args>
auto forward(Args... args) {
  return call_in<Field>(hardware_table(), args...);
}

}  // namespace rdmasim::backend
