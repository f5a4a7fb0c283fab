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
bad() { echo "FAIL: $*"; fail=1; }

# expect_rc WANT NAME ARGS...: runs rdmasim ARGS, stdout in $dir/out, stderr in $dir/err.
expect_rc() {
  local want=$1 name=$2; shift 2
  "$rdmasim" "$@" >"$dir/out" 2>"$dir/err"
  local rc=$?
  if [ "$rc" = "$want" ]; then echo "ok: $name exits $want"; return 0; fi
  bad "$name: exit $rc, expected $want"; sed 's/^/  err: /' "$dir/err" | head -5
  return 1
}
daemon_alive() { kill -0 "$DAEMON_PID" 2>/dev/null; }

start_daemon "$rdmasim" "$dir" "$src/configs/fat_tree_roce.json" || exit 1

# --- counters: complete and valid at k=4 ----------------------------------------------------
# 16 KiB is what one reply message could carry (ipc::kMaxMsgBytes = 16384); the k=4
# fat tree's counters (16 NICs, 20 switches, 96 ports) are several times that.
if expect_rc 0 "counters on the k=4 fat tree" counters --socket "$RDMASIM_SOCKET"; then
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
  expect_rc 0 "rdmasim $cmd --help" $cmd --help || continue
  grep -q "^Usage: rdmasim" "$dir/out" || bad "rdmasim $cmd --help: no usage line on stdout"
done
expect_rc 0 "rdmasim shutdown --help --socket" shutdown --help --socket "$RDMASIM_SOCKET"
RDMASIM_SOCKET=$dir/other.sock expect_rc 0 "rdmasim exec --help -- true" exec --help -- true
[ -e "$dir/other.sock" ] && bad "exec --help started a daemon"
grep -q "2 usage error" "$dir/out" || bad "exec --help does not list the exit statuses"
daemon_alive && echo "ok: the daemon still runs after every --help" || bad "the daemon died during --help"
expect_rc 0 "counters after the --help calls" counters --socket "$RDMASIM_SOCKET"

# --- usage errors exit 2 -------------------------------------------------------------------
expect_rc 2 "rdmasim with no command" 
expect_rc 2 "an unknown command" frobnicate
expect_rc 2 "counters with an unknown option" counters --bogus
expect_rc 2 "shutdown with a missing value" shutdown --socket
expect_rc 2 "fabric with an unknown option" fabric --bogus
expect_rc 2 "exec without a program" exec --host client
expect_rc 2 "study without a file" study
expect_rc 2 "study with two files" study a.json b.json
daemon_alive || bad "a usage error stopped the daemon"

# --- a failure exits 1 -----------------------------------------------------------------------
expect_rc 1 "counters with no daemon at the socket" counters --socket "$dir/none.sock"
expect_rc 1 "shutdown with no daemon at the socket" shutdown --socket "$dir/none.sock"

# --- shutdown stops it ---------------------------------------------------------------------
if expect_rc 0 "shutdown" shutdown --socket "$RDMASIM_SOCKET"; then
  for _ in $(seq 100); do daemon_alive || break; sleep 0.05; done
  daemon_alive && bad "the daemon still runs 5 s after shutdown" || echo "ok: the daemon exited"
fi
exit $fail
