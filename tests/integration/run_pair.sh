#!/usr/bin/env bash
# Runs a server/client pair of unmodified verbs programs on a private simulated fabric.
#
# usage: run_pair.sh RDMASIM CONFIG|default PORT -- SERVER_CMD... -- CLIENT_CMD...
# The client command gets the server host's address appended (127.0.1.1 on the shipped
# fabrics). Both must exit 0 within the time limit. The daemon is private to this test
# (its own socket), so tests can run side by side.
set -u
rdmasim=$1; config=$2; port=$3; shift 3
[ "$1" = "--" ] && shift
server=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do server+=("$1"); shift; done
shift
client=("$@")
limit=${RDMASIM_TEST_TIMEOUT:-120}

dir=$(mktemp -d /tmp/rdmasim-test.XXXXXX)
export RDMASIM_SOCKET=$dir/fabric.sock
cfg=(); [ "$config" != default ] && cfg=("$config")
# RDMASIM_PCAP_DIR: capture every port of the fabric into that directory.
[ -n "${RDMASIM_PCAP_DIR:-}" ] && cfg=(--pcap "$RDMASIM_PCAP_DIR" "${cfg[@]}")
"$rdmasim" fabric --socket "$RDMASIM_SOCKET" "${cfg[@]}" >"$dir/daemon.log" 2>&1 &
dpid=$!
cleanup() {
  kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -S "$RDMASIM_SOCKET" ] && break; sleep 0.05; done
[ -S "$RDMASIM_SOCKET" ] || { echo "daemon did not start"; cat "$dir/daemon.log"; exit 1; }

timeout "$limit" "$rdmasim" exec --host server -- "${server[@]}" >"$dir/server.log" 2>&1 &
spid=$!
# Wait until the server listens on its out-of-band TCP port (a probe connection would be
# taken as the client, so look at the socket table instead).
for _ in $(seq 200); do
  ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
  kill -0 "$spid" 2>/dev/null || break
  sleep 0.05
done
timeout "$limit" "$rdmasim" exec --host client -- "${client[@]}" 127.0.1.1 >"$dir/client.log" 2>&1
crc=$?
wait "$spid"; src=$?
echo "== server (exit $src): ${server[*]}"; cat "$dir/server.log"
echo "== client (exit $crc): ${client[*]}"; cat "$dir/client.log"
if [ "$src" != 0 ] || [ "$crc" != 0 ]; then
  echo "== daemon log"; tail -50 "$dir/daemon.log"
  exit 1
fi
exit 0
