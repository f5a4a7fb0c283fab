#!/usr/bin/env bash
# rdma_cm negative and private-data paths with exact events and statuses (rdmacm_cases.c),
# on a private fabric (CONFIG, or "default"):
#  - a listener that rejects with private data: the client sees REJECTED, status 28, the
#    listener's bytes; REQ and REP private data arrive; DISCONNECTED on both sides after
#    the client's rdma_disconnect;
#  - a client SIGKILLed while connected: its peer gets DISCONNECTED (status 0) and the
#    daemon survives.
# usage: rdmacm_cases.sh RDMASIM CASES CONFIG|default
set -u
. "$(dirname "$0")/lib.sh"
rdmasim=$1; cases=$2; config=$3
fail=0
dir=$(mktemp -d /tmp/rdmasim-test.XXXXXX)
trap 'stop_daemon; rm -rf "$dir"' EXIT
cfg=(); [ "$config" != default ] && cfg=("$config")
start_daemon "$rdmasim" "$dir" "${cfg[@]}" || exit 1
timeout 30 "$rdmasim" exec --host server -- "$cases" server 127.0.1.1 7999 >"$dir/server.log" 2>&1 &
spid=$!
wait_cm_listen "$rdmasim" "$spid" || { cat "$dir/server.log"; echo "FAIL: no listener"; exit 1; }
timeout 20 "$rdmasim" exec --host client -- "$cases" client 127.0.1.1 7999 >"$dir/client.log" 2>&1 ||
  bad "the client (reject, private data, disconnect) failed"
timeout 20 "$rdmasim" exec --host client -- "$cases" client 127.0.1.1 7999 hang >"$dir/hang.log" 2>&1 &
hpid=$!
for _ in $(seq 200); do grep -q '^connected' "$dir/hang.log" && break; sleep 0.05; done
grep -q '^connected' "$dir/hang.log" || bad "the third connection was not established"
# SIGKILL the client program itself (it prints its pid).
victim=$(sed -n 's/^connected pid \([0-9]*\)$/\1/p' "$dir/hang.log")
[ -n "$victim" ] && kill -9 "$victim"
wait "$hpid" 2>/dev/null
wait "$spid" || bad "the server failed"
echo "== server"; cat "$dir/server.log"
echo "== client"; cat "$dir/client.log"; cat "$dir/hang.log"
grep -q "server done, 0 failures" "$dir/server.log" || bad "the server's checks"
grep -q "client done, 0 failures" "$dir/client.log" || bad "the client's checks"
kill -0 "$DAEMON_PID" 2>/dev/null || bad "the daemon died"
[ $fail = 0 ] || { echo "== daemon log"; tail -30 "$dir/daemon.log"; }
exit $fail
