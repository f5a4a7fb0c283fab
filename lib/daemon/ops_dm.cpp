// Device memory: ibv_alloc_dm / ibv_free_dm and ibv_reg_dm_mr. The DM is a memfd the client
// maps (its ibv_memcpy_to_dm / ibv_memcpy_from_dm are plain copies into that mapping, as
// mlx5's are into the mapped on-chip memory); the HCA reaches it through a DmWindow.
#include <cerrno>

#include "lib/daemon/ops.h"

namespace rdmasim::daemon {

// man ibv_alloc_dm; mlx5_alloc_dm refuses a length above max_dm_size with EINVAL. The
// device's memory is shared by its clients: past what is left, ENOMEM (the MEMIC
// allocation of mlx5_ib_alloc_dm fails so).
int Ops::alloc_dm(Client& c, const ipc::AllocDmReq& r, ipc::HandleResp* out, ReplyFds* fds) {
  if (r.dev_index >= c.devs.size()) return EINVAL;
  const size_t dev = c.devs[r.dev_index];
  if (r.length == 0 || r.length > ipc::kMaxDmSize || r.log_align_req > ipc::kMaxDmLogAlign) return EINVAL;
  uint64_t used = 0;
  for (const auto& [id, other] : s_.clients)
    for (const auto& [h, dm] : other->dms)
      if (dm.dev == dev) used += dm.length;
  if (r.length > ipc::kMaxDmSize - used) return ENOMEM;
  Dm dm{dev, r.length, SharedMap::make(s_.local_maps, "rdmasim-dm", r.length)};
  if (!dm.map.ok()) return ENOMEM;
  out->handle = c.next_handle++;
  fds->pass_map(dm.map);
  c.dms.emplace(out->handle, std::move(dm));
  return 0;
}

int Ops::free_dm(Client& c, const ipc::HandleReq& r, NoBody*) {
  auto it = c.dms.find(r.handle);
  if (it == c.dms.end()) return ENOENT;
  if (it->second.mrs) return EBUSY;  // ib_uverbs: a DM with MRs on it cannot be freed
  c.dms.erase(it);
  return 0;
}

// The uverbs DM_MR_REG method: offset and length within the DM, else EINVAL; the access
// bits the front end passed (mlx5_reg_dm_mr filters them, ibv_cmd_reg_dm_mr requires
// IBV_ACCESS_ZERO_BASED). The MR's addresses, local and remote, are 0..length.
int Ops::reg_dm_mr(Client& c, const ipc::RegDmMrReq& r, ipc::RegMrResp* out) {
  auto pd = c.pds.find(r.pd);
  auto dm = c.dms.find(r.dm);
  if (pd == c.pds.end() || dm == c.dms.end()) return ENOENT;
  Dm& d = dm->second;
  if (pd->second.dev != d.dev) return EINVAL;
  if (r.length == 0 || r.offset > d.length || r.length > d.length - r.offset) return EINVAL;
  if (!(r.access & nic::kAccessZeroBased)) return EINVAL;
  auto window = std::make_unique<DmWindow>(static_cast<uint8_t*>(d.map.addr()) + r.offset, r.length);
  const uint32_t access = r.access & ~static_cast<uint32_t>(nic::kAccessZeroBased);
  nic::MrKeys keys;
  if (int rc = hca(d.dev).reg_mr(pd->second.pd, window.get(), 0, r.length, 0, access, &keys)) return rc;
  out->handle = c.next_handle++;
  out->lkey = keys.lkey;
  out->rkey = keys.rkey;
  Mr mr{d.dev, keys.lkey, access, 0, r.length, r.pd};
  mr.dm = r.dm;
  mr.dm_window = std::move(window);
  c.mrs.emplace(out->handle, std::move(mr));
  d.mrs++;
  return 0;
}

}  // namespace rdmasim::daemon
