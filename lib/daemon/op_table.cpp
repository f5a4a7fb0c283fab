// The operation table: per ipc::Op its handler, with the request decoded and the response
// encoded once, generically, from the handler's parameter types.
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <type_traits>

#include "lib/daemon/ops.h"

namespace rdmasim::daemon {

ReplyFds::~ReplyFds() {
  for (int fd : passed_)
    if (fd >= 0) close(fd);
}

namespace {

// A handler's request and response types, from its signature (with or without fds).
template <typename H>
struct HandlerTypes;
template <typename Req, typename Resp>
struct HandlerTypes<int (Ops::*)(Client&, const Req&, Resp*)> {
  using Request = Req;
  using Reply = Resp;
  static constexpr bool kFds = false;
};
template <typename Req, typename Resp>
struct HandlerTypes<int (Ops::*)(Client&, const Req&, Resp*, ReplyFds*)> {
  using Request = Req;
  using Reply = Resp;
  static constexpr bool kFds = true;
};

template <typename T>
void encode(const T& resp, std::vector<uint8_t>* body) {
  if constexpr (!std::is_empty_v<T>) {
    static_assert(std::is_trivially_copyable_v<T>);
    body->resize(sizeof resp);
    std::memcpy(body->data(), &resp, sizeof resp);
  }
}

template <auto Handler>
int invoke(Ops& ops, Client& c, std::span<const uint8_t> body, Response* out) {
  using Types = HandlerTypes<decltype(Handler)>;
  using Req = typename Types::Request;
  Req req{};
  if constexpr (!std::is_empty_v<Req>) {
    static_assert(std::is_trivially_copyable_v<Req>);
    if (body.size() < sizeof req) return EINVAL;  // longer bodies: fields of newer clients
    std::memcpy(&req, body.data(), sizeof req);
  }
  typename Types::Reply resp{};
  int rc;
  if constexpr (Types::kFds)
    rc = (ops.*Handler)(c, req, &resp, &out->fds);
  else
    rc = (ops.*Handler)(c, req, &resp);
  if (rc == 0) encode(resp, &out->body);
  return rc;
}

struct OpEntry {
  int (*call)(Ops&, Client&, std::span<const uint8_t>, Response*) = nullptr;
  bool before_hello = false;  // served to a client that has not said Hello yet
  // Set with the row. The check below reads it rather than comparing `call` with null:
  // under -fsanitize=undefined a function's address is not a constant expression.
  bool present = false;
};

// One slot per value of ipc::Op up to its last (OpenQp); a new op moves this bound.
constexpr size_t kOpSlots = static_cast<size_t>(ipc::Op::OpenQp) + 1;

constexpr std::array<OpEntry, kOpSlots> make_table() {
  using ipc::Op;
  std::array<OpEntry, kOpSlots> t{};
  auto set = [&t](Op op, OpEntry e) {
    e.present = true;
    t[static_cast<size_t>(op)] = e;
  };
  set(Op::Hello, {&invoke<&Ops::hello>, true});
  set(Op::QueryDevice, {&invoke<&Ops::query_device>});
  set(Op::QueryPort, {&invoke<&Ops::query_port>});
  set(Op::AllocPd, {&invoke<&Ops::alloc_pd>});
  set(Op::DeallocPd, {&invoke<&Ops::dealloc_pd>});
  set(Op::RegMr, {&invoke<&Ops::reg_mr>});
  set(Op::DeregMr, {&invoke<&Ops::dereg_mr>});
  set(Op::CreateCompChannel, {&invoke<&Ops::create_comp_channel>});
  set(Op::DestroyCompChannel, {&invoke<&Ops::destroy_comp_channel>});
  set(Op::CreateCq, {&invoke<&Ops::create_cq>});
  set(Op::DestroyCq, {&invoke<&Ops::destroy_cq>});
  set(Op::CreateSrq, {&invoke<&Ops::create_srq>});
  set(Op::ModifySrq, {&invoke<&Ops::modify_srq>});
  set(Op::QuerySrq, {&invoke<&Ops::query_srq>});
  set(Op::DestroySrq, {&invoke<&Ops::destroy_srq>});
  set(Op::CreateQp, {&invoke<&Ops::create_qp>});
  set(Op::ModifyQp, {&invoke<&Ops::modify_qp>});
  set(Op::QueryQp, {&invoke<&Ops::query_qp>});
  set(Op::DestroyQp, {&invoke<&Ops::destroy_qp>});
  set(Op::Counters, {&invoke<&Ops::counters>, true});
  set(Op::Shutdown, {&invoke<&Ops::shutdown>, true});
  set(Op::ReregMr, {&invoke<&Ops::rereg_mr>});
  set(Op::AllocMw, {&invoke<&Ops::alloc_mw>});
  set(Op::DeallocMw, {&invoke<&Ops::dealloc_mw>});
  set(Op::CmCreateChannel, {&invoke<&Ops::cm_create_channel>});
  set(Op::CmDestroyChannel, {&invoke<&Ops::cm_destroy_channel>});
  set(Op::CmCreateId, {&invoke<&Ops::cm_create_id>});
  set(Op::CmDestroyId, {&invoke<&Ops::cm_destroy_id>});
  set(Op::CmBind, {&invoke<&Ops::cm_bind>});
  set(Op::CmListen, {&invoke<&Ops::cm_listen>});
  set(Op::CmResolveAddr, {&invoke<&Ops::cm_resolve_addr>});
  set(Op::CmResolveRoute, {&invoke<&Ops::cm_resolve_route>});
  set(Op::CmConnect, {&invoke<&Ops::cm_connect>});
  set(Op::CmAccept, {&invoke<&Ops::cm_accept>});
  set(Op::CmReject, {&invoke<&Ops::cm_reject>});
  set(Op::CmEstablish, {&invoke<&Ops::cm_establish>});
  set(Op::CmDisconnect, {&invoke<&Ops::cm_disconnect>});
  set(Op::CmGetEvent, {&invoke<&Ops::cm_get_event>});
  set(Op::ResizeCq, {&invoke<&Ops::resize_cq>});
  set(Op::AllocDm, {&invoke<&Ops::alloc_dm>});
  set(Op::FreeDm, {&invoke<&Ops::free_dm>});
  set(Op::RegDmMr, {&invoke<&Ops::reg_dm_mr>});
  set(Op::AdviseMr, {&invoke<&Ops::advise_mr>});
  set(Op::OpenXrcd, {&invoke<&Ops::open_xrcd>});
  set(Op::CloseXrcd, {&invoke<&Ops::close_xrcd>});
  set(Op::OpenQp, {&invoke<&Ops::open_qp>});
  return t;
}

constexpr std::array<OpEntry, kOpSlots> kOpTable = make_table();

// Every operation of proto.h has its row (slot 0 is no operation).
constexpr bool every_op_has_a_row() {
  for (size_t i = 1; i < kOpSlots; ++i)
    if (!kOpTable[i].present) return false;
  return !kOpTable[0].present;
}
static_assert(every_op_has_a_row());

}  // namespace

int Ops::dispatch(Client& c, ipc::Op op, std::span<const uint8_t> body, Response* out) {
  const size_t i = static_cast<size_t>(op);
  const OpEntry* e = i < kOpSlots && kOpTable[i].call ? &kOpTable[i] : nullptr;
  if (!c.hello && !(e && e->before_hello)) return EINVAL;
  if (!e) return EOPNOTSUPP;
  return e->call(*this, c, body, out);
}

}  // namespace rdmasim::daemon
