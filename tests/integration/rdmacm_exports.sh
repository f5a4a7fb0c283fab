#!/usr/bin/env bash
# The drop-in librdmacm.so.1 exports exactly the functions and version nodes of Debian 12's
# (rdma-core 44), and its soname is librdmacm.so.1. usage: rdmacm_exports.sh OURS
set -u
ours=$1 theirs=/usr/lib/x86_64-linux-gnu/librdmacm.so.1
syms() { objdump -T "$1" | awk '$0 !~ /\*UND\*/ && ($3 == "DF" || $3 == "DO") {print $(NF-1), $NF}' | sort; }
if ! diff <(syms "$theirs") <(syms "$ours"); then echo "FAIL: exports differ (< Debian, > ours)"; exit 1; fi
soname=$(objdump -p "$ours" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = librdmacm.so.1 ] || { echo "FAIL: soname $soname"; exit 1; }
echo "ok: $(syms "$ours" | wc -l) symbols and nodes equal, soname $soname"
