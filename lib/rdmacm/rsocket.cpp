// rsockets (<rdma/rsocket.h>) are not implemented: every call fails with ENOSYS (a socket
// call with no implementation), and rpoll/rselect too rather than wait on nothing.
#include <cerrno>
#include <cstddef>

#define RS_FAIL(name) extern "C" long name() { errno = ENOSYS; return -1; }
RS_FAIL(rsocket)
RS_FAIL(rbind)
RS_FAIL(rlisten)
RS_FAIL(raccept)
RS_FAIL(rconnect)
RS_FAIL(rshutdown)
RS_FAIL(rclose)
RS_FAIL(rrecv)
RS_FAIL(rrecvfrom)
RS_FAIL(rrecvmsg)
RS_FAIL(rsend)
RS_FAIL(rsendto)
RS_FAIL(rsendmsg)
RS_FAIL(rread)
RS_FAIL(rreadv)
RS_FAIL(rwrite)
RS_FAIL(rwritev)
RS_FAIL(rpoll)
RS_FAIL(rselect)
RS_FAIL(rgetpeername)
RS_FAIL(rgetsockname)
RS_FAIL(rsetsockopt)
RS_FAIL(rgetsockopt)
RS_FAIL(rfcntl)
RS_FAIL(riowrite)
RS_FAIL(riounmap)
extern "C" long riomap() { errno = ENOSYS; return -1; }  // off_t: -1 as rdma-core's failure
