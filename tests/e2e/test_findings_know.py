"""Findings that know what they look at (issue 27, item 6): a failure counted
once and in CPU under a CPU limit, no advice about modules the user's code
never imported, nothing "heavy" that was only waiting for a CPU.  Every test
runs the real interpreter through the binary."""
import json
import subprocess

import pytest

from conftest import DEBIAN_PYTHON, write

# A module that fails after 20 ms of CPU and 0.4 s asleep: its wall time is
# not what it costs under a CPU limit.
SLOWFAIL = """\
import time
t = time.thread_time()
while time.thread_time() - t < 0.02:
    pass
time.sleep(0.4)
raise ImportError("slowfail is optional")
"""

# The user's code: a nested failing chain (org > org.python > org.python.core,
# as copy.py probes for Jython) and a failing optional dependency.
FAILING_APP = """\
try:
    import org.python.core
except ImportError:
    pass
try:
    import slowfail
except ImportError:
    pass
"""


def profile_json(coldstart, cwd, *args):
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--json", *args, cwd=cwd)
    if r.returncode == 3:
        pytest.skip("cgroup limits unavailable here: %s" % r.stderr.strip()[-200:])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def findings(prof, fid):
    return [f for f in prof["findings"] if f["id"] == fid]


def test_failed_import_chain_counts_once(coldstart, workdir):
    """import org.python.core with no org fails three times over in the
    trace; it is one failure the user wrote, named as written."""
    write(workdir, "slowfail.py", SLOWFAIL)
    write(workdir, "app.py", FAILING_APP)
    prof = profile_json(coldstart, workdir, "app.py")
    (f,) = findings(prof, "failed-imports")
    assert f["title"] == "2 failed imports cost time at start-up", f
    assert f["evidence"].startswith("'org.python.core', 'slowfail' raised"), f["evidence"]
    assert "'org'" not in f["evidence"] and "'org.python'" not in f["evidence"]
    # Without a limit the cost is the wall time of the two outermost failures (the sleep included).
    assert f["cost_us"] >= 400000, f


def test_failed_import_cost_is_cpu_under_a_cpu_limit(coldstart, workdir):
    """Under --cpus the cost is the importing thread's CPU time (about 20
    ms), not the 0.4 s the module slept or a throttle that landed inside."""
    write(workdir, "slowfail.py", SLOWFAIL)
    write(workdir, "app.py", FAILING_APP)
    prof = profile_json(coldstart, workdir, "--cpus", "0.5", "--no-baseline", "app.py")
    (f,) = findings(prof, "failed-imports")
    assert "of CPU" in f["evidence"], f["evidence"]
    assert 15000 <= f["cost_us"] < 200000, f


MP_APP = """\
import multiprocessing as mp


def double(x):
    return x * 2


if __name__ == "__main__":
    for method in ("spawn", "forkserver"):
        with mp.get_context(method).Pool(1) as pool:
            print(pool.map(double, [1, 2]))
"""


def roots(proc):
    return [n[0] for n in proc["nodes"] if n[2] == -1]


def test_no_import_later_advice_for_multiprocessing_machinery(coldstart, workdir):
    """multiprocessing loads its start method's parts itself (popen_spawn_posix,
    pool, spawn in a spawned child) and spawn's prepare() brings pkgutil into
    a forkserver's child: the user's code never imported them, so no
    heavy-import finding tells the user to import them later."""
    write(workdir, "mp_app.py", MP_APP)
    prof = profile_json(coldstart, workdir, "mp_app.py")
    procs = prof["runs"][0]["processes"]
    # The machinery is there to be judged: a spawned child's outermost import.
    assert any("multiprocessing.spawn" in roots(pr) for pr in procs if pr["role"] == "worker"), \
        [(pr["role"], roots(pr)) for pr in procs]
    machinery = [f for f in findings(prof, "heavy-import")
                 if f["module"].startswith("multiprocessing.") or f["module"] in ("pkgutil", "runpy")]
    assert not machinery, [(f["title"], f["fix"]) for f in machinery]


RETRY_APP = """\
for _ in range(2):
    try:
        import org.python.core
    except ImportError:
        pass
for _ in range(2):
    try:
        import nosuch_optional
    except ImportError:
        pass
import busy
"""

# 30 ms of wall time at import, whatever the machine: a heavy-import finding.
BUSY = """import time
t = time.perf_counter()
while time.perf_counter() - t < 0.03:
    pass
"""


def test_parse_retried_failed_chain_is_one_process(coldstart, workdir):
    """One process's -X importtime log where `import org.python.core`
    (a chain of three failed rows) is tried twice: parse neither calls the
    tree "mixed rows" nor loses its findings."""
    app = write(workdir, "retry_app.py", RETRY_APP)
    write(workdir, "busy.py", BUSY)
    log = subprocess.run([DEBIAN_PYTHON, "-X", "importtime", app], capture_output=True, text=True,
                         timeout=60, check=True, cwd=workdir).stderr
    assert log.count("| org.python.core") == 2, log
    path = write(workdir, "retry.log", log)
    r = coldstart("parse", path, "-o", "-")
    assert r.returncode == 0, r.stderr
    prof = json.loads(r.stdout)
    (proc,) = prof["runs"][0]["processes"]
    assert not proc.get("mixed"), prof["warnings"]
    assert not [w for w in prof["warnings"] if "more than once" in w], prof["warnings"]
    assert [f["module"] for f in findings(prof, "heavy-import")] == ["busy"], prof["findings"]
    r = coldstart("parse", path)
    assert r.returncode == 0 and "mixed rows" not in r.stdout, r.stdout
    assert "[heavy-import] 'busy'" in r.stdout, r.stdout
