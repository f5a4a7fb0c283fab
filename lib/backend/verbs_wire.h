// The client side of the wire translation: rdma-core's ibv_* structs to and from the
// protocol's own structs (lib/ipc/proto.h). The daemon side is lib/daemon/wire.h.
#pragma once

#include <infiniband/verbs.h>

#include "lib/ipc/proto.h"

namespace rdmasim::backend {

ipc::WireQpCap to_wire(const ibv_qp_cap& c);
ibv_qp_cap from_wire(const ipc::WireQpCap& c);
ipc::WireAv to_wire(const ibv_ah_attr& a);
ibv_ah_attr from_wire(const ipc::WireAv& a);
// Every field is copied; the mask says which the daemon reads.
ipc::WireQpAttr to_wire(const ibv_qp_attr& a);
ibv_qp_attr from_wire(const ipc::WireQpAttr& a);
// qp_type, sq_sig_all and cap; the pointers (contexts, CQs, SRQ) are the caller's to fill.
ibv_qp_init_attr from_wire(const ipc::WireQpInitAttr& a);
// The device attributes; node_guid comes from the response (host order on the wire,
// network order in ibv_device_attr).
ibv_device_attr from_wire(const ipc::QueryDeviceResp& r);
// The port attributes, zero where the wire carries nothing.
ibv_port_attr from_wire(const ipc::WirePortAttr& a);

}  // namespace rdmasim::backend
