// The study's flows as verbs programs (flow_driver "programs"): one instance of
// lib/workloads/flows.c per host that takes part in a flow, and the keys those instances
// publish (lib/workloads/README.md), read back into the flows' results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/inproc/runtime.h"
#include "lib/study/study.h"

namespace rdmasim::study {

// Where the shipped workload programs are: $RDMASIM_WORKLOADS_DIR, else the build's
// lib/workloads.
std::string workloads_dir();

// One instance of flows.so per NIC that is a flow's src or dst, in NIC order (its rank is
// its position); each gets the flows it is in as arguments. `hosts` names each NIC's host.
std::vector<inproc::ProgramInstance> flow_instances(const StudySpec& spec, const std::vector<std::string>& hosts);

// A key of flows.c: "wl.flow<K>.req" / ".rsp" (a side's QP, its first 4 bytes the QPN) or
// "wl.flow<K>.done" (messages completed and a status: 0, a work-completion status, -1).
struct FlowKey {
  enum What : uint8_t { Req, Rsp, Done } what = Req;
  size_t flow = 0;
  uint32_t qpn = 0;
  uint64_t messages = 0;
  int32_t status = 0;
};

// false for any other key, or a value of the wrong size.
bool parse_flow_key(const std::string& key, const std::vector<uint8_t>& value, FlowKey* out);

}  // namespace rdmasim::study
