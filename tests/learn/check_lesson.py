#!/usr/bin/env python3
"""Runs one lesson of `rdmasim learn` twice and checks what it wrote.

Usage: check_lesson.py RDMASIM LESSON FABRIC WORKDIR

- both runs exit 0 and write lesson.html and summary.json; the two summary.json files are
  byte-identical (same options, same bytes);
- lesson.html is self-contained (no script, no external src/href) and has its plots
  (<svg class="plot">), each followed by a "What to look at";
- every capture listed in the summary decodes in tshark with no malformed frame and no
  expert error, and holds frames in both directions (two distinct senders);
- the lesson's own figures (check_<lesson> below), each against the counters beside it;
- with a chromium installed: the page renders headless, the rendered DOM still has the
  plots, and a screenshot is not blank.
"""
import json, os, re, shutil, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import html_check  # noqa: E402  (tests/html_check.py, shared with the study report tests)

rdmasim, lesson, fabric, work = sys.argv[1:5]
failures = []


def bad(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run(out):
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([rdmasim, "learn", lesson, "--fabric", fabric, "--out", out],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        bad(f"rdmasim learn {lesson} --fabric {fabric} exited {p.returncode}: {p.stderr}")
        sys.exit(1)
    for f in ("lesson.html", "summary.json"):
        if not os.path.isfile(os.path.join(out, f)):
            bad(f"{out}/{f} missing")
    return p.stdout


a, b = os.path.join(work, "a"), os.path.join(work, "b")
story = run(a)
run(b)
sa = open(os.path.join(a, "summary.json"), "rb").read()
if sa != open(os.path.join(b, "summary.json"), "rb").read():
    bad("summary.json differs between two runs with the same options")
else:
    print("ok: summary.json byte-identical across two runs")
if "\033[" in story:
    bad("colour codes in the narration although stdout is not a terminal")
summary = json.loads(sa)

page = open(os.path.join(a, "lesson.html"), encoding="utf-8").read()
for msg in html_check.self_contained(page):
    bad("lesson.html: " + msg)
ids, fig_bad = html_check.figures(page)
plots = len(ids)
for msg in fig_bad:
    bad("lesson.html: " + msg)
if not fig_bad:
    print(f"ok: lesson.html has {plots} plots, each with what to look at")


def tshark_fields(path, field):
    p = subprocess.run(["tshark", "-r", path, "-T", "fields", "-e", field], capture_output=True, text=True,
                       timeout=300)
    return p.returncode, [l for l in p.stdout.splitlines()]


if shutil.which("tshark"):
    for cap in summary.get("captures", []):
        path = os.path.join(a, cap)
        p = subprocess.run(["tshark", "-r", path, "-Y", "_ws.malformed || _ws.expert.severity >= error"],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0 or p.stdout.strip():
            bad(f"{cap}: tshark reports malformed frames or errors:\n{p.stdout[:2000]}{p.stderr[:500]}")
        field = "infiniband.lrh.slid" if fabric == "ib" else "eth.src"
        rc, senders = tshark_fields(path, field)
        distinct = {s for s in senders if s}
        if rc != 0 or len(distinct) < 2:
            bad(f"{cap}: frames from {len(distinct)} sender(s) ({field}); a link capture has both directions")
        else:
            print(f"ok: {cap}: {len(senders)} frames from {len(distinct)} senders, none malformed")
else:
    print("skip: no tshark to decode the captures")


def sum_ports(counters, key):
    return sum(v[key] for v in counters.values() if isinstance(v, dict) and key in v)


def check_pfc(s):
    lossy, pfc, dc = (s["runs"][k] for k in ("lossy", "pfc", "pfc_ecn_dcqcn"))
    for name, r in (("lossy", lossy), ("pfc", pfc), ("pfc_ecn_dcqcn", dc)):
        # The lesson's totals are the fabric's per-port counters summed (every port that
        # counts drops or sends PFC frames).
        if r["drops"] != sum_ports(r["fabric_counters"], "drops"):
            bad(f"{name}: drops {r['drops']} != the ports' drops {sum_ports(r['fabric_counters'], 'drops')}")
        if r["pause_frames"] != sum_ports(r["fabric_counters"], "pauses_sent"):
            bad(f"{name}: pause_frames != the ports' pauses_sent")
        if not r["all_finished"]:
            bad(f"{name}: not every flow finished")
    if not lossy["drops"] > 0: bad("lossy run: no drops")
    if not lossy["retransmitted_packets"] >= 1: bad("lossy run: drops but no retransmission")
    if lossy["pause_frames"] != 0: bad("lossy run sent PFC frames")
    if pfc["drops"] != 0: bad(f"PFC run dropped {pfc['drops']}")
    if not pfc["pause_frames"] > 0: bad("PFC run: no pause frames")
    if not dc["pause_frames"] < pfc["pause_frames"]:
        bad(f"DCQCN run: {dc['pause_frames']} pause frames, not fewer than PFC's {pfc['pause_frames']}")
    if not dc["ecn_marked"] > 0 or not dc["cnps_sent"] > 0: bad("DCQCN run: no ECN marks or CNPs")
    # Head-of-line blocking: the victim's path has room (uplink 400 Gb/s, w idle), so only
    # pauses slow it: slower under PFC than in the lossy run, where nothing pauses it.
    if not pfc["victim_goodput_gbps"] < lossy["victim_goodput_gbps"]:
        bad("PFC run: the victim is not slowed by the pauses (no HOL blocking shown)")
    if not pfc["uplink_paused_ns"] > 0: bad("PFC run: the uplink was never paused")
    print(f"ok: pfc figures: drops {lossy['drops']}/0, pauses {pfc['pause_frames']} > {dc['pause_frames']}, "
          f"victim {lossy['victim_goodput_gbps']:.1f} -> {pfc['victim_goodput_gbps']:.1f} Gb/s")


def ceil_div(a, b):
    return -(-a // b)


def check_copies(s):
    S, m = s["size_bytes"], s["model"]
    rdma, tcp = s["paths"]["rdma_write"], s["paths"]["tcp"]
    # RDMA: the NICs moved the payload (DMA read at the client, write at the server), no CPU.
    if rdma["cpu_copy_bytes"] != 0 or rdma["syscalls"] != 0 or rdma["interrupts"] != 0:
        bad(f"RDMA path: copies {rdma['cpu_copy_bytes']}, syscalls {rdma['syscalls']}, irqs {rdma['interrupts']}")
    if rdma["nic_dma_read_bytes"] != S or rdma["nic_dma_write_bytes"] != S:
        bad(f"RDMA path: NIC DMA {rdma['nic_dma_read_bytes']}/{rdma['nic_dma_write_bytes']} B, not {S} each way")
    if rdma["cpu_busy_ns"]["receiver"] != 0:
        bad("RDMA path: the receiver's CPU was busy")
    # TCP: one copy user->kernel at the sender, one kernel->user at the receiver.
    if tcp["cpu_copy_bytes"] != 2 * S:
        bad(f"TCP copies {tcp['cpu_copy_bytes']} B, not 2 x {S}")
    # The model's formula (lib/learn/kernel_tcp.h): segments = ceil(S / mss), ACKs =
    # ceil(segments / ack_every); send() calls = ceil(S / app_chunk); receiver interrupts =
    # ceil(segments / coalesce_frames), one wake-up each, and per batch of coalesce_frames
    # segments ceil(batch bytes / app_chunk) recv() calls; sender interrupts =
    # ceil(ACKs / coalesce_frames).
    seg = ceil_div(S, m["mss"])
    acks = ceil_div(seg, m["ack_every"])
    recvs = sum(ceil_div(min(S, (b + m["coalesce_frames"]) * m["mss"]) - b * m["mss"], m["app_chunk"])
                for b in range(0, seg, m["coalesce_frames"]))
    want_sys = ceil_div(S, m["app_chunk"]) + recvs
    want_irq = ceil_div(seg, m["coalesce_frames"]) + ceil_div(acks, m["coalesce_frames"])
    if tcp["syscalls"] != want_sys or tcp["interrupts"] != want_irq:
        bad(f"TCP syscalls {tcp['syscalls']} (formula {want_sys}), interrupts {tcp['interrupts']} (formula {want_irq})")
    if not tcp["latency_ns"] > rdma["latency_ns"]:
        bad("TCP is not slower than RDMA with the default model")
    print(f"ok: copies figures: TCP copies {tcp['cpu_copy_bytes']} B, {want_sys} syscalls, {want_irq} interrupts; "
          f"RDMA 0/0/0")


def check_transports(s):
    S = s["size_bytes"]
    # Header bytes per data packet (IBTA Vol 1 9.2-9.3, annex A17; RFC 5040/5041/5044), in
    # wire bytes: IB LRH 8 + BTH 12 + ICRC 4 + VCRC 2; RoCEv2 Ethernet 14 + IPv4 20 + UDP 8 +
    # BTH 12 + ICRC 4 + FCS 4 + preamble/gap 20; both + RETH 16 once per WRITE (its first
    # packet). iWARP: Ethernet 14 + IPv4 20 + TCP 20 + timestamps 12 + MPA 2 + DDP tagged
    # 14 (with RDMAP) + CRC32c 4 + FCS 4 + preamble/gap 20 on every FPDU.
    want = {"ib": lambda n: 26 + 16 / n, "roce": lambda n: 82 + 16 / n, "iwarp": lambda n: 110}
    for k, f in want.items():
        t = s["transports"][k]
        n = t["packets_for_size"]
        if abs(t["header_bytes_per_packet"] - f(n)) > 1e-9:
            bad(f"{k}: {t['header_bytes_per_packet']} header bytes per packet, the layout gives {f(n)}")
        l = t["loss_1pct"]
        if not (l["lost_packets"] > 0 and l["retransmitted"] > 0 and l["completion_us"] > l["completion_no_loss_us"]):
            bad(f"{k}: 1 % loss run shows no loss/recovery: {l}")
        g = [x["goodput_gbps"] for x in t["goodput"]]
        if not g[-1] > g[0]:
            bad(f"{k}: goodput does not grow with message size: {g}")
    print("ok: transports figures: header bytes as the layouts give, losses recovered, goodput grows with size")


def check_hello(s):
    steps = s["steps"]
    # Causal order: the steps are listed by start time, and the milestones of a READ come in
    # the order they must happen (each needs the one before): post, doorbell, WQE fetch,
    # request on the wire, the server's DMA read, a response on the wire, the DMA write
    # into the client's buffer, the CQE write, the poll.
    starts = [x["start_ps"] for x in steps]
    if starts != sorted(starts):
        bad("hello: steps are not in time order")
    kinds = [x["kind"] for x in steps]
    order = ["post", "doorbell", "wqe_fetch", "request_wire", "remote_dma_read", "response_wire",
             "payload_write", "cqe_write", "poll"]
    missing = [k for k in order if k not in kinds]
    if missing:
        bad(f"hello: steps missing: {missing}")
    else:
        first = [kinds.index(k) for k in order]
        if first != sorted(first):
            bad(f"hello: milestones out of causal order: {list(zip(order, first))}")
        # A step cannot start before the one it waits for has ended (PCIe reads, the wire).
        end_of = {k: max(x["end_ps"] for x in steps if x["kind"] == k) for k in ("wqe_fetch", "remote_dma_read")}
        if steps[kinds.index("request_wire")]["start_ps"] < end_of["wqe_fetch"]:
            bad("hello: the request left before the WQE was fetched")
        # The first response packet carries the first bytes: it leaves after the DMA read
        # began and, when the READ is one packet (4096 B at MTU 4096: roce, ib), after it ended.
        resp = steps[kinds.index("response_wire", kinds.index("remote_dma_read"))]["start_ps"]
        dma = steps[kinds.index("remote_dma_read")]
        if resp < dma["start_ps"] or (fabric != "iwarp" and resp < dma["end_ps"]):
            bad("hello: the response left before its bytes were read")
    # The total is the READ's measured completion: the CQE reached the CQ (the runner's
    # completion time) and the application's poll took poll_ps; the last step ends there,
    # and the shares add up to it.
    total = s["read_completion_ps"]
    if total != s["cqe_at_ps"] + s["poll_ps"]:
        bad(f"hello: total {total} != CQE time {s['cqe_at_ps']} + poll {s['poll_ps']}")
    if steps[-1]["kind"] != "poll" or steps[-1]["end_ps"] != total:
        bad(f"hello: the last step is {steps[-1]['kind']} ending at {steps[-1]['end_ps']}, not the poll at {total}")
    if sum(p["ps"] for p in s["share"]) != total:
        bad(f"hello: shares add up to {sum(p['ps'] for p in s['share'])}, not {total}")
    # The remote CPU did nothing: no doorbell and no CQE on the server's PCIe link.
    if s["remote_cpu_busy_ps"] != 0 or s["remote_posts"] != 0 or s["remote_cqes"] != 0:
        bad(f"hello: the server's CPU was busy {s['remote_cpu_busy_ps']} ps")
    remote = [p for p in s["share"] if p["part"] == "remote CPU"][0]
    if remote["ps"] != 0:
        bad("hello: time attributed to the remote CPU")
    print(f"ok: hello: {len(steps)} steps in causal order, total {total / 1000:.1f} ns = CQE + poll, remote CPU 0")


checks = {"pfc": check_pfc, "copies": check_copies, "transports": check_transports, "hello": check_hello}
if lesson in checks:
    checks[lesson](summary)

for msg in html_check.render(os.path.join(a, "lesson.html"), work)[0]:
    bad(msg)

sys.exit(1 if failures else 0)
