// Lesson `hello`: what happens behind the primer's first command (ib_read_bw): one RDMA READ
// walked step by step. Every step and time stamp comes from the run's structured event
// trace (sim/trace/timeline.h): the PCIe transactions of both hosts (sim/host/pcie.h, as the
// HCA model issues them) and the packets each port put on the wire. Only the application's
// own work (building the WQE, polling the CQ) is the copies lesson's documented estimate.
#include <algorithm>
#include <map>
#include <stdexcept>

#include "lib/learn/kernel_tcp.h"
#include "lib/learn/lesson.h"
#include "lib/learn/page.h"
#include "lib/learn/scenario.h"
#include "sim/topo/fabric.h"

namespace rdmasim::learn {
namespace {

using nlohmann::json;
using trace::TimelineEvent;

enum Lane : size_t { kCpu, kPcie, kNic, kWire, kSwitch, kRemoteNic, kRemoteMem, kRemoteCpu };
const std::vector<std::string> kLanes = {"application CPU", "PCIe (client)", "NIC (client)", "wire",
                                         "switch", "remote NIC", "remote memory", "remote CPU"};

struct Step {
  Time start = 0, end = 0;
  size_t lane = 0;
  std::string kind;   // a stable name for the tests: "post", "doorbell", "wqe_fetch", ...
  std::string what;
};

// The default fabric with the hosts' PCIe links on (configs/README.md, "Host PCIe link").
json fabric_for(const std::string& ll) {
  json f = topo::default_fabric_config();
  f["link_layer"] = ll;
  f["nic"]["pcie"] = true;
  if (ll == "iwarp") f.erase("mtu");
  return f;
}

// The switch port facing each host: switch ports are numbered by their links in config
// order (configs/README.md, "Switch entry"); the default fabric has one switch.
std::map<std::string, std::string> switch_port_to_host(const json& f) {
  std::map<std::string, std::string> m;
  std::map<std::string, int> next;
  for (const auto& l : f["links"]) {
    const std::string a = l["a"], b = l["b"];
    const std::string sw = a.find('/') == std::string::npos ? a : b;
    const std::string host_end = sw == a ? b : a;
    m[sw + "/" + std::to_string(next[sw]++)] = host_end.substr(0, host_end.find('/'));
  }
  return m;
}

std::string fmt_us(Time t) { return num(to_ns(t) / 1e3, 3) + " us"; }

}  // namespace

LessonOutput lesson_hello(const LessonOptions& o) {
  const json fabric = fabric_for(o.fabric);
  const Rate rate = Rate::gbps(fabric["links"][0].value("rate_gbps", 100.0));
  const Time lat = ns(fabric["links"][0].value("latency_ns", 0));
  // The application's work: the copies lesson's estimates (configs/README.md, its cost model).
  const KernelTcpParams app;
  const Time post = ns(static_cast<int64_t>(app.post_ns));
  const Time poll = ns(static_cast<int64_t>(app.poll_ns));

  std::vector<TimelineEvent> ev;
  ScenarioSpec spec;
  spec.fabric = fabric;
  // One READ: the client (NIC 1) reads `size` bytes of the server's (NIC 0) registered
  // memory. It is posted once the application has built the WQE. On iWARP the QPs' TCP
  // connection and MPA exchange come first (their packets are not the READ's): the
  // application starts at t0 = 100 us, long after they are done; times are told from t0.
  const Time t0 = o.fabric == "iwarp" ? us(100) : 0;
  spec.flows.push_back({"client reads server", 0, 1, o.size, static_cast<uint32_t>(o.size), 1, true, t0 + post});
  spec.sample_interval = us(1);
  spec.time_limit = ms(100);
  spec.capture_dir = o.out_dir;
  spec.capture_prefix = "hello_";
  spec.capture_nics = {1};
  spec.on_event = [&ev](const TimelineEvent& e) { ev.push_back(e); };
  const ScenarioResult r = run_scenario(spec);
  if (!r.all_finished) throw std::runtime_error("hello: the READ did not complete: " + r.flows[0].error);
  const Time cqe_at = r.flows[0].finish - t0;   // the completion is in the client's CQ
  const Time total = cqe_at + poll;             // the application has it

  const auto facing = switch_port_to_host(fabric);
  std::vector<Step> steps;
  steps.push_back({0, post, kCpu, "post", "the application builds a WQE for the READ in the send queue (user space)"});
  // Packets by (event, psn, bytes, direction): when each reached the switch, for its span there.
  std::map<std::tuple<std::string, int64_t, uint64_t, bool>, Time> at_switch;
  Time nic_free = 0, remote_free = 0;   // where the NIC / remote NIC lanes' next span starts
  bool request_sent = false;
  uint64_t remote_posts = 0, remote_cqes = 0;
  for (TimelineEvent e : ev) {
    if (e.t < t0) continue;
    e.t -= t0;
    e.end -= t0;
    if (e.t > cqe_at) break;
    const std::string& c = e.component;
        if (c == "client/pcie") {
      if (e.event == "doorbell" || e.event == "blueflame") {
        steps.push_back({e.t, e.end, kPcie, "doorbell", "doorbell: an 8 B MMIO write across PCIe tells the NIC"});
      } else if (e.event == "wqe_fetch") {
        steps.push_back({e.t, e.end, kPcie, "wqe_fetch", "the NIC fetches the " + std::to_string(e.bytes) +
                                                             " B WQE from host memory (PCIe DMA read)"});
        nic_free = e.end;
      } else if (e.event == "payload_write") {
        if (e.t > nic_free)
          steps.push_back({nic_free, e.t, kNic, "nic_rx", "the client's NIC takes the response in and checks it"});
        nic_free = std::max(nic_free, e.t);
        steps.push_back({e.t, e.end, kPcie, "payload_write", "the NIC writes " + std::to_string(e.bytes) +
                                                                 " B into the application's buffer (PCIe DMA write)"});
      } else if (e.event == "cqe_write") {
        steps.push_back({e.t, e.end, kPcie, "cqe_write", "the NIC writes the 64 B completion (CQE) into the CQ"});
      }
    } else if (c == "server/pcie") {
      if (e.event == "payload_read") {
        if (e.t > remote_free)
          steps.push_back({remote_free, e.t, kRemoteNic, "remote_nic", "the server's NIC checks the rkey and the "
                                                                       "address, and starts a DMA read"});
        steps.push_back({e.t, e.end, kRemoteMem, "remote_dma_read", "the server's NIC reads " +
                         std::to_string(e.bytes) + " B of registered memory by DMA; the server's CPU is not involved"});
        remote_free = e.end;
      } else if (e.event == "doorbell" || e.event == "blueflame") {
        ++remote_posts;
      } else if (e.event == "cqe_write") {
        ++remote_cqes;
      }
    } else if (c.find("/pcie") == std::string::npos) {
      // A packet left a port: its serialization ended at e.t; it arrives a link latency later.
      const Time ser = tx_time(rate, e.bytes);
      const bool from_client = c.rfind("client/", 0) == 0, from_server = c.rfind("server/", 0) == 0;
      const std::string pkt = e.event + (e.psn >= 0 ? " (PSN " + std::to_string(e.psn) + ")" : "") + ", " +
                              std::to_string(e.bytes) + " B";
      // Link-level flow control (IB credits, PFC) and acknowledgements are not the READ's
      // data; they still use the wire.
      const bool control = e.event == "IB_CREDIT" || e.event == "PFC_PAUSE" || e.event == "CNP";
      const bool ack = e.payload == 0 && !control && e.event.find("Request") == std::string::npos;
      const auto kind = [&](bool toward_server) {
        return control ? "flow_control" : ack ? "ack_wire" : toward_server ? "request_wire" : "response_wire";
      };
      if (from_client || from_server) {
        const size_t nic_lane = from_client ? kNic : kRemoteNic;
        Time& free = from_client ? nic_free : remote_free;
        const bool builds = !control && !ack && (from_client ? !request_sent : true);
        if (builds && e.t - ser > free && free > 0)
          steps.push_back({free, e.t - ser, nic_lane, from_client ? "nic" : "remote_nic",
                           from_client ? "the client's NIC builds the request and schedules it"
                                       : "the server's NIC builds the response packet"});
        if (builds) free = std::max(free, e.t);
        if (from_client && builds) request_sent = true;
        steps.push_back({e.t - ser, e.t + lat, kWire, kind(from_client),
                         (from_client ? "client -> switch: " : "server -> switch: ") + pkt});
        at_switch[{e.event, e.psn, e.bytes, from_client}] = e.t + lat;
      } else {
        auto f = facing.find(c);
        const bool to_server = f != facing.end() && f->second == "server";
        const auto in = at_switch.find({e.event, e.psn, e.bytes, to_server});
        if (in != at_switch.end() && e.t - ser > in->second)
          steps.push_back({in->second, e.t - ser, kSwitch, "switch", "the switch looks up " + pkt + " and queues it"});
        steps.push_back({e.t - ser, e.t + lat, kWire, kind(to_server),
                         (to_server ? "switch -> server: " : "switch -> client: ") + pkt});
        if (!control && !ack) {
          if (to_server) remote_free = std::max(remote_free, e.t + lat);
          else nic_free = std::max(nic_free, e.t + lat);
        }
      }
    }
  }
  steps.push_back({cqe_at, total, kCpu, "poll", "the application's ibv_poll_cq finds the completion: the READ is done"});
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.start < b.start; });
  // The server's CPU: what its application did during the READ — each post rings a doorbell
  // and each completion is a CQE the NIC writes; there were `remote_posts` and `remote_cqes`.
  const Time remote_cpu = static_cast<Time>(remote_posts) * post + static_cast<Time>(remote_cqes) * poll;

  // Shares: each instant from 0 to the total belongs to the step that started last before it.
  std::vector<Time> share(kLanes.size(), 0);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Time to = i + 1 < steps.size() ? steps[i + 1].start : total;
    share[steps[i].lane] += std::max<Time>(0, std::min(to, total) - steps[i].start);
  }

  LessonOutput out;
  out.captures = r.captures;
  json js = json::array(), jshare = json::array();
  for (const Step& s : steps)
    js.push_back({{"start_ps", s.start}, {"end_ps", s.end}, {"lane", kLanes[s.lane]}, {"kind", s.kind}, {"what", s.what}});
  for (size_t l = 0; l < kLanes.size(); ++l)
    jshare.push_back({{"part", kLanes[l]}, {"ps", share[l]},
                      {"percent", num(100.0 * static_cast<double>(share[l]) / static_cast<double>(total), 1)}});
  std::vector<std::string> capture_names;
  for (const auto& c : r.captures) capture_names.push_back(c.substr(c.find_last_of('/') + 1));
  out.summary = {{"lesson", "hello"},
                 {"fabric", o.fabric},
                 {"size_bytes", o.size},
                 {"read_completion_ps", total},
                 {"cqe_at_ps", cqe_at},
                 {"post_ps", post},
                 {"poll_ps", poll},
                 {"remote_cpu_busy_ps", remote_cpu},
                 {"remote_posts", remote_posts},
                 {"remote_cqes", remote_cqes},
                 {"steps", js},
                 {"share", jshare},
                 {"captures", capture_names}};

  Narration& n = out.story;
  n.heading("hello: one RDMA READ of " + std::to_string(o.size) + " B on " + o.fabric + ", step by step");
  for (const Step& s : steps) n.step(s.start, "[" + kLanes[s.lane] + "] " + s.what);
  n.figure("the READ took " + fmt_us(total) + " from the first instruction to the completion in the application's hands");
  std::string shares;
  for (size_t l = 0; l < kLanes.size(); ++l)
    if (share[l]) shares += (shares.empty() ? "" : ", ") + kLanes[l] + " " + out.summary["share"][l]["percent"].get<std::string>() + " %";
  n.figure("where the time went: " + shares);
  n.figure("the server's CPU: busy " + num(to_ns(remote_cpu), 0) + " ns during the READ (" +
           std::to_string(remote_posts) + " posts, " + std::to_string(remote_cqes) + " completions)");

  Page page("rdmasim learn hello: one RDMA READ, step by step");
  page.para("The client reads " + std::to_string(o.size) + " B of the server's registered memory with one RDMA READ, "
            "on a " + o.fabric + " fabric: two hosts through one switch, " + num(rate.as_gbps(), 0) + " Gb/s links, " +
            num(to_ns(lat), 0) + " ns each. Every time below comes from the simulator's event trace: the PCIe "
            "transactions the NIC models issued and the packets the ports sent.");
  std::vector<LaneSpan> spans;
  for (const Step& s : steps)
    spans.push_back({s.lane, to_ns(s.start), to_ns(std::max(s.end, s.start)), s.kind});
  page.figure(swimlane("One RDMA READ: who works when", kLanes, spans, "ns"),
              "Read from left to right. The application's CPU works at the very start (the post) and the very end "
              "(the poll); in between the NICs, PCIe, the wires and the switch do everything. The bottom two rows, "
              "the server's memory and CPU: its memory is read by its NIC, and its CPU row stays empty.");
  std::vector<Bar> bars;
  for (size_t l = 0; l < kLanes.size(); ++l)
    bars.push_back({kLanes[l], to_ns(share[l]), num(to_ns(share[l]), 0) + " ns (" +
                                                     out.summary["share"][l]["percent"].get<std::string>() + " %)"});
  page.figure(bar_chart("Share of the READ's " + num(to_ns(total), 0) + " ns", "ns", bars),
              "Each instant belongs to the step the READ was on. At this size the wire's propagation and the PCIe "
              "round trips (doorbell, WQE fetch, DMA) dominate; the payload's own serialization is small.");
  std::vector<std::vector<std::string>> rows;
  for (const Step& s : steps)
    rows.push_back({num(to_ns(s.start), 1), num(to_ns(s.end), 1), kLanes[s.lane], s.what});
  page.heading("The steps");
  page.table({"start ns", "end ns", "part", "what happens"}, rows);
  page.para("Capture: " + (capture_names.empty() ? std::string("none") : capture_names[0]) +
            " holds both directions of the client's link (the READ request and its responses); open it in "
            "Wireshark next to this table.");
  out.html = page.html();
  return out;
}

}  // namespace rdmasim::learn
