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

TEST_CASE("time: tx_time is exact on both sides of its 64-bit limit") {
  // 2,305,843 B is the largest size whose 8e12 x bytes fits in 64 bits (2^64 - 1 =
  // 18446744073709551615; / 8e12 = 2305843.009); one byte more takes the 128-bit division.
  CHECK(kTxTime64Bytes == 2'305'843);
  // 100 Gb/s is 80 ps a byte exactly: 2,305,843 x 80 and 2,305,844 x 80.
  CHECK(tx_time(Rate::gbps(100), 2'305'843) == 184'467'440);
  CHECK(tx_time(Rate::gbps(100), 2'305'844) == 184'467'520);
  // At 7 b/s each rounds up: 18446744e12 / 7 = 2635249142857142857.14 -> ...858, and
  // 18446752e12 / 7 = 2635250285714285714.29 -> ...715.
  CHECK(tx_time(Rate{7}, 2'305'843) == 2'635'249'142'857'142'858);
  CHECK(tx_time(Rate{7}, 2'305'844) == 2'635'250'285'714'285'715);
}
