#!/usr/bin/env bash
# `rdmasim exec --fabric X` against a daemon already running on the socket: X must be the
# daemon's fabric, else exec fails (exit 1, PROGRAM not run) naming both fabrics.
#
# usage: exec_fabric.sh RDMASIM SOURCE_ROOT
set -u
. "$(dirname "$0")/lib.sh"
rdmasim=$1; root=$2
dir=$(mktemp -d /tmp/rdmasim-test.XXXXXX)
trap 'stop_daemon; rm -rf "$dir"' EXIT
fail=0

# A daemon on the embedded default fabric (RoCE, named "default"), as one the library
# auto-starts for a program run without --fabric.
start_daemon "$rdmasim" "$dir" || exit 1
if expect_exit 1 "exec --fabric configs/ib.json on the default daemon" \
    "$rdmasim" exec --fabric "$root/configs/ib.json" -- ibv_devinfo; then
  grep -q "runs fabric 'default'" "$dir/err" || bad "the error names the running fabric 'default': $(cat "$dir/err")"
  grep -q "fabric 'ib'" "$dir/err" || bad "the error names the asked fabric 'ib': $(cat "$dir/err")"
  [ -s "$dir/out" ] && bad "ibv_devinfo ran: $(head -3 "$dir/out")"
fi
# configs/default.json is the embedded default: the same fabric, so the program runs.
if expect_exit 0 "exec --fabric configs/default.json on the default daemon" \
    "$rdmasim" exec --fabric "$root/configs/default.json" -- ibv_devinfo; then
  grep -q "link_layer:.*Ethernet" "$dir/out" || bad "the program sees RoCE: $(cat "$dir/out")"
fi
expect_exit 2 "exec --fabric of an unreadable config" "$rdmasim" exec --fabric "$dir/none.json" -- ibv_devinfo
stop_daemon

# A daemon on configs/ib.json: --fabric configs/ib.json runs on it and sees InfiniBand;
# the default config is refused.
start_daemon "$rdmasim" "$dir" "$root/configs/ib.json" || exit 1
if expect_exit 0 "exec --fabric configs/ib.json on the ib daemon" \
    "$rdmasim" exec --fabric "$root/configs/ib.json" -- ibv_devinfo; then
  grep -q "link_layer:.*InfiniBand" "$dir/out" || bad "the program sees InfiniBand: $(cat "$dir/out")"
fi
if expect_exit 1 "exec --fabric configs/default.json on the ib daemon" \
    "$rdmasim" exec --fabric "$root/configs/default.json" -- ibv_devinfo; then
  grep -q "runs fabric 'ib'" "$dir/err" && grep -q "fabric 'default'" "$dir/err" ||
    bad "the error names both fabrics: $(cat "$dir/err")"
fi
exit $fail
