#!/usr/bin/env bash
# The command line against a running daemon: `rdmasim counters` prints complete JSON on a
# fabric whose counters outgrow one socket message; `--help` on every command exits 0 and
# touches no daemon; usage errors exit 2; `rdmasim shutdown` stops the daemon.
#
# usage: cli_daemon.sh RDMASIM SOURCE_DIR
set -u
. "$(dirname "$0")/lib.sh"
rdmasim=$1; src=$2
dir=$(mktemp -d /tmp/rdmasim-clid.XXXXXX)
trap 'stop_daemon; rm -rf "$dir"' EXIT
fail=0
daemon_alive() { kill -0 "$DAEMON_PID" 2>/dev/null; }

start_daemon "$rdmasim" "$dir" "$src/configs/fat_tree_roce.json" || exit 1

# --- counters: complete and valid at k=4 ----------------------------------------------------
# 16 KiB is what one reply message could carry (ipc::kMaxMsgBytes = 16384); the k=4
# fat tree's counters (16 NICs, 20 switches, 96 ports) are several times that.
if expect_exit 0 "counters on the k=4 fat tree" "$rdmasim" counters --socket "$RDMASIM_SOCKET"; then
  python3 -c 'import json,sys; json.load(sys.stdin)' <"$dir/out" && echo "ok: counters parse as JSON" \
    || bad "counters are not valid JSON"
  size=$(wc -c <"$dir/out")
  [ "$size" -gt 16384 ] && echo "ok: counters are $size bytes (> 16384)" || bad "counters are only $size bytes"
fi

# --- --help everywhere: exit 0, no daemon contacted, started or stopped ---------------------
# RDMASIM_SOCKET points at the running daemon, so `shutdown --help` would stop it and
# `counters --help` would query it if --help were not handled first; `exec --help` would
# run a program (and start a daemon at $dir/other.sock) if it were.
for cmd in "" fabric exec study counters shutdown; do
  # shellcheck disable=SC2086
  expect_exit 0 "rdmasim $cmd --help" "$rdmasim" $cmd --help || continue
  grep -q "^Usage: rdmasim" "$dir/out" || bad "rdmasim $cmd --help: no usage line on stdout"
done
expect_exit 0 "rdmasim shutdown --help --socket" "$rdmasim" shutdown --help --socket "$RDMASIM_SOCKET"
RDMASIM_SOCKET=$dir/other.sock expect_exit 0 "rdmasim exec --help -- true" "$rdmasim" exec --help -- true
[ -e "$dir/other.sock" ] && bad "exec --help started a daemon"
grep -q "2 usage error" "$dir/out" || bad "exec --help does not list the exit statuses"
daemon_alive && echo "ok: the daemon still runs after every --help" || bad "the daemon died during --help"
expect_exit 0 "counters after the --help calls" "$rdmasim" counters --socket "$RDMASIM_SOCKET"

# --- usage errors exit 2 -------------------------------------------------------------------
expect_exit 2 "rdmasim with no command" "$rdmasim"
expect_exit 2 "an unknown command" "$rdmasim" frobnicate
expect_exit 2 "counters with an unknown option" "$rdmasim" counters --bogus
expect_exit 2 "shutdown with a missing value" "$rdmasim" shutdown --socket
expect_exit 2 "fabric with an unknown option" "$rdmasim" fabric --bogus
expect_exit 2 "exec without a program" "$rdmasim" exec --host client
expect_exit 2 "study without a file" "$rdmasim" study
expect_exit 2 "study with two files" "$rdmasim" study a.json b.json
daemon_alive || bad "a usage error stopped the daemon"

# --- a failure exits 1 -----------------------------------------------------------------------
expect_exit 1 "counters with no daemon at the socket" "$rdmasim" counters --socket "$dir/none.sock"
expect_exit 1 "shutdown with no daemon at the socket" "$rdmasim" shutdown --socket "$dir/none.sock"

# --- shutdown stops it ---------------------------------------------------------------------
if expect_exit 0 "shutdown" "$rdmasim" shutdown --socket "$RDMASIM_SOCKET"; then
  for _ in $(seq 100); do daemon_alive || break; sleep 0.05; done
  daemon_alive && bad "the daemon still runs 5 s after shutdown" || echo "ok: the daemon exited"
fi
exit $fail
