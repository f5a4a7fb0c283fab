#include "sim/nic/cc_json.h"

#include <nlohmann/json.hpp>

namespace rdmasim::nic {

nlohmann::json cc_report_json(const Hca& hca) {
  nlohmann::json out = nlohmann::json::array();
  for (const QpCcReport& r : hca.cc_report()) {
    nlohmann::json samples = nlohmann::json::array();
    for (const CcSample& s : r.samples)
      samples.push_back({to_us(s.at), s.rate.as_gbps(), s.target.as_gbps(), s.alpha});
    nlohmann::json q = {{"qpn", r.qpn},
                        {"algorithm", cc_algorithm_name(r.algorithm)},
                        {"rate_gbps", r.rate.as_gbps()},
                        {"target_gbps", r.target.as_gbps()},
                        {"alpha", r.alpha},
                        {"cnps_received", r.stats.cnps_received},
                        {"rate_cuts", r.stats.rate_cuts},
                        {"rate_increases", r.stats.rate_increases},
                        {"samples_dropped", r.stats.samples_dropped},
                        {"samples", samples}};
    // The delay/ECN-window algorithms: their window and last RTT sample ("alpha" is the
    // gradient for timely, cwnd in packets for swift, DCTCP's alpha for dctcp).
    if (r.algorithm == CcAlgorithm::Swift || r.algorithm == CcAlgorithm::Dctcp)
      q["cwnd_bytes"] = r.window_bytes;
    if (r.algorithm == CcAlgorithm::Timely || r.algorithm == CcAlgorithm::Swift ||
        r.algorithm == CcAlgorithm::Dctcp)
      q["rtt_us"] = to_us(r.rtt);
    out.push_back(q);
  }
  return out;
}

nlohmann::json tcp_report_json(const Hca& hca) {
  nlohmann::json out = nlohmann::json::array();
  for (const QpTcpReport& r : hca.tcp_report()) {
    const iwarp::TcpCounters& c = r.counters;
    out.push_back({{"qpn", r.qpn},
                   {"cwnd_bytes", r.cwnd},
                   {"ssthresh_bytes", r.ssthresh},
                   {"srtt_us", to_us(r.srtt)},
                   {"dctcp_alpha", r.dctcp_alpha},
                   {"segments_sent", c.segments_sent},
                   {"retransmits", c.retransmits},
                   {"fast_retransmits", c.fast_retransmits},
                   {"timeouts", c.timeouts},
                   {"dup_acks_received", c.dup_acks_received},
                   {"ecn_reductions", c.ecn_reductions},
                   {"out_of_order_received", c.out_of_order_received},
                   {"ce_received", c.ce_received},
                   {"ece_received", c.ece_received}});
  }
  return out;
}

}  // namespace rdmasim::nic
