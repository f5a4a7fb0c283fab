// IBVERBS_PRIVATE_34: the provider interface of rdma-core. Real providers (libmlx5,
// libefa, ...) get loaded by tools that link them and bind these at load time (BIND_NOW),
// but no provider ever drives a device here, so every call reports EOPNOTSUPP.
// (ibv_query_gid_type, which ibv_devinfo calls, is implemented in device.cpp.)
// verbs_register_driver_34, called by libmlx5's constructor, is accepted and ignored.
#include <cerrno>

namespace {
int eopnotsupp() { errno = EOPNOTSUPP; return EOPNOTSUPP; }
}  // namespace

#define PRIV_INT(name) extern "C" int name() { return eopnotsupp(); }
#define PRIV_PTR(name) extern "C" void* name() { errno = EOPNOTSUPP; return nullptr; }
#define PRIV_VOID(name) extern "C" void name() {}

extern "C" bool verbs_allow_disassociate_destroy = false;

PRIV_VOID(verbs_register_driver_34)
PRIV_VOID(verbs_set_ops)
PRIV_VOID(verbs_uninit_context)
PRIV_VOID(verbs_init_cq)
PRIV_VOID(__verbs_log)
PRIV_PTR(_verbs_init_and_alloc_context)
PRIV_PTR(verbs_open_device)
extern "C" unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void*) { return num_attrs; }
PRIV_INT(execute_ioctl)
extern "C" int ibv_read_ibdev_sysfs_file() { errno = EOPNOTSUPP; return -1; }

PRIV_INT(ibv_cmd_advise_mr)
PRIV_INT(ibv_cmd_alloc_dm)
PRIV_INT(ibv_cmd_alloc_mw)
PRIV_INT(ibv_cmd_alloc_pd)
PRIV_INT(ibv_cmd_attach_mcast)
PRIV_INT(ibv_cmd_close_xrcd)
PRIV_INT(ibv_cmd_create_ah)
PRIV_INT(ibv_cmd_create_counters)
PRIV_INT(ibv_cmd_create_cq)
PRIV_INT(ibv_cmd_create_cq_ex)
PRIV_INT(ibv_cmd_create_flow)
PRIV_INT(ibv_cmd_create_flow_action_esp)
PRIV_INT(ibv_cmd_create_qp)
PRIV_INT(ibv_cmd_create_qp_ex)
PRIV_INT(ibv_cmd_create_qp_ex2)
PRIV_INT(ibv_cmd_create_rwq_ind_table)
PRIV_INT(ibv_cmd_create_srq)
PRIV_INT(ibv_cmd_create_srq_ex)
PRIV_INT(ibv_cmd_create_wq)
PRIV_INT(ibv_cmd_dealloc_mw)
PRIV_INT(ibv_cmd_dealloc_pd)
PRIV_INT(ibv_cmd_dereg_mr)
PRIV_INT(ibv_cmd_destroy_ah)
PRIV_INT(ibv_cmd_destroy_counters)
PRIV_INT(ibv_cmd_destroy_cq)
PRIV_INT(ibv_cmd_destroy_flow)
PRIV_INT(ibv_cmd_destroy_flow_action)
PRIV_INT(ibv_cmd_destroy_qp)
PRIV_INT(ibv_cmd_destroy_rwq_ind_table)
PRIV_INT(ibv_cmd_destroy_srq)
PRIV_INT(ibv_cmd_destroy_wq)
PRIV_INT(ibv_cmd_detach_mcast)
PRIV_INT(ibv_cmd_free_dm)
PRIV_INT(ibv_cmd_get_context)
PRIV_INT(ibv_cmd_modify_cq)
PRIV_INT(ibv_cmd_modify_flow_action_esp)
PRIV_INT(ibv_cmd_modify_qp)
PRIV_INT(ibv_cmd_modify_qp_ex)
PRIV_INT(ibv_cmd_modify_srq)
PRIV_INT(ibv_cmd_modify_wq)
PRIV_INT(ibv_cmd_open_qp)
PRIV_INT(ibv_cmd_open_xrcd)
PRIV_INT(ibv_cmd_poll_cq)
PRIV_INT(ibv_cmd_post_recv)
PRIV_INT(ibv_cmd_post_send)
PRIV_INT(ibv_cmd_post_srq_recv)
PRIV_INT(ibv_cmd_query_context)
PRIV_INT(ibv_cmd_query_device_any)
PRIV_INT(ibv_cmd_query_mr)
PRIV_INT(ibv_cmd_query_port)
PRIV_INT(ibv_cmd_query_qp)
PRIV_INT(ibv_cmd_query_srq)
PRIV_INT(ibv_cmd_read_counters)
PRIV_INT(ibv_cmd_reg_dm_mr)
PRIV_INT(ibv_cmd_reg_dmabuf_mr)
PRIV_INT(ibv_cmd_reg_mr)
PRIV_INT(ibv_cmd_req_notify_cq)
PRIV_INT(ibv_cmd_rereg_mr)
PRIV_INT(ibv_cmd_resize_cq)
