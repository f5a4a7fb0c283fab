// The readers of a fabric config's parameter objects, shared by parse_fabric
// (fabric_spec.cpp): the NIC's ("nic" and each host's NIC entry, nic_params.cpp) and the
// switch's and link's (switch_params.cpp). Internal to sim/topo.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/net/host_port.h"
#include "sim/net/ib_flow_control.h"
#include "sim/net/switch.h"
#include "sim/nic/hca.h"
#include "sim/topo/fabric_spec.h"

namespace rdmasim::topo {

class ConfigReader;

constexpr uint64_t kMellanoxOui = 0x0002c9;

// iWARP fabrics: "mtu" is the Ethernet MTU (default 1500, jumbo up to 9216).
constexpr int64_t kIwarpDefaultMtu = 1500, kIwarpMinMtu = 576, kIwarpMaxMtu = 9216;
// iWARP QPNs are (NIC number << 16) | a 16-bit number from 2 (HcaConfig::qpn_base).
constexpr size_t kIwarpMaxNics = 255;
constexpr uint32_t kIwarpMaxQp = 0xffff - 1;

// Per-NIC parameters: the "nic" defaults object and each host's NIC entry share these keys.
struct NicParams {
  uint32_t vendor_id = 0x02c9;
  uint32_t vendor_part_id = 4123;   // ConnectX-6
  uint32_t hw_ver = 0;
  std::string fw_ver = "rdmasim";
  uint64_t queue_bytes = 8 * 1024;  // NIC transmit queue per class: shallow (configs/README.md)
  std::array<uint32_t, 8> dwrr_weights{};
  uint32_t ib_vl_buffer_bytes = 128 * 1024;
  net::IbVlConfig vls;   // InfiniBand: set to net::default_ib_vls() before reading
  nic::HcaConfig hca;
  bool iwarp = false;  // the fabric's link layer is iWARP ("tcp" is allowed)
  // Receive buffer ("rx_drain_gbps", "rx_buffer_kb", "pfc"); finished per NIC by finish_rx.
  net::HostRxConfig rx;
  bool rx_buffer_given = false;
  std::optional<uint64_t> rx_xoff_bytes, rx_xon_bytes;   // absent: from the buffer size
  // "pcie": on unless false; the generation follows the link rate unless "gen" is given.
  bool pcie_gen_given = false;
};

#define RDMASIM_NIC_KEYS "vendor_id", "vendor_part_id", "hw_ver", "fw_ver", "queue_kb", \
    "wqe_latency_ns", "rx_latency_ns", "ack_every", "limits", "dwrr_weights", "ib_vl_buffer_kb", "cc", "vls", "tcp", \
    "rx_drain_gbps", "rx_buffer_kb", "pfc", "pcie", "loss_recovery"
#define RDMASIM_SWITCH_KEYS "forwarding_latency_ns", "queue_kb", "ecn", "pfc", "dwrr_weights", \
    "ib_vl_buffer_kb", "cut_through", "cut_through_header_bytes", "buffer", "vls", "ingress_arbitration"
#define RDMASIM_LINK_KEYS "rate_gbps", "latency_ns", "loss_rate", "ber", "schedule"

// The MTU a port reports (ibv_port_attr active_mtu/max_mtu). An iWARP device reports the
// largest IB MTU not above its netdev's MTU (siw and iw_cxgb4 use ib_mtu_int_to_enum():
// 1500 -> 1024, 9000 -> 4096).
uint32_t port_mtu(net::LinkLayer ll, uint32_t mtu);
// "dwrr_weights": 8 integers 0..1000, one per traffic class (0 = strict priority).
void read_weights(ConfigReader& r, const nlohmann::json& j, const std::string& path,
                  std::array<uint32_t, 8>& w);
// `classes` of object `e` at `path`: a list of 1..8 distinct traffic classes as a bit mask;
// `dflt` when absent.
uint8_t read_class_mask(ConfigReader& r, const nlohmann::json& e, const std::string& path, uint8_t dflt);
// InfiniBand virtual lanes ("vls") of a NIC or a switch.
void read_vls(ConfigReader& r, const nlohmann::json& j, const std::string& path, bool ib, net::IbVlConfig& v);
// The NIC keys (RDMASIM_NIC_KEYS) of `j` over `p`.
void read_nic_params(ConfigReader& r, const nlohmann::json& j, const std::string& path, bool ib, NicParams& p);
// The receive settings of one NIC, checked (see nic_params.cpp).
net::HostRxConfig finish_rx(ConfigReader& r, const std::string& path, const NicParams& p);
// The switch keys of `j` over `s`.
void read_switch_params(ConfigReader& r, const nlohmann::json& j, const std::string& path, bool ib,
                        net::SwitchConfig& s);
// The link keys of `j` over `l`.
void read_link_params(ConfigReader& r, const nlohmann::json& j, const std::string& path, LinkSpec& l);

}  // namespace rdmasim::topo
