# Shell helpers for the integration tests; source it:  . "$(dirname "$0")/lib.sh"
#
# start_daemon RDMASIM DIR [FABRIC ARGS...]
#   Starts a private fabric daemon with its socket in DIR (RDMASIM_SOCKET is exported) and
#   its log in DIR/daemon.log; DAEMON_PID is its pid. Returns 1 (after printing the log)
#   when the socket does not appear within 5 s.
# stop_daemon
#   Stops it (SIGTERM) and reaps it.
# wait_listen PORT PID
#   Waits up to 10 s until something listens on TCP PORT (a verbs tool's out-of-band
#   port). A probe connection would be taken as the tool's peer, so this reads the socket
#   table instead. Returns 1 early when PID exits.
# wait_cm_listen RDMASIM PID [N]
#   Waits up to 10 s until the daemon holds N (default 1) listening rdma_cm ids (its
#   counters' cm_listeners): an rdma_cm server opens no TCP port to wait for. Returns 1
#   early when PID exits.
# pair_start RDMASIM CONFIG|default -- SERVER_CMD... -- CLIENT_CMD...
#   The start of a server/client pair test: sets the arrays `server` and `client`, makes
#   the test's directory `dir` (removed at exit with the daemon stopped), and starts a
#   private daemon on CONFIG (default: the shipped fabric). RDMASIM_PCAP_DIR set: every
#   port of the fabric is captured into that directory. Returns 1 when the daemon fails.
# pair_finish SERVER_STATUS CLIENT_STATUS
#   The end of a pair test: prints both commands with their statuses and logs
#   ($dir/server.log, $dir/client.log) and, when either is not 0, the daemon log's tail;
#   returns 0 only when both are 0.
# bad MESSAGE
#   Prints "FAIL: MESSAGE" and sets fail=1 (the script's exit status).
# expect_exit WANT NAME COMMAND...
#   Runs COMMAND with stdout in $dir/out and stderr in $dir/err. Prints "ok: NAME exits
#   WANT", or calls bad with the status and both outputs and returns 1.

start_daemon() {
  local rdmasim=$1 dir=$2
  shift 2
  export RDMASIM_SOCKET=$dir/fabric.sock
  "$rdmasim" fabric --socket "$RDMASIM_SOCKET" "$@" >"$dir/daemon.log" 2>&1 &
  DAEMON_PID=$!
  local _
  for _ in $(seq 100); do
    [ -S "$RDMASIM_SOCKET" ] && return 0
    kill -0 "$DAEMON_PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "daemon did not start"
  cat "$dir/daemon.log"
  return 1
}

stop_daemon() {
  [ -n "${DAEMON_PID:-}" ] || return 0
  kill "$DAEMON_PID" 2>/dev/null
  wait "$DAEMON_PID" 2>/dev/null
  DAEMON_PID=
}

wait_listen() {
  local _
  for _ in $(seq 200); do
    ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

wait_cm_listen() {
  local _ n
  for _ in $(seq 200); do
    n=$("$1" counters --socket "$RDMASIM_SOCKET" 2>/dev/null |
        sed -n 's/.*"cm_listeners": \([0-9]*\).*/\1/p' | head -1)
    [ "${n:-0}" -ge "${3:-1}" ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

pair_start() {
  local rdmasim=$1 config=$2
  shift 2
  [ "$1" = "--" ] && shift
  server=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do server+=("$1"); shift; done
  shift
  client=("$@")
  dir=$(mktemp -d /tmp/rdmasim-test.XXXXXX)
  local cfg=()
  [ "$config" != default ] && cfg=("$config")
  [ -n "${RDMASIM_PCAP_DIR:-}" ] && cfg=(--pcap "$RDMASIM_PCAP_DIR" "${cfg[@]}")
  trap 'stop_daemon; rm -rf "$dir"' EXIT
  start_daemon "$rdmasim" "$dir" "${cfg[@]}"
}

pair_finish() {
  echo "== server (exit $1): ${server[*]}"; cat "$dir/server.log"
  echo "== client (exit $2): ${client[*]}"; cat "$dir/client.log"
  [ "$1" = 0 ] && [ "$2" = 0 ] && return 0
  echo "== daemon log"; tail -50 "$dir/daemon.log"
  return 1
}

bad() { echo "FAIL: $*"; fail=1; }

expect_exit() {
  local want=$1 name=$2
  shift 2
  "$@" >"$dir/out" 2>"$dir/err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    bad "$name: exit $rc, expected $want"
    sed 's/^/  out: /' "$dir/out" | head -20
    sed 's/^/  err: /' "$dir/err" | head -20
    return 1
  fi
  echo "ok: $name exits $want"
}
