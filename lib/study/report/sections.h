// The report's sections, one file per kind of plot; page.cpp puts them together.
#pragma once

#include <string>
#include <vector>

#include "lib/study/study.h"

namespace rdmasim::study::report {

// FCT CDF, FCT against flow size (one dot per flow), slowdown p50/p95/p99 per size bucket
// and its table (report_fct.cpp).
std::string fct_section(const StudySpec& spec, const StudyResult& result);
// Aggregate goodput with the slowest flows' goodput; per-QP rates of CC runs (report_rates.cpp).
std::string rate_section(const StudySpec& spec, const StudyResult& result);
// Queue depth of the deepest ports, link utilization heat map, PFC pause timeline
// (report_fabric.cpp).
std::string fabric_section(const StudySpec& spec, const StudyResult& result);

// Indices of up to `n` finished flows with the longest FCT (ties: lower index first), then
// unfinished ones: the flows worth a line of their own when there are too many for one each.
std::vector<size_t> slowest_flows(const StudySpec& spec, const StudyResult& result, size_t n);

// Plots show at most this many flows as their own line.
inline constexpr size_t kTopFlows = 8;

}  // namespace rdmasim::study::report
