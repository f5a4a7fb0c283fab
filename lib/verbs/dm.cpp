// Device memory (man ibv_alloc_dm): ibv_alloc_dm / ibv_free_dm, ibv_memcpy_to_dm /
// ibv_memcpy_from_dm and ibv_reg_dm_mr, the verbs_context ops alloc_dm / free_dm /
// reg_dm_mr. The DM's bytes are a shared mapping of the daemon's (the simulated NIC's
// memory): the copies are plain copies into it with mlx5's checks, as mlx5's are stores
// into the mapped on-chip memory; the HCA model reads and writes the same bytes.
#include <cerrno>
#include <cstring>

#include "lib/verbs/control.h"
#include "lib/verbs/objects.h"

namespace rdmasim::verbs {
namespace {

struct Dm {
  ibv_dm dm{};
  Mapping map;
  uint64_t length = 0;  // as allocated (the copies are checked against it)
  static Dm* from(ibv_dm* d) { return container<Dm>(d, offsetof(Dm, dm)); }
};

// mlx5_copy_to_dm: past the DM's end EFAULT; the device takes 4-byte aligned offsets and
// lengths only ("Due to HW limitation, DM access address and length must be aligned to 4
// bytes"), else EINVAL.
int memcpy_to_dm(ibv_dm* dm, uint64_t offset, const void* host, size_t length) {
  Dm* d = Dm::from(dm);
  if (offset > d->length || length > d->length - offset) return EFAULT;
  if ((offset & 3) || (length & 3)) return EINVAL;
  std::memcpy(static_cast<char*>(d->map.base) + offset, host, length);
  return 0;
}

// mlx5_copy_from_dm: past the end EFAULT; a 4-byte aligned offset (the reads are 4-byte
// words), any length.
int memcpy_from_dm(void* host, ibv_dm* dm, uint64_t offset, size_t length) {
  Dm* d = Dm::from(dm);
  if (offset > d->length || length > d->length - offset) return EFAULT;
  if (offset & 3) return EINVAL;
  std::memcpy(host, static_cast<const char*>(d->map.base) + offset, length);
  return 0;
}

}  // namespace

// man ibv_alloc_dm: NULL and errno on failure. comp_mask bits none are defined: EINVAL
// (mlx5_alloc_dm's check_comp_mask); length 0 or above max_dm_size EINVAL, a device whose
// memory is taken ENOMEM (the daemon).
ibv_dm* alloc_dm_op(ibv_context* c, ibv_alloc_dm_attr* attr) {
  if (!attr || attr->comp_mask) return fail<ibv_dm>(EINVAL);
  uint32_t handle = 0;
  Mapping map;
  if (int rc = backend_of(c).alloc_dm(attr->length, attr->log_align_req, &handle, &map))
    return fail<ibv_dm>(rc);
  auto* d = new Dm();
  d->map = map;
  d->length = attr->length;
  d->dm.context = c;
  d->dm.memcpy_to_dm = memcpy_to_dm;
  d->dm.memcpy_from_dm = memcpy_from_dm;
  d->dm.comp_mask = 0;
  d->dm.handle = handle;
  return &d->dm;
}

// ibv_free_dm: 0 or the errno; EBUSY while an MR is registered on it (uverbs keeps the DM
// referenced by its MRs).
int free_dm_op(ibv_dm* dm) {
  if (!dm) return EINVAL;
  if (int rc = backend_of(dm->context).free_dm(dm->handle)) return rc;
  Dm* d = Dm::from(dm);
  d->map.unmap();
  delete d;
  return 0;
}

// ibv_reg_dm_mr: mlx5_reg_dm_mr allows LOCAL_WRITE, REMOTE_WRITE/READ/ATOMIC and
// ZERO_BASED, plus the optional bits (ignored, as ibv_reg_mr does); any other bit EINVAL.
// ibv_cmd_reg_dm_mr requires IBV_ACCESS_ZERO_BASED ("DM MRs are always 0 based", EINVAL)
// and sets addr NULL; offset/length past the DM EINVAL (the daemon).
ibv_mr* reg_dm_mr_op(ibv_pd* pd, ibv_dm* dm, uint64_t offset, size_t length, unsigned int access) {
  constexpr unsigned kAllowed = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED |
                                IBV_ACCESS_OPTIONAL_RANGE;
  if (!pd || !dm || (access & ~kAllowed) || !(access & IBV_ACCESS_ZERO_BASED) || dm->context != pd->context)
    return fail<ibv_mr>(EINVAL);
  backend::MrKeys keys;
  const unsigned acc = access & ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
  if (int rc = backend_of(pd->context).reg_dm_mr(pd->handle, dm->handle, offset, length, acc, &keys))
    return fail<ibv_mr>(rc);
  auto* mr = new Mr();
  mr->mr.context = pd->context;
  mr->mr.pd = pd;
  mr->mr.addr = nullptr;
  mr->mr.length = length;
  mr->mr.handle = keys.handle;
  mr->mr.lkey = keys.lkey;
  mr->mr.rkey = keys.rkey;
  return &mr->mr;
}

}  // namespace rdmasim::verbs
