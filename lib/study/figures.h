// The figures people compare runs by, computed once from a run's results: FCT slowdown
// percentiles overall and by flow-size bucket, the headline numbers (last finish, drops,
// PFC frames, ECN marks, deepest queue) and aggregate series. summary.json holds them, so
// `rdmasim compare` and `rdmasim sweep` read one small file per run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/study/study.h"

namespace rdmasim::study {

// The p-th percentile (0 <= p <= 100) of `sorted` (ascending, non-empty): the element at
// zero-based index floor(p/100 x n), capped at n - 1, as the HPCC simulator's
// analysis/fct_analysis.py takes it (get_pctl). No interpolation.
double percentile(const std::vector<double>& sorted, double p);

// Finished flows grouped by size. With at most `max_buckets` distinct sizes, one bucket per
// size; otherwise up to `max_buckets` buckets of about equal flow counts in size order (as
// the HPCC and DCQCN evaluations bucket a CDF workload), a size never split across two.
struct SlowdownBucket {
  uint64_t min_bytes = 0, max_bytes = 0;
  size_t flows = 0;
  double p50 = 0, p95 = 0, p99 = 0;
};
struct FlowPoint {
  uint64_t bytes = 0;
  double slowdown = 0;   // FCT / ideal FCT
};
std::vector<SlowdownBucket> slowdown_buckets(std::vector<FlowPoint> flows, size_t max_buckets = 20);

struct Headline {
  size_t flows = 0, finished = 0;
  double last_finish_us = 0;       // when the last flow finished (its completion at the requester)
  double fct_p50_us = 0, fct_p99_us = 0, fct_max_us = 0;
  double slowdown_p50 = 0, slowdown_p95 = 0, slowdown_p99 = 0;
  double goodput_gbps = 0;         // all flows' payload x 8 / (last finish - first start)
  uint64_t drops = 0, lost_on_links = 0, pause_frames = 0, ecn_marks = 0;
  double paused_us = 0;            // summed over every paused port and class
  double max_queue_kb = 0;         // deepest sampled egress queue (all classes), 0 unsampled
};
Headline headline(const StudySpec& spec, const StudyResult& result);

// summary.json: {"study", "headline", "slowdown_buckets", "goodput" (the aggregate series),
// "queue" (the deepest sampled port's series)}; no wall-clock field, so two runs of one
// study write the same bytes.
nlohmann::json summary_json(const StudySpec& spec, const StudyResult& result);
nlohmann::json headline_json(const Headline& h);

// The aggregate goodput (Gb/s) per goodput bin over all flows.
std::vector<double> aggregate_goodput(const StudySpec& spec, const StudyResult& result);

// The goodput bins of the longest flow series.
size_t goodput_bins(const StudyResult& result);

// One flow's goodput (Gb/s, payload at the receiver) in intervals of `group` goodput bins,
// from t = 0 (a short last interval counts its missing bins as empty).
std::vector<double> flow_goodput(const StudySpec& spec, const FlowResult& r, size_t group = 1);

// Per-flow goodput percentiles over time, in intervals of `group` goodput bins: for each
// interval, the p-th percentile (as percentile() takes it) of the goodput (Gb/s, payload
// over the interval) of the flows that ran through the whole interval (started at or
// before it, not finished before its end), one vector per entry of `ps`. An interval no
// flow ran through gets NaN (no point is drawn there).
std::vector<std::vector<double>> flow_goodput_percentiles(const StudySpec& spec, const StudyResult& result,
                                                           const std::vector<double>& ps, size_t group = 1);

// At most `n` points: groups of consecutive values replaced by their mean; *factor gets the
// group size (the new bin width is factor x the old).
std::vector<double> thin_mean(const std::vector<double>& v, size_t n, size_t* factor);

}  // namespace rdmasim::study
