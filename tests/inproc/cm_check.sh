#!/bin/bash
# An rdma_cm program (programs/cm_pingpong.c) in a study: the drop-in librdmacm in fibers,
# in virtual time. usage: cm_check.sh RDMASIM CM_SO FABRIC_CONFIG WORKDIR
# Three instances on the config's two hosts: "server" listens, "client" connects with
# private data and ping-pongs 10 x 64 B; a third instance connects to a port nobody listens
# on and must see REJECTED (status 8 on InfiniBand and RoCE, -111 on iWARP). Checks: exit
# 0, every check "ok" (the count per role is in cm_pingpong.c's checks, listed below), the
# connection took the fabric's time, and two runs byte-identical.
set -u
rdmasim=$1 so=$2 fabric=$3 work=$4
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
noone_args='"noone", "127.0.1.1", "9999"'
grep -q '"link_layer": *"iwarp"' "$fabric" && noone_args="$noone_args, \"iwarp\""
progs='{"path": "'$so'", "hosts": ["server"], "args": ["server", "7471", "10"]},
       {"path": "'$so'", "hosts": ["client"], "args": ["client", "127.0.1.1", "7471", "10"]}'
progs="$progs, {\"path\": \"$so\", \"hosts\": [\"client\"], \"args\": [$noone_args]}"
n=3
cat > "$work/study.json" <<JSON
{"name": "cm", "fabric": "$fabric", "time_limit_us": 100000, "programs": [$progs]}
JSON
for r in 1 2; do
  timeout 120 "$rdmasim" study "$work/study.json" --out "$work/out$r" > "$work/out$r.stdout" 2>&1
  status=$?
  [ $status -eq 0 ] || { cat "$work/out$r.stdout" "$work/out$r/programs.log"; fail "run $r exited $status"; }
done
log=$work/out1/programs.log
cat "$log"
! grep -q FAIL "$log" || fail "a check failed"
# ok lines (cm_pingpong.c): server 10 (channel, bind, listen, CONNECT_REQUEST, private data,
# post_recv, accept, ESTABLISHED, ping bytes, DISCONNECTED), client 8 (ADDR_RESOLVED,
# ROUTE_RESOLVED, post_recv, connect, ESTABLISHED, private data, pong bytes, disconnect),
# noone 5 (ADDR_RESOLVED, ROUTE_RESOLVED, connect, REJECTED, its status).
want=23
got=$(grep -c '\] ok ' "$log")
[ "$got" -eq "$want" ] || fail "$got ok checks, expected $want"
[ "$(grep -c '\] 0 failures$' "$log")" -eq "$n" ] || fail "not every instance reported 0 failures"
grep -q "programs: $n instances, $n returned 0, 0 failed" "$work/out1.stdout" || fail "summary"
# The REQ and the REP cross the fabric: the client's ESTABLISHED comes at least two one-way
# trips after its connect (each one-way: two links' latency plus the switch's forwarding).
lat=$(python3 -c "import json,sys; f=json.load(open(sys.argv[1])); print(max(l.get('latency_ns',0) for l in f['links']) * 2 + max([s.get('forwarding_latency_ns',0) for s in f.get('switches',[])] or [0]))" "$fabric")
t_conn=$(grep -m1 '\[.* client\] ok connect at' "$log" | sed 's/.* at \([0-9]*\) ns/\1/')
t_est=$(grep -m1 '\[.* client\] ok RDMA_CM_EVENT_ESTABLISHED at' "$log" | sed 's/.* at \([0-9]*\) ns/\1/')
[ -n "$t_conn" ] && [ -n "$t_est" ] || fail "no connect/ESTABLISHED times"
# (On iWARP: SYN, SYN-ACK, MPA Request and Reply, four one-way trips, so the bound holds.)
[ $((t_est - t_conn)) -ge $((2 * lat)) ] || fail "ESTABLISHED $((t_est - t_conn)) ns after connect, below 2 x one-way $lat ns"
for f in programs.log programs.json counters.json; do
  cmp -s "$work/out1/$f" "$work/out2/$f" || fail "$f differs between two runs"
done
echo "ok: $got checks, connect to ESTABLISHED $((t_est - t_conn)) ns (one-way $lat ns), two runs identical"
