"""Where a planned first call's CPU goes inside the interpreter: the plan
benchmark's function processes run under `perf record` with DWARF call
chains, and each cost centre of CPython below is given as the share of the
process's samples whose call chain passes through it (shares overlap: an
unmarshal inside a class statement counts in both).  Diagnostics for
docs/plan.md ("Where the floor's CPU goes"); not part of make bench.

usage: PYTHON=INTERP python3 bench/plan/where.py FUNC... [ROUNDS=N]
       [VARIANTS="cs-fdk+plan floor"]

INTERP must be a CPython 3.11 whose own functions have symbols (Debian's
python3.11 is stripped: its static functions, r_object and type_new among
them, have no names) and that imports the functions' packages, e.g. a
virtual environment of pyenv's 3.11 with a .pth file naming
/usr/lib/python3/dist-packages.  Plans are made with INTERP into
build/bench/plan-where/.  Needs perf and root (cgroup-free runs, no quota:
CPU time does not depend on it).  Samples after the first response has
arrived are left out.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import fnagent  # noqa: E402
import plan_bench  # noqa: E402

# name -> the symbols (exact, or a prefix ending in *) whose presence in a
# sample's call chain puts the sample in it.
CENTRES = [
    ("interpreter start (site included)", ["Py_InitializeFromConfig"]),
    ("class statements", ["builtin___build_class__"]),
    ("  type creation", ["type_new"]),
    ("    slot lookups (find_name_in_mro)", ["update_one_slot"]),
    ("unmarshal", ["r_object"]),
    ("  string interning", ["PyUnicode_InternInPlace"]),
    ("  code objects", ["_PyCode_New"]),
    ("regular expression matching", ["sre_*", "pattern_subx"]),
    ("extension modules: dlopen", ["_dl_open"]),
    ("extension modules: init", ["PyInit_*"]),
    ("function objects", ["PyFunction_NewWithQualName"]),
    ("cyclic collector", ["gc_collect_main"]),
    ("kernel: page faults", ["asm_exc_page_fault"]),
    ("kernel: system calls", ["entry_SYSCALL_64_after_hwframe"]),
]
OUT = os.path.join(plan_bench.ROOT, "build", "bench", "plan-where")


def _match(sym, pats):
    for p in pats:
        if p.endswith("*"):
            if sym.startswith(p[:-1]):
                return True
        elif sym == p:
            return True
    return False


def samples(data, until):
    """The call chains (lists of symbol names, leaf first) of perf.data's
    samples taken before until (time.monotonic()) in processes other than
    perf itself."""
    p = subprocess.run(["perf", "script", "-i", data, "-F",
                        "comm,time,ip,sym"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, universal_newlines=True)
    chains = []
    for block in p.stdout.split("\n\n"):
        lines = block.strip("\n").split("\n")
        if not lines or not lines[0].strip():
            continue
        head = lines[0].split()
        if head[0] == "perf" or float(head[1].rstrip(":")) > until:
            continue
        chain = []
        for line in lines[1:]:
            parts = line.split(None, 1)
            if len(parts) == 2:
                chain.append(re.sub(r"\+0x[0-9a-f]+$", "",
                                    parts[1].split(" (")[0]))
        chains.append(chain)
    return chains


def once(name, variant, tmp):
    argv, env = plan_bench.command(name, variant)
    data = os.path.join(tmp, "perf.data")
    # Sampled on the monotonic clock, so that what the process does after
    # its answer (a graceful exit at SIGTERM, say) is left out.
    rec = ["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-F", "10000",
           "--call-graph", "dwarf,16384", "-o", data, "--"]
    r = plan_bench.answer(name, rec + argv, env)
    if r["error"]:
        sys.exit("where: %s %s: %s" % (name, variant, r["error"]))
    return samples(data, r["first_at"])


def main():
    names = [a for a in sys.argv[1:] if not a.startswith("-")]
    if not names or "PYTHON" not in os.environ or os.geteuid() != 0:
        sys.exit(__doc__.split("\n\n")[1])
    if shutil.which("perf") is None:
        sys.exit("where: perf is not installed")
    rounds = int(os.environ.get("ROUNDS", "3"))
    variants = os.environ.get("VARIANTS", "cs-fdk+plan floor").split()
    plan_bench.OUT = OUT
    os.makedirs(OUT, exist_ok=True)
    print("share of each function process's samples (perf, 10 kHz, %d "
          "runs each, %s) whose call chain passes through:" % (
              rounds, plan_bench.PY))
    print("%-38s" % "" + "".join("%13s" % ("%s %s" % (n[:6], v[-5:]))
                                 for n in names for v in variants))
    cols = []
    for n in names:
        if not plan_bench.make_plan(n):
            sys.exit(1)
        plan_bench.FLOOR_KEEP[n] = plan_bench.floor_keep(n)
        for v in variants:
            chains = []
            for _ in range(rounds):
                tmp = tempfile.mkdtemp(prefix="coldstart-where-")
                try:
                    chains += once(n, v, tmp)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
            if not any("r_object" in c for c in chains):
                sys.exit("where: no sample names r_object: %s has no "
                         "symbols for its own functions (see usage)"
                         % plan_bench.PY)
            cols.append(chains)
    for label, pats in CENTRES:
        row = "%-38s" % label
        for chains in cols:
            hit = sum(1 for c in chains if any(_match(s, pats) for s in c))
            row += "%12.1f%%" % (100.0 * hit / len(chains))
        print(row)
    print("%-38s" % "samples (0.1 ms each)" + "".join(
        "%13d" % len(c) for c in cols))


if __name__ == "__main__":
    fnagent.interrupt_on_term()
    main()
