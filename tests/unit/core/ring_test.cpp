// Ring<T> (sim/core/ring.h): the FIFO of the fabric's and the HCA's hot queues. Checked
// against std::deque as the reference FIFO: the same operations must leave the same
// elements in the same order, across growth and wrap-around.
#include <deque>
#include <memory>
#include <string>

#include <doctest/doctest.h>
#include "sim/core/ring.h"
#include "sim/core/rng.h"

using rdmasim::Ring;

TEST_CASE("an empty ring allocates nothing and reports empty") {
  Ring<int> r;
  CHECK(r.empty());
  CHECK(r.size() == 0);
  CHECK(r.begin() == r.end());
}

TEST_CASE("a ring is a FIFO across growth and wrap-around, as std::deque") {
  // A seeded mix of push_back, push_front and pops, so the head wraps around the buffer
  // many times and the buffer doubles while wrapped; every step compares with std::deque.
  Ring<std::string> r;
  std::deque<std::string> ref;
  rdmasim::Rng rng(7);
  for (int step = 0; step < 20000; ++step) {
    const uint64_t op = rng.below(10);
    if (op < 5) {
      const std::string v = "v" + std::to_string(step);
      r.push_back(v), ref.push_back(v);
    } else if (op == 5) {
      const std::string v = "f" + std::to_string(step);
      r.push_front(v), ref.push_front(v);
    } else if (op < 9 && !ref.empty()) {
      r.pop_front(), ref.pop_front();
    } else if (!ref.empty()) {
      r.pop_back(), ref.pop_back();
    }
    REQUIRE(r.size() == ref.size());
    if (!ref.empty()) {
      REQUIRE(r.front() == ref.front());
      REQUIRE(r.back() == ref.back());
    }
  }
  size_t i = 0;
  for (const std::string& v : r) CHECK(v == ref[i++]);
  CHECK(i == ref.size());
  for (size_t k = 0; k < ref.size(); ++k) CHECK(r[k] == ref[k]);
}

TEST_CASE("a ring destroys what it holds: on pop, clear, destruction and move") {
  // shared_ptr use counts tell whether the ring still owns a copy.
  auto token = std::make_shared<int>(1);
  {
    Ring<std::shared_ptr<int>> r;
    for (int i = 0; i < 10; ++i) r.push_back(token);  // grows 4 -> 8 -> 16
    CHECK(token.use_count() == 11);
    r.pop_front();
    r.pop_back();
    CHECK(token.use_count() == 9);
    Ring<std::shared_ptr<int>> moved(std::move(r));
    CHECK(token.use_count() == 9);  // moved, not copied
    CHECK(r.empty());
    CHECK(moved.size() == 8);
    moved.clear();
    CHECK(token.use_count() == 1);
    moved.push_back(token);
    r = std::move(moved);
    CHECK(token.use_count() == 2);
  }
  CHECK(token.use_count() == 1);  // the ring's destructor released the last copy
}

TEST_CASE("a ring holds move-only elements") {
  Ring<std::unique_ptr<int>> r;
  for (int i = 0; i < 9; ++i) r.push_back(std::make_unique<int>(i));
  for (int i = 0; i < 9; ++i) {
    CHECK(*r.front() == i);
    r.pop_front();
  }
  CHECK(r.empty());
}
