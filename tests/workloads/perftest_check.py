#!/usr/bin/env python3
"""lib/workloads/perftest.c on two hosts of the 16-host RoCE star (configs/star_roce.json:
100 Gb/s links of 400 ns, a switch of 200 ns, MTU 4096).
usage: perftest_check.py RDMASIM PERFTEST_SO STAR WORKDIR

Expectations, from the fabric's parameters (each path is host -> switch -> host: two links, each
serialising a packet once, store and forward):
- Wire bytes of a full packet: 4096 payload + 20 IPv4 + 8 UDP + 12 BTH + 4 ICRC + 38 Ethernet
  framing (14 MAC, 4 FCS, 8 preamble, 12 IFG) = 4178 B, so the payload rate is
  100 Gb/s x 4096 / 4178 = 12.255 GB/s = 11687.3 MiB/s (perftest's MB is 2^20 B).
- bw: BW average <= the payload rate; for 8 MiB SENDs (2048 packets per message, 20 messages
  kept 128 deep) within 0.5 % of it (the pipeline fills once: ~1.5 us of 13.7 ms); for 64 KiB
  WRITEs within 2 % (RETH's 16 B per 16 packets: 0.02 %, and the first message's latency over
  200 messages). Peak >= average (a run of operations includes the whole run). MsgRate x size
  = BW average.
- lat (one-way: half the ping-pong): a payload of S <= 4096 B adds S x 8 / 100 Gb/s at each of
  the 2 serialisations, so t(4096) - t(2) = 2 x 4094 x 8 / 100 ns = 655.0 ns; past one packet a
  message's time is its packets' serialisation, so t(8 MiB) - t(4 MiB) = 1024 packets x 4178 B x
  8 / 100 Gb/s = 342.26 us. Tolerance 100 ns: the client and the server see arrivals at their
  next 50 ns look (the program's -p default) or poll (fibers.empty_poll_ns, 50 ns).
- PCIe (on by default; configs/README.md "Host PCIe link": Gen3 x16 at 100 Gb/s, 8 GT/s x 16
  x 128/130 = 126.03 Gb/s; MPS 256 B; 24 B per write TLP, 20 B per completion TLP; 125 ns one
  way): the sender's NIC reads the payload before the packet goes, so a 4096 B payload arrives
  in 16 completions of 276 B where 2 B take one of 22 B: + (4416 - 22) x 8 / 126.03 = 278.9 ns.
  The receiver's NIC writes the 4096 B into memory as 16 write TLPs of 280 B (284.4 ns on its
  to-host direction); the poller sees the bytes at once (the model places them on arrival),
  but the WQE fetch of its reply is a read request on that same direction, behind those
  writes: it leaves 284.4 ns after the arrival, where it would have left when the doorbell
  (8 B + 24 B, 2.0 ns, then 125 ns) reached the NIC, d + 127.0 ns after the arrival, d the
  poller's delay (0..50 ns, mid 25). So WRITE t(4096) - t(2) = 655.0 + 278.9 + 284.4 - 127.0
  - 25 = 1066.3 ns, within the 100 ns tolerance.
- READ lat: the response carries the payload over the same 2 serialisations (655.0 ns), the
  responder's NIC reads it first (278.9 ns as above), and the requester's completion is a CQE
  write behind the 4096 B payload write (16 x 280 B where 2 B take 26 B: (4480 - 26) x 8 /
  126.03 = 282.7 ns): t(4096) - t(2) = 1216.6 ns.
- Every latency column is non-decreasing with size; the runs are deterministic (two runs,
  byte-identical programs.log); a bad argument is the program's usage error (exit 2).
"""
import json, os, re, subprocess, sys

rdmasim, so, star, work = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3]), sys.argv[4]
os.makedirs(work, exist_ok=True)
payload_mib = 100e9 / 8 * 4096 / 4178 / 2**20
pcie_ns = lambda b: b * 8 / (8 * 16 * 128 / 130)             # bytes on Gen3 x16, in ns
wire_4094 = 2 * 4094 * 8 / 100                                # 2 serialisations of 4094 B more
dma_read_4k = pcie_ns(4096 + 16 * 20) - pcie_ns(2 + 20)       # completions of 4096 B vs 2 B
dma_write_4k = pcie_ns(4096 + 16 * 24) - pcie_ns(2 + 24)      # write TLPs of 4096 B vs 2 B
write_lat_4k = wire_4094 + dma_read_4k + pcie_ns(4096 + 16 * 24) - (pcie_ns(8 + 24) + 125) - 25
read_lat_4k = wire_4094 + dma_read_4k + dma_write_4k
failures = []
BW_HEADER = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
LAT_HEADER = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
              "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ")


def run(name, args, expect=0):
    study = {"name": name, "fabric": star, "time_limit_us": 200000,
             "programs": [{"path": so, "hosts": ["host1", "host2"], "args": args}]}
    path = os.path.join(work, name + ".json")
    json.dump(study, open(path, "w"))
    p = subprocess.run([rdmasim, "study", path, "--out", os.path.join(work, name)], capture_output=True,
                       text=True, timeout=120)
    if p.returncode != expect:
        failures.append(f"{name}: exit {p.returncode}, expected {expect}: {p.stdout[-1500:]}{p.stderr[-800:]}")
        return None, []
    log = open(os.path.join(work, name, "programs.log")).read()
    header = BW_HEADER if args[1] == "bw" else LAT_HEADER
    if expect == 0 and not any(l.split("] ", 1)[-1] == header for l in log.splitlines()):
        failures.append(f"{name}: no perftest header {header!r}")
    rows = [[float(x) for x in l.split("] ", 1)[1].split()] for l in log.splitlines()
            if re.search(r"host1\] +\d", l)]
    return log, rows


def near(name, got, want, tol):
    print(f"{name}: {got:.2f} (expected {want:.2f} +- {tol})")
    if abs(got - want) > tol:
        failures.append(f"{name}: {got:.3f}, expected {want:.3f} +- {tol}")


# Bandwidth.
_, rows = run("send_bw_8m", ["send", "bw", "-s", "8388608", "-n", "20"])
for size, iters, peak, avg, rate in rows:
    near("SEND bw 8 MiB, BW average MiB/s", avg, payload_mib, 0.005 * payload_mib)
    if avg > payload_mib * 1.0001 or peak < avg:
        failures.append(f"SEND bw 8 MiB: average {avg} above the payload rate or peak {peak} below it")
_, rows = run("write_bw_64k", ["write", "bw", "-s", "65536", "-n", "200"])
for size, iters, peak, avg, rate in rows:
    near("WRITE bw 64 KiB, BW average MiB/s", avg, payload_mib * 0.99, 0.01 * payload_mib)
    if avg > payload_mib * 1.0001 or peak < avg:
        failures.append(f"WRITE bw 64 KiB: average {avg} above the payload rate or peak {peak} below it")
    if abs(rate * 1e6 * size / 2**20 - avg) > 0.001 * avg:
        failures.append(f"WRITE bw: MsgRate {rate} x {size} B is not BW average {avg}")
if len(rows) != 1:
    failures.append(f"write bw: expected one row, got {rows}")

# Latency over sizes (-a: 2 .. 8 MiB), twice for determinism.
log1, rows = run("write_lat_all", ["write", "lat", "-a", "-n", "20"])
log2, _ = run("write_lat_all_again", ["write", "lat", "-a", "-n", "20"])
if log1 != log2:
    failures.append("write lat -a: two runs differ")
t = {int(r[0]): r[4] for r in rows}   # t_typical per size
if sorted(t) != [2 ** k for k in range(1, 24)]:
    failures.append(f"write lat -a: sizes {sorted(t)}")
else:
    near("WRITE lat t(4096) - t(2), ns", (t[4096] - t[2]) * 1e3, write_lat_4k, 100)
    near("WRITE lat t(8 MiB) - t(4 MiB), us", t[8388608] - t[4194304], 1024 * 4178 * 8 / 100e3, 0.1)
    sizes = sorted(t)
    if any(t[b] < t[a] for a, b in zip(sizes, sizes[1:])):
        failures.append(f"write lat: t_typical decreases with size: {t}")
for r in rows:
    if not r[2] <= r[4] <= r[3] or not r[2] <= r[5] <= r[3]:
        failures.append(f"write lat {int(r[0])}: t_min <= t_typical, t_avg <= t_max fails: {r}")

_, rows = run("read_lat", ["read", "lat", "-s", "2", "-n", "20"])
# Who worked (programs.json, the hosts' CPU model): the requester spins on its CQ from each
# post to the completion, so its poll time is the sum of the 20 samples (t_avg x 20; each
# sample's polls are whole 50 ns polls, hence +- 50 ns each); the responder's CPU does
# nothing during the READs (it sleeps in the barrier): 0 ns.
progs = {p["host"]: p for p in json.load(open(os.path.join(work, "read_lat", "programs.json")))}
if rows:
    near("READ lat: host1 CPU poll time, us", progs["host1"]["cpu_busy_ns_by_cause"].get("poll", 0) / 1e3,
         rows[0][5] * 20, 20 * 0.05)
if progs["host2"]["cpu_busy_ns"] != 0:
    failures.append(f"READ lat: the responder's CPU was busy {progs['host2']['cpu_busy_ns']} ns")
_, rows4k = run("read_lat_4k", ["read", "lat", "-s", "4096", "-n", "20"])
if rows and rows4k:
    near("READ lat t(4096) - t(2), ns", (rows4k[0][4] - rows[0][4]) * 1e3, read_lat_4k, 100)
_, rows = run("atomic_lat", ["atomic", "lat", "-n", "20"])
if not rows or int(rows[0][0]) != 8:
    failures.append(f"atomic lat: expected one row of 8 B, got {rows}")

# A usage error of the program (exit 2) fails the study (exit 1) with its host named.
json.dump({"name": "bad", "fabric": star, "time_limit_us": 1000,
           "programs": [{"path": so, "hosts": ["host1", "host2"], "args": ["copy", "bw"]}]},
          open(os.path.join(work, "bad.json"), "w"))
p = subprocess.run([rdmasim, "study", os.path.join(work, "bad.json"), "--out", os.path.join(work, "bad")],
                   capture_output=True, text=True, timeout=60)
if p.returncode != 1 or "on host1 (rank 0): exit 2" not in p.stdout + p.stderr:
    failures.append(f"bad verb: exit {p.returncode}: {p.stdout[-800:]}")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("ok")
