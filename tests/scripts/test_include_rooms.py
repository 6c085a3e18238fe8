#!/usr/bin/env python3
"""Arrows point down only (docs/architecture.md): every #include "..." of a project source names a
file in its own room or a room below it, and no two headers include each other. The rooms, lowest
first: harness/'s ground, its wings check/ split/ sweep/, results/, run/; kernels/device/,
kernels/runtime/, the kernel families (kernels/<family>/: mma, amd, scalar; side by side, so no
family includes another's files); reference/; paths/; gate/ and fit/; cli/. include/ (the plugin
ABI) is below everything. Usage: test_include_rooms.py [REPO_ROOT]  (exit 1 naming each violation)."""
import os
import re
import subprocess
import sys

# (prefix, rank): the longest matching prefix names a file's room.
ROOMS = [
    ("include/", 0),
    ("harness/", 1),
    ("harness/check/", 2), ("harness/split/", 2), ("harness/sweep/", 2),
    ("harness/results/", 3),
    ("harness/run/", 4),
    ("kernels/device/", 5),
    ("kernels/runtime/", 6),
    ("kernels/", 7),
    ("reference/", 7),
    ("paths/", 8),
    ("gate/", 9), ("fit/", 9),
    ("cli/", 10),
]
SOURCE = re.compile(r"\.(c|h|cc|cpp|hpp|hip|cuh|cu)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room(path):
    best = None
    for prefix, rank in ROOMS:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, rank)
    return best


def family(path):
    """kernels/<family>/...: the family's name, or None (device/ and runtime/ are shared rooms)."""
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == "kernels" and parts[1] not in ("device", "runtime"):
        return parts[1]
    return None


def check(root):
    files = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    files = [f for f in files if SOURCE.search(f) and room(f)]
    problems, includes = [], {}
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            target = inc if os.path.exists(os.path.join(root, inc)) else (
                "include/" + inc if os.path.exists(os.path.join(root, "include", inc)) else None)
            if target is None:
                continue  # generated or relative to the including file (tests' helpers): not a room's
            includes.setdefault(f, set()).add(target)
            a, b = room(f), room(target)
            line = text.count("\n", 0, m.start()) + 1
            if b and b[1] > a[1]:
                problems.append(f"{f}:{line}: includes {target} from {b[0]}, a room above {a[0]}")
            elif family(f) and family(target) and family(f) != family(target):
                problems.append(f"{f}:{line}: includes {target}, a file of the {family(target)} family")
    for f, incs in includes.items():
        for g in incs:
            if f < g and f in includes.get(g, ()) and f.endswith((".hpp", ".h")) and g.endswith((".hpp", ".h")):
                problems.append(f"{f} and {g} include each other")
    return problems, len(files)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    problems, n = check(os.path.abspath(root))
    for p in problems:
        print(p)
    if problems:
        print(f"test_include_rooms: {len(problems)} include(s) point up, into another family or in a circle ({n} files read)")
        return 1
    print(f"test_include_rooms: {n} files, every include points down or across")
    return 0


if __name__ == "__main__":
    sys.exit(main())
