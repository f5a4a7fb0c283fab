// Seeded pseudo-random streams (xoshiro256**), one per named use.
#pragma once

#include <cstdint>
#include <string_view>

namespace rdmasim {

class Rng {
 public:
  explicit Rng(uint64_t seed);
  // A stream derived from a run seed and a stream name (FNV-1a of the name, mixed).
  static Rng derived(uint64_t seed, std::string_view name);

  uint64_t next_u64();
  // Uniform in [0, 1).
  double uniform();
  // Uniform integer in [0, n); n > 0.
  uint64_t below(uint64_t n);
  // True with probability p.
  bool bernoulli(double p) { return p > 0 && (p >= 1 || uniform() < p); }
  // Exponentially distributed with the given mean.
  double exponential(double mean);

 private:
  uint64_t s_[4];
};

}  // namespace rdmasim
