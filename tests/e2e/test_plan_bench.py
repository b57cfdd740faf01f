"""The plan benchmark's own machinery (bench/fnagent.py, bench/plan_bench.py):
the CPU time to the first response is the cgroup's (every process of the
function, children included), its groups are gone afterwards, and the SET
switch refuses what it does not know.

The agent's groups are cgroup v1 cpu, cpuacct and memory groups; the tests
that make them need root and those hierarchies and skip with the reason
otherwise.
"""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import DEBIAN_PYTHON, ROOT

BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)
import fnagent  # noqa: E402


def _reason():
    if os.geteuid() != 0:
        return "needs root to create cgroup v1 groups"
    for c in ("cpu", "cpuacct", "memory"):
        if not os.path.isdir(os.path.join(fnagent.CG_ROOT, c)):
            return "no cgroup v1 %s hierarchy under %s" % (c, fnagent.CG_ROOT)
    return None


REASON = _reason()
needs_v1 = pytest.mark.skipif(REASON is not None, reason=str(REASON))

# A function process that burns CPU in a child it waits for, then listens
# on FN_LISTENER (through the lsnr.sock symlink, as Fn's agent expects) and
# answers one request.  The child's CPU is the function's as well.
SERVER = textwrap.dedent(r"""
    import os, socket, time
    path = os.environ["FN_LISTENER"][len("unix:"):]
    pid = os.fork()
    if pid == 0:
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
    real = os.path.join(os.path.dirname(path), "phony.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(real)
    s.listen(1)
    os.symlink("phony.sock", path)
    c, _ = s.accept()
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += c.recv(65536)
    c.sendall(b"HTTP/1.1 200 OK\r\nFn-Http-Status: 200\r\n"
              b"Content-Length: 2\r\n\r\nok")
    time.sleep(30)
""")


def _groups():
    out = []
    for c in ("cpu", "cpuacct", "memory"):
        d = os.path.join(fnagent.CG_ROOT, c)
        out += [os.path.join(d, n) for n in os.listdir(d)
                if n.startswith("coldstart-planbench-%d-" % os.getpid())]
    return out


@needs_v1
def test_first_response_cpu_counts_the_children_and_groups_go():
    before = time.monotonic()
    r = fnagent.run([DEBIAN_PYTHON, "-c", SERVER], dict(os.environ), [b"{}"],
                    cpus=1.0, memory=256 << 20)
    after = time.monotonic()
    assert r["error"] is None, r
    # The answer's monotonic time (bench/plan/where.py cuts its samples
    # there) comes after the child's 300 ms and before the run's end.
    assert before + 0.3 <= r["first_at"] <= after, (before, r, after)
    assert r["responses"] == [(200, b"ok")]
    # The main process's own count misses the child's 300 ms; the group's
    # has them.
    assert r["first_cpu_ms"] < 250, r
    assert r["first_cg_cpu_ms"] >= 300, r
    assert r["first_cg_cpu_ms"] >= r["first_cpu_ms"] + 250, r
    assert _groups() == []


@needs_v1
def test_groups_go_when_the_function_exits_before_ready():
    r = fnagent.run([DEBIAN_PYTHON, "-c", "raise SystemExit(4)"],
                    dict(os.environ), [b"{}"], cpus=1.0, memory=256 << 20)
    assert r["error"] == "exited with 4 before ready"
    assert r["first_cg_cpu_ms"] is None
    assert _groups() == []


@pytest.mark.parametrize("env, message", [
    ({"SET": "3"}, "plan_bench: SET=3: expected 1, 2 or all"),
    ({"SET": "2", "FUNCS": "numpy"},
     "plan_bench: unknown functions numpy; known in set 2: lxml yaml "
     "crypto networkx docutils pygments"),
])
def test_set_switch_refuses_what_it_does_not_know(env, message):
    if REASON is not None:
        pytest.skip(REASON)
    import plan_bench
    if not os.path.isdir(plan_bench.FDK_PYTHON):
        pytest.skip("fdk-python not found at %s" % plan_bench.FDK_PYTHON)
    p = subprocess.run([DEBIAN_PYTHON, os.path.join(BENCH, "plan_bench.py")],
                       env=dict(os.environ, **env), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2, p
    assert p.stderr.strip() == message


def test_every_function_of_both_sets_has_its_files():
    import plan_bench
    assert len(plan_bench.SETS["2"]) >= 6
    assert not set(plan_bench.SETS["1"]) & set(plan_bench.SETS["2"])
    for n in plan_bench.ALL:
        d = plan_bench.fn_dir(n)
        assert os.path.isfile(os.path.join(d, "func.py")), d
        assert os.path.isfile(os.path.join(d, "request.json")), d


def test_a_goal_missed_by_less_than_the_rounding_does_not_read_as_reached():
    import plan_bench
    assert plan_bench._met(2.497, 2.5) == "NOT met (2.497)"
    assert plan_bench._met(2.5, 2.5) == "met (2.50)"
    assert plan_bench._met(2.61, 2.5) == "met (2.61)"
    assert plan_bench._met(1.304, 1.3, most=True) == "NOT met (1.304)"
    assert plan_bench._met(0.99, 1.0, most=True) == "met (0.99)"
    assert plan_bench._met(None, 2.5) == "NOT met (-)"


# plan_bench's main() with make_plan failing for the functions named in
# NOPLAN, as a missing package or a refused plan makes it fail.
NO_PLAN_DRIVER = textwrap.dedent(r"""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    import plan_bench
    made = plan_bench.make_plan
    plan_bench.make_plan = lambda n, root=None: (
        n not in os.environ["NOPLAN"].split() and made(n, root))
    plan_bench.main()
""")


def _bench_without_plans(env):
    """plan_bench's output (stdout) with env, through NO_PLAN_DRIVER."""
    if REASON is not None:
        pytest.skip(REASON)
    import plan_bench
    if not os.path.isdir(plan_bench.FDK_PYTHON):
        pytest.skip("fdk-python not found at %s" % plan_bench.FDK_PYTHON)
    p = subprocess.run([DEBIAN_PYTHON, "-c", NO_PLAN_DRIVER, BENCH],
                       env=dict(os.environ, ROUNDS="1", **env),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p
    return p.stdout


def test_a_set_without_plans_is_not_met():
    out = _bench_without_plans({"SET": "2", "FUNCS": "yaml crypto",
                                "NOPLAN": "yaml crypto"})
    assert out.strip() == (
        "Set 2 (packages set 1 does not use, never tuned for): no function "
        "has a plan (see the errors above); goals NOT met"), out


def test_a_function_without_a_plan_is_named_and_the_goals_not_met():
    out = _bench_without_plans({"SET": "1", "FUNCS": "requests jinja2",
                                "NOPLAN": "jinja2"})
    lines = out.splitlines()
    assert [ln.split()[0] for ln in lines if ln.startswith(
        ("requests", "jinja2"))] == ["requests", "requests"], out
    assert "no plan, left out of the table: jinja2 (see the errors above)" \
        in lines, out
    goals = [ln for ln in lines if ln.startswith("goals, set 1 ")]
    assert len(goals) == 1 and ("NOT met, 1 of 2 functions without a plan; "
                                "of the rest: fdk-python/plan") in goals[0], \
        out
