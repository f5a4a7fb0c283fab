// The context operations rdmasim does not implement, each with the failure rdma-core's
// dummy ops (libibverbs/dummy_ops.c) give a provider that lacks it: EOPNOTSUPP as a return
// value, or NULL with errno EOPNOTSUPP. Installed by open_context so that no pointer of
// ibv_context::ops or verbs_context a program can reach is NULL.
#include <cerrno>

#include "lib/verbs/control.h"

namespace rdmasim::verbs {
namespace {

template <typename T>
T* none() {
  errno = EOPNOTSUPP;
  return nullptr;
}

// ---- verbs_context ----
ibv_mr* alloc_null_mr(ibv_pd*) { return none<ibv_mr>(); }
int read_counters(ibv_counters*, uint64_t*, uint32_t, uint32_t) { return EOPNOTSUPP; }
int attach_counters_point_flow(ibv_counters*, ibv_counter_attach_attr*, ibv_flow*) { return EOPNOTSUPP; }
ibv_counters* create_counters(ibv_context*, ibv_counters_init_attr*) { return none<ibv_counters>(); }
int destroy_counters(ibv_counters*) { return EOPNOTSUPP; }
int modify_flow_action_esp(ibv_flow_action*, ibv_flow_action_esp_attr*) { return EOPNOTSUPP; }
int destroy_flow_action(ibv_flow_action*) { return EOPNOTSUPP; }
ibv_flow_action* create_flow_action_esp(ibv_context*, ibv_flow_action_esp_attr*) {
  return none<ibv_flow_action>();
}
int modify_qp_rate_limit(ibv_qp*, ibv_qp_rate_limit_attr*) { return EOPNOTSUPP; }
int modify_cq(ibv_cq*, ibv_modify_cq_attr*) { return EOPNOTSUPP; }
int post_srq_ops(ibv_srq*, ibv_ops_wr* op, ibv_ops_wr** bad_op) {
  if (bad_op) *bad_op = op;
  return EOPNOTSUPP;
}
int destroy_rwq_ind_table(ibv_rwq_ind_table*) { return EOPNOTSUPP; }
ibv_rwq_ind_table* create_rwq_ind_table(ibv_context*, ibv_rwq_ind_table_init_attr*) {
  return none<ibv_rwq_ind_table>();
}
int destroy_wq(ibv_wq*) { return EOPNOTSUPP; }
int modify_wq(ibv_wq*, ibv_wq_attr*) { return EOPNOTSUPP; }
ibv_wq* create_wq(ibv_context*, ibv_wq_init_attr*) { return none<ibv_wq>(); }
int destroy_flow(ibv_flow*) { return EOPNOTSUPP; }
ibv_flow* create_flow(ibv_qp*, ibv_flow_attr*) { return none<ibv_flow>(); }

// ---- ibv_context_ops: the pre-1.1 entries no 1.1 program calls (rdma-core leaves them
// NULL; here they fail). _compat_query_device/_compat_query_port are real (device.cpp). ----
void* compat_absent() { return none<void>(); }

}  // namespace

void install_absent_ops(verbs_context& v) {
  v.alloc_null_mr = alloc_null_mr;
  v.read_counters = read_counters;
  v.attach_counters_point_flow = attach_counters_point_flow;
  v.create_counters = create_counters;
  v.destroy_counters = destroy_counters;
  v.modify_flow_action_esp = modify_flow_action_esp;
  v.destroy_flow_action = destroy_flow_action;
  v.create_flow_action_esp = create_flow_action_esp;
  v.modify_qp_rate_limit = modify_qp_rate_limit;
  v.modify_cq = modify_cq;
  v.post_srq_ops = post_srq_ops;
  v.destroy_rwq_ind_table = destroy_rwq_ind_table;
  v.create_rwq_ind_table = create_rwq_ind_table;
  v.destroy_wq = destroy_wq;
  v.modify_wq = modify_wq;
  v.create_wq = create_wq;
  v.ibv_destroy_flow = destroy_flow;
  v.ibv_create_flow = create_flow;
  // libibverbs 1.1.8's inline flow calls look in the placeholders (rdma-core set_lib_ops).
  v.ABI_placeholder1 = reinterpret_cast<void (*)(void)>(create_flow);
  v.ABI_placeholder2 = reinterpret_cast<void (*)(void)>(destroy_flow);
  ibv_context_ops& o = v.context.ops;
  o._compat_alloc_pd = compat_absent;
  o._compat_dealloc_pd = compat_absent;
  o._compat_reg_mr = compat_absent;
  o._compat_rereg_mr = compat_absent;
  o._compat_dereg_mr = compat_absent;
  o._compat_create_cq = compat_absent;
  o._compat_cq_event = compat_absent;
  o._compat_resize_cq = compat_absent;
  o._compat_destroy_cq = compat_absent;
  o._compat_create_srq = compat_absent;
  o._compat_modify_srq = compat_absent;
  o._compat_query_srq = compat_absent;
  o._compat_destroy_srq = compat_absent;
  o._compat_create_qp = compat_absent;
  o._compat_query_qp = compat_absent;
  o._compat_modify_qp = compat_absent;
  o._compat_destroy_qp = compat_absent;
  o._compat_create_ah = compat_absent;
  o._compat_destroy_ah = compat_absent;
  o._compat_attach_mcast = compat_absent;
  o._compat_detach_mcast = compat_absent;
  o._compat_async_event = compat_absent;
}

}  // namespace rdmasim::verbs
