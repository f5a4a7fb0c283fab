// Simulated time and link rates: integer picoseconds and bits per second.
#pragma once

#include <cstdint>
#include <limits>

namespace rdmasim {

// Simulated time, in picoseconds. 2^63 ps is about 106 days of simulated time.
using Time = int64_t;

inline constexpr Time kPicosecond = 1;
inline constexpr Time kNanosecond = 1'000;
inline constexpr Time kMicrosecond = 1'000'000;
inline constexpr Time kMillisecond = 1'000'000'000;
inline constexpr Time kSecond = 1'000'000'000'000;
inline constexpr Time kTimeNever = std::numeric_limits<Time>::max();

constexpr Time ps(int64_t v) { return v; }
constexpr Time ns(int64_t v) { return v * kNanosecond; }
constexpr Time us(int64_t v) { return v * kMicrosecond; }
constexpr Time ms(int64_t v) { return v * kMillisecond; }
constexpr Time from_ns_double(double v) { return static_cast<Time>(v * 1e3 + 0.5); }
constexpr double to_us(Time t) { return static_cast<double>(t) / kMicrosecond; }
constexpr double to_ns(Time t) { return static_cast<double>(t) / kNanosecond; }
constexpr double to_seconds(Time t) { return static_cast<double>(t) / kSecond; }

// A link or pacing rate in bits per second.
struct Rate {
  uint64_t bps = 0;

  static constexpr Rate gbps(double g) { return Rate{static_cast<uint64_t>(g * 1e9 + 0.5)}; }
  static constexpr Rate mbps(double m) { return Rate{static_cast<uint64_t>(m * 1e6 + 0.5)}; }
  constexpr double as_gbps() const { return static_cast<double>(bps) / 1e9; }
  friend constexpr bool operator==(Rate, Rate) = default;
  friend constexpr auto operator<=>(Rate, Rate) = default;
};

// Time to put `bytes` on a wire of rate `r`, rounded up to the next picosecond.
// 4096 B at 100 Gb/s: 4096 * 8 / 100e9 s = 327.68 ns = 327680 ps.
// Up to kTxTime64Bytes (2,305,843 B: 8e12 x bytes still fits in 64 bits, which covers every
// packet and DMA) one 64-bit division; past it the 128-bit one (__udivti3, several times
// the cost, once on each packet's path). The same quotient either way.
inline constexpr uint64_t kBitPs = 8u * 1'000'000'000'000u;  // bits per byte x ps per second
inline constexpr uint64_t kTxTime64Bytes = UINT64_MAX / kBitPs;
constexpr Time tx_time(Rate r, uint64_t bytes) {
  if (r.bps == 0) return kTimeNever;
  if (bytes <= kTxTime64Bytes) {
    const uint64_t num = bytes * kBitPs;
    return static_cast<Time>(num / r.bps + (num % r.bps != 0));
  }
  const unsigned __int128 num = static_cast<unsigned __int128>(bytes) * kBitPs;
  return static_cast<Time>((num + r.bps - 1) / r.bps);
}

// Bytes a wire of rate `r` carries in time `t` (rounded down).
constexpr uint64_t bytes_in(Rate r, Time t) {
  if (t <= 0) return 0;
  const unsigned __int128 num = static_cast<unsigned __int128>(r.bps) * static_cast<uint64_t>(t);
  return static_cast<uint64_t>(num / kBitPs);
}

}  // namespace rdmasim
