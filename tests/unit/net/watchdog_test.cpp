// PFC watchdog: a storm of pauses longer than `detect` drops the queue and ignores pauses.
#include <doctest/doctest.h>

#include "sim/net/egress_port.h"
#include "sim/net/link.h"
#include "tests/unit/net/recorder.h"

using namespace rdmasim;
using namespace rdmasim::net;

TEST_CASE("pfc watchdog: a class paused longer than detect drops its queue and ignores pause for restore") {
  Engine e;
  EgressConfig ec{.rate = Rate::gbps(100)};
  ec.watchdog = PfcWatchdogConfig{.detect = us(100), .restore = us(50)};
  EgressPort port(e, ec);
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  // A storm: XOFF (0xffff quanta = 335.5 us at 100 Gb/s) refreshed every 100 us up to 1 ms.
  for (Time t = 0; t < ms(1); t += us(100)) e.schedule_at(t, [&] { port.pause_class(0, 0xffff); });
  e.schedule_at(us(1), [&] {
    for (int i = 0; i < 10; ++i) port.enqueue(test::roce_packet(4096));
  });
  // Sent while the pause is ignored (100 us + 50 us restore): delivered.
  e.schedule_at(us(120), [&] { port.enqueue(test::roce_packet(4096)); });
  // Sent after restoration, while the storm goes on: held again until the next detection.
  e.schedule_at(us(160), [&] { port.enqueue(test::roce_packet(4096)); });
  e.run_until(us(200));
  CHECK(port.counters().watchdog_storms == 1);
  CHECK(port.counters().watchdog_drops == 10);  // queued when it fired at 100 us
  CHECK(port.counters().drops == 10);           // and counted with every other drop
  CHECK(port.counters().classes[0].drops == 10);
  CHECK(port.counters().drop_bytes == 10 * 4178);  // 4096 B + 82 B of headers and framing
  REQUIRE(rx.arrivals.size() == 1);
  CHECK(rx.arrivals[0].at == us(120) + ps(334'240));
  // The next detection: paused again from 150 us, fires at 150 + 100 = 250 us.
  e.run_until(us(260));
  CHECK(port.counters().watchdog_storms == 2);
  CHECK(port.counters().watchdog_drops == 11);
  e.run();
}

TEST_CASE("pfc watchdog: pauses shorter than detect never fire it") {
  Engine e;
  EgressConfig ec{.rate = Rate::gbps(100)};
  ec.watchdog = PfcWatchdogConfig{.detect = us(400), .restore = us(50)};
  EgressPort port(e, ec);
  test::Recorder rx(e);
  LinkDirection link(e, port, rx, 0, 0);
  port.pause_class(0, 0xffff);  // 335.5 us < 400 us
  for (int i = 0; i < 5; ++i) port.enqueue(test::roce_packet(4096));
  e.run();
  CHECK(port.counters().watchdog_storms == 0);
  CHECK(rx.arrivals.size() == 5);
  // held for the whole pause: 65535 * 64 B at 100 Gb/s = 335.5392 us, then 5 serializations
  CHECK(rx.arrivals.back().at == tx_time(Rate::gbps(100), 64ull * 0xffff) + 5 * ps(334'240));
}
