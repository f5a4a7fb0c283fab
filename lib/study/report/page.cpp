// report.html: one self-contained page (no scripts, nothing fetched), its plots inline SVG,
// each with a sentence saying what to look at. Deterministic: no wall-clock figure on it.
#include "lib/study/report/sections.h"
#include "lib/study/report/svg.h"

namespace rdmasim::study {

namespace {

constexpr size_t kTableRows = 50;

std::string flow_table(const StudySpec& spec, const StudyResult& result) {
  const std::vector<size_t> rows = report::slowest_flows(spec, result, kTableRows);
  std::string o = "<h2>Flows</h2>\n<p>" +
                  (rows.size() < spec.flows.size() ? "The " + std::to_string(rows.size()) + " slowest of " +
                                                         std::to_string(spec.flows.size()) + " flows; every flow is in "
                                                         "flows.csv, flows.json and fct.txt."
                                                   : std::string("Every flow, slowest first.")) +
                  "</p>\n<table id=\"flows\"><tr><th>id</th><th>name</th><th>bytes</th><th>start us</th><th>FCT us</th>"
                  "<th>ideal us</th><th>slowdown</th><th>goodput Gb/s</th><th>status</th></tr>\n";
  for (size_t k : rows) {
    const FlowSpec& f = spec.flows[k];
    const FlowResult& r = result.flows[k];
    const double fct_us = to_us(r.finish - f.start);
    o += "<tr><td>" + std::to_string(k) + "</td><td style=\"text-align:left\">" + svg::esc(f.name) + "</td><td>" +
         std::to_string(f.bytes) + "</td><td>" + svg::num(to_us(f.start)) + "</td><td>" +
         (r.finished ? svg::num(fct_us) : "-") + "</td><td>" + svg::num(to_us(r.ideal_fct)) + "</td><td>" +
         (r.finished && r.ideal_fct > 0 ? svg::num(fct_us / to_us(r.ideal_fct)) : "-") + "</td><td>" +
         (r.finished && fct_us > 0 ? svg::num(static_cast<double>(f.bytes) * 8 / (fct_us * 1000)) : "-") + "</td><td>" +
         (r.finished ? "finished" : svg::esc(r.error)) + "</td></tr>\n";
  }
  return o + "</table>\n";
}

}  // namespace

std::string report_html(const StudySpec& spec, const StudyResult& result) {
  std::string o =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rdmasim study " + svg::esc(spec.name) +
      "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1200px;color:#222}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
      "pre{background:#f4f4f4;padding:1em}figure{display:flex;gap:1em;align-items:flex-start;flex-wrap:wrap;"
      "margin:1em 0}figcaption{max-width:280px;background:#f4f4f0;padding:.6em;border-left:4px solid #0072B2}"
      "</style></head><body>\n<h1>rdmasim study " +
      svg::esc(spec.name) + "</h1>\n<pre id=\"summary\">" + svg::esc(summary(spec, result, false)) + "</pre>\n";
  o += report::rate_section(spec, result);
  o += report::fct_section(spec, result);
  o += report::fabric_section(spec, result);
  o += flow_table(spec, result);
  return o + "<p><small>Made by <code>rdmasim study</code> (virtual time; the same study gives the same page). "
             "Files beside it: flows.json/csv, fct.txt, summary.json, counters.json, queues.csv.</small></p>\n"
             "</body></html>\n";
}

}  // namespace rdmasim::study
