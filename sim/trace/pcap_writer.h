// A classic libpcap file writer with nanosecond timestamps (magic 0xa1b23c4d).
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include "sim/core/time.h"

namespace rdmasim::trace {

// Link types of the pcap header (tcpdump.org/linktypes.html).
inline constexpr uint32_t kLinktypeEthernet = 1;
inline constexpr uint32_t kLinktypeInfiniband = 247;
// Endace ERF records; used for InfiniBand because Wireshark 4.0 (Debian 12) does not read
// link type 247, while it dissects ERF records of type InfiniBand (21) and InfiniBand link (25).
inline constexpr uint32_t kLinktypeErf = 197;
// Magic of the nanosecond-resolution variant of the classic format, written in host order
// (readers detect the byte order from it).
inline constexpr uint32_t kPcapMagicNanos = 0xa1b23c4d;
inline constexpr uint32_t kPcapSnaplen = 65535;

class PcapWriter {
 public:
  // Creates (truncates) `path` and writes the 24-byte file header. Throws std::runtime_error
  // naming the path and errno's text when the file cannot be created.
  PcapWriter(const std::string& path, uint32_t linktype);
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;
  ~PcapWriter();

  // One record: timestamp = simulated time `t` (ps since the engine started, written as
  // seconds + nanoseconds, the picoseconds truncated), the frame
  // bytes (cut to the snap length; orig_len keeps the full length).
  void write(Time t, std::span<const uint8_t> frame);
  void flush();
  uint64_t records() const { return records_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  uint64_t records_ = 0;
};

}  // namespace rdmasim::trace
