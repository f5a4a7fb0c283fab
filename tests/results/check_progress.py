#!/usr/bin/env python3
"""The progress line of `rdmasim study` (issue: long runs say where they are).

Usage: check_progress.py RDMASIM STUDY
With RDMASIM_PROGRESS_AFTER=0 (the line's one-second delay set to none, so a short study
shows it): on a pseudo-terminal stderr gets the line ("sim ... | ... events/s | flows N/M |
..."), rewritten in place with "\\r" and erase-to-end-of-line, and cleared at the end; with
stderr a pipe, or with --quiet on the terminal, no such line.
"""
import os, pty, subprocess, sys, tempfile

rdmasim, study = sys.argv[1:3]
env = dict(os.environ, RDMASIM_PROGRESS_AFTER="0")
failures = []


def bad(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run_on_pty(extra):
    master, slave = pty.openpty()
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.Popen([rdmasim, "study", study, "--out", out, *extra], stdout=subprocess.PIPE,
                             stderr=slave, env=env)
        os.close(slave)
        err = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:   # EIO once the child closed the terminal
                break
            if not chunk:
                break
            err += chunk
        stdout = p.stdout.read()
        p.wait(timeout=300)
        os.close(master)
    return p.returncode, stdout.decode(), err.decode(errors="replace")


rc, out, err = run_on_pty([])
lines = [s for s in err.split("\r") if "events/s" in s]
if rc != 0:
    bad(f"study exited {rc}: {err}")
elif not lines:
    bad(f"no progress line on the terminal: {err!r}")
else:
    last = lines[-1]
    for part in ("sim ", " events/s", "flows ", "left"):
        if part not in last:
            bad(f"the progress line lacks {part!r}: {last!r}")
    if "\x1b[K" not in err or not err.rstrip("\n").endswith("\r\x1b[K"):
        bad(f"the line is not erased in place and cleared at the end: {err[-80:]!r}")
    if "flows:" not in out:
        bad("stdout lost its summary")
    print(f"ok: {len(lines)} progress lines on the terminal, last {last.strip()!r}, cleared at the end")

with tempfile.TemporaryDirectory() as o:
    p = subprocess.run([rdmasim, "study", study, "--out", o], capture_output=True, text=True, env=env, timeout=300)
if p.returncode != 0 or "events/s" in p.stderr or "\r" in p.stderr:
    bad(f"stderr a pipe: exit {p.returncode}, stderr {p.stderr[:200]!r}")
else:
    print("ok: no progress line when stderr is a pipe")

rc, out, err = run_on_pty(["--quiet"])
if rc != 0 or "events/s" in err or out.strip():
    bad(f"--quiet on a terminal: exit {rc}, stderr {err[:200]!r}, stdout {out[:200]!r}")
else:
    print("ok: --quiet prints nothing on the terminal")
print(f"{len(failures)} failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)
