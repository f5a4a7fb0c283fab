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
