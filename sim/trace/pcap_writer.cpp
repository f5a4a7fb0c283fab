#include "sim/trace/pcap_writer.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace rdmasim::trace {
namespace {

void put32(std::FILE* f, uint32_t v) { std::fwrite(&v, 4, 1, f); }  // host order, as the magic
void put16(std::FILE* f, uint16_t v) { std::fwrite(&v, 2, 1, f); }

}  // namespace

PcapWriter::PcapWriter(const std::string& path, uint32_t linktype) : path_(path) {
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) throw std::runtime_error("pcap: cannot create " + path + ": " + std::strerror(errno));
  put32(f_, kPcapMagicNanos);
  put16(f_, 2);  // version 2.4
  put16(f_, 4);
  put32(f_, 0);  // thiszone: UTC
  put32(f_, 0);  // sigfigs
  put32(f_, kPcapSnaplen);
  put32(f_, linktype);
}

PcapWriter::~PcapWriter() {
  if (f_) std::fclose(f_);
}

void PcapWriter::write(Time t, std::span<const uint8_t> frame) {
  const uint64_t ns = t < 0 ? 0 : static_cast<uint64_t>(t / kNanosecond);  // ps -> ns, truncated
  const uint32_t incl = frame.size() > kPcapSnaplen ? kPcapSnaplen : static_cast<uint32_t>(frame.size());
  put32(f_, static_cast<uint32_t>(ns / 1'000'000'000));
  put32(f_, static_cast<uint32_t>(ns % 1'000'000'000));
  put32(f_, incl);
  put32(f_, static_cast<uint32_t>(frame.size()));
  std::fwrite(frame.data(), 1, incl, f_);
  ++records_;
}

void PcapWriter::flush() { std::fflush(f_); }

}  // namespace rdmasim::trace
