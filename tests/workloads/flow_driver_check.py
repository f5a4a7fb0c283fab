#!/usr/bin/env python3
"""The built-in workloads run two ways: by the study runner's built-in flow driver and as
verbs programs (flow_driver "programs": one lib/workloads/flows.c instance per host, in
fibers). usage: flow_driver_check.py RDMASIM STAR_FABRIC WORKDIR

Each study runs once per driver; for each flow both must finish with every byte delivered
(lossless star with PFC: no retransmission, so bytes_received == bytes exactly).

Where the fabric is uncongested (a permutation on a star: each host sends to one host and
receives from one, and the switch is non-blocking; run twice as programs, identical) the FCTs may differ only by how late a
program sees its completions: it polls, and an empty poll costs fibers.empty_poll_ns (50 ns,
the default), so a completion is seen at most 50 ns after its CQE and the next message is
posted then; the built-in driver posts at the CQE. So per flow
    0 <= fct(programs) - fct(builtin) <= messages x 50 ns + 50 ns.
"""
import json, os, subprocess, sys

rdmasim, fabric, work = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
os.makedirs(work, exist_ok=True)
failures = []
POLL_NS = 50

def run(name, study, driver):
    s = dict(study, name=name, fabric=fabric, flow_driver=driver)
    path = os.path.join(work, f"{name}_{driver}.json")
    with open(path, "w") as f:
        json.dump(s, f)
    out = os.path.join(work, f"{name}_{driver}")
    p = subprocess.run([rdmasim, "study", path, "--out", out], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        failures.append(f"{name} ({driver}) exited {p.returncode}: {p.stdout[-2000:]}{p.stderr[-2000:]}")
        return None
    return json.load(open(os.path.join(out, "flows.json")))

studies = {
    # 16 hosts, 1 MB each in 64 KiB RC WRITEs, window 4 (uncongested)
    "permutation": {"time_limit_us": 10000, "generators": [
        {"type": "permutation", "op": "write", "bytes": 1000000, "message_bytes": 65536, "window": 4, "seed": 3}]},
    # 4 senders to host1 with SEND, plus READs all-to-all among 4 other hosts, plus UD SENDs
    "mixed": {"time_limit_us": 10000, "generators": [
        {"type": "incast", "dst": "host1", "senders": ["host2", "host3", "host4", "host5"],
         "op": "send", "bytes": 200000, "message_bytes": 8192, "window": 8},
        {"type": "all_to_all", "hosts": ["host6", "host7", "host8", "host9"], "op": "read",
         "bytes": 100000, "message_bytes": 16384, "window": 2, "start_jitter_ns": 5000}],
        "flows": [{"src": "host10", "dst": "host11", "op": "send", "qp": "ud", "messages": 20,
                   "message_bytes": 1024, "start_ns": 2000},
                  {"src": "host12", "dst": "host13", "op": "write", "qp": "uc", "bytes": 50000,
                   "message_bytes": 4096}]},
}

for name, study in studies.items():
    b = run(name, study, "builtin")
    p = run(name, study, "programs")
    if b is None or p is None:
        continue
    if len(b) != len(p):
        failures.append(f"{name}: {len(b)} flows built-in, {len(p)} as programs")
        continue
    worst = 0
    for fb, fp in zip(b, p):
        for f, d in ((fb, "builtin"), (fp, "programs")):
            if f["status"] != "finished" or f["bytes_received"] != f["bytes"]:
                failures.append(f"{name} ({d}) {f['name']}: {f['status']}, {f['bytes_received']} of {f['bytes']} B")
        if fb["status"] != "finished" or fp["status"] != "finished":
            continue
        delta = fp["fct_ns"] - fb["fct_ns"]
        worst = max(worst, abs(delta))
        if name == "permutation" and not (0 <= delta <= fb["messages"] * POLL_NS + POLL_NS):
            failures.append(f"{name} {fb['name']}: fct {fb['fct_ns']} ns built-in, {fp['fct_ns']} ns as "
                            f"program: {delta} ns apart, outside [0, {fb['messages']} x {POLL_NS} + {POLL_NS}]")
    if name == "permutation":   # a run in fibers is reproducible bit for bit
        again = run(name + "_again", study, "programs")
        if again != p:
            failures.append(f"{name}: two runs as programs gave different flows.json")
    print(f"{name}: {len(b)} flows, largest |fct(programs) - fct(builtin)| = {worst:.1f} ns")

# A driver that does not exist is a config error naming the key (exit 2, nothing run).
bad = os.path.join(work, "bad.json")
json.dump(dict(studies["permutation"], fabric=fabric, flow_driver="fibers"), open(bad, "w"))
p = subprocess.run([rdmasim, "study", bad, "--out", os.path.join(work, "bad")], capture_output=True, text=True, timeout=60)
if p.returncode != 2 or "study.flow_driver" not in p.stdout + p.stderr:
    failures.append(f"flow_driver \"fibers\": exit {p.returncode}, {p.stdout}{p.stderr}")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("ok")
