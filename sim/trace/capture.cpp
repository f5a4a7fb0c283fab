#include "sim/trace/capture.h"

#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <unordered_map>

#include "sim/trace/encode.h"

namespace rdmasim::trace {

void PortTap::on_transmit(const net::Packet& pkt, Time now) {
  frame_.clear();
  if (!encode_record(pkt, now, frame_)) {
    ++not_captured_;
    return;
  }
  for (PcapWriter* w : writers_) w->write(now, frame_);
}

LinkCapture::LinkCapture(const std::string& path, uint32_t linktype, std::vector<net::EgressPort*> ports)
    : writer_(path, linktype), ports_(std::move(ports)) {
  for (net::EgressPort* p : ports_) {
    taps_.push_back(std::make_unique<PortTap>());
    taps_.back()->add(&writer_);
    p->set_tap(taps_.back().get());
  }
}

LinkCapture::~LinkCapture() {
  for (net::EgressPort* p : ports_) p->set_tap(nullptr);
}

Capture::Capture(topo::Fabric& fabric, const std::string& dir, topo::CapturePorts ports) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("pcap: cannot create directory " + dir + ": " + ec.message());
  const uint32_t linktype = linktype_for(fabric.link_layer());
  std::unordered_map<net::EgressPort*, PortTap*> tap_of;
  auto tap = [&](net::EgressPort* port) -> PortTap& {
    PortTap*& t = tap_of[port];
    if (!t) {
      ports_.push_back(port);
      taps_.push_back(std::make_unique<PortTap>());
      t = taps_.back().get();
    }
    return *t;
  };
  for (const topo::FabricPort& p : fabric.egress_ports()) {
    if (p.is_switch ? ports == topo::CapturePorts::Hosts : ports == topo::CapturePorts::Switches)
      continue;
    const std::string path = (std::filesystem::path(dir) / (p.file_stem + ".pcap")).string();
    writers_.push_back(std::make_unique<PcapWriter>(path, linktype));
    files_.push_back(path);
    tap(p.egress).add(writers_.back().get());
    if (p.peer) tap(p.peer).add(writers_.back().get());
  }
  for (size_t i = 0; i < ports_.size(); ++i) ports_[i]->set_tap(taps_[i].get());
}

Capture::~Capture() {
  for (net::EgressPort* p : ports_) p->set_tap(nullptr);
}

void Capture::flush() {
  for (auto& w : writers_) w->flush();
}

uint64_t Capture::packets() const {
  uint64_t n = 0;
  for (const auto& w : writers_) n += w->records();
  return n;
}

uint64_t Capture::not_captured() const {
  uint64_t n = 0;
  for (const auto& t : taps_) n += t->not_captured();
  return n;
}

}  // namespace rdmasim::trace
