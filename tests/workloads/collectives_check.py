#!/usr/bin/env python3
"""lib/workloads/collectives.c on 8 hosts of the 16-host RoCE star (configs/star_roce.json:
100 Gb/s links, MTU 4096), S = 8 MiB. usage: collectives_check.py RDMASIM COLLECTIVES_SO STAR WORKDIR

Every op: exit 0, nccl-tests' columns, #wrong 0 (every element of the result checked by the
program against the exact sum / the sender's data).

The ring's bound: each rank's link carries (N-1)/N x S per reduce-scatter or all-gather
phase, so busbw (nccl-tests: algbw x 2(N-1)/N for all-reduce, x (N-1)/N for the others) is
at most the link's payload rate, and for large S the ring reaches it. Payload rate of a
RoCEv2 link at MTU 4096: every 4096 B of payload travel with 20 B IPv4 + 8 B UDP + 12 B BTH +
4 B ICRC + 38 B of Ethernet framing on the wire (14 B MAC, 4 B FCS, 8 B preamble, 12 B IFG),
so 100 Gb/s x 4096 / 4178 / 8 = 12.255 GB/s (RETH's 16 B once per 256 KiB slice and the
immediate's 4 B aside: < 0.01 %). On this uncongested star (the ring uses each link once per
direction) all-reduce, all-gather and reduce-scatter must be within 5 % of it; all-to-all
(not a ring: 7:1 at every receiver) only at most it.
"""
import json, os, re, subprocess, sys

rdmasim, so, star, work = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3]), sys.argv[4]
os.makedirs(work, exist_ok=True)
payload_rate = 100e9 * 4096 / (4096 + 20 + 8 + 12 + 4 + 38) / 8 / 1e9   # GB/s
S = 8 * 1024 * 1024
hosts = [f"host{i}" for i in range(1, 9)]
failures = []
for op in ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]:
    study = {"name": op, "fabric": star, "time_limit_us": 100000,
             "programs": [{"path": so, "hosts": hosts, "args": [op, "-b", str(S), "-e", str(S)]}]}
    path = os.path.join(work, op + ".json")
    json.dump(study, open(path, "w"))
    p = subprocess.run([rdmasim, "study", path, "--out", os.path.join(work, op)], capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 0:
        failures.append(f"{op}: exit {p.returncode}: {p.stdout[-1500:]}{p.stderr[-1500:]}")
        continue
    log = open(os.path.join(work, op, "programs.log")).read()
    if "#       size        count   type  redop   root      time   algbw   busbw #wrong" not in log:
        failures.append(f"{op}: no nccl-tests header in {log}")
    rows = [l.split("] ", 1)[1].split() for l in log.splitlines() if re.search(r"\] +\d", l)]
    if len(rows) != 1 or int(rows[0][0]) != S:
        failures.append(f"{op}: expected one row of {S} B, got {rows}")
        continue
    size, count, typ, redop, root, time_us, algbw, busbw, wrong = rows[0]
    algbw, busbw, time_us = float(algbw), float(busbw), float(time_us)
    n = len(hosts)
    factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
    print(f"{op}: time {time_us} us, algbw {algbw} GB/s, busbw {busbw} GB/s "
          f"({busbw / payload_rate * 100:.1f} % of the {payload_rate:.3f} GB/s payload rate), #wrong {wrong}")
    if int(wrong) != 0:
        failures.append(f"{op}: {wrong} wrong elements")
    if abs(S / (time_us * 1000) - algbw) > 0.01 or abs(algbw * factor - busbw) > 0.02:
        failures.append(f"{op}: algbw/busbw inconsistent with size and time")
    if busbw > payload_rate * 1.001:
        failures.append(f"{op}: busbw {busbw} above the payload rate {payload_rate:.3f}")
    if op != "all_to_all" and busbw < 0.95 * payload_rate:
        failures.append(f"{op}: busbw {busbw} more than 5 % below the payload rate {payload_rate:.3f}")

# A bad argument is a usage error of the program (exit 2), reported with its host.
json.dump({"name": "bad", "fabric": star, "time_limit_us": 1000,
           "programs": [{"path": so, "hosts": hosts[:2], "args": ["all_reduce", "-b", "6"]}]},
          open(os.path.join(work, "bad.json"), "w"))
p = subprocess.run([rdmasim, "study", os.path.join(work, "bad.json"), "--out", os.path.join(work, "bad")],
                   capture_output=True, text=True, timeout=60)
if p.returncode != 1 or "exit 2" not in p.stdout + p.stderr:
    failures.append(f"bad size: exit {p.returncode}: {p.stdout[-800:]}")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("ok")
