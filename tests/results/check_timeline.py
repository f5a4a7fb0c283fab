#!/usr/bin/env python3
"""`rdmasim study --timeline FILE` writes the run's event trace, one JSON object per line.

Usage: check_timeline.py RDMASIM DEFAULT_FABRIC WORKDIR

The study: the default two-host fabric (configs/default.json: RoCEv2, MTU 4096, client and
server through sw0) with the hosts' PCIe model on (the default; "nic": {"pcie": true} says so), one RC WRITE flow
of one 16384 B message from client to server.
Checked:
- every line is a JSON object with t_ps, end_ps, component, event, qp, psn, bytes, payload; times
  never go back (events are written as they happen, engine time only moves forward);
- the WRITE's packets: 16384 / 4096 = 4 RDMA WRITE First, Middle, Middle, Last (IBTA table 38's names) leave the
  client's port and the switch port toward the server, with consecutive PSNs, all for the
  server's QP; the server sends an Acknowledge back;
- the client's PCIe link: a doorbell, then a WQE fetch, then one payload read per packet,
  4 of 4096 B, all issued when the WQE is fetched (the NIC reads 16 KiB ahead of the wire:
  PcieConfig::read_ahead) and the first done before the first packet leaves (the HCA
  model's order, sim/nic/pcie_hooks.cpp), and a CQE
  write after the last ACK; the server's link: 4 payload writes of 4096 B, no doorbell (its
  application posts nothing) and no CQE (a WRITE consumes no receive);
"""
import json, os, shutil, subprocess, sys

rdmasim, default_fabric, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
fabric = json.load(open(default_fabric))
fabric["nic"] = {"pcie": True}
study = {"name": "timeline_one_write", "fabric": fabric,
         "flows": [{"src": "client", "dst": "server", "op": "write", "bytes": 16384, "message_bytes": 16384}]}
path = os.path.join(work, "study.json")
json.dump(study, open(path, "w"))
tl = os.path.join(work, "timeline.jsonl")
failures = []


def bad(m):
    failures.append(m)
    print("FAIL:", m)


p = subprocess.run([rdmasim, "study", path, "--out", os.path.join(work, "out"), "--quiet", "--timeline", tl],
                   capture_output=True, text=True, timeout=120)
if p.returncode != 0:
    print(p.stdout, p.stderr)
    sys.exit(1)
events = []
keys = {"t_ps", "end_ps", "component", "event", "qp", "psn", "bytes", "payload"}
for i, line in enumerate(open(tl)):
    e = json.loads(line)
    if set(e) != keys:
        bad(f"line {i + 1}: keys {sorted(e)}")
    events.append(e)
ts = [e["t_ps"] for e in events]
if ts != sorted(ts):
    bad("event times go back")

client_port = [e for e in events if e["component"] == "client/mlx5_0"]
writes = [e for e in client_port if e["event"].startswith("RDMA WRITE")]
want = ["RDMA WRITE First", "RDMA WRITE Middle", "RDMA WRITE Middle", "RDMA WRITE Last"]  # IBTA table 38
if [e["event"] for e in writes] != want:
    bad(f"client port sent {[e['event'] for e in writes]}, not {want}")
else:
    psns = [e["psn"] for e in writes]
    if psns != [(psns[0] + k) % (1 << 24) for k in range(4)]:
        bad(f"PSNs not consecutive: {psns}")
    if len({e["qp"] for e in writes}) != 1:
        bad("the WRITE's packets name different QPs")
sw = [e for e in events if e["component"].startswith("sw0/") and e["event"].startswith("RDMA WRITE")]
if len(sw) != 4:
    bad(f"the switch forwarded {len(sw)} WRITE packets, not 4")
if not any(e["component"] == "server/mlx5_0" and e["event"] == "Acknowledge" for e in events):
    bad("no ACKNOWLEDGE from the server")

cp = [e for e in events if e["component"] == "client/pcie"]
ops = [e["event"] for e in cp]
start = [(e["event"], e["bytes"]) for e in cp[:6]]
if start != [("doorbell", 8), ("wqe_fetch", 64)] + [("payload_read", 4096)] * 4:
    bad(f"client PCIe starts {start}")
elif any(e["t_ps"] != cp[1]["end_ps"] for e in cp[2:6]):
    bad("the payload reads were not issued when the WQE fetch ended")
elif writes and not cp[1]["end_ps"] < cp[2]["end_ps"] <= writes[0]["t_ps"]:
    bad("the first packet left before its payload read ended")
if writes and ops and (ops[-1] != "cqe_write" or cp[-1]["t_ps"] < writes[-1]["t_ps"]):
    bad(f"client PCIe ends with {ops[-1]} at {cp[-1]['t_ps']}, not a CQE write after the last packet")
sp = [e for e in events if e["component"] == "server/pcie"]
if [(e["event"], e["bytes"]) for e in sp] != [("payload_write", 4096)] * 4:
    bad(f"server PCIe: {[(e['event'], e['bytes']) for e in sp]}, not 4 payload writes of 4096 B")

if not failures:
    print(f"ok: {len(events)} events; 4 WRITE packets with consecutive PSNs; PCIe doorbell, fetch, read, CQE")
sys.exit(1 if failures else 0)
