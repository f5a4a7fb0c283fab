// rdma_getaddrinfo, the device list, event names, ports and options; and the calls this
// library does not implement (multicast, rsockets, ECE, migration), each failing with the
// errno its man page or rdma-core gives for an unsupported request.
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "lib/rdmacm/cm.h"

using rdmasim::rdmacm::Cm;
using rdmasim::rdmacm::fail;

namespace {

sockaddr* copy_sa(const sockaddr* sa, socklen_t len) {
  auto* c = static_cast<sockaddr*>(malloc(len));
  if (c) std::memcpy(c, sa, len);
  return c;
}

}  // namespace

extern "C" {

// IPv4 only (the simulated hosts' addresses): node and service through getaddrinfo(3).
// RAI_PASSIVE puts the address in ai_src_addr (INADDR_ANY without a node), else in
// ai_dst_addr with the hints' source, if any, in ai_src_addr.
int rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints,
                     rdma_addrinfo** res) {
  if (!res || (!node && !service)) return fail(EINVAL);
  if (hints && hints->ai_family && hints->ai_family != AF_INET) return fail(EAFNOSUPPORT);
  const bool passive = hints && (hints->ai_flags & RAI_PASSIVE);
  addrinfo h{};
  h.ai_family = AF_INET;
  h.ai_socktype = SOCK_STREAM;
  if (passive) h.ai_flags |= AI_PASSIVE;
  if (hints && (hints->ai_flags & RAI_NUMERICHOST)) h.ai_flags |= AI_NUMERICHOST;
  addrinfo* ai = nullptr;
  if (int rc = getaddrinfo(node, service, &h, &ai)) return fail(rc == EAI_SYSTEM ? errno : EADDRNOTAVAIL);
  auto* r = static_cast<rdma_addrinfo*>(calloc(1, sizeof(rdma_addrinfo)));
  if (!r) {
    freeaddrinfo(ai);
    return fail(ENOMEM);
  }
  r->ai_flags = hints ? hints->ai_flags : 0;
  r->ai_family = AF_INET;
  r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
  r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space
                     : r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
  if (passive) {
    r->ai_src_len = ai->ai_addrlen;
    r->ai_src_addr = copy_sa(ai->ai_addr, ai->ai_addrlen);
  } else {
    r->ai_dst_len = ai->ai_addrlen;
    r->ai_dst_addr = copy_sa(ai->ai_addr, ai->ai_addrlen);
    if (hints && hints->ai_src_addr && hints->ai_src_len) {
      r->ai_src_len = hints->ai_src_len;
      r->ai_src_addr = copy_sa(hints->ai_src_addr, hints->ai_src_len);
    }
  }
  freeaddrinfo(ai);
  *res = r;
  return 0;
}

void rdma_freeaddrinfo(rdma_addrinfo* res) {
  while (res) {
    rdma_addrinfo* next = res->ai_next;
    free(res->ai_src_addr);
    free(res->ai_dst_addr);
    free(res->ai_src_canonname);
    free(res->ai_dst_canonname);
    free(res->ai_route);
    free(res->ai_connect);
    free(res);
    res = next;
  }
}

ibv_context** rdma_get_devices(int* num_devices) {
  ibv_context** list = Cm::get().contexts(num_devices);
  if (!list && num_devices) *num_devices = 0;
  return list;
}

void rdma_free_devices(ibv_context** list) { free(list); }

const char* rdma_event_str(rdma_cm_event_type event) {
  switch (event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR: return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR: return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE: return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR: return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE: return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED: return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN: return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR: return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE: return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
    default: return "UNKNOWN EVENT";
  }
}

__be16 rdma_get_src_port(rdma_cm_id* id) {
  return id && id->route.addr.src_addr.sa_family == AF_INET ? id->route.addr.src_sin.sin_port : 0;
}
__be16 rdma_get_dst_port(rdma_cm_id* id) {
  return id && id->route.addr.dst_addr.sa_family == AF_INET ? id->route.addr.dst_sin.sin_port : 0;
}

// Options that hold here by construction are accepted: port reuse (no TIME_WAIT is
// modelled, so a port is free once its id is gone), IPv4-only binding (AFONLY), the type of
// service (the QP's traffic class is the program's). Others: ENOSYS, as for an option the
// kernel's ucma does not know.
int rdma_set_option(rdma_cm_id* id, int level, int optname, void* optval, size_t optlen) {
  if (!id || !optval) return fail(EINVAL);
  if (level == RDMA_OPTION_ID &&
      (optname == RDMA_OPTION_ID_TOS || optname == RDMA_OPTION_ID_REUSEADDR ||
       optname == RDMA_OPTION_ID_AFONLY) && optlen >= 1)
    return 0;
  return fail(ENOSYS);
}

// Not implemented: each is refused as an unsupported request is, never a silent success.
int rdma_join_multicast(rdma_cm_id*, sockaddr*, void*) { return fail(ENOSYS); }
int rdma_join_multicast_ex(rdma_cm_id*, rdma_cm_join_mc_attr_ex*, void*) { return fail(ENOSYS); }
int rdma_leave_multicast(rdma_cm_id*, sockaddr*) { return fail(ENOSYS); }
int rdma_notify(rdma_cm_id*, ibv_event_type) { return fail(ENOSYS); }
int rdma_migrate_id(rdma_cm_id*, rdma_event_channel*) { return fail(ENOSYS); }
int rdma_establish(rdma_cm_id*) { return fail(ENOSYS); }
int rdma_init_qp_attr(rdma_cm_id*, ibv_qp_attr*, int*) { return fail(ENOSYS); }
int rdma_set_local_ece(rdma_cm_id*, ibv_ece*) { return fail(EOPNOTSUPP); }
int rdma_get_remote_ece(rdma_cm_id*, ibv_ece*) { return fail(EOPNOTSUPP); }
int rdma_reject_ece(rdma_cm_id*, const void*, uint8_t) { return fail(EOPNOTSUPP); }

}  // extern "C"
