#!/bin/sh
# RDMASIM_BACKEND=hardware forwards to the real libibverbs (dlmopen'ed). With no RDMA
# device on this machine, ibv_devices must list nothing and say so exactly once.
# usage: check_hardware.sh <dir of libibverbs.so.1>
set -u
command -v ibv_devices >/dev/null || { echo "skip: ibverbs-utils missing"; exit 77; }
[ -e /usr/lib/x86_64-linux-gnu/libibverbs.so.1 ] || { echo "skip: no system libibverbs"; exit 77; }
if ls /sys/class/infiniband/* >/dev/null 2>&1; then echo "skip: this machine has RDMA devices"; exit 77; fi
out=$(RDMASIM_BACKEND=hardware LD_LIBRARY_PATH="$1" timeout 20 ibv_devices 2>&1)
rc=$?
status=0
[ $rc -eq 0 ] || { echo "FAIL: ibv_devices exited $rc"; status=1; }
n=$(echo "$out" | grep -c 'rdmasim: hardware backend: no RDMA devices found')
[ "$n" -eq 1 ] || { echo "FAIL: message printed $n times"; status=1; }
# Only the two header lines and the message: no device rows.
rows=$(echo "$out" | grep -vc -e 'device' -e '------' -e 'rdmasim:')
[ "$rows" -eq 0 ] || { echo "FAIL: device rows listed"; status=1; }
[ $status -eq 0 ] && echo "ok: hardware backend reports no devices"
echo "$out"
exit $status
