#!/usr/bin/env python3
"""`rdmasim sweep` over two parameters, and `rdmasim compare` reading it.

Usage: check_sweep.py RDMASIM STUDY WORK   (STUDY: tests/results/sweep_base.json, a 2:1
incast on configs/star_roce.json given as a file)
- --vary fabric.link.rate_gbps=25,100 (a key inside the fabric file) x --vary
  generators.0.bytes=100000,400000, -j 2: four folders p000..p003, each with the point's
  study.json and outputs; summary.csv has one row per point, the first --vary changing
  slowest, the varied values as given and the headline figures of the point's summary.json;
- by analysis: the two senders' bytes all cross the receiver's link, so the last finish is at
  least 2 x bytes x 8 / rate; at the same rate, 4x the bytes finishes later;
- a path that is not in the study, an index past an array, a value that makes the study
  invalid: exit 2 with the path on stderr, nothing written;
- `rdmasim compare` on the sweep's folder: one table row and one label per point.
"""
import csv, json, os, re, shutil, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import html_check  # noqa: E402

rdmasim, study, work = sys.argv[1:4]
failures = []


def bad(msg):
    failures.append(msg)
    print("FAIL:", msg)


out = os.path.join(work, "sweep")
shutil.rmtree(out, ignore_errors=True)
args = [rdmasim, "sweep", study, "--vary", "fabric.link.rate_gbps=25,100", "--vary",
        "generators.0.bytes=100000,400000", "-j", "2", "--out", out]
p = subprocess.run(args, capture_output=True, text=True, timeout=600)
print(p.stdout)
if p.returncode != 0:
    print(p.stderr)
    sys.exit(f"rdmasim sweep exited {p.returncode}")
rows = list(csv.DictReader(open(os.path.join(out, "summary.csv"))))
want = [("25", "100000"), ("25", "400000"), ("100", "100000"), ("100", "400000")]
got = [(r["fabric.link.rate_gbps"], r["generators.0.bytes"]) for r in rows]
if got != want or [r["point"] for r in rows] != ["p000", "p001", "p002", "p003"]:
    bad(f"summary.csv points {got}, expected {want}")
for r in rows:
    d = os.path.join(out, r["dir"])
    st = json.load(open(os.path.join(d, "study.json")))
    if st["fabric"]["link"]["rate_gbps"] != int(r["fabric.link.rate_gbps"]) or \
            st["generators"][0]["bytes"] != int(r["generators.0.bytes"]):
        bad(f"{r['point']}/study.json does not hold the point's values")
    s = json.load(open(os.path.join(d, "summary.json")))["headline"]
    for k in ("last_finish_us", "slowdown_p50", "slowdown_p99", "drops", "pause_frames", "ecn_marks"):
        if float(r[k]) != float(s[k]):
            bad(f"{r['point']}: summary.csv {k} {r[k]} != summary.json {s[k]}")
    if r["status"] != "ok":
        bad(f"{r['point']}: status {r['status']}")
    rate, size = float(r["fabric.link.rate_gbps"]), float(r["generators.0.bytes"])
    bound = 2 * size * 8 / (rate * 1e3)   # us
    if float(r["last_finish_us"]) < bound:
        bad(f"{r['point']}: last finish {r['last_finish_us']} us < the line bound {bound} us")
by = {(r["fabric.link.rate_gbps"], r["generators.0.bytes"]): float(r["last_finish_us"]) for r in rows}
for rate in ("25", "100"):
    if not by[(rate, "400000")] > by[(rate, "100000")]:
        bad(f"at {rate} Gb/s 400000 B did not finish later than 100000 B")
if not failures:
    print("ok: 4 points, summary.csv rows match each point's study.json and summary.json, above the line bound")

for vary, path in (("fabric.nosuch.x=1", "fabric.nosuch.x"), ("generators.5.bytes=1", "generators.5.bytes"),
                   ("generators.0.bytes=-5", "generators.0.bytes"), ("fabric.link.rate_gbps=[1,", "fabric.link.rate_gbps")):
    o = os.path.join(work, "bad")
    shutil.rmtree(o, ignore_errors=True)
    p = subprocess.run([rdmasim, "sweep", study, "--vary", vary, "--out", o], capture_output=True, text=True, timeout=120)
    if p.returncode != 2 or path not in p.stderr or os.path.exists(o):
        bad(f"--vary {vary}: exit {p.returncode}, stderr {p.stderr.strip()!r}, wrote {os.path.exists(o)}")
    else:
        print(f"ok: --vary {vary}: exit 2: {p.stderr.strip().splitlines()[0]}")

page_path = os.path.join(work, "compare.html")
p = subprocess.run([rdmasim, "compare", out, "--out", page_path], capture_output=True, text=True, timeout=120)
if p.returncode != 0:
    bad(f"compare exited {p.returncode}: {p.stderr}")
else:
    page = open(page_path, encoding="utf-8").read()
    table = page.split('<table id="runs">', 1)[-1].split("</table>", 1)[0]
    labels = re.findall(r'<td style="text-align:left">([^<]*)</td>', table)
    if len(labels) != 4 or "generators.0.bytes=400000" not in labels[1]:
        bad(f"compare table labels {labels}")
    ids, fb = html_check.figures(page)
    for m in html_check.self_contained(page) + fb:
        bad("compare.html: " + m)
    print(f"ok: compare.html has the 4 points and plots {ids}")
p = subprocess.run([rdmasim, "compare", work], capture_output=True, text=True, timeout=60)
if p.returncode != 2 or "summary.json" not in p.stderr:
    bad(f"compare of a folder with no run: exit {p.returncode}, {p.stderr.strip()!r}")
print(f"{len(failures)} failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)
