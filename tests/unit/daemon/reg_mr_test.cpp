// REG_MR checks the range against the client's mappings: unmapped -> EFAULT.
#include <doctest/doctest.h>

#include <sys/mman.h>

#include <cerrno>

#include "lib/daemon/process_memory.h"
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

TEST_CASE("range_mapped on a live process: its own maps, read only as far as needed") {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Three pages: rw, r, rw; then the last one unmapped to make a hole at the end.
  auto* p = static_cast<char*>(mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(p != MAP_FAILED);
  REQUIRE(mprotect(p + page, page, PROT_READ) == 0);
  const auto a = reinterpret_cast<uint64_t>(p);
  const pid_t me = getpid();
  CHECK(daemon::range_mapped(me, a, 3 * page, false));
  CHECK_FALSE(daemon::range_mapped(me, a, 3 * page, true));  // the middle page is read-only
  CHECK(daemon::range_mapped(me, a + 2 * page, page, true));
  CHECK(daemon::range_mapped(me, a, 0, true));               // an empty range is covered
  CHECK_FALSE(daemon::range_mapped(me, ~0ull - 10, 100, false));  // wraps
  munmap(p + 2 * page, page);
  CHECK_FALSE(daemon::range_mapped(me, a, 3 * page, false));  // ends in a hole
  CHECK(daemon::range_mapped(me, a, 2 * page, false));
  munmap(p, 2 * page);
  CHECK_FALSE(daemon::range_mapped(me, a, 1, false));
}

namespace {
std::unique_ptr<Reply> rereg(RawClient& c, uint32_t mr, uint32_t flags, uint32_t pd, const void* addr,
                             uint64_t len, uint32_t access) {
  ipc::ReregMrReq r{};
  r.handle = mr;
  r.flags = flags;
  r.pd = pd;
  r.access = access;
  r.addr = reinterpret_cast<uint64_t>(addr);
  r.length = len;
  return c.call(ipc::Op::ReregMr, r);
}
}  // namespace

TEST_CASE("daemon rereg_mr: the new range and rights are checked against the mappings") {
  // man ibv_rereg_mr: conceptually dereg + reg, so the same checks as REG_MR apply to the
  // new translation / access (EFAULT for memory the process cannot give the rights to);
  // the keys are kept; unknown MR or PD handles are ENOENT.
  TestDaemon d;
  RawClient c(d.path());
  REQUIRE(c.hello() == 0);
  const uint32_t pd = c.alloc_pd();
  const uint32_t pd2 = c.alloc_pd();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* rw = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  void* ro = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(rw != MAP_FAILED);
  REQUIRE(ro != MAP_FAILED);
  auto mr = reg(c, pd, rw, page, IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr->hdr.status == 0);
  const auto keys = mr->as<ipc::RegMrResp>();
  // Move to the second page: keys unchanged.
  auto moved = rereg(c, keys.handle, IBV_REREG_MR_CHANGE_TRANSLATION, 0, rw + page, page, 0);
  REQUIRE(moved->hdr.status == 0);
  CHECK(moved->as<ipc::RegMrResp>().lkey == keys.lkey);
  CHECK(moved->as<ipc::RegMrResp>().rkey == keys.rkey);
  // LOCAL_WRITE on a read-only mapping, and an unmapped range: EFAULT.
  CHECK(rereg(c, keys.handle, IBV_REREG_MR_CHANGE_TRANSLATION, 0, ro, page, 0)->hdr.status == EFAULT);
  CHECK(rereg(c, keys.handle, IBV_REREG_MR_CHANGE_TRANSLATION, 0, reinterpret_cast<void*>(0x1000), page, 0)
            ->hdr.status == EFAULT);
  // Dropping LOCAL_WRITE makes the read-only page acceptable.
  CHECK(rereg(c, keys.handle, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS, 0, ro, page,
              IBV_ACCESS_REMOTE_READ)->hdr.status == 0);
  // REMOTE_WRITE without LOCAL_WRITE (man ibv_reg_mr) is EINVAL. An on-demand paging MR
  // pins nothing, so its range is not checked against the mappings (ib_umem_odp): the
  // unmapped range refused above is accepted with ON_DEMAND.
  CHECK(rereg(c, keys.handle, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS, 0, rw, page,
              IBV_ACCESS_REMOTE_WRITE)->hdr.status == EINVAL);
  CHECK(rereg(c, keys.handle, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS, 0,
              reinterpret_cast<void*>(0x1000), page, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND)
            ->hdr.status == 0);
  // Another PD of this client; an unknown PD or MR handle.
  CHECK(rereg(c, keys.handle, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0)->hdr.status == 0);
  CHECK(c.call(ipc::Op::DeallocPd, ipc::HandleReq{pd2})->hdr.status == EBUSY);  // the MR holds pd2
  CHECK(rereg(c, keys.handle, IBV_REREG_MR_CHANGE_PD, 4242, nullptr, 0, 0)->hdr.status == ENOENT);
  CHECK(rereg(c, 4242, IBV_REREG_MR_CHANGE_ACCESS, 0, nullptr, 0, 0)->hdr.status == ENOENT);
  CHECK(c.call(ipc::Op::DeregMr, ipc::HandleReq{keys.handle})->hdr.status == 0);
  munmap(rw, 2 * page);
  munmap(ro, page);
}
