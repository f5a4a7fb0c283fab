#!/usr/bin/env bash
# Issue 13's scale benchmark: the seeded permutation of permutation_k16.json (100 Gb/s,
# 1 us links, MTU 4096, PFC, 2,000,000 B of 64 KiB WRITEs, window 4) on k-ary fat trees,
# in this sitting, the sizes in turn round after round. For each size: wall time and peak
# RSS (medians of RUNS), the set-up alone (the same study stopped after 1 us of simulated
# time), packets the HCAs sent, and wall time per packet with and without the set-up, each
# against the first size's: as a ratio of the medians, and as the median of each round's
# own ratio (which a drift of the machine's speed across the sitting does not skew).
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

bench_tmp=$dir
. "$here/bench_lib.sh"

printf '%-5s %-6s | %-9s %-10s %-9s %-10s %-9s %-12s %-12s %-12s' k hosts wall peakRSS setup packets us/pkt us/pkt-run vs_first by_round
[ -n "$htsim" ] && printf ' | %-9s %-10s %-10s %-9s %-9s' htsim_wall htsim_RSS htsim_pkts wall_ratio rss_ratio
echo
for k in $ks; do
  sed "s/\"k\": 16/\"k\": $k/" "$here/permutation_k16.json" > "$dir/k$k.json"
  sed 's/"time_limit_us": 100000/"time_limit_us": 1/' "$dir/k$k.json" > "$dir/k${k}_setup.json"
done
# Round after round, each size in turn (so a drift of the machine's speed falls on all
# sizes alike, and each round gives its own ratio to k=4).
for i in $(seq "$runs"); do
  for k in $ks; do
    hosts=$((k * k * k / 4))
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
done
base_all="" base_run="" k0=""
for k in $ks; do
  hosts=$((k * k * k / 4))
  wall=$(awk '{print $1}' "$dir/r$k.times" | median)
  rss=$(awk '{print $2}' "$dir/r$k.times" | median)
  setup=$(awk '{print $1}' "$dir/s$k.times" | median)
  packets=$(python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
print(sum(h['tx_packets'] for h in c['hcas'].values()))" "$dir/out$k/counters.json")
  per_all=$(awk -v w="$wall" -v p="$packets" 'BEGIN {printf "%.2f", w * 1e6 / p}')
  per_run=$(awk -v w="$wall" -v s="$setup" -v p="$packets" 'BEGIN {printf "%.2f", (w - s) * 1e6 / p}')
  [ -z "$base_all" ] && base_all=$per_all base_run=$per_run k0=$k p0=$packets
  vs=$(awk -v a="$per_all" -v b="$base_all" -v c="$per_run" -v d="$base_run" \
    'BEGIN {printf "%.2fx/%.2fx", a / b, (d > 0 ? c / d : 0)}')
  # Each round's own ratio to the first size, per packet (with and without set-up), median.
  paste -d' ' "$dir/r$k0.times" "$dir/s$k0.times" "$dir/r$k.times" "$dir/s$k.times" > "$dir/pair$k"
  by_round=$(awk -v p0="$p0" -v p="$packets" '{print ($5 / p) / ($1 / p0)}' "$dir/pair$k" | median)
  by_round_run=$(awk -v p0="$p0" -v p="$packets" '{print (($5 - $7) / p) / (($1 - $3) / p0)}' "$dir/pair$k" | median)
  printf '%-5s %-6s | %-9s %-10s %-9s %-10s %-9s %-12s %-12s %-12s' "$k" "$hosts" "${wall}s" "${rss}KB" "${setup}s" \
    "$packets" "$per_all" "$per_run" "$vs" "$(printf '%.2fx/%.2fx' "$by_round" "$by_round_run")"
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
echo "us/pkt: wall / HCA-sent packets; us/pkt-run: (wall - set-up) / packets; vs_first: both against the first size's (medians);"
echo "by_round: the median of each round's own ratio of the two to the first size's (runs alternate sizes round by round)"
echo "issue 13's targets: wall_ratio <= 0.5 at 128 and 1024 hosts, rss_ratio <= 1 at 1024, us/pkt within 1.5x from 16 to 1024 hosts"
