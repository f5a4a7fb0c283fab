#!/usr/bin/env bash
# Runs one verbs tool on a private simulated fabric and checks its output.
#
# usage: check_tool.sh RDMASIM CONFIG|default HOST -- COMMAND... -- PATTERN...
# Exits 0 when COMMAND exits 0 and every extended regular expression PATTERN matches a
# line of its output.
set -u
. "$(dirname "$0")/lib.sh"
rdmasim=$1; config=$2; host=$3; shift 3
[ "$1" = "--" ] && shift
cmd=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmd+=("$1"); shift; done
shift
dir=$(mktemp -d /tmp/rdmasim-test.XXXXXX)
cfg=(); [ "$config" != default ] && cfg=("$config")
trap 'stop_daemon; rm -rf "$dir"' EXIT
start_daemon "$rdmasim" "$dir" "${cfg[@]}" || exit 1
timeout 60 "$rdmasim" exec --host "$host" -- "${cmd[@]}" >"$dir/out.log" 2>&1
rc=$?
cat "$dir/out.log"
[ "$rc" = 0 ] || { echo "FAIL: ${cmd[*]} exited $rc"; tail -30 "$dir/daemon.log"; exit 1; }
fail=0
for p in "$@"; do
  if grep -Eq -- "$p" "$dir/out.log"; then echo "ok: /$p/"; else echo "FAIL: no line matches /$p/"; fail=1; fi
done
exit $fail
