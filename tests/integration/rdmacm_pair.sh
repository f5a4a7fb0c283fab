#!/usr/bin/env bash
# Runs an rdma_cm server/client pair (rping, perftest -R, ...) on a private simulated fabric.
#
# usage: rdmacm_pair.sh RDMASIM CONFIG|default -- SERVER_CMD... -- CLIENT_CMD...
# The client gets no address appended (rdma_cm tools take it as an option). An rdma_cm
# server listens on no TCP port, so the client is started until it is not refused with
# "RDMA_CM_EVENT_REJECTED" or, from a synchronous rdma_connect, "Connection refused" (no
# listener yet: the CM's REJ), at most 50 times 0.1 s apart;
# any other failure ends the test. Both must exit 0.
set -u
. "$(dirname "$0")/lib.sh"
rdmasim=$1; config=$2; shift 2
[ "$1" = "--" ] && shift
server=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do server+=("$1"); shift; done
shift
client=("$@")
limit=${RDMASIM_TEST_TIMEOUT:-60}

dir=$(mktemp -d /tmp/rdmasim-test.XXXXXX)
cfg=(); [ "$config" != default ] && cfg=("$config")
trap 'stop_daemon; rm -rf "$dir"' EXIT
start_daemon "$rdmasim" "$dir" "${cfg[@]}" || exit 1

timeout "$limit" "$rdmasim" exec --host server -- "${server[@]}" >"$dir/server.log" 2>&1 &
spid=$!
crc=1
for _ in $(seq 50); do
  timeout "$limit" "$rdmasim" exec --host client -- "${client[@]}" >"$dir/client.log" 2>&1
  crc=$?
  [ "$crc" = 0 ] && break
  grep -qE "REJECTED|Connection refused" "$dir/client.log" || break
  kill -0 "$spid" 2>/dev/null || break
  sleep 0.1
done
wait "$spid"; src=$?
echo "== server (exit $src): ${server[*]}"; cat "$dir/server.log"
echo "== client (exit $crc): ${client[*]}"; cat "$dir/client.log"
if [ "$src" != 0 ] || [ "$crc" != 0 ]; then
  echo "== daemon log"; tail -50 "$dir/daemon.log"
  exit 1
fi
kill -0 "$DAEMON_PID" 2>/dev/null || { echo "FAIL: the daemon died"; exit 1; }
exit 0
