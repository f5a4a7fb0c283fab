#!/bin/sh
# The drop-in must export exactly rdma-core's symbols, each at the same version node and
# with the same default/compat (@@ vs @) binding, and define the same version nodes with the
# same parents. Compared against the system library at test time.
# usage: check_exports.sh <our libibverbs.so.1> [<system libibverbs.so.1>]
set -eu
ours=$1
sys=${2:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1}
[ -e "$sys" ] || { echo "skip: $sys missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
syms() {
  # "<version or (version) for hidden> <name>" for every defined global dynamic symbol
  objdump -T "$1" | awk 'NF >= 7 && $2 ~ /g/ && $4 != "*UND*" {print $(NF-1), $NF}' | sort
}
verdefs() {
  readelf -V "$1" | sed -n '/Version definition/,/Version needs/p' | grep -o 'Name: .*\|Parent 1: .*'
}
syms "$sys" > "$tmp/sys.syms"
syms "$ours" > "$tmp/ours.syms"
verdefs "$sys" > "$tmp/sys.vd"
verdefs "$ours" > "$tmp/ours.vd"
status=0
if ! diff -u "$tmp/sys.syms" "$tmp/ours.syms"; then echo "FAIL: dynamic symbols differ"; status=1; fi
if ! diff -u "$tmp/sys.vd" "$tmp/ours.vd"; then echo "FAIL: version definitions differ"; status=1; fi
soname=$(readelf -d "$ours" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libibverbs.so.1" ] || { echo "FAIL: soname is '$soname'"; status=1; }
# The 1.0-only calls the tools bind there.
for s in ibv_create_comp_channel ibv_destroy_comp_channel; do
  grep -qx "IBVERBS_1.0 $s" "$tmp/ours.syms" || { echo "FAIL: $s not at IBVERBS_1.0"; status=1; }
done
[ $status -eq 0 ] && echo "ok: $(wc -l < "$tmp/ours.syms") symbols match $sys"
exit $status
