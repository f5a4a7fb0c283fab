#include <doctest/doctest.h>

#include <vector>

#include "lib/ipc/proto.h"
#include "lib/ipc/ring.h"

using namespace rdmasim::ipc;

TEST_CASE("ring: slot i lives at i mod size, so counters may wrap at 2^32") {
  std::vector<char> mem(RingView<Cqe>::bytes_for(8));
  RingView<Cqe> ring(mem.data(), 8);
  CHECK(&ring.slot(3) == &ring.slot(11));
  CHECK(&ring.slot(0xFFFFFFFFu) == &ring.slot(7));
  CHECK(&ring.slot(0) == reinterpret_cast<Cqe*>(mem.data() + sizeof(RingHeader)));
}

TEST_CASE("ring: a CQE slot is valid only when its seq equals its index + 1") {
  // The daemon writes seq last; a consumer at index i that sees seq != i + 1 (a slot from
  // the previous lap, or not yet written) must treat the ring as empty.
  std::vector<char> mem(RingView<Cqe>::bytes_for(4));
  RingView<Cqe> ring(mem.data(), 4);
  Cqe& s = ring.slot(5);
  s.seq = 2;                     // written for index 1, one lap earlier
  CHECK(s.seq != 5 + 1);
  s.seq = 6;
  CHECK(s.seq == 5 + 1);
}

TEST_CASE("ring: round_up_pow2 gives the smallest power of two that holds the request") {
  CHECK(round_up_pow2(1) == 1);
  CHECK(round_up_pow2(100) == 128);
  CHECK(round_up_pow2(128) == 128);
}
