#!/usr/bin/env bash
# The drop-in libibverbs under AddressSanitizer and UndefinedBehaviorSanitizer: builds it
# (and the verbs integration programs, so they carry the runtime) in build-asan with
# -fsanitize=address,undefined, then runs those programs through `rdmasim exec` of the
# ordinary build (its daemon is not instrumented) with RDMASIM_LIBDIR=build-asan/lib/verbs.
# Any sanitizer report fails the run (halt_on_error, and the log is grepped as well).
#
# usage: scripts/sanitize.sh            (after scripts/build.sh; build-asan made if missing)
# Not part of `meson test`: the second build costs what the first does (see README.md).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
asan=build-asan
[ -d "$asan" ] || meson setup "$asan" --buildtype=debugoptimized -Db_sanitize=address,undefined \
  -Db_lundef=false >/dev/null || exit 1
progs=(verify_abi verify_args verify_status verify_ops verify_mw)
targets=(lib/verbs/libibverbs.so.1.14.44)
for p in "${progs[@]}"; do targets+=("tests/integration/$p"); done
nice -n 5 ninja -C "$asan" "${targets[@]}" || exit 1
[ -x build/apps/rdmasim/rdmasim ] || { echo "build/ first (scripts/build.sh)"; exit 1; }
rdmasim=$root/build/apps/rdmasim/rdmasim
export RDMASIM_LIBDIR=$root/$asan/lib/verbs
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=0:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
log=$(mktemp /tmp/rdmasim-sanitize.XXXXXX)
fail=0
run() {  # name, command...
  local name=$1; shift
  if "$@" >"$log" 2>&1 && ! grep -Eq "ERROR: AddressSanitizer|runtime error:|UndefinedBehaviorSanitizer" "$log"; then
    echo "ok: $name"
  else
    echo "FAIL: $name"; tail -40 "$log"; fail=1
  fi
}
port=19700
for fabric in roce ib; do
  cfg=default; gid=(-g 0)
  [ $fabric = ib ] && { cfg=$root/configs/ib.json; gid=(); }
  for p in verify_abi verify_args verify_status; do
    run "$p $fabric" tests/integration/check_tool.sh "$rdmasim" "$cfg" server -- \
      "$root/$asan/tests/integration/$p" -d mlx5_0 "${gid[@]}" -- "$p: 0 failures"
  done
  for p in verify_ops verify_mw; do
    port=$((port + 1))
    cmd=("$root/$asan/tests/integration/$p" -d mlx5_0 -g 0 -p $port)
    run "$p $fabric" tests/integration/run_pair.sh "$rdmasim" "$cfg" $port -- "${cmd[@]}" -- "${cmd[@]}"
  done
done
rm -f "$log"
[ $fail = 0 ] && echo "sanitize: zero reports" || echo "sanitize: FAILED"
exit $fail
