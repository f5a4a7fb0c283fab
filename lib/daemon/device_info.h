// What ibv_query_device / ibv_query_port report for one simulated NIC port.
#pragma once

#include "lib/ipc/proto.h"
#include "sim/topo/fabric.h"

namespace rdmasim::daemon {

// Fills the device description from the fabric's view of the NIC and its HCA limits.
void fill_device(const topo::HostNic& nic, ipc::QueryDeviceResp* out);
// Fills the port attributes and GID table: port ACTIVE, MTU/width/speed from the NIC;
// RoCE/iWARP GID 0 = ::ffff:<ip> (RoCEv2), GID 1 the same as RoCEv1; IB GID 0 =
// subnet_prefix:port_guid.
// `port_active` false (the NIC's link is down): state Down, phys_state Polling.
void fill_port(const topo::HostNic& nic, ipc::QueryPortResp* out, bool port_active = true);

// Port active_width / active_speed codes for a link rate: the IB lane encoding
// whose width x lane rate matches (100 Gb/s = 4x EDR: width 2, speed 32).
void rate_to_width_speed(Rate rate, uint8_t* width, uint8_t* speed);

}  // namespace rdmasim::daemon
