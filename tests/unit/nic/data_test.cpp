// Data movement between two HCAs: bytes, segmentation, immediates, atomics, UD and GRH.
#include <doctest/doctest.h>

#include <cstring>

#include "sim/nic/timing_memory.h"
#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;

TEST_CASE("rc: RDMA WRITE of 10000 B at MTU 1024 places every byte, 10 packets, 1 ACK") {
  QpParams qp;
  qp.mtu = 3;  // IBV_MTU_1024
  Pair p(qp);
  auto src = pattern(10000, 3);
  std::vector<uint8_t> dst(10000, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  SendWr wr;
  wr.wr_id = 42;
  wr.opcode = WrOpcode::RdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey)};
  wr.remote_addr = reinterpret_cast<uint64_t>(dst.data());
  wr.rkey = kd.rkey;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  CHECK(dst == src);
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(p.a.wcs[0].wc.opcode == WcOpcode::RdmaWrite);
  CHECK(p.a.wcs[0].wc.wr_id == 42);
  CHECK(p.a.hca->counters().tx_packets == 10);  // ceil(10000 / 1024)
  // ACKs: ack_every = 16 > 10 packets, so only the last packet asks for one.
  CHECK(p.b.hca->counters().acks_sent == 1);
  CHECK(p.b.wcs.empty());  // a plain WRITE consumes no receive
  // Opcodes: WRITE FIRST (0x06), 8 x MIDDLE (0x07), LAST (0x08), all RC (0x00 | op).
  REQUIRE(p.a.wire->sent.size() == 10);
  CHECK(p.a.wire->sent.front() == 0x06);
  CHECK(p.a.wire->sent[5] == 0x07);
  CHECK(p.a.wire->sent.back() == 0x08);
}

TEST_CASE("rc: RDMA READ of 9000 B at MTU 4096 returns the remote bytes in 3 responses") {
  Pair p;
  auto remote = pattern(9000, 11);
  std::vector<uint8_t> local(9000, 0);
  auto kr = p.reg(p.b, remote);
  auto kl = p.reg(p.a, local);
  SendWr wr;
  wr.opcode = WrOpcode::RdmaRead;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(local, kl.lkey, 0, 4000), sge_of(local, kl.lkey, 4000)};  // two SGEs
  wr.remote_addr = reinterpret_cast<uint64_t>(remote.data());
  wr.rkey = kr.rkey;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  CHECK(local == remote);
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(p.a.wcs[0].wc.opcode == WcOpcode::RdmaRead);
  CHECK(p.a.wcs[0].wc.byte_len == 9000);
  // Responses: FIRST 0x0d, MIDDLE 0x0e, LAST 0x0f (ceil(9000 / 4096) = 3).
  CHECK(p.b.wire->sent == std::vector<uint8_t>{0x0d, 0x0e, 0x0f});
}

TEST_CASE("rc: 64 KiB SEND at MTU 4096 is 16 packets and one receive completion") {
  Pair p;
  auto src = pattern(65536, 5);
  std::vector<uint8_t> dst(65536 + 100, 0xee);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  RecvWr rr;
  rr.wr_id = 7;
  rr.sgl = {sge_of(dst, kd.lkey)};
  REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey)};
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  CHECK(std::memcmp(dst.data(), src.data(), 65536) == 0);
  CHECK(dst[65536] == 0xee);  // nothing written past the message
  CHECK(p.a.hca->counters().tx_packets == 16);  // 65536 / 4096
  // The 16th packet is both the last and the ack_every-th: one ACK.
  CHECK(p.b.hca->counters().acks_sent == 1);
  REQUIRE(p.b.wcs.size() == 1);
  CHECK(p.b.wcs[0].wc.status == WcStatus::Success);
  CHECK(p.b.wcs[0].wc.opcode == WcOpcode::Recv);
  CHECK(p.b.wcs[0].wc.byte_len == 65536);
  CHECK(p.b.wcs[0].wc.wr_id == 7);
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.opcode == WcOpcode::Send);
  // SEND FIRST 0x00, 14 x MIDDLE 0x01, LAST 0x02.
  CHECK(p.a.wire->sent.front() == 0x00);
  CHECK(p.a.wire->sent[1] == 0x01);
  CHECK(p.a.wire->sent.back() == 0x02);
}

TEST_CASE("rc: SEND WITH IMM inline and WRITE WITH IMM deliver imm and flags") {
  Pair p;
  std::vector<uint8_t> dst(256, 0), wdst(64, 0);
  auto kd = p.reg(p.b, dst);
  auto kw = p.reg(p.b, wdst);
  RecvWr rr;
  rr.sgl = {sge_of(dst, kd.lkey)};
  REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  SendWr wr;
  wr.opcode = WrOpcode::SendWithImm;
  wr.send_flags = kSendSignaled | kSendInline;
  wr.inline_data = {1, 2, 3, 4, 5};
  wr.imm_data = 0xdeadbeef;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  auto wsrc = pattern(64, 9);
  auto ks = p.reg(p.a, wsrc);
  SendWr w2;
  w2.opcode = WrOpcode::RdmaWriteWithImm;
  w2.sgl = {sge_of(wsrc, ks.lkey)};
  w2.remote_addr = reinterpret_cast<uint64_t>(wdst.data());
  w2.rkey = kw.rkey;
  w2.imm_data = 0x01020304;
  REQUIRE(p.a.hca->post_send(p.a.qpn, w2) == 0);  // unsignaled: completes silently
  p.engine.run();
  CHECK(std::vector<uint8_t>(dst.begin(), dst.begin() + 5) == std::vector<uint8_t>{1, 2, 3, 4, 5});
  CHECK(wdst == wsrc);
  REQUIRE(p.b.wcs.size() == 2);
  CHECK(p.b.wcs[0].wc.opcode == WcOpcode::Recv);
  CHECK(p.b.wcs[0].wc.byte_len == 5);
  CHECK(p.b.wcs[0].wc.imm_data == 0xdeadbeef);
  CHECK(p.b.wcs[0].wc.wc_flags == kWcWithImm);
  CHECK(p.b.wcs[1].wc.opcode == WcOpcode::RecvRdmaWithImm);
  CHECK(p.b.wcs[1].wc.byte_len == 64);  // the length of the write
  CHECK(p.b.wcs[1].wc.imm_data == 0x01020304);
  CHECK(p.a.wcs.size() == 1);  // only the signaled SEND
}

TEST_CASE("rc: FETCH_AND_ADD and CMP_AND_SWP return the original value and update memory") {
  Pair p;
  std::vector<uint8_t> remote(16, 0), local(8, 0);
  uint64_t v = 100;
  std::memcpy(remote.data() + 8, &v, 8);
  auto kr = p.reg(p.b, remote);
  auto kl = p.reg(p.a, local);
  auto run_atomic = [&](WrOpcode op, uint64_t cmp_add, uint64_t swap) {
    SendWr wr;
    wr.opcode = op;
    wr.send_flags = kSendSignaled;
    wr.sgl = {sge_of(local, kl.lkey)};
    wr.remote_addr = reinterpret_cast<uint64_t>(remote.data()) + 8;
    wr.rkey = kr.rkey;
    wr.compare_add = cmp_add;
    wr.swap = swap;
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
    p.engine.run();
    uint64_t orig = 0, now = 0;
    std::memcpy(&orig, local.data(), 8);
    std::memcpy(&now, remote.data() + 8, 8);
    return std::pair{orig, now};
  };
  // 100 + 5 = 105; the original 100 comes back.
  CHECK(run_atomic(WrOpcode::AtomicFetchAndAdd, 5, 0) == std::pair<uint64_t, uint64_t>{100, 105});
  // compare 105 matches: swapped to 7; original 105 back.
  CHECK(run_atomic(WrOpcode::AtomicCmpAndSwp, 105, 7) == std::pair<uint64_t, uint64_t>{105, 7});
  // compare 1 does not match 7: memory unchanged, original 7 back.
  CHECK(run_atomic(WrOpcode::AtomicCmpAndSwp, 1, 99) == std::pair<uint64_t, uint64_t>{7, 7});
  REQUIRE(p.a.wcs.size() == 3);
  CHECK(p.a.wcs[0].wc.opcode == WcOpcode::FetchAdd);
  CHECK(p.a.wcs[1].wc.opcode == WcOpcode::CompSwap);
  for (auto& c : p.a.wcs) CHECK(c.wc.status == WcStatus::Success);
  CHECK(remote[0] == 0);  // the neighbouring word is untouched
}

TEST_CASE("ud: a send lands after the 40 B GRH; a wrong Q_Key is dropped") {
  QpParams qp;
  qp.type = QpType::UD;
  Pair p(qp);
  auto src = pattern(1000, 1);
  std::vector<uint8_t> dst(2000, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  RecvWr rr;
  rr.sgl = {sge_of(dst, kd.lkey)};
  REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey)};
  wr.av.is_global = true;
  wr.av.dgid = gid_of(Pair::kIpB);
  wr.remote_qpn = p.b.qpn;
  wr.remote_qkey = 0x22222222;  // not B's Q_Key (0x11111111): dropped
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  wr.remote_qkey = 0x11111111;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.b.wcs.size() == 1);
  CHECK(p.b.wcs[0].wc.status == WcStatus::Success);
  CHECK(p.b.wcs[0].wc.byte_len == 1040);  // 40 B GRH + 1000 B
  CHECK(p.b.wcs[0].wc.src_qp == p.a.qpn);
  CHECK(p.b.wcs[0].wc.wc_flags == kWcGrh);
  CHECK(std::memcmp(dst.data() + 40, src.data(), 1000) == 0);
  CHECK(p.a.wcs.size() == 2);  // UD completes on transmit, delivered or not
  // A UD message above the MTU (4096) fails locally.
  std::vector<uint8_t> big(5000, 1);
  auto kb = p.reg(p.a, big);
  wr.sgl = {sge_of(big, kb.lkey)};
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 3);
  CHECK(p.a.wcs[2].wc.status == WcStatus::LocLenErr);
}

namespace {

// A UD pair on InfiniBand: b posts one receive of `dst`, a sends `src` to b (by LID).
// Returns the send WR, not yet posted, for the caller to amend.
SendWr ud_ib_send(Pair& p, const QpParams& qp, std::vector<uint8_t>& src, std::vector<uint8_t>& dst) {
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  RecvWr rr;
  rr.sgl = {sge_of(dst, kd.lkey)};
  REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.sgl = {sge_of(src, ks.lkey)};
  wr.av.dlid = static_cast<uint16_t>(p.addr_b);
  wr.remote_qpn = p.b.qpn;
  wr.remote_qkey = qp.qkey;
  return wr;
}

}  // namespace

TEST_CASE("ud on InfiniBand: the payload starts at offset 40 with or without a GRH") {
  // man ibv_post_recv: for a UD QP the GRH goes into the first 40 bytes of the buffer and
  // "in all cases, the actual data of the incoming message will start at an offset of 40
  // bytes"; without a GRH those bytes are undefined. The completion's byte_len counts the
  // 40 bytes of GRH space either way, and IBV_WC_GRH (man ibv_poll_cq: "GRH is present")
  // is set only when one arrived. On IB a UD send carries a GRH only when its address
  // vector is_global (IBTA 9.2: the GRH is present when LRH.LNH says so).
  QpParams qp;
  qp.type = QpType::UD;
  Pair p(qp, us(1), net::LinkLayer::InfiniBand);
  const uint32_t len = 300;
  auto src = pattern(len, 3);
  std::vector<uint8_t> dst(40 + len, 0xee);
  SendWr wr = ud_ib_send(p, qp, src, dst);
  bool global = false;
  SUBCASE("not global: no GRH") {}
  SUBCASE("is_global: a GRH") {
    global = true;
    wr.av.is_global = true;
    wr.av.dgid = gid_of(p.addr_b);
  }
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.b.wcs.size() == 1);
  const Completion& c = p.b.wcs[0].wc;
  CHECK(c.status == WcStatus::Success);
  CHECK(c.byte_len == 40 + len);
  CHECK(c.wc_flags == (global ? uint32_t{kWcGrh} : 0u));
  CHECK(c.slid == p.addr_a);
  CHECK(std::memcmp(dst.data() + 40, src.data(), len) == 0);
  // With a GRH its first byte is IPVer 6 in the high nibble (IBTA 8.3.1).
  if (global) CHECK((dst[0] >> 4) == 6);
}

TEST_CASE("ud: a receive buffer without room for 40 B of GRH space and the payload fails") {
  // The payload goes at offset 40 (man ibv_post_recv), so 40 + len bytes are needed; a
  // shorter scatter list is a local length error (man ibv_poll_cq: IBV_WC_LOC_LEN_ERR).
  QpParams qp;
  qp.type = QpType::UD;
  Pair p(qp, us(1), net::LinkLayer::InfiniBand);
  auto src = pattern(100, 5);
  std::vector<uint8_t> dst(40 + 99, 0);
  SendWr wr = ud_ib_send(p, qp, src, dst);
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.b.wcs.size() == 1);
  CHECK(p.b.wcs[0].wc.status == WcStatus::LocLenErr);
}

TEST_CASE("packet: RoCEv2 addressing and wire size of a 200 B UD send") {
  QpParams qp;
  qp.type = QpType::UD;
  Pair p(qp);
  nic::RdmaPacket seen;
  p.a.wire->drop = [&](const nic::RdmaPacket& pk) { seen = pk; return true; };
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.send_flags = kSendInline;
  wr.inline_data.assign(200, 1);
  wr.av.dgid = gid_of(Pair::kIpB);
  wr.av.traffic_class = 26 << 2;  // DSCP 26 (ECN bits 0) -> priority 26 >> 3 = 3
  wr.remote_qpn = p.b.qpn;
  wr.remote_qkey = 0x11111111;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  CHECK(seen.src == Pair::kIpA);
  CHECK(seen.dst == Pair::kIpB);  // from the IPv4-mapped dgid
  CHECK(seen.priority == 3);
  CHECK(seen.bth.opcode == 0x64);  // UD SEND ONLY
  // 14 Eth + 20 IPv4 + 8 UDP + 12 BTH + 8 DETH + 200 + 4 ICRC + 4 FCS = 270 frame bytes;
  // + 8 preamble + 12 IFG = 290 on the wire.
  CHECK(seen.frame_bytes == 270);
  CHECK(seen.wire_bytes == 290);
  CHECK(seen.udp_src_port >= 0xc000);
}

TEST_CASE("rc: ACKs are coalesced every ack_every (16) packets and at the message end") {
  QpParams qp;
  qp.mtu = 3;  // 1024
  Pair p(qp);
  auto src = pattern(40 * 1024, 8);
  std::vector<uint8_t> dst(40 * 1024, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  SendWr wr;
  wr.opcode = WrOpcode::RdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey)};
  wr.remote_addr = reinterpret_cast<uint64_t>(dst.data());
  wr.rkey = kd.rkey;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  CHECK(dst == src);
  // 40 packets: ACKs after packets 16, 32 and 40.
  CHECK(p.b.hca->counters().acks_sent == 3);
  CHECK(p.a.hca->counters().tx_packets == 40);
}

TEST_CASE("rc: a 64 KiB WRITE lands with one DMA write, also when a middle packet is lost") {
  Pair p;  // MTU 4096: 64 KiB is 16 packets
  auto src = pattern(65536, 9);
  std::vector<uint8_t> dst(65536, 0);
  LocalMemory counting;  // counts the DMA writes reaching it
  auto ks = p.reg(p.a, src);
  MrKeys kd;
  const auto daddr = reinterpret_cast<uint64_t>(dst.data());
  REQUIRE(p.b.hca->reg_mr(p.b.pd, &counting, daddr, dst.size(), daddr,
                          kAccessLocalWrite | kAccessRemoteWrite, &kd) == 0);
  SendWr wr;
  wr.opcode = WrOpcode::RdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.sgl = {sge_of(src, ks.lkey)};
  wr.remote_addr = daddr;
  wr.rkey = kd.rkey;
  int n = 0;
  SUBCASE("no loss") {}
  SUBCASE("packet 5 of 16 lost once: go-back-N resends 5..16, still contiguous") {
    p.a.wire->drop = [&](const nic::RdmaPacket&) { return ++n == 5; };
  }
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.a.wcs.size() == 1);
  CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  CHECK(dst == src);
  // The 16 packets' payloads are consecutive slices of one gathered buffer and land at
  // consecutive addresses, so the responder copies them with a single write at the end.
  CHECK(counting.writes == 1);
}

TEST_CASE("rc: WRITEs from timing-only memory carry no bytes, keep their timing and land as zeros") {
  // timing_memory.h: TimingMemory keeps no bytes, so a message gathered from it has a null payload
  // while its packets keep their sizes; null payload bytes are zeros where they land.
  Pair real, timing;  // the same 64 KiB WRITE, from real memory and from timing-only memory
  auto src = pattern(65536, 3);
  std::vector<uint8_t> dst_real(65536, 0xee), dst_timing(65536, 0xee);
  TimingMemory none;
  std::vector<size_t> real_sizes, timing_sizes;
  real.a.wire->drop = [&](const nic::RdmaPacket& p) {
    real_sizes.push_back(p.wire_bytes);
    return false;
  };
  timing.a.wire->drop = [&](const nic::RdmaPacket& p) {
    timing_sizes.push_back(p.wire_bytes);
    CHECK(p.payload_data() == nullptr);  // no bytes travel
    return false;
  };
  auto write = [&](Pair& p, MemorySpace* smem, std::vector<uint8_t>& dst) {
    MrKeys ks, kd;
    const auto saddr = reinterpret_cast<uint64_t>(src.data());
    REQUIRE(p.a.hca->reg_mr(p.a.pd, smem, saddr, src.size(), saddr, kAccessLocalWrite, &ks) == 0);
    kd = p.reg(p.b, dst);
    SendWr wr;
    wr.opcode = WrOpcode::RdmaWrite;
    wr.send_flags = kSendSignaled;
    wr.sgl = {sge_of(src, ks.lkey)};
    wr.remote_addr = reinterpret_cast<uint64_t>(dst.data());
    wr.rkey = kd.rkey;
    REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
    p.engine.run();
    REQUIRE(p.a.wcs.size() == 1);
    CHECK(p.a.wcs[0].wc.status == WcStatus::Success);
  };
  write(real, &real.mem, dst_real);
  write(timing, &none, dst_timing);
  CHECK(dst_real == src);
  CHECK(dst_timing == std::vector<uint8_t>(65536, 0));
  CHECK(timing_sizes.size() == 16);  // 64 KiB at MTU 4096
  CHECK(timing_sizes == real_sizes);
  CHECK(timing.a.wcs[0].at == real.a.wcs[0].at);  // same completion time
}

TEST_CASE("rc: a SEND with IBV_SEND_SOLICITED marks its receive completion solicited") {
  // ibv_post_send(3): IBV_SEND_SOLICITED sets the solicited event indicator (BTH.SE, IBTA
  // 9.2) on the message's last packet; the receiver's CQ, armed with
  // ibv_req_notify_cq(cq, 1), raises an event for such a completion only.
  Pair p;
  auto src = pattern(9000, 4);  // 3 packets at MTU 4096: SE is on the last one
  std::vector<uint8_t> dst(9000, 0);
  auto ks = p.reg(p.a, src);
  auto kd = p.reg(p.b, dst);
  RecvWr rr;
  rr.sgl = {sge_of(dst, kd.lkey)};
  REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  REQUIRE(p.b.hca->post_recv(p.b.qpn, rr) == 0);
  SendWr wr;
  wr.opcode = WrOpcode::Send;
  wr.sgl = {sge_of(src, ks.lkey)};
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  wr.send_flags = kSendSolicited;
  REQUIRE(p.a.hca->post_send(p.a.qpn, wr) == 0);
  p.engine.run();
  REQUIRE(p.b.wcs.size() == 2);
  CHECK_FALSE(p.b.wcs[0].wc.solicited);
  CHECK(p.b.wcs[1].wc.solicited);
  CHECK(dst == src);
}
