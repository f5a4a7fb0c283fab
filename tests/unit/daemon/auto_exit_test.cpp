// --auto: a daemon with no clients exits by itself after its idle time.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "tests/unit/daemon/test_daemon.h"

using namespace rdmasim;

TEST_CASE("daemon auto mode: with no clients for idle_exit_ms, run() returns") {
  daemon::DaemonOptions o;
  o.socket_path = "/tmp/rdmasim-test-auto-" + std::to_string(getpid()) + ".sock";
  o.auto_exit = true;
  o.idle_exit_ms = 100;
  daemon::Daemon d(topo::default_fabric_config(), o);
  std::string why;
  REQUIRE(d.listen(&why) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(d.run() == 0);
  const auto waited = std::chrono::steady_clock::now() - t0;
  // At least the idle time; at most one 1 s sleep on top of it (the auto-mode epoll timeout).
  CHECK(waited >= std::chrono::milliseconds(100));
  CHECK(waited < std::chrono::milliseconds(2500));
  unlink((o.socket_path + ".lock").c_str());
}
