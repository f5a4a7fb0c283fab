#include "apps/rdmasim/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace rdmasim::cli {
namespace {

std::string sim_time(Time t) {
  char b[32];
  if (t >= ms(1)) snprintf(b, sizeof b, "%.3g ms", to_us(t) / 1000);
  else snprintf(b, sizeof b, "%.3g us", to_us(t));
  return b;
}

}  // namespace

std::string progress_text(const study::Progress& p) {
  char b[200];
  const double rate = p.wall_seconds > 0 ? static_cast<double>(p.events) / p.wall_seconds : 0;
  double f = p.limit > 0 ? static_cast<double>(p.now) / static_cast<double>(p.limit) : 0;
  if (p.bytes_total > 0) f = std::max(f, static_cast<double>(p.bytes_received) / static_cast<double>(p.bytes_total));
  std::string left = "time left unknown";
  if (f > 0 && f < 1) {
    snprintf(b, sizeof b, "~%.0f s left", p.wall_seconds * (1 - f) / f);
    left = b;
  }
  snprintf(b, sizeof b, "sim %s of %s | %.2f M events/s | flows %zu/%zu | %s", sim_time(p.now).c_str(),
           sim_time(p.limit).c_str(), rate / 1e6, p.flows_done, p.flows, left.c_str());
  return b;
}

bool progress_wanted(bool quiet) { return !quiet && isatty(STDERR_FILENO) == 1; }

void progress_show(const std::string& text) {
  fprintf(stderr, "\r%s\033[K", text.c_str());
  fflush(stderr);
}

}  // namespace rdmasim::cli
