// Packet capture of a fabric: a pcap file per captured port holding both directions of the
// port's link, as a switch mirror port or a tap on the cable records them. Each packet is
// written as its last bit leaves the port that sent it, timestamped with simulated time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/net/egress_port.h"
#include "sim/topo/fabric.h"
#include "sim/trace/pcap_writer.h"

namespace rdmasim::trace {

// The tap of one egress port: encodes each packet the port sends once and writes it into
// every file that records the port (a link's packets go into the files of both its ends).
class PortTap : public net::PacketTap {
 public:
  void add(PcapWriter* writer) { writers_.push_back(writer); }
  void on_transmit(const net::Packet& pkt, Time now) override;
  // Packets this port sent that have no encoding (IB credits, iWARP without an encoder),
  // each counted once however many files record the port.
  uint64_t not_captured() const { return not_captured_; }

 private:
  std::vector<PcapWriter*> writers_;
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
  PcapWriter writer_;
  std::vector<net::EgressPort*> ports_;
  std::vector<std::unique_ptr<PortTap>> taps_;
};

class Capture {
 public:
  // Creates `dir` (and parents) if needed and one file per selected port, named after it:
  // "<host>_<device>.pcap" for NIC ports, "<switch>_port<N>.pcap" for switch ports (N as in
  // `rdmasim counters`). Each file holds what the port sends and what the port at the other
  // end of its link sends to it, so it decodes alone (an iWARP stream's MPA Request and
  // Reply are both in it). Throws std::runtime_error naming the path on I/O errors.
  // The fabric must outlive the Capture (the destructor detaches the taps).
  Capture(topo::Fabric& fabric, const std::string& dir, topo::CapturePorts ports);
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  ~Capture();

  void flush();
  const std::vector<std::string>& files() const { return files_; }
  // Records written, summed over the files: a packet on a link whose two ends are both
  // captured is in two files and counts twice.
  uint64_t packets() const;
  // Packets sent on the captured links that have no encoding, each counted once.
  uint64_t not_captured() const;

 private:
  std::vector<std::unique_ptr<PcapWriter>> writers_;   // one per file, files() order
  std::vector<net::EgressPort*> ports_;                // tapped ports, taps_ order
  std::vector<std::unique_ptr<PortTap>> taps_;
  std::vector<std::string> files_;
};

}  // namespace rdmasim::trace
