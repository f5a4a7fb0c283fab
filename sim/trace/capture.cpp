#include "sim/trace/capture.h"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "sim/trace/encode.h"

namespace rdmasim::trace {

void PortCapture::on_transmit(const net::Packet& pkt, Time now) {
  frame_.clear();
  if (!encode_record(pkt, now, frame_)) {
    ++not_captured_;
    return;
  }
  writer_.write(now, frame_);
}

LinkCapture::LinkCapture(const std::string& path, uint32_t linktype, std::vector<net::EgressPort*> ports)
    : writer_(path, linktype), ports_(std::move(ports)) {
  for (net::EgressPort* p : ports_) {
    taps_.push_back(std::make_unique<Tap>());
    taps_.back()->owner = this;
    p->set_tap(taps_.back().get());
  }
}

LinkCapture::~LinkCapture() {
  for (net::EgressPort* p : ports_) p->set_tap(nullptr);
}

void LinkCapture::record(const net::Packet& pkt, Time now) {
  frame_.clear();
  if (encode_record(pkt, now, frame_)) writer_.write(now, frame_);
}

Capture::Capture(topo::Fabric& fabric, const std::string& dir, topo::CapturePorts ports) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("pcap: cannot create directory " + dir + ": " + ec.message());
  const uint32_t linktype = linktype_for(fabric.link_layer());
  for (const topo::FabricPort& p : fabric.egress_ports()) {
    if (p.is_switch ? ports == topo::CapturePorts::Hosts : ports == topo::CapturePorts::Switches)
      continue;
    const std::string path = (std::filesystem::path(dir) / (p.file_stem + ".pcap")).string();
    taps_.push_back(std::make_unique<PortCapture>(path, linktype));
    ports_.push_back(p.egress);
    files_.push_back(path);
    p.egress->set_tap(taps_.back().get());
  }
}

Capture::~Capture() {
  for (net::EgressPort* p : ports_) p->set_tap(nullptr);
}

void Capture::flush() {
  for (auto& t : taps_) t->writer().flush();
}

uint64_t Capture::packets() const {
  uint64_t n = 0;
  for (const auto& t : taps_) n += t->writer().records();
  return n;
}

uint64_t Capture::not_captured() const {
  uint64_t n = 0;
  for (const auto& t : taps_) n += t->not_captured();
  return n;
}

}  // namespace rdmasim::trace
