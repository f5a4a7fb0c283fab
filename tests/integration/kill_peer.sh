#!/usr/bin/env bash
# A verbs process killed with SIGKILL mid-transfer: the daemon keeps running, the peer gets
# a completion error (not a hang), and a new pair then runs normally on the same daemon.
#
# usage: kill_peer.sh RDMASIM PORT
# Both sides run `ib_write_bw -b` (bidirectional: each side has RDMA WRITEs in flight), so
# when the client dies its peer's outstanding WRITEs fail. Which error depends on which the
# daemon sees first: a WRITE whose DMA into the dead process fails is NAKed as a remote
# access error (IBV_WC_REM_ACCESS_ERR, 10); once the daemon has seen the socket close and
# destroyed the QP, packets reach no QP and the requester retries retry_cnt times
# (perftest: retry_cnt 7, timeout 14 = 4.096 us * 2^14 = 67 ms, IBTA 9.7.6.1.3), then
# completes with IBV_WC_RETRY_EXC_ERR (12) after about 8 * 67 ms = 0.54 s simulated.
set -u
. "$(dirname "$0")/lib.sh"
rdmasim=$1; port=$2
dir=$(mktemp -d /tmp/rdmasim-kill.XXXXXX)
trap 'stop_daemon; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; for f in "$dir"/*.log; do echo "== $f"; tail -30 "$f"; done; exit 1; }
start_daemon "$rdmasim" "$dir" || fail "daemon did not start"
dpid=$DAEMON_PID
args=(ib_write_bw -F -d mlx5_0 -x 0 -b -s 65536 -n 100000000)
timeout 60 "$rdmasim" exec --host server -- "${args[@]}" -p "$port" >"$dir/server.log" 2>&1 &
spid=$!
wait_listen "$port" "$spid" || fail "server did not listen"
timeout 60 "$rdmasim" exec --host client -- "${args[@]}" -p "$port" 127.0.1.1 >"$dir/client.log" 2>&1 &
cpid=$!
# Mid-transfer: the counters show WQEs flowing before the kill.
posted=0
for _ in $(seq 200); do
  posted=$("$rdmasim" counters --socket "$RDMASIM_SOCKET" 2>/dev/null |
           sed -n 's/.*"wqes_posted": \([0-9]*\).*/\1/p' | head -1)
  [ "${posted:-0}" -gt 1000 ] && break
  sleep 0.05
done
[ "${posted:-0}" -gt 1000 ] || fail "no transfer started (wqes_posted=$posted)"
# `rdmasim exec` execs the program, so $cpid is ib_write_bw itself (timeout's child).
victim=$(pgrep -P "$cpid" -x ib_write_bw || echo "$cpid")
kill -KILL "$victim"
echo "killed client ib_write_bw (pid $victim) after $posted WQEs"
# The peer must fail with a completion error within the retry budget (0.54 s simulated,
# paced to the wall clock), well inside 20 s.
start=$(date +%s)
for _ in $(seq 400); do kill -0 "$spid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$spid" 2>/dev/null && fail "the peer still runs 20 s after the kill (hang)"
wait "$spid"; src=$?
echo "peer exited with status $src after $(( $(date +%s) - start )) s"
[ "$src" != 0 ] || fail "the peer exited 0"
grep -Eiq "completion with error|failed status" "$dir/server.log" ||
  fail "the peer reported no completion error"
grep -Ei "completion with error|failed status" "$dir/server.log" | head -3
kill -0 "$dpid" 2>/dev/null || fail "the daemon died"

# A new pair on the same daemon runs normally.
port2=$((port + 1))
timeout 60 "$rdmasim" exec --host server -- ib_write_bw -F -d mlx5_0 -x 0 -p "$port2" >"$dir/server2.log" 2>&1 &
s2=$!
wait_listen "$port2" "$s2" || fail "second server did not listen"
timeout 60 "$rdmasim" exec --host client -- ib_write_bw -F -d mlx5_0 -x 0 -p "$port2" 127.0.1.1 >"$dir/client2.log" 2>&1 ||
  fail "second client failed"
wait "$s2" || fail "second server failed"
grep -E '^ +65536 +5000 ' "$dir/client2.log" || fail "second pair printed no result line"
kill -0 "$dpid" 2>/dev/null || fail "the daemon died"
echo PASS
