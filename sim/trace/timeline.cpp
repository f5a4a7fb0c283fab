#include "sim/trace/timeline.h"

#include <cstdio>
#include <stdexcept>

#include "sim/net/ibta.h"
#include "sim/nic/hca.h"
#include "sim/nic/rdma_packet.h"

namespace rdmasim::trace {

std::string timeline_json(const TimelineEvent& e) {
  std::string s = "{\"t_ps\":" + std::to_string(e.t) + ",\"end_ps\":" + std::to_string(e.end) +
                  ",\"component\":\"" + e.component + "\",\"event\":\"" + e.event + "\",\"qp\":" +
                  std::to_string(e.qp) + ",\"psn\":";
  s += e.psn < 0 ? "null" : std::to_string(e.psn);
  s += ",\"bytes\":" + std::to_string(e.bytes) + ",\"payload\":" + std::to_string(e.payload) + "}";
  return s;
}

struct Timeline::PortTap final : net::PacketTap {
  Timeline* owner = nullptr;
  net::EgressPort* port = nullptr;
  net::PacketTap* inner = nullptr;   // the tap that was there (a capture)
  std::string name;

  void on_transmit(const net::Packet& pkt, Time now) override {
    if (inner) inner->on_transmit(pkt, now);
    TimelineEvent e;
    e.t = now;
    e.end = now;
    e.component = name;
    e.bytes = pkt.wire_bytes;
    e.payload = pkt.payload_len;
    switch (pkt.kind) {
      case net::PacketKind::PfcPause: e.event = "PFC_PAUSE"; break;
      case net::PacketKind::IbCredit: e.event = "IB_CREDIT"; break;
      case net::PacketKind::Cnp: e.event = "CNP"; break;
      case net::PacketKind::Transport: {
        const nic::RdmaPacket& p = nic::rdma_view(pkt);
        if (pkt.link_layer == net::LinkLayer::IWarp) {
          e.payload = p.tcp.len;   // the segment's data (MPA/DDP/RDMAP headers included)
          e.event = p.tcp.len ? "TCP" : "TCP_ACK";
          e.psn = p.tcp.seq;
        } else {
          const auto name = net::ibta::info(p.bth.opcode).name;
          e.event = name.empty() ? "OPCODE_" + std::to_string(p.bth.opcode) : std::string(name);
          e.qp = p.bth.dest_qp;
          e.psn = p.bth.psn;
        }
        break;
      }
    }
    owner->emit(e);
  }
  void on_pause(uint8_t cls, Time now, Time until) override {
    if (inner) inner->on_pause(cls, now, until);
  }
};

Timeline::Timeline(topo::Fabric& fabric, const std::vector<nic::Hca*>& hcas, Sink sink)
    : sink_(std::move(sink)), hcas_(hcas) {
  for (const topo::FabricPort& p : fabric.egress_ports()) {
    auto tap = std::make_unique<PortTap>();
    tap->owner = this;
    tap->port = p.egress;
    tap->inner = p.egress->tap();
    tap->name = p.name;
    p.egress->set_tap(tap.get());
    taps_.push_back(std::move(tap));
  }
  const auto& nics = fabric.nics();
  for (size_t i = 0; i < hcas_.size() && i < nics.size(); ++i) {
    if (!hcas_[i]) continue;
    const std::string comp = nics[i].host + "/pcie";
    hcas_[i]->pcie().set_observer([this, comp](const host::PcieTransaction& x) {
      emit({x.start, x.end, comp, std::string(host::pcie_op_name(x.op)), x.qpn, -1, x.bytes, x.bytes});
    });
  }
}

Timeline::~Timeline() {
  for (auto& t : taps_) t->port->set_tap(t->inner);
  for (nic::Hca* h : hcas_)
    if (h) h->pcie().set_observer({});
}

void Timeline::emit(const TimelineEvent& e) {
  ++events_;
  if (sink_) sink_(e);
}

struct TimelineFile::Out {
  FILE* f = nullptr;
};

TimelineFile::TimelineFile(const std::string& path, topo::Fabric& fabric, const std::vector<nic::Hca*>& hcas)
    : out_(std::make_unique<Out>()) {
  out_->f = std::fopen(path.c_str(), "w");
  if (!out_->f) throw std::runtime_error("timeline: cannot create " + path);
  timeline_ = std::make_unique<Timeline>(fabric, hcas, [o = out_.get()](const TimelineEvent& e) {
    const std::string line = timeline_json(e) + "\n";
    std::fwrite(line.data(), 1, line.size(), o->f);
  });
}

TimelineFile::~TimelineFile() {
  timeline_.reset();
  if (out_->f) std::fclose(out_->f);
}

}  // namespace rdmasim::trace
