#!/usr/bin/env bash
# The examples (examples/), same source, run two ways:
#   study:  the .so in a study's "programs" (virtual time, fibers, one process);
#   daemon: the executable as real processes through a private fabric daemon (`rdmasim exec`),
#           rdmasim/oob.h over TCP on 127.0.0.1 (examples/oob_tcp.c).
# usage: examples_check.sh RDMASIM EXAMPLES_DIR pingpong|rpc study|daemon OOB_PORT
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
if [ "$how" = study ]; then
  list=$(printf '"%s",' "${hosts[@]}"); list="[${list%,}]"
  argl=$(printf '"%s",' "${args[@]}"); argl="[${argl%,}]"
  fab=""; [ ${#cfg[@]} -gt 0 ] && fab="\"fabric\": \"${cfg[0]}\","
  echo "{\"name\": \"$name\", $fab \"time_limit_us\": 100000,
         \"programs\": [{\"path\": \"$ex/$name.so\", \"hosts\": $list, \"args\": $argl}]}" > "$dir/study.json"
  timeout 60 "$rdmasim" study "$dir/study.json" --out "$dir/out" > "$dir/stdout" 2>&1 || bad "study exited $?"
  cat "$dir/stdout" "$dir/out/programs.log"
  check_output "$dir/out/programs.log"
else
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
  [ $fail = 0 ] || tail -20 "$dir/daemon.log"
fi
[ $fail = 0 ] && echo "ok: $name as $how"
exit $fail
