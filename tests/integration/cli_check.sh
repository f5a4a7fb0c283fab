#!/usr/bin/env bash
# The command line's config and study checking: `rdmasim fabric --check` on every shipped
# config and on malformed ones, and `rdmasim study` on the shipped studies, a failing one
# and malformed ones (exit status, the lines printed, the output files).
#
# usage: cli_check.sh RDMASIM SOURCE_DIR
set -u
. "$(dirname "$0")/lib.sh"
rdmasim=$1; src=$2
dir=$(mktemp -d /tmp/rdmasim-cli.XXXXXX)
trap 'stop_daemon; rm -rf "$dir"' EXIT
fail=0

# expect_err NAME TEXT: some stderr line contains TEXT (fixed string).
expect_err() {
  if grep -qF -- "$2" "$dir/err"; then echo "ok: $1: stderr has \"$2\""; else bad "$1: no stderr line has \"$2\""; sed 's/^/  err: /' "$dir/err"; fi
}

# --- rdmasim fabric --check ---------------------------------------------------------------
for cfg in "$src"/configs/*.json; do
  name="fabric --check $(basename "$cfg")"
  expect_exit 0 "$name" "$rdmasim" fabric --check "$cfg" || continue
  # One line: "<n> host(s), <n> switch(es), <n> link(s), <link layer> <rate> Gb/s, MTU <n>..."
  [ "$(wc -l <"$dir/out")" = 1 ] || bad "$name: $(wc -l <"$dir/out") lines on stdout, expected 1"
  grep -Eq '^[0-9]+ hosts?, [0-9]+ switch(es)?, [0-9]+ links?, (RoCEv2|InfiniBand|iWARP) [0-9.-]+ Gb/s, MTU [0-9]+' "$dir/out" \
    || bad "$name: summary \"$(cat "$dir/out")\" is not the one-line form"
  [ -s "$dir/err" ] && bad "$name: printed on stderr: $(cat "$dir/err")"
done

hosts='"hosts": [{"name": "a", "ip": "127.0.1.1"}, {"name": "b", "ip": "127.0.1.2"}], "switches": [{"name": "sw0"}], "links": [{"a": "a", "b": "sw0"}, {"a": "b", "b": "sw0"}]'
echo "{$hosts, \"switch\": {\"pfc\": {\"xoff_kb\": -3}}}" >"$dir/neg.json"
echo "{$hosts, \"colour\": \"blue\"}" >"$dir/unknown.json"
echo "{$hosts, \"mtu\": \"big\"}" >"$dir/type.json"
echo "{$hosts, \"mtu\": 4096" >"$dir/syntax.json"
expect_exit 2 "fabric --check negative size" "$rdmasim" fabric --check "$dir/neg.json" &&
  expect_err "negative size" "fabric.switch.pfc.xoff_kb: -3 is negative; expected a size in KiB >= 0"
expect_exit 2 "fabric --check unknown key" "$rdmasim" fabric --check "$dir/unknown.json" &&
  expect_err "unknown key" "fabric.colour: unknown key"
expect_exit 2 "fabric --check wrong type" "$rdmasim" fabric --check "$dir/type.json" &&
  expect_err "wrong type" "fabric.mtu: \"big\" is not an integer"
expect_exit 2 "fabric --check bad JSON" "$rdmasim" fabric --check "$dir/syntax.json" &&
  expect_err "bad JSON" "$dir/syntax.json: [json.exception.parse_error"
expect_exit 2 "fabric --check missing file" "$rdmasim" fabric --check "$dir/none.json" &&
  expect_err "missing file" "$dir/none.json: No such file or directory"

# --- rdmasim study ------------------------------------------------------------------------
for st in "$src"/configs/studies/*.json; do
  name="study $(basename "$st")"
  out="$dir/out_$(basename "$st" .json)"
  expect_exit 0 "$name" "$rdmasim" study "$st" --out "$out" || continue
  grep -Eq '^flows: [0-9]+ finished, 0 failed' "$dir/out" || bad "$name: no \"flows: N finished, 0 failed\" line"
  for f in flows.json flows.csv fct.txt summary.json counters.json queues.csv report.html; do
    [ -s "$out/$f" ] || bad "$name: $f missing or empty"
  done
done

# A study whose flow cannot finish in time: exit 1 and the flow named.
cat >"$dir/slow.json" <<'JSON'
{"name": "slow", "time_limit_us": 50,
 "flows": [{"name": "big", "src": "client", "dst": "server", "bytes": 10485760},
           {"name": "small", "src": "server", "dst": "client", "bytes": 4096}]}
JSON
expect_exit 1 "study past its time limit" "$rdmasim" study "$dir/slow.json" --out "$dir/out_slow" &&
  { grep -q "^FAILED big: did not finish by the time limit" "$dir/out" && echo "ok: the late flow is named" || bad "no FAILED line for flow big"; }
grep -q "FAILED small" "$dir/out" && bad "flow small finished but is reported failed"

echo '{"name": "x", "flows": [{"src": "client", "dst": "server", "bytes": -3}]}' >"$dir/s_neg.json"
echo '{"name": "x", "flows": [], "colour": 1}' >"$dir/s_unknown.json"
echo '{"name": "x", "flows": [{"src": "client", "dst": "server", "window": "wide"}]}' >"$dir/s_type.json"
echo '{"name": "x", "flows": [{"src": "nobody", "dst": "server"}]}' >"$dir/s_host.json"
echo '{"name": "x", "flows": [' >"$dir/s_syntax.json"
expect_exit 2 "study negative size" "$rdmasim" study "$dir/s_neg.json" --out "$dir/o" &&
  expect_err "study negative size" "$dir/s_neg.json: study.flows[0].bytes: -3 is negative; expected a total size in bytes >= 1"
expect_exit 2 "study unknown key" "$rdmasim" study "$dir/s_unknown.json" --out "$dir/o" &&
  expect_err "study unknown key" "$dir/s_unknown.json: study.colour: unknown key"
expect_exit 2 "study wrong type" "$rdmasim" study "$dir/s_type.json" --out "$dir/o" &&
  expect_err "study wrong type" "study.flows[0].window: \"wide\" is not an integer"
expect_exit 2 "study unknown host" "$rdmasim" study "$dir/s_host.json" --out "$dir/o" &&
  expect_err "study unknown host" "study.flows[0].src: \"nobody\" names no host of the fabric"
expect_exit 2 "study bad JSON" "$rdmasim" study "$dir/s_syntax.json" --out "$dir/o" &&
  expect_err "study bad JSON" "$dir/s_syntax.json: [json.exception.parse_error"
expect_exit 2 "study missing file" "$rdmasim" study "$dir/none.json" &&
  expect_err "study missing file" "$dir/none.json: No such file or directory"
[ -e "$dir/o" ] && bad "a rejected study wrote outputs"

# --- queue sampling through the daemon ------------------------------------------------------
# A fabric with "observe": the daemon's counters carry each sampled port's queue_series,
# filled up to the engine's now (an idle daemon's engine has no events to advance it, so
# this checks the series is there and configured, not its length).
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["observe"]={"queue_sample_ns":1000000,"ports":["sw0"]}; json.dump(c,open(sys.argv[2],"w"))' \
  "$src/configs/default.json" "$dir/observe.json"
if start_daemon "$rdmasim" "$dir" "$dir/observe.json"; then
  "$rdmasim" counters --socket "$RDMASIM_SOCKET" >"$dir/counters.json" 2>"$dir/err" || bad "rdmasim counters failed: $(cat "$dir/err")"
  stop_daemon
  python3 - "$dir/counters.json" <<'PY' || bad "daemon counters have no queue_series on sw0's ports only"
import json, sys
c = json.load(open(sys.argv[1]))
ports = c.get("fabric", c)
sw = [v for k, v in ports.items() if k.startswith("sw0/")]
assert sw and all(p["queue_series"]["interval_ns"] == 1000000 for p in sw), "sw0 ports without a 1 ms series"
assert all(len(p["queue_series"]["total_bytes"]) >= 1 for p in sw), "no sample"
assert not any("queue_series" in v for k, v in ports.items() if "/mlx5" in k), "a NIC port sampled"
print("ok: daemon counters carry sw0's queue series")
PY
else
  bad "the daemon did not start with an observe config"
fi

# --- report.html ----------------------------------------------------------------------------
# Parsed as HTML, every inline SVG as XML (each plot with something drawn), and nothing
# loaded from outside. The plots themselves: tests/results (check_report.py).
html="$dir/out_incast_15to1_roce/report.html"
# (python3 is there wherever meson is.)
python3 - "$html" <<'PY' || bad "report.html does not parse"
import re, sys, html.parser, xml.etree.ElementTree as ET
text = open(sys.argv[1], encoding="utf-8").read()
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.tags = []
    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            assert not (k in ("src", "href") and v and "//" in v), f"external resource {v}"
P().feed(text)
svgs = re.findall(r"<svg.*?</svg>", text, re.S)
assert len(svgs) >= 4, f"{len(svgs)} svg plots"
ns = "{http://www.w3.org/2000/svg}"
for s in svgs:
    root = ET.fromstring(s)
    drawn = root.findall(f".//{ns}polyline") + root.findall(f".//{ns}rect") + root.findall(f".//{ns}circle")
    assert drawn, f"plot {root.get('id')} draws nothing"
    for l in root.findall(f"{ns}polyline"):
        assert len(l.get("points").split()) >= 2, f"plot {root.get('id')}: a series with < 2 points"
assert "<script" not in text
print(f"report.html: {len(svgs)} SVG plots, well-formed")
PY
# Each plot rendered by librsvg when rsvg-convert is installed (a PNG with the plot's size).
if command -v rsvg-convert >/dev/null; then
  python3 - "$html" "$dir" <<'PY' || bad "an SVG plot does not render"
import re, subprocess, sys
svgs = re.findall(r"<svg.*?</svg>", open(sys.argv[1], encoding="utf-8").read(), re.S)
for i, s in enumerate(svgs):
    png = subprocess.run(["rsvg-convert"], input=s.encode(), capture_output=True, check=True).stdout
    assert png[:8] == b"\x89PNG\r\n\x1a\n", f"plot {i}: not a PNG"
    w, h = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    size = re.search(r'width="([0-9.]+)" height="([0-9.]+)"', s)
    assert (w, h) == (round(float(size[1])), round(float(size[2]))), f"plot {i}: {w}x{h}"
print(f"ok: rsvg-convert renders the {len(svgs)} plots")
PY
else
  echo "skip: no rsvg-convert to render the plots"
fi
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -n "$chrome" ]; then
  timeout 60 "$chrome" --headless --no-sandbox --disable-gpu --dump-dom "file://$html" >"$dir/dom.html" 2>/dev/null \
    && [ "$(grep -o '<svg' "$dir/dom.html" | wc -l)" = "$(grep -o '<svg' "$html" | wc -l)" ] && echo "ok: chromium renders report.html with its plots" \
    || bad "chromium could not load report.html"
else
  echo "skip: no chromium to load report.html"
fi
exit $fail
