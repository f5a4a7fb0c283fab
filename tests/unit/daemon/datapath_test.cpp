// End to end through the daemon: two clients, an RC QP pair, an RDMA WRITE posted on the
// SQ ring lands in the peer's memory (process_vm_writev) and completes on the CQ ring.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "tests/unit/daemon/test_daemon.h"

using namespace rdmasim;
using namespace rdmasim::daemon::test;

namespace {

// One side of the pair: its objects and mapped rings.
struct Side {
  RawClient c;
  uint32_t channel = 0;  // set before setup() to attach the CQ to a completion channel
  uint32_t cq_entries = 16;
  uint8_t ack_timeout = 14, retry_cnt = 7;  // RTS attributes used by connect_to()
  ipc::CqControl* cq_ctl = nullptr;
  uint32_t pd = 0, cq = 0, qp = 0, qpn = 0, lkey = 0, rkey = 0;
  uint8_t gid[16] = {};
  ipc::RingView<ipc::Cqe> cq_ring;
  ipc::RingView<ipc::SqWqe> sq;
  alignas(64) char buf[4096] = {};
  char canary[512];  // right after the registered buf: DMA must never reach it

  void fill_canary() { std::memset(canary, 0x5a, sizeof canary); }
  bool canary_intact() const {
    for (char ch : canary)
      if (ch != 0x5a) return false;
    return true;
  }

  explicit Side(const std::string& path) : c(path) {}

  void* map(int fd, size_t len) {
    return mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }

  void setup(const char* host) {
    REQUIRE(c.hello(host) == 0);
    create_objects();
  }

  // PD, MR over buf, CQ, RC QP; after hello.
  void create_objects() {
    auto port = c.call(ipc::Op::QueryPort, ipc::QueryPortReq{0, 1});
    REQUIRE(port->hdr.status == 0);
    std::memcpy(gid, port->as<ipc::QueryPortResp>().gids[0], 16);
    pd = c.alloc_pd();
    REQUIRE(pd != 0);
    ipc::RegMrReq mr{};
    mr.pd = pd;
    mr.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    mr.addr = reinterpret_cast<uint64_t>(buf);
    mr.length = sizeof buf;
    mr.iova = mr.addr;
    auto m = c.call(ipc::Op::RegMr, mr);
    REQUIRE(m->hdr.status == 0);
    lkey = m->as<ipc::RegMrResp>().lkey;
    rkey = m->as<ipc::RegMrResp>().rkey;
    auto q = c.call(ipc::Op::CreateCq, ipc::CreateCqReq{0, cq_entries, channel, 0});
    REQUIRE(q->hdr.status == 0);
    auto cr = q->as<ipc::CreateCqResp>();
    cq = cr.handle;
    void* cq_mem = map(q->fds.at(0), cr.control_offset + sizeof(ipc::CqControl));
    REQUIRE(cq_mem != MAP_FAILED);
    cq_ring = ipc::RingView<ipc::Cqe>(cq_mem, cr.ring_size);
    cq_ctl = reinterpret_cast<ipc::CqControl*>(static_cast<char*>(cq_mem) + cr.control_offset);
    ipc::CreateQpReq qr{};
    qr.pd = pd;
    qr.qp_type = IBV_QPT_RC;
    qr.send_cq = cq;
    qr.recv_cq = cq;
    qr.cap = {8, 8, 1, 1, 0};
    auto p = c.call(ipc::Op::CreateQp, qr);
    REQUIRE(p->hdr.status == 0);
    auto pr = p->as<ipc::CreateQpResp>();
    qp = pr.handle;
    qpn = pr.qp_num;
    void* qp_mem = map(p->fds.at(0), pr.rq_offset + ipc::RingView<ipc::RqWqe>::bytes_for(pr.rq_size));
    REQUIRE(qp_mem != MAP_FAILED);
    sq = ipc::RingView<ipc::SqWqe>(qp_mem, pr.sq_size);
  }

  // Posts a SEND with an invalid SGE count: the daemon completes it with an error at once.
  void post_bad(uint32_t index, uint64_t wr_id) {
    ipc::SqWqe& w = sq.slot(index);
    std::memset(&w, 0, sizeof w);
    w.wr_id = wr_id;
    w.wqe_index = index;
    w.opcode = IBV_WR_SEND;
    w.num_sge = ipc::kMaxSge + 5;
    sq.header()->producer.store(index + 1, std::memory_order_release);
    c.ring();
  }

  void connect_to(const Side& peer) {
    RcParams p;
    p.timeout = ack_timeout;
    p.retry_cnt = retry_cnt;
    REQUIRE(connect_rc(c, qp, peer.qpn, peer.gid, p) == 0);
  }

  // Waits (wall clock, up to 5 s) for CQE number `n` (1-based) and returns it.
  bool wait_cqe(uint32_t n, ipc::Cqe* out) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      ipc::Cqe& s = cq_ring.slot(n - 1);
      if (std::atomic_ref<uint32_t>(s.seq).load(std::memory_order_acquire) == n) {
        *out = s;
        cq_ring.header()->consumer.store(n, std::memory_order_release);
        return true;
      }
    }
    return false;
  }
};

}  // namespace

TEST_CASE("daemon datapath: an RDMA WRITE on the SQ ring reaches the peer and completes") {
  TestDaemon d;
  Side server(d.path()), client(d.path());
  server.setup("server");
  client.setup("client");
  server.connect_to(client);
  client.connect_to(server);

  const char msg[] = "hello through the simulated fabric";
  std::memcpy(client.buf, msg, sizeof msg);
  ipc::SqWqe& w = client.sq.slot(0);
  std::memset(&w, 0, sizeof w);
  w.wr_id = 42;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.send_flags = IBV_SEND_SIGNALED;
  w.num_sge = 1;
  w.sge[0] = {reinterpret_cast<uint64_t>(client.buf), sizeof msg, client.lkey};
  w.remote_addr = reinterpret_cast<uint64_t>(server.buf) + 100;
  w.rkey = server.rkey;
  client.sq.header()->producer.store(1, std::memory_order_release);
  client.c.ring();

  ipc::Cqe cqe{};
  REQUIRE(client.wait_cqe(1, &cqe));
  CHECK(cqe.wr_id == 42);
  CHECK(cqe.status == IBV_WC_SUCCESS);
  CHECK(cqe.opcode == IBV_WC_RDMA_WRITE);
  CHECK(cqe.is_send == 1);
  CHECK(std::memcmp(server.buf + 100, msg, sizeof msg) == 0);
  CHECK(client.sq.header()->consumer.load() == 1);  // the daemon took the WQE
}

TEST_CASE("daemon datapath: a WQE with too many SGEs completes with LOC_QP_OP_ERR") {
  TestDaemon d;
  Side a(d.path());
  a.setup("server");
  ipc::SqWqe& w = a.sq.slot(0);
  std::memset(&w, 0, sizeof w);
  w.wr_id = 7;
  w.opcode = IBV_WR_SEND;
  w.num_sge = ipc::kMaxSge + 5;  // hostile: beyond both the wire limit and the QP's cap
  a.sq.header()->producer.store(1, std::memory_order_release);
  a.c.ring();
  ipc::Cqe cqe{};
  REQUIRE(a.wait_cqe(1, &cqe));
  CHECK(cqe.wr_id == 7);
  CHECK(cqe.status == IBV_WC_LOC_QP_OP_ERR);
  // A corrupt producer index far ahead of the ring is skipped, not read.
  a.sq.header()->producer.store(1000000, std::memory_order_release);
  a.c.ring();
  CHECK(a.c.alloc_pd() != 0);  // still serving
}

TEST_CASE("daemon datapath: an armed CQ raises one event on its completion channel") {
  TestDaemon d;
  Side a(d.path());
  REQUIRE(a.c.hello("server") == 0);
  auto ch = a.c.call(ipc::Op::CreateCompChannel, ipc::CreateCompChannelReq{0});
  REQUIRE(ch->hdr.status == 0);
  REQUIRE(ch->fds.size() == 2);
  auto cr = ch->as<ipc::CreateCompChannelResp>();
  void* ring_mem = mmap(nullptr, ipc::RingView<ipc::CompEvent>::bytes_for(cr.ring_size),
                        PROT_READ | PROT_WRITE, MAP_SHARED, ch->fds[0], 0);
  REQUIRE(ring_mem != MAP_FAILED);
  ipc::RingView<ipc::CompEvent> events(ring_mem, cr.ring_size);
  a.channel = cr.handle;
  a.create_objects();
  a.cq_ctl->armed.store(1, std::memory_order_release);
  a.post_bad(0, 1);
  a.post_bad(1, 2);
  ipc::Cqe cqe{};
  REQUIRE(a.wait_cqe(2, &cqe));
  CHECK(a.cq_ctl->armed.load() == 0);  // the daemon disarmed it when it raised the event
  CHECK(events.header()->producer.load(std::memory_order_acquire) == 1);  // one event for two CQEs
  CHECK(events.slot(0).cq_handle == a.cq);
  uint64_t v = 0;
  CHECK(read(ch->fds[1], &v, sizeof v) == sizeof v);  // the channel's fd became readable
  CHECK(v == 1);
  // A CQ still attached to the channel keeps it alive.
  CHECK(a.c.call(ipc::Op::DestroyCompChannel, ipc::HandleReq{cr.handle})->hdr.status == EBUSY);
}

TEST_CASE("daemon datapath: a full CQ ring sets overrun and raises IBV_EVENT_CQ_ERR") {
  TestDaemon d;
  Side a(d.path());
  a.cq_entries = 1;  // ring of round_up_pow2(1 + 1) = 2 slots
  a.setup("server");
  REQUIRE(a.cq_ring.size() == 2);
  for (uint32_t i = 0; i < 3; ++i) a.post_bad(i, i);  // nobody consumes: the third overflows
  ipc::ClientPage* page = a.c.page();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (page->async_ring_hdr.producer.load(std::memory_order_acquire) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
  }
  REQUIRE(page->async_ring_hdr.producer.load() == 1);
  CHECK(page->async_slots[0].event_type == IBV_EVENT_CQ_ERR);
  CHECK(page->async_slots[0].handle == a.cq);
  CHECK(a.cq_ctl->overrun.load() == 1);
}

TEST_CASE("daemon datapath: when a peer disconnects, its QP vanishes and writes to it exhaust retries") {
  TestDaemon d;
  auto server = std::make_unique<Side>(d.path());
  Side client(d.path());
  server->setup("server");
  client.setup("client");
  client.ack_timeout = 8;  // 4.096 us * 2^8 = 1 ms per try
  client.retry_cnt = 1;
  server->connect_to(client);
  client.connect_to(*server);
  const uint64_t remote = reinterpret_cast<uint64_t>(server->buf);
  const uint32_t rkey = server->rkey;
  server->c.disconnect();  // EOF: the daemon destroys the server's objects
  // Counters are answered in order after the EOF was seen, so wait until it shows.
  for (int i = 0; i < 500; ++i) {
    auto r = client.c.call_empty(ipc::Op::Counters);
    auto j = nlohmann::json::parse(counters_text(*r));
    if (j["daemon"]["clients"] == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ipc::SqWqe& w = client.sq.slot(0);
  std::memset(&w, 0, sizeof w);
  w.wr_id = 9;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.send_flags = IBV_SEND_SIGNALED;
  w.num_sge = 1;
  w.sge[0] = {reinterpret_cast<uint64_t>(client.buf), 64, client.lkey};
  w.remote_addr = remote;
  w.rkey = rkey;
  client.sq.header()->producer.store(1, std::memory_order_release);
  client.c.ring();
  ipc::Cqe cqe{};
  REQUIRE(client.wait_cqe(1, &cqe));
  CHECK(cqe.wr_id == 9);
  CHECK(cqe.status == IBV_WC_RETRY_EXC_ERR);
}

TEST_CASE("daemon datapath: random WQEs on a connected QP never stop the daemon") {
  TestDaemon d;
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    Side a(d.path()), b(d.path());
    a.setup("server");
    b.setup("client");
    a.connect_to(b);
    b.connect_to(a);
    std::mt19937 rng(seed);
    const uint64_t base = reinterpret_cast<uint64_t>(b.buf);
    for (uint32_t i = 0; i < a.sq.size(); ++i) {
      ipc::SqWqe& w = a.sq.slot(i);
      std::memset(&w, 0, sizeof w);
      w.wr_id = i;
      w.wqe_index = i;
      w.opcode = rng() % 11;
      w.send_flags = IBV_SEND_SIGNALED | (rng() % 2 ? IBV_SEND_INLINE : 0);
      w.inline_len = rng() % 300;
      w.num_sge = rng() % 3;
      for (auto& s : w.sge) s = {base + rng() % 8192 - 2048, static_cast<uint32_t>(rng() % 6000), static_cast<uint32_t>(rng() % 2 ? a.lkey : rng())};
      w.remote_addr = base + rng() % 8192 - 2048;
      w.rkey = static_cast<uint32_t>(rng() % 2 ? b.rkey : rng());
      w.compare_add = rng();
    }
    a.sq.header()->producer.store(a.sq.size(), std::memory_order_release);
    a.c.ring();
    ipc::Cqe cqe{};
    CHECK(a.wait_cqe(1, &cqe));  // at least the first one completes, well or badly
    CHECK(a.c.alloc_pd() != 0);
  }
  RawClient late(d.path());
  CHECK(late.hello() == 0);
}

TEST_CASE("daemon datapath: DMA outside a registered region is refused and touches nothing") {
  TestDaemon d;
  Side server(d.path()), client(d.path());
  server.setup("server");
  client.setup("client");
  server.connect_to(client);
  client.connect_to(server);
  server.fill_canary();
  client.fill_canary();
  std::memset(client.buf, 0x11, sizeof client.buf);
  std::memset(server.buf, 0x22, sizeof server.buf);

  // Each WQE is one attack; a failed WQE moves the QP to ERR (IBTA 10.8.3: a completion
  // error is fatal to an RC QP), so every case gets a fresh pair in its own subcase.
  auto post = [&](uint32_t op, uint64_t laddr, uint32_t len, uint32_t lkey, uint64_t raddr,
                  uint32_t rkey) {
    ipc::SqWqe& w = client.sq.slot(0);
    std::memset(&w, 0, sizeof w);
    w.wr_id = 9;
    w.opcode = op;
    w.send_flags = IBV_SEND_SIGNALED;
    w.num_sge = 1;
    w.sge[0] = {laddr, len, lkey};
    w.remote_addr = raddr;
    w.rkey = rkey;
    client.sq.header()->producer.store(1, std::memory_order_release);
    client.c.ring();
    ipc::Cqe cqe{};
    REQUIRE(client.wait_cqe(1, &cqe));
    CHECK(cqe.wr_id == 9);
    return cqe.status;
  };
  const uint64_t cbuf = reinterpret_cast<uint64_t>(client.buf);
  const uint64_t sbuf = reinterpret_cast<uint64_t>(server.buf);
  // ibv_post_send(3): the local buffer must lie inside the MR of lkey, else the WR completes
  // with IBV_WC_LOC_PROT_ERR; a remote range outside the rkey's MR is IBV_WC_REM_ACCESS_ERR.
  SUBCASE("a local SGE that runs 200 bytes past the MR's end") {
    CHECK(post(IBV_WR_RDMA_WRITE, cbuf + 4000, 200, client.lkey, sbuf, server.rkey) ==
          IBV_WC_LOC_PROT_ERR);
  }
  SUBCASE("a local SGE with another process's lkey") {
    CHECK(post(IBV_WR_RDMA_WRITE, sbuf, 64, server.lkey, sbuf, server.rkey) ==
          IBV_WC_LOC_PROT_ERR);
  }
  SUBCASE("an RDMA WRITE that runs past the end of the remote MR") {
    CHECK(post(IBV_WR_RDMA_WRITE, cbuf, 200, client.lkey, sbuf + 4000, server.rkey) ==
          IBV_WC_REM_ACCESS_ERR);
  }
  SUBCASE("an RDMA READ of the bytes right after the remote MR") {
    CHECK(post(IBV_WR_RDMA_READ, cbuf, 64, client.lkey, sbuf + 4096, server.rkey) ==
          IBV_WC_REM_ACCESS_ERR);
  }
  SUBCASE("an RDMA READ whose local sink runs past the local MR") {
    CHECK(post(IBV_WR_RDMA_READ, cbuf + 4090, 64, client.lkey, sbuf, server.rkey) ==
          IBV_WC_LOC_PROT_ERR);
  }
  // Nothing outside the registered buffers changed, and the registered ones kept their bytes
  // (every attack was refused before any byte moved).
  CHECK(server.canary_intact());
  CHECK(client.canary_intact());
  CHECK(std::all_of(std::begin(server.buf), std::end(server.buf), [](char ch) { return ch == 0x22; }));
  CHECK(std::all_of(std::begin(client.buf), std::end(client.buf), [](char ch) { return ch == 0x11; }));
  CHECK(client.c.alloc_pd() != 0);  // the daemon still serves
}

TEST_CASE("daemon counters: the \"cc\" section lists each QP's DCQCN state and rate series") {
  // client -> server over a 100 Gb/s link into a switch whose link to server runs at
  // 10 Gb/s, with ECN marking every packet that finds a queue (kmin = kmax = 0): of 8
  // back-to-back 4 KiB WRITEs all but the first find one, so the server sees CE, sends a
  // CNP (the paper preset's 50 us interval: one for this burst) and the client QP's
  // controller cuts once.
  nlohmann::json cfg = topo::default_fabric_config();
  cfg["links"][0]["rate_gbps"] = 10;
  cfg["switch"] = {{"ecn", {{"enabled", true}, {"kmin_kb", 0}, {"kmax_kb", 0}, {"pmax", 1.0}}}};
  cfg["nic"] = {{"cc", {{"algorithm", "dcqcn"}, {"preset", "paper"}}}};
  TestDaemon d(cfg);
  REQUIRE(d.listen_rc() == 0);
  Side server(d.path()), client(d.path());
  server.setup("server");
  client.setup("client");
  server.connect_to(client);
  client.connect_to(server);
  constexpr uint32_t kWrites = 8;
  for (uint32_t i = 0; i < kWrites; ++i) {
    ipc::SqWqe& w = client.sq.slot(i);
    std::memset(&w, 0, sizeof w);
    w.wr_id = i;
    w.wqe_index = i;
    w.opcode = IBV_WR_RDMA_WRITE;
    w.send_flags = IBV_SEND_SIGNALED;
    w.num_sge = 1;
    w.sge[0] = {reinterpret_cast<uint64_t>(client.buf), sizeof client.buf, client.lkey};
    w.remote_addr = reinterpret_cast<uint64_t>(server.buf);
    w.rkey = server.rkey;
  }
  client.sq.header()->producer.store(kWrites, std::memory_order_release);
  client.c.ring();
  ipc::Cqe cqe{};
  REQUIRE(client.wait_cqe(kWrites, &cqe));
  CHECK(cqe.status == IBV_WC_SUCCESS);

  auto r = client.c.call_empty(ipc::Op::Counters);
  REQUIRE(r->hdr.status == 0);
  const auto j = nlohmann::json::parse(counters_text(*r));
  REQUIRE(j["nics"].size() == 2);
  const nlohmann::json* cl = nullptr;
  const nlohmann::json* sv = nullptr;
  for (const auto& n : j["nics"]) (n["host"] == "client" ? cl : sv) = &n;
  REQUIRE(cl);
  REQUIRE(sv);
  // The server's QP sent only ACKs and CNPs, which are not paced: it has no controller.
  CHECK((*sv)["cc"].empty());
  CHECK((*sv)["cnps_sent"].get<uint64_t>() >= 1);
  REQUIRE((*cl)["cc"].size() == 1);
  const auto& q = (*cl)["cc"][0];
  CHECK(q["qpn"].get<uint32_t>() == client.qpn);
  CHECK(q["algorithm"] == "dcqcn");
  CHECK(q["cnps_received"].get<uint64_t>() == (*sv)["cnps_sent"].get<uint64_t>());
  CHECK(q["rate_cuts"].get<uint64_t>() >= 1);
  CHECK((*cl)["rate_cuts"] == q["rate_cuts"]);
  // The series: [t_us, rate_gbps, target_gbps, alpha]. It starts at the client's line rate
  // (100 Gb/s) with alpha = initial_alpha (1, paper); the first cut sets target = rate and
  // rate = rate * (1 - alpha/2) = 50 Gb/s, then alpha = (1 - g) + g = 1.
  const auto& s = q["samples"];
  REQUIRE(s.size() >= 2);
  CHECK(s[0][1].get<double>() == doctest::Approx(100));
  CHECK(s[0][2].get<double>() == doctest::Approx(100));
  CHECK(s[0][3].get<double>() == doctest::Approx(1.0));
  CHECK(s[1][0].get<double>() > s[0][0].get<double>());
  CHECK(s[1][1].get<double>() == doctest::Approx(50));
  CHECK(s[1][2].get<double>() == doctest::Approx(100));
  CHECK(s[1][3].get<double>() == doctest::Approx(1.0));
  CHECK(q["samples_dropped"].get<uint64_t>() == 0);
}
