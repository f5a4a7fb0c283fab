// Translation between the wire structs of lib/ipc/proto.h and the HCA model's types.
// Every function that reads shared memory treats it as hostile: it validates, never trusts.
#pragma once

#include <cstdint>

#include "lib/ipc/proto.h"
#include "sim/nic/types.h"

namespace rdmasim::daemon {

// Converts a copied SQ slot. Returns 0 or EINVAL (bad opcode, num_sge > max_sge,
// inline_len > kMaxInline, flags outside ipc::kKnownSendFlags). `max_sge` is the QP's granted limit.
int to_send_wr(const ipc::SqWqe& w, uint32_t max_sge, nic::SendWr* out);
// Converts a copied RQ/SRQ slot: 0 or EINVAL (num_sge > max_sge).
int to_recv_wr(const ipc::RqWqe& w, uint32_t max_sge, nic::RecvWr* out);

// Fills a Cqe from a model completion; `srq_handle` is the client's handle of the SRQ
// (0 if none). Does not write `seq`: the ring writer publishes it last.
void to_cqe(const nic::Completion& c, uint32_t srq_handle, ipc::Cqe* out);

// ipc::WireQpAttr <-> nic::QpAttr (the attribute mask has the same bits on both sides).
nic::QpAttr to_qp_attr(const ipc::WireQpAttr& a);
ipc::WireQpAttr from_qp_attr(const nic::QpAttr& a);
nic::AddressVector to_av(const ipc::WireAv& a);
ipc::WireAv from_av(const nic::AddressVector& a);
nic::QpCaps to_caps(const ipc::WireQpCap& c);
ipc::WireQpCap from_caps(const nic::QpCaps& c);

// MTU code (1 = 256 ... 5 = 4096, as IBV_MTU_*) for a byte count; 0 when it is not one.
uint32_t mtu_code(uint32_t bytes);

}  // namespace rdmasim::daemon
