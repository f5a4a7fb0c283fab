#!/usr/bin/env bash
# rdma_cm error paths through Debian's rping on a private fabric (default, RoCE):
#  - connect to a host with no listener: the remote CM answers the REQ with a REJ whose
#    reason is 8, "invalid service ID" (IBTA 12.6.7.2 table 112), so rping reports
#    RDMA_CM_EVENT_REJECTED with status 8 and exits 255 (its -1);
#  - an address no simulated host has: RDMA_CM_EVENT_ADDR_ERROR with -EHOSTUNREACH (-113,
#    Linux errno 113), as address resolution with no route;
#  - the daemon survives both.
# usage: rdmacm_negative.sh RDMASIM
set -u
. "$(dirname "$0")/lib.sh"
rdmasim=$1
fail=0
dir=$(mktemp -d /tmp/rdmasim-test.XXXXXX)
trap 'stop_daemon; rm -rf "$dir"' EXIT
start_daemon "$rdmasim" "$dir" || exit 1
expect_exit 255 "rping to a host with no listener" \
  timeout 20 "$rdmasim" exec --host client -- rping -c -v -C 1 -a 127.0.1.1 &&
  { grep -q "cma event RDMA_CM_EVENT_REJECTED, error 8$" "$dir/out" "$dir/err" ||
    bad "no REJECTED with status 8: $(cat "$dir/out" "$dir/err")"; }
expect_exit 255 "rping to an address no host has" \
  timeout 20 "$rdmasim" exec --host client -- rping -c -v -C 1 -a 127.0.9.9 &&
  { grep -q "cma event RDMA_CM_EVENT_ADDR_ERROR, error -113$" "$dir/out" "$dir/err" ||
    bad "no ADDR_ERROR with -113: $(cat "$dir/out" "$dir/err")"; }
kill -0 "$DAEMON_PID" 2>/dev/null || bad "the daemon died"
exit $fail
