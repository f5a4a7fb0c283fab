// ibv_query_device / ibv_query_port contents from topo::HostNic.
#include "lib/daemon/device_info.h"

#include "lib/daemon/wire.h"
#include "sim/net/wire.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace rdmasim::daemon {

namespace {
uint32_t mtu_or_default(uint32_t bytes) {
  const uint32_t c = mtu_code(bytes);
  return c ? c : mtu_code(1024);
}
}  // namespace

void fill_device(const topo::HostNic& nic, ipc::QueryDeviceResp* out) {
  *out = {};
  const nic::HcaConfig& h = nic.hca;
  std::snprintf(out->name, sizeof out->name, "%s", nic.device.c_str());
  out->node_guid = nic.node_guid;
  const bool ib = nic.link_layer == net::LinkLayer::InfiniBand;
  const bool iwarp = nic.link_layer == net::LinkLayer::IWarp;
  out->link_layer = static_cast<uint32_t>(ib ? ipc::LinkLayer::InfiniBand : ipc::LinkLayer::Ethernet);
  out->transport_type = static_cast<uint32_t>(iwarp ? ipc::Transport::IWarp : ipc::Transport::Ib);
  out->node_type = static_cast<uint32_t>(iwarp ? ipc::NodeType::Rnic : ipc::NodeType::Ca);
  ipc::WireDeviceAttr& a = out->attr;
  std::snprintf(a.fw_ver, sizeof a.fw_ver, "%s", nic.fw_ver.c_str());
  a.sys_image_guid = nic.node_guid;
  a.max_mr_size = h.max_mr_size;
  a.page_size_cap = 0xfffff000;  // 4 KiB and up
  a.vendor_id = nic.vendor_id;
  a.vendor_part_id = nic.vendor_part_id;
  a.hw_ver = nic.hw_ver;
  a.max_qp = h.max_qp;
  a.max_qp_wr = h.max_qp_wr;
  // iWARP has no RNR NAK (a SEND without a receive terminates the stream): no RC_RNR_NAK_GEN.
  a.device_cap_flags = (iwarp ? 0u : ipc::kDevRcRnrNakGen) | ipc::kDevShutdownPort |
                       ipc::kDevPortActiveEvent | ipc::kDevSysImageGuid | ipc::kDevChangePhyPort;
  if (!iwarp) a.device_cap_flags |= ipc::kDevXrc;  // mlx5 reports XRC; iWARP devices have none
  a.max_sge = std::min<uint32_t>(h.max_sge, ipc::kMaxSge);
  // An RDMAP Read Request names one sink buffer (RFC 5040 4.4): iWARP devices report one SGE
  // per READ (siw, iw_cxgb4) and refuse more at post (EINVAL).
  a.max_sge_rd = iwarp ? 1 : a.max_sge;
  a.max_cq = h.max_cq;
  a.max_cqe = h.max_cqe;
  a.max_mr = h.max_mr;
  if (h.mem_windows) {
    // mlx5_ib_query_device: MEM_WINDOW | MEM_WINDOW_TYPE_2B, max_mw = 1 << log_max_mkey.
    a.device_cap_flags |= ipc::kDevMemWindow | ipc::kDevMemWindowType2B;
    a.max_mw = h.max_mw;
  }
  a.max_pd = h.max_pd;
  a.max_qp_rd_atom = h.max_qp_rd_atom;
  a.max_res_rd_atom = h.max_qp_rd_atom * h.max_qp;
  a.max_qp_init_rd_atom = h.max_qp_rd_atom;
  a.atomic_cap = static_cast<uint32_t>(h.atomics ? ipc::AtomicCap::Hca : ipc::AtomicCap::None);
  a.max_ah = h.max_qp;
  a.max_srq = h.max_srq;
  a.max_srq_wr = h.max_srq_wr;
  a.max_srq_sge = std::min<uint32_t>(h.max_srq_sge, ipc::kMaxSge);
  a.max_pkeys = 1;
  a.local_ca_ack_delay = iwarp ? 0 : 16;  // an IB ACK timing hint; iWARP devices report 0
  a.phys_port_cnt = 1;
}

void rate_to_width_speed(Rate rate, uint8_t* width, uint8_t* speed) {
  // Lane rates (Gb/s, nominal) and their IBV speed codes; widths 1x, 4x, 8x, 12x.
  struct Lane { double gbps; uint8_t code; };
  static constexpr Lane lanes[] = {{2.5, 1}, {5, 2}, {10, 4}, {14, 16}, {25, 32}, {50, 64}, {100, 128}};
  struct Width { uint32_t n; uint8_t code; };
  static constexpr Width widths[] = {{4, 2}, {1, 1}, {8, 4}, {12, 8}, {2, 16}};
  const double g = rate.as_gbps();
  for (const Width& w : widths) {
    for (const Lane& l : lanes) {
      const double total = w.n * l.gbps;
      if (total > g * 0.99 && total < g * 1.01) {
        *width = w.code;
        *speed = l.code;
        return;
      }
    }
  }
  *width = 2;   // 4x
  *speed = 32;  // EDR: the closest conventional answer
}

void fill_port(const topo::HostNic& nic, ipc::QueryPortResp* out, bool port_active) {
  *out = {};
  ipc::WirePortAttr& p = out->attr;
  const bool ib = nic.link_layer == net::LinkLayer::InfiniBand;
  const bool iwarp = nic.link_layer == net::LinkLayer::IWarp;
  // IBTA PortPhysicalState: 5 LinkUp; 2 Polling is what a port whose cable is dead shows
  // (it keeps polling for a peer), and its logical state is then DOWN.
  p.state = static_cast<uint32_t>(port_active ? ipc::PortState::Active : ipc::PortState::Down);
  p.phys_state = port_active ? 5 : 2;
  p.max_mtu = mtu_or_default(nic.hca.max_mtu);
  p.active_mtu = mtu_or_default(nic.mtu);
  p.gid_tbl_len = ib || iwarp ? 1 : 2;
  p.port_cap_flags = ib ? (ipc::kPortSm | ipc::kPortCmSup) : ipc::kPortCmSup;
  p.max_msg_sz = 1u << 31;
  p.pkey_tbl_len = 1;
  p.lid = ib ? nic.lid : 0;
  p.sm_lid = ib ? nic.sm_lid : 0;
  p.lmc = 0;
  p.max_vl_num = ib ? 4 : 0;  // 4 = VL0-7 encoding
  p.sm_sl = 0;
  p.subnet_timeout = ib ? 18 : 0;
  rate_to_width_speed(nic.rate, &p.active_width, &p.active_speed);
  p.link_layer = static_cast<uint8_t>(ib ? ipc::LinkLayer::InfiniBand : ipc::LinkLayer::Ethernet);
  if (ib) {
    out->num_gids = 1;
    for (int i = 0; i < 8; ++i) {
      out->gids[0][i] = static_cast<uint8_t>(nic.subnet_prefix >> (56 - 8 * i));
      out->gids[0][8 + i] = static_cast<uint8_t>(nic.port_guid >> (56 - 8 * i));
    }
    out->gid_types[0] = static_cast<uint32_t>(ipc::GidType::Ib);
  } else if (iwarp) {
    // iWARP devices (siw, iw_cxgb4) report one GID: the port's MAC in bytes 0..5, zeros after.
    // The MAC is the one the captures use (net::mac_of: 02:00 and the IPv4 address).
    out->num_gids = 1;
    std::memset(out->gids[0], 0, 16);
    const auto mac = net::mac_of(nic.address);
    std::memcpy(out->gids[0], mac.data(), 6);
    out->gid_types[0] = static_cast<uint32_t>(ipc::GidType::Ib);
  } else {
    in_addr ip{};
    if (inet_pton(AF_INET, nic.ip.c_str(), &ip) != 1) ip.s_addr = htonl(nic.address);
    for (int g = 0; g < 2; ++g) {
      std::memset(out->gids[g], 0, 16);
      out->gids[g][10] = 0xff;
      out->gids[g][11] = 0xff;
      std::memcpy(&out->gids[g][12], &ip.s_addr, 4);
    }
    out->num_gids = 2;
    out->gid_types[0] = static_cast<uint32_t>(ipc::GidType::RoceV2);
    out->gid_types[1] = static_cast<uint32_t>(ipc::GidType::RoceV1);
  }
}

}  // namespace rdmasim::daemon
