// Translation between proto.h wire structs and nic:: types.
#include "lib/daemon/wire.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <type_traits>

#include "lib/ipc/wire_fields.h"

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
  wr.xrc_srqn = w.xrc_srqn & 0xffffff;
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

namespace {
// Field converters for ipc's field lists. From the wire, a value wider than the model's field
// is clamped to the field's largest (a value the model then refuses on its own), and a state
// past Error becomes one the model rejects; nested structs convert by their own lists.
struct FromWire : ipc::Cast {
  using Cast::operator();
  template <class T, class U>
    requires std::is_integral_v<T> && std::is_integral_v<U> && (sizeof(T) < sizeof(U))
  void operator()(T& t, const U& u) const {
    t = static_cast<T>(std::min<U>(u, std::numeric_limits<T>::max()));
  }
  void operator()(bool& t, uint8_t u) const { t = u != 0; }
  void operator()(nic::QpState& t, uint32_t u) const {
    t = static_cast<nic::QpState>(std::min<uint32_t>(u, 6));
  }
  void operator()(nic::QpCaps& d, const ipc::WireQpCap& s) const { d = to_caps(s); }
  void operator()(nic::AddressVector& d, const ipc::WireAv& s) const { d = to_av(s); }
};
struct ToWire : ipc::Cast {
  using Cast::operator();
  void operator()(ipc::WireQpCap& d, const nic::QpCaps& s) const { d = from_caps(s); }
  void operator()(ipc::WireAv& d, const nic::AddressVector& s) const { d = from_av(s); }
};
}  // namespace

nic::AddressVector to_av(const ipc::WireAv& w) {
  nic::AddressVector av;
  std::memcpy(av.dgid.data(), w.dgid, 16);
  ipc::av_fields(FromWire{}, av, w);
  return av;
}

ipc::WireAv from_av(const nic::AddressVector& av) {
  ipc::WireAv w{};
  std::memcpy(w.dgid, av.dgid.data(), 16);
  ipc::av_fields(ToWire{}, w, av);
  return w;
}

nic::QpCaps to_caps(const ipc::WireQpCap& c) {
  nic::QpCaps q;
  ipc::qp_cap_fields(ipc::Cast{}, q, c);
  return q;
}

ipc::WireQpCap from_caps(const nic::QpCaps& c) {
  ipc::WireQpCap w{};
  ipc::qp_cap_fields(ipc::Cast{}, w, c);
  return w;
}

nic::QpAttr to_qp_attr(const ipc::WireQpAttr& a) {
  nic::QpAttr q;
  ipc::qp_attr_fields(FromWire{}, q, a);
  return q;
}

ipc::WireQpAttr from_qp_attr(const nic::QpAttr& q) {
  ipc::WireQpAttr a{};
  ipc::qp_attr_fields(ToWire{}, a, q);
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
