#!/usr/bin/env python3
"""The one rule of direction in src/ (docs/design.md, "The map"), checked.

src/ is cut into stage folders whose order is the data flow; a file may use
what lives in its own folder or in a folder earlier in STAGES, never later.
A module is NAME.c with NAME.h (src/model/profile.[ch] is module
model/profile).  An edge A -> B is an include of one of B's headers in a file
of A, or, given --objects, a call from A's object to a function or variable
that B's object defines (read with nm from the build, so macros and inline
functions count where they expand).  The check fails on:

  - an edge that points up the stage order (an "upward edge");
  - a cycle of modules (a strongly connected set of two or more) that is
    not within one of TOLERATED, the known cycles still to cut;
  - an include of a header of src/ not written as its path from src/
    ("model/profile.h"), since the build has only -Isrc;
  - a file of src/ in a folder that STAGES does not name.

Usage: tests/check_layout.py [--objects build/obj] [--counts] [--edges]
  --counts  prints the figures even when the check passes
  --edges   lists every module edge, "A -> B  (include|call)"
Exit status 0 when the rule holds, 1 when not, 2 on bad usage.
Standard library only; nm (binutils) only with --objects.
"""
import argparse
import os
import re
import subprocess
import sys

# The stages, first (lowest) to last.  Folders on one line are one stage:
# side by side, they may not use each other at all, unless one is inside the
# other (render/export is part of render).
STAGES = [
    [""],  # src/ itself: util, args, json, datadir, exit codes, output paths
    ["elf"],  # reading ELF files: the interpreter, its libraries
    ["model"],  # the profile: its model, statistics, JSON read and write
    ["sys"],  # the machine: processes, cgroups, containers, readiness
    ["ingest"],  # from a run's raw records to a profile: traces, samples
    ["plan", "analysis"],  # what a profile says: findings, budgets, diffs; plans
    ["render", "render/export"],  # text reports, CI formats, exports
    ["session"],  # one measuring session: runs, measure, show
    ["cmd"],  # the commands (main.c and cmd_*.c)
]

# Cycles known and not cut yet (issue 26, item 2): reported, not failed.
# Each entry is the set of modules of one cycle (a cycle within it passes,
# one that reaches past it or a new one fails).  It only ever shrinks, and
# is empty now: every module cycle fails.
TOLERATED = []

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def stage_of(folder):
    for rank, names in enumerate(STAGES):
        if folder in names:
            return rank
    return None


def module_of(rel):
    return os.path.splitext(rel)[0]


def scan(src):
    files = []
    for root, dirs, names in os.walk(src):
        dirs.sort()
        for n in sorted(names):
            if n.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(root, n), src))
    return files


def tarjan(nodes, succ):
    """Strongly connected sets of two or more nodes, each sorted."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # iterative, so a long chain cannot exhaust the recursion limit
        work = [(v, iter(sorted(succ.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(succ.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(out)


def nm_symbols(path):
    res = subprocess.run(["nm", "--defined-only", "-g", path], capture_output=True, text=True)
    defined = {line.split()[-1] for line in res.stdout.splitlines() if len(line.split()) == 3}
    res = subprocess.run(["nm", "-u", path], capture_output=True, text=True)
    undefined = {line.split()[-1] for line in res.stdout.splitlines() if line.split()}
    return defined, undefined


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    ap.add_argument("--objects", help="the build's object folder (build/obj), for call edges")
    ap.add_argument("--counts", action="store_true")
    ap.add_argument("--edges", action="store_true")
    a = ap.parse_args()
    src = os.path.normpath(a.src)
    files = scan(src)
    present = set(files)
    by_base = {}
    for f in files:
        by_base.setdefault(os.path.basename(f), []).append(f)

    problems = []
    edges = {}  # (A, B) -> set of kinds
    modules = set()
    for f in files:
        folder = os.path.dirname(f)
        if stage_of(folder) is None:
            problems.append(f"src/{f}: folder '{folder}' is no stage of tests/check_layout.py")
        modules.add(module_of(f))
        with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            if inc in present:
                target = inc
            else:
                near = os.path.normpath(os.path.join(folder, inc))
                cands = [near] if near in present else by_base.get(os.path.basename(inc), [])
                if len(cands) != 1:
                    continue  # not ours (a system header in quotes) or ambiguous
                target = cands[0]
                if folder or "/" in target:
                    problems.append(f'src/{f}:{line}: #include "{inc}" should be "{target}"')
            if module_of(target) != module_of(f):
                edges.setdefault((module_of(f), module_of(target)), set()).add("include")

    if a.objects:
        defs, uses = {}, {}
        for f in files:
            if not f.endswith(".c"):
                continue
            obj = os.path.join(a.objects, os.path.splitext(f)[0] + ".o")
            if not os.path.exists(obj):
                problems.append(f"{obj}: missing (build first, or leave out --objects)")
                continue
            d, u = nm_symbols(obj)
            for s in d:
                defs.setdefault(s, module_of(f))
            uses[module_of(f)] = u
        for m, u in uses.items():
            for s in u:
                t = defs.get(s)
                if t and t != m:
                    edges.setdefault((m, t), set()).add("call")

    def rank(mod):
        return stage_of(os.path.dirname(mod))

    succ = {}
    for (x, y) in edges:
        succ.setdefault(x, set()).add(y)
    upward = []
    for (x, y), kinds in sorted(edges.items()):
        rx, ry = rank(x), rank(y)
        if rx is None or ry is None:
            continue
        if ry > rx or (ry == rx and os.path.dirname(x) != os.path.dirname(y) and
                       not (os.path.dirname(x).startswith(os.path.dirname(y) + "/") or
                            os.path.dirname(y).startswith(os.path.dirname(x) + "/"))):
            upward.append((x, y, kinds))
    cycles = tarjan(modules, succ)

    for x, y, kinds in upward:
        problems.append(f"upward edge: {x} -> {y} ({', '.join(sorted(kinds))}): "
                        f"'{os.path.dirname(y) or 'src'}' is not below '{os.path.dirname(x) or 'src'}'")
    tolerated = 0
    for c in cycles:
        ties = [f"{x} -> {y}" for (x, y) in sorted(edges) if x in c and y in c]
        line = f"module cycle of {len(c)}: {', '.join(c)}  [{'; '.join(ties)}]"
        if any(set(c) <= t for t in TOLERATED):
            tolerated += 1
            if a.counts:
                print("tolerated " + line)
        else:
            problems.append(line)

    if a.edges:
        for (x, y), kinds in sorted(edges.items()):
            print(f"{x} -> {y}  ({', '.join(sorted(kinds))})")
    for p in problems:
        print(p, file=sys.stderr)
    if a.counts or problems:
        n_inc = sum(1 for k in edges.values() if "include" in k)
        n_call = sum(1 for k in edges.values() if "call" in k)
        print(f"layout: {len(files)} files, {len(modules)} modules, {len(edges)} module edges "
              f"({n_inc} by include{', %d by call' % n_call if a.objects else ''}), "
              f"{len(upward)} upward, {len(cycles)} cycles "
              f"({sum(len(c) for c in cycles)} modules in them, {tolerated} tolerated)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
