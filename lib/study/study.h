// `rdmasim study`: a fabric, a workload of flows and observation settings, run in-process
// (no daemon, no wall-clock pacing) with one HCA model per host NIC, and its outputs.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/time.h"
#include "sim/net/packet.h"
#include "sim/topo/fabric_spec.h"

namespace rdmasim::study {

enum class Op : uint8_t { Write, Read, Send };
enum class QpKind : uint8_t { RC, UC, UD };

const char* op_name(Op op);
const char* qp_name(QpKind qp);

// One flow: `messages` messages (the last one may be shorter) moving `bytes` of payload from
// host `src` to host `dst`. For op read the dst's QP issues the READs of src's memory.
struct FlowSpec {
  std::string name;             // "host1->host16 (generators[0] incast)", or the given name
  size_t src = 0, dst = 0;      // indices into the fabric's nics()
  Op op = Op::Write;
  QpKind qp = QpKind::RC;
  uint32_t message_bytes = 65536;
  uint64_t bytes = 0;           // total payload
  uint64_t messages = 0;        // ceil(bytes / message_bytes)
  Time start = 0;
  uint8_t priority = 0;         // traffic class (RoCE: DSCP = 8 * priority) / SL (IB)
  uint32_t window = 4;          // messages outstanding at once
};

// A user's verbs program (lib/inproc): one instance per host, in a fiber, in virtual time.
struct ProgramSpec {
  std::string path;             // the shared object exporting rdmasim_main (resolved)
  std::vector<std::string> hosts;
  std::vector<std::string> args;
};

// Who moves the flows: the runner itself, on the HCA models ("builtin"), or one instance of
// lib/workloads/flows.c per host, through the verbs front end in fibers ("programs").
enum class FlowDriver : uint8_t { Builtin, Programs };

struct StudySpec {
  std::string name;
  std::string fabric_source;    // "embedded default", "inline", or the config's path
  nlohmann::json fabric;        // the fabric config, with the study's "observe" applied
  // parse_study's parse of `fabric` (without its routes, which would stay in memory as long
  // as the spec), which the run takes instead of parsing again; null in a spec built by
  // hand. Whoever changes `fabric` resets it.
  std::shared_ptr<const topo::FabricSpec> parsed_fabric;
  std::vector<FlowSpec> flows;
  std::vector<ProgramSpec> programs;
  FlowDriver flow_driver = FlowDriver::Builtin;   // "flow_driver": "builtin" | "programs"
  Time empty_poll_cost = ns(50);   // "fibers": {"empty_poll_ns"}: CPU time of one empty poll
  uint32_t stack_kib = 1024;       // "fibers": {"stack_kib"}: each fiber's stack
  uint32_t spin_cap = 1024;        // "fibers": {"spin_cap"}: coalesced polls at most (0: off)
  Time time_limit = ms(100);
  Time goodput_bin = us(1);
  // "observe": {"link_sample_ns"}: each observed port's wire bytes per period (0 = off).
  Time link_sample = 0;
};

// Parses a study. `base_dir` resolves a relative fabric path (the study file's directory).
// Throws topo::ConfigError with every problem ("study.flows[2].src: ..."), including the
// fabric's own errors (prefixed with the config's path when the fabric is a file).
StudySpec parse_study(const nlohmann::json& study, const std::string& base_dir);

struct FlowResult {
  bool finished = false;
  std::string error;            // why the flow failed ("" when finished)
  Time first_byte = -1;         // first payload packet at the receiving NIC
  Time last_byte = -1;          // last payload packet at the receiving NIC
  Time finish = -1;             // completion of the last work request (see StudySpec docs)
  uint64_t bytes_received = 0;  // payload bytes that arrived (retransmissions included)
  uint64_t messages_completed = 0;
  Time ideal_fct = 0;           // wire bytes / bottleneck rate + base latency
  double bottleneck_gbps = 0;
  std::vector<uint64_t> rx_bins;   // payload bytes received per goodput bin
  // The QPs at the two ends of the data (0: not known) and, on RoCEv2, the UDP source port
  // of its data packets (0 elsewhere): what fct.txt prints as sport/dport.
  uint32_t data_src_qpn = 0, data_dst_qpn = 0;
  uint16_t udp_sport = 0;
  uint32_t requester_qpn = 0;   // the QP that posts the flow's work requests (its CC state)
};

// Wire bytes an egress port sent per period, only the periods that sent any.
struct LinkSeries {
  std::string port;             // counters name, "sw0/15"
  std::string peer;             // the host or switch at the link's other end
  double gbps = 0;              // the port's rate
  Time interval = 0;
  uint64_t total_bytes = 0;
  std::vector<std::pair<uint32_t, uint64_t>> bins;   // (period index from time 0, bytes)
};

// The intervals one traffic class of one egress port was paused by PFC.
struct PauseTimeline {
  std::string port;
  uint8_t cls = 0;
  Time total = 0;
  std::vector<std::pair<Time, Time>> spans;   // [from, to)
};

// Where a run is, for a progress line (run_study calls it from the engine's thread).
struct Progress {
  Time now = 0, limit = 0;
  uint64_t events = 0;
  size_t flows_done = 0, flows = 0;
  uint64_t bytes_received = 0, bytes_total = 0;
  double wall_seconds = 0;
};

struct RunOptions {
  // Called about every `progress_period` seconds of wall time once the run has taken
  // `progress_after` seconds (never for a shorter run), and once with done = true at the end
  // if it was ever called. Polled from the receive path: it adds no engine event.
  std::function<void(const Progress&, bool done)> progress;
  double progress_after = 1.0, progress_period = 0.25;
  // Not empty: the run's event trace (sim/trace/timeline.h) as JSON lines into this file.
  std::string timeline;
};

struct PortSeries {
  std::string port;             // counters name, "sw0/15"
  Time start = 0, interval = 0;
  std::vector<std::array<uint32_t, 8>> samples;
};

// One instance of a program: how it ended, when (-1: it did not).
struct ProgramResult {
  std::string program, host;
  int rank = 0;
  bool ok = false;              // returned 0
  int status = 0;
  std::string outcome;          // "exit 0", "exit 3", "crashed: ...", "did not finish: ..."
  Time end = -1;
  // The host CPU time the program used, by cause ("poll", "compute"; host::Cpu).
  std::map<std::string, Time> cpu_busy;
};

// A line a program printed (stream 1 stdout, 2 stderr), at virtual time `at`.
struct ProgramLine {
  Time at = 0;
  std::string host;
  int stream = 1;
  std::string text;
};

struct StudyResult {
  bool ok = false;              // every flow finished and every program returned 0
  std::vector<std::string> failures;
  std::vector<FlowResult> flows;
  std::vector<ProgramResult> programs;
  std::vector<ProgramLine> program_output;   // in time order
  nlohmann::json counters;      // {"fabric": ..., "hcas": {...}, "engine": {...}}
  std::vector<PortSeries> queues;
  std::vector<LinkSeries> links;        // observe.link_sample_ns, every observed port
  std::vector<PauseTimeline> pauses;    // every port and class that was paused
  std::string fabric_summary;
  std::vector<uint32_t> nic_ipv4;       // per NIC: its IPv4 address (0: none)
  std::vector<std::string> nic_names;   // per NIC: "host", or "host/device" on multi-NIC hosts
  Time end = 0;                 // simulated time when the run stopped
  uint64_t events = 0;
  double wall_seconds = 0;
};

// Runs the study to completion or to its time limit. Throws topo::ConfigError only for
// problems found while building (none once parse_study accepted the study).
StudyResult run_study(const StudySpec& spec, const RunOptions& opts = {});

// flows.json, flows.csv, fct.txt, summary.json, counters.json, queues.csv (when sampling
// is on) and report.html in `dir` (created if missing). Throws std::runtime_error naming the file on an I/O error.
void write_outputs(const StudySpec& spec, const StudyResult& result, const std::string& dir);

// `[  0.000012345 host1] text`: a program's line as programs.log and stdout show it.
std::string program_line(const ProgramLine& l);

// Per-flow records as written to flows.json.
nlohmann::json flows_json(const StudySpec& spec, const StudyResult& result);

// The self-contained HTML report with inline SVG plots (lib/study/report/).
std::string report_html(const StudySpec& spec, const StudyResult& result);

// fct.txt in the HPCC simulator's format, one line per finished flow in finishing order.
std::string fct_txt(const StudySpec& spec, const StudyResult& result);

// A few lines for stdout; `wall_time` adds the run's wall-clock seconds (not in report.html,
// so the page is the same bytes every run).
std::string summary(const StudySpec& spec, const StudyResult& result, bool wall_time = true);

}  // namespace rdmasim::study
