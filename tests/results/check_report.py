#!/usr/bin/env python3
"""`rdmasim study`'s results as people look at them: report.html, fct.txt, summary.json.

Usage: check_report.py RDMASIM STUDY WORK KIND
KIND cc:    a 6:1 incast with PFC and DCQCN plus two small flows (tests/results/cc_incast.json):
            every plot is on the page with its "what to look at", each drawn with its own kind of
            element, the link heat map and pause timeline agree with counters.json, fct.txt and
            summary.json agree with flows.json by their definitions.
KIND many:  1024 flows (tests/results/many_flows.json): the page stays readable (the sum on its
            own plot, per-flow percentiles and the 3 slowest flows on another, one dot per flow,
            50 table rows, no line joining per-flow points).
Both: the page is self-contained and renders in headless chromium (tests/html_check.py).
"""
import json, math, os, re, shutil, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import html_check  # noqa: E402

rdmasim, study, work, kind = sys.argv[1:5]
failures = []


def bad(msg):
    failures.append(msg)
    print("FAIL:", msg)


def ok(msg):
    print("ok:", msg)


out = os.path.join(work, "out")
shutil.rmtree(out, ignore_errors=True)
p = subprocess.run([rdmasim, "study", study, "--out", out], capture_output=True, text=True, timeout=300)
if p.returncode != 0:
    print(p.stdout, p.stderr)
    sys.exit(f"rdmasim study exited {p.returncode}")
page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
flows = json.load(open(os.path.join(out, "flows.json")))
counters = json.load(open(os.path.join(out, "counters.json")))
summary = json.load(open(os.path.join(out, "summary.json")))
for m in html_check.self_contained(page):
    bad(m)
ids, fig_bad = html_check.figures(page)
for m in fig_bad:
    bad(m)


def count(plot_id, tag, cls=None):
    body = html_check.plot_body(page, plot_id)
    pat = r"<%s\b" % tag if cls is None else r'<%s class="%s"' % (tag, cls)
    return len(re.findall(pat, body))


# Every plot's kind of drawing: lines for series, dots per flow (never joined), bars per bucket.
if count("fct_size", "polyline"):
    bad("fct_size joins per-flow points with a line")
finished = [f for f in flows if f["status"] == "finished"]
if count("fct_size", "circle", "dot") != 2 * len(finished):
    bad(f"fct_size: {count('fct_size', 'circle', 'dot')} dots, expected 2 per finished flow ({len(finished)})")
else:
    ok(f"fct_size: one dot per flow and one per ideal ({2 * len(finished)}), no line joining them")
if len(flows) <= 8:
    if count("goodput", "polyline") != 1 + len(flows):
        bad(f"goodput: {count('goodput', 'polyline')} lines, expected the sum and {len(flows)} flows")
    else:
        ok(f"goodput: the sum and {len(flows)} flows as lines")
elif count("goodput", "polyline") != 1 or count("flow_goodput", "polyline") != 3 + 3:
    bad(f"goodput: {count('goodput', 'polyline')} lines (expected the sum alone), flow_goodput: "
        f"{count('flow_goodput', 'polyline')} (expected p5, median, p95 and 3 flows)")
else:
    ok(f"{len(flows)} flows: the sum alone, then p5/median/p95 across flows and the 3 slowest")

# summary.json's percentiles by their definition (HPCC's fct_analysis.py get_pctl: the
# element at index floor(p * n) of the sorted values), from flows.json.
slow = sorted(f["fct_ns"] / f["ideal_fct_ns"] for f in finished)
pct = lambda a, q: a[min(len(a) - 1, int(math.floor(q * len(a))))]
h = summary["headline"]
for q, key in ((0.50, "slowdown_p50"), (0.95, "slowdown_p95"), (0.99, "slowdown_p99")):
    if abs(h[key] - pct(slow, q)) > 1e-9 * pct(slow, q):
        bad(f"summary.json {key} {h[key]} != {pct(slow, q)} from flows.json")
last = max(f["finish_ns"] for f in finished) / 1000
if abs(h["last_finish_us"] - last) > 1e-6:
    bad(f"last_finish_us {h['last_finish_us']} != {last}")
ports = {k: v for k, v in counters["fabric"].items() if k != "links"}
for key, ckey in (("drops", "drops"), ("pause_frames", "pauses_sent"), ("ecn_marks", "ecn_marked")):
    want = sum(v.get(ckey, 0) for v in ports.values())
    if h[key] != want:
        bad(f"summary.json {key} {h[key]} != the ports' {ckey} summed ({want})")
sizes = sorted({f["bytes"] for f in finished})
buckets = summary["slowdown_buckets"]
# At most 20 distinct sizes: one bucket per size.
if len(sizes) <= 20 and [b["max_bytes"] for b in buckets] != sizes:
    bad(f"slowdown buckets {[b['max_bytes'] for b in buckets]} != the sizes {sizes}")
for b in buckets:
    s = sorted(f["fct_ns"] / f["ideal_fct_ns"] for f in finished if b["min_bytes"] <= f["bytes"] <= b["max_bytes"])
    if len(s) != b["flows"] or abs(b["p99"] - pct(s, 0.99)) > 1e-9 * b["p99"]:
        bad(f"bucket {b}: {len(s)} flows, p99 {pct(s, 0.99)} from flows.json")
if len(sizes) <= 20 and count("slowdown_buckets", "rect", "bar") != 3 * len(sizes):
    bad(f"slowdown_buckets: {count('slowdown_buckets', 'rect', 'bar')} bars, expected p50/p95/p99 x {len(sizes)} sizes")
ok(f"summary.json percentiles and {len(buckets)} size buckets agree with flows.json")

# fct.txt: the HPCC simulator's "%08x %08x %u %u %lu %lu %lu %lu" (sip dip sport dport size
# start_ns fct_ns standalone_fct_ns), one line per finished flow, in finishing order.
lines = open(os.path.join(out, "fct.txt")).read().splitlines()
form = re.compile(r"^[0-9a-f]{8} [0-9a-f]{8} \d+ \d+ \d+ \d+ \d+ \d+$")
if len(lines) != len(finished) or not all(form.match(l) for l in lines):
    bad(f"fct.txt: {len(lines)} lines for {len(finished)} finished flows, or a line not in the format")
else:
    rows = [l.split() for l in lines]
    # start and FCT are each rounded down to whole ns: their sum is the finish within 1 ns.
    ends = [int(r[5]) + int(r[6]) for r in rows]
    if any(b < a - 1 for a, b in zip(ends, ends[1:])):
        bad("fct.txt is not in finishing order")
    by_key = {}
    for f in finished:
        by_key.setdefault((f["bytes"], math.floor(f["start_ns"])), []).append(f)
    for r in rows:
        cands = by_key.get((int(r[4]), int(r[5])), [])
        if not any(int(r[6]) == math.floor(f["fct_ns"]) and int(r[7]) == math.floor(f["ideal_fct_ns"]) for f in cands):
            bad(f"fct.txt line {' '.join(r)} matches no flow's fct_ns/ideal_fct_ns (whole ns)")
            break
    # RoCEv2 (IBTA annex A17): UDP destination port 4791.
    if not all(r[3] == "4791" for r in rows):
        bad("fct.txt: a dport other than RoCEv2's 4791")
    ok(f"fct.txt: {len(rows)} lines in the HPCC simulator's format, each matching flows.json")

if kind == "cc":
    want = ["goodput", "cc_rates", "fct_cdf", "fct_size", "slowdown_buckets", "queues", "link_util", "pauses"]
    if ids != want:
        bad(f"plots {ids}, expected {want}")
    else:
        ok(f"report.html has the plots {ids}, each with what to look at")
    if count("cc_rates", "polyline") < 2:
        bad("cc_rates: no per-QP rate line")
    # The heat map: no cell above the line rate; the port into the incast's receiver (host9)
    # saturated at some time (6 senders at line rate into one port, kept lossless by PFC).
    cells = re.findall(r'<rect class="cell"[^>]*><title>([^<]*): ([0-9.e+-]+)%</title>', html_check.plot_body(page, "link_util"))
    if not cells:
        bad("link_util: no cell")
    else:
        mx = max(float(v) for _, v in cells)
        if mx > 100.0001:
            bad(f"link_util: a cell at {mx}% of line rate")
        if mx < 90:
            bad(f"link_util: the busiest cell is {mx}%, the incast's bottleneck should be saturated")
        ok(f"link_util: {len(cells)} cells, busiest {mx:.1f}% of line rate")
    # The pause timeline: every port that received PFC frames is a lane (at most 16 lanes).
    paused = sorted(k for k, v in ports.items() if v.get("pauses_received", 0) > 0)
    lanes = set(re.findall(r'<rect class="span"[^>]*><title>(\S+) class', html_check.plot_body(page, "pauses")))
    if not paused:
        bad("the test's incast sent no PFC frame (the pause timeline is not exercised)")
    elif len(paused) <= 16 and set(paused) != lanes:
        bad(f"pause lanes {sorted(lanes)} != ports that received PFC frames {paused}")
    else:
        ok(f"pauses: lanes for {sorted(lanes)}, the ports that received PFC frames")
    if h["paused_us"] <= 0:
        bad("summary.json: paused_us is 0 although ports were paused")
elif kind == "many":
    if len(flows) != 1024:
        bad(f"{len(flows)} flows, the test wants 1024")
    rows = len(re.findall(r"<tr><td>", page.split('<table id="flows">', 1)[-1]))
    if rows != 50:
        bad(f"the flow table has {rows} rows, expected the 50 slowest")
    size = len(page.encode())
    if size > 3_000_000:
        bad(f"report.html is {size} bytes")
    ok(f"1024 flows: table of 50 rows, page {size} bytes")

rendered_bad, _ = html_check.render(os.path.join(out, "report.html"), work)
for m in rendered_bad:
    bad(m)
print(f"{len(failures)} failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)
