// A simulated process's side of the runtime: its requests (each suspends the fiber with what
// it wants; Runtime::serve answers) and its standard streams.
#include "lib/inproc/process.h"

#include <fcntl.h>
#include <poll.h>

#include <stdio_ext.h>

#include <cerrno>
#include <cstring>

#include "lib/daemon/client.h"
#include "lib/inproc/runtime.h"

namespace rdmasim::inproc {
namespace {
thread_local Process* t_process = nullptr;

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}
}  // namespace

// A FILE* of the process (fopencookie) whose bytes become OutputLines at the virtual time
// their newline is written; the stream is line buffered, so that is when printf returns.
struct Process::Stream {
  Process* owner;
  int which;
  std::string partial;
  FILE* file = nullptr;

  static ssize_t write(void* cookie, const char* buf, size_t len) {
    auto* s = static_cast<Stream*>(cookie);
    for (size_t i = 0; i < len; ++i) {
      if (buf[i] == '\n') {
        s->owner->rt_.record_output(*s->owner, s->which, std::move(s->partial));
        s->partial.clear();
      } else {
        s->partial.push_back(buf[i]);
      }
    }
    return static_cast<ssize_t>(len);
  }
  Stream(Process* p, int w) : owner(p), which(w) {
    cookie_io_functions_t io{nullptr, &Stream::write, nullptr, nullptr};
    file = fopencookie(this, "w", io);
    if (file) setvbuf(file, nullptr, _IOLBF, BUFSIZ);
  }
  ~Stream() {
    if (file) fclose(file);
  }
};

Process::Process(Runtime& rt, int rank, std::string program, std::string host,
                 std::vector<std::string> args, ProgramCopy copy, daemon::Client& client,
                 size_t stack_bytes)
    : rt_(rt), rank_(rank), program_(std::move(program)), host_(std::move(host)),
      args_(std::move(args)), copy_(copy), client_(client) {
  args_.insert(args_.begin(), host_);
  for (std::string& a : args_) argv_.push_back(a.data());
  argv_.push_back(nullptr);
  out_ = std::make_unique<Stream>(this, 1);
  err_ = std::make_unique<Stream>(this, 2);
  fiber_ = std::make_unique<Fiber>(stack_bytes, [this] {
    return copy_.main(static_cast<int>(argv_.size() - 1), argv_.data());
  });
}

Process::~Process() = default;

Process* Process::current() { return t_process; }

void Process::enter() {
  t_process = this;
  saved_out_ = stdout;
  saved_err_ = stderr;
  if (out_->file) stdout = out_->file;
  if (err_->file) stderr = err_->file;
}

void Process::leave() {
  // A partial line stays buffered until its newline (or the end): its time is the newline's.
  if (out_->file && __fpending(out_->file)) fflush(out_->file);
  if (err_->file && __fpending(err_->file)) fflush(err_->file);
  stdout = saved_out_;
  stderr = saved_err_;
  t_process = nullptr;
}

void Process::flush_partial_lines() {
  for (Stream* s : {out_.get(), err_.get()})
    if (!s->partial.empty()) {
      rt_.record_output(*this, s->which, std::move(s->partial));
      s->partial.clear();
    }
}

int Process::request(ipc::Op op, const void* req, size_t req_len, backend::Reply* out) {
  int rc = 0;
  simcall_ = [&, op, req, req_len, out] {
    daemon::Response resp;
    out->hdr = {};
    out->hdr.op = op;
    out->hdr.status = rt_.ops_->dispatch(client_, op, {static_cast<const uint8_t*>(req), req_len}, &resp);
    out->body = std::move(resp.body);
    // Shared memory comes as the handlers' own mappings (Ops::Services::local_maps), in
    // the place of an fd; they stay the handlers'.
    const auto maps = resp.fds.local_maps();
    auto map = maps.begin();
    for (int fd : resp.fds.fds()) {
      if (fd < 0 && map != maps.end() && map->index == out->fds.size()) {
        out->maps.resize(out->fds.size());
        out->maps.push_back({map->addr, map->len, false});
        out->fds.push_back(-1);
        ++map;
        continue;
      }
      // The daemon's lent fds stay its own and passed ones close with `resp`: the
      // process gets its own descriptors, as SCM_RIGHTS would give it.
      int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
      if (mine < 0) {
        rc = errno;
        break;  // the rest would land at the wrong places
      }
      out->fds.push_back(mine);
    }
  };
  waiting_in_ = "a control verb";
  suspend(Wait::Simcall);
  return rc;
}

void Process::empty_poll(const void* cq) {
  poll_cq_ = cq;
  waiting_in_ = "a poll of an empty CQ";
  suspend(Wait::Poll);
}

void Process::wait_readable(int fd) {
  while (!readable(fd)) {
    wait_fd_ = fd;
    waiting_in_ = "ibv_get_cq_event/ibv_get_async_event";
    suspend(Wait::Fd);
  }
}

Time Process::now() const {
  const_cast<Process*>(this)->other_call_ = true;  // the program looked at the clock
  return rt_.engine().now();
}

int Process::size() const { return static_cast<int>(rt_.size()); }

int Process::put(const char* key, const void* val, size_t len) {
  if (!key || strlen(key) > 255 || len > 65536 || (len && !val)) return EINVAL;
  int rc = 0;
  simcall_ = [&] {
    auto [it, fresh] = rt_.keys_.try_emplace(key);
    if (!fresh) {
      rc = EEXIST;
      return;
    }
    it->second.assign(static_cast<const uint8_t*>(val), static_cast<const uint8_t*>(val) + len);
    rt_.oob_publish(it->first);
  };
  waiting_in_ = "rdmasim_oob_put";
  suspend(Wait::Simcall);
  return rc;
}

int Process::get(const char* key, void* val, size_t len) {
  if (!key || strlen(key) > 255 || (len && !val)) return EINVAL;
  wait_key_ = key;
  get_dst_ = val;
  get_len_ = len;
  get_rc_ = 0;
  waiting_in_ = "rdmasim_oob_get";
  suspend(Wait::Key);
  return get_rc_;
}

int Process::barrier() {
  waiting_in_ = "rdmasim_oob_barrier";
  suspend(Wait::Barrier);
  return 0;
}

int Process::compute(uint64_t nanoseconds) {
  if (nanoseconds == 0) return 0;
  if (nanoseconds > static_cast<uint64_t>(kTimeNever / kNanosecond)) return EINVAL;
  delay_ = ns(static_cast<int64_t>(nanoseconds));
  cpu_.run(0, "compute", now(), delay_);
  waiting_in_ = "rdmasim_compute";
  suspend(Wait::Timer);
  return 0;
}

}  // namespace rdmasim::inproc
