#!/usr/bin/env python3
"""Writes a C++ source defining one text file's contents as a const char array.

usage: embed_text.py INPUT OUTPUT NAMESPACE NAME

The array is `extern const char NAME[]` in NAMESPACE, the file's bytes as a raw string
literal (so the file stays the single source; the build regenerates OUTPUT when it changes).
"""
import os
import sys

DELIM = "rdmasim_embed"


def main():
    src, out, namespace, name = sys.argv[1:5]
    with open(src, encoding="utf-8") as f:
        text = f.read()
    if ")" + DELIM + '"' in text:
        sys.exit(f"{src}: contains the raw-string delimiter ){DELIM}\"")
    with open(out, "w", encoding="utf-8") as f:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        shown = os.path.relpath(os.path.abspath(src), root)
        f.write(f"// Generated from {shown} by scripts/embed_text.py: edit that file, not this one.\n")
        f.write(f"namespace {namespace} {{\n")
        f.write(f"extern const char {name}[];\n")
        f.write(f'const char {name}[] = R"{DELIM}({text}){DELIM}";\n')
        f.write(f"}}  // namespace {namespace}\n")


if __name__ == "__main__":
    main()
