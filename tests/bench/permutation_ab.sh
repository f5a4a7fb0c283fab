#!/usr/bin/env bash
# Alternates two builds' `rdmasim study` on the 128-host (k=8) permutation, 5 runs each;
# prints each run's wall time and the medians.
# usage: permutation_ab.sh OLD_RDMASIM NEW_RDMASIM [STUDY.json]  (default: permutation_k8.json beside it)
set -u
old=$1 new=$2 study=${3:-$(dirname "$0")/permutation_k8.json}
for i in 1 2 3 4 5; do
  for b in old new; do
    exe=${!b}
    /usr/bin/time -o "${TMPDIR:-/tmp}/perm-time" -f "%e %M" "$exe" study "$study" --out /tmp/perm-$b >/dev/null 2>&1; t=$(cat "${TMPDIR:-/tmp}/perm-time")
    echo "$b $t"
  done
done | tee /tmp/perm_ab.txt
for b in old new; do
  echo "$b median wall s: $(awk -v b=$b '$1==b{print $2}' /tmp/perm_ab.txt | sort -n | sed -n 3p), median RSS KB: $(awk -v b=$b '$1==b{print $3}' /tmp/perm_ab.txt | sort -n | sed -n 3p)"
done
