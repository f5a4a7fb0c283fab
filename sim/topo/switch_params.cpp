// Readers of a switch's and a link's parameters in a fabric config (the "switch" defaults and
// per-switch entries; "link" defaults, per-link entries and overrides).
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "sim/topo/config_reader.h"
#include "sim/topo/param_readers.h"

namespace rdmasim::topo {

using nlohmann::json;

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
static void read_ecn_ramp(ConfigReader& r, const json& e, const std::string& p, net::EcnConfig& c) {
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
static void read_ecn(ConfigReader& r, const json& e, const std::string& p, std::array<net::EcnConfig, 8>& out) {
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

}  // namespace rdmasim::topo
