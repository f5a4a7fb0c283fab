#!/usr/bin/env bash
# Alternates two builds' engine and fabric micro-benchmarks, 5 rounds (each benchmark takes
# its own median of 5 inside a round); prints every round and the medians of the rounds.
# usage: micro_ab.sh OLD_BUILD_DIR NEW_BUILD_DIR   (meson build directories)
# Figures: engine M events/s of thread CPU at 16, 1024 and 65536 pending events (CPU time,
# not wall, so that other processes on a shared machine count less); fabric events/s.
set -u
old=$1 new=$2
out=${TMPDIR:-/tmp}/micro_ab.txt
for i in 1 2 3 4 5; do
  for b in old new; do
    dir=${!b}
    "$dir/tests/bench/engine_bench" 5000000 | awk -v b=$b '{print b, "engine_" $2, $5}'
    "$dir/tests/bench/fabric_bench" | awk -v b=$b '/^events\/s/{print b, "fabric_events_per_s", $NF}'
  done
done | tee "$out"
for m in $(awk '{print $2}' "$out" | sort -u); do
  o=$(awk -v m=$m '$1=="old" && $2==m{print $3}' "$out" | sort -g | sed -n 3p)
  n=$(awk -v m=$m '$1=="new" && $2==m{print $3}' "$out" | sort -g | sed -n 3p)
  echo "$m median: old $o new $n ratio new/old $(awk -v o="$o" -v n="$n" 'BEGIN{printf "%.3f", n/o}')"
done
