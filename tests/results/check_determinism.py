#!/usr/bin/env python3
"""Every shipped study (configs/studies/*.json) run twice gives the same files, byte for byte.

Usage: check_determinism.py RDMASIM SOURCE_DIR WORK
No output file carries a wall-clock figure (the wall time is only on stdout), so nothing is
masked. Each study runs as shipped.
"""
import filecmp, glob, os, shutil, subprocess, sys, time

rdmasim, src, work = sys.argv[1:4]
failures = []
for st in sorted(glob.glob(os.path.join(src, "configs", "studies", "*.json"))):
    name = os.path.basename(st)[:-5]
    dirs = [os.path.join(work, name, x) for x in ("a", "b")]
    t0 = time.time()
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
        p = subprocess.run([rdmasim, "study", st, "--out", d, "--quiet"], capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            failures.append(f"{name}: exit {p.returncode}: {p.stderr[:300]}")
            break
    else:
        fa, fb = sorted(os.listdir(dirs[0])), sorted(os.listdir(dirs[1]))
        _, mismatch, errors = filecmp.cmpfiles(dirs[0], dirs[1], fa, shallow=False)
        if fa != fb or mismatch or errors:
            failures.append(f"{name}: files {fa} vs {fb}, differing {mismatch + errors}")
        else:
            print(f"ok: {name}: {len(fa)} files identical across two runs ({time.time() - t0:.1f} s)")
for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)
