#include <doctest/doctest.h>

#include "sim/core/time.h"

using namespace rdmasim;

TEST_CASE("time: 4096 B at 100 Gb/s serializes in 327.68 ns") {
  // 4096 * 8 bit / 100e9 bit/s = 3.2768e-7 s = 327680 ps.
  CHECK(tx_time(Rate::gbps(100), 4096) == 327'680);
}

TEST_CASE("time: tx_time rounds up to the next picosecond") {
  // 1 B at 3 b/s is 8/3 s = 2666666666666.67 ps -> 2666666666667.
  CHECK(tx_time(Rate{3}, 1) == 2'666'666'666'667);
}

TEST_CASE("time: bytes_in inverts tx_time for whole bytes") {
  // 1 us at 100 Gb/s carries 100e9 * 1e-6 / 8 = 12500 B.
  CHECK(bytes_in(Rate::gbps(100), us(1)) == 12'500);
}
