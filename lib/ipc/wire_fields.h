// The fields a wire struct shares by name with the structs on either side of the wire
// (libibverbs' in lib/backend, the HCA model's in lib/daemon): each list is written once and
// walked in both directions. `f(dst_field, src_field)` converts one field; ipc::Cast is the
// plain conversion a caller's converter falls back to (it overloads what needs more: nested
// structs, enums with a range).
#pragma once

namespace rdmasim::ipc {

struct Cast {
  template <class T, class U>
  void operator()(T& t, const U& u) const { t = static_cast<T>(u); }
};

// WireQpCap <-> ibv_qp_cap / nic::QpCaps.
template <class F, class D, class S>
void qp_cap_fields(F&& f, D& d, const S& s) {
  f(d.max_send_wr, s.max_send_wr);
  f(d.max_recv_wr, s.max_recv_wr);
  f(d.max_send_sge, s.max_send_sge);
  f(d.max_recv_sge, s.max_recv_sge);
  f(d.max_inline_data, s.max_inline_data);
}

// WireAv <-> nic::AddressVector, but the GID (an array on one side, bytes on the other).
template <class F, class D, class S>
void av_fields(F&& f, D& d, const S& s) {
  f(d.flow_label, s.flow_label);
  f(d.dlid, s.dlid);
  f(d.sgid_index, s.sgid_index);
  f(d.hop_limit, s.hop_limit);
  f(d.traffic_class, s.traffic_class);
  f(d.sl, s.sl);
  f(d.src_path_bits, s.src_path_bits);
  f(d.static_rate, s.static_rate);
  f(d.is_global, s.is_global);
  f(d.port_num, s.port_num);
}

// WireQpAttr <-> ibv_qp_attr / nic::QpAttr: every field of ibv_qp_attr.
template <class F, class D, class S>
void qp_attr_fields(F&& f, D& d, const S& s) {
  f(d.qp_state, s.qp_state);
  f(d.cur_qp_state, s.cur_qp_state);
  f(d.path_mtu, s.path_mtu);
  f(d.path_mig_state, s.path_mig_state);
  f(d.qkey, s.qkey);
  f(d.rq_psn, s.rq_psn);
  f(d.sq_psn, s.sq_psn);
  f(d.dest_qp_num, s.dest_qp_num);
  f(d.qp_access_flags, s.qp_access_flags);
  f(d.cap, s.cap);
  f(d.ah_attr, s.ah_attr);
  f(d.alt_ah_attr, s.alt_ah_attr);
  f(d.pkey_index, s.pkey_index);
  f(d.alt_pkey_index, s.alt_pkey_index);
  f(d.en_sqd_async_notify, s.en_sqd_async_notify);
  f(d.sq_draining, s.sq_draining);
  f(d.max_rd_atomic, s.max_rd_atomic);
  f(d.max_dest_rd_atomic, s.max_dest_rd_atomic);
  f(d.min_rnr_timer, s.min_rnr_timer);
  f(d.port_num, s.port_num);
  f(d.timeout, s.timeout);
  f(d.retry_cnt, s.retry_cnt);
  f(d.rnr_retry, s.rnr_retry);
  f(d.alt_port_num, s.alt_port_num);
  f(d.alt_timeout, s.alt_timeout);
}

}  // namespace rdmasim::ipc
