// The backend seam's failure contract: what is not implemented says EOPNOTSUPP, never a
// silent success and never a call through a null pointer.
#include <doctest/doctest.h>

#include <cerrno>

#include "lib/backend/backend.h"
#include "lib/backend/hardware.h"

using namespace rdmasim;

TEST_CASE("backend: every operation a backend does not override is EOPNOTSUPP") {
  backend::Backend none;  // overrides nothing: the shared defaults
  uint32_t h = 7;
  ibv_device_attr da{};
  backend::PortInfo port;
  backend::ContextLinks links;
  backend::MrKeys keys;
  backend::CqRing cq;
  backend::QpRings qp;
  backend::SrqRing srq;
  backend::ChannelRing ch;
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  ibv_srq_attr sa{};
  uint32_t type = 0;
  CHECK(none.query_device(&da) == EOPNOTSUPP);
  CHECK(none.query_port(1, &port) == EOPNOTSUPP);
  CHECK(none.open_context(&links) == EOPNOTSUPP);
  CHECK(none.next_async_event(&type, &h) == EOPNOTSUPP);
  CHECK(none.alloc_pd(&h) == EOPNOTSUPP);
  CHECK(h == 7);  // and writes nothing
  CHECK(none.reg_mr(1, 0x1000, 64, 0x1000, 0, &keys) == EOPNOTSUPP);
  CHECK(none.alloc_mw(1, IBV_MW_TYPE_2, &h, &type) == EOPNOTSUPP);
  CHECK(none.create_comp_channel(&ch) == EOPNOTSUPP);
  CHECK(none.create_cq(16, 0, 0, &cq) == EOPNOTSUPP);
  CHECK(none.create_srq(1, sa, &srq) == EOPNOTSUPP);
  CHECK(none.create_qp(backend::QpRequest{}, &qp) == EOPNOTSUPP);
  CHECK(none.modify_qp(1, qa, IBV_QP_STATE) == EOPNOTSUPP);
  CHECK(none.query_qp(1, 0, &qa, &qi) == EOPNOTSUPP);
  CHECK(none.destroy_qp(1) == EOPNOTSUPP);
  CHECK(backend::kNotSupported == EOPNOTSUPP);
}

TEST_CASE("hardware: a function missing from the real library fails as documented") {
  const backend::HardwareTable missing{};  // what a failed dlmopen / dlsym leaves
  errno = 0;
  CHECK(backend::call_in<&backend::HardwareTable::ibv_alloc_pd>(missing, nullptr) == nullptr);
  CHECK(errno == EOPNOTSUPP);  // NULL + errno for calls that return a pointer
  CHECK(backend::call_in<&backend::HardwareTable::ibv_dealloc_pd>(missing, nullptr) == EOPNOTSUPP);
  backend::call_in<&backend::HardwareTable::ibv_ack_cq_events>(missing, nullptr, 1u);  // void: returns
}

namespace {
int fake_dealloc_pd(ibv_pd* pd) { return pd ? 0 : 42; }
}  // namespace

TEST_CASE("hardware: a present function is called with the arguments as given") {
  backend::HardwareTable t{};
  t.ibv_dealloc_pd = fake_dealloc_pd;
  CHECK(backend::call_in<&backend::HardwareTable::ibv_dealloc_pd>(t, nullptr) == 42);
}
