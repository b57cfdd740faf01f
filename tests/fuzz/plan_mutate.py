#!/usr/bin/env python3
"""Mutation harness for the plan applier (python/coldstart/plan.py).

Records a real plan (and its code archive) of a small program with the
planning bootstrap, then applies thousands of mutated copies, each in a new
interpreter: the plan's JSON edited member by member (wrong types, ranges,
offsets, names, paths, rows dropped or repeated) or byte by byte, and the
archive's bytes flipped, zeroed, cut or extended (its head part and the
plan's entry for it too, the rest of the plan as written, so that the
applier tries the head part).  Every run must print what
the program prints without a plan and end with status 0: an uncaught
exception, a traceback, a signal or another answer is a crash, kept in
WORKDIR/crashes/ with the plan and archive that caused it.

Usage: plan_mutate.py [--runs N] [--seed S] [--workdir DIR] [--python PY]
                      [--pydir DIR] [--jobs J]
Prints "inputs: N, crashes: K" last; exit status 1 when K > 0.
--pydir names the python/ directory whose coldstart package applies the
plans (default: this checkout's), to count the crashes of another checkout.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

PROGRAM = """\
import json, textwrap, email.parser, fractions
import pkg.a
from pkg.b import B
import sys
p = sys.modules.get("coldstart.plan")
pkg_vals = [pkg.a.A, B().n, pkg.c_value()]
print(json.dumps({"dedent": textwrap.dedent("  x"), "pkg": pkg_vals,
                  "frac": str(fractions.Fraction(1, 3)),
                  "msg": email.parser.Parser().parsestr("A: b\\n\\nbody")["A"]}))
"""
FILES = {
    "pkg/__init__.py": "def c_value():\n    from . import c\n    return c.C\n",
    "pkg/a.py": "A = 1\n",
    "pkg/b.py": "class B(object):\n    n = 2\n",
    "pkg/c.py": "import re\nC = re.compile('[a-z]+').findall('ab cd')\n",
}


def clean_env(pydir):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("COLDSTART") and k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.path.join(pydir, "coldstart", "_boot", "plan")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def setup(work, python, pydir):
    app = os.path.join(work, "app")
    os.makedirs(os.path.join(app, "pkg"), exist_ok=True)
    with open(os.path.join(app, "prog.py"), "w") as f:
        f.write(PROGRAM)
    for name, text in FILES.items():
        with open(os.path.join(app, name), "w") as f:
            f.write(text)
    plan = os.path.join(work, "base.json")
    env = clean_env(pydir)
    binary = os.path.join(ROOT, "coldstart")
    if os.access(binary, os.X_OK):
        # coldstart plan builds the _plancode extension: the plan then has
        # its string table and the archive's CRC-32Cs, checked with it.
        p = subprocess.run([binary, "plan", "-o", plan, "--", python,
                            "prog.py"], cwd=app, env=env,
                           capture_output=True, text=True, timeout=300)
    else:
        env["COLDSTART_PLAN_RECORD"] = plan
        p = subprocess.run([python, "prog.py"], cwd=app, env=env,
                           capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or not os.path.exists(plan):
        sys.exit("cannot record the base plan: %s" % (p.stdout + p.stderr))
    plain = subprocess.run([python, "prog.py"], cwd=app, env=clean_env(pydir),
                           capture_output=True, text=True, timeout=120)
    with open(plan, "rb") as f:
        text = f.read()
    with open(plan + ".code", "rb") as f:
        code = f.read()
    return app, plain.stdout, text, code


def rand_value(rng, depth=0):
    k = rng.randrange(14)
    if k == 0:
        return None
    if k == 1:
        return rng.choice([True, False])
    if k == 2:
        return rng.randrange(-3, 3)
    if k == 3:
        return rng.choice([2 ** 63, -2 ** 63, 2 ** 70, 10 ** 30, 1 << 31])
    if k == 4:
        return rng.random() * 1e6
    if k == 5:
        return rng.choice(["", "x", "/", "/etc/passwd", "..", "a..b", "1x",
                           "pkg.a", "\u00e9t\u00e9", "\ud800", "a\x00b",
                           "/dev/zero", "/proc/self/mem", "relative/p.py",
                           "*", "defer", "load", "eager", "source"])
    if k == 6 and depth < 3:
        return [rand_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    if k == 7 and depth < 3:
        return {"k%d" % i: rand_value(rng, depth + 1)
                for i in range(rng.randrange(3))}
    if k == 8:
        return "x" * rng.choice([1, 100, 5000])
    if k == 9:
        return [[]] * 3
    if k == 10:
        return rng.randrange(0, 1 << 24)
    if k == 11:
        return -rng.randrange(1, 1 << 40)
    if k == 12:
        return {"tuple": [rand_value(rng, 3)]}
    return [0, rng.randrange(1 << 20), rng.randrange(1 << 32)]


def paths(obj, prefix=()):
    """Every place in obj (a path of keys), the head members first."""
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            if prefix == () and k in ("modules", "summary", "preloaded"):
                continue
            out += paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:40]):
            out += paths(v, prefix + (i,))
    return out


def mutate_json(rng, plan):
    plan = json.loads(json.dumps(plan))
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        places = [p for p in paths(plan) if p]
        where = rng.choice(places)
        parent = plan
        for k in where[:-1]:
            parent = parent[k]
        key = where[-1]
        op = rng.randrange(6)
        if op == 0 and isinstance(parent, dict):
            del parent[key]
        elif op == 1 and isinstance(parent, list):
            parent.insert(key, parent[key])  # repeated row or field
        elif op == 2 and isinstance(parent, list):
            del parent[key]
        elif op == 3 and isinstance(parent[key], int) and \
                not isinstance(parent[key], bool):
            parent[key] += rng.choice([-1, 1, 1 << 20, -(1 << 20)])
        else:
            parent[key] = rand_value(rng)
    return json.dumps(plan).encode()


def mutate_bytes(rng, data, small=False):
    b = bytearray(data)
    op = rng.randrange(6)
    if op == 0 and b:
        for _ in range(rng.randrange(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif op == 1:
        del b[rng.randrange(len(b) + 1):]
    elif op == 2 and b:
        i = rng.randrange(len(b))
        b[i:i + rng.randrange(1, 64)] = bytes(rng.randrange(1, 64))
    elif op == 3:
        i = rng.randrange(len(b) + 1)
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 32)))
    elif op == 4 and b:
        i = rng.randrange(len(b))
        j = rng.randrange(len(b))
        b[i:i + 16] = b[j:j + 16]
    else:
        b += b[:rng.randrange(1, 256)]
    return bytes(b)


def mutate_head(rng, text, code):
    """The archive's head part (docs/plan.md, "The head part") damaged, or
    the plan's code.head entry edited in place, the rest of the plan file
    byte for byte as written: the applier must then read the plan as JSON
    (or use the part only when it is whole and the plan's)."""
    head = (json.loads(text).get("code") or {}).get("head")
    if not head or len(head) != 5:
        return text, mutate_bytes(rng, code), "archive bytes"
    if rng.random() < 0.5:
        off, n = head[0], head[1]
        return text, code[:off] + mutate_bytes(rng, code[off:off + n]) + \
            code[off + n:], "head part bytes"
    was = json.dumps(head, separators=(",", ":")).encode()
    new = list(head)
    i = rng.randrange(5)
    new[i] = rng.choice([0, 1, new[i] + 1, new[i] - 1, new[i] * 2, 1 << 31,
                         1 << 62, len(code), -1])
    return text.replace(was, json.dumps(new, separators=(",", ":")).encode()), \
        code, "code.head"


def case(rng, text, code):
    """(plan bytes, archive bytes, what was mutated)."""
    k = rng.randrange(11)
    if k == 10:
        return mutate_head(rng, text, code)
    if k == 9 and rng.random() < 0.5:
        return text, code, "none"
    if k < 5:
        return mutate_json(rng, json.loads(text)), code, "json"
    if k < 7:
        return mutate_bytes(rng, text), code, "plan bytes"
    if k < 9:
        return text, mutate_bytes(rng, code), "archive bytes"
    return mutate_json(rng, json.loads(text)), mutate_bytes(rng, code), "both"


def run_one(i, seed, work, app, python, pydir, text, code, want):
    rng = random.Random("%s-%d" % (seed, i))
    d = os.path.join(work, "run%d" % i)
    os.mkdir(d, 0o700)
    plan = os.path.join(d, "base.json")
    # The run's own archive, where the plan says.
    text = text.replace(json.dumps(os.path.join(work, "base.json.code")).encode(),
                        json.dumps(plan + ".code").encode())
    plan_b, code_b, what = case(rng, text, code)
    with open(plan, "wb") as f:
        f.write(plan_b)
    with open(plan + ".code", "wb") as f:
        f.write(code_b)
    env = clean_env(pydir)
    env["COLDSTART_PLAN"] = plan
    env["COLDSTART_PLAN_PROGRAM"] = "any"
    try:
        p = subprocess.run([python, "prog.py"], cwd=app, env=env,
                           capture_output=True, text=True, timeout=60,
                           errors="replace")
        bad = None
        if p.returncode < 0:
            bad = "signal %d" % -p.returncode
        elif p.returncode != 0:
            bad = "exit status %d" % p.returncode
        elif "Traceback" in p.stderr:
            bad = "a traceback"
        elif p.stdout != want:
            bad = "another answer"
        detail = p.stderr[-2000:]
    except subprocess.TimeoutExpired:
        bad, detail = "a hang", ""
    if bad is None:
        shutil.rmtree(d, ignore_errors=True)
        return None
    keep = os.path.join(work, "crashes", "case%d" % i)
    shutil.move(d, keep)
    return "case %d (%s): %s\n%s" % (i, what, bad, detail)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--seed", default="1")
    ap.add_argument("--workdir")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--pydir", default=os.path.join(ROOT, "python"))
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    own = a.workdir is None
    work = os.path.abspath(tempfile.mkdtemp(prefix="planfuzz",
                                            dir=a.workdir or None))
    os.makedirs(os.path.join(work, "crashes"), exist_ok=True)
    try:
        app, want, text, code = setup(work, a.python, a.pydir)
        with ThreadPoolExecutor(a.jobs) as ex:
            results = list(ex.map(
                lambda i: run_one(i, a.seed, work, app, a.python, a.pydir,
                                  text, code, want), range(a.runs)))
        crashes = [r for r in results if r]
        for r in crashes[:20]:
            print(r)
        print("inputs: %d, crashes: %d" % (a.runs, len(crashes)))
        if crashes:
            print("kept in %s" % os.path.join(work, "crashes"))
            own = False
        return 1 if crashes else 0
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
