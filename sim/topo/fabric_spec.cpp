#include "sim/topo/fabric_spec.h"

#include <arpa/inet.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "sim/net/headers.h"
#include "sim/nic/iwarp.h"
#include "sim/topo/config_reader.h"
#include "sim/topo/routing.h"

namespace rdmasim::topo {
namespace {

using nlohmann::json;

constexpr uint64_t kMellanoxOui = 0x0002c9;

// iWARP fabrics: "mtu" is the Ethernet MTU (default 1500, jumbo up to 9216).
constexpr int64_t kIwarpDefaultMtu = 1500, kIwarpMinMtu = 576, kIwarpMaxMtu = 9216;
// iWARP QPNs are (NIC number << 16) | a 16-bit number from 2 (HcaConfig::qpn_base).
constexpr size_t kIwarpMaxNics = 255;
constexpr uint32_t kIwarpMaxQp = 0xffff - 1;

// The MTU a port reports (ibv_port_attr active_mtu/max_mtu). An iWARP device reports the
// largest IB MTU not above its netdev's MTU (siw and iw_cxgb4 use ib_mtu_int_to_enum():
// 1500 -> 1024, 9000 -> 4096).
uint32_t port_mtu(net::LinkLayer ll, uint32_t mtu) {
  if (ll != net::LinkLayer::IWarp) return mtu;
  uint32_t m = 4096;
  while (m > 256 && m > mtu) m /= 2;
  return m;
}

// "dwrr_weights": 8 integers 0..1000, one per traffic class (0 = strict priority).
void read_weights(ConfigReader& r, const json& j, const std::string& path,
                  std::array<uint32_t, 8>& w) {
  if (!j.contains("dwrr_weights")) return;
  const json& a = j["dwrr_weights"];
  const std::string p = join(path, "dwrr_weights");
  if (!a.is_array() || a.size() != 8) {
    r.error(p, a, "is not an array of 8", "8 weights 0..1000, one per traffic class");
    return;
  }
  for (size_t c = 0; c < 8; ++c) {
    if (!a[c].is_number_integer() || a[c].get<int64_t>() < 0 || a[c].get<int64_t>() > 1000)
      r.error(index(p, c), a[c], "is not a weight", "an integer 0..1000 (0 = strict priority)");
    else
      w[c] = static_cast<uint32_t>(a[c].get<int64_t>());
  }
}

// Per-NIC parameters: the "nic" defaults object and each host's NIC entry share these keys.
struct NicParams {
  uint32_t vendor_id = 0x02c9;
  uint32_t vendor_part_id = 4123;   // ConnectX-6
  uint32_t hw_ver = 0;
  std::string fw_ver = "rdmasim";
  uint64_t queue_bytes = 1 << 20;
  std::array<uint32_t, 8> dwrr_weights{};
  uint32_t ib_vl_buffer_bytes = 128 * 1024;
  net::IbVlConfig vls;   // InfiniBand: set to net::default_ib_vls() before reading
  nic::HcaConfig hca;
  bool iwarp = false;  // the fabric's link layer is iWARP ("tcp" is allowed)
  // Receive buffer ("rx_drain_gbps", "rx_buffer_kb", "pfc"); finished per NIC by finish_rx.
  net::HostRxConfig rx;
  bool rx_buffer_given = false;
  std::optional<uint64_t> rx_xoff_bytes, rx_xon_bytes;   // absent: from the buffer size
};

#define RDMASIM_NIC_KEYS "vendor_id", "vendor_part_id", "hw_ver", "fw_ver", "queue_kb", \
    "wqe_latency_ns", "rx_latency_ns", "ack_every", "limits", "dwrr_weights", "ib_vl_buffer_kb", "cc", "vls", "tcp", \
    "rx_drain_gbps", "rx_buffer_kb", "pfc"

// nic::HcaConfig limits settable from "limits"; each must be >= 1.
struct LimitField {
  const char* key;
  uint32_t nic::HcaConfig::*field;
};
constexpr LimitField kLimits[] = {
    {"max_qp", &nic::HcaConfig::max_qp},           {"max_qp_wr", &nic::HcaConfig::max_qp_wr},
    {"max_sge", &nic::HcaConfig::max_sge},         {"max_cq", &nic::HcaConfig::max_cq},
    {"max_cqe", &nic::HcaConfig::max_cqe},         {"max_mr", &nic::HcaConfig::max_mr},
    {"max_pd", &nic::HcaConfig::max_pd},           {"max_srq", &nic::HcaConfig::max_srq},
    {"max_srq_wr", &nic::HcaConfig::max_srq_wr},   {"max_srq_sge", &nic::HcaConfig::max_srq_sge},
    {"max_qp_rd_atom", &nic::HcaConfig::max_qp_rd_atom},
    {"max_inline_data", &nic::HcaConfig::max_inline_data},
};

void read_limits(ConfigReader& r, const json& j, const std::string& path, nic::HcaConfig& hca) {
  if (!r.object(j, path, {"max_qp", "max_qp_wr", "max_sge", "max_cq", "max_cqe", "max_mr",
                          "max_pd", "max_srq", "max_srq_wr", "max_srq_sge", "max_qp_rd_atom",
                          "max_inline_data", "max_mr_size", "atomics"}))
    return;
  for (const LimitField& f : kLimits) {
    hca.*f.field = static_cast<uint32_t>(
        r.integer(j, f.key, path, hca.*f.field, f.field == &nic::HcaConfig::max_inline_data ? 0 : 1,
                  UINT32_MAX, "an integer count >= 1 (0 allowed for max_inline_data)"));
  }
  if (j.contains("max_mr_size")) {
    hca.max_mr_size = static_cast<uint64_t>(
        r.integer(j, "max_mr_size", path, std::nullopt, 1, INT64_MAX, "a size in bytes >= 1"));
  }
  hca.atomics = r.boolean(j, "atomics", path, hca.atomics);
}

// "cc": {"algorithm": "none"|"dcqcn", "preset": "paper"|"vendor", DCQCN parameters...}.
// The preset (if any) sets every parameter first; the other keys then override it.
void read_cc(ConfigReader& r, const json& j, const std::string& path, nic::CcConfig& cc) {
  if (!r.object(j, path, {"algorithm", "preset", "g", "initial_alpha", "alpha_update_us",
                          "rate_timer_us", "byte_counter_bytes", "fast_recovery_steps",
                          "ai_rate_mbps", "hai_rate_mbps", "min_rate_mbps",
                          "rate_reduce_period_us", "cnp_interval_us", "cnp_priority",
                          "cnp_dscp", "max_samples"}))
    return;
  const std::string algo = r.string(j, "algorithm", path, nic::cc_algorithm_name(cc.algorithm),
                                    "\"none\" or \"dcqcn\"");
  if (algo == "none") cc.algorithm = nic::CcAlgorithm::None;
  else if (algo == "dcqcn") cc.algorithm = nic::CcAlgorithm::Dcqcn;
  else r.error(join(path, "algorithm"), json(algo), "is not a congestion control algorithm",
               "\"none\" or \"dcqcn\"");
  if (j.contains("preset")) {
    const std::string preset = r.string(j, "preset", path, std::nullopt, "\"paper\" or \"vendor\"");
    if (!nic::dcqcn_preset(preset, &cc.dcqcn))
      r.error(join(path, "preset"), json(preset), "is not a DCQCN preset", "\"paper\" or \"vendor\"");
  }
  nic::DcqcnParams& d = cc.dcqcn;
  auto time_us = [&](const char* key, Time& t, double min, bool exclusive) {
    t = from_ns_double(1000.0 * r.number(j, key, path, to_us(t), min, exclusive, 1e9,
                                         exclusive ? "a time in us > 0" : "a time in us >= 0"));
  };
  auto rate_mbps = [&](const char* key, Rate& v) {
    v = Rate::mbps(r.number(j, key, path, static_cast<double>(v.bps) / 1e6, 0, true, 1e7,
                            "a rate in Mb/s > 0"));
  };
  d.g = r.number(j, "g", path, d.g, 0, true, 1, "a gain in (0, 1]");
  d.initial_alpha = r.number(j, "initial_alpha", path, d.initial_alpha, 0, false, 1, "alpha in [0, 1]");
  time_us("alpha_update_us", d.alpha_period, 0, true);
  time_us("rate_timer_us", d.rate_timer, 0, true);
  d.byte_counter = static_cast<uint64_t>(r.integer(j, "byte_counter_bytes", path,
                                                   static_cast<int64_t>(d.byte_counter), 0, INT64_MAX,
                                                   "a byte count >= 0 (0 disables the byte counter)"));
  d.fast_recovery_steps = static_cast<uint32_t>(r.integer(
      j, "fast_recovery_steps", path, d.fast_recovery_steps, 0, 1000, "a step count 0..1000"));
  rate_mbps("ai_rate_mbps", d.ai_rate);
  rate_mbps("hai_rate_mbps", d.hai_rate);
  rate_mbps("min_rate_mbps", d.min_rate);
  time_us("rate_reduce_period_us", d.rate_reduce_period, 0, false);
  time_us("cnp_interval_us", d.cnp_interval, 0, false);
  d.cnp_priority = static_cast<uint8_t>(
      r.integer(j, "cnp_priority", path, d.cnp_priority, 0, 7, "a traffic class 0..7"));
  d.cnp_dscp = static_cast<uint8_t>(r.integer(j, "cnp_dscp", path, d.cnp_dscp, 0, 63, "a DSCP 0..63"));
  cc.max_samples = static_cast<uint32_t>(r.integer(j, "max_samples", path, cc.max_samples, 0,
                                                   100'000'000, "a sample count >= 0"));
}

// "vls": InfiniBand virtual lanes of a port: {"data_vls", "sl2vl", "high", "low",
// "high_limit"} (see net::IbVlConfig). Changing data_vls restarts from
// net::default_ib_vls(data_vls); the other keys then override it.
void read_arb_table(ConfigReader& r, const json& e, const char* key, const std::string& path,
                    uint8_t data_vls, std::vector<net::VlArbEntry>& out) {
  if (!e.contains(key)) return;
  const std::string p = join(path, key);
  const json& a = e[key];
  const char* expected = "an array of at most 64 {\"vl\": VL, \"weight\": 0..255 (64-byte units)}";
  if (!a.is_array() || a.size() > 64) {
    r.error(p, a, "is not a VL arbitration table", expected);
    return;
  }
  out.clear();
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string ip = index(p, i);
    if (!r.object(a[i], ip, {"vl", "weight"})) continue;
    net::VlArbEntry entry;
    entry.vl = static_cast<uint8_t>(r.integer(a[i], "vl", ip, std::nullopt, 0, data_vls - 1,
                                              "a data VL 0.." + std::to_string(data_vls - 1)));
    entry.weight = static_cast<uint8_t>(
        r.integer(a[i], "weight", ip, std::nullopt, 0, 255, "a weight 0..255 in 64-byte units"));
    out.push_back(entry);
  }
}

void read_vls(ConfigReader& r, const json& j, const std::string& path, bool ib, net::IbVlConfig& v) {
  if (!j.contains("vls")) return;
  const std::string p = join(path, "vls");
  if (!ib) {
    r.error(p, "is InfiniBand only; expected no \"vls\" unless link_layer is \"ib\"");
    return;
  }
  const json& e = j["vls"];
  if (!r.object(e, p, {"data_vls", "sl2vl", "high", "low", "high_limit"})) return;
  const size_t errors = r.errors().size();
  const int64_t n = r.integer(e, "data_vls", p, v.data_vls, 1, 15, "1, 2, 4 or 8 data VLs");
  if (r.errors().size() != errors) return;
  if (n == 15) {
    r.error(join(p, "data_vls"), json(n), "is not modelled (an egress port has 8 VL queues)", "1, 2, 4 or 8");
    return;
  }
  if (n != 1 && n != 2 && n != 4 && n != 8) {
    r.error(join(p, "data_vls"), json(n), "is not a data VL count", "1, 2, 4 or 8 (IBTA VLCap)");
    return;
  }
  if (n != v.data_vls) v = net::default_ib_vls(static_cast<uint8_t>(n));
  if (e.contains("sl2vl")) {
    const json& a = e["sl2vl"];
    const std::string sp = join(p, "sl2vl");
    if (!a.is_array() || a.size() != net::kMaxSl) {
      r.error(sp, a, "is not an array of 16", "16 VLs, the VL of SL 0..15");
    } else {
      for (size_t sl = 0; sl < a.size(); ++sl) {
        if (!a[sl].is_number_integer() || a[sl].get<int64_t>() < 0 || a[sl].get<int64_t>() >= n)
          r.error(index(sp, sl), a[sl], "is not a data VL", "an integer 0.." + std::to_string(n - 1));
        else
          v.sl2vl[sl] = static_cast<uint8_t>(a[sl].get<int64_t>());
      }
    }
  }
  read_arb_table(r, e, "high", p, v.data_vls, v.high);
  read_arb_table(r, e, "low", p, v.data_vls, v.low);
  v.high_limit = static_cast<uint8_t>(r.integer(e, "high_limit", p, v.high_limit, 0, 255,
      "LimitOfHighPriority 0..255 in 4096-byte units (255 = unlimited)"));
  if (r.errors().size() != errors) return;
  // A VL some SL maps to but no entry serves would hold its packets forever.
  for (int sl = 0; sl < net::kMaxSl; ++sl) {
    const uint8_t vl = v.sl2vl[sl];
    bool served = false;
    for (const auto* t : {&v.high, &v.low})
      for (const net::VlArbEntry& x : *t) served |= x.vl == vl && x.weight > 0;
    if (!served) {
      r.error(p, "VL " + std::to_string(vl) + " (of SL " + std::to_string(sl) +
                     ") has no high or low entry with weight > 0; expected every VL an SL maps to in an arbitration table");
      return;
    }
  }
}

// "tcp": the TCP model under iWARP (sim/nic/iwarp_tcp.h). The MSS is not a key: it comes
// from the fabric's Ethernet MTU.
void read_tcp(ConfigReader& r, const json& j, const std::string& path, nic::iwarp::TcpConfig& t) {
  if (!r.object(j, path, {"init_cwnd_segments", "rcv_wnd_kb", "initial_rto_us", "min_rto_us",
                          "max_rto_ms", "max_retries", "dupack_threshold", "dctcp", "dctcp_g"}))
    return;
  t.init_cwnd_segments = static_cast<uint32_t>(r.integer(
      j, "init_cwnd_segments", path, t.init_cwnd_segments, 1, 10000, "a segment count 1..10000"));
  // The window field is 16 bits scaled by 2^7 (sim/nic/iwarp.cpp): at most 65535 * 128 bytes.
  t.rcv_wnd = 1024 * static_cast<uint32_t>(r.integer(j, "rcv_wnd_kb", path, t.rcv_wnd / 1024, 1, 8191,
                                                     "a receive window in KiB 1..8191 (window scale 7)"));
  auto time_us = [&](const char* key, Time& v, double scale, const char* unit) {
    v = from_ns_double(scale * r.number(j, key, path, static_cast<double>(v) / (scale * kNanosecond), 0,
                                        true, 1e7, unit));
  };
  time_us("initial_rto_us", t.initial_rto, 1e3, "a time in us > 0");
  time_us("min_rto_us", t.min_rto, 1e3, "a time in us > 0");
  time_us("max_rto_ms", t.max_rto, 1e6, "a time in ms > 0");
  if (t.max_rto < t.min_rto)
    r.error(join(path, "max_rto_ms"), j.value("max_rto_ms", json(static_cast<double>(t.max_rto) / kMillisecond)),
            "is below min_rto_us (" + json(static_cast<double>(t.min_rto) / kMicrosecond).dump() + ")",
            "max_rto_ms >= min_rto_us / 1000");
  t.max_retries = static_cast<uint32_t>(
      r.integer(j, "max_retries", path, t.max_retries, 1, 1000, "an RTO count 1..1000"));
  t.dupack_threshold = static_cast<uint32_t>(r.integer(j, "dupack_threshold", path, t.dupack_threshold,
                                                       1, 1000, "a duplicate ACK count 1..1000"));
  t.ecn = r.boolean(j, "dctcp", path, t.ecn);
  t.dctcp_g = r.number(j, "dctcp_g", path, t.dctcp_g, 0, true, 1, "a gain in (0, 1]");
}

// The NIC's receive buffer (net::HostRxConfig): "rx_drain_gbps", "rx_buffer_kb" and "pfc"
// {"enabled", "xoff_kb", "xon_kb", "classes"}. Ethernet only: an InfiniBand NIC returns
// credits instead of pausing.
uint8_t read_class_mask(ConfigReader& r, const json& e, const std::string& path, uint8_t dflt);  // below

void read_rx(ConfigReader& r, const json& j, const std::string& path, bool ib, NicParams& p) {
  if (ib) {
    for (const char* key : {"rx_drain_gbps", "rx_buffer_kb", "pfc"})
      if (j.contains(key))
        r.error(join(path, key), j[key], "is the Ethernet receive model (an InfiniBand NIC returns credits)",
                "no rx_drain_gbps, rx_buffer_kb or pfc when link_layer is \"ib\"");
    return;
  }
  if (j.contains("rx_drain_gbps"))
    p.rx.drain_rate = Rate::gbps(r.number(j, "rx_drain_gbps", path, std::nullopt, 0, true, 100'000,
                                          "a drain rate toward the host in Gb/s > 0 (absent: infinitely fast)"));
  if (j.contains("rx_buffer_kb")) {
    p.rx_buffer_given = true;
    p.rx.buffer_bytes = 1024 * static_cast<uint64_t>(r.integer(
        j, "rx_buffer_kb", path, std::nullopt, 1, 1 << 20, "a receive buffer size in KiB >= 1"));
  }
  if (!j.contains("pfc")) return;
  const std::string pp = join(path, "pfc");
  const json& e = j["pfc"];
  if (!r.object(e, pp, {"enabled", "xoff_kb", "xon_kb", "classes"})) return;
  p.rx.pfc = r.boolean(e, "enabled", pp, true);
  const char* size = "a size in KiB >= 0, below rx_buffer_kb";
  if (e.contains("xoff_kb"))
    p.rx_xoff_bytes = 1024 * static_cast<uint64_t>(r.integer(e, "xoff_kb", pp, std::nullopt, 0, 1 << 20, size));
  if (e.contains("xon_kb"))
    p.rx_xon_bytes = 1024 * static_cast<uint64_t>(r.integer(e, "xon_kb", pp, std::nullopt, 0, 1 << 20, size));
  p.rx.class_mask = read_class_mask(r, e, pp, p.rx.class_mask);
}

// The receive settings of one NIC (its entry over the "nic" defaults): xoff defaults to half
// the buffer and xon to half of xoff; a buffer or PFC without a drain rate is an error (an
// infinitely fast receiver never fills).
net::HostRxConfig finish_rx(ConfigReader& r, const std::string& path, const NicParams& p) {
  net::HostRxConfig rx = p.rx;
  if (!rx.drain_rate.bps) {
    if (p.rx_buffer_given)
      r.error(join(path, "rx_buffer_kb"), json(rx.buffer_bytes / 1024), "has no effect without rx_drain_gbps",
              "rx_drain_gbps with it (absent: the host takes packets at once, no buffer)");
    if (rx.pfc)
      r.error(join(path, "pfc"), "has no effect without rx_drain_gbps (an infinitely fast receiver never fills); "
                                 "expected rx_drain_gbps with it, or \"enabled\": false");
    return net::HostRxConfig{};
  }
  rx.xoff_bytes = p.rx_xoff_bytes.value_or(rx.buffer_bytes / 2);
  rx.xon_bytes = p.rx_xon_bytes.value_or(rx.xoff_bytes / 2);
  if (!rx.pfc) return rx;
  if (rx.xoff_bytes >= rx.buffer_bytes)
    r.error(join(path, "pfc.xoff_kb"), json(rx.xoff_bytes / 1024),
            "is not below rx_buffer_kb (" + std::to_string(rx.buffer_bytes / 1024) + ")",
            "xoff_kb < rx_buffer_kb: the bytes above xoff hold what arrives after XOFF");
  if (rx.xon_bytes > rx.xoff_bytes)
    r.error(join(path, "pfc.xon_kb"), json(rx.xon_bytes / 1024),
            "is above xoff_kb (" + std::to_string(rx.xoff_bytes / 1024) + ")", "xon_kb <= xoff_kb");
  return rx;
}

void read_nic_params(ConfigReader& r, const json& j, const std::string& path, bool ib, NicParams& p) {
  p.vendor_id = static_cast<uint32_t>(
      r.integer(j, "vendor_id", path, p.vendor_id, 0, 0xffff, "a PCI vendor id 0..65535"));
  p.vendor_part_id = static_cast<uint32_t>(r.integer(j, "vendor_part_id", path, p.vendor_part_id,
                                                     0, UINT32_MAX, "a PCI device id >= 0"));
  p.hw_ver = static_cast<uint32_t>(
      r.integer(j, "hw_ver", path, p.hw_ver, 0, UINT32_MAX, "an integer >= 0"));
  p.fw_ver = r.string(j, "fw_ver", path, p.fw_ver, "a firmware version string");
  p.queue_bytes = 1024 * static_cast<uint64_t>(r.integer(
      j, "queue_kb", path, static_cast<int64_t>(p.queue_bytes / 1024), 1, 1 << 30,
      "a per-class egress queue size in KiB >= 1"));
  p.hca.wqe_latency = ns(r.integer(j, "wqe_latency_ns", path, p.hca.wqe_latency / kNanosecond, 0,
                                   1'000'000'000, "a latency in ns >= 0"));
  p.hca.rx_latency = ns(r.integer(j, "rx_latency_ns", path, p.hca.rx_latency / kNanosecond, 0,
                                  1'000'000'000, "a latency in ns >= 0"));
  p.hca.ack_every = static_cast<uint32_t>(
      r.integer(j, "ack_every", path, p.hca.ack_every, 1, 1 << 24, "a packet count >= 1"));
  if (j.contains("limits")) read_limits(r, j["limits"], join(path, "limits"), p.hca);
  if (p.iwarp && p.hca.max_qp > kIwarpMaxQp)
    r.error(join(path, "limits.max_qp"), json(p.hca.max_qp), "is more than an iWARP NIC numbers",
            "at most " + std::to_string(kIwarpMaxQp) + " (QPNs are 16-bit per NIC on iWARP)");
  if (p.iwarp && p.hca.atomics)
    r.error(join(path, "limits.atomics"), json(true), "is not an iWARP capability (RDMAP, RFC 5040, has no atomics)",
            "false or absent on an iWARP fabric");
  if (j.contains("cc")) read_cc(r, j["cc"], join(path, "cc"), p.hca.cc);
  if (j.contains("tcp")) {
    if (p.iwarp)
      read_tcp(r, j["tcp"], join(path, "tcp"), p.hca.tcp);
    else
      r.error(join(path, "tcp"), j["tcp"], "is the TCP model of iWARP NICs",
              "no \"tcp\" key unless link_layer is \"iwarp\"");
  }
  read_weights(r, j, path, p.dwrr_weights);
  if (ib && j.contains("dwrr_weights"))
    r.error(join(path, "dwrr_weights"), "is Ethernet scheduling; expected VL arbitration (\"vls\") on InfiniBand");
  p.ib_vl_buffer_bytes = 1024 * static_cast<uint32_t>(r.integer(
      j, "ib_vl_buffer_kb", path, p.ib_vl_buffer_bytes / 1024, 1, 1 << 20,
      "an InfiniBand receive buffer per VL in KiB >= 1"));
  read_vls(r, j, path, ib, p.vls);
  read_rx(r, j, path, ib, p);
}

#define RDMASIM_SWITCH_KEYS "forwarding_latency_ns", "queue_kb", "ecn", "pfc", "dwrr_weights", \
    "ib_vl_buffer_kb", "cut_through", "cut_through_header_bytes", "buffer", "vls", "ingress_arbitration"
#define RDMASIM_LINK_KEYS "rate_gbps", "latency_ns", "loss_rate", "ber", "schedule"

// `classes` of object `e` at `path`: a list of 1..8 distinct traffic classes as a bit mask;
// `dflt` when absent.
uint8_t read_class_mask(ConfigReader& r, const json& e, const std::string& path, uint8_t dflt) {
  if (!e.contains("classes")) return dflt;
  const json& a = e["classes"];
  const std::string cp = join(path, "classes");
  if (!a.is_array() || a.empty() || a.size() > 8) {
    r.error(cp, a, "is not a list of classes", "1 to 8 distinct traffic classes 0..7");
    return dflt;
  }
  uint8_t mask = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number_integer() || a[i].get<int64_t>() < 0 || a[i].get<int64_t>() > 7)
      r.error(index(cp, i), a[i], "is not a traffic class", "an integer 0..7");
    else if (mask & (1u << a[i].get<int64_t>()))
      r.error(index(cp, i), a[i], "is a duplicate", "distinct traffic classes");
    else
      mask |= static_cast<uint8_t>(1u << a[i].get<int64_t>());
  }
  return mask;
}

// The RED ramp keys of `e` (kmin_kb, kmax_kb, pmax) over `c`.
void read_ecn_ramp(ConfigReader& r, const json& e, const std::string& p, net::EcnConfig& c) {
  c.kmin_bytes = 1024 * static_cast<uint64_t>(r.integer(
      e, "kmin_kb", p, static_cast<int64_t>(c.kmin_bytes / 1024), 0, 1 << 30, "a size in KiB >= 0"));
  c.kmax_bytes = 1024 * static_cast<uint64_t>(r.integer(
      e, "kmax_kb", p, static_cast<int64_t>(c.kmax_bytes / 1024), 0, 1 << 30, "a size in KiB >= 0"));
  c.pmax = r.number(e, "pmax", p, c.pmax, 0, false, 1, "a probability in [0, 1]");
  if (c.kmax_bytes < c.kmin_bytes)
    r.error(join(p, "kmax_kb"), json(c.kmax_bytes / 1024), "is below kmin_kb", "kmax_kb >= kmin_kb");
}

// A switch's `ecn` object: one ramp for every class in `classes` (default all), and
// `per_class` {"3": {...}} overriding a class's ramp or `enabled`.
void read_ecn(ConfigReader& r, const json& e, const std::string& p, std::array<net::EcnConfig, 8>& out) {
  if (!r.object(e, p, {"enabled", "kmin_kb", "kmax_kb", "pmax", "classes", "per_class"})) return;
  net::EcnConfig base = out[0];
  base.enabled = r.boolean(e, "enabled", p, true);
  read_ecn_ramp(r, e, p, base);
  const uint8_t mask = read_class_mask(r, e, p, 0xff);
  for (int c = 0; c < 8; ++c) {
    out[c] = base;
    out[c].enabled = base.enabled && (mask >> c & 1);
  }
  if (!e.contains("per_class")) return;
  const std::string pp = join(p, "per_class");
  const json& pc = e["per_class"];
  if (!r.object(pc, pp, {"0", "1", "2", "3", "4", "5", "6", "7"})) return;
  for (const auto& [k, v] : pc.items()) {
    const int c = k[0] - '0';
    const std::string kp = join(pp, k);
    if (!r.object(v, kp, {"enabled", "kmin_kb", "kmax_kb", "pmax"})) continue;
    out[c].enabled = r.boolean(v, "enabled", kp, base.enabled);
    read_ecn_ramp(r, v, kp, out[c]);
  }
}

void read_switch_params(ConfigReader& r, const json& j, const std::string& path, bool ib,
                        net::SwitchConfig& s) {
  s.forwarding_latency = ns(r.integer(j, "forwarding_latency_ns", path,
                                      s.forwarding_latency / kNanosecond, 0, 1'000'000'000,
                                      "a latency in ns >= 0"));
  s.egress.class_limit_bytes = 1024 * static_cast<uint64_t>(r.integer(
      j, "queue_kb", path, static_cast<int64_t>(s.egress.class_limit_bytes / 1024), 1, 1 << 30,
      "a per-class egress queue size in KiB >= 1"));
  read_weights(r, j, path, s.egress.dwrr_weights);
  if (ib && j.contains("dwrr_weights"))
    r.error(join(path, "dwrr_weights"), "is Ethernet scheduling; expected VL arbitration (\"vls\") on InfiniBand");
  read_vls(r, j, path, ib, s.egress.ib);
  if (j.contains("ingress_arbitration")) {
    const std::string a = r.string(j, "ingress_arbitration", path, std::nullopt, "\"round_robin\" or \"fifo\"");
    if (a == "round_robin") s.ingress_round_robin = true;
    else if (a == "fifo") s.ingress_round_robin = false;
    else r.error(join(path, "ingress_arbitration"), json(a), "is not an arbitration", "\"round_robin\" or \"fifo\"");
  }
  s.cut_through = r.boolean(j, "cut_through", path, s.cut_through);
  s.cut_through_header_bytes = static_cast<uint32_t>(r.integer(
      j, "cut_through_header_bytes", path, s.cut_through_header_bytes, 1, 4096,
      "the bytes a cut-through switch reads before forwarding, 1..4096"));
  s.ib_vl_buffer_bytes = 1024 * static_cast<uint32_t>(r.integer(
      j, "ib_vl_buffer_kb", path, s.ib_vl_buffer_bytes / 1024, 1, 1 << 20,
      "an InfiniBand receive buffer per VL in KiB >= 1"));
  if (j.contains("ecn")) read_ecn(r, j["ecn"], join(path, "ecn"), s.egress.ecn);
  if (j.contains("buffer")) {
    const std::string p = join(path, "buffer");
    const json& e = j["buffer"];
    if (r.object(e, p, {"total_kb", "reserved_kb", "alpha"})) {
      net::BufferConfig& c = s.buffer;
      c.total_bytes = 1024 * static_cast<uint64_t>(r.integer(
          e, "total_kb", p, static_cast<int64_t>(c.total_bytes / 1024), 0, 1 << 30,
          "a shared buffer size in KiB >= 0 (0 = no shared buffer)"));
      c.reserved_bytes = 1024 * static_cast<uint64_t>(r.integer(
          e, "reserved_kb", p, static_cast<int64_t>(c.reserved_bytes / 1024), 0, 1 << 30,
          "a reserve per (port, class) queue in KiB >= 0"));
      c.alpha = r.number(e, "alpha", p, c.alpha, 0, false, 1024, "a dynamic-threshold factor in [0, 1024]");
    }
  }
  if (j.contains("pfc")) {
    const std::string p = join(path, "pfc");
    const json& e = j["pfc"];
    if (r.object(e, p, {"enabled", "xoff_kb", "xon_kb", "watchdog", "headroom_kb", "classes"})) {
      net::PfcConfig& c = s.pfc;
      if (e.contains("watchdog")) {
        const std::string wp = join(p, "watchdog");
        const json& w = e["watchdog"];
        if (r.object(w, wp, {"detect_us", "restore_us"})) {
          net::PfcWatchdogConfig& wd = s.egress.watchdog;
          wd.detect = us(r.integer(w, "detect_us", wp, 100, 1, 1'000'000'000, "a storm detection time in us >= 1"));
          wd.restore = us(r.integer(w, "restore_us", wp, 100, 0, 1'000'000'000, "a restoration time in us >= 0"));
        }
      }
      c.enabled = r.boolean(e, "enabled", p, true);
      c.xoff_bytes = 1024 * static_cast<uint64_t>(r.integer(
          e, "xoff_kb", p, static_cast<int64_t>(c.xoff_bytes / 1024), 0, 1 << 30, "a size in KiB >= 0"));
      c.xon_bytes = 1024 * static_cast<uint64_t>(r.integer(
          e, "xon_kb", p, static_cast<int64_t>(c.xon_bytes / 1024), 0, 1 << 30, "a size in KiB >= 0"));
      if (c.xon_bytes > c.xoff_bytes)
        r.error(join(p, "xon_kb"), json(c.xon_bytes / 1024), "is above xoff_kb", "xon_kb <= xoff_kb");
      if (e.contains("headroom_kb")) {
        const json& h = e["headroom_kb"];
        const char* expected = "\"auto\" (from the link's bandwidth-delay product) or a size in KiB >= 0";
        if (h.is_string() && h.get<std::string>() == "auto") {
          c.headroom_limited = c.headroom_auto = true;
        } else if (h.is_number() && h.get<double>() >= 0 && h.get<double>() <= (1 << 30)) {
          c.headroom_limited = true;
          c.headroom_auto = false;
          c.headroom_bytes = static_cast<uint64_t>(std::llround(h.get<double>() * 1024));
        } else {
          r.error(join(p, "headroom_kb"), h, "is not a headroom", expected);
        }
      }
      c.class_mask = read_class_mask(r, e, p, c.class_mask);
    }
  }
}


void read_link_params(ConfigReader& r, const json& j, const std::string& path, LinkSpec& l) {
  l.rate = Rate::gbps(r.number(j, "rate_gbps", path, l.rate.as_gbps(), 0, true, 1e6,
                               "a rate in Gb/s > 0"));
  l.latency = ns(r.integer(j, "latency_ns", path, l.latency / kNanosecond, 0, 1'000'000'000,
                           "a propagation latency in ns >= 0"));
  l.loss_rate = r.number(j, "loss_rate", path, l.loss_rate, 0, false, 1, "a per-packet loss probability in [0, 1]");
  l.ber = r.number(j, "ber", path, l.ber, 0, false, 0.5, "a bit-error rate in [0, 0.5]");
  if (j.contains("schedule")) {
    const std::string p = join(path, "schedule");
    const json& a = j["schedule"];
    if (!a.is_array()) {
      r.error(p, a, "is not an array", "a list of {\"at_ns\": T, \"up\": true|false}");
      return;
    }
    l.schedule.clear();
    Time last = -1;
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string ip = index(p, i);
      if (!r.object(a[i], ip, {"at_ns", "up"})) continue;
      const Time at = ns(r.integer(a[i], "at_ns", ip, std::nullopt, 0, INT64_MAX / kNanosecond,
                                   "a simulated time in ns >= 0"));
      const bool up = r.boolean(a[i], "up", ip, false);
      if (!a[i].contains("up")) r.error(join(ip, "up"), "is missing; expected true or false");
      if (at < last) r.error(join(ip, "at_ns"), a[i].value("at_ns", json()), "is earlier than the previous entry", "times in ascending order");
      last = at;
      l.schedule.emplace_back(at, up);
    }
  }
}

// "link_overrides": {"<link name>": {link keys}}, applied over the link's own settings.
void read_link_overrides(ConfigReader& r, const json& config, const std::string& root,
                         const std::map<std::string, size_t>& names, std::vector<LinkSpec>& links) {
  if (!config.contains("link_overrides")) return;
  const std::string op = join(root, "link_overrides");
  if (!config["link_overrides"].is_object()) {
    r.error(op, config["link_overrides"], "is not an object", "{\"<link name>\": {\"rate_gbps\": ...}}");
    return;
  }
  for (auto it = config["link_overrides"].begin(); it != config["link_overrides"].end(); ++it) {
    const std::string p = join(op, it.key());
    auto n = names.find(it.key());
    if (n == names.end()) {
      r.error(p, "names no link; expected the name of a link (\"<a>-<b>\" unless given)");
      continue;
    }
    if (r.object(it.value(), p, {RDMASIM_LINK_KEYS})) read_link_params(r, it.value(), p, links[n->second]);
  }
}

Routing read_routing(ConfigReader& r, const json& config, const std::string& root,
                     net::LinkLayer ll) {
  const std::string def = ll == net::LinkLayer::InfiniBand ? "up_down" : "min_hop";
  const std::string s = r.string(config, "routing", root, def, "\"min_hop\" or \"up_down\"");
  if (s == "up_down") return Routing::UpDown;
  if (s != "min_hop")
    r.error(join(root, "routing"), json(s), "is not a routing algorithm", "\"min_hop\" or \"up_down\"");
  return Routing::MinHop;
}

// "fat_tree k=4", "leaf_spine 4x2", ... for the summary; "" for explicit nodes and links.
std::string describe_topology(const json& config) {
  if (!config.contains("topology") || !config["topology"].is_object()) return "";
  const json& t = config["topology"];
  const std::string type = t.value("type", std::string());
  auto get = [&](const char* k, int64_t def) {
    return std::to_string(t.contains(k) && t[k].is_number_integer() ? t[k].get<int64_t>() : def);
  };
  if (type == "fat_tree") return "fat_tree k=" + get("k", 4);
  if (type == "leaf_spine")
    return "leaf_spine " + get("leaves", 2) + " leaves x " + get("spines", 2) + " spines";
  if (type == "dumbbell") return "dumbbell " + get("hosts_per_side", 2) + "+" + get("hosts_per_side", 2);
  return type;
}

bool parse_ipv4(const std::string& s, uint32_t* out) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return false;
  *out = ntohl(a.s_addr);
  return true;
}

// "observe": {"queue_sample_ns", "max_samples", "ports"}. Port names are checked against
// the parsed hosts, switches and links (a switch has one port per link end on it).
void read_observe(ConfigReader& r, const json& j, const std::string& path, FabricSpec& spec) {
  if (!r.object(j, path, {"queue_sample_ns", "max_samples", "ports"})) return;
  ObserveSpec& o = spec.observe;
  o.queue_sample_interval = ns(r.integer(j, "queue_sample_ns", path, 0, 0, 1'000'000'000'000,
                                         "a sampling interval in ns >= 0 (0 = off)"));
  o.max_samples = static_cast<size_t>(r.integer(j, "max_samples", path, 10000, 1, 100'000'000,
                                                "a sample count per port, 1..100000000"));
  if (!j.contains("ports")) return;
  const std::string pp = join(path, "ports");
  const json& ports = j["ports"];
  const char* expected = "\"all\", \"hosts\", \"switches\" or a list of port names "
                         "(\"host/device\", \"switch/N\" or a switch name)";
  if (ports.is_string()) {
    const std::string s = ports.get<std::string>();
    if (s == "all" || s == "hosts" || s == "switches") {
      o.hosts = s != "switches";
      o.switches = s != "hosts";
    } else {
      r.error(pp, ports, "is not a port selection", expected);
    }
    return;
  }
  if (!ports.is_array()) {
    r.error(pp, ports, "is not a port selection", expected);
    return;
  }
  o.hosts = o.switches = false;
  std::set<std::string> names;
  for (const NicSpec& n : spec.nics) names.insert(n.nic.host + "/" + n.nic.device);
  std::vector<size_t> num_ports(spec.switches.size(), 0);
  for (const LinkSpec& l : spec.links) {
    if (l.a.is_switch) ++num_ports[l.a.index];
    if (l.b.is_switch) ++num_ports[l.b.index];
  }
  for (size_t s = 0; s < spec.switches.size(); ++s) {
    names.insert(spec.switches[s].name);
    for (size_t p = 0; p < num_ports[s]; ++p) names.insert(spec.switches[s].name + "/" + std::to_string(p));
  }
  for (size_t i = 0; i < ports.size(); ++i) {
    if (!ports[i].is_string() || !names.count(ports[i].get<std::string>()))
      r.error(index(pp, i), ports[i], "names no port of this fabric", expected);
    else
      o.ports.push_back(ports[i].get<std::string>());
  }
}

}  // namespace

const char* link_layer_name(net::LinkLayer ll) {
  switch (ll) {
    case net::LinkLayer::RoCEv2: return "RoCEv2";
    case net::LinkLayer::InfiniBand: return "InfiniBand";
    case net::LinkLayer::IWarp: return "iWARP";
  }
  return "?";
}

uint32_t max_frame_wire(net::LinkLayer ll, uint32_t mtu) {
  return net::base_wire_bytes(ll, mtu) + 16 + 4 + (ll == net::LinkLayer::InfiniBand ? 40 : 0);
}

uint64_t auto_headroom_bytes(const LinkSpec& l, net::LinkLayer ll, uint32_t mtu) {
  return net::pfc_headroom_bytes(l.rate, l.latency, max_frame_wire(ll, mtu), net::pfc_response_bits(l.rate));
}

json expand_topology(ConfigReader& r, const json& config);

FabricSpec parse_fabric(const json& config_in) {
  ConfigReader r;
  const std::string root = "fabric";
  FabricSpec spec;
  if (!r.object(config_in, root, {"name", "link_layer", "mtu", "seed", "nic", "switch", "link",
                                  "hosts", "switches", "links", "topology", "trace",
                                  "link_overrides", "routing", "observe"}))
    throw ConfigError(r.errors());
  const size_t errors_before = r.errors().size();
  const json config = config_in.contains("topology") ? expand_topology(r, config_in) : config_in;
  spec.topology = describe_topology(config_in);
  if (r.errors().size() != errors_before) throw ConfigError(r.errors());

  spec.name = r.string(config, "name", root, "fabric", "a fabric name");
  const std::string ll = r.string(config, "link_layer", root, "roce", "\"roce\", \"ib\" or \"iwarp\"");
  if (ll == "roce" || ll == "RoCEv2") spec.link_layer = net::LinkLayer::RoCEv2;
  else if (ll == "ib" || ll == "InfiniBand") spec.link_layer = net::LinkLayer::InfiniBand;
  else if (ll == "iwarp" || ll == "iWARP") spec.link_layer = net::LinkLayer::IWarp;
  else r.error(join(root, "link_layer"), json(ll), "is not a link layer", "\"roce\", \"ib\" or \"iwarp\"");
  if (spec.link_layer == net::LinkLayer::IWarp) {
    // iWARP runs over TCP/IP: the MTU is the Ethernet one (IP packet bytes), jumbo included.
    spec.mtu = static_cast<uint32_t>(r.integer(config, "mtu", root, kIwarpDefaultMtu, kIwarpMinMtu,
                                               kIwarpMaxMtu, "an Ethernet MTU in bytes 576..9216"));
  } else {
    spec.mtu = static_cast<uint32_t>(r.integer(config, "mtu", root, 4096, 256, 4096,
                                               "an IB MTU: 256, 512, 1024, 2048 or 4096"));
    if (spec.mtu & (spec.mtu - 1))
      r.error(join(root, "mtu"), json(spec.mtu), "is not a power of two", "256, 512, 1024, 2048 or 4096");
  }
  spec.seed = static_cast<uint64_t>(r.integer(config, "seed", root, 1, 0, INT64_MAX, "a seed >= 0"));

  if (config.contains("trace")) {
    const std::string tp = join(root, "trace");
    if (r.object(config["trace"], tp, {"pcap_dir", "ports"})) {
      spec.trace.pcap_dir = r.string(config["trace"], "pcap_dir", tp, "", "a directory path");
      const std::string ports = r.string(config["trace"], "ports", tp, "all",
                                         "\"hosts\", \"switches\" or \"all\"");
      if (ports == "hosts") spec.trace.ports = CapturePorts::Hosts;
      else if (ports == "switches") spec.trace.ports = CapturePorts::Switches;
      else if (ports == "all") spec.trace.ports = CapturePorts::All;
      else r.error(join(tp, "ports"), json(ports), "is not a port selection", "\"hosts\", \"switches\" or \"all\"");
    }
  }

  const bool ib = spec.link_layer == net::LinkLayer::InfiniBand;
  NicParams nic_defaults;
  if (spec.link_layer == net::LinkLayer::IWarp) {
    nic_defaults.hca.atomics = false;
    nic_defaults.hca.max_qp = kIwarpMaxQp;
    nic_defaults.iwarp = true;
  }
  if (ib) nic_defaults.vls = net::default_ib_vls();
  if (config.contains("nic") && r.object(config["nic"], join(root, "nic"), {RDMASIM_NIC_KEYS}))
    read_nic_params(r, config["nic"], join(root, "nic"), ib, nic_defaults);
  net::SwitchConfig switch_defaults;
  switch_defaults.ib_vl_buffer_bytes = 128 * 1024;
  if (ib) switch_defaults.egress.ib = net::default_ib_vls();
  if (config.contains("switch") &&
      r.object(config["switch"], join(root, "switch"), {RDMASIM_SWITCH_KEYS}))
    read_switch_params(r, config["switch"], join(root, "switch"), ib, switch_defaults);
  LinkSpec link_defaults;
  if (config.contains("link") && r.object(config["link"], join(root, "link"), {RDMASIM_LINK_KEYS}))
    read_link_params(r, config["link"], join(root, "link"), link_defaults);

  // Hosts and their NICs. Endpoint names: "host/nic", and "host" alone for a one-NIC host.
  std::map<std::string, LinkEnd> ends;
  std::set<std::string> host_names;
  std::map<net::Address, std::string> ips;
  const std::string hosts_path = join(root, "hosts");
  if (!config.contains("hosts") || !config["hosts"].is_array() || config["hosts"].empty()) {
    r.error(hosts_path, config.value("hosts", json()), "is not a non-empty array", "a list of hosts");
  } else {
    const json& hosts = config["hosts"];
    for (size_t h = 0; h < hosts.size(); ++h) {
      const std::string hp = index(hosts_path, h);
      if (!r.object(hosts[h], hp, {"name", "ip", "nics"})) continue;
      const std::string hname = r.string(hosts[h], "name", hp, std::nullopt, "a host name");
      if (hname.empty() || hname.find('/') != std::string::npos)
        r.error(join(hp, "name"), json(hname), "is not a valid name", "a non-empty name without '/'");
      if (!host_names.insert(hname).second)
        r.error(join(hp, "name"), json(hname), "is a duplicate", "a unique host name");
      const std::string ip = r.string(hosts[h], "ip", hp, std::nullopt, "an IPv4 address such as \"127.0.1.1\"");
      uint32_t ip_addr = 0;
      if (!ip.empty() && !parse_ipv4(ip, &ip_addr))
        r.error(join(hp, "ip"), json(ip), "is not an IPv4 address", "dotted quad such as \"127.0.1.1\"");
      else if (!ip.empty() && !ips.emplace(ip_addr, hp).second)
        r.error(join(hp, "ip"), json(ip), "is already used by " + ips[ip_addr], "a unique address");
      ++spec.num_hosts;
      json nics = hosts[h].value("nics", json::array({json{{"name", "mlx5_0"}}}));
      const std::string nics_path = join(hp, "nics");
      if (!nics.is_array() || nics.empty()) {
        r.error(nics_path, nics, "is not a non-empty array", "a list of NICs");
        continue;
      }
      if (nics.size() > 1 && spec.link_layer != net::LinkLayer::InfiniBand)
        r.error(nics_path, "has " + std::to_string(nics.size()) +
                               " NICs; expected 1 per host on Ethernet link layers (the address is the host's IP)");
      std::set<std::string> dev_names;
      for (size_t i = 0; i < nics.size(); ++i) {
        const std::string np = index(nics_path, i);
        if (!r.object(nics[i], np, {"name", RDMASIM_NIC_KEYS})) continue;
        NicParams p = nic_defaults;
        read_nic_params(r, nics[i], np, ib, p);
        if (p.hca.cc.algorithm == nic::CcAlgorithm::Dcqcn && spec.link_layer != net::LinkLayer::RoCEv2)
          r.error(join(np, "cc.algorithm"), json("dcqcn"), "is RoCEv2 congestion control",
                  "\"none\" on a " + std::string(link_layer_name(spec.link_layer)) + " fabric");
        NicSpec entry;
        HostNic& n = entry.nic;
        n.host = hname;
        n.device = r.string(nics[i], "name", np, "mlx5_" + std::to_string(i), "a device name");
        if (!dev_names.insert(n.device).second)
          r.error(join(np, "name"), json(n.device), "is a duplicate", "a unique device name on this host");
        n.link_layer = spec.link_layer;
        n.ip = ip;
        n.mtu = port_mtu(spec.link_layer, spec.mtu);
        n.vendor_id = p.vendor_id;
        n.vendor_part_id = p.vendor_part_id;
        n.hw_ver = p.hw_ver;
        n.fw_ver = p.fw_ver;
        n.hca = p.hca;
        entry.queue_bytes = p.queue_bytes;
        entry.dwrr_weights = p.dwrr_weights;
        entry.ib_vl_buffer_bytes = p.ib_vl_buffer_bytes;
        entry.vls = p.vls;
        entry.rx = finish_rx(r, np, p);
        // GUIDs: Mellanox OUI, then host number (1-based) and NIC index; port GUID = node + 1.
        n.node_guid = (kMellanoxOui << 40) | (static_cast<uint64_t>(h + 1) << 16) | (i << 4);
        // iWARP: the node GUID is the MAC followed by two zero bytes, as iw_cxgb4 sets it; the
        // MAC is 02:00 and the IPv4 address (net::mac_of).
        if (spec.link_layer == net::LinkLayer::IWarp) n.node_guid = (uint64_t{0x0200} << 48) | (uint64_t{ip_addr} << 16);
        n.port_guid = n.node_guid + 1;
        if (spec.link_layer != net::LinkLayer::InfiniBand) n.address = ip_addr;
        const LinkEnd end{false, spec.nics.size()};
        ends[hname + "/" + n.device] = end;
        if (nics.size() == 1) ends[hname] = end;
        spec.nics.push_back(std::move(entry));
      }
    }
  }

  // Switches.
  if (config.contains("switches")) {
    const std::string sp = join(root, "switches");
    if (!config["switches"].is_array()) {
      r.error(sp, config["switches"], "is not an array", "a list of switches");
    } else {
      for (size_t s = 0; s < config["switches"].size(); ++s) {
        const json& j = config["switches"][s];
        const std::string p = index(sp, s);
        if (!r.object(j, p, {"name", RDMASIM_SWITCH_KEYS})) continue;
        net::SwitchConfig sc = switch_defaults;
        sc.name = r.string(j, "name", p, std::nullopt, "a switch name");
        read_switch_params(r, j, p, ib, sc);
        if (host_names.count(sc.name) || ends.count(sc.name))
          r.error(join(p, "name"), json(sc.name), "is already a host or switch name", "a unique name");
        sc.ecmp_seed = spec.switches.size() + 1;  // a distinct ECMP hash per switch
        ends[sc.name] = LinkEnd{true, spec.switches.size()};
        spec.switches.push_back(std::move(sc));
      }
    }
  }

  // Links.
  spec.nic_link.assign(spec.nics.size(), -1);
  std::map<std::string, size_t> link_names;
  const std::string lp = join(root, "links");
  if (!config.contains("links") || !config["links"].is_array()) {
    r.error(lp, config.value("links", json()), "is not an array", "a list of links {\"a\", \"b\"}");
  } else {
    for (size_t l = 0; l < config["links"].size(); ++l) {
      const json& j = config["links"][l];
      const std::string p = index(lp, l);
      if (!r.object(j, p, {"name", "a", "b", RDMASIM_LINK_KEYS})) continue;
      LinkSpec ls = link_defaults;
      read_link_params(r, j, p, ls);
      ls.name = r.string(j, "name", p, j.value("a", std::string()) + "-" + j.value("b", std::string()),
                         "a link name");
      if (!link_names.emplace(ls.name, l).second)
        r.error(join(p, "name"), json(ls.name), "is already the name of " + index(lp, link_names[ls.name]),
                "a unique link name (give parallel links a \"name\")");
      bool ok = true;
      for (const char* side : {"a", "b"}) {
        const std::string name = r.string(j, side, p, std::nullopt, "\"host/device\", \"host\" or a switch name");
        auto it = ends.find(name);
        if (it == ends.end()) {
          if (!name.empty())
            r.error(join(p, side), json(name), "names no NIC or switch", "\"host/device\", \"host\" or a switch name");
          ok = false;
          continue;
        }
        (side[0] == 'a' ? ls.a : ls.b) = it->second;
        if (!it->second.is_switch) {
          int& nl = spec.nic_link[it->second.index];
          if (nl >= 0) {
            r.error(join(p, side), json(name), "is already linked by " + index(lp, nl), "one link per NIC");
            ok = false;
          } else {
            nl = static_cast<int>(l);
          }
        }
      }
      if (ok && ls.a.is_switch == ls.b.is_switch && ls.a.index == ls.b.index)
        r.error(p, "links a node to itself");
      spec.links.push_back(ls);
      if (!ok) spec.links.back().a = spec.links.back().b;  // placeholder; the config is rejected
    }
  }
  read_link_overrides(r, config, root, link_names, spec.links);
  if (config.contains("observe")) read_observe(r, config["observe"], join(root, "observe"), spec);
  spec.routing = read_routing(r, config, root, spec.link_layer);
  for (size_t i = 0; i < spec.nics.size(); ++i) {
    if (spec.nic_link[i] < 0)
      r.error(hosts_path, "NIC " + spec.nics[i].nic.host + "/" + spec.nics[i].nic.device +
                              " has no link; expected each NIC in exactly one of fabric.links");
  }
  // A lossless class must not lose what is in flight when XOFF is decided: a given headroom
  // below a port's need (net::pfc_headroom_bytes: 2 x latency x rate + 2 max frames + the
  // PFC frame + the peer's 802.1Qbb response) is an error naming the link. An error, not a
  // warning: a run that drops a lossless class answers a different question than the one
  // asked, and "auto" always fits.
  for (size_t sw = 0; sw < spec.switches.size(); ++sw) {
    const net::SwitchConfig& sc = spec.switches[sw];
    if (!sc.pfc.enabled || !sc.pfc.headroom_limited || sc.pfc.headroom_auto) continue;
    for (const LinkSpec& l : spec.links) {
      if (!(l.a.is_switch && l.a.index == sw) && !(l.b.is_switch && l.b.index == sw)) continue;
      const uint64_t need = auto_headroom_bytes(l, spec.link_layer, spec.mtu);
      if (sc.pfc.headroom_bytes >= need) continue;
      r.error("fabric.switches[" + std::to_string(sw) + "] (" + sc.name + ").pfc.headroom_kb",
              json(static_cast<double>(sc.pfc.headroom_bytes) / 1024),
              "cannot hold what is in flight on its port to link " + l.name + " (" +
                  json(l.rate.as_gbps()).dump() +
                  " Gb/s, " + std::to_string(l.latency / kNanosecond) + " ns): it needs " + std::to_string(need) +
                  " B = 2 x latency x rate + 2 x " + std::to_string(max_frame_wire(spec.link_layer, spec.mtu)) +
                  " B frames + " + std::to_string(net::kEthernetMinWire) + " B PFC frame + " + std::to_string(net::pfc_response_bits(l.rate) / 8) +
                  " B peer response",
              "\"auto\" or at least " + std::to_string((need + 1023) / 1024) + " KiB");
      break;  // one error per switch: the first port short of headroom
    }
  }
  // A shared buffer must hold the per-queue reserves and the PFC headroom of every port.
  for (size_t sw = 0; sw < spec.switches.size(); ++sw) {
    const net::SwitchConfig& sc = spec.switches[sw];
    if (!sc.buffer.total_bytes) continue;
    uint64_t ports = 0, headroom = 0;
    for (const LinkSpec& l : spec.links)
      for (const LinkEnd& e : {l.a, l.b})
        if (e.is_switch && e.index == sw) {
          ++ports;
          if (sc.pfc.enabled && sc.pfc.headroom_limited)
            headroom += sc.pfc.headroom_auto ? auto_headroom_bytes(l, spec.link_layer, spec.mtu)
                                             : sc.pfc.headroom_bytes;
        }
    int lossless = 0;
    for (int c = 0; c < 8; ++c) lossless += sc.pfc.enabled && (sc.pfc.class_mask >> c & 1);
    const uint64_t need = sc.buffer.reserved_bytes * ports * 8 + headroom * lossless;
    if (need >= sc.buffer.total_bytes)
      r.error("fabric.switches[" + std::to_string(sw) + "] (" + sc.name + ").buffer.total_kb",
              json(sc.buffer.total_bytes / 1024),
              "leaves no shared pool after " + std::to_string(need) + " B of reserves (reserved_kb x " +
                  std::to_string(ports) + " ports x 8 classes + PFC headroom x " + std::to_string(lossless) +
                  " lossless classes)",
              "a buffer larger than its reserves and headroom");
  }
  if (!r.ok()) throw ConfigError(r.errors());

  for (size_t i = 0; i < spec.nics.size(); ++i) spec.nics[i].nic.rate = spec.links[spec.nic_link[i]].rate;

  // InfiniBand subnet manager: NIC ports get LIDs 1..N in config order; switches N+1...;
  // the SM runs on the first NIC (LID 1).
  if (spec.link_layer == net::LinkLayer::InfiniBand) {
    for (size_t i = 0; i < spec.nics.size(); ++i) {
      HostNic& n = spec.nics[i].nic;
      n.lid = static_cast<uint16_t>(i + 1);
      n.sm_lid = 1;
      n.address = n.lid;
    }
  }
  // iWARP: QPNs carry the NIC's number (1-based, config order) in bits 23..16 (HcaConfig::qpn_base).
  std::vector<net::Address> iwarp_hosts;
  if (spec.link_layer == net::LinkLayer::IWarp) {
    if (spec.nics.size() > kIwarpMaxNics)
      r.error(join(root, "hosts"), "has " + std::to_string(spec.nics.size()) + " NICs; expected at most " +
                                       std::to_string(kIwarpMaxNics) + " on iWARP (QPNs carry the NIC number in 8 bits)");
    iwarp_hosts.push_back(0);
    for (const NicSpec& e : spec.nics) iwarp_hosts.push_back(e.nic.address);
  }
  for (size_t k = 0; k < spec.nics.size() && spec.link_layer == net::LinkLayer::IWarp; ++k) {
    spec.nics[k].nic.hca.qpn_base = static_cast<uint32_t>((k + 1) & 0xff) << 16;
    spec.nics[k].nic.hca.iwarp_hosts = iwarp_hosts;
  }
  for (NicSpec& entry : spec.nics) {
    HostNic& n = entry.nic;
    n.hca.name = n.device;
    n.hca.link_layer = n.link_layer;
    n.hca.address = n.address;
    n.hca.node_guid = n.node_guid;
    n.hca.max_mtu = port_mtu(spec.link_layer, spec.mtu);
    // MSS = MTU - IPv4 20 - TCP 20 - timestamps option 12 (as Linux sizes it with timestamps).
    if (n.link_layer == net::LinkLayer::IWarp) n.hca.tcp.mss = spec.mtu - 20 - nic::iwarp::kTcpHeader;
  }

  if (spec.link_layer != net::LinkLayer::InfiniBand)
    for (net::SwitchConfig& sc : spec.switches) sc.ib_vl_buffer_bytes = 0;

  // Oversubscription of the first access switch: host-facing over uplink bandwidth.
  const char* access = spec.topology.rfind("leaf_spine", 0) == 0 ? "leaf1"
                       : spec.topology.rfind("fat_tree", 0) == 0 ? "edge1_1" : nullptr;
  for (size_t sw = 0; access && sw < spec.switches.size(); ++sw) {
    if (spec.switches[sw].name != access) continue;
    double down = 0, up = 0;
    for (const LinkSpec& l : spec.links) {
      const bool a_me = l.a.is_switch && l.a.index == sw, b_me = l.b.is_switch && l.b.index == sw;
      if (!a_me && !b_me) continue;
      ((a_me ? l.b : l.a).is_switch ? up : down) += l.rate.as_gbps();
    }
    if (up > 0) {
      char buf[64];
      snprintf(buf, sizeof buf, ", oversubscription %g:1", down / up);
      spec.topology += buf;
    }
  }

  const RouteTable rt = compute_routes(spec);
  for (size_t a = 0; a < spec.nics.size(); ++a)
    for (size_t b = 0; b < spec.nics.size(); ++b)
      if (a != b && !rt.reachable[a][b])
        r.error(lp, spec.nics[b].nic.host + "/" + spec.nics[b].nic.device + " is not reachable from " +
                        spec.nics[a].nic.host + "/" + spec.nics[a].nic.device +
                        "; expected a connected fabric");
  if (!r.ok()) throw ConfigError(r.errors());
  return spec;
}

std::string summarize(const FabricSpec& spec) {
  auto plural = [](size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  double lo = 0, hi = 0;
  for (const LinkSpec& l : spec.links) {
    const double g = l.rate.as_gbps();
    lo = lo == 0 ? g : std::min(lo, g);
    hi = std::max(hi, g);
  }
  auto fmt = [](double g) {
    char buf[32];
    snprintf(buf, sizeof buf, "%g", g);
    return std::string(buf);
  };
  const std::string rate = lo == hi ? fmt(hi) : fmt(lo) + "-" + fmt(hi);
  return plural(spec.num_hosts, "host", "hosts") + ", " +
         plural(spec.switches.size(), "switch", "switches") + ", " +
         plural(spec.links.size(), "link", "links") + ", " + link_layer_name(spec.link_layer) + " " +
         rate + " Gb/s, MTU " + std::to_string(spec.mtu) +
         (spec.topology.empty() ? "" : ", " + spec.topology) +
         (spec.routing == Routing::UpDown ? ", up-down routing" : "");
}

}  // namespace rdmasim::topo
