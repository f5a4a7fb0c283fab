// The fabric daemon: socket and epoll loop, engine pacing, doorbells and completions.
// Control ops live in daemon_ops.cpp.
#include "lib/daemon/daemon.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sched.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <spdlog/spdlog.h>

#include "lib/daemon/daemon_state.h"
#include "lib/daemon/wire.h"
#include "sim/nic/cc_json.h"

namespace rdmasim::daemon {

namespace {
constexpr Time kSpinWindow = us(50);
constexpr int kMaxEventsPerIteration = 200000;
constexpr int kMaxMessagesPerClient = 64;

void add_fd(int epfd, int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

void drain_counter(int fd) {
  uint64_t v;
  while (::read(fd, &v, sizeof v) == sizeof v) {
  }
}
}  // namespace

std::string default_socket_path() {
  if (const char* s = getenv("RDMASIM_SOCKET"); s && *s) return s;
  return "/tmp/rdmasim-" + std::to_string(getuid()) + "/fabric.sock";
}

Daemon::Daemon(const nlohmann::json& config, DaemonOptions options) : opts_(std::move(options)) {
  if (opts_.socket_path.empty()) opts_.socket_path = default_socket_path();
  fabric_ = topo::Fabric::build(engine_, config);
  const auto& nics = fabric_->nics();
  for (size_t i = 0; i < nics.size(); ++i) {
    auto hca = std::make_unique<nic::Hca>(engine_, nics[i].hca, fabric_->nic_port(i));
    topo::attach_hca(*fabric_, i, *hca);  // packets, and the port follows the link's state
    hca->set_async_sink([this, i](const nic::AsyncEvent& ev) { on_async(i, ev); });
    hcas_.push_back(std::move(hca));
  }
  // --pcap captures every port; otherwise the config's "trace" object decides.
  if (!opts_.pcap_dir.empty())
    capture_ = std::make_unique<trace::Capture>(*fabric_, opts_.pcap_dir, topo::CapturePorts::All);
  else if (!fabric_->trace().pcap_dir.empty())
    capture_ = std::make_unique<trace::Capture>(*fabric_, fabric_->trace().pcap_dir, fabric_->trace().ports);
  if (capture_)
    spdlog::info("rdmasim: capturing {} ports into {}", capture_->files().size(),
                 opts_.pcap_dir.empty() ? fabric_->trace().pcap_dir : opts_.pcap_dir);
  global_map_ = SharedMap::create("rdmasim-global", sizeof(ipc::GlobalPage));
  if (!global_map_.ok()) throw std::runtime_error("memfd_create failed for the global page");
  global_ = new (global_map_.addr()) ipc::GlobalPage();
  global_ro_fd_ = open(("/proc/self/fd/" + std::to_string(global_map_.fd())).c_str(), O_RDONLY | O_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (global_ro_fd_ < 0 || wake_fd_ < 0 || stop_fd_ < 0 || timer_fd_ < 0 || epoll_fd_ < 0)
    throw std::runtime_error(std::string("daemon set-up failed: ") + strerror(errno));
  add_fd(epoll_fd_, wake_fd_);
  add_fd(epoll_fd_, stop_fd_);
  add_fd(epoll_fd_, timer_fd_);
}

Daemon::~Daemon() {
  while (!clients_.empty()) drop_client(clients_.begin()->first);
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(opts_.socket_path.c_str());
  }
  for (int fd : {lock_fd_, epoll_fd_, wake_fd_, timer_fd_, stop_fd_, global_ro_fd_})
    if (fd >= 0) close(fd);
  if (capture_) {
    spdlog::info("rdmasim: wrote {} packets into {} capture files ({} not capturable)",
                 capture_->packets(), capture_->files().size(), capture_->not_captured());
    capture_.reset();  // flushes and closes the files, detaches the taps
  }
  hcas_.clear();
  fabric_.reset();
}

int Daemon::listen(std::string* why) {
  const std::string& path = opts_.socket_path;
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    *why = "socket path too long: " + path;
    return ENAMETOOLONG;
  }
  // The socket's directory is created private to this uid when missing; a /tmp/rdmasim-*
  // directory must be private (another user could otherwise plant a socket there).
  const std::string dir = path.substr(0, path.rfind('/'));
  if (!dir.empty() && path.find('/') != std::string::npos) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      *why = "cannot create " + dir + ": " + strerror(errno);
      return errno;
    }
    if (dir.rfind("/tmp/rdmasim-", 0) == 0) {
      struct stat st{};
      if (stat(dir.c_str(), &st) != 0 || st.st_uid != getuid() || (st.st_mode & 0077) != 0) {
        *why = dir + " is not a private directory of this user";
        return EPERM;
      }
    }
  }
  const std::string lock_path = path + ".lock";
  lock_fd_ = open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) {
    *why = "cannot open " + lock_path + ": " + strerror(errno);
    return errno;
  }
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    *why = "another daemon holds " + lock_path;
    return EADDRINUSE;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  {
    int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    const bool answers = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) close(probe);
    if (answers) {
      *why = "another daemon answers at " + path;
      return EADDRINUSE;
    }
  }
  unlink(path.c_str());
  listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(path.c_str(), 0600) != 0 || ::listen(listen_fd_, 128) != 0) {
    int e = errno;
    *why = "cannot listen on " + path + ": " + strerror(e);
    return e;
  }
  add_fd(epoll_fd_, listen_fd_);
  return 0;
}

void Daemon::request_stop() {
  uint64_t one = 1;
  ssize_t r = ::write(stop_fd_, &one, sizeof one);
  (void)r;
}

int64_t Daemon::wall_ps() const {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kSecond + static_cast<int64_t>(ts.tv_nsec) * kNanosecond;
}

void Daemon::advance_engine() {
  Time target = wall_ps() - wall_offset_ps_;
  if (target < engine_.now()) target = engine_.now();
  int n = 0;
  while (n < kMaxEventsPerIteration && engine_.next_event_time() <= target) {
    engine_.step();
    ++n;
  }
  uint64_t behind = 0;
  if (engine_.next_event_time() > target) {
    engine_.run_until(target);
  } else {
    behind = static_cast<uint64_t>(target - engine_.now());
  }
  stats_.behind_ps = behind;
  if (behind > stats_.max_behind_ps) stats_.max_behind_ps = behind;
  global_->behind_ps.store(behind, std::memory_order_relaxed);
  global_->virtual_time_ps.store(static_cast<uint64_t>(engine_.now()), std::memory_order_release);
}

void Daemon::poll_once(int timeout_ms) {
  epoll_event evs[64];
  int n = epoll_wait(epoll_fd_, evs, 64, timeout_ms);
  for (int i = 0; i < n; ++i) {
    const int fd = evs[i].data.fd;
    if (fd == listen_fd_) {
      accept_clients();
    } else if (fd == wake_fd_ || fd == timer_fd_) {
      drain_counter(fd);
    } else if (fd == stop_fd_) {
      drain_counter(fd);
      stopping_ = true;
    } else if (auto it = fd_to_client_.find(fd); it != fd_to_client_.end()) {
      auto c = clients_.find(it->second);
      if (c != clients_.end()) serve_client(*c->second);
    }
  }
}

int Daemon::run() {
  wall_offset_ps_ = wall_ps() - engine_.now();
  last_client_seen_ps_ = wall_ps();
  while (!stopping_) {
    poll_once(0);
    advance_engine();  // first catch up, so new work is stamped with the current time
    scan_doorbells();
    advance_engine();
    if (stopping_) break;
    if (!clients_.empty()) last_client_seen_ps_ = wall_ps();
    if (opts_.auto_exit && clients_.empty() &&
        wall_ps() - last_client_seen_ps_ > opts_.idle_exit_ms * kMillisecond) {
      spdlog::info("rdmasim: no clients for {} ms, exiting", opts_.idle_exit_ms);
      break;
    }
    const Time next = engine_.next_event_time();
    const Time vnow = wall_ps() - wall_offset_ps_;
    if (next != kTimeNever && next - vnow <= kSpinWindow) {
      sched_yield();  // spin, but let busy-polling clients run on a crowded machine
      continue;
    }
    // Sleep protocol: announce, then re-check, so a post that missed the flag is seen.
    global_->daemon_sleeping.store(1, std::memory_order_seq_cst);
    if (scan_doorbells()) {
      global_->daemon_sleeping.store(0, std::memory_order_seq_cst);
      continue;
    }
    itimerspec its{};
    if (next != kTimeNever) {
      const int64_t wake_ns = (next + wall_offset_ps_) / kNanosecond;
      its.it_value.tv_sec = wake_ns / 1'000'000'000;
      its.it_value.tv_nsec = wake_ns % 1'000'000'000;
      if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    }
    timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &its, nullptr);
    poll_once(opts_.auto_exit ? 1000 : -1);
    global_->daemon_sleeping.store(0, std::memory_order_seq_cst);
  }
  // Stop answering at once: clients see EOF, new ones find no socket.
  while (!clients_.empty()) drop_client(clients_.begin()->first);
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    unlink(opts_.socket_path.c_str());
  }
  return 0;
}

void Daemon::accept_clients() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
      close(fd);  // only this user's processes may drive this daemon
      continue;
    }
    auto c = std::make_unique<Client>();
    c->id = next_client_id_++;
    c->sock = fd;
    c->pid = cred.pid;
    c->uid = cred.uid;
    c->mem = std::make_unique<ProcessMemory>(cred.pid);
    fd_to_client_[fd] = c->id;
    add_fd(epoll_fd_, fd);
    stats_.clients_accepted++;
    clients_[c->id] = std::move(c);
  }
}

void Daemon::serve_client(Client& c) {
  const uint32_t id = c.id;
  alignas(8) uint8_t buf[sizeof(ipc::MsgHeader) + ipc::kMaxMsgBytes];
  for (int i = 0; i < kMaxMessagesPerClient; ++i) {
    iovec iov{buf, sizeof buf};
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 16)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof cbuf;
    ssize_t n = recvmsg(c.sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {
      drop_client(id);
      return;
    }
    // Clients never send fds; close any that arrive.
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
        const size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t k = 0; k < nfd; ++k) {
          int f;
          std::memcpy(&f, CMSG_DATA(cm) + k * sizeof(int), sizeof f);
          close(f);
        }
      }
    }
    stats_.requests++;
    ipc::MsgHeader h{};
    if (static_cast<size_t>(n) < sizeof h || (msg.msg_flags & MSG_TRUNC)) {
      std::memcpy(&h, buf, std::min(static_cast<size_t>(n), sizeof h));
      stats_.bad_requests++;
      reply(c, h, EINVAL, nullptr, 0);
      continue;
    }
    std::memcpy(&h, buf, sizeof h);
    const size_t body_len = static_cast<size_t>(n) - sizeof h;
    if (h.magic != ipc::kProtoMagic || h.body_len != body_len) {
      stats_.bad_requests++;
      reply(c, h, EINVAL, nullptr, 0);
      continue;
    }
    handle(c, h, buf + sizeof h, body_len);
    if (clients_.find(id) == clients_.end()) return;
  }
}

void Daemon::reply(Client& c, const ipc::MsgHeader& req, int status, const void* body, size_t len,
                   const std::vector<int>& fds) {
  ipc::MsgHeader h{};
  h.magic = ipc::kProtoMagic;
  h.op = req.op;
  h.seq = req.seq;
  h.status = status;
  if (status != 0) {
    len = 0;
  }
  const std::vector<int> none;
  const std::vector<int>& send_fds = status == 0 ? fds : none;
  h.body_len = static_cast<uint32_t>(len);
  h.nfds = static_cast<uint32_t>(send_fds.size());
  iovec iov[2] = {{&h, sizeof h}, {const_cast<void*>(body), len}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = len ? 2 : 1;
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 8)];
  if (!send_fds.empty()) {
    msg.msg_control = cbuf;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * send_fds.size());
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * send_fds.size());
    std::memcpy(CMSG_DATA(cm), send_fds.data(), sizeof(int) * send_fds.size());
  }
  if (sendmsg(c.sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
    spdlog::debug("rdmasim: reply to client {} failed: {}", c.id, strerror(errno));
}

void Daemon::drop_client(uint32_t id) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return;
  Client& c = *it->second;
  destroy_all(c);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.sock, nullptr);
  fd_to_client_.erase(c.sock);
  close(c.sock);
  if (c.async_efd >= 0) close(c.async_efd);
  clients_.erase(it);
}

bool Daemon::scan_doorbells() {
  bool any = false;
  std::vector<uint32_t> ids;
  for (auto& [id, c] : clients_) {
    if (!c->page_ok()) continue;
    const uint64_t db = c->page()->doorbell.load(std::memory_order_seq_cst);
    if (db != c->last_doorbell) {
      c->last_doorbell = db;
      any = true;
      ids.push_back(id);
    }
  }
  for (uint32_t id : ids)
    if (auto it = clients_.find(id); it != clients_.end()) drain_client(*it->second);
  return any;
}

void Daemon::drain_client(Client& c) {
  for (auto& [h, qp] : c.qps) drain_qp(c, qp);
  for (auto& [h, srq] : c.srqs) drain_srq(c, srq);
}

void Daemon::post_error(Client& c, uint32_t cq_handle, const nic::Completion& comp) {
  stats_.wqes_rejected++;
  deliver(c.id, cq_handle, comp);
}

void Daemon::drain_qp(Client& c, Qp& qp) {
  nic::Hca& hca = *hcas_[qp.dev];
  if (qp.sq) {
    const uint32_t prod = qp.sq.header()->producer.load(std::memory_order_acquire);
    uint32_t avail = prod - qp.sq_cons;
    if (avail > qp.sq.size()) {  // a corrupt producer index: skip, never read past
      stats_.wqes_rejected += avail;
      qp.sq_cons = prod;
      avail = 0;
    }
    for (; avail > 0; --avail, ++qp.sq_cons) {
      ipc::SqWqe w;
      std::memcpy(&w, &qp.sq.slot(qp.sq_cons), sizeof w);
      nic::SendWr wr;
      int rc = to_send_wr(w, qp.max_send_sge, &wr);
      if (rc == 0 && (w.send_flags & nic::kSendInline) && w.inline_len > qp.max_inline) rc = EINVAL;
      if (rc == 0) rc = hca.post_send(qp.qpn, wr);
      if (rc == 0) {
        stats_.wqes_posted++;
        continue;
      }
      nic::Completion e;
      e.wr_id = w.wr_id;
      e.status = nic::WcStatus::LocQpOpErr;
      e.qp_num = qp.qpn;
      e.is_send = true;
      e.wqe_index = w.wqe_index;
      post_error(c, qp.send_cq, e);
    }
    qp.sq.header()->consumer.store(qp.sq_cons, std::memory_order_release);
  }
  if (qp.rq) {
    const uint32_t prod = qp.rq.header()->producer.load(std::memory_order_acquire);
    uint32_t avail = prod - qp.rq_cons;
    if (avail > qp.rq.size()) {
      stats_.wqes_rejected += avail;
      qp.rq_cons = prod;
      avail = 0;
    }
    for (; avail > 0; --avail, ++qp.rq_cons) {
      ipc::RqWqe w;
      std::memcpy(&w, &qp.rq.slot(qp.rq_cons), sizeof w);
      nic::RecvWr wr;
      int rc = to_recv_wr(w, qp.max_recv_sge, &wr);
      if (rc == 0) rc = hca.post_recv(qp.qpn, wr);
      if (rc == 0) {
        stats_.wqes_posted++;
        continue;
      }
      nic::Completion e;
      e.wr_id = w.wr_id;
      e.status = nic::WcStatus::LocQpOpErr;
      e.opcode = nic::WcOpcode::Recv;
      e.qp_num = qp.qpn;
      e.wqe_index = w.wqe_index;
      post_error(c, qp.recv_cq, e);
    }
    qp.rq.header()->consumer.store(qp.rq_cons, std::memory_order_release);
  }
}

void Daemon::drain_srq(Client&, Srq& srq) {
  nic::Hca& hca = *hcas_[srq.dev];
  const uint32_t prod = srq.ring.header()->producer.load(std::memory_order_acquire);
  uint32_t avail = prod - srq.cons;
  if (avail > srq.ring.size()) {
    stats_.wqes_rejected += avail;
    srq.cons = prod;
    avail = 0;
  }
  for (; avail > 0; --avail, ++srq.cons) {
    ipc::RqWqe w;
    std::memcpy(&w, &srq.ring.slot(srq.cons), sizeof w);
    nic::RecvWr wr;
    int rc = to_recv_wr(w, srq.max_sge, &wr);
    if (rc == 0) rc = hca.post_srq_recv(srq.srqn, wr);
    if (rc == 0)
      stats_.wqes_posted++;
    else
      stats_.wqes_rejected++;  // an SRQ has no CQ of its own to report to
  }
  srq.ring.header()->consumer.store(srq.cons, std::memory_order_release);
}

void Daemon::deliver(uint32_t client, uint32_t cq_handle, const nic::Completion& comp) {
  auto cit = clients_.find(client);
  if (cit == clients_.end()) return;  // the client is gone; its completions vanish
  Client& c = *cit->second;
  auto it = c.cqs.find(cq_handle);
  if (it == c.cqs.end()) return;
  Cq& cq = it->second;
  const uint32_t cons = cq.ring.header()->consumer.load(std::memory_order_acquire);
  if (cq.prod - cons >= cq.ring.size()) {
    stats_.cq_overruns++;
    if (cq.ctl->overrun.exchange(1, std::memory_order_acq_rel) == 0)
      push_async(c, static_cast<uint32_t>(nic::AsyncEventType::CqErr), cq_handle);
    return;
  }
  uint32_t srq_handle = 0;
  if (comp.srqn != 0) {
    if (auto s = srq_owner_.find({cq.dev, comp.srqn}); s != srq_owner_.end() && s->second.first == client)
      srq_handle = s->second.second;
  }
  ipc::Cqe& slot = cq.ring.slot(cq.prod);
  ipc::Cqe tmp{};
  to_cqe(comp, srq_handle, &tmp);
  tmp.seq = slot.seq;  // keep the old seq until the body is written
  std::memcpy(&slot, &tmp, sizeof tmp);
  std::atomic_ref<uint32_t>(slot.seq).store(cq.prod + 1, std::memory_order_release);
  cq.prod++;
  cq.ring.header()->producer.store(cq.prod, std::memory_order_release);
  stats_.cqes_written++;
  // Arm: 1 = any completion, 2 = solicited only: ibv_req_notify_cq(3) — the next
  // solicited receive completion or any completion with an error (IBTA 11.4.2.2).
  uint32_t armed = cq.ctl->armed.load(std::memory_order_acquire);
  const bool fire = armed == 1 || (armed == 2 && ((!comp.is_send && comp.solicited) ||
                                                  comp.status != nic::WcStatus::Success));
  if (fire && cq.ctl->armed.compare_exchange_strong(armed, 0, std::memory_order_acq_rel) && cq.channel) {
    auto ch = c.channels.find(cq.channel);
    if (ch == c.channels.end()) return;
    Channel& chan = ch->second;
    const uint32_t ccons = chan.ring.header()->consumer.load(std::memory_order_acquire);
    if (chan.prod - ccons < chan.ring.size()) {
      ipc::CompEvent& ev = chan.ring.slot(chan.prod);
      ev.cq_handle = cq_handle;
      std::atomic_ref<uint32_t>(ev.seq).store(chan.prod + 1, std::memory_order_release);
      chan.prod++;
      chan.ring.header()->producer.store(chan.prod, std::memory_order_release);
    }
    uint64_t one = 1;
    ssize_t r = ::write(chan.efd, &one, sizeof one);
    (void)r;
    stats_.comp_events++;
  }
}

void Daemon::push_async(Client& c, uint32_t type, uint32_t handle) {
  if (!c.page_ok()) return;
  ipc::RingView<ipc::AsyncEventSlot> ring(&c.page()->async_ring_hdr, kAsyncSlots);
  const uint32_t cons = ring.header()->consumer.load(std::memory_order_acquire);
  if (c.async_prod - cons >= ring.size()) return;  // the client does not read its events
  ipc::AsyncEventSlot& s = ring.slot(c.async_prod);
  s.event_type = type;
  s.handle = handle;
  s.pad = 0;
  std::atomic_ref<uint32_t>(s.seq).store(c.async_prod + 1, std::memory_order_release);
  c.async_prod++;
  ring.header()->producer.store(c.async_prod, std::memory_order_release);
  uint64_t one = 1;
  ssize_t r = ::write(c.async_efd, &one, sizeof one);
  (void)r;
  stats_.async_events++;
}

void Daemon::on_async(size_t dev, const nic::AsyncEvent& ev) {
  using T = nic::AsyncEventType;
  const uint32_t type = static_cast<uint32_t>(ev.type);
  auto send_to = [&](const auto& owners, uint32_t id) {
    auto it = owners.find({dev, id});
    if (it == owners.end()) return;
    auto c = clients_.find(it->second.first);
    if (c != clients_.end()) push_async(*c->second, type, it->second.second);
  };
  switch (ev.type) {
    case T::CqErr:
      send_to(cq_owner_, ev.cq);
      break;
    case T::SrqErr:
    case T::SrqLimitReached:
      send_to(srq_owner_, ev.srq);
      break;
    case T::QpFatal: case T::QpReqErr: case T::QpAccessErr: case T::CommEst:
    case T::SqDrained: case T::PathMig: case T::PathMigErr: case T::QpLastWqeReached:
      send_to(qp_owner_, ev.qpn);
      break;
    default:  // device and port events go to every client using the device
      for (auto& [id, c] : clients_)
        for (size_t d : c->devs)
          if (d == dev) push_async(*c, type, ev.port);
      break;
  }
}

nlohmann::json Daemon::counters_json() const {
  nlohmann::json j;
  j["daemon"] = {
      {"pid", getpid()},
      {"socket", opts_.socket_path},
      {"clients", clients_.size()},
      {"clients_accepted", stats_.clients_accepted},
      {"requests", stats_.requests},
      {"bad_requests", stats_.bad_requests},
      {"wqes_posted", stats_.wqes_posted},
      {"wqes_rejected", stats_.wqes_rejected},
      {"cqes_written", stats_.cqes_written},
      {"cq_overruns", stats_.cq_overruns},
      {"comp_events", stats_.comp_events},
      {"async_events", stats_.async_events},
      {"virtual_time_ps", engine_.now()},
      {"events_run", engine_.events_run()},
      {"behind_ps", stats_.behind_ps},
      {"max_behind_ps", stats_.max_behind_ps},
  };
  nlohmann::json cl = nlohmann::json::array();
  for (const auto& [id, c] : clients_)
    cl.push_back({{"id", id}, {"pid", c->pid}, {"host", c->host}, {"qps", c->qps.size()}});
  j["clients"] = cl;
  nlohmann::json nics = nlohmann::json::array();
  const auto& hn = fabric_->nics();
  for (size_t i = 0; i < hcas_.size(); ++i) {
    const nic::HcaCounters& k = hcas_[i]->counters();
    const nic::HcaObjects o = hcas_[i]->objects();
    nics.push_back({{"host", hn[i].host}, {"device", hn[i].device},
                    {"objects", {{"pds", o.pds}, {"mrs", o.mrs}, {"mws", o.mws}, {"cqs", o.cqs},
                                 {"srqs", o.srqs}, {"qps", o.qps}}},
                    {"tx_packets", k.tx_packets}, {"tx_bytes", k.tx_bytes},
                    {"rx_packets", k.rx_packets}, {"rx_bytes", k.rx_bytes},
                    {"acks_sent", k.acks_sent}, {"naks_sent", k.naks_sent},
                    {"rnr_naks_sent", k.rnr_naks_sent},
                    {"retransmitted_packets", k.retransmitted_packets}, {"timeouts", k.timeouts},
                    {"out_of_sequence", k.out_of_sequence}, {"duplicates", k.duplicates},
                    {"cnps_sent", k.cnps_sent}, {"cnps_received", k.cnps_received},
                    {"ecn_marked_received", k.ecn_marked_received}, {"rate_cuts", k.rate_cuts}});
    nics.back()["cc"] = nic::cc_report_json(*hcas_[i]);
    if (fabric_->link_layer() == net::LinkLayer::IWarp) nics.back()["tcp"] = nic::tcp_report_json(*hcas_[i]);
  }
  j["nics"] = nics;
  try {
    j["fabric"] = fabric_->counters();
  } catch (const std::exception& e) {
    j["fabric"] = {{"error", e.what()}};
  }
  return j;
}

}  // namespace rdmasim::daemon
