#!/usr/bin/env bash
# The 128-host permutation (permutation_k8.json: k=8 fat tree, 2,000,000 B of 65536 B WRITEs,
# window 4) driven two ways, alternated, RUNS runs each (default 7): the study runner's
# built-in flows, and 128 verbs-program fibers (programs/perm_write.c) doing the same WRITEs
# between the same pairs (read from the flows run's flows.json). Prints each run's wall time
# (microsecond clock: a run takes ~0.3 s, where time(1)'s 10 ms steps are 3 %), peak RSS and
# simulated end, the medians, and programs / flows: of the medians, and the median of each
# round's own ratio (issue 12 asks <= 1.3).
# usage: permutation_programs.sh RDMASIM PERM_WRITE_SO   (env: RUNS=7)
set -u
exe=$1 so=$2
here=$(dirname "$0")
dir=$(mktemp -d /tmp/rdmasim-permprog.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$exe" study "$here/permutation_k8.json" --out "$dir/flows" >/dev/null || exit 1
python3 - "$here/permutation_k8.json" "$dir/flows/flows.json" "$so" > "$dir/programs.json" <<'PY'
import json, sys
study = json.load(open(sys.argv[1]))
flows = json.load(open(sys.argv[2]))
hosts = sorted({f["src"] for f in flows}, key=lambda h: int(h[4:]))
rank = {h: i for i, h in enumerate(hosts)}
dst = {f["src"]: f["dst"] for f in flows}
src = {f["dst"]: f["src"] for f in flows}
g = study["generators"][0]
study["name"] = "permutation_k8_programs"
del study["generators"]
study["programs"] = [{"path": sys.argv[3], "hosts": [h],
                      "args": [str(rank[dst[h]]), str(rank[src[h]]), str(g["bytes"]),
                               str(g["message_bytes"]), str(g["window"])]} for h in hosts]
json.dump(study, sys.stdout, indent=1)
PY
runs=${RUNS:-7}
bench_tmp=$dir
. "$here/bench_lib.sh"
for i in $(seq "$runs"); do
  for b in flows programs; do
    s=$here/permutation_k8.json
    [ $b = programs ] && s=$dir/programs.json
    timed "$dir/$b" 0 "$exe" study "$s" --out "$dir/$b" || exit 1
    echo "$b $(tail -1 "$dir/$b.times") $(grep -o 'simulated [0-9.]* us' "$dir/$b.log")"
  done
done
for b in flows programs; do
  eval "${b}_wall=\$(column 1 "$dir/$b.times" | median)"
  echo "$b median wall s: $(column 1 "$dir/$b.times" | median), median RSS KB: $(column 2 "$dir/$b.times" | median)"
done
awk -v f="$flows_wall" -v p="$programs_wall" 'BEGIN {printf "programs / flows (medians): %.2fx\n", p / f}'
printf "programs / flows (median of the %s rounds' own ratios): %.2fx\n" "$runs" "$(ratios "$dir/flows.times" "$dir/programs.times" | median)"
