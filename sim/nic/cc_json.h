// The congestion-control state of an HCA's QPs as JSON, for `rdmasim counters` and studies.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "sim/nic/hca.h"

namespace rdmasim::nic {

// [{"qpn", "algorithm", "rate_gbps", "target_gbps", "alpha", "cnps_received", "rate_cuts",
//   "rate_increases", "samples_dropped", "samples": [[t_us, rate_gbps, target_gbps, alpha]...]}]
nlohmann::json cc_report_json(const Hca& hca);

}  // namespace rdmasim::nic
