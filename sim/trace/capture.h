// Packet capture of a fabric: a pcap file per captured egress port, written as each packet's
// last bit leaves the port, timestamped with simulated time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/net/egress_port.h"
#include "sim/topo/fabric.h"
#include "sim/trace/pcap_writer.h"

namespace rdmasim::trace {

// Taps one egress port into one pcap file.
class PortCapture : public net::PacketTap {
 public:
  PortCapture(const std::string& path, uint32_t linktype) : writer_(path, linktype) {}
  void on_transmit(const net::Packet& pkt, Time now) override;
  PcapWriter& writer() { return writer_; }
  // Packets this port sent that have no encoding (IB credits, iWARP without an encoder).
  uint64_t not_captured() const { return not_captured_; }

 private:
  PcapWriter writer_;
  std::vector<uint8_t> frame_;
  uint64_t not_captured_ = 0;
};

// Both directions of one link in one file, as a tap on the cable (or a switch mirror port
// copying both directions) records them: a tap on each end's egress port, one writer.
// Records stay in time order because every tap is called in engine time order.
class LinkCapture {
 public:
  // `ports`: the egress ports whose packets go into `path` (normally the two ends of a
  // link). Throws std::runtime_error naming the path when it cannot be created. The ports
  // must outlive the capture (the destructor detaches the taps).
  LinkCapture(const std::string& path, uint32_t linktype, std::vector<net::EgressPort*> ports);
  LinkCapture(const LinkCapture&) = delete;
  LinkCapture& operator=(const LinkCapture&) = delete;
  ~LinkCapture();
  uint64_t packets() const { return writer_.records(); }

 private:
  struct Tap : net::PacketTap {
    LinkCapture* owner = nullptr;
    void on_transmit(const net::Packet& pkt, Time now) override { owner->record(pkt, now); }
  };
  void record(const net::Packet& pkt, Time now);
  PcapWriter writer_;
  std::vector<net::EgressPort*> ports_;
  std::vector<std::unique_ptr<Tap>> taps_;
  std::vector<uint8_t> frame_;
};

class Capture {
 public:
  // Creates `dir` (and parents) if needed and one file per selected port, named after it:
  // "<host>_<device>.pcap" for NIC ports, "<switch>_port<N>.pcap" for switch ports (N as in
  // `rdmasim counters`). Throws std::runtime_error naming the path on I/O errors.
  // The fabric must outlive the Capture (the destructor detaches the taps).
  Capture(topo::Fabric& fabric, const std::string& dir, topo::CapturePorts ports);
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  ~Capture();

  void flush();
  const std::vector<std::string>& files() const { return files_; }
  uint64_t packets() const;
  uint64_t not_captured() const;

 private:
  std::vector<net::EgressPort*> ports_;
  std::vector<std::unique_ptr<PortCapture>> taps_;
  std::vector<std::string> files_;
};

}  // namespace rdmasim::trace
