// ibv_* <-> proto.h translation; the static_asserts pin the wire codes to rdma-core's values.
#include "lib/backend/verbs_wire.h"

#include <endian.h>

#include <cstring>

#include "lib/ipc/wire_fields.h"

namespace rdmasim::backend {

static_assert(static_cast<uint32_t>(ipc::LinkLayer::InfiniBand) == IBV_LINK_LAYER_INFINIBAND);
static_assert(static_cast<uint32_t>(ipc::LinkLayer::Ethernet) == IBV_LINK_LAYER_ETHERNET);
static_assert(static_cast<uint32_t>(ipc::Transport::Ib) == IBV_TRANSPORT_IB);
static_assert(static_cast<uint32_t>(ipc::Transport::IWarp) == IBV_TRANSPORT_IWARP);
static_assert(static_cast<uint32_t>(ipc::NodeType::Ca) == IBV_NODE_CA);
static_assert(static_cast<uint32_t>(ipc::NodeType::Rnic) == IBV_NODE_RNIC);
static_assert(static_cast<uint32_t>(ipc::PortState::Down) == IBV_PORT_DOWN);
static_assert(static_cast<uint32_t>(ipc::PortState::Active) == IBV_PORT_ACTIVE);
static_assert(static_cast<uint32_t>(ipc::GidType::Ib) == IBV_GID_TYPE_IB);
static_assert(static_cast<uint32_t>(ipc::GidType::RoceV1) == IBV_GID_TYPE_ROCE_V1);
static_assert(static_cast<uint32_t>(ipc::GidType::RoceV2) == IBV_GID_TYPE_ROCE_V2);
static_assert(static_cast<uint32_t>(ipc::AtomicCap::None) == IBV_ATOMIC_NONE);
static_assert(static_cast<uint32_t>(ipc::AtomicCap::Hca) == IBV_ATOMIC_HCA);
static_assert(ipc::kDevChangePhyPort == IBV_DEVICE_CHANGE_PHY_PORT);
static_assert(ipc::kDevShutdownPort == IBV_DEVICE_SHUTDOWN_PORT);
static_assert(ipc::kDevPortActiveEvent == IBV_DEVICE_PORT_ACTIVE_EVENT);
static_assert(ipc::kDevSysImageGuid == IBV_DEVICE_SYS_IMAGE_GUID);
static_assert(ipc::kDevRcRnrNakGen == IBV_DEVICE_RC_RNR_NAK_GEN);
static_assert(ipc::kDevMemWindow == IBV_DEVICE_MEM_WINDOW);
static_assert(ipc::kDevMemWindowType2B == IBV_DEVICE_MEM_WINDOW_TYPE_2B);
static_assert(ipc::kDevXrc == IBV_DEVICE_XRC);
static_assert(ipc::kPortSm == IBV_PORT_SM);
static_assert(ipc::kPortCmSup == IBV_PORT_CM_SUP);
static_assert(ipc::kSendIpCsum == IBV_SEND_IP_CSUM);
static_assert(ipc::kKnownSendFlags == (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
                                       IBV_SEND_INLINE | IBV_SEND_IP_CSUM));

ipc::WireQpCap to_wire(const ibv_qp_cap& c) {
  ipc::WireQpCap w{};
  ipc::qp_cap_fields(ipc::Cast{}, w, c);
  return w;
}

ibv_qp_cap from_wire(const ipc::WireQpCap& c) {
  ibv_qp_cap r{};
  ipc::qp_cap_fields(ipc::Cast{}, r, c);
  return r;
}

ipc::WireAv to_wire(const ibv_ah_attr& a) {
  ipc::WireAv av{};
  std::memcpy(av.dgid, a.grh.dgid.raw, 16);
  av.flow_label = a.grh.flow_label;
  av.dlid = a.dlid;
  av.sgid_index = a.grh.sgid_index;
  av.hop_limit = a.grh.hop_limit;
  av.traffic_class = a.grh.traffic_class;
  av.sl = a.sl;
  av.src_path_bits = a.src_path_bits;
  av.static_rate = a.static_rate;
  av.is_global = a.is_global;
  av.port_num = a.port_num;
  return av;
}

ibv_ah_attr from_wire(const ipc::WireAv& av) {
  ibv_ah_attr a{};
  std::memcpy(a.grh.dgid.raw, av.dgid, 16);
  a.grh.flow_label = av.flow_label;
  a.dlid = av.dlid;
  a.grh.sgid_index = av.sgid_index;
  a.grh.hop_limit = av.hop_limit;
  a.grh.traffic_class = av.traffic_class;
  a.sl = av.sl;
  a.src_path_bits = av.src_path_bits;
  a.static_rate = av.static_rate;
  a.is_global = av.is_global;
  a.port_num = av.port_num;
  return a;
}

namespace {
// Field converters for ipc::qp_attr_fields: the nested structs by their own translation.
struct ToWire : ipc::Cast {
  using Cast::operator();
  void operator()(ipc::WireQpCap& d, const ibv_qp_cap& s) const { d = to_wire(s); }
  void operator()(ipc::WireAv& d, const ibv_ah_attr& s) const { d = to_wire(s); }
};
struct FromWire : ipc::Cast {
  using Cast::operator();
  void operator()(ibv_qp_cap& d, const ipc::WireQpCap& s) const { d = from_wire(s); }
  void operator()(ibv_ah_attr& d, const ipc::WireAv& s) const { d = from_wire(s); }
};
}  // namespace

ipc::WireQpAttr to_wire(const ibv_qp_attr& a) {
  ipc::WireQpAttr w{};
  ipc::qp_attr_fields(ToWire{}, w, a);
  return w;
}

ibv_qp_attr from_wire(const ipc::WireQpAttr& w) {
  ibv_qp_attr a{};
  ipc::qp_attr_fields(FromWire{}, a, w);
  return a;
}

ibv_qp_init_attr from_wire(const ipc::WireQpInitAttr& w) {
  ibv_qp_init_attr a{};
  a.qp_type = static_cast<ibv_qp_type>(w.qp_type);
  a.sq_sig_all = static_cast<int>(w.sq_sig_all);
  a.cap = from_wire(w.cap);
  return a;
}

ibv_device_attr from_wire(const ipc::QueryDeviceResp& r) {
  const ipc::WireDeviceAttr& w = r.attr;
  ibv_device_attr a{};
  static_assert(sizeof a.fw_ver == sizeof w.fw_ver);
  std::memcpy(a.fw_ver, w.fw_ver, sizeof a.fw_ver);
  a.fw_ver[sizeof a.fw_ver - 1] = '\0';
  a.node_guid = htobe64(r.node_guid);
  a.sys_image_guid = htobe64(w.sys_image_guid);
  a.max_mr_size = w.max_mr_size;
  a.page_size_cap = w.page_size_cap;
  a.vendor_id = w.vendor_id;
  a.vendor_part_id = w.vendor_part_id;
  a.hw_ver = w.hw_ver;
  a.max_qp = static_cast<int>(w.max_qp);
  a.max_qp_wr = static_cast<int>(w.max_qp_wr);
  a.device_cap_flags = w.device_cap_flags;
  a.max_sge = static_cast<int>(w.max_sge);
  a.max_sge_rd = static_cast<int>(w.max_sge_rd);
  a.max_cq = static_cast<int>(w.max_cq);
  a.max_cqe = static_cast<int>(w.max_cqe);
  a.max_mr = static_cast<int>(w.max_mr);
  a.max_mw = static_cast<int>(w.max_mw);
  a.max_pd = static_cast<int>(w.max_pd);
  a.max_qp_rd_atom = static_cast<int>(w.max_qp_rd_atom);
  a.max_res_rd_atom = static_cast<int>(w.max_res_rd_atom);
  a.max_qp_init_rd_atom = static_cast<int>(w.max_qp_init_rd_atom);
  a.atomic_cap = static_cast<ibv_atomic_cap>(w.atomic_cap);
  a.max_ah = static_cast<int>(w.max_ah);
  a.max_srq = static_cast<int>(w.max_srq);
  a.max_srq_wr = static_cast<int>(w.max_srq_wr);
  a.max_srq_sge = static_cast<int>(w.max_srq_sge);
  a.max_pkeys = w.max_pkeys;
  a.local_ca_ack_delay = w.local_ca_ack_delay;
  a.phys_port_cnt = w.phys_port_cnt;
  return a;
}

ibv_port_attr from_wire(const ipc::WirePortAttr& w) {
  ibv_port_attr a{};
  a.state = static_cast<ibv_port_state>(w.state);
  a.max_mtu = static_cast<ibv_mtu>(w.max_mtu);
  a.active_mtu = static_cast<ibv_mtu>(w.active_mtu);
  a.gid_tbl_len = static_cast<int>(w.gid_tbl_len);
  a.port_cap_flags = w.port_cap_flags;
  a.max_msg_sz = w.max_msg_sz;
  a.pkey_tbl_len = w.pkey_tbl_len;
  a.lid = w.lid;
  a.sm_lid = w.sm_lid;
  a.lmc = w.lmc;
  a.max_vl_num = w.max_vl_num;
  a.sm_sl = w.sm_sl;
  a.subnet_timeout = w.subnet_timeout;
  a.active_width = w.active_width;
  a.active_speed = w.active_speed;
  a.phys_state = w.phys_state;
  a.link_layer = w.link_layer;
  return a;
}

}  // namespace rdmasim::backend
