// The congestion-control state of an HCA's QPs (DCQCN; iWARP's TCP) as JSON, for `rdmasim counters` and studies.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "sim/nic/hca.h"

namespace rdmasim::nic {

// [{"qpn", "algorithm", "rate_gbps", "target_gbps", "alpha", "cnps_received", "rate_cuts",
//   "rate_increases", "samples_dropped", "samples": [[t_us, rate_gbps, target_gbps, alpha]...]}]
nlohmann::json cc_report_json(const Hca& hca);

// iWARP: each RC QP's TCP connection (empty on other link layers):
// [{"qpn", "cwnd_bytes", "ssthresh_bytes", "srtt_us", "dctcp_alpha", "segments_sent",
//   "retransmits", "fast_retransmits", "timeouts", "dup_acks_received", "ecn_reductions",
//   "out_of_order_received", "ce_received", "ece_received"}]
nlohmann::json tcp_report_json(const Hca& hca);

}  // namespace rdmasim::nic
