// The verbs objects of the front end. Each embeds its public rdma-core struct first
// and is recovered from it with container_of-style casts (`from()`).
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/ipc/doorbell.h"
#include "lib/ipc/proto.h"
#include "lib/verbs/wq_accounting.h"

namespace rdmasim::verbs {

template <typename Outer, typename Inner>
Outer* container(Inner* inner, size_t offset) {
  return reinterpret_cast<Outer*>(reinterpret_cast<char*>(inner) - offset);
}

struct Device {
  ibv_device dev{};
  uint32_t index = 0;
  backend::DeviceInfo info{};
  backend::Backend* backend = nullptr;  // lives as long as the process
  static Device* from(ibv_device* d) { return container<Device>(d, offsetof(Device, dev)); }
};

struct Qp;
struct Cq;
struct Srq;

struct Context {
  verbs_context vctx{};                 // public part; ibv_context is its last member
  Device* device = nullptr;
  ipc::Doorbell doorbell;               // rung by the data path after each publish
  backend::Waiter* waiter = nullptr;    // in-process runs only: how an empty poll waits
  std::mutex mu;                        // guards the handle maps below
  std::unordered_map<uint32_t, Qp*> qps_by_num;
  std::unordered_map<uint32_t, Qp*> qps_by_handle;
  std::unordered_map<uint32_t, Cq*> cqs;
  std::unordered_map<uint32_t, Srq*> srqs;
  static Context* from(ibv_context* c) {
    return container<Context>(c, offsetof(Context, vctx) + offsetof(verbs_context, context));
  }
  ibv_context* ibv() { return &vctx.context; }
};

using backend::Mapping;

struct Td {
  ibv_td td{};
  std::atomic<int> users{0};            // parent domains naming it
  static Td* from(ibv_td* t) { return container<Td>(t, offsetof(Td, td)); }
};

// A protection domain, or a parent domain (ibv_alloc_parent_domain): then `protection` is
// the PD it extends and pd.handle is that PD's, so every call taking the parent domain
// reaches the backend with the real PD.
struct Pd {
  ibv_pd pd{};
  Pd* protection = nullptr;             // set: this is a parent domain
  Td* td = nullptr;                     // a parent domain's thread domain, or none
  std::atomic<int> users{0};            // parent domains extending this PD
  static Pd* from(ibv_pd* p) { return container<Pd>(p, offsetof(Pd, pd)); }
};

// An XRC domain (ibv_open_xrcd); xrcd.context is the only public field.
struct Xrcd {
  ibv_xrcd xrcd{};
  uint32_t handle = 0;
  static Xrcd* from(ibv_xrcd* x) { return container<Xrcd>(x, offsetof(Xrcd, xrcd)); }
};

struct Mr {
  ibv_mr mr{};
  static Mr* from(ibv_mr* m) { return container<Mr>(m, offsetof(Mr, mr)); }
};

struct Mw {
  ibv_mw mw{};                          // mw.handle is the daemon's handle
  static Mw* from(ibv_mw* m) { return container<Mw>(m, offsetof(Mw, mw)); }
};

struct Ah {
  ibv_ah ah{};
  ipc::WireAv av{};
  static Ah* from(ibv_ah* a) { return container<Ah>(a, offsetof(Ah, ah)); }
};

struct CompChannel {
  ibv_comp_channel ch{};
  uint32_t handle = 0;
  Mapping map;
  ipc::RingView<ipc::CompEvent> ring;
  std::mutex mu;                        // consumers of the event ring
  static CompChannel* from(ibv_comp_channel* c) {
    return container<CompChannel>(c, offsetof(CompChannel, ch));
  }
};

struct Cq {
  ibv_cq_ex cq{};                       // ibv_cq is a prefix of ibv_cq_ex
  Context* ctx = nullptr;
  Mapping map;
  ipc::RingView<ipc::Cqe> ring;
  ipc::CqControl* control = nullptr;
  std::vector<Mapping> retired;         // rings replaced by ibv_resize_cq, unmapped at destroy
  std::mutex poll_mu;                   // one poller at a time per CQ
  ipc::Cqe current{};                   // the entry start_poll/next_poll stand on
  uint64_t wc_flags = 0;                // IBV_WC_EX_WITH_* asked at creation
  static Cq* from(ibv_cq* c) { return container<Cq>(c, offsetof(Cq, cq)); }
  static Cq* from(ibv_cq_ex* c) { return container<Cq>(c, offsetof(Cq, cq)); }
  ibv_cq* ibv() { return reinterpret_cast<ibv_cq*>(&cq); }
};

struct Srq {
  ibv_srq srq{};
  Context* ctx = nullptr;
  Mapping map;
  ipc::RingView<ipc::RqWqe> ring;
  WqAccounting acct;
  uint32_t max_sge = 0;
  uint32_t srq_num = 0;                 // ibv_get_srq_num: what XRC initiators name
  std::mutex post_mu;
  static Srq* from(ibv_srq* s) { return container<Srq>(s, offsetof(Srq, srq)); }
};

struct Qp {
  ibv_qp_ex qpx{};                      // ibv_qp is its first member
  Context* ctx = nullptr;
  Mapping map;
  ipc::RingView<ipc::SqWqe> sq;
  ipc::RingView<ipc::RqWqe> rq;
  WqAccounting sq_acct;
  WqAccounting rq_acct;
  ibv_qp_cap cap{};
  bool sq_sig_all = false;
  std::atomic<int> state{IBV_QPS_RESET};
  std::mutex sq_mu;                     // posters of the SQ (held across wr_start..complete)
  std::mutex rq_mu;
  // The ibv_wr_* batch between wr_start and wr_complete/wr_abort.
  uint32_t batch_count = 0;
  int batch_error = 0;
  ipc::SqWqe* batch_cur = nullptr;
  static Qp* from(ibv_qp* q) { return container<Qp>(q, offsetof(Qp, qpx)); }
  static Qp* from(ibv_qp_ex* q) { return container<Qp>(q, offsetof(Qp, qpx)); }
  ibv_qp* ibv() { return &qpx.qp_base; }
};

// Fast-path entry points (fastpath.cpp), installed into context->ops and the ex structs.
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc);
int req_notify_cq(ibv_cq* cq, int solicited_only);
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind);
void install_cq_ex_ops(ibv_cq_ex* cq);
void install_qp_ex_ops(ibv_qp_ex* qp);

}  // namespace rdmasim::verbs
