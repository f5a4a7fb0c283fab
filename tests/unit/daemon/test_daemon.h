// A fabric daemon run on a thread of the test, and a protocol client to poke it with.
#pragma once

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fstream>

#include "lib/backend/daemon_client.h"
#include "lib/backend/verbs_wire.h"
#include "lib/daemon/daemon.h"
#include "lib/daemon/sealed_text.h"
#include "lib/ipc/proto.h"
#include "sim/topo/fabric.h"

namespace rdmasim::daemon::test {

// The embedded default fabric (hosts "server" and "client") served on a private socket.
class TestDaemon {
 public:
  explicit TestDaemon(const nlohmann::json& config = topo::default_fabric_config()) {
    static int counter = 0;
    path_ = "/tmp/rdmasim-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".sock";
    DaemonOptions o;
    o.socket_path = path_;
    d_ = std::make_unique<Daemon>(config, o);
    std::string why;
    listen_rc_ = d_->listen(&why);
    if (listen_rc_ == 0) thread_ = std::thread([this] { d_->run(); });
  }
  ~TestDaemon() {
    d_->request_stop();
    if (thread_.joinable()) thread_.join();
    d_.reset();
    unlink((path_ + ".lock").c_str());
  }
  const std::string& path() const { return path_; }
  int listen_rc() const { return listen_rc_; }
  Daemon& daemon() { return *d_; }

 private:
  std::string path_;
  std::unique_ptr<Daemon> d_;
  std::thread thread_;
  int listen_rc_ = -1;
};

using backend::Reply;

// The JSON text of a Counters reply (carried in the sealed memfd fds[0]); "" when the
// reply has none or it cannot be read.
inline std::string counters_text(const Reply& r) {
  std::string text;
  if (r.fds.empty() || read_sealed_text(r.fds[0], &text) != 0) return {};
  return text;
}

// One connection to the test daemon through backend::DaemonClient (the project's only
// client of the protocol); every call blocks for its reply, at most 5 s, so a daemon that
// stops answering fails the test instead of hanging it.
class RawClient {
 public:
  explicit RawClient(const std::string& path) : dc_(path) { dc_.set_reply_timeout(5); }
  // Closes the connection: the daemon sees EOF and destroys this client's objects.
  void disconnect() { dc_.disconnect(); }
  bool connected() const { return dc_.connect_error() == 0; }

  // Sends exactly these bytes as one message.
  void send_raw(const void* data, size_t len) { dc_.send_raw(data, len); }
  // Sends [header][body] with a correct header for `op`.
  void send_op(ipc::Op op, const void* body, size_t len) { dc_.send(op, body, len); }

  // Receives one reply (hdr.status = -1 when none came).
  std::unique_ptr<Reply> receive() {
    auto r = std::make_unique<Reply>();
    if (dc_.receive(r.get()) != 0) r->hdr.status = -1;
    return r;
  }

  template <typename Req>
  std::unique_ptr<Reply> call(ipc::Op op, const Req& req) {
    auto r = std::make_unique<Reply>();
    if (dc_.call(op, &req, sizeof req, r.get()) != 0) r->hdr.status = -1;
    return r;
  }
  std::unique_ptr<Reply> call_empty(ipc::Op op) {
    auto r = std::make_unique<Reply>();
    if (dc_.call(op, nullptr, 0, r.get()) != 0) r->hdr.status = -1;
    return r;
  }

  // Hello with `host` ("" lets the daemon pick); returns the reply status.
  int hello(const char* host = "") { return dc_.say_hello(host); }
  const ipc::HelloResp& hello_resp() const { return dc_.hello(); }
  ipc::ClientPage* page() const { return dc_.client_page(); }

  // Rings the doorbell the way libibverbs does.
  void ring() { dc_.doorbell().ring(); }

  uint32_t alloc_pd() {
    ipc::AllocPdReq r{0};
    auto rep = call(ipc::Op::AllocPd, r);
    return rep->hdr.status == 0 ? rep->as<ipc::HandleResp>().handle : 0;
  }

 private:
  backend::DaemonClient dc_;
};

// What connect_rc sets besides the peer (defaults: ibv_rc_pingpong's min_rnr_timer 12 and
// one READ outstanding; man ibv_modify_qp: rnr_retry 7 retries an RNR NAK forever).
struct RcParams {
  uint32_t access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  uint8_t path_mtu = IBV_MTU_4096;
  uint8_t min_rnr_timer = 12;
  uint8_t hop_limit = 64;
  uint8_t timeout = 14, retry_cnt = 7, rnr_retry = 7;
  uint8_t max_rd_atomic = 1, max_dest_rd_atomic = 1;
};

// RESET -> INIT -> RTR -> RTS of RC QP `handle` of `c`, over the protocol, toward QP number
// `dest` at GID `dgid` (nullptr: the zero GID), PSNs 0, with the attribute masks each
// transition requires. Returns the status of the first ModifyQp refused, 0 if none.
inline int connect_rc(RawClient& c, uint32_t handle, uint32_t dest, const uint8_t* dgid,
                      const RcParams& p = {}) {
  ipc::ModifyQpReq m{};
  m.handle = handle;
  m.attr.qp_state = IBV_QPS_INIT;
  m.attr.port_num = 1;
  m.attr.qp_access_flags = p.access;
  m.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  if (int status = c.call(ipc::Op::ModifyQp, m)->hdr.status) return status;
  m.attr = {};
  m.attr.qp_state = IBV_QPS_RTR;
  m.attr.path_mtu = p.path_mtu;
  m.attr.dest_qp_num = dest;
  m.attr.max_dest_rd_atomic = p.max_dest_rd_atomic;
  m.attr.min_rnr_timer = p.min_rnr_timer;
  m.attr.ah_attr.is_global = 1;
  m.attr.ah_attr.port_num = 1;
  m.attr.ah_attr.hop_limit = p.hop_limit;
  if (dgid) std::memcpy(m.attr.ah_attr.dgid, dgid, 16);
  m.attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (int status = c.call(ipc::Op::ModifyQp, m)->hdr.status) return status;
  m.attr = {};
  m.attr.qp_state = IBV_QPS_RTS;
  m.attr.timeout = p.timeout;
  m.attr.retry_cnt = p.retry_cnt;
  m.attr.rnr_retry = p.rnr_retry;
  m.attr.max_rd_atomic = p.max_rd_atomic;
  m.attr_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  return c.call(ipc::Op::ModifyQp, m)->hdr.status;
}

}  // namespace rdmasim::daemon::test
