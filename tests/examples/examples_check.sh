#!/usr/bin/env bash
# The examples (examples/), same source, run two ways:
#   study:  the .so in a study's "programs" (virtual time, fibers, one process);
#   daemon: the executable as real processes through a private fabric daemon (`rdmasim exec`),
#           rdmasim/oob.h over TCP on 127.0.0.1 (examples/oob_tcp.c).
# usage: examples_check.sh RDMASIM EXAMPLES_DIR pingpong|rpc study|daemon|agree OOB_PORT
#   agree: both, then the fabric's counters of the two runs compared port by port.
set -u
. "$(dirname "$0")/../integration/lib.sh"
rdmasim=$1 ex=$2 name=$3 how=$4 port=$5
dir=$(mktemp -d /tmp/rdmasim-examples.XXXXXX)
trap 'stop_daemon; rm -rf "$dir"' EXIT
fail=0
if [ "$name" = pingpong ]; then
  hosts=(server client); args=(50 64)

  cfg=()
else
  hosts=(host1 host2 host3 host4); args=(10)
  cat > "$dir/star4.json" <<'JSON'
{"name": "star4", "link_layer": "roce", "topology": {"type": "star", "hosts": 4},
 "link": {"rate_gbps": 100, "latency_ns": 400}}
JSON
  cfg=("$dir/star4.json")
fi
# What each run must print (pingpong.c and rpc.c say what they print).
check_output() {  # check_output FILE
  if [ "$name" = pingpong ]; then
    grep -Eq "server: 50 round trips of 64 B, 0 bad replies, mean round trip [0-9.]+ us" "$1" ||
      bad "no pingpong result line"
  else
    grep -q "server served 30 calls from 3 clients" "$1" || bad "server line"
    for c in 1 2 3; do
      grep -Eq "client $c: 10 of 10 answers right" "$1" || bad "client $c line"
    done
  fi
}
run_study() {
  list=$(printf '"%s",' "${hosts[@]}"); list="[${list%,}]"
  argl=$(printf '"%s",' "${args[@]}"); argl="[${argl%,}]"
  fab=""; [ ${#cfg[@]} -gt 0 ] && fab="\"fabric\": \"${cfg[0]}\","
  echo "{\"name\": \"$name\", $fab \"time_limit_us\": 100000,
         \"programs\": [{\"path\": \"$ex/$name.so\", \"hosts\": $list, \"args\": $argl}]}" > "$dir/study.json"
  timeout 60 "$rdmasim" study "$dir/study.json" --out "$dir/out" > "$dir/stdout" 2>&1 || bad "study exited $?"
  cat "$dir/stdout" "$dir/out/programs.log"
  check_output "$dir/out/programs.log"
}
run_daemon() {
  start_daemon "$rdmasim" "$dir" "${cfg[@]}" || exit 1
  pids=()
  for r in "${!hosts[@]}"; do
    RDMASIM_RANK=$r RDMASIM_SIZE=${#hosts[@]} RDMASIM_OOB_PORT=$port \
      timeout 60 "$rdmasim" exec --host "${hosts[$r]}" -- "$ex/$name" "${args[@]}" > "$dir/rank$r.log" 2>&1 &
    pids+=($!)
  done
  for r in "${!pids[@]}"; do
    wait "${pids[$r]}" || bad "rank $r (${hosts[$r]}) exited $?"
  done
  cat "$dir"/rank*.log > "$dir/all.log"
  cat "$dir/all.log"
  check_output "$dir/all.log"
  "$rdmasim" counters > "$dir/daemon_counters.json" || bad "rdmasim counters exited $?"
  [ $fail = 0 ] || tail -20 "$dir/daemon.log"
  stop_daemon
}
case $how in
  study) run_study ;;
  daemon) run_daemon ;;
  agree)
    # The same program, the same operations, so the same packets: every port's (NIC and
    # switch) transmit counters, per class, in the study's counters.json equal those the
    # daemon reports after the real processes ran, with no drops in either. A study ends at
    # its last program's exit, when the last ACKs may still be on the wire, so its receive
    # counters may only fall short; the daemon's, read later, account for every packet sent
    # (sum of rx = sum of tx). pingpong's counts also agree with its formula below.
    run_study
    run_daemon
    python3 - "$dir/out/counters.json" "$dir/daemon_counters.json" "$name" <<'PY' || bad "counters differ"
import json, sys
study, daemon = (json.load(open(f))["fabric"] for f in sys.argv[1:3])
ports = sorted(k for k, v in study.items() if isinstance(v, dict) and "tx_packets" in v)
if not ports or ports != sorted(k for k, v in daemon.items() if isinstance(v, dict) and "tx_packets" in v):
    sys.exit(f"ports differ: {ports} vs {sorted(daemon)}")
tx = ["tx_packets", "tx_bytes"]
bad = 0
for port in ports:
    s, d = study[port], daemon[port]
    st = [s[k] for k in tx] + [{c: [v[k] for k in tx] for c, v in s["classes"].items()}]
    dt = [d[k] for k in tx] + [{c: [v[k] for k in tx] for c, v in d["classes"].items()}]
    if st != dt or s["drops"] or d["drops"] or s["rx_packets"] > d["rx_packets"]:
        print(f"FAIL: {port}: study tx {st} rx {s['rx_packets']} drops {s['drops']}, "
              f"daemon tx {dt} rx {d['rx_packets']} drops {d['drops']}")
        bad = 1
    elif s["tx_packets"]:
        print(f"ok: {port}: {s['tx_packets']} packets / {s['tx_bytes']} B sent in both runs")
total = lambda c, k: sum(c[p][k] for p in ports)
for k in ("packets", "bytes"):
    if total(daemon, "rx_" + k) != total(daemon, "tx_" + k):
        print(f"FAIL: daemon: {total(daemon, 'rx_' + k)} {k} received of {total(daemon, 'tx_' + k)} sent")
        bad = 1
print(f"ok: daemon received every packet sent ({total(daemon, 'rx_packets')}); the study's end left "
      f"{total(study, 'tx_packets') - total(study, 'rx_packets')} on the wire")
if sys.argv[3] == "pingpong":
    # 50 round trips of 64 B over RC SEND: each host sends 50 SENDs (64 B payload + 82 B of
    # headers and framing: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 + preamble
    # and gap 20) and 50 ACKs (AETH 4 B + the same 82 B).
    want = {"tx_packets": 100, "tx_bytes": 50 * (64 + 82) + 50 * (4 + 82)}
    for port in ("server/mlx5_0", "client/mlx5_0"):
        got = {k: study[port][k] for k in want}
        if got != want:
            print(f"FAIL: {port}: {got}, expected {want}")
            bad = 1
sys.exit(bad)
PY
    ;;
  *) echo "usage: examples_check.sh RDMASIM EXAMPLES_DIR pingpong|rpc study|daemon|agree PORT"; exit 2 ;;
esac
[ $fail = 0 ] && echo "ok: $name as $how"
exit $fail
