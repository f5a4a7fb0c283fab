#!/usr/bin/env bash
# CM timeouts and retries on a fabric whose server link is down (roce, ib or iwarp), with
# Debian's rping. On iWARP the message resent is the TCP SYN (then the MPA Request), with the
# same "cm" times (lib/daemon/cm_iwarp.cpp), so the figures below hold there too. CM times are IBTA codes (4.096 us x 2^t): a REQ waits 2 x packet lifetime + the
# response timeout for the REP = 2 x 4.096 us x 2^12 + 4.096 us x 2^16 = 302.0 ms here
# (response timeout 17 in the second case: 570.4 ms).
#  1. The link never comes up, max_retries 2: the REQ goes out 3 times and rping gets
#     RDMA_CM_EVENT_UNREACHABLE with -ETIMEDOUT (-110: the kernel's cma reports a REQ that
#     timed out so), no sooner than 3 x 302.0 ms after connecting; counters: 2 resent, 1 timeout.
#  2. The link comes up at 4 s: the REQs sent before are lost, a later one gets through, and
#     rping -C 3 completes on both sides; counters: at least 1 resent, no timeout.
# usage: rdmacm_timeouts.sh RDMASIM roce|ib|iwarp
set -u
. "$(dirname "$0")/lib.sh"
rdmasim=$1; ll=$2
fail=0
dir=$(mktemp -d /tmp/rdmasim-test.XXXXXX)
trap 'stop_daemon; rm -rf "$dir"' EXIT

fabric() {  # fabric SCHEDULE RESPONSE_TIMEOUT MAX_RETRIES > file
  cat <<JSON
{"name": "cm_$ll", "link_layer": "$ll", "seed": 1,
 "cm": {"response_timeout": $2, "packet_lifetime": 12, "max_retries": $3},
 "hosts": [{"name": "server", "ip": "127.0.1.1", "nics": [{"name": "mlx5_0"}]},
           {"name": "client", "ip": "127.0.1.2", "nics": [{"name": "mlx5_0"}]}],
 "switches": [{"name": "sw0"}],
 "links": [{"a": "server/mlx5_0", "b": "sw0", "rate_gbps": 100, "latency_ns": 400, "schedule": $1},
           {"a": "client/mlx5_0", "b": "sw0", "rate_gbps": 100, "latency_ns": 400}]}
JSON
}
counter() { "$rdmasim" counters --socket "$RDMASIM_SOCKET" | sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" | head -1; }

# 1. unreachable
fabric '[{"at_ns": 0, "up": false}]' 16 2 >"$dir/down.json"
start_daemon "$rdmasim" "$dir" "$dir/down.json" || exit 1
timeout 20 "$rdmasim" exec --host server -- rping -s -v -C 1 -a 127.0.1.1 >"$dir/server.log" 2>&1 &
spid=$!
wait_cm_listen "$rdmasim" "$spid"
t0=$(date +%s%N)
expect_exit 255 "rping to a host whose link is down" \
  timeout 20 "$rdmasim" exec --host client -- rping -c -v -C 1 -a 127.0.1.1 &&
  { grep -q "cma event RDMA_CM_EVENT_UNREACHABLE, error -110$" "$dir/out" "$dir/err" ||
    bad "no UNREACHABLE with -110: $(cat "$dir/out" "$dir/err")"; }
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "UNREACHABLE after $ms ms (3 x 302.0 ms of CM waits at least)"
[ "$ms" -ge 906 ] || bad "UNREACHABLE after $ms ms, before the 3 REQs' 906 ms"
[ "$(counter cm_resent)" = 2 ] || bad "cm_resent $(counter cm_resent), expected 2 (max_retries)"
[ "$(counter cm_timeouts)" = 1 ] || bad "cm_timeouts $(counter cm_timeouts), expected 1"
kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
kill -0 "$DAEMON_PID" 2>/dev/null || bad "the daemon died"
stop_daemon

# 2. lost REQs, then the link comes up
fabric '[{"at_ns": 0, "up": false}, {"at_ns": 4000000000, "up": true}]' 17 15 >"$dir/late.json"
start_daemon "$rdmasim" "$dir" "$dir/late.json" || exit 1
timeout 30 "$rdmasim" exec --host server -- rping -s -v -C 3 -a 127.0.1.1 >"$dir/server.log" 2>&1 &
spid=$!
wait_cm_listen "$rdmasim" "$spid"
timeout 30 "$rdmasim" exec --host client -- rping -c -v -C 3 -a 127.0.1.1 >"$dir/client.log" 2>&1 ||
  bad "rping client failed after the link came up: $(cat "$dir/client.log")"
wait "$spid" || bad "rping server failed: $(cat "$dir/server.log")"
r=$(counter cm_resent)
echo "REQ resent $r times before the link came up"
[ "${r:-0}" -ge 1 ] || bad "no REQ was resent (cm_resent ${r:-none})"
[ "$(counter cm_timeouts)" = 0 ] || bad "a CM exchange timed out"
grep -E "cm: (REQ|SYN)" "$dir/daemon.log" | head -3
[ $fail = 0 ] || { echo "== daemon log"; tail -30 "$dir/daemon.log"; }
exit $fail
