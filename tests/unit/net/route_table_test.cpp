// net::RouteTable (sim/net/route_table.h), the flat forwarding table every switch holds.
// Checked against std::map as the reference: after the same set() calls, every address
// answers with the same ports, and an address never set answers with none.
#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <vector>

#include "sim/core/rng.h"
#include "sim/net/route_table.h"

using rdmasim::net::Address;
using rdmasim::net::RouteTable;

namespace {
bool same(std::span<const int> got, const std::vector<int>& want) {
  return std::vector<int>(got.begin(), got.end()) == want;
}
}  // namespace

TEST_CASE("an empty route table routes nothing") {
  RouteTable t;
  CHECK(t.get(0).empty());
  CHECK(t.get(0x0a000001).empty());
}

TEST_CASE("a route table answers as a map across growth and replaced routes") {
  // 4096 addresses in the 10.0.0.0/8 shape the fabric uses plus some with only high bits
  // set (a weak hash of the low bits would pile these into one probe run), each given an
  // ECMP set of 0..8 ports; a third are replaced afterwards by a set that is shorter (it
  // is rewritten in place) or longer (it moves), as set_route may be called again.
  RouteTable t;
  std::map<Address, std::vector<int>> ref;
  rdmasim::Rng rng(11);
  auto ports = [&] {
    std::vector<int> p(rng.below(9));
    for (int& x : p) x = static_cast<int>(rng.below(64));
    return p;
  };
  for (Address a = 0; a < 4096; ++a) {
    const Address dst = a % 2 ? 0x0a000000u + a : a << 20;
    ref[dst] = ports();
    t.set(dst, ref[dst]);
  }
  for (auto& [dst, p] : ref)
    if (rng.below(3) == 0) t.set(dst, p = ports());
  for (const auto& [dst, p] : ref) REQUIRE(same(t.get(dst), p));
  CHECK(t.get(0x0c000001u).empty());  // never set: neither shape
  CHECK(t.get(0x0a000000u + 2).empty());
}

TEST_CASE("route tables sharing one address index keep their own routes") {
  // Two switches numbering destinations through one AddressIndex (as a fabric's do): each
  // answers with its own sets, a destination only the other routes answers with none, and
  // the index numbers each address once, in the order first added.
  auto index = std::make_shared<rdmasim::net::AddressIndex>();
  RouteTable a, b;
  a.use_index(index);
  b.use_index(index);
  a.set(0x0a000001, {1});
  a.set(0x0a000002, {2, 3});
  b.set(0x0a000002, {0});
  b.set(0x0a000003, {2, 3});
  CHECK(same(a.get(0x0a000001), {1}));
  CHECK(same(a.get(0x0a000002), {2, 3}));
  CHECK(a.get(0x0a000003).empty());
  CHECK(b.get(0x0a000001).empty());
  CHECK(same(b.get(0x0a000002), {0}));
  CHECK(same(b.get(0x0a000003), {2, 3}));
  CHECK(index->size() == 3);
  CHECK(index->find(0x0a000001) == 0);
  CHECK(index->find(0x0a000003) == 2);
  CHECK(index->find(0x0a000004) == rdmasim::net::AddressIndex::kNone);
}

TEST_CASE("a route of more ports than an entry can name is refused, not cut short") {
  // A destination's entry packs its set's length in 12 bits: 4095 ports at most (a switch
  // of 4096 ports, one of them the way in). One more is refused with std::length_error,
  // where silently wrapping the length would send packets out of the wrong ports.
  RouteTable t;
  std::vector<int> widest(4095);
  for (size_t i = 0; i < widest.size(); ++i) widest[i] = static_cast<int>(i);
  t.set(0x0a000001, widest);
  CHECK(same(t.get(0x0a000001), widest));
  widest.push_back(4095);
  CHECK_THROWS_AS(t.set(0x0a000002, widest), std::length_error);
  CHECK(t.get(0x0a000002).empty());
}
