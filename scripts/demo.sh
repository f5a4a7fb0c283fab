#!/usr/bin/env bash
# Installs what is missing, builds only what the demo needs (the rdmasim command and the
# drop-in libibverbs.so.1, not the test suite), runs ib_write_bw between the simulated
# hosts "server" and "client" of the embedded default fabric (the daemon starts by itself),
# and points to the lessons.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=debugoptimized
ninja -C build apps/rdmasim/rdmasim lib/verbs/libibverbs.so.1.14.44
rdmasim=build/apps/rdmasim/rdmasim
export RDMASIM_SOCKET=${RDMASIM_SOCKET:-/tmp/rdmasim-demo-$(id -u)/fabric.sock}
"$rdmasim" exec --host server -- ib_write_bw -F -d mlx5_0 -x 0 -p 18515 >/dev/null &
server=$!
sleep 1
"$rdmasim" exec --host client -- ib_write_bw -F -d mlx5_0 -x 0 -p 18515 127.0.1.1
wait "$server"
"$rdmasim" shutdown >/dev/null 2>&1 || true
echo
echo "That was ib_write_bw on a simulated RoCEv2 fabric. To see what happened inside, and why"
echo "RDMA is fast, take the lessons (each runs in seconds and writes a page to open):"
echo "  $rdmasim learn hello      # start here: what happened behind one RDMA READ, step by step"
echo "  $rdmasim learn            # the list of lessons, in order"
echo "  $rdmasim learn copies     # zero-copy, kernel bypass, CPU offload"
