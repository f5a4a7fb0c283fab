// The iWARP connection manager (lib/daemon/cm_iwarp.cpp) on a two-host iWARP fabric, driven
// through CmAgent's calls as the daemon's ops drive them, with losses made by taking a
// NIC's port down (it then neither sends nor receives).
//
// CM times: response timeout 12, packet lifetime 10, max_retries 3, so a SYN or an MPA
// Request waits w = 4.096 us x (2^12 + 2 x 2^10) = 25.165824 ms for its answer (the same
// formula as a CM REQ, IBTA 12.6.5) and is sent at most 1 + 3 times.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "lib/daemon/cm_agent.h"

using namespace rdmasim;
using daemon::CmAgent;

namespace {

constexpr uint32_t kPsTcp = 0x0106;  // RDMA_PS_TCP
enum : uint32_t { kConnectRequest = 4, kUnreachable = 7, kRejected = 8, kEstablished = 9, kDisconnected = 10 };
const Time kWait = ns(4096) * (4096 + 2 * 1024);

struct Bed {
  Engine engine;
  std::unique_ptr<topo::Fabric> fabric;
  std::vector<std::unique_ptr<nic::Hca>> hcas;
  daemon::Clients clients;
  std::unique_ptr<CmAgent> cm;
  daemon::Client* srv = nullptr;
  daemon::Client* cli = nullptr;
  uint32_t sch = 0, cch = 0;

  Bed() {
    auto cfg = nlohmann::json::parse(R"({"name": "cm_iwarp", "link_layer": "iwarp", "seed": 1,
      "cm": {"response_timeout": 12, "packet_lifetime": 10, "max_retries": 3},
      "hosts": [{"name": "server", "ip": "127.0.1.1", "nics": [{"name": "cxgb4_0"}]},
                {"name": "client", "ip": "127.0.1.2", "nics": [{"name": "cxgb4_0"}]}],
      "switches": [{"name": "sw0"}],
      "links": [{"a": "server/cxgb4_0", "b": "sw0", "rate_gbps": 100, "latency_ns": 400},
                {"a": "client/cxgb4_0", "b": "sw0", "rate_gbps": 100, "latency_ns": 400}]})");
    fabric = topo::Fabric::build(engine, cfg);
    for (size_t i = 0; i < fabric->nics().size(); ++i) {
      hcas.push_back(std::make_unique<nic::Hca>(engine, fabric->nics()[i].hca, fabric->nic_port(i)));
      topo::attach_hca(*fabric, i, *hcas.back());
    }
    srv = add_client(1, "server");
    cli = add_client(2, "client");
    cm = std::make_unique<CmAgent>(clients, *fabric, engine, hcas);
    int fd = -1;
    REQUIRE(cm->create_channel(*srv, &sch, &fd) == 0);
    close(fd);
    REQUIRE(cm->create_channel(*cli, &cch, &fd) == 0);
    close(fd);
  }

  daemon::Client* add_client(uint32_t id, const std::string& host) {
    auto c = std::make_unique<daemon::Client>();
    c->id = id;
    c->host = host;
    for (size_t i = 0; i < fabric->nics().size(); ++i)
      if (fabric->nics()[i].host == host) c->devs.push_back(i);
    auto* p = c.get();
    clients[id] = std::move(c);
    return p;
  }
  size_t nic_of(const std::string& host) const {
    for (size_t i = 0; i < fabric->nics().size(); ++i)
      if (fabric->nics()[i].host == host) return i;
    return SIZE_MAX;
  }

  static ipc::CmEndpoint ep(const char* ip, uint16_t port) {
    ipc::CmEndpoint e{};
    inet_pton(AF_INET, ip, &e.ip);
    e.port = htons(port);
    return e;
  }

  // The next event on channel ch of c, running the engine for up to `limit`; nullopt if none.
  std::optional<ipc::CmEventResp> event(daemon::Client& c, uint32_t ch, Time limit = ms(1000)) {
    const Time end = engine.now() + limit;
    for (;;) {
      ipc::CmEventResp e{};
      if (cm->get_event(c, ch, &e) == 0) return e;
      if (!engine.step() || engine.now() > end) return std::nullopt;
    }
  }
  ipc::CmEventResp expect(daemon::Client& c, uint32_t ch, uint32_t want) {
    auto e = event(c, ch);
    REQUIRE(e.has_value());
    CHECK(e->event == want);
    return *e;
  }

  uint32_t listen(uint16_t port) {
    uint32_t id = 0;
    REQUIRE(cm->create_id(*srv, {sch, kPsTcp, 2}, &id) == 0);
    ipc::CmAddrResp a{};
    REQUIRE(cm->bind(*srv, {id, ep("127.0.1.1", port)}, &a) == 0);
    REQUIRE(cm->listen(*srv, {id, 4}) == 0);
    return id;
  }

  // A client id resolved to the server's port, connected with private data `pd`.
  uint32_t connect(uint16_t port, const char* pd, uint32_t ps = kPsTcp, int* rc = nullptr) {
    uint32_t id = 0;
    REQUIRE(cm->create_id(*cli, {cch, ps, 2}, &id) == 0);
    ipc::CmAddrResp a{};
    ipc::CmResolveAddrReq r{};
    r.id = id;
    r.dst = ep("127.0.1.1", port);
    REQUIRE(cm->resolve_addr(*cli, r, &a) == 0);
    expect(*cli, cch, 0);  // ADDR_RESOLVED
    ipc::CmPath path{};
    REQUIRE(cm->resolve_route(*cli, {id, 0}, &path) == 0);
    expect(*cli, cch, 2);  // ROUTE_RESOLVED
    ipc::CmConnectReq c{};
    c.id = id;
    c.param.private_data_len = pd ? static_cast<uint32_t>(std::strlen(pd) + 1) : 0;
    if (pd) std::memcpy(c.param.private_data, pd, c.param.private_data_len);
    const int got = cm->connect(*cli, c);
    if (rc) *rc = got;
    else REQUIRE(got == 0);
    return id;
  }
};

std::string pd_of(const ipc::CmEventResp& e) {
  return std::string(reinterpret_cast<const char*>(e.param.private_data), e.param.private_data_len);
}

}  // namespace

TEST_CASE("iWARP CM: handshake, MPA private data both ways, the Reply lost once, FIN each way") {
  Bed b;
  b.listen(7000);
  const uint32_t cid = b.connect(7000, "hello");
  auto req = b.expect(*b.srv, b.sch, kConnectRequest);
  // MPA Request private data: what the client gave, its length exactly ("hello" and NUL).
  CHECK(pd_of(req) == std::string("hello", 6));
  // The client's port goes down: the server's Reply is lost.
  const size_t cn = b.nic_of("client");
  b.hcas[cn]->set_port_active(false);
  ipc::CmConnectReq acc{};
  acc.id = req.id;
  acc.param.private_data_len = 4;
  std::memcpy(acc.param.private_data, "ok!", 4);
  REQUIRE(b.cm->accept(*b.srv, acc) == 0);
  // The passive side is ESTABLISHED at once (iw_cxgb4's c4iw_accept_cr).
  b.expect(*b.srv, b.sch, kEstablished);
  const uint64_t resent_before = b.cm->counters().resent;
  b.engine.run_until(b.engine.now() + kWait / 2);
  b.hcas[cn]->set_port_active(true);
  // The client's Request is resent after w; the server answers the repeat with its Reply.
  auto rep = b.expect(*b.cli, b.cch, ipc::kCmEventRep);
  CHECK(rep.id == cid);
  CHECK(pd_of(rep) == std::string("ok!", 4));
  CHECK(b.cm->counters().resent == resent_before + 1);
  // The client library reports that REP event as ESTABLISHED once its QP is in RTS and
  // establish() is called; on iWARP establish sends nothing (no RTU).
  const uint64_t sent = b.cm->counters().mads_sent;
  REQUIRE(b.cm->establish(*b.cli, {cid, 0}) == 0);
  b.engine.run_until(b.engine.now() + kWait);
  CHECK(b.cm->counters().mads_sent == sent);
  ipc::CmEventResp none{};
  CHECK(b.cm->get_event(*b.cli, b.cch, &none) == EAGAIN);
  // rdma_disconnect: the FIN; the server's DISCONNECTED, its FIN, the client's DISCONNECTED.
  REQUIRE(b.cm->disconnect(*b.cli, {cid, 0}) == 0);
  CHECK(b.expect(*b.srv, b.sch, kDisconnected).status == 0);
  REQUIRE(b.cm->disconnect(*b.srv, {req.id, 0}) == 0);
  CHECK(b.expect(*b.cli, b.cch, kDisconnected).status == 0);
  CHECK(b.cm->counters().timeouts == 0);
}

TEST_CASE("iWARP CM: no listener -> RST -> REJECTED -ECONNREFUSED, nothing resent") {
  Bed b;
  b.connect(7001, nullptr);
  auto e = b.expect(*b.cli, b.cch, kRejected);
  CHECK(e.status == -ECONNREFUSED);  // cma_iw_handler: connect reply -ECONNREFUSED
  CHECK(b.cm->counters().resent == 0);
}

TEST_CASE("iWARP CM: a rejecting listener -> MPA Reply with R, its private data") {
  Bed b;
  b.listen(7002);
  b.connect(7002, "let me in");
  auto req = b.expect(*b.srv, b.sch, kConnectRequest);
  ipc::CmConnectReq rej{};
  rej.id = req.id;
  rej.param.private_data_len = 3;
  std::memcpy(rej.param.private_data, "no", 3);
  REQUIRE(b.cm->reject(*b.srv, rej) == 0);
  auto e = b.expect(*b.cli, b.cch, kRejected);
  CHECK(e.status == -ECONNREFUSED);
  CHECK(pd_of(e) == std::string("no", 3));
}

TEST_CASE("iWARP CM: the server unreachable -> SYN sent 1 + max_retries times, UNREACHABLE -ETIMEDOUT at 4 w") {
  Bed b;
  b.listen(7003);
  b.hcas[b.nic_of("server")]->set_port_active(false);
  const Time t0 = b.engine.now();
  b.connect(7003, nullptr);
  auto e = b.event(*b.cli, b.cch, 10 * kWait);
  REQUIRE(e.has_value());
  CHECK(e->event == kUnreachable);
  CHECK(e->status == -ETIMEDOUT);
  // Sent at t0, t0 + w, t0 + 2w, t0 + 3w; given up at t0 + 4w.
  CHECK(b.engine.now() - t0 == 4 * kWait);
  CHECK(b.cm->counters().resent == 3);
  CHECK(b.cm->counters().timeouts == 1);
}

TEST_CASE("iWARP CM: UD has no iWARP connection -> EOPNOTSUPP") {
  Bed b;
  int rc = 0;
  b.connect(7004, nullptr, 0x0111 /* RDMA_PS_UDP */, &rc);
  CHECK(rc == EOPNOTSUPP);
}

namespace {

// Counts the TCP segments with RST leaving a port.
struct RstTap : net::PacketTap {
  int rsts = 0;
  void on_transmit(const net::Packet& p, Time) override {
    if (p.kind == net::PacketKind::Transport && (nic::rdma_view(p).tcp.flags & nic::kTcpRst)) ++rsts;
  }
};

// A connection both sides close with FINs, each destroying its id right after its
// rdma_disconnect, before the segments in flight arrive: rping's ending, seen in CI under
// load. The server's FIN answers the client's (LAST-ACK); the ACK of it then reaches a
// server with no id. TCP's close is orderly here (RFC 793 3.5: FIN each way, each ACKed),
// so no RST goes either way; before, the server answered that last ACK with a RST as a
// segment for no connection (3.4), which tshark flags as a warning.
void close_both_then_destroy(bool server_disconnects) {
  Bed b;
  RstTap taps[2];
  int n = 0;
  for (const topo::FabricPort& p : b.fabric->egress_ports())
    if (p.name.rfind("server/", 0) == 0 || p.name.rfind("client/", 0) == 0) p.egress->set_tap(&taps[n++]);
  REQUIRE(n == 2);
  b.listen(7005);
  const uint32_t cid = b.connect(7005, nullptr);
  auto req = b.expect(*b.srv, b.sch, kConnectRequest);
  ipc::CmConnectReq acc{};
  acc.id = req.id;
  REQUIRE(b.cm->accept(*b.srv, acc) == 0);
  b.expect(*b.srv, b.sch, kEstablished);
  b.expect(*b.cli, b.cch, ipc::kCmEventRep);
  REQUIRE(b.cm->establish(*b.cli, {cid, 0}) == 0);
  // The client closes and leaves at once; its FIN is on the wire.
  REQUIRE(b.cm->disconnect(*b.cli, {cid, 0}) == 0);
  REQUIRE(b.cm->destroy_id(*b.cli, cid) == 0);
  CHECK(b.expect(*b.srv, b.sch, kDisconnected).status == 0);
  // The server answers with its FIN (rdma_disconnect, or destroy_id alone, which sends
  // it too) and leaves before the client's ACK of it is back.
  if (server_disconnects) REQUIRE(b.cm->disconnect(*b.srv, {req.id, 0}) == 0);
  REQUIRE(b.cm->destroy_id(*b.srv, req.id) == 0);
  b.engine.run_until(b.engine.now() + ms(1));
  CHECK(taps[0].rsts + taps[1].rsts == 0);
  CHECK(b.cm->counters().timeouts == 0);
}

}  // namespace

TEST_CASE("iWARP CM: both sides close and destroy their ids at once -> FIN each way, no RST") {
  SUBCASE("the server calls rdma_disconnect, then destroys its id") { close_both_then_destroy(true); }
  SUBCASE("the server destroys its id without rdma_disconnect") { close_both_then_destroy(false); }
}
