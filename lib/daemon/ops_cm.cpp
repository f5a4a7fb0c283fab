// The rdma_cm operations: decoding is the table's (op_table.cpp), the state is the CmAgent's.
#include "lib/daemon/ops.h"

namespace rdmasim::daemon {

int Ops::cm_create_channel(Client& c, const NoBody&, ipc::CmChannelResp* out, ReplyFds* fds) {
  int efd = -1;
  if (int rc = s_.cm.create_channel(c, &out->handle, &efd)) return rc;
  fds->pass(efd);
  return 0;
}
int Ops::cm_destroy_channel(Client& c, const ipc::HandleReq& r, NoBody*) {
  return s_.cm.destroy_channel(c, r.handle);
}
int Ops::cm_create_id(Client& c, const ipc::CmCreateIdReq& r, ipc::HandleResp* out) {
  return s_.cm.create_id(c, r, &out->handle);
}
int Ops::cm_destroy_id(Client& c, const ipc::CmIdReq& r, NoBody*) { return s_.cm.destroy_id(c, r.id); }
int Ops::cm_bind(Client& c, const ipc::CmBindReq& r, ipc::CmAddrResp* out) { return s_.cm.bind(c, r, out); }
int Ops::cm_listen(Client& c, const ipc::CmListenReq& r, NoBody*) { return s_.cm.listen(c, r); }
int Ops::cm_resolve_addr(Client& c, const ipc::CmResolveAddrReq& r, ipc::CmAddrResp* out) {
  return s_.cm.resolve_addr(c, r, out);
}
int Ops::cm_resolve_route(Client& c, const ipc::CmIdReq& r, ipc::CmPath* out) {
  return s_.cm.resolve_route(c, r, out);
}
int Ops::cm_connect(Client& c, const ipc::CmConnectReq& r, NoBody*) { return s_.cm.connect(c, r); }
int Ops::cm_accept(Client& c, const ipc::CmConnectReq& r, NoBody*) { return s_.cm.accept(c, r); }
int Ops::cm_reject(Client& c, const ipc::CmConnectReq& r, NoBody*) { return s_.cm.reject(c, r); }
int Ops::cm_establish(Client& c, const ipc::CmIdReq& r, NoBody*) { return s_.cm.establish(c, r); }
int Ops::cm_disconnect(Client& c, const ipc::CmIdReq& r, NoBody*) { return s_.cm.disconnect(c, r); }
int Ops::cm_get_event(Client& c, const ipc::HandleReq& r, ipc::CmEventResp* out) {
  return s_.cm.get_event(c, r.handle, out);
}

}  // namespace rdmasim::daemon
