#!/bin/sh
# Debian's verbs tools (BIND_NOW, and the real libmlx5/libefa/librdmacm they pull in) must
# resolve every symbol against our library. usage: check_binaries.sh <dir of libibverbs.so.1>
set -u
dir=$1
status=0
checked=0
for b in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong \
         ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat ib_atomic_bw ib_atomic_lat; do
  p=$(command -v "$b") || continue
  checked=$((checked + 1))
  out=$(LD_LIBRARY_PATH="$dir" LD_BIND_NOW=1 ldd -r "$p" 2>&1)
  echo "$out" | grep -q "libibverbs.so.1 => $dir/libibverbs.so.1" || { echo "FAIL: $b does not load $dir"; status=1; }
  if echo "$out" | grep -E 'undefined symbol|not found|version .* not found'; then
    echo "FAIL: $b has unresolved symbols"; status=1
  fi
done
[ $checked -gt 0 ] || { echo "skip: no verbs tools installed"; exit 77; }
[ $status -eq 0 ] && echo "ok: $checked binaries resolve"
exit $status
