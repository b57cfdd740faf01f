"""Profiles for the export, diff and check tests.

Two sources: real `-X importtime` output from a real interpreter (parsed here,
so these tests do not depend on `coldstart parse`), and synthetic trees of any
size with exact, known times.  Both are written in coldstart's profile JSON
(docs/profile-format.md), plain or gzip.
"""
import gzip
import json
import random
import re
import subprocess

ROW = re.compile(r"import time:\s*(-?\d+)\s*\|\s*(-?\d+)\s*\|( *)(\S.*)$")
STARTUP_NAMES = {"encodings", "site", "sitecustomize", "usercustomize", "_distutils_hack"}


class Node:
    def __init__(self, name, self_us, cum_us=None, kind="app", children=None, timing=None):
        self.name = name
        self.self_us = self_us
        self.children = children or []
        self.cum_us = cum_us if cum_us is not None else self_us + sum(c.cum_us for c in self.children)
        self.kind = kind
        self.timing = timing  # (start_ns, end_ns) or None


def parse_importtime(text):
    """Rows are post-order: a row's children are the deeper rows just before it."""
    stack = []  # (depth, Node)
    for line in text.splitlines():
        m = ROW.search(line)
        if not m:
            continue
        self_us, cum_us, indent, name = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4).strip()
        depth = (len(indent) - 1) // 2
        children = []
        while stack and stack[-1][0] > depth:
            children.insert(0, stack.pop()[1])
        stack.append((depth, Node(name, self_us, cum_us, "stdlib", children)))
    roots = [n for _, n in stack]
    seen_site = False
    for r in roots:
        if not seen_site:
            mark(r, "startup")
        if r.name == "site":
            seen_site = True
    return roots


def mark(node, kind):
    node.kind = kind
    for c in node.children:
        mark(c, kind)


def real_roots(python, code="import json, email.parser, asyncio"):
    out = subprocess.run([python, "-X", "importtime", "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    roots = parse_importtime(out.stderr)
    assert roots, "no importtime rows from %s" % python
    return roots


def synthetic_roots(n_modules, seed=1, planted=None, jitter=None, fanout=6):
    """A deterministic tree of n_modules nodes.

    planted: {name: extra_self_us}; jitter: (rng, max_us) adds noise to every self.
    Names are pkgK.subJ... so that search and zoom have structure to work on.
    """
    rng = random.Random(seed)
    planted = planted or {}
    made = [0]

    def build(parent_name, depth):
        nodes = []
        for i in range(fanout if depth < 2 else 3):
            if made[0] >= n_modules:
                break
            made[0] += 1
            name = "%s.m%d" % (parent_name, i) if parent_name else "pkg%d" % made[0]
            self_us = rng.randint(20, 400)
            if jitter:
                self_us += jitter[0].randint(0, jitter[1])
            self_us += planted.get(name, 0)
            kids = build(name, depth + 1) if depth < 5 and rng.random() < 0.7 else []
            kind = ("stdlib", "thirdparty", "app")[made[0] % 3]
            nodes.append(Node(name, self_us, None, kind, kids))
        return nodes

    roots = []
    while made[0] < n_modules:
        roots.extend(build("", 0))
    mark(roots[0], "startup")
    for name, extra in planted.items():
        if not find(roots, name):
            roots.append(Node(name, extra, None, "app"))
    return roots


def find(roots, name):
    for r in walk(roots):
        if r.name == name:
            return r
    return None


def walk(roots):
    for r in roots:
        yield r
        yield from walk(r.children)


def add_timing(roots, gap_ns=5000):
    """Real-looking tracer timestamps: children in order inside their parent."""
    t = [1000]

    def lay(node):
        start = t[0]
        t[0] += gap_ns
        for c in node.children:
            lay(c)
        t[0] = max(t[0], start + node.cum_us * 1000)
        node.timing = (start, t[0])
        t[0] += gap_ns
    for r in roots:
        lay(r)
    return roots


def proc_json(roots, pid=1000, argv="python3 app.py"):
    nodes, timing = [], []
    has_timing = any(n.timing for n in walk(roots))

    def emit(node, depth, parent):
        idx = len(nodes)
        nodes.append([node.name, depth, parent, node.self_us, node.cum_us, 0, node.kind])
        t = node.timing or (-1, -1)
        timing.append([t[0], t[1], -1, -1, -1, -1, -1, -1, None])
        for c in node.children:
            emit(c, depth + 1, idx)
    for r in roots:
        emit(r, 0, -1)
    p = {"pid": pid, "ppid": 1, "argv": argv, "start_ns": 10**9 if has_timing else -1,
         "end_ns": -1, "nodes": nodes}
    if has_timing:
        p["timing"] = timing
    return p


def profile_json(runs, target=("app.py",), python_version="3.11.2", findings=()):
    """runs: list of lists of process root lists, or of (roots, wall_us)."""
    out_runs = []
    for run in runs:
        wall = None
        if isinstance(run, tuple):
            run, wall = run
        procs = [proc_json(roots, pid=1000 + i, argv="python3 " + " ".join(target) if i == 0 else
                           "python3 -c child%d" % i) for i, roots in enumerate(run)]
        total = sum(r.cum_us for r in run[0]) if run else 0
        out_runs.append({"status": "exited", "exit_code": 0, "signal": 0, "warmup": False,
                         "wall_us": wall if wall is not None else total + 15000, "user_us": -1,
                         "sys_us": -1, "maxrss_kb": 9000, "ready_us": -1, "first_response_us": -1,
                         "cgroup": None, "processes": procs})
    return {"format": "coldstart-profile", "version": 1, "tool_version": "test",
            "created": "2026-01-01T00:00:00Z", "command": "profile", "python": "/usr/bin/python3",
            "python_version": python_version, "cwd": "/tmp", "target": list(target),
            "limits": {"cpus": 0, "memory": 0, "swap": -1, "pids": 0, "cpuset": None, "preset": None,
                       "backend": None},
            "runs": out_runs, "warnings": [], "findings": list(findings)}


def write(path, doc):
    data = json.dumps(doc).encode()
    if str(path).endswith(".gz"):
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)
    return str(path)


def read_output(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode()
