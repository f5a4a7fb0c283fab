// The lesson runner: builds the fabric, one HCA per NIC, an RC QP pair per flow, and a
// sampler event on a fixed grid that records queue depth, PFC pause state and per-flow
// arrival rate — the series a lesson draws.
#include "lib/learn/scenario.h"

#include <map>
#include <memory>
#include <stdexcept>

#include "sim/core/engine.h"
#include "sim/nic/connect.h"
#include "sim/nic/memory.h"
#include "sim/nic/rdma_packet.h"
#include "sim/topo/fabric.h"
#include "sim/topo/fabric_spec.h"
#include "sim/topo/rx_tap.h"
#include "sim/trace/capture.h"
#include "sim/trace/encode.h"

namespace rdmasim::learn {

std::array<uint8_t, 16> ipv4_gid(uint32_t ip) {
  std::array<uint8_t, 16> g{};
  g[10] = g[11] = 0xff;
  g[12] = ip >> 24, g[13] = ip >> 16, g[14] = ip >> 8, g[15] = ip;
  return g;
}

uint8_t mtu_enum(uint32_t mtu) {
  uint8_t e = 1;  // IBV_MTU_256
  for (uint32_t m = 256; m < mtu; m <<= 1) ++e;
  return e;
}

namespace {

using namespace rdmasim::nic;
constexpr uint32_t kAccessAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;

// The processes' memory as the HCA's DMA engine reaches it, counting the bytes it moves.
class DmaMemory final : public MemorySpace {
 public:
  bool read(uint64_t addr, void* dst, size_t len) override {
    read_bytes += len;
    return inner_.read(addr, dst, len);
  }
  bool write(uint64_t addr, const void* src, size_t len) override {
    write_bytes += len;
    return inner_.write(addr, src, len);
  }
  uint64_t read_bytes = 0, write_bytes = 0;

 private:
  LocalMemory inner_;
};

struct FlowState {
  Hca* req = nullptr;
  uint32_t req_qp = 0, lkey = 0, rkey = 0;
  uint64_t local_addr = 0, remote_addr = 0;
  uint64_t messages = 0, posted = 0, completed = 0;
  uint64_t rx_at_last_sample = 0;
  bool done = false;
};

class Runner {
 public:
  explicit Runner(const ScenarioSpec& spec)
      : spec_(spec), fs_(topo::parse_fabric(spec.fabric)), engine_(fs_.seed) {}

  ScenarioResult run() {
    fabric_ = topo::Fabric::build(engine_, spec_.fabric);
    const auto& nics = fabric_->nics();
    for (size_t i = 0; i < nics.size(); ++i) {
      hcas_.push_back(std::make_unique<Hca>(engine_, nics[i].hca, fabric_->nic_port(i)));
      taps_.push_back(std::make_unique<topo::RxTap<Runner>>(*this, i, *hcas_.back()));
      topo::attach_hca(*fabric_, i, *hcas_.back(), taps_.back().get());
      uint32_t pd = 0;
      ok(hcas_.back()->alloc_pd(&pd), "alloc_pd");
      pds_.push_back(pd);
      res_.nic_names.push_back(nics[i].host);
    }
    find_ports();
    start_captures();
    if (spec_.on_event) {
      std::vector<Hca*> hs;
      for (auto& h : hcas_) hs.push_back(h.get());
      timeline_ = std::make_unique<trace::Timeline>(*fabric_, hs, spec_.on_event);
    }
    res_.flows.resize(spec_.flows.size());
    state_.resize(spec_.flows.size());
    for (size_t k = 0; k < spec_.flows.size(); ++k) setup(k);
    for (size_t k = 0; k < spec_.flows.size(); ++k)
      engine_.schedule_at(spec_.flows[k].start, [this, k] { pump(k); });
    engine_.schedule_at(0, [this] { sample(); });
    engine_.run_until(spec_.time_limit);
    res_.end = engine_.now();
    res_.events = engine_.events_run();
    res_.all_finished = finished_ == spec_.flows.size();
    for (size_t k = 0; k < spec_.flows.size(); ++k)
      if (!res_.flows[k].finished && res_.flows[k].error.empty())
        res_.flows[k].error = "did not finish by " + std::to_string(to_ns(spec_.time_limit) / 1000) + " us";
    res_.fabric_counters = fabric_->counters();
    for (const auto& h : hcas_) res_.hcas.push_back(h->counters());
    for (const auto& h : hcas_)
      for (const QpTcpReport& t : h->tcp_report()) {
        res_.tcp_retransmits += t.counters.retransmits;
        res_.tcp_timeouts += t.counters.timeouts;
      }
    res_.dma_read_bytes = mem_.read_bytes;
    res_.dma_write_bytes = mem_.write_bytes;
    timeline_.reset();   // gives the ports their capture taps back
    captures_.clear();   // closes the files before the fabric goes
    return std::move(res_);
  }

  void on_rx(size_t nic, const net::Packet& p) {
    if (p.kind != net::PacketKind::Transport || p.payload_len == 0) return;
    // A transport packet on the fabric was built by an HCA (sim/nic/rdma_packet.h).
    const uint32_t dest_qp = nic::rdma_view(p).bth.dest_qp;
    auto it = rx_flow_.find(uint64_t{nic} << 32 | (dest_qp & 0xffffff));
    if (it == rx_flow_.end()) return;
    FlowOutcome& r = res_.flows[it->second];
    if (r.first_byte < 0) r.first_byte = engine_.now();
    r.last_byte = engine_.now();
    r.bytes_received += p.payload_len;
  }

 private:
  void ok(int rc, const std::string& what) {
    if (rc != 0) throw std::runtime_error("lesson set-up: " + what + " failed: errno " + std::to_string(rc));
  }

  AddressVector av_to(size_t nic) const {
    AddressVector av;
    const topo::HostNic& n = fabric_->nics()[nic];
    av.port_num = 1;
    if (n.link_layer == net::LinkLayer::InfiniBand) {
      av.dlid = n.lid;
    } else {
      av.is_global = true;
      av.dgid = ipv4_gid(n.address);
      av.hop_limit = 64;
    }
    return av;
  }

  // The switch port facing NIC i: switch ports are numbered in the order their links
  // appear in the (expanded) links list (configs/README.md, "Switch entry").
  std::string switch_port_facing(size_t i) const {
    const size_t link = static_cast<size_t>(fs_.nic_link[i]);
    const topo::LinkSpec& l = fs_.links[link];
    const topo::LinkEnd sw = l.a.is_switch ? l.a : l.b;
    size_t port = 0;
    for (size_t j = 0; j < link; ++j) {
      const topo::LinkSpec& o = fs_.links[j];
      port += (o.a.is_switch && o.a.index == sw.index) + (o.b.is_switch && o.b.index == sw.index);
    }
    return fs_.switches[sw.index].name + "/" + std::to_string(port);
  }

  net::EgressPort* port_named(const std::string& name) {
    for (const topo::FabricPort& p : fabric_->egress_ports())
      if (p.name == name) return p.egress;
    throw std::runtime_error("lesson: no egress port named " + name);
  }

  void find_ports() {
    for (const std::string& n : spec_.watch_ports) {
      watched_.push_back(port_named(n));
      res_.ports.push_back({n, {}, {}});
    }
  }

  void start_captures() {
    const auto& nics = fabric_->nics();
    for (size_t i : spec_.capture_nics) {
      if (i >= nics.size()) throw std::runtime_error("lesson: no NIC " + std::to_string(i) + " to capture");
      const std::string path = spec_.capture_dir + "/" + spec_.capture_prefix + nics[i].host + ".pcap";
      captures_.push_back(std::make_unique<trace::LinkCapture>(
          path, trace::linktype_for(fabric_->link_layer()),
          std::vector<net::EgressPort*>{port_named(nics[i].host + "/" + nics[i].device),
                                        port_named(switch_port_facing(i))}));
      res_.captures.push_back(path);
    }
  }

  void setup(size_t k) {
    const FlowDef& f = spec_.flows[k];
    FlowState& s = state_[k];
    const size_t req = f.read ? f.dst : f.src;
    const size_t resp = f.read ? f.src : f.dst;
    s.req = hcas_[req].get();
    s.messages = (f.bytes + f.message_bytes - 1) / f.message_bytes;
    // Each flow its own buffers: one message each side, registered for everything.
    for (size_t side : {req, resp}) {
      buffers_.emplace_back(new uint8_t[f.message_bytes]());
      MrKeys keys;
      const auto addr = reinterpret_cast<uint64_t>(buffers_.back().get());
      ok(hcas_[side]->reg_mr(pds_[side], &mem_, addr, f.message_bytes, addr, kAccessAll, &keys), "reg_mr");
      if (side == req) s.local_addr = addr, s.lkey = keys.lkey;
      else s.remote_addr = addr, s.rkey = keys.rkey;
    }
    const uint32_t rq = make_qp(*hcas_[req], pds_[req], f.window, [this, k](const Completion& c) { on_cqe(k, c); });
    const uint32_t pq = make_qp(*hcas_[resp], pds_[resp], f.window, [](const Completion&) {});
    ConnectParams p;
    p.path_mtu = mtu_enum(fabric_->nics()[resp].mtu);
    p.max_rd_atomic = p.max_dest_rd_atomic = 16;
    p.timeout = spec_.ack_timeout;
    const char* step = "";
    ok(connect_qps({hcas_[req].get(), rq, av_to(req)}, {hcas_[resp].get(), pq, av_to(resp)}, p, &step),
       std::string("connect ") + step);
    s.req_qp = rq;
    rx_flow_[uint64_t{f.dst} << 32 | (f.read ? rq : pq)] = k;
  }

  uint32_t make_qp(Hca& h, uint32_t pd, uint32_t depth, CompletionSink sink) {
    uint32_t cq = 0;
    ok(h.create_cq(2 * depth + 16, std::move(sink), &cq), "create_cq");
    QpInitAttr init;
    init.pd = pd;
    init.type = QpType::RC;
    init.send_cq = init.recv_cq = cq;
    init.caps = {depth, depth, 1, 1, 0};
    uint32_t qpn = 0;
    ok(h.create_qp(init, &qpn), "create_qp");
    return qpn;
  }

  void pump(size_t k) {
    const FlowDef& f = spec_.flows[k];
    FlowState& s = state_[k];
    while (!s.done && s.posted < s.messages && s.posted - s.completed < f.window) {
      SendWr wr;
      wr.wr_id = s.posted;
      wr.send_flags = kSendSignaled;
      const uint64_t off = s.posted * f.message_bytes;
      const auto len = static_cast<uint32_t>(std::min<uint64_t>(f.message_bytes, f.bytes - off));
      wr.opcode = f.read ? WrOpcode::RdmaRead : WrOpcode::RdmaWrite;
      wr.sgl = {Sge{s.local_addr, len, s.lkey}};
      wr.remote_addr = s.remote_addr;
      wr.rkey = s.rkey;
      if (const int rc = s.req->post_send(s.req_qp, wr)) {
        finish(k, "post_send refused a message (errno " + std::to_string(rc) + ")");
        return;
      }
      ++s.posted;
      ++res_.posts;
    }
  }

  // Completion sinks run inside the transport: the next post is scheduled, not made here.
  void on_cqe(size_t k, const Completion& c) {
    if (!c.is_send && !spec_.flows[k].read) return;
    FlowState& s = state_[k];
    ++res_.completions;
    if (c.status != WcStatus::Success) {
      finish(k, "message " + std::to_string(c.wr_id) + " completed with status " +
                    std::to_string(static_cast<int>(c.status)));
      return;
    }
    if (++s.completed == s.messages) return finish(k, "");
    engine_.schedule_in(0, [this, k] { pump(k); });
  }

  void finish(size_t k, const std::string& error) {
    FlowState& s = state_[k];
    if (s.done) return;
    s.done = true;
    FlowOutcome& r = res_.flows[k];
    r.finished = error.empty();
    r.error = error;
    r.finish = engine_.now();
    if (++finished_ == spec_.flows.size()) {
      sample();   // the last point of every series, at the end
      engine_.stop();
    }
  }

  // Engine context, every sample_interval until the last flow is done.
  void sample() {
    for (size_t w = 0; w < watched_.size(); ++w) {
      uint64_t q = 0;
      for (uint8_t c = 0; c < net::kNumClasses; ++c) q += watched_[w]->queued_bytes(c);
      res_.ports[w].depth_bytes.push_back(q);
      res_.ports[w].paused.push_back(watched_[w]->paused(0) ? 1 : 0);
    }
    const double secs = to_ns(spec_.sample_interval) * 1e-9;
    for (size_t k = 0; k < state_.size(); ++k) {
      FlowOutcome& r = res_.flows[k];
      const uint64_t delta = r.bytes_received - state_[k].rx_at_last_sample;
      state_[k].rx_at_last_sample = r.bytes_received;
      r.rate_gbps.push_back(delta * 8 / secs / 1e9);
    }
    if (finished_ < spec_.flows.size()) engine_.schedule_in(spec_.sample_interval, [this] { sample(); });
  }

  const ScenarioSpec& spec_;
  topo::FabricSpec fs_;
  Engine engine_;
  std::unique_ptr<topo::Fabric> fabric_;
  DmaMemory mem_;
  std::vector<std::unique_ptr<topo::RxTap<Runner>>> taps_;
  std::vector<std::unique_ptr<Hca>> hcas_;   // destroyed before the fabric (declared after)
  std::vector<std::unique_ptr<trace::LinkCapture>> captures_;
  std::unique_ptr<trace::Timeline> timeline_;   // after the captures: it chains to their taps
  std::vector<uint32_t> pds_;
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;
  std::vector<FlowState> state_;
  std::vector<net::EgressPort*> watched_;
  std::map<uint64_t, size_t> rx_flow_;       // (dst NIC << 32 | QPN) -> flow
  size_t finished_ = 0;
  ScenarioResult res_;
};

}  // namespace

ScenarioResult run_scenario(const ScenarioSpec& spec) {
  Runner r(spec);
  return r.run();
}

}  // namespace rdmasim::learn
