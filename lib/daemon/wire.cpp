// Translation between proto.h wire structs and nic:: types.
#include "lib/daemon/wire.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rdmasim::daemon {

// The wire's codes are the model's (both carry rdma-core's values).
static_assert(ipc::kKnownSendFlags == (nic::kSendFence | nic::kSendSignaled | nic::kSendSolicited |
                                       nic::kSendInline | ipc::kSendIpCsum));

int to_send_wr(const ipc::SqWqe& w, uint32_t max_sge, nic::SendWr* out) {
  if (w.opcode > 0xff) return EINVAL;  // nic::WrOpcode is 8 bits wide
  using Op = nic::WrOpcode;
  const auto op = static_cast<Op>(w.opcode);
  switch (op) {
    case Op::RdmaWrite:
    case Op::RdmaWriteWithImm:
    case Op::Send:
    case Op::SendWithImm:
    case Op::RdmaRead:
    case Op::AtomicCmpAndSwp:
    case Op::AtomicFetchAndAdd:
    case Op::LocalInv:
    case Op::SendWithInv:
    case Op::BindMw:
      break;
    default:
      return EINVAL;
  }
  if (w.send_flags & ~ipc::kKnownSendFlags) return EINVAL;
  const bool is_inline = (w.send_flags & nic::kSendInline) != 0;
  if (is_inline) {
    if (w.inline_len > ipc::kMaxInline) return EINVAL;
  } else if (w.num_sge > ipc::kMaxSge || w.num_sge > max_sge) {
    return EINVAL;
  }
  nic::SendWr wr;
  wr.wr_id = w.wr_id;
  wr.opcode = op;
  wr.send_flags = w.send_flags & ~ipc::kSendIpCsum;
  wr.imm_data = w.imm_data;
  if (is_inline) {
    wr.inline_data.assign(w.inline_data, w.inline_data + w.inline_len);
  } else {
    wr.sgl.reserve(w.num_sge);
    for (uint32_t i = 0; i < w.num_sge; ++i)
      wr.sgl.push_back(nic::Sge{w.sge[i].addr, w.sge[i].length, w.sge[i].lkey});
  }
  wr.remote_addr = w.remote_addr;
  wr.rkey = w.rkey;
  wr.compare_add = w.compare_add;
  wr.swap = w.swap;
  wr.av = to_av(w.av);
  wr.remote_qpn = w.remote_qpn & 0xffffff;
  wr.remote_qkey = w.remote_qkey;
  wr.wqe_index = w.wqe_index;
  if (op == Op::LocalInv || op == Op::SendWithInv) wr.invalidate_rkey = w.imm_data;
  if (op == Op::BindMw)
    wr.bind = {w.imm_data, w.rkey, w.bind_lkey, w.mw_access, w.remote_addr, w.compare_add};
  *out = std::move(wr);
  return 0;
}

int to_recv_wr(const ipc::RqWqe& w, uint32_t max_sge, nic::RecvWr* out) {
  if (w.num_sge > ipc::kMaxSge || w.num_sge > max_sge) return EINVAL;
  nic::RecvWr wr;
  wr.wr_id = w.wr_id;
  wr.wqe_index = w.wqe_index;
  wr.sgl.reserve(w.num_sge);
  for (uint32_t i = 0; i < w.num_sge; ++i)
    wr.sgl.push_back(nic::Sge{w.sge[i].addr, w.sge[i].length, w.sge[i].lkey});
  *out = std::move(wr);
  return 0;
}

void to_cqe(const nic::Completion& c, uint32_t srq_handle, ipc::Cqe* out) {
  out->wr_id = c.wr_id;
  out->status = static_cast<uint32_t>(c.status);
  out->opcode = static_cast<uint32_t>(c.opcode);
  out->vendor_err = c.vendor_err;
  out->byte_len = c.byte_len;
  out->imm_data = c.imm_data;
  out->qp_num = c.qp_num;
  out->src_qp = c.src_qp;
  out->wc_flags = c.wc_flags;
  out->pkey_index = c.pkey_index;
  out->slid = c.slid;
  out->sl = c.sl;
  out->dlid_path_bits = c.dlid_path_bits;
  out->is_send = c.is_send ? 1 : 0;
  out->pad = 0;
  out->wqe_index = c.wqe_index;
  out->srq_handle = srq_handle;
}

nic::AddressVector to_av(const ipc::WireAv& w) {
  nic::AddressVector av;
  std::memcpy(av.dgid.data(), w.dgid, 16);
  av.flow_label = w.flow_label;
  av.dlid = w.dlid;
  av.sgid_index = w.sgid_index;
  av.hop_limit = w.hop_limit;
  av.traffic_class = w.traffic_class;
  av.sl = w.sl;
  av.src_path_bits = w.src_path_bits;
  av.static_rate = w.static_rate;
  av.is_global = w.is_global != 0;
  av.port_num = w.port_num;
  return av;
}

ipc::WireAv from_av(const nic::AddressVector& av) {
  ipc::WireAv w{};
  std::memcpy(w.dgid, av.dgid.data(), 16);
  w.flow_label = av.flow_label;
  w.dlid = av.dlid;
  w.sgid_index = av.sgid_index;
  w.hop_limit = av.hop_limit;
  w.traffic_class = av.traffic_class;
  w.sl = av.sl;
  w.src_path_bits = av.src_path_bits;
  w.static_rate = av.static_rate;
  w.is_global = av.is_global ? 1 : 0;
  w.port_num = av.port_num;
  return w;
}

nic::QpCaps to_caps(const ipc::WireQpCap& c) {
  return nic::QpCaps{c.max_send_wr, c.max_recv_wr, c.max_send_sge, c.max_recv_sge,
                     c.max_inline_data};
}

ipc::WireQpCap from_caps(const nic::QpCaps& c) {
  return ipc::WireQpCap{c.max_send_wr, c.max_recv_wr, c.max_send_sge, c.max_recv_sge,
                        c.max_inline_data};
}

nic::QpAttr to_qp_attr(const ipc::WireQpAttr& a) {
  nic::QpAttr q;
  // Out-of-range states are clamped to a value the model rejects on its own (Err + mask).
  q.qp_state = static_cast<nic::QpState>(std::min<uint32_t>(a.qp_state, 6));
  q.cur_qp_state = static_cast<nic::QpState>(std::min<uint32_t>(a.cur_qp_state, 6));
  q.path_mtu = static_cast<uint8_t>(std::min<uint32_t>(a.path_mtu, 255));
  q.path_mig_state = static_cast<uint8_t>(a.path_mig_state);
  q.qkey = a.qkey;
  q.rq_psn = a.rq_psn;
  q.sq_psn = a.sq_psn;
  q.dest_qp_num = a.dest_qp_num;
  q.qp_access_flags = a.qp_access_flags;
  q.cap = to_caps(a.cap);
  q.ah_attr = to_av(a.ah_attr);
  q.alt_ah_attr = to_av(a.alt_ah_attr);
  q.pkey_index = a.pkey_index;
  q.alt_pkey_index = a.alt_pkey_index;
  q.en_sqd_async_notify = a.en_sqd_async_notify != 0;
  q.sq_draining = a.sq_draining != 0;
  q.max_rd_atomic = a.max_rd_atomic;
  q.max_dest_rd_atomic = a.max_dest_rd_atomic;
  q.min_rnr_timer = a.min_rnr_timer;
  q.port_num = a.port_num;
  q.timeout = a.timeout;
  q.retry_cnt = a.retry_cnt;
  q.rnr_retry = a.rnr_retry;
  q.alt_port_num = a.alt_port_num;
  q.alt_timeout = a.alt_timeout;
  return q;
}

ipc::WireQpAttr from_qp_attr(const nic::QpAttr& q) {
  ipc::WireQpAttr a{};
  a.qp_state = static_cast<uint32_t>(q.qp_state);
  a.cur_qp_state = static_cast<uint32_t>(q.cur_qp_state);
  a.path_mtu = q.path_mtu;
  a.path_mig_state = q.path_mig_state;
  a.qkey = q.qkey;
  a.rq_psn = q.rq_psn;
  a.sq_psn = q.sq_psn;
  a.dest_qp_num = q.dest_qp_num;
  a.qp_access_flags = q.qp_access_flags;
  a.cap = from_caps(q.cap);
  a.ah_attr = from_av(q.ah_attr);
  a.alt_ah_attr = from_av(q.alt_ah_attr);
  a.pkey_index = q.pkey_index;
  a.alt_pkey_index = q.alt_pkey_index;
  a.en_sqd_async_notify = q.en_sqd_async_notify;
  a.sq_draining = q.sq_draining;
  a.max_rd_atomic = q.max_rd_atomic;
  a.max_dest_rd_atomic = q.max_dest_rd_atomic;
  a.min_rnr_timer = q.min_rnr_timer;
  a.port_num = q.port_num;
  a.timeout = q.timeout;
  a.retry_cnt = q.retry_cnt;
  a.rnr_retry = q.rnr_retry;
  a.alt_port_num = q.alt_port_num;
  a.alt_timeout = q.alt_timeout;
  return a;
}

uint32_t mtu_code(uint32_t bytes) {
  switch (bytes) {
    case 256: return 1;
    case 512: return 2;
    case 1024: return 3;
    case 2048: return 4;
    case 4096: return 5;
    default: return 0;
  }
}

}  // namespace rdmasim::daemon
