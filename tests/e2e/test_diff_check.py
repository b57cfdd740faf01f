"""coldstart diff and coldstart check: exit codes and verdicts.

Noise is modelled two ways: synthetic runs with known jitter and outliers
(deterministic, so "ignores noise" can be asserted exactly), and real
repeated runs of real interpreters through `coldstart profile -n`, where a
module that sleeps 20 ms is planted.
"""
import json
import os
import random
import re
import xml.etree.ElementTree as ET

import pytest

import export_profiles as ep

SVG = "{http://www.w3.org/2000/svg}"


def noisy_runs(n_runs, seed, planted=None, spike=None, n_modules=300):
    """Runs of one app: every module's self time jitters by up to 3 ms per run.

    spike: (run index, module, extra us) plants a one-off outlier.
    """
    rng = random.Random(seed)
    runs = []
    for i in range(n_runs):
        extra = dict(planted or {})
        if spike and spike[0] == i:
            extra[spike[1]] = extra.get(spike[1], 0) + spike[2]
        roots = ep.synthetic_roots(n_modules, seed=1, planted=extra, jitter=(rng, 3000))
        runs.append([roots])
    return runs


def flagged(stdout, heading):
    m = re.search(r"^%s \(\d+\):\n((?:  .*\n)+)" % re.escape(heading), stdout, re.M)
    if not m:
        return []
    names = []
    for line in m.group(1).splitlines():
        row = re.match(r"^\s+[+-]?[\d.]+ (?:us|ms|s)\s+(\S+)", line)
        if row:
            names.append(row.group(1))
    return names


@pytest.fixture
def profiles(tmp_path):
    def make(name, runs, **kw):
        return ep.write(tmp_path / name, ep.profile_json(runs, **kw))
    return make


# --- diff ---------------------------------------------------------------------

def test_diff_flags_planted_20ms_and_ignores_noise(coldstart, profiles, tmp_path):
    a = profiles("a.json", noisy_runs(7, seed=1, spike=(3, "pkg1.m1", 15000)))
    b = profiles("b.json.gz", noisy_runs(7, seed=2, planted={"pkg1.m0": 20000}))
    r = coldstart("diff", a, b)
    assert r.returncode == 1, r.stdout + r.stderr
    assert flagged(r.stdout, "slower (flagged)") == ["pkg1.m0"]
    assert flagged(r.stdout, "faster (flagged)") == []
    assert re.search(r"\+\d+\.\d ms  pkg1\.m0  self", r.stdout)
    assert "1 regression flagged" in r.stdout
    # The same app measured twice: only noise (and a 15 ms one-run outlier).
    a2 = profiles("a2.json", noisy_runs(7, seed=3))
    r = coldstart("diff", a, a2)
    assert r.returncode == 0, r.stdout
    assert flagged(r.stdout, "slower (flagged)") == [] and "0 regressions flagged" in r.stdout
    assert re.search(r"^\d+ other modules changed within the noise threshold", r.stdout, re.M)


def test_diff_single_runs_use_min_delta(coldstart, profiles):
    base = ep.synthetic_roots(100, seed=1)
    a = profiles("a.json", [[base]])
    b = profiles("b.json", [[ep.synthetic_roots(100, seed=1, planted={"pkg1.m0": 600})]])
    r = coldstart("diff", a, b)
    assert r.returncode == 0, r.stdout
    assert "within the noise" in r.stdout and "noise: single runs" in r.stdout
    r = coldstart("diff", a, b, "--min-delta", "500us")
    assert r.returncode == 1 and flagged(r.stdout, "slower (flagged)") == ["pkg1.m0"]
    r = coldstart("diff", b, a, "--min-delta=0.5ms")
    assert r.returncode == 0 and flagged(r.stdout, "faster (flagged)") == ["pkg1.m0"]


def test_diff_lists_new_and_removed_modules(coldstart, profiles):
    roots = ep.synthetic_roots(50, seed=1)
    a = profiles("a.json", [[roots + [ep.Node("oldlib", 4000, kind="thirdparty")]]])
    b = profiles("b.json", [[roots + [ep.Node("newlib", 9000, kind="thirdparty",
                                              children=[ep.Node("newlib.core", 3000)])]]])
    r = coldstart("diff", a, b)
    assert r.returncode == 1
    assert flagged(r.stdout, "new modules") == ["newlib", "newlib.core"]
    assert flagged(r.stdout, "removed modules") == ["oldlib"]
    assert re.search(r"\+12\.0 ms  newlib \(self 9\.0 ms, flagged\)", r.stdout)


def test_diff_flamegraph_colours_by_change(coldstart, profiles, tmp_path):
    a = profiles("a.json", noisy_runs(5, seed=1))
    b = profiles("b.json", noisy_runs(5, seed=2, planted={"pkg1.m0": 20000}))
    out = tmp_path / "diff.svg.gz"
    r = coldstart("diff", a, b, "--flamegraph", out, "--top", "0")
    assert r.returncode == 1, r.stderr
    root = ET.fromstring(ep.read_output(out))
    fills = {g.get("data-n"): g.find(SVG + "rect").get("fill") for g in root.iter(SVG + "g")
             if g.get("data-n")}
    r_, g_, b_ = map(int, re.findall(r"\d+", fills["pkg1.m0"]))
    assert r_ == 255 and g_ < 60 and b_ < 60, fills["pkg1.m0"]
    assert fills["pkg1"] == "rgb(228,228,228)"  # its own self time did not change
    assert "differential flamegraph" in ep.read_output(out)


@pytest.mark.parametrize("args,code,message", [
    ((), 2, "needs two profiles"),
    (("A",), 2, "needs two profiles"),
    (("A", "A", "A"), 2, "takes two profiles"),
    (("--help",), 0, "usage: coldstart diff"),
    (("A", "A", "--min-delta", "soon"), 2, "--min-delta 'soon'"),
    (("A", "A", "--top", "-1"), 2, "--top '-1'"),
    (("A", "A", "--frob"), 2, "unknown option '--frob'"),
    (("A", "MISSING"), 1, "cannot read"),
    (("A", "EMPTY"), 1, "second profile holds no run"),
    (("A", "A", "--flamegraph", "/nonexistent-dir/d.svg"), 1, "cannot write"),
])
def test_diff_errors(coldstart, profiles, tmp_path, args, code, message):
    subst = {"A": profiles("a.json", [[ep.synthetic_roots(5)]]), "EMPTY": profiles("e.json", []),
             "MISSING": str(tmp_path / "missing.json")}
    r = coldstart("diff", *[subst.get(x, x) for x in args], timeout=30)
    assert r.returncode == code, (r.stdout, r.stderr)
    assert message in (r.stdout if code == 0 else r.stderr)


def profile_app(coldstart, python, path, out, runs):
    r = coldstart("profile", "--python", python, "-n", runs, "--warmup", "1", "--no-report", "-q",
                  "-o", out, path, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def test_diff_real_runs_find_a_planted_sleep(coldstart, python, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "app.py").write_text("import json, email.parser\nimport slowmod\n")
    (app / "slowmod.py").write_text("x = 1\n")
    a = profile_app(coldstart, python, app / "app.py", tmp_path / "a.json", 5)
    a2 = profile_app(coldstart, python, app / "app.py", tmp_path / "a2.json", 5)
    # The planted delay must stand clear of what scheduling adds to a trivial
    # import on a busy machine: with two CPUs and ten runnable processes, a
    # one-line module measured 3-53 ms of wall, so a 20 ms sleep drowned in it.
    (app / "slowmod.py").write_text("import time\ntime.sleep(0.1)\n")
    b = profile_app(coldstart, python, app / "app.py", tmp_path / "b.json", 5)
    r = coldstart("diff", a, b)

    def runs_of(path):
        doc = json.loads(ep.read_output(path))
        return [[n[3] for n in run["processes"][0]["nodes"] if n[0] == "slowmod"]
                for run in doc["runs"] if not run["warmup"]]
    why = "%s\nslowmod self per run: A %s, B %s" % (r.stdout, runs_of(a), runs_of(b))
    assert r.returncode == 1, why + r.stderr
    slower = flagged(r.stdout, "slower (flagged)")
    assert slower and slower[0] == "slowmod", why
    delta = re.search(r"\+([\d.]+) ms  slowmod", r.stdout)
    # The delta is the difference of the medians of the runs' self times
    # (rounded to 0.1 ms); B's every run slept 100 ms.  Its size against 100
    # ms is the machine's: a busy machine's A runs lose up to 17 ms to
    # waiting for a CPU, which shrinks the delta.
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    a_self, b_self = [sum(x) for x in runs_of(a)], [sum(x) for x in runs_of(b)]
    assert abs(float(delta.group(1)) * 1000 - (med(b_self) - med(a_self))) <= 100, why
    assert min(b_self) >= 100000, why
    # Same code twice: whatever real noise gets through is far below 20 ms.
    r = coldstart("diff", a, a2)
    for line in r.stdout.splitlines():
        m = re.match(r"\s+\+([\d.]+) (ms|s)  (\S+)  self", line)
        if m:
            assert m.group(2) == "ms" and float(m.group(1)) < 10.0, r.stdout
    print("%s: diff A A' exit %d; planted module delta %s ms" % (python, r.returncode, delta.group(1)))


# --- check ----------------------------------------------------------------------

@pytest.fixture
def app_profile(profiles):
    asyncio_ = ep.Node("asyncio", 3000, kind="stdlib", children=[ep.Node("asyncio.events", 2000, kind="stdlib")])
    web = ep.Node("web", 5000, kind="thirdparty", children=[asyncio_])
    runs = [[[ep.Node("encodings", 2000, kind="startup"), ep.Node("app", 1000 + jitter, children=[web])]]
            for jitter in (0, 400, 900)]
    return profiles("app.json.gz", runs)


@pytest.mark.parametrize("args,code,lines", [
    (("--budget", "total=300ms"), 0, [r"ok +total: 13\.4 ms <= 300\.0 ms", r"check passed"]),
    (("--budget", "total=10ms"), 1, [r"FAIL total: 13\.4 ms > 10\.0 ms", r"check failed"]),
    (("--budget=web=11ms", "--budget", "app=5ms"), 1, [r"ok +web: 10\.0 ms", r"FAIL app: 11\.4 ms > 5\.0 ms"]),
    (("--budget", "numpy=1ms"), 0, [r"ok +numpy: not imported"]),
    (("--forbid", "asyncio"), 1, [r"FAIL asyncio: asyncio imported via app > web > asyncio"]),
    (("--forbid", "xml", "-q"), 0, [r"^check passed \(1 rule\)$"]),
    (("--forbid", "asyncio", "--budget", "total=1s", "-q"), 1, [r"^forbid FAIL asyncio"]),
])
def test_check_verdicts(coldstart, app_profile, args, code, lines):
    r = coldstart("check", app_profile, *args)
    assert r.returncode == code, r.stdout + r.stderr
    for pat in lines:
        assert re.search(pat, r.stdout, re.M), (pat, r.stdout)
    if "-q" in args:
        assert " ok " not in r.stdout and "ok   " not in r.stdout


@pytest.mark.parametrize("args,code,message", [
    ((), 2, "at least one --budget"),
    (("P",), 2, "at least one --budget"),
    (("--help",), 0, "usage: coldstart check"),
    (("P", "--budget", "total"), 2, "not NAME=DURATION"),
    (("P", "--budget", "total=fast"), 2, "'fast' is not a duration"),
    (("P", "--budget"), 2, "'--budget' needs a value"),
    (("P", "--forbid", ""), 2, "expected a module name"),
    (("P", "--frob"), 2, "unknown option '--frob'"),
    (("MISSING", "--budget", "total=1s"), 1, "cannot read"),
    (("EMPTY", "--budget", "total=1s"), 1, "no measured run"),
])
def test_check_errors(coldstart, profiles, tmp_path, args, code, message):
    subst = {"P": profiles("p.json", [[ep.synthetic_roots(5)]]), "EMPTY": profiles("e.json", []),
             "MISSING": str(tmp_path / "missing.json")}
    r = coldstart("check", *[subst.get(x, x) for x in args], timeout=30)
    assert r.returncode == code, (r.stdout, r.stderr)
    assert message in (r.stdout if code == 0 else r.stderr)


def test_check_gates_a_real_profile(coldstart, python, tmp_path):
    app = tmp_path / "app.py"
    app.write_text("import json\nimport asyncio\n")
    prof = profile_app(coldstart, python, app, tmp_path / "p.json", 3)
    r = coldstart("check", prof, "--budget", "total=60s", "--budget", "json=10s")
    assert r.returncode == 0, r.stdout + r.stderr
    r = coldstart("check", prof, "--budget", "total=100us")
    assert r.returncode == 1 and "FAIL total" in r.stdout
    r = coldstart("check", prof, "--forbid", "asyncio")
    assert r.returncode == 1 and re.search(r"FAIL asyncio: asyncio imported via .*asyncio", r.stdout), r.stdout


WORKER_APP = """
import time
time.sleep(0.12)  # what the app's imports cost in the worker

def app(environ, start_response):
    start_response("200 OK", [("Content-Length", "2")])
    return [b"ok"]
"""


def test_budget_sees_the_workers_imports(coldstart, tmp_path):
    """gunicorn's worker imports the app, not its master: a module budget holds
    it wherever it was imported, as --forbid does; a total stays the main
    process's."""
    import shutil
    import socket
    gunicorn = shutil.which("gunicorn")
    if not gunicorn:
        pytest.skip("Debian's gunicorn is not installed (tests/install-deps.sh)")
    (tmp_path / "workerapp.py").write_text(WORKER_APP)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "g.json"
    r = coldstart("profile", "-q", "--no-report", "-o", out, "--ready", "http://127.0.0.1:%d/" % port, "--",
                  gunicorn, "-w", "1", "-b", "127.0.0.1:%d" % port, "--chdir", tmp_path, "workerapp:app")
    assert r.returncode == 0, r.stderr
    r = coldstart("check", out, "--budget", "workerapp=50ms", "--forbid", "workerapp")
    assert r.returncode == 1, r.stdout + r.stderr
    # The worker's 120 ms sleep, at least (more on a loaded machine).
    m = re.search(r"budget FAIL workerapp: ([\d.]+) (ms|s) > 50\.0 ms", r.stdout)
    assert m and float(m.group(1)) * (1000 if m.group(2) == "s" else 1) >= 120, r.stdout
    assert "workerapp imported via" in r.stdout and "(process " in r.stdout, r.stdout
    r = coldstart("check", out, "--budget", "workerapp=5s")
    assert r.returncode == 0, r.stdout + r.stderr
