// A NIC's receive tap, for the runners that count what each host receives (studies,
// lessons): each packet arriving at NIC `nic` is shown to the observer first
// (`observer.on_rx(nic, packet)`), then handed to the HCA. Give it to attach_hca() as the
// NIC's receiver.
#pragma once

#include <cstddef>
#include <utility>

#include "sim/net/packet.h"
#include "sim/nic/hca.h"

namespace rdmasim::topo {

template <class Observer>
class RxTap final : public net::Node {
 public:
  RxTap(Observer& observer, size_t nic, nic::Hca& hca) : observer_(observer), nic_(nic), hca_(hca) {}
  void receive(net::PacketPtr pkt, int port) override {
    observer_.on_rx(nic_, *pkt);
    hca_.receive(std::move(pkt), port);
  }

 private:
  Observer& observer_;
  size_t nic_;
  nic::Hca& hca_;
};

}  // namespace rdmasim::topo
