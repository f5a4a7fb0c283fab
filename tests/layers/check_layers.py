#!/usr/bin/env python3
"""Shows that the sim/ layers are enforced by the build (sim/meson.build).

Usage: check_layers.py BUILD_DIR TREE_DIR CXX [CXX_ARGS...]

1. Each sim/<layer>/*.cpp in the real build (compile_commands.json) is compiled with its
   layer's include tree (TREE_DIR/<layer>) and no other include directory that holds a
   sim/ folder (the source root, the build root), so nothing but the tree can satisfy
   an #include "sim/...".
2. In each layer's tree a file including one of that layer's headers compiles, and one
   including a header of the layer above fails with "No such file": an upward include
   does not build. The positive case shows the failures are for that reason alone.
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

LAYERS = ["core", "net", "host", "nic", "topo", "trace"]  # bottom to top
HEADER = {"core": "sim/core/time.h", "net": "sim/net/packet.h", "host": "sim/host/pcie.h", "nic": "sim/nic/types.h",
          "topo": "sim/topo/fabric.h", "trace": "sim/trace/encode.h"}


def include_dirs(args, cwd):
    dirs = []
    for i, a in enumerate(args):
        for flag in ("-I", "-isystem", "-iquote"):
            if a == flag and i + 1 < len(args):
                dirs.append(args[i + 1])
            elif a.startswith(flag) and len(a) > len(flag):
                dirs.append(a[len(flag):])
    return [os.path.normpath(os.path.join(cwd, d)) for d in dirs]


def check_build_graph(build_dir, tree_dir):
    errors, seen = [], {layer: 0 for layer in LAYERS}
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        commands = json.load(f)
    for c in commands:
        src = os.path.normpath(os.path.join(c["directory"], c["file"]))
        parts = src.split(os.sep)
        if len(parts) < 3 or parts[-3] != "sim" or parts[-2] not in LAYERS:
            continue
        layer = parts[-2]
        seen[layer] += 1
        args = c.get("arguments") or shlex.split(c["command"])
        tree = os.path.normpath(os.path.join(tree_dir, layer))
        dirs = include_dirs(args, c["directory"])
        if tree not in dirs:
            errors.append(f"{src}: not compiled with its layer tree {tree}")
        for d in dirs:
            if d != tree and os.path.isdir(os.path.join(d, "sim")):
                errors.append(f"{src}: include directory {d} exposes all of sim/")
    for layer, n in seen.items():
        if n == 0:
            errors.append(f"no source of sim/{layer} in compile_commands.json")
    return errors


def compiles(cxx, tree, header):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.cpp")
        with open(src, "w") as f:
            f.write(f'#include "{header}"\n')
        r = subprocess.run([*cxx, "-fsyntax-only", "-I", tree, src],
                           capture_output=True, text=True)
        return r.returncode == 0, r.stderr


def check_trees(tree_dir, cxx):
    errors = []
    for i, layer in enumerate(LAYERS):
        tree = os.path.join(tree_dir, layer)
        ok, err = compiles(cxx, tree, HEADER[layer])
        if not ok:
            errors.append(f"{layer}: its own {HEADER[layer]} does not compile:\n{err}")
        if i + 1 < len(LAYERS):
            up = HEADER[LAYERS[i + 1]]
            ok, err = compiles(cxx, tree, up)
            if ok:
                errors.append(f"{layer}: the upward include {up} compiled")
            elif "No such file" not in err or up not in err:
                errors.append(f"{layer}: {up} failed for another reason:\n{err}")
            else:
                print(f"{layer}: #include \"{up}\" fails: No such file (as it must)")
    return errors


def main(argv):
    build_dir, tree_dir, cxx = argv[0], argv[1], argv[2:]
    errors = check_build_graph(build_dir, tree_dir) + check_trees(tree_dir, cxx)
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
