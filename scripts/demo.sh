#!/usr/bin/env bash
# Installs what is missing, builds, and runs ib_write_bw between the simulated hosts
# "server" and "client" of the embedded default fabric (the daemon starts by itself).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
rdmasim=build/apps/rdmasim/rdmasim
export RDMASIM_SOCKET=${RDMASIM_SOCKET:-/tmp/rdmasim-demo-$(id -u)/fabric.sock}
"$rdmasim" exec --host server -- ib_write_bw -F -d mlx5_0 -x 0 -p 18515 >/dev/null &
server=$!
sleep 1
"$rdmasim" exec --host client -- ib_write_bw -F -d mlx5_0 -x 0 -p 18515 127.0.1.1
wait "$server"
echo
echo "Counters of the simulated fabric after the run:"
"$rdmasim" counters | head -40
"$rdmasim" shutdown >/dev/null 2>&1 || true
