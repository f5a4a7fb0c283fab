// CM MAD layouts against IBTA vol. 1 ch. 12: byte offsets are the attribute's (tables 106ff,
// as the kernel's ibta_vol1_c12.h lists them) plus the 24-byte MAD header.
#include <doctest/doctest.h>

#include "lib/daemon/cm_mad.h"

using namespace rdmasim::daemon;

TEST_CASE("cm_mad: private data sizes are IBTA's") {
  CHECK(cm::private_data_bytes(cm::Attr::Req) == 92);
  CHECK(cm::private_data_bytes(cm::Attr::Rep) == 196);
  CHECK(cm::private_data_bytes(cm::Attr::Rtu) == 224);
  CHECK(cm::private_data_bytes(cm::Attr::Rej) == 148);
  CHECK(cm::private_data_bytes(cm::Attr::Dreq) == 220);
  CHECK(cm::private_data_bytes(cm::Attr::Drep) == 224);
  CHECK(cm::private_data_bytes(cm::Attr::SidrReq) == 216);
  CHECK(cm::private_data_bytes(cm::Attr::SidrRep) == 136);
}

TEST_CASE("cm_mad: a REQ's fields sit at IBTA's offsets and decode back") {
  cm::Message m;
  m.attr = cm::Attr::Req;
  m.tid = 0x0102030405060708ull;
  m.local_comm_id = 0xa1b2c3d4;
  m.service_id = cm::service_id(0x0106, 7174);  // RDMA_PS_TCP, rping's port
  m.qpn = 0x123456;
  m.responder_resources = 4;
  m.psn = 0xabcdef;
  m.local_cm_response_timeout = 20;
  m.retry_count = 7;
  m.max_cm_retries = 15;
  m.mtu = 5;
  m.rnr_retry_count = 7;
  m.private_len = 3;
  m.private_data[0] = 'a', m.private_data[1] = 'b', m.private_data[2] = 'c';
  const auto p = cm::encode(m);
  REQUIRE(p->size() == 256);
  const uint8_t* b = p->data();
  CHECK(b[0] == 1);      // base version
  CHECK(b[1] == 0x07);   // management class: CM
  CHECK(b[2] == 2);      // class version
  CHECK(b[3] == 0x03);   // method: Send
  CHECK(b[8] == 0x01);   // TID, big-endian
  CHECK(b[15] == 0x08);
  CHECK(b[16] == 0x00);  // attribute ID 0x0010
  CHECK(b[17] == 0x10);
  CHECK(b[24] == 0xa1);  // Local Communication ID at 0
  CHECK(b[27] == 0xd4);
  // Service ID at 8: 0x0000000001061c06 (port 7174 = 0x1c06).
  CHECK(b[32 + 5] == 0x06);
  CHECK(b[32 + 6] == 0x1c);
  CHECK(b[32 + 7] == 0x06);
  CHECK(b[24 + 32] == 0x12);  // Local QPN at 32 (24 bits), then Responder Resources
  CHECK(b[24 + 34] == 0x56);
  CHECK(b[24 + 35] == 4);
  CHECK(b[24 + 44] == 0xab);  // Starting PSN at 44
  CHECK(b[24 + 47] == (20 << 3 | 7));  // Local CM Response Timeout (5) | Retry Count (3)
  CHECK(b[24 + 50] == (5 << 4 | 7));   // Path MTU (4) | RDC (1) | RNR Retry Count (3)
  CHECK(b[24 + 51] == 15 << 4);        // Max CM Retries (4) | SRQ (1) | ...
  CHECK(b[24 + 140] == 'a');           // private data at 140
  const auto d = cm::decode(b, p->size());
  REQUIRE(d);
  CHECK(d->attr == cm::Attr::Req);
  CHECK(d->tid == m.tid);
  CHECK(d->local_comm_id == m.local_comm_id);
  CHECK(d->service_id == 0x0000000001061c06ull);
  CHECK(d->qpn == m.qpn);
  CHECK(d->psn == m.psn);
  CHECK(d->responder_resources == 4);
  CHECK(d->local_cm_response_timeout == 20);
  CHECK(d->retry_count == 7);
  CHECK(d->max_cm_retries == 15);
  CHECK(d->mtu == 5);
  CHECK(d->private_len == 92);
  CHECK(d->private_data[2] == 'c');
}

TEST_CASE("cm_mad: a REJ carries its reason at 10 and private data at 84") {
  cm::Message m;
  m.attr = cm::Attr::Rej;
  m.local_comm_id = 1;
  m.remote_comm_id = 2;
  m.reason = cm::kRejConsumer;
  m.private_len = 1;
  m.private_data[0] = 0x5a;
  const auto p = cm::encode(m);
  CHECK(p->data()[24 + 10] == 0);
  CHECK(p->data()[24 + 11] == 28);
  CHECK(p->data()[24 + 84] == 0x5a);
  const auto d = cm::decode(p->data(), p->size());
  REQUIRE(d);
  CHECK(d->reason == 28);
  CHECK(d->remote_comm_id == 2);
  CHECK(d->private_len == 148);
}

TEST_CASE("cm_mad: what is not a CM MAD does not decode") {
  cm::Message m;
  m.attr = cm::Attr::Rtu;
  auto p = cm::encode(m);
  {
    std::vector<uint8_t> b(p->begin(), p->end());
    CHECK(cm::decode(b.data(), b.size()));
    CHECK_FALSE(cm::decode(b.data(), 255));
    b[1] = 0x03;  // the SA's class
    CHECK_FALSE(cm::decode(b.data(), b.size()));
    b[1] = 0x07;
    b[17] = 0x30;  // an attribute the CM does not define
    CHECK_FALSE(cm::decode(b.data(), b.size()));
  }
}

TEST_CASE("cm_mad: rdma_cm's IP header (version 0, IPv4, port, addresses in the unions' last 4 bytes)") {
  uint8_t h[cm::kIpHeaderBytes];
  cm::IpHeader ip{0x0201017f, 0x0101017f, 0x1c06};  // network order as in sockaddr_in
  cm::put_ip_header(ip, h);
  CHECK(h[0] == 0);
  CHECK(h[1] == 0x40);
  CHECK(h[16] == 0x7f);
  CHECK(h[19] == 0x02);
  CHECK(h[32] == 0x7f);
  CHECK(h[35] == 0x01);
  const auto back = cm::get_ip_header(h);
  REQUIRE(back);
  CHECK(back->src_ip == ip.src_ip);
  CHECK(back->dst_ip == ip.dst_ip);
  CHECK(back->src_port == ip.src_port);
}
