#include <doctest/doctest.h>

#include "lib/verbs/wq_accounting.h"

using rdmasim::verbs::WqAccounting;

TEST_CASE("wq accounting: a queue of depth 4 is full after 4 posts and nothing polled") {
  WqAccounting a(4);
  for (int i = 0; i < 4; ++i) {
    CHECK_FALSE(a.full());
    a.on_post();
  }
  CHECK(a.full());
  CHECK(a.outstanding() == 4);
}

TEST_CASE("wq accounting: a CQE for wqe 2 retires wqes 0..2 (unsignaled ones are implied)") {
  WqAccounting a(4);
  a.on_post(4);
  a.on_complete(2);
  CHECK(a.outstanding() == 1);  // only wqe 3 is left
  CHECK(a.free_slots() == 3);
}

TEST_CASE("wq accounting: stale, duplicate and not-yet-posted indices change nothing") {
  WqAccounting a(8);
  a.on_post(3);                  // wqes 0, 1, 2
  a.on_complete(1);
  CHECK(a.outstanding() == 1);
  a.on_complete(1);              // duplicate
  a.on_complete(0);              // older than what is already retired
  CHECK(a.outstanding() == 1);
  a.on_complete(5);              // never posted
  CHECK(a.outstanding() == 1);
  a.on_complete(2);
  CHECK(a.outstanding() == 0);
}

TEST_CASE("wq accounting: indices wrap at 2^32 without losing slots") {
  WqAccounting a(4);
  // Advance both counters to just below the wrap: 2^32 - 2 posts, all completed.
  const uint32_t start = 0xFFFFFFFEu;
  a.on_post(start);
  a.on_complete(start - 1);
  CHECK(a.outstanding() == 0);
  a.on_post(4);                  // wqes 0xFFFFFFFE, 0xFFFFFFFF, 0, 1
  CHECK(a.full());
  a.on_complete(0);              // the third of them, index 0 after the wrap
  CHECK(a.outstanding() == 1);
}
