#!/usr/bin/env python3
"""Fails when a sim/ library holds writable static data: the rule that sim/ has no globals.

Usage: check_globals.py [--expect NAME,...] NM CXXFILT ARCHIVE_OR_OBJECT...

Flagged: every defined data symbol in a writable section (.bss, .data and .data.* other
than .data.rel.ro*, .tbss, .tdata, and common symbols), at namespace scope, class scope
(static members) or function scope (function-local statics): each is state that every
Engine in the process shares, so two simulations in one process would see each other.
Const data lives in .rodata / .data.rel.ro and is not flagged; a const object that needs a
dynamic initializer sits in .bss and is flagged too, unless listed in ALLOWED with why.
Not flagged: what the compiler makes for itself (guard variables of function-local
statics, vtables, typeinfo, the DW.ref personality pointer).

With --expect, the check passes only when exactly the named (demangled) symbols are
flagged: the test that shows the check catches what it should.
"""
import subprocess
import sys

# Demangled name -> why it is not a global in the sense of the rule.
ALLOWED = {
    "rdmasim::topo::default_fabric_config[abi:cxx11]()::config":
        "a static const nlohmann::json parsed once behind its guard and never written "
        "(json has no constexpr constructor)",
}

COMPILER_MADE = ("_ZGV", "_ZTV", "_ZTI", "_ZTS", "DW.ref.")


def writable(section):
    if section == "*COM*":
        return True
    if section.startswith((".bss", ".tbss", ".tdata")):
        return True
    return section.startswith(".data") and not section.startswith(".data.rel.ro")


def flagged_symbols(nm, files):
    out = subprocess.run([nm, "-f", "sysv", "--defined-only", *files], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < 7 or fields[3] not in ("OBJECT", "TLS"):
            continue
        name, section = fields[0], fields[6]
        if writable(section) and not name.startswith(COMPILER_MADE):
            names.add(name)
    return names


def main(argv):
    expect = None
    if argv[:1] == ["--expect"]:
        expect = set(argv[1].split(","))
        argv = argv[2:]
    nm, cxxfilt, files = argv[0], argv[1], argv[2:]
    mangled = sorted(flagged_symbols(nm, files))
    demangled = subprocess.run([cxxfilt], input="\n".join(mangled), check=True,
                               capture_output=True, text=True).stdout.split("\n")[:len(mangled)]
    found = {d for d in demangled if d not in ALLOWED}
    if expect is not None:
        if found != expect:
            print("expected flagged:", sorted(expect))
            print("flagged:         ", sorted(found))
            return 1
        print("flagged exactly the expected symbols:", ", ".join(sorted(found)))
        return 0
    for d in sorted(found):
        print("writable static data (a global):", d)
    if not found:
        print(f"no writable static data in {len(files)} file(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
