#include "sim/nic/cc_json.h"

#include <nlohmann/json.hpp>

namespace rdmasim::nic {

nlohmann::json cc_report_json(const Hca& hca) {
  nlohmann::json out = nlohmann::json::array();
  for (const QpCcReport& r : hca.cc_report()) {
    nlohmann::json samples = nlohmann::json::array();
    for (const CcSample& s : r.samples)
      samples.push_back({to_us(s.at), s.rate.as_gbps(), s.target.as_gbps(), s.alpha});
    out.push_back({{"qpn", r.qpn},
                   {"algorithm", cc_algorithm_name(r.algorithm)},
                   {"rate_gbps", r.rate.as_gbps()},
                   {"target_gbps", r.target.as_gbps()},
                   {"alpha", r.alpha},
                   {"cnps_received", r.stats.cnps_received},
                   {"rate_cuts", r.stats.rate_cuts},
                   {"rate_increases", r.stats.rate_increases},
                   {"samples_dropped", r.stats.samples_dropped},
                   {"samples", samples}});
  }
  return out;
}

}  // namespace rdmasim::nic
