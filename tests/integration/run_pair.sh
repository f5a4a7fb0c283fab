#!/usr/bin/env bash
# Runs a server/client pair of unmodified verbs programs on a private simulated fabric.
#
# usage: run_pair.sh RDMASIM CONFIG|default PORT -- SERVER_CMD... -- CLIENT_CMD...
# The client command gets the server host's address appended (127.0.1.1 on the shipped
# fabrics). Both must exit 0 within the time limit. The daemon is private to this test
# (its own socket), so tests can run side by side.
set -u
. "$(dirname "$0")/lib.sh"
rdmasim=$1; config=$2; port=$3; shift 3
[ "$1" = "--" ] && shift
server=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do server+=("$1"); shift; done
shift
client=("$@")
limit=${RDMASIM_TEST_TIMEOUT:-120}

dir=$(mktemp -d /tmp/rdmasim-test.XXXXXX)
cfg=(); [ "$config" != default ] && cfg=("$config")
# RDMASIM_PCAP_DIR: capture every port of the fabric into that directory.
[ -n "${RDMASIM_PCAP_DIR:-}" ] && cfg=(--pcap "$RDMASIM_PCAP_DIR" "${cfg[@]}")
trap 'stop_daemon; rm -rf "$dir"' EXIT
start_daemon "$rdmasim" "$dir" "${cfg[@]}" || exit 1

timeout "$limit" "$rdmasim" exec --host server -- "${server[@]}" >"$dir/server.log" 2>&1 &
spid=$!
wait_listen "$port" "$spid"
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
