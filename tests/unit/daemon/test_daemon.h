// A fabric daemon run on a thread of the test, and a raw protocol client to poke it with.
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

struct Reply {
  ipc::MsgHeader hdr{};
  std::vector<uint8_t> body;
  std::vector<int> fds;
  ~Reply() {
    for (int fd : fds) close(fd);
  }
  template <typename T>
  T as() const {
    T t{};
    std::memcpy(&t, body.data(), std::min(sizeof t, body.size()));
    return t;
  }
};

// The JSON text of a Counters reply (carried in the sealed memfd fds[0]); "" when the
// reply has none or it cannot be read.
inline std::string counters_text(const Reply& r) {
  std::string text;
  if (r.fds.empty() || read_sealed_text(r.fds[0], &text) != 0) return {};
  return text;
}

// One connection speaking the raw protocol; every call blocks for the reply.
class RawClient {
 public:
  explicit RawClient(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    timeval tv{5, 0};  // a daemon that stops answering fails the test instead of hanging it
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawClient() { disconnect(); }
  // Closes the connection: the daemon sees EOF and destroys this client's objects.
  void disconnect() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  bool connected() const { return connected_; }

  // Sends exactly these bytes as one message.
  void send_raw(const void* data, size_t len) { ::send(fd_, data, len, MSG_NOSIGNAL); }

  // Sends [header][body] with a correct header for `op`.
  void send_op(ipc::Op op, const void* body, size_t len) {
    std::vector<uint8_t> m(sizeof(ipc::MsgHeader) + len);
    ipc::MsgHeader h{};
    h.op = op;
    h.seq = ++seq_;
    h.body_len = static_cast<uint32_t>(len);
    std::memcpy(m.data(), &h, sizeof h);
    if (len) std::memcpy(m.data() + sizeof h, body, len);
    send_raw(m.data(), m.size());
  }

  // Receives one reply (hdr.status = -1 when none came).
  std::unique_ptr<Reply> receive() {
    auto r = std::make_unique<Reply>();
    r->hdr.status = -1;
    std::vector<uint8_t> buf(sizeof(ipc::MsgHeader) + ipc::kMaxMsgBytes);
    iovec iov{buf.data(), buf.size()};
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 8)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof cbuf;
    ssize_t n = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
    if (n < static_cast<ssize_t>(sizeof(ipc::MsgHeader))) return r;
    std::memcpy(&r->hdr, buf.data(), sizeof r->hdr);
    r->body.assign(buf.begin() + sizeof(ipc::MsgHeader), buf.begin() + n);
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
      size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < k; ++i) {
        int f;
        std::memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof f);
        r->fds.push_back(f);
      }
    }
    return r;
  }

  template <typename Req>
  std::unique_ptr<Reply> call(ipc::Op op, const Req& req) {
    send_op(op, &req, sizeof req);
    return receive();
  }
  std::unique_ptr<Reply> call_empty(ipc::Op op) {
    send_op(op, nullptr, 0);
    return receive();
  }

  // Hello with `host` ("" lets the daemon pick); returns the reply status.
  int hello(const char* host = "") {
    ipc::HelloReq r;
    std::snprintf(r.host, sizeof r.host, "%s", host);
    auto rep = call(ipc::Op::Hello, r);
    hello_ = rep->as<ipc::HelloResp>();
    if (rep->hdr.status == 0 && rep->fds.size() == 4) {
      page_ = static_cast<ipc::ClientPage*>(
          mmap(nullptr, sizeof(ipc::ClientPage), PROT_READ | PROT_WRITE, MAP_SHARED, rep->fds[0], 0));
      wake_fd_ = dup(rep->fds[2]);
      global_ = static_cast<const ipc::GlobalPage*>(
          mmap(nullptr, sizeof(ipc::GlobalPage), PROT_READ, MAP_SHARED, rep->fds[1], 0));
    }
    return rep->hdr.status;
  }
  const ipc::HelloResp& hello_resp() const { return hello_; }
  ipc::ClientPage* page() const { return page_; }

  // Rings the doorbell the way lib/backend does: bump, then wake the daemon if it sleeps.
  void ring() {
    page_->doorbell.fetch_add(1, std::memory_order_seq_cst);
    if (global_->daemon_sleeping.load(std::memory_order_seq_cst)) {
      uint64_t one = 1;
      ssize_t w = ::write(wake_fd_, &one, sizeof one);
      (void)w;
    }
  }

  uint32_t alloc_pd() {
    ipc::AllocPdReq r{0};
    auto rep = call(ipc::Op::AllocPd, r);
    return rep->hdr.status == 0 ? rep->as<ipc::HandleResp>().handle : 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  uint32_t seq_ = 0;
  ipc::HelloResp hello_{};
  ipc::ClientPage* page_ = nullptr;
  const ipc::GlobalPage* global_ = nullptr;
  int wake_fd_ = -1;
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
