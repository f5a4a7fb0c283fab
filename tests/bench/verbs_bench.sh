#!/usr/bin/env bash
# Through the daemon on the default fabric: ib_write_bw -s 65536 and ib_write_lat -s 2,
# three runs each, medians; beside them the machine's memcpy bandwidth (the ceiling).
# usage: verbs_bench.sh BUILD_DIR
set -u
b=$1
dir=$(mktemp -d /tmp/rdmasim-bench.XXXXXX)
export LD_LIBRARY_PATH=$b/lib/verbs RDMASIM_DAEMON=$b/apps/rdmasim/rdmasim RDMASIM_SOCKET=$dir/fabric.sock
trap '"$RDMASIM_DAEMON" shutdown --socket "$RDMASIM_SOCKET" >/dev/null 2>&1; rm -rf "$dir"' EXIT
port=19700
pair() {  # pair TOOL ARGS... : prints the client's result line
  port=$((port + 1))
  RDMASIM_HOST=server timeout 120 "$@" -F -x 0 -p $port >"$dir/s.log" 2>&1 &
  local s=$!
  sleep 1
  RDMASIM_HOST=client timeout 120 "$@" -F -x 0 -p $port 127.0.0.1 >"$dir/c.log" 2>&1
  wait $s
  grep -E '^ +[0-9]+ +[0-9]+ ' "$dir/c.log" | tail -1
}
median() { sort -n | sed -n 2p; }
bw=$(for i in 1 2 3; do pair ib_write_bw -s 65536 --report_gbits | awk '{print $4}'; done | median)
lat=$(for i in 1 2 3; do pair ib_write_lat -s 2 | awk '{print $5}'; done | median)
echo "ib_write_bw -s 65536: BW average $bw Gb/s (median of 3)"
echo "ib_write_lat -s 2: t_typical $lat us (median of 3)"
"$b/tests/bench/memcpy_bench" 65536
