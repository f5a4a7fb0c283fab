// REG_MR checks the range against the client's mappings: unmapped -> EFAULT.
#include <doctest/doctest.h>

#include <sys/mman.h>

#include <cerrno>

#include "apps/rdmasim/process_memory.h"
#include "tests/unit/daemon/test_daemon.h"

using namespace rdmasim;
using namespace rdmasim::daemon::test;

namespace {
std::unique_ptr<Reply> reg(RawClient& c, uint32_t pd, const void* addr, uint64_t len, uint32_t access) {
  ipc::RegMrReq r{};
  r.pd = pd;
  r.access = access;
  r.addr = reinterpret_cast<uint64_t>(addr);
  r.length = len;
  r.iova = r.addr;
  return c.call(ipc::Op::RegMr, r);
}
}  // namespace

TEST_CASE("daemon reg_mr: mapped memory registers, unmapped memory gets EFAULT") {
  TestDaemon d;
  RawClient c(d.path());
  REQUIRE(c.hello() == 0);
  const uint32_t pd = c.alloc_pd();
  REQUIRE(pd != 0);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Two pages; the second is unmapped to make a hole right after the first.
  char* p = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(p != MAP_FAILED);
  munmap(p + page, page);
  auto ok = reg(c, pd, p, page, IBV_ACCESS_LOCAL_WRITE);
  CHECK(ok->hdr.status == 0);
  CHECK(reg(c, pd, p, 2 * page, IBV_ACCESS_LOCAL_WRITE)->hdr.status == EFAULT);
  CHECK(reg(c, pd, reinterpret_cast<void*>(0x1000), 4096, 0)->hdr.status == EFAULT);
  CHECK(reg(c, pd, p, 0, 0)->hdr.status == EINVAL);
  CHECK(reg(c, pd, reinterpret_cast<void*>(~0ull - 10), 100, 0)->hdr.status == EINVAL);  // wraps
  // Still serving: deregister the good one.
  CHECK(c.call(ipc::Op::DeregMr, ipc::HandleReq{ok->as<ipc::RegMrResp>().handle})->hdr.status == 0);
  munmap(p, page);
}

TEST_CASE("daemon reg_mr: read-only memory with LOCAL_WRITE gets EFAULT") {
  TestDaemon d;
  RawClient c(d.path());
  REQUIRE(c.hello() == 0);
  const uint32_t pd = c.alloc_pd();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED);
  CHECK(reg(c, pd, p, page, IBV_ACCESS_LOCAL_WRITE)->hdr.status == EFAULT);
  CHECK(reg(c, pd, p, page, 0)->hdr.status == 0);
  munmap(p, page);
}

TEST_CASE("range_mapped: contiguous mappings cover a range; holes and missing w do not") {
  const std::string maps =
      "1000-3000 rw-p 00000000 00:00 0\n"
      "3000-4000 r--p 00000000 00:00 0\n"
      "5000-6000 rw-p 00000000 00:00 0 [heap]\n";
  CHECK(daemon::range_mapped(maps, 0x1000, 0x3000, false));
  CHECK_FALSE(daemon::range_mapped(maps, 0x1000, 0x3000, true));   // 3000-4000 is read-only
  CHECK(daemon::range_mapped(maps, 0x1800, 0x1000, true));
  CHECK_FALSE(daemon::range_mapped(maps, 0x3800, 0x2000, false));  // hole 4000-5000
  CHECK_FALSE(daemon::range_mapped(maps, 0x6000, 1, false));
}
