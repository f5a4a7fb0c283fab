// The host model (sim/host): PCIe transactions and CPU accounting. Expected times are the
// model's formulas written out: wire bytes = payload + per-TLP overhead, serialized at the
// link's data rate, plus the one-way latency (and the host's read time for DMA reads).
#include <doctest/doctest.h>

#include "sim/host/cpu.h"
#include "sim/host/pcie.h"

using namespace rdmasim;
using namespace rdmasim::host;

namespace {
// The default link (Gen3 x16), turned on.
PcieConfig enabled() {
  PcieConfig c;
  c.enabled = true;
  return c;
}
}  // namespace

TEST_CASE("PCIe data rates: GT/s x lanes x 128/130") {
  // Gen3 8 GT/s x16 = 128 Gb/s raw, 126.03 Gb/s after 128b/130b coding (PCIe 3.0 spec 4.2.2).
  CHECK(pcie_rate(3, 16).bps == 8'000'000'000ull * 16 * 128 / 130);
  CHECK(pcie_rate(4, 16).bps == 16'000'000'000ull * 16 * 128 / 130);
  CHECK(pcie_rate(5, 8).bps == 32'000'000'000ull * 8 * 128 / 130);
  // The generation a NIC gets: the first x16 link faster than its port.
  CHECK(pcie_gen_for(Rate::gbps(100)) == 3);
  CHECK(pcie_gen_for(Rate::gbps(200)) == 4);
  CHECK(pcie_gen_for(Rate::gbps(400)) == 5);
}

TEST_CASE("an MMIO doorbell is its TLP's wire time plus the one-way latency") {
  const PcieConfig c = enabled();
  PcieLink link(c);
  const Rate r = pcie_rate(3, 16);
  // 8 B doorbell + 24 B TLP overhead.
  const Time t = link.mmio_write(ns(10), 8, PcieOp::Doorbell, 7);
  CHECK(t == ns(10) + tx_time(r, 8 + 24) + ns(125));
  // A second write issued at the same instant waits for the first to leave the link.
  const Time t2 = link.mmio_write(ns(10), 64, PcieOp::BlueFlame, 7);
  CHECK(t2 == ns(10) + tx_time(r, 32) + tx_time(r, 64 + 24) + ns(125));
  CHECK(link.transactions() == 2);
  CHECK(link.busy_to_device() == tx_time(r, 32) + tx_time(r, 88));
  CHECK(link.busy_to_host() == 0);
}

TEST_CASE("a DMA read: request up, host read, completions down") {
  const PcieConfig c = enabled();
  PcieLink link(c);
  link.record(true);
  const Rate r = pcie_rate(3, 16);
  // 64 B WQE fetch: one 24 B request TLP, 125 ns up, 175 ns in the host, one 64 + 20 B
  // completion, 125 ns down: about 430 ns in all.
  const DmaRead w = link.dma_read(0, 64, PcieOp::WqeFetch, 1);
  const Time answer = tx_time(r, 24) + ns(125) + ns(175);
  CHECK(w.data_start == answer);
  CHECK(w.end() == answer + tx_time(r, 64 + 20) + ns(125));
  CHECK(w.end() > ns(425));
  CHECK(w.end() < ns(440));
  // 4096 B: 16 completions of 256 B; the first 256 B arrive after one completion's time.
  PcieLink l2(c);
  const DmaRead p = l2.dma_read(0, 4096, PcieOp::PayloadRead, 1);
  CHECK(p.end() == answer + tx_time(r, 4096 + 16 * 20) + ns(125));
  CHECK(p.ready(256) == answer + tx_time(r, 256 + 20) + ns(125));
  CHECK(p.ready(1000) < p.ready(1024 + 1));
  REQUIRE(link.log().size() == 1);
  CHECK(link.log()[0].op == PcieOp::WqeFetch);
  CHECK(link.log()[0].end == w.end());
  CHECK(pcie_op_name(PcieOp::CqeWrite) == "cqe_write");
}

TEST_CASE("posted writes to the host keep their order") {
  const PcieConfig c = enabled();
  PcieLink link(c);
  const Rate r = pcie_rate(3, 16);
  const Time data = link.dma_write(0, 4096, PcieOp::PayloadWrite, 1);
  const Time cqe = link.dma_write(0, 64, PcieOp::CqeWrite, 1);
  CHECK(data == tx_time(r, 4096 + 16 * 24) + ns(125));
  CHECK(cqe == tx_time(r, 4096 + 16 * 24) + tx_time(r, 64 + 24) + ns(125));
  CHECK(cqe > data);
}

TEST_CASE("CPU busy time per core and cause") {
  Cpu cpu(2);
  cpu.record(true);
  CHECK(cpu.run(0, "post", ns(100), ns(50)) == ns(150));
  // Overlapping work on the same core waits: it runs 150..170.
  CHECK(cpu.run(0, "poll", ns(120), ns(20)) == ns(170));
  cpu.run(1, "irq", ns(0), ns(30));
  CHECK(cpu.busy(0) == ns(70));
  CHECK(cpu.busy(0, "poll") == ns(20));
  CHECK(cpu.busy(1, "post") == 0);
  CHECK(cpu.busy_total() == ns(100));
  CHECK(cpu.busy_between(0, ns(140), ns(160)) == ns(20));
  CHECK(cpu.busy_between(1, ns(30), ns(1000)) == 0);
  // 1 MiB at 10 GB/s: 104857.6 ns.
  CHECK(Cpu::copy_time(1 << 20, 10.0) == 104'857'600);
}

TEST_CASE("an MMIO write passes read completions queued toward the device") {
  const PcieConfig c = enabled();
  PcieLink link(c);
  const Rate r = pcie_rate(3, 16);
  // 16384 B of read data: completions of 16384 + 64 x 20 B (1121 ns) leave the host from
  // `answer` on.
  const DmaRead big = link.dma_read(0, 16384, PcieOp::PayloadRead, 1);
  const Time answer = tx_time(r, 24) + ns(125) + ns(175);
  REQUIRE(big.data_start == answer);
  // A doorbell issued while they stream goes at once (PCIe lets posted writes pass
  // completions): its TLP time and the latency, no wait for the completions.
  const Time at = answer + ns(10);
  CHECK(link.mmio_write(at, 8, PcieOp::Doorbell, 2) == at + tx_time(r, 8 + 24) + ns(125));
  // The completions not yet sent slip by the doorbell's wire time: a read issued now, whose
  // host answer (at + 300 ns) comes while they still stream, gets its data after them and
  // the doorbell.
  const DmaRead next = link.dma_read(at, 64, PcieOp::WqeFetch, 2);
  CHECK(next.data_start == answer + tx_time(r, 16384 + 64 * 20) + tx_time(r, 8 + 24));
}

TEST_CASE("CPU slices: kept only while recording; back-to-back work of one cause is one slice") {
  Cpu cpu(1);
  cpu.run(0, "poll", 0, ns(50));
  CHECK(cpu.slices().empty());
  CHECK(cpu.busy(0, "poll") == ns(50));  // the totals count regardless
  cpu.record(true);
  cpu.run(0, "poll", ns(50), ns(50));
  cpu.run(0, "poll", ns(100), ns(50));   // starts where the last ended: the same slice
  cpu.run(0, "compute", ns(150), ns(10));
  cpu.run(0, "poll", ns(200), ns(50));   // after a gap: a new slice
  REQUIRE(cpu.slices().size() == 3);
  CHECK(cpu.slices()[0].start == ns(50));
  CHECK(cpu.slices()[0].end == ns(150));
  CHECK(cpu.busy(0, "poll") == ns(200));
  CHECK(cpu.busy_between(0, 0, ns(1000)) == ns(160));  // recorded slices only
}
