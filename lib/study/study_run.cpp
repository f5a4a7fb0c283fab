// Running a study in-process: the fabric, one HCA model per NIC, a driver per flow that
// keeps `window` messages posted, and a receive tap that times each flow's payload.
#include <algorithm>
#include <chrono>
#include <arpa/inet.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "lib/inproc/runtime.h"
#include "lib/study/flow_programs.h"
#include "lib/study/port_watch.h"
#include "lib/study/study.h"
#include "sim/core/engine.h"
#include "sim/net/headers.h"
#include "sim/nic/cc_json.h"
#include "sim/nic/connect.h"
#include "sim/nic/hca.h"
#include "sim/nic/timing_memory.h"
#include "sim/nic/rdma_packet.h"
#include "sim/topo/fabric.h"
#include "sim/topo/fabric_spec.h"
#include "sim/topo/rx_tap.h"
#include "sim/topo/routing.h"
#include "sim/trace/timeline.h"

namespace rdmasim::study {
namespace {

using nlohmann::json;
using namespace rdmasim::nic;

constexpr uint32_t kQkey = 0x11111111;
constexpr uint64_t kBufferAddr = 0x10000;  // where each NIC's flow MR starts (timing-only memory)
constexpr uint32_t kUdGrh = 40;   // a UD receive buffer starts with the 40-byte GRH
constexpr uint32_t kAccessAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;

std::array<uint8_t, 16> gid_of(uint32_t ip) {
  std::array<uint8_t, 16> g{};
  g[10] = g[11] = 0xff;
  g[12] = ip >> 24, g[13] = ip >> 16, g[14] = ip >> 8, g[15] = ip;
  return g;
}

uint8_t mtu_enum(uint32_t mtu) {
  uint8_t e = 1;   // IBV_MTU_256
  for (uint32_t m = 256; m < mtu; m <<= 1) ++e;
  return e;
}

const char* status_name(WcStatus s) {
  switch (s) {
    case WcStatus::Success: return "success";
    case WcStatus::LocLenErr: return "local length error";
    case WcStatus::LocProtErr: return "local protection error";
    case WcStatus::WrFlushErr: return "work request flushed";
    case WcStatus::RemInvReqErr: return "remote invalid request";
    case WcStatus::RemAccessErr: return "remote access error";
    case WcStatus::RemOpErr: return "remote operation error";
    case WcStatus::RetryExcErr: return "transport retry counter exceeded";
    case WcStatus::RnrRetryExcErr: return "RNR retry counter exceeded";
    default: return "completion error";
  }
}

// The route of a flow's data from NIC `src` to NIC `dst` (first of each ECMP set): the
// slowest link, and propagation plus switch forwarding latency summed.
struct PathInfo {
  Rate bottleneck;
  Time latency = 0;
};

PathInfo path_info(const topo::FabricSpec& fs, const topo::RouteTable& rt, size_t src, size_t dst) {
  PathInfo p;
  p.bottleneck = Rate{~0ull};
  size_t link = static_cast<size_t>(fs.nic_link[src]);
  topo::LinkEnd at{false, src};
  for (int hops = 0; hops < 64; ++hops) {
    const topo::LinkSpec& l = fs.links[link];
    p.bottleneck = std::min(p.bottleneck, l.rate);
    p.latency += l.latency;
    const bool from_a = l.a.is_switch == at.is_switch && l.a.index == at.index;
    at = from_a ? l.b : l.a;
    if (!at.is_switch) break;   // arrived at a NIC (dst)
    p.latency += fs.switches[at.index].forwarding_latency;
    const auto& next = rt.links()[at.index][dst];
    if (next.empty()) break;
    link = next.front();
  }
  return p;
}

struct FlowRun {
  const FlowSpec* spec = nullptr;
  FlowResult* res = nullptr;
  Hca* req = nullptr;          // the requester: src (write, send) or dst (read)
  Hca* rcv = nullptr;          // the dst HCA (receives the payload)
  uint32_t req_qp = 0, rcv_qp = 0, req_pd = 0, rcv_pd = 0;
  uint32_t req_lkey = 0, rcv_lkey = 0, remote_rkey = 0;
  uint64_t req_addr = 0, remote_addr = 0, rcv_addr = 0;
  uint64_t posted = 0, recvs_posted = 0;
  bool done = false, failed = false;
  AddressVector to_rcv;        // UD: the destination's address
};

class Runner {
 public:
  Runner(const StudySpec& spec, const RunOptions& opts)
      : spec_(spec), opts_(opts),
        fs_owner_(spec.parsed_fabric ? spec.parsed_fabric
                                     : std::make_shared<const topo::FabricSpec>(topo::parse_fabric(spec.fabric))),
        fs_(*fs_owner_), engine_(fs_.seed) {}

  StudyResult run() {
    wall0_ = std::chrono::steady_clock::now();
    // The routes, computed once: the fabric's forwarding tables and each flow's ideal FCT
    // come from them, and they are freed before the HCAs are made (the largest set-up
    // structure at scale; the HCAs reuse its memory).
    std::shared_ptr<const topo::RouteTable> routes = topo::routes_of(fs_);
    fabric_ = topo::Fabric::from_spec(engine_, fs_, routes);  // fs_ is the parse of spec_.fabric
    res_.flows.resize(spec_.flows.size());
    runs_.resize(spec_.flows.size());
    for (size_t k = 0; k < spec_.flows.size(); ++k) ideal(k, *routes);
    routes.reset();
    res_.fabric_summary = fabric_->summary();
    const auto& nics = fabric_->nics();
    for (const topo::HostNic& n : nics) {
      const bool multi = std::count_if(nics.begin(), nics.end(), [&](const topo::HostNic& o) { return o.host == n.host; }) > 1;
      res_.nic_names.push_back(multi ? n.host + "/" + n.device : n.host);
      in_addr a{};
      res_.nic_ipv4.push_back(inet_pton(AF_INET, n.ip.c_str(), &a) == 1 ? ntohl(a.s_addr) : 0);
    }
    watch_ports();
    for (const FlowSpec& f : spec_.flows) bytes_total_ += f.bytes;
    taps_.reserve(nics.size());
    for (size_t i = 0; i < nics.size(); ++i) {
      hcas_.push_back(std::make_unique<Hca>(engine_, nics[i].hca, fabric_->nic_port(i)));
      taps_.push_back(std::make_unique<topo::RxTap<Runner>>(*this, i, *hcas_.back()));
      topo::attach_hca(*fabric_, i, *hcas_.back(), taps_.back().get());
      uint32_t pd = 0;
      hca_ok(hcas_.back()->alloc_pd(&pd), "alloc_pd");
      pds_.push_back(pd);
    }
    if (!opts_.timeline.empty()) {
      std::vector<Hca*> hs;
      for (auto& h : hcas_) hs.push_back(h.get());
      timeline_ = std::make_unique<trace::TimelineFile>(opts_.timeline, *fabric_, hs);
    }
    // One MR per NIC, as large as its largest message (+ the UD GRH), in timing-only
    // memory: nobody reads a built-in flow's bytes, so no buffer stands behind the MR and
    // no message is copied (the HCA's timing does not depend on the bytes; memory.h).
    std::vector<uint32_t> need(nics.size(), 0);
    for (const FlowSpec& f : flow_programs_ ? std::vector<FlowSpec>{} : spec_.flows) {
      need[f.src] = std::max(need[f.src], f.message_bytes + kUdGrh);
      need[f.dst] = std::max(need[f.dst], f.message_bytes + kUdGrh);
    }
    keys_.resize(nics.size());
    for (size_t i = 0; i < nics.size(); ++i) {
      if (!need[i]) continue;
      hca_ok(hcas_[i]->reg_mr(pds_[i], &mem_, kBufferAddr, need[i], kBufferAddr, kAccessAll, &keys_[i]),
             "reg_mr");
    }
    if (!flow_programs_) {
      for (size_t k = 0; k < spec_.flows.size(); ++k) setup(k);
      for (size_t k = 0; k < runs_.size(); ++k)
        engine_.schedule_at(spec_.flows[k].start, [this, k] { pump(k); });
    }

    if (spec_.programs.empty() && !flow_programs_) {
      engine_.run_until(spec_.time_limit);
      end_and_drain();
    } else {
      run_programs();
    }
    res_.events = engine_.events_run();
    res_.ok = true;
    for (size_t k = 0; k < runs_.size(); ++k) {
      FlowResult& r = res_.flows[k];
      if (r.finished) continue;
      res_.ok = false;
      if (r.error.empty())
        r.error = "did not finish by the time limit (" + std::to_string(r.messages_completed) + " of " +
                  std::to_string(spec_.flows[k].messages) + " messages completed, " +
                  std::to_string(r.bytes_received) + " of " + std::to_string(spec_.flows[k].bytes) +
                  " bytes arrived)";
      res_.failures.push_back(spec_.flows[k].name + ": " + r.error);
    }
    for (const ProgramResult& p : res_.programs)
      if (!p.ok) {
        res_.ok = false;
        res_.failures.push_back("program " + p.program + " on " + p.host + " (rank " +
                                std::to_string(p.rank) + "): " + p.outcome);
      }
    collect();
    timeline_.reset();   // closes the file
    res_.wall_seconds = wall_now();
    if (progress_shown_) opts_.progress(progress(), true);
    return std::move(res_);
  }

  void on_rx(size_t nic, const net::Packet& p) {
    if (p.kind != net::PacketKind::Transport || p.payload_len == 0) return;
    // A transport packet on the fabric was built by an HCA (sim/nic/rdma_packet.h).
    const uint32_t dest_qp = nic::rdma_view(p).bth.dest_qp;
    const size_t flow = rx_flow(nic, dest_qp & 0xffffff);
    if (flow == kNoFlow) return;
    FlowRun& fr = runs_[flow];
    FlowResult& r = *fr.res;
    const Time now = engine_.now();
    if (r.first_byte < 0) r.first_byte = now, r.udp_sport = p.udp_src_port;
    bytes_received_ += p.payload_len;
    if (opts_.progress && ++rx_packets_ % 1024 == 0) poll_progress();
    r.last_byte = now;
    r.bytes_received += p.payload_len;
    const size_t bin = static_cast<size_t>(now / spec_.goodput_bin);
    if (bin < kMaxBins) {
      if (r.rx_bins.size() <= bin) r.rx_bins.resize(bin + 1, 0);
      r.rx_bins[bin] += p.payload_len;
    }
    // Unreliable transports finish when every byte has arrived (their requester's
    // completions only say the packets left).
    if (fr.spec->qp != QpKind::RC && !fr.done && r.bytes_received >= fr.spec->bytes) finish(flow);
  }

 private:
  static constexpr size_t kMaxBins = 1'000'000;
  static constexpr size_t kNoFlow = SIZE_MAX;

  // The flow whose payload arrives on (NIC, QPN), or kNoFlow. A NIC receives a handful of
  // flows: a short list per NIC, where a map of all (NIC, QPN) was a tree walk through
  // cold nodes on every packet.
  size_t rx_flow(size_t nic, uint32_t qpn) const {
    if (nic >= rx_flow_.size()) return kNoFlow;
    for (const auto& [q, flow] : rx_flow_[nic])
      if (q == qpn) return flow;
    return kNoFlow;
  }
  void set_rx_flow(size_t nic, uint32_t qpn, size_t flow) {
    if (nic >= rx_flow_.size()) rx_flow_.resize(nic + 1);
    for (auto& [q, f] : rx_flow_[nic])
      if (q == qpn) {
        f = flow;
        return;
      }
    rx_flow_[nic].emplace_back(qpn, flow);
  }

  // A PortWatch on every egress port: PFC pauses everywhere, the byte series where observed.
  void watch_ports() {
    for (const topo::FabricPort& p : fabric_->egress_ports()) {
      watches_.push_back(std::make_unique<PortWatch>(link_observed(p) ? spec_.link_sample : 0, p.egress->rate()));
      p.egress->set_tap(watches_.back().get());
    }
  }

  // The observe selection of the fabric ("ports": all, hosts, switches or names).
  bool link_observed(const topo::FabricPort& p) const {
    if (spec_.link_sample <= 0) return false;
    const topo::ObserveSpec& o = fs_.observe;
    if (p.is_switch ? o.switches : o.hosts) return true;
    const std::string sw = p.name.substr(0, p.name.find('/'));
    return std::find_if(o.ports.begin(), o.ports.end(), [&](const std::string& n) {
             return n == p.name || (p.is_switch && n == sw);
           }) != o.ports.end();
  }

  // Each port's counters name -> the name of the host or switch at the other end of its
  // link (a switch's ports are numbered by its link ends in link order, as Fabric builds them).
  std::map<std::string, std::string> link_peers() const {
    std::map<std::string, std::string> m;
    std::vector<size_t> next(fs_.switches.size(), 0);
    auto node = [&](const topo::LinkEnd& e) { return e.is_switch ? fs_.switches[e.index].name : fs_.nics[e.index].nic.host; };
    for (const topo::LinkSpec& l : fs_.links)
      for (const auto& [me, other] : {std::pair{l.a, l.b}, std::pair{l.b, l.a}}) {
        const std::string name = me.is_switch ? fs_.switches[me.index].name + "/" + std::to_string(next[me.index]++)
                                              : fs_.nics[me.index].nic.host + "/" + fs_.nics[me.index].nic.device;
        m[name] = node(other);
      }
    return m;
  }

  double wall_now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
  }

  Progress progress() const {
    return {engine_.now(), spec_.time_limit, engine_.events_run(), finished_, runs_.size(),
            bytes_received_, bytes_total_, wall_now()};
  }

  void poll_progress() {
    const double wall = wall_now();
    if (wall < opts_.progress_after || (progress_shown_ && wall < last_progress_ + opts_.progress_period)) return;
    last_progress_ = wall;
    progress_shown_ = true;
    opts_.progress(progress(), false);
  }

  void hca_ok(int rc, const char* what) {
    if (rc != 0) throw std::runtime_error(std::string("study: ") + what + " failed: errno " + std::to_string(rc));
  }

  AddressVector av_to(size_t nic, uint8_t priority) const {
    AddressVector av;
    const topo::HostNic& n = fabric_->nics()[nic];
    av.port_num = 1;
    if (n.link_layer == net::LinkLayer::InfiniBand) {
      av.dlid = n.lid;
      av.sl = priority;
    } else {
      av.is_global = true;
      av.dgid = gid_of(n.address);
      av.traffic_class = static_cast<uint8_t>(priority << 5);   // the HCA's class is TC >> 5
      av.hop_limit = 64;
    }
    return av;
  }

  uint32_t make_qp(Hca& h, uint32_t pd, QpKind kind, uint32_t depth, CompletionSink sink) {
    uint32_t cq = 0;
    hca_ok(h.create_cq(2 * depth + 16, std::move(sink), &cq), "create_cq");
    QpInitAttr init;
    init.pd = pd;
    init.type = qp_type(kind);
    init.send_cq = init.recv_cq = cq;
    init.caps = {depth, depth, 1, 1, 0};
    uint32_t qpn = 0;
    hca_ok(h.create_qp(init, &qpn), "create_qp");
    return qpn;
  }

  static QpType qp_type(QpKind kind) {
    return kind == QpKind::RC ? QpType::RC : kind == QpKind::UC ? QpType::UC : QpType::UD;
  }

  // RESET -> INIT -> RTR -> RTS; RC/UC connected to `peer_qpn` at NIC `peer`.
  void connect(Hca& h, uint32_t qpn, QpKind kind, size_t peer, uint32_t peer_qpn, uint8_t prio) {
    ConnectParams p;
    p.type = qp_type(kind);
    p.access = kAccessAll;
    p.qkey = kQkey;
    p.path_mtu = mtu_enum(fabric_->nics()[peer].mtu);  // the port's MTU (iWARP: below the Ethernet one)
    p.max_rd_atomic = p.max_dest_rd_atomic = 16;
    const char* step = "";
    const int rc = modify_to_rts(h, qpn, peer_qpn, av_to(peer, prio), p, &step);
    hca_ok(rc, ("modify_qp " + std::string(step)).c_str());
  }

  void setup(size_t k) {
    const FlowSpec& f = spec_.flows[k];
    FlowRun& fr = runs_[k];
    fr.spec = &f;
    fr.res = &res_.flows[k];
    const bool read = f.op == Op::Read;
    const size_t req = read ? f.dst : f.src;
    const size_t resp = read ? f.src : f.dst;
    fr.req = hcas_[req].get();
    fr.rcv = hcas_[f.dst].get();
    const uint32_t depth = f.window;
    const uint32_t rdepth = f.op == Op::Send ? 2 * f.window : 1;
    fr.req_qp = make_qp(*fr.req, pds_[req], f.qp, depth, [this, k](const Completion& c) { on_req_cqe(k, c); });
    uint32_t resp_qp = make_qp(*hcas_[resp], pds_[resp], f.qp, read ? depth : rdepth,
                               [this, k](const Completion& c) { on_rcv_cqe(k, c); });
    connect(*fr.req, fr.req_qp, f.qp, resp, resp_qp, f.priority);
    connect(*hcas_[resp], resp_qp, f.qp, req, fr.req_qp, f.priority);
    fr.rcv_qp = read ? fr.req_qp : resp_qp;
    fr.res->requester_qpn = fr.req_qp;
    fr.res->data_src_qpn = read ? resp_qp : fr.req_qp;
    fr.res->data_dst_qpn = fr.rcv_qp;
    fr.req_addr = kBufferAddr;
    fr.req_lkey = keys_[req].lkey;
    fr.remote_addr = kBufferAddr;
    fr.remote_rkey = keys_[resp].rkey;
    fr.rcv_addr = kBufferAddr;
    fr.rcv_lkey = keys_[f.dst].lkey;
    fr.to_rcv = av_to(f.dst, f.priority);
    set_rx_flow(f.dst, fr.rcv_qp, k);
    if (f.op == Op::Send) {
      while (fr.recvs_posted < std::min<uint64_t>(rdepth, f.messages)) post_recv(k);
    }
  }

  void ideal(size_t k, const topo::RouteTable& rt) {
    const FlowSpec& f = spec_.flows[k];
    FlowRun& fr = runs_[k];
    fr.spec = &f;
    fr.res = &res_.flows[k];
    const bool read = f.op == Op::Read;
    // Ideal FCT: payload wire bytes at the bottleneck, plus the data path's latency; plus
    // the request's trip for READs and the ACK's trip back for RC WRITE/SEND (the
    // completion at the requester is the finish).
    const PathInfo data = path_info(fs_, rt, f.src, f.dst);
    const PathInfo back = path_info(fs_, rt, f.dst, f.src);
    uint64_t wire = 0;
    for (uint64_t m = 0; m < f.messages; ++m) {
      const uint64_t len = message_len(f, m);
      const uint64_t full = len / fs_.mtu, rest = len % fs_.mtu;
      wire += full * net::base_wire_bytes(fs_.link_layer, fs_.mtu);
      if (rest || len == 0) wire += net::base_wire_bytes(fs_.link_layer, static_cast<uint32_t>(rest));
    }
    FlowResult& r = res_.flows[k];
    r.bottleneck_gbps = data.bottleneck.as_gbps();
    r.ideal_fct = tx_time(data.bottleneck, wire) + data.latency +
                  ((read || f.qp == QpKind::RC) ? back.latency : 0);
  }

  static uint32_t message_len(const FlowSpec& f, uint64_t m) {
    const uint64_t off = m * f.message_bytes;
    return static_cast<uint32_t>(std::min<uint64_t>(f.message_bytes, f.bytes - off));
  }

  void fail(size_t k, const std::string& why) {
    FlowRun& fr = runs_[k];
    if (fr.failed || fr.done) return;
    fr.failed = true;
    fr.res->error = why;
    ++finished_;
    if (finished_ == runs_.size()) engine_.stop();
  }

  void finish(size_t k) {
    FlowRun& fr = runs_[k];
    if (fr.done || fr.failed) return;
    fr.done = true;
    fr.res->finished = true;
    fr.res->finish = engine_.now();
    ++finished_;
    if (finished_ == runs_.size()) engine_.stop();
  }

  // Posts messages while fewer than `window` are outstanding.
  void pump(size_t k) {
    FlowRun& fr = runs_[k];
    const FlowSpec& f = *fr.spec;
    while (!fr.failed && fr.posted < f.messages && fr.posted - fr.res->messages_completed < f.window) {
      SendWr wr;
      wr.wr_id = fr.posted;
      wr.send_flags = kSendSignaled;
      const uint32_t len = message_len(f, fr.posted);
      wr.sgl = {Sge{fr.req_addr, len, fr.req_lkey}};
      switch (f.op) {
        case Op::Write: wr.opcode = WrOpcode::RdmaWrite; break;
        case Op::Read: wr.opcode = WrOpcode::RdmaRead; break;
        case Op::Send: wr.opcode = WrOpcode::Send; break;
      }
      wr.remote_addr = fr.remote_addr;
      wr.rkey = fr.remote_rkey;
      if (f.qp == QpKind::UD) {
        wr.av = fr.to_rcv;
        wr.remote_qpn = fr.rcv_qp;
        wr.remote_qkey = kQkey;
      }
      if (const int rc = fr.req->post_send(fr.req_qp, wr)) {
        fail(k, "post_send refused the message (errno " + std::to_string(rc) + ")");
        return;
      }
      ++fr.posted;
    }
  }

  void post_recv(size_t k) {
    FlowRun& fr = runs_[k];
    RecvWr wr;
    wr.wr_id = fr.recvs_posted;
    wr.sgl = {Sge{fr.rcv_addr, fr.spec->message_bytes + (fr.spec->qp == QpKind::UD ? kUdGrh : 0), fr.rcv_lkey}};
    if (const int rc = fr.rcv->post_recv(fr.rcv_qp, wr)) {
      fail(k, "post_recv refused a receive (errno " + std::to_string(rc) + ")");
      return;
    }
    ++fr.recvs_posted;
  }

  // Sinks run inside the transport: anything that posts is scheduled on the engine.
  void on_req_cqe(size_t k, const Completion& c) {
    FlowRun& fr = runs_[k];
    if (!c.is_send) return on_rcv_cqe(k, c);   // a READ requester's CQ is its QP's only CQ
    if (c.status != WcStatus::Success) {
      fail(k, std::string("message ") + std::to_string(c.wr_id) + " completed with " + status_name(c.status));
      return;
    }
    ++fr.res->messages_completed;
    if (fr.spec->qp == QpKind::RC && fr.res->messages_completed == fr.spec->messages) finish(k);
    else engine_.schedule_in(0, [this, k] { pump(k); });
  }

  void on_rcv_cqe(size_t k, const Completion& c) {
    FlowRun& fr = runs_[k];
    if (c.is_send) return;
    if (c.status != WcStatus::Success) {
      fail(k, std::string("receive ") + std::to_string(c.wr_id) + " completed with " + status_name(c.status));
      return;
    }
    if (fr.recvs_posted < fr.spec->messages) engine_.schedule_in(0, [this, k] { post_recv(k); });
  }

  void collect() {
    json hcas = json::object();
    const auto& nics = fabric_->nics();
    for (size_t i = 0; i < nics.size(); ++i) {
      const HcaCounters& c = hcas_[i]->counters();
      json j = {{"tx_packets", c.tx_packets}, {"tx_bytes", c.tx_bytes}, {"rx_packets", c.rx_packets},
                {"rx_bytes", c.rx_bytes}, {"acks_sent", c.acks_sent}, {"naks_sent", c.naks_sent},
                {"rnr_naks_sent", c.rnr_naks_sent}, {"retransmitted_packets", c.retransmitted_packets},
                {"timeouts", c.timeouts}, {"out_of_sequence", c.out_of_sequence},
                {"duplicates", c.duplicates}, {"cnps_sent", c.cnps_sent},
                {"cnps_received", c.cnps_received}, {"ecn_marked_received", c.ecn_marked_received},
                {"rate_cuts", c.rate_cuts}};
      if (nics[i].hca.cc.algorithm != CcAlgorithm::None) j["cc"] = cc_report_json(*hcas_[i]);
      if (nics[i].hca.link_layer == net::LinkLayer::IWarp) j["tcp"] = tcp_report_json(*hcas_[i]);
      hcas[nics[i].host + "/" + nics[i].device] = j;
    }
    size_t w = 0;
    std::map<std::string, std::string> peers;
    for (const topo::FabricPort& p : fabric_->egress_ports()) {
      p.egress->flush_series();
      const net::QueueSeries& qs = p.egress->queue_series();
      if (qs.interval > 0) res_.queues.push_back({p.name, qs.start, qs.interval, qs.samples});
      const PortWatch& pw = *watches_.at(w++);
      if (link_observed(p)) {
        if (peers.empty()) peers = link_peers();
        res_.links.push_back({p.name, peers[p.name], p.egress->rate().as_gbps(), spec_.link_sample, pw.tx_bytes(),
                              pw.tx_bins()});
      }
      for (uint8_t c = 0; c < 8; ++c) {
        PauseTimeline t{p.name, c, 0, {}};
        for (const Span& s : pw.pauses(c, engine_.now())) {
          t.spans.emplace_back(s.from, s.to);
          t.total += s.to - s.from;
        }
        if (!t.spans.empty()) res_.pauses.push_back(std::move(t));
      }
    }
    res_.counters = {{"fabric", fabric_->counters()},
                     {"hcas", hcas},
                     {"engine", {{"events", res_.events}, {"end_ns", to_ns(res_.end)}}}};
  }

  // The study ends when its last flow or program did (res_.end); the engine then runs on,
  // at most to the time limit, until the fabric holds no data packet, so that the counters
  // count every packet sent (the last ACKs arrive) and agree with a run through the daemon.
  void end_and_drain() {
    res_.end = engine_.now();
    while (fabric_->carries_data() && engine_.next_event_time() <= spec_.time_limit && engine_.step()) {}
  }

  // The programs in fibers (lib/inproc) beside the flows, on the same HCAs, until both are
  // done or the time limit.
  void run_programs() {
    inproc::RuntimeOptions opts;
    opts.empty_poll_cost = spec_.empty_poll_cost;
    opts.stack_bytes = size_t{spec_.stack_kib} * 1024;
    opts.spin_cap = spec_.spin_cap;
    inproc::Runtime rt(engine_, *fabric_, hcas_, opts);
    if (flow_programs_) {
      // The flows' instances first (their ranks are the ones flow_instances gave them).
      for (const inproc::ProgramInstance& inst : flow_instances(spec_, fabric_hosts())) {
        std::string why;
        if (!rt.add(inst, &why)) throw std::runtime_error("the flows program on " + inst.host + ": " + why);
      }
      rt.set_put_hook([this](const std::string& key, const std::vector<uint8_t>& value) { on_flow_key(key, value); });
    }
    for (const ProgramSpec& prog : spec_.programs)
      for (const std::string& host : prog.hosts) {
        std::string why;
        if (!rt.add({prog.path, host, prog.args}, &why))
          throw std::runtime_error("program " + prog.path + " on " + host + ": " + why);
      }
    rt.run(spec_.time_limit, [this] { return finished_ == runs_.size(); });
    end_and_drain();   // while the runtime (its processes' verbs objects) still exists
    for (const inproc::InstanceResult& r : rt.results())
      res_.programs.push_back({r.program, r.host, r.rank, r.ok, r.status, r.outcome, r.end, r.cpu_busy});
    for (const inproc::OutputLine& l : rt.output())
      res_.program_output.push_back({l.at, l.host, l.stream, l.text});
  }

  std::vector<std::string> fabric_hosts() const {
    std::vector<std::string> hosts;
    for (const topo::HostNic& n : fabric_->nics()) hosts.push_back(n.host);
    return hosts;
  }

  // What a flows.c instance published: the receiving side's QP (its payload is timed from
  // then on) or the requester's end of the flow, at this virtual time.
  void on_flow_key(const std::string& key, const std::vector<uint8_t>& value) {
    FlowKey fk;
    if (!parse_flow_key(key, value, &fk) || fk.flow >= runs_.size()) return;
    const FlowSpec& f = spec_.flows[fk.flow];
    FlowRun& fr = runs_[fk.flow];
    if (fk.what != FlowKey::Done) {
      const bool req = fk.what == FlowKey::Req;
      if (req) fr.res->requester_qpn = fk.qpn;
      // The data leaves the requester's QP (WRITE, SEND) or the responder's (READ).
      ((req == (f.op != Op::Read)) ? fr.res->data_src_qpn : fr.res->data_dst_qpn) = fk.qpn;
      // The payload arrives at dst: on the responder's QP, or a READ's requester's.
      if ((fk.what == FlowKey::Req) == (f.op == Op::Read)) set_rx_flow(f.dst, fk.qpn, fk.flow);
      return;
    }
    fr.res->messages_completed = fk.messages;
    if (fk.status != 0)
      fail(fk.flow, fk.status < 0 ? std::string("post_send refused a message")
                                  : "message " + std::to_string(fk.messages) + " completed with " +
                                        status_name(static_cast<WcStatus>(fk.status)));
    else if (f.qp == QpKind::RC)
      finish(fk.flow);
  }

  const StudySpec& spec_;
  const RunOptions& opts_;
  const bool flow_programs_ = spec_.flow_driver == FlowDriver::Programs && !spec_.flows.empty();
  std::shared_ptr<const topo::FabricSpec> fs_owner_;  // the parse of spec_.fabric
  const topo::FabricSpec& fs_;
  Engine engine_;
  std::vector<std::unique_ptr<PortWatch>> watches_;   // outlive the fabric's ports (declared before)
  std::unique_ptr<topo::Fabric> fabric_;
  TimingMemory mem_;
  std::vector<std::unique_ptr<topo::RxTap<Runner>>> taps_;
  std::vector<std::unique_ptr<Hca>> hcas_;   // destroyed before the fabric (declared after)
  std::unique_ptr<trace::TimelineFile> timeline_;   // --timeline; goes before the HCAs
  std::vector<uint32_t> pds_;
  std::vector<MrKeys> keys_;
  std::vector<FlowRun> runs_;
  std::vector<std::vector<std::pair<uint32_t, size_t>>> rx_flow_;   // per dst NIC: (QPN, flow)
  size_t finished_ = 0;
  uint64_t bytes_total_ = 0, bytes_received_ = 0, rx_packets_ = 0;
  std::chrono::steady_clock::time_point wall0_;
  double last_progress_ = 0;
  bool progress_shown_ = false;
  StudyResult res_;
};

}  // namespace

StudyResult run_study(const StudySpec& spec, const RunOptions& opts) {
  Runner r(spec, opts);
  return r.run();
}

}  // namespace rdmasim::study
