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
limit=${RDMASIM_TEST_TIMEOUT:-120}
pair_start "$rdmasim" "$config" "$@" || exit 1

timeout "$limit" "$rdmasim" exec --host server -- "${server[@]}" >"$dir/server.log" 2>&1 &
spid=$!
wait_listen "$port" "$spid"
timeout "$limit" "$rdmasim" exec --host client -- "${client[@]}" 127.0.1.1 >"$dir/client.log" 2>&1
crc=$?
wait "$spid"; src=$?
pair_finish "$src" "$crc"
