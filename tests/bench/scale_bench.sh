#!/usr/bin/env bash
# Issue 13's scale benchmark: the seeded permutation of permutation_k16.json (100 Gb/s,
# 1 us links, MTU 4096, PFC, 2,000,000 B of 64 KiB WRITEs, window 4) on k-ary fat trees,
# one run after another in this sitting. For each size: wall time and peak RSS (medians of
# RUNS), the set-up alone (the same study stopped after 1 us of simulated time), packets
# the HCAs sent, and wall time per packet with and without the set-up, each against k=4's.
#
# With a path to htsim's RoCE binary (csg-htsim's sim/datacenter/htsim_roce, built with its
# fat tree), the same source->destination pairs are written as an htsim connection matrix
# and htsim runs beside rdmasim at each size: lossless input queues, ECMP, the same link
# speed, hop latency, MTU and PFC thresholds (in packets: 128 KiB / 256 KiB of 4096 B).
#
# usage: scale_bench.sh RDMASIM [HTSIM_ROCE]   (or HTSIM_ROCE=path in the environment)
#   env: KS="4 8 16" (sizes; add 32 for 8192 hosts, ~2-3 min and ~0.6 GB), RUNS=3
set -u
exe=$1 htsim=${2:-${HTSIM_ROCE:-}}
ks=${KS:-4 8 16} runs=${RUNS:-3}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/rdmasim-scale.XXXXXX)
trap 'rm -rf "$dir"' EXIT
if [ -n "$htsim" ] && [ ! -x "$htsim" ]; then echo "scale_bench: $htsim is not an executable" >&2; exit 2; fi

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
# timed OUT_PREFIX OK_STATUS CMD...: runs CMD, appends "wall_s rss_kb" to OUT_PREFIX.times;
# fails unless CMD exits 0 or OK_STATUS (a study stopped by its time limit exits 1)
timed() {
  local out=$1 ok=$2 rc t0 t1; shift 2
  t0=$EPOCHREALTIME  # microsecond resolution (time(1)'s %e has 10 ms): k=4 runs take ~20 ms
  /usr/bin/time -o "$dir/t" -f "%M" "$@" > "$out.log" 2>&1; rc=$?
  t1=$EPOCHREALTIME
  [ $rc = 0 ] || [ $rc = "$ok" ] || { echo "scale_bench: '$*' exited $rc" >&2; cat "$out.log" >&2; return 1; }
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}') $(tail -1 "$dir/t")" >> "$out.times"
}

printf '%-5s %-6s | %-9s %-10s %-9s %-10s %-9s %-12s %-8s' k hosts wall peakRSS setup packets us/pkt us/pkt-run vs_k4
[ -n "$htsim" ] && printf ' | %-9s %-10s %-10s %-9s %-9s' htsim_wall htsim_RSS htsim_pkts wall_ratio rss_ratio
echo
base_all="" base_run=""
for k in $ks; do
  hosts=$((k * k * k / 4))
  sed "s/\"k\": 16/\"k\": $k/" "$here/permutation_k16.json" > "$dir/k$k.json"
  sed 's/"time_limit_us": 100000/"time_limit_us": 1/' "$dir/k$k.json" > "$dir/k${k}_setup.json"
  for i in $(seq "$runs"); do
    timed "$dir/r$k" 0 "$exe" study "$dir/k$k.json" --out "$dir/out$k" --quiet || exit 1
    timed "$dir/s$k" 1 "$exe" study "$dir/k${k}_setup.json" --out "$dir/setup$k" --quiet || exit 1
    if [ -n "$htsim" ]; then
      if [ "$i" = 1 ]; then
        python3 - "$dir/out$k/flows.json" "$hosts" > "$dir/k$k.cm" <<'PY'
import json, sys
flows = json.load(open(sys.argv[1]))
print(f"Nodes {sys.argv[2]}")
print(f"Connections {len(flows)}")
for f in flows:  # rdmasim's host1..hostN are htsim's nodes 0..N-1, both pod by pod
    print(f"{int(f['src'][4:]) - 1}->{int(f['dst'][4:]) - 1} start 0 size {f['bytes']}")
PY
      fi
      timed "$dir/h$k" 0 "$htsim" -nodes "$hosts" -tm "$dir/k$k.cm" -strat ecmp_host -paths 1 \
        -linkspeed 100000 -mtu 4096 -hop_latency 1 -end 100000 -q 1000 \
        -pfc_thresholds 32 64 -queue_type lossless_input || exit 1
    fi
  done
  wall=$(awk '{print $1}' "$dir/r$k.times" | median)
  rss=$(awk '{print $2}' "$dir/r$k.times" | median)
  setup=$(awk '{print $1}' "$dir/s$k.times" | median)
  packets=$(python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
print(sum(h['tx_packets'] for h in c['hcas'].values()))" "$dir/out$k/counters.json")
  per_all=$(awk -v w="$wall" -v p="$packets" 'BEGIN {printf "%.2f", w * 1e6 / p}')
  per_run=$(awk -v w="$wall" -v s="$setup" -v p="$packets" 'BEGIN {printf "%.2f", (w - s) * 1e6 / p}')
  [ -z "$base_all" ] && base_all=$per_all base_run=$per_run
  vs=$(awk -v a="$per_all" -v b="$base_all" -v c="$per_run" -v d="$base_run" \
    'BEGIN {printf "%.1fx/%.1fx", a / b, (d > 0 ? c / d : 0)}')
  printf '%-5s %-6s | %-9s %-10s %-9s %-10s %-9s %-12s %-8s' "$k" "$hosts" "${wall}s" "${rss}KB" "${setup}s" \
    "$packets" "$per_all" "$per_run" "$vs"
  if [ -n "$htsim" ]; then
    hwall=$(awk '{print $1}' "$dir/h$k.times" | median)
    hrss=$(awk '{print $2}' "$dir/h$k.times" | median)
    hpk=$(grep -o 'New: [0-9]*' "$dir/h$k.log" | awk '{print $2}')
    printf ' | %-9s %-10s %-10s %-9s %-9s' "${hwall}s" "${hrss}KB" "${hpk:-?}" \
      "$(awk -v a="$wall" -v b="$hwall" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')" \
      "$(awk -v a="$rss" -v b="$hrss" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')"
  fi
  echo
done
echo "us/pkt: wall / HCA-sent packets; us/pkt-run: (wall - set-up) / packets; vs_k4: both against k=4"
echo "issue 13's targets: wall_ratio <= 0.5 at 128 and 1024 hosts, rss_ratio <= 1 at 1024, us/pkt within 1.5x from 16 to 1024 hosts"
