// Readers of a NIC's parameters in a fabric config: the "nic" defaults object and each host's
// NIC entry share these keys (RDMASIM_NIC_KEYS).
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "sim/topo/config_reader.h"
#include "sim/topo/param_readers.h"
#include "sim/nic/iwarp.h"

namespace rdmasim::topo {

using nlohmann::json;

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


// nic::HcaConfig limits settable from "limits"; each must be >= 1.
struct LimitField {
  const char* key;
  uint32_t nic::HcaConfig::*field;
};
static constexpr LimitField kLimits[] = {
    {"max_qp", &nic::HcaConfig::max_qp},           {"max_qp_wr", &nic::HcaConfig::max_qp_wr},
    {"max_sge", &nic::HcaConfig::max_sge},         {"max_cq", &nic::HcaConfig::max_cq},
    {"max_cqe", &nic::HcaConfig::max_cqe},         {"max_mr", &nic::HcaConfig::max_mr},
    {"max_pd", &nic::HcaConfig::max_pd},           {"max_srq", &nic::HcaConfig::max_srq},
    {"max_srq_wr", &nic::HcaConfig::max_srq_wr},   {"max_srq_sge", &nic::HcaConfig::max_srq_sge},
    {"max_qp_rd_atom", &nic::HcaConfig::max_qp_rd_atom},
    {"max_inline_data", &nic::HcaConfig::max_inline_data},
};

static void read_limits(ConfigReader& r, const json& j, const std::string& path, nic::HcaConfig& hca) {
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

// "hpcc": {"eta", "max_stage", "ai_rate_mbps", "min_rate_mbps", "base_rtt_us"} (nic::HpccParams).
static void read_hpcc(ConfigReader& r, const json& j, const std::string& path, nic::HpccParams& h) {
  if (!r.object(j, path, {"eta", "max_stage", "ai_rate_mbps", "min_rate_mbps", "base_rtt_us"})) return;
  h.eta = r.number(j, "eta", path, h.eta, 0, true, 1, "a target utilization in (0, 1]");
  h.max_stage = static_cast<uint32_t>(
      r.integer(j, "max_stage", path, h.max_stage, 0, 1000, "a stage count 0..1000"));
  auto rate_mbps = [&](const char* key, Rate& v) {
    v = Rate::mbps(r.number(j, key, path, static_cast<double>(v.bps) / 1e6, 0, true, 1e7,
                            "a rate in Mb/s > 0"));
  };
  rate_mbps("ai_rate_mbps", h.ai_rate);
  rate_mbps("min_rate_mbps", h.min_rate);
  h.base_rtt = from_ns_double(1000.0 * r.number(j, "base_rtt_us", path, to_us(h.base_rtt), 0, true,
                                                1e6, "a time in us > 0"));
}

// Readers of the per-algorithm objects' values: a time in us > 0, a rate in Mb/s > 0.
static void time_us_key(ConfigReader& r, const json& j, const std::string& path, const char* key, Time& t) {
  t = from_ns_double(1000.0 * r.number(j, key, path, to_us(t), 0, true, 1e6, "a time in us > 0"));
}
static void rate_mbps_key(ConfigReader& r, const json& j, const std::string& path, const char* key, Rate& v) {
  v = Rate::mbps(r.number(j, key, path, static_cast<double>(v.bps) / 1e6, 0, true, 1e7, "a rate in Mb/s > 0"));
}

// "timely": {"alpha", "beta", "t_low_us", "t_high_us", "min_rtt_us", "delta_mbps", "hai_after",
// "hai_factor", "min_rate_mbps"} (nic::TimelyParams).
static void read_timely(ConfigReader& r, const json& j, const std::string& path, nic::TimelyParams& t) {
  if (!r.object(j, path, {"alpha", "beta", "t_low_us", "t_high_us", "min_rtt_us", "delta_mbps",
                          "hai_after", "hai_factor", "min_rate_mbps"}))
    return;
  t.alpha = r.number(j, "alpha", path, t.alpha, 0, true, 1, "an EWMA weight in (0, 1]");
  t.beta = r.number(j, "beta", path, t.beta, 0, true, 1, "a decrease factor in (0, 1]");
  time_us_key(r, j, path, "t_low_us", t.t_low);
  time_us_key(r, j, path, "t_high_us", t.t_high);
  time_us_key(r, j, path, "min_rtt_us", t.min_rtt);
  rate_mbps_key(r, j, path, "delta_mbps", t.delta);
  t.hai_after = static_cast<uint32_t>(r.integer(j, "hai_after", path, t.hai_after, 0, 1000, "a count 0..1000"));
  t.hai_factor = static_cast<uint32_t>(r.integer(j, "hai_factor", path, t.hai_factor, 1, 1000, "a factor 1..1000"));
  rate_mbps_key(r, j, path, "min_rate_mbps", t.min_rate);
  if (t.t_high <= t.t_low)
    r.error(join(path, "t_high_us"), j.contains("t_high_us") ? j["t_high_us"] : json(to_us(t.t_high)),
            "is not above t_low_us", "T_high > T_low");
}

// "swift": {"ai", "beta", "max_mdf", "base_target_us", "hop_scale_us", "hops", "fs_range_factor",
// "fs_min_cwnd", "fs_max_cwnd", "endpoint_target_us", "min_cwnd", "max_cwnd", "base_rtt_us"}.
static void read_swift(ConfigReader& r, const json& j, const std::string& path, nic::SwiftParams& w) {
  if (!r.object(j, path, {"ai", "beta", "max_mdf", "base_target_us", "hop_scale_us", "hops",
                          "fs_range_factor", "fs_min_cwnd", "fs_max_cwnd", "endpoint_target_us",
                          "min_cwnd", "max_cwnd", "base_rtt_us"}))
    return;
  w.ai = r.number(j, "ai", path, w.ai, 0, true, 1e6, "packets per RTT > 0");
  w.beta = r.number(j, "beta", path, w.beta, 0, true, 1, "a gain in (0, 1]");
  w.max_mdf = r.number(j, "max_mdf", path, w.max_mdf, 0, true, 1, "a fraction in (0, 1]");
  time_us_key(r, j, path, "base_target_us", w.base_target);
  w.hop_scale = from_ns_double(1000.0 * r.number(j, "hop_scale_us", path, to_us(w.hop_scale), 0, false,
                                                 1e6, "a time in us >= 0"));
  w.hops = static_cast<uint32_t>(r.integer(j, "hops", path, w.hops, 0, 64, "a hop count 0..64"));
  w.fs_range_factor = r.number(j, "fs_range_factor", path, w.fs_range_factor, 0, false, 1e3,
                               "a multiple of base_target >= 0");
  w.fs_min_cwnd = r.number(j, "fs_min_cwnd", path, w.fs_min_cwnd, 0, true, 1e6, "packets > 0");
  w.fs_max_cwnd = r.number(j, "fs_max_cwnd", path, w.fs_max_cwnd, 0, true, 1e6, "packets > 0");
  time_us_key(r, j, path, "endpoint_target_us", w.endpoint_target);
  w.min_cwnd = r.number(j, "min_cwnd", path, w.min_cwnd, 0, true, 1e6, "packets > 0");
  w.max_cwnd = r.number(j, "max_cwnd", path, w.max_cwnd, 0, true, 1e9, "packets > 0");
  time_us_key(r, j, path, "base_rtt_us", w.base_rtt);
  if (w.fs_max_cwnd <= w.fs_min_cwnd)
    r.error(join(path, "fs_max_cwnd"), json(w.fs_max_cwnd), "is not above fs_min_cwnd", "fs_max_cwnd > fs_min_cwnd");
  if (w.max_cwnd < w.min_cwnd)
    r.error(join(path, "max_cwnd"), json(w.max_cwnd), "is below min_cwnd", "max_cwnd >= min_cwnd");
}

// "dctcp": {"g", "initial_alpha", "base_rtt_us", "min_rate_mbps"} (nic::DctcpParams).
static void read_dctcp(ConfigReader& r, const json& j, const std::string& path, nic::DctcpParams& d) {
  if (!r.object(j, path, {"g", "initial_alpha", "base_rtt_us", "min_rate_mbps"})) return;
  d.g = r.number(j, "g", path, d.g, 0, true, 1, "a gain in (0, 1]");
  d.initial_alpha = r.number(j, "initial_alpha", path, d.initial_alpha, 0, false, 1, "alpha in [0, 1]");
  time_us_key(r, j, path, "base_rtt_us", d.base_rtt);
  rate_mbps_key(r, j, path, "min_rate_mbps", d.min_rate);
}

// "cc": {"algorithm": "none"|"dcqcn"|"hpcc"|"timely"|"swift"|"dctcp", "hpcc": {...}, "preset": "paper"|"vendor"|"hpcc", "increase":
// "paper"|"timer", "clamp_target", DCQCN parameters...}.
// The preset (if any) sets every parameter first; the other keys then override it.
static void read_cc(ConfigReader& r, const json& j, const std::string& path, nic::CcConfig& cc) {
  if (!r.object(j, path, {"algorithm", "preset", "g", "initial_alpha", "alpha_update_us",
                          "rate_timer_us", "byte_counter_bytes", "fast_recovery_steps",
                          "ai_rate_mbps", "hai_rate_mbps", "min_rate_mbps",
                          "rate_reduce_period_us", "cnp_interval_us", "cnp_priority",
                          "cnp_dscp", "max_samples", "increase", "clamp_target", "hpcc",
                          "timely", "swift", "dctcp"}))
    return;
  const char* kAlgorithms =
      "\"none\", \"dcqcn\", \"hpcc\", \"timely\", \"swift\" or \"dctcp\"";
  const std::string algo = r.string(j, "algorithm", path, nic::cc_algorithm_name(cc.algorithm),
                                    kAlgorithms);
  if (algo == "none") cc.algorithm = nic::CcAlgorithm::None;
  else if (algo == "dcqcn") cc.algorithm = nic::CcAlgorithm::Dcqcn;
  else if (algo == "hpcc") cc.algorithm = nic::CcAlgorithm::Hpcc;
  else if (algo == "timely") cc.algorithm = nic::CcAlgorithm::Timely;
  else if (algo == "swift") cc.algorithm = nic::CcAlgorithm::Swift;
  else if (algo == "dctcp") cc.algorithm = nic::CcAlgorithm::Dctcp;
  else r.error(join(path, "algorithm"), json(algo), "is not a congestion control algorithm",
               kAlgorithms);
  if (j.contains("hpcc")) read_hpcc(r, j["hpcc"], join(path, "hpcc"), cc.hpcc);
  if (j.contains("timely")) read_timely(r, j["timely"], join(path, "timely"), cc.timely);
  if (j.contains("swift")) read_swift(r, j["swift"], join(path, "swift"), cc.swift);
  if (j.contains("dctcp")) read_dctcp(r, j["dctcp"], join(path, "dctcp"), cc.dctcp);
  if (j.contains("preset")) {
    const char* presets = "\"paper\", \"vendor\" or \"hpcc\"";
    const std::string preset = r.string(j, "preset", path, std::nullopt, presets);
    if (!nic::dcqcn_preset(preset, &cc.dcqcn))
      r.error(join(path, "preset"), json(preset), "is not a DCQCN preset", presets);
  }
  nic::DcqcnParams& d = cc.dcqcn;
  if (j.contains("increase")) {
    const char* expected = "\"paper\" (timer and byte counter) or \"timer\" (timer-staged, as deployed NICs)";
    const std::string inc = r.string(j, "increase", path, std::nullopt, expected);
    if (inc == "paper") d.increase = nic::DcqcnIncrease::Paper;
    else if (inc == "timer") d.increase = nic::DcqcnIncrease::TimerStaged;
    else r.error(join(path, "increase"), json(inc), "is not a rate-increase model", expected);
  }
  d.clamp_target = r.boolean(j, "clamp_target", path, d.clamp_target);
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
static void read_arb_table(ConfigReader& r, const json& e, const char* key, const std::string& path,
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
static void read_tcp(ConfigReader& r, const json& j, const std::string& path, nic::iwarp::TcpConfig& t) {
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

static void read_rx(ConfigReader& r, const json& j, const std::string& path, bool ib, NicParams& p) {
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

// "pcie": false, true, or {"gen", "lanes", "latency_ns", "host_read_ns", "max_payload",
// "max_read_request", "read_ahead"} (host::PcieConfig; configs/README.md gives the defaults' sources).
static void read_pcie(ConfigReader& r, const json& j, const std::string& path, NicParams& p) {
  const std::string pp = join(path, "pcie");
  const json& e = j["pcie"];
  // "pcie": true|false, or an object ({"enabled" defaults to true there).
  if (e.is_boolean()) {
    p.hca.pcie.enabled = e.get<bool>();
    return;
  }
  if (!r.object(e, pp, {"enabled", "gen", "lanes", "latency_ns", "host_read_ns", "max_payload",
                        "max_read_request", "read_ahead"}))
    return;
  host::PcieConfig& c = p.hca.pcie;
  c.enabled = r.boolean(e, "enabled", pp, true);
  if (e.contains("gen")) {
    p.pcie_gen_given = true;
    c.gen = static_cast<uint32_t>(r.integer(e, "gen", pp, std::nullopt, 3, 5, "a PCIe generation 3, 4 or 5"));
  }
  const int64_t lanes = r.integer(e, "lanes", pp, c.lanes, 1, 16, "a lane count 1, 2, 4, 8 or 16");
  if (lanes != 1 && lanes != 2 && lanes != 4 && lanes != 8 && lanes != 16)
    r.error(join(pp, "lanes"), json(lanes), "is not a PCIe link width", "1, 2, 4, 8 or 16");
  c.lanes = static_cast<uint32_t>(lanes);
  c.latency = ns(r.integer(e, "latency_ns", pp, c.latency / kNanosecond, 0, 1'000'000, "a one-way latency in ns >= 0"));
  c.host_read = ns(r.integer(e, "host_read_ns", pp, c.host_read / kNanosecond, 0, 1'000'000,
                             "the host's time to answer a DMA read, ns >= 0"));
  const char* pow2 = "a power of two 128..4096 bytes";
  for (auto [key, field] : {std::pair{"max_payload", &c.max_payload}, std::pair{"max_read_request", &c.max_read_request}}) {
    const int64_t v = r.integer(e, key, pp, *field, 128, 4096, pow2);
    if (v & (v - 1)) r.error(join(pp, key), json(v), "is not a power of two", pow2);
    *field = static_cast<uint32_t>(v);
  }
  c.read_ahead = static_cast<uint32_t>(r.integer(e, "read_ahead", pp, c.read_ahead, 1, 1 << 20,
                                                 "payload bytes read ahead of the wire, 1..1048576"));
}

// "loss_recovery": "go_back_n" or "irn", or {"mode", "rto_low_us", "rto_high_us",
// "rto_low_packets", "bdp_packets", "nack_gaps"} (nic::LossRecoveryConfig; configs/README.md).
static void read_loss_recovery(ConfigReader& r, const json& e, const std::string& path,
                               nic::LossRecoveryConfig& c) {
  const char* kModes = "\"go_back_n\" or \"irn\"";
  auto mode = [&](const json& v, const std::string& at) {
    if (v == "go_back_n") c.mode = nic::LossRecovery::GoBackN;
    else if (v == "irn") c.mode = nic::LossRecovery::Irn;
    else r.error(at, v, "is not a loss recovery", kModes);
  };
  if (e.is_string()) return mode(e, path);
  if (!r.object(e, path, {"mode", "rto_low_us", "rto_high_us", "rto_low_packets", "bdp_packets", "nack_gaps"})) return;
  mode(json(r.string(e, "mode", path, "irn", kModes)), join(path, "mode"));
  const char* us_range = "a timeout in us, 1..1000000";
  c.rto_low = us(r.integer(e, "rto_low_us", path, c.rto_low / kMicrosecond, 1, 1'000'000, us_range));
  c.rto_high = us(r.integer(e, "rto_high_us", path, c.rto_high / kMicrosecond, 1, 1'000'000, us_range));
  if (c.rto_low > c.rto_high)
    r.error(join(path, "rto_low_us"), json(c.rto_low / kMicrosecond),
            "is above rto_high_us (" + std::to_string(c.rto_high / kMicrosecond) + ")", "rto_low_us <= rto_high_us");
  c.rto_low_packets = static_cast<uint32_t>(r.integer(e, "rto_low_packets", path, c.rto_low_packets, 0, 1 << 20,
                                                      "a packet count >= 0"));
  c.bdp_packets = static_cast<uint32_t>(r.integer(e, "bdp_packets", path, c.bdp_packets, 0, 1 << 22,
                                                  "PSNs in flight, 0 (no cap) .. 4194304"));
  c.nack_gaps = r.boolean(e, "nack_gaps", path, c.nack_gaps);
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
  if (j.contains("pcie")) read_pcie(r, j, path, p);
  if (j.contains("loss_recovery")) {
    if (p.iwarp)
      r.error(join(path, "loss_recovery"), j["loss_recovery"], "is RC's over InfiniBand or RoCE",
              "no \"loss_recovery\" on iWARP (TCP recovers losses; see \"tcp\")");
    else
      read_loss_recovery(r, j["loss_recovery"], join(path, "loss_recovery"), p.hca.loss_recovery);
  }
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

}  // namespace rdmasim::topo
