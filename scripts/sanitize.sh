#!/usr/bin/env bash
# The drop-in libibverbs and librdmacm under AddressSanitizer and UndefinedBehaviorSanitizer:
# builds them (and the verbs and rdma_cm integration programs, so they carry the runtime) in
# build-asan with -fsanitize=address,undefined, then runs those programs through `rdmasim
# exec` of the ordinary build (its daemon is not instrumented) with RDMASIM_LIBDIR naming
# build-asan/lib/verbs and build-asan/lib/rdmacm. Debian's rdmacm-utils pairs (rping,
# ucmatose, udaddy, rdma_server/client, cmtime) run with the sanitizer runtimes preloaded
# (LD_PRELOAD: the tools themselves are not instrumented, the libraries they load are).
# Any sanitizer report fails the run (halt_on_error, and the log is grepped as well).
#
# With RDMASIM_SANITIZE_DAEMON=1 the daemon (the rdmasim binary, which serves every run
# below) is built in build-asan too and runs instrumented; reports of every process then
# go to files (log_path), which are checked after each run. Off by default: it builds
# the whole simulator a second time.
#
# usage: scripts/sanitize.sh            (after scripts/build.sh; build-asan made if missing)
# Not part of `meson test`: the second build costs what the first does (see README.md).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
asan=build-asan
[ -d "$asan" ] || meson setup "$asan" --buildtype=debugoptimized -Db_sanitize=address,undefined \
  -Db_lundef=false >/dev/null || exit 1
progs=(verify_abi verify_args verify_status verify_resize verify_dm verify_odp verify_xrc verify_xrc_shared verify_ops verify_mw rdmacm_cases)
targets=(lib/verbs/libibverbs.so.1.14.44 lib/rdmacm/librdmacm.so.1.3.44)
for p in "${progs[@]}"; do targets+=("tests/integration/$p"); done
daemon_too=${RDMASIM_SANITIZE_DAEMON:-0}
[ "$daemon_too" = 1 ] && targets+=(apps/rdmasim/rdmasim)
nice -n 5 ninja -C "$asan" "${targets[@]}" || exit 1
[ -x build/apps/rdmasim/rdmasim ] || { echo "build/ first (scripts/build.sh)"; exit 1; }
rdmasim=$root/build/apps/rdmasim/rdmasim
[ "$daemon_too" = 1 ] && rdmasim=$root/$asan/apps/rdmasim/rdmasim
export RDMASIM_LIBDIR=$root/$asan/lib/verbs:$root/$asan/lib/rdmacm
preload=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=0:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
reports=$(mktemp -d /tmp/rdmasim-sanitize-reports.XXXXXX)
if [ "$daemon_too" = 1 ]; then  # the daemon's stderr is not the tools' log: reports to files
  ASAN_OPTIONS+=:log_path=$reports/asan
  UBSAN_OPTIONS+=:log_path=$reports/ubsan
fi
log=$(mktemp /tmp/rdmasim-sanitize.XXXXXX)
fail=0
run() {  # name, command...
  local name=$1; shift
  if "$@" >"$log" 2>&1 && ! grep -Eq "ERROR: AddressSanitizer|runtime error:|UndefinedBehaviorSanitizer" "$log" &&
     [ -z "$(ls -A "$reports")" ]; then
    echo "ok: $name"
  else
    echo "FAIL: $name"; tail -40 "$log"
    for r in "$reports"/*; do [ -f "$r" ] && { echo "== $r"; head -60 "$r"; rm -f "$r"; }; done
    fail=1
  fi
}
port=19700
for fabric in roce ib; do
  cfg=default; gid=(-g 0)
  [ $fabric = ib ] && { cfg=$root/configs/ib.json; gid=(); }
  for p in verify_abi verify_args verify_status verify_resize verify_dm verify_odp verify_xrc verify_xrc_shared; do
    run "$p $fabric" tests/integration/check_tool.sh "$rdmasim" "$cfg" server -- \
      "$root/$asan/tests/integration/$p" -d mlx5_0 "${gid[@]}" -- "$p: 0 failures"
  done
  for p in verify_ops verify_mw; do
    port=$((port + 1))
    cmd=("$root/$asan/tests/integration/$p" -d mlx5_0 -g 0 -p $port)
    run "$p $fabric" tests/integration/run_pair.sh "$rdmasim" "$cfg" $port -- "${cmd[@]}" -- "${cmd[@]}"
  done
  # rdma_cm: the drop-in librdmacm (and libibverbs) under the sanitizers.
  run "rdmacm_cases $fabric" tests/integration/rdmacm_cases.sh "$rdmasim" \
    "$root/$asan/tests/integration/rdmacm_cases" "$cfg"
  for pair in "rping -s -v -C 3 -a 127.0.1.1|rping -c -v -C 3 -a 127.0.1.1" \
              "ucmatose|ucmatose -s 127.0.1.1" "udaddy|udaddy -s 127.0.1.1" \
              "rdma_server|rdma_client -s 127.0.1.1" "rdma_xserver|rdma_xclient -s 127.0.1.1"; do
    IFS='|' read -r srv cli <<<"$pair"
    run "${srv%% *} $fabric" tests/integration/rdmacm_pair.sh "$rdmasim" "$cfg" -- \
      env LD_PRELOAD="$preload" $srv -- env LD_PRELOAD="$preload" $cli
  done
  run "cmtime $fabric" env RDMACM_SERVER_STAYS=1 tests/integration/rdmacm_pair.sh "$rdmasim" "$cfg" -- \
    env LD_PRELOAD="$preload" cmtime -c 10 -- env LD_PRELOAD="$preload" cmtime -s 127.0.1.1 -c 10
done
rm -f "$log"; rm -rf "$reports"
[ $fail = 0 ] && echo "sanitize: zero reports" || echo "sanitize: FAILED"
exit $fail
