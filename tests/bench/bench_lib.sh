# Shared by the bench scripts (sourced): medians, and timing one command.
# The machines are shared and their speed drifts within a sitting, so the scripts run the
# commands they compare in alternation, round after round, and report both the ratio of
# the medians and the median of each round's own ratio (the latter cancels drift slower
# than a round).

# median: the median of the numbers on stdin (the lower middle one of an even count).
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# timed OUT_PREFIX OK_STATUS CMD...: runs CMD with its output in OUT_PREFIX.log and appends
# "wall_s peak_rss_kb" to OUT_PREFIX.times; fails unless CMD exits 0 or OK_STATUS (a study
# stopped by its time limit exits 1). The wall clock is bash's EPOCHREALTIME (microseconds;
# time(1)'s %e has 10 ms steps, a third of a k=4 run). Needs $bench_tmp, a scratch folder.
timed() {
  local out=$1 ok=$2 rc t0 t1; shift 2
  t0=$EPOCHREALTIME
  /usr/bin/time -o "$bench_tmp/time" -f "%M" "$@" > "$out.log" 2>&1; rc=$?
  t1=$EPOCHREALTIME
  [ $rc = 0 ] || [ $rc = "$ok" ] || { echo "bench: '$*' exited $rc" >&2; cat "$out.log" >&2; return 1; }
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}') $(tail -1 "$bench_tmp/time")" >> "$out.times"
}

# column N FILE: the Nth whitespace-separated column of FILE, one value per line.
column() { awk -v n="$1" '{print $n}' "$2"; }

# ratios A_FILE B_FILE: line by line, B's first column over A's (each round's own ratio).
ratios() { paste -d' ' "$1" "$2" | awk '{printf "%.4f\n", $(NF/2+1) / $1}'; }
