"""Checks shared by the tests of rdmasim's HTML pages (lessons, study reports, compare pages).

- self_contained(page): no script, nothing loaded from elsewhere;
- figures(page): the <svg class="plot" id=...> plots, each followed by "What to look at";
- render(path, work, ids): headless chromium loads the page, its DOM still has the plots
  (by id) with their drawing elements, and a screenshot is not blank.
Each returns a list of failure messages (empty: passed) and prints what it saw.
"""
import os, re, shutil, struct, subprocess, zlib

PLOT = re.compile(r'<svg class="plot"(?: id="([^"]*)")?.*?</svg>', re.S)


def self_contained(page):
    bad = []
    if re.search(r"<script", page, re.I):
        bad.append("the page has a script")
    if re.search(r"""(src|href)\s*=\s*["'][^"']*//""", page):
        bad.append("the page loads an external resource")
    return bad


def figures(page):
    """(plot ids in order, failures): every plot is followed by its 'What to look at'."""
    ids = [m.group(1) or "" for m in PLOT.finditer(page)]
    looks = len(re.findall(r'<svg class="plot".*?</svg>\s*<figcaption><b>What to look at:</b>', page, re.S))
    bad = [] if ids and looks == len(ids) else [f"{len(ids)} plots, {looks} with a 'What to look at'"]
    return ids, bad


def plot_body(page, plot_id):
    m = re.search(r'<svg class="plot" id="%s".*?</svg>' % re.escape(plot_id), page, re.S)
    return m.group(0) if m else ""


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _inked_rows(png):
    # PNG: IHDR gives size and colour type; IDAT chunks hold the zlib stream.
    w, h, depth, ctype = struct.unpack(">IIBB", png[16:26])
    data, pos = b"", 8
    while pos < len(png):
        ln, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"IDAT":
            data += png[pos + 8:pos + 8 + ln]
        pos += 12 + ln
    raw = zlib.decompress(data)
    stride = 1 + w * {2: 3, 6: 4}.get(ctype, 1)
    # Filtered rows of plain white hold one byte value; anything drawn adds others.
    return w, h, sum(1 for y in range(h) if len(set(raw[y * stride + 1:(y + 1) * stride])) > 1)


def render(path, work, element_pattern=r"<(polyline|rect|circle)\b", min_plots=1):
    """Loads `path` in headless chromium: the DOM keeps every plot of the file (count and
    ids) and drawing elements; a screenshot has ink on at least a tenth of its rows.
    Returns (failures, skipped)."""
    chrome = chromium()
    if not chrome:
        print("skip: no chromium to render", path)
        return [], True
    bad = []
    page = open(path, encoding="utf-8").read()
    want = [m.group(1) or "" for m in PLOT.finditer(page)]
    url = "file://" + os.path.abspath(path)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    dom = subprocess.run([chrome, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    got = [m.group(1) or "" for m in PLOT.finditer(dom)]
    drawn = len(re.findall(element_pattern, dom))
    if got != want or len(got) < min_plots or drawn == 0:
        bad.append(f"chromium's DOM has plots {got} (file: {want}) and {drawn} drawing elements")
    else:
        print(f"ok: chromium renders {len(got)} plots ({', '.join(got)}) with {drawn} drawing elements")
    shot = os.path.join(work, "shot.png")
    subprocess.run([chrome, *flags, "--window-size=1100,2400", f"--screenshot={shot}", url],
                   capture_output=True, timeout=120)
    try:
        w, h, inked = _inked_rows(open(shot, "rb").read())
        if inked < h // 10:
            bad.append(f"screenshot {w}x{h}: only {inked} rows hold anything")
        else:
            print(f"ok: screenshot {w}x{h} has {inked} non-blank rows")
    except (OSError, struct.error, zlib.error) as e:
        bad.append(f"no usable screenshot: {e}")
    return bad, False
