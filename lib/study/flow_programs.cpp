// The study's flows as instances of lib/workloads/flows.c (see flow_programs.h).
#include "lib/study/flow_programs.h"

#include <cstdlib>
#include <cstring>
#include <map>

namespace rdmasim::study {

std::string workloads_dir() {
  if (const char* p = getenv("RDMASIM_WORKLOADS_DIR"); p && *p) return p;
  return RDMASIM_WORKLOADS_DIR;
}

std::vector<inproc::ProgramInstance> flow_instances(const StudySpec& spec, const std::vector<std::string>& hosts) {
  std::map<size_t, std::vector<size_t>> by_nic;   // NIC -> its flows, NICs in order
  for (size_t k = 0; k < spec.flows.size(); ++k) {
    by_nic[spec.flows[k].src].push_back(k);
    by_nic[spec.flows[k].dst].push_back(k);
  }
  std::map<size_t, int> rank;
  for (const auto& [nic, flows] : by_nic) rank.emplace(nic, static_cast<int>(rank.size()));
  std::vector<inproc::ProgramInstance> out;
  const std::string so = workloads_dir() + "/flows.so";
  for (const auto& [nic, flows] : by_nic) {
    inproc::ProgramInstance inst{so, hosts.at(nic), {}};
    for (size_t k : flows) {
      const FlowSpec& f = spec.flows[k];
      const char op = f.op == Op::Write ? 'w' : f.op == Op::Read ? 'r' : 's';
      inst.args.push_back(std::to_string(k) + ":" + std::to_string(rank.at(f.src)) + ":" +
                          std::to_string(rank.at(f.dst)) + ":" + op + ":" + qp_name(f.qp) + ":" +
                          std::to_string(f.message_bytes) + ":" + std::to_string(f.bytes) + ":" +
                          std::to_string(f.start / kNanosecond) + ":" + std::to_string(f.priority) + ":" +
                          std::to_string(f.window));
    }
    out.push_back(std::move(inst));
  }
  return out;
}

bool parse_flow_key(const std::string& key, const std::vector<uint8_t>& value, FlowKey* out) {
  constexpr std::string_view prefix = "wl.flow";
  if (key.compare(0, prefix.size(), prefix) != 0) return false;
  size_t pos = prefix.size(), end = pos;
  while (end < key.size() && key[end] >= '0' && key[end] <= '9') ++end;
  if (end == pos || end - pos > 18 || end == key.size() || key[end] != '.') return false;
  out->flow = std::stoull(key.substr(pos, end - pos));
  const std::string what = key.substr(end + 1);
  if (what == "req" || what == "rsp") {
    if (value.size() < 4) return false;
    out->what = what == "req" ? FlowKey::Req : FlowKey::Rsp;
    std::memcpy(&out->qpn, value.data(), 4);
    return true;
  }
  if (what != "done" || value.size() != 16) return false;   // struct wl_done
  out->what = FlowKey::Done;
  std::memcpy(&out->messages, value.data(), 8);
  std::memcpy(&out->status, value.data() + 8, 4);
  return true;
}

}  // namespace rdmasim::study
