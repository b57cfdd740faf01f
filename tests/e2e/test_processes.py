"""End-to-end tests of multi-process targets through the coldstart binary,
with the real programs: gunicorn with two workers (Flask + SQLAlchemy),
uvicorn --workers 2, os.fork(), multiprocessing with fork, spawn and
forkserver, subprocess.run([sys.executable, ...]).  Every process's tree
must hold exactly the imports that process made; the rows of the shared
stderr are checked against `strace -f`, which knows the pid of every write.
"""
import collections
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest

from conftest import DEBIAN_PYTHON

FAILED, TRACE_ONLY, CACHED, GC = 2, 8, 1, 512


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def profile(coldstart, tmp_path, *args, env=None, timeout=300):
    out = tmp_path / "profile.json"
    e = {"PYTHONDONTWRITEBYTECODE": "1"}
    e.update(env or {})
    r = coldstart("profile", "-o", out, *args, env=e, timeout=timeout)
    prof = json.loads(out.read_text()) if out.exists() else None
    return r, prof


def names(proc):
    return [n[0] for n in proc["nodes"] if not n[5] & CACHED]


def by_pid(prof):
    return {p["pid"]: p for p in prof["runs"][0]["processes"]}


def own_total_us(proc):
    return sum(n[4] for n in proc["nodes"] if n[2] == -1 and n[4] > 0)


def ancestor(nodes, a, b):
    while b >= 0:
        b = nodes[b][2]
        if b == a:
            return True
    return False


def twice_in_one_process(proc):
    """Modules imported twice in a way one interpreter cannot: not a failed
    import retried (a leaf, failures being invisible to importtime before the
    tracer), not `import pkg.sub` importing pkg inside it, not coldstart's
    bootstrap (which imports the real sitecustomize)."""
    nodes = proc["nodes"]
    seen = collections.defaultdict(list)
    for i, n in enumerate(nodes):
        if not n[5] & (FAILED | CACHED) and n[6] != "tool":
            seen[n[0]].append(i)
    bad = []
    for name, idx in seen.items():
        for a in idx:
            for b in idx:
                if a < b and not (ancestor(nodes, a, b) or ancestor(nodes, b, a) or
                                  all(j not in [n[2] for n in nodes] for j in (a,)) or
                                  all(j not in [n[2] for n in nodes] for j in (b,))):
                    bad.append(name)
    return sorted(set(bad))


def check_trees(prof):
    """Every process: no module imported twice as one interpreter cannot,
    its import total within its lifetime, its parent a process of the run."""
    procs = prof["runs"][0]["processes"]
    pids = {p["pid"] for p in procs}
    for p in procs:
        twice = twice_in_one_process(p)
        assert not twice, (p["pid"], twice)
        life_us = (p["end_ns"] - p["start_ns"]) / 1000
        assert own_total_us(p) <= life_us, (p["pid"], own_total_us(p), life_us)
        if p is not procs[0]:
            assert p["ppid"] in pids, (p["pid"], p["ppid"])
    assert not [w for w in prof["warnings"] if "no parent row" in w["msg"]], prof["warnings"]


FLASK_APP = """
import flask
import sqlalchemy
app = flask.Flask(__name__)

@app.route("/")
def hello():
    return "ok"
"""


@pytest.mark.skipif(not shutil.which("gunicorn"), reason="Debian's gunicorn is not installed")
def test_gunicorn_two_workers(coldstart, tmp_path):
    (tmp_path / "app.py").write_text(FLASK_APP)
    port = free_port()
    r, prof = profile(coldstart, tmp_path, "--top", "5", "--ready", "http://127.0.0.1:%d/" % port, "--",
                      "gunicorn", "-w", "2", "-b", "127.0.0.1:%d" % port, "--chdir", str(tmp_path), "app:app")
    assert prof is not None, r.stderr
    assert r.returncode == 0, r.stderr
    procs = prof["runs"][0]["processes"]
    master = procs[0]
    workers = [p for p in procs if p["role"] == "worker"]
    assert master["role"] == "master" and "gunicorn" in master["argv"]
    assert len(procs) == 3 and len(workers) == 2
    for w in workers:
        assert w["ppid"] == master["pid"] and w["origin"] == "fork"
        assert "sqlalchemy" in names(w) and "flask" in names(w) and "app" in names(w)
        # A fork's tree starts at the fork: none of the master's start-up.
        assert "encodings" not in names(w) and "gunicorn.app.wsgiapp" not in names(w)
        # One clock (issue 27, item 4): a worker starts at its fork, after the master's exec, and
        # ends within the run's wall time.
        run_end = master["start_ns"] + prof["runs"][0]["wall_us"] * 1000
        assert master["start_ns"] < w["start_ns"] <= w["end_ns"] <= run_end, (master["start_ns"], w, run_end)
    # The master imports gunicorn, never the app (no --preload).
    assert "sqlalchemy" not in names(master) and "flask" not in names(master)
    assert "gunicorn.app.wsgiapp" in names(master)
    check_trees(prof)
    # One finding for the workers' sqlalchemy, naming both pids; every finding said once, naming its pids.
    heavy = [f for f in prof["findings"] if f["id"] == "heavy-import" and f["module"] == "sqlalchemy"]
    assert len(heavy) <= 1, heavy
    for f in heavy:
        assert set(f["pids"]) <= {w["pid"] for w in workers} and f["pids"] == sorted(f["pids"]), f
    check_findings(prof)
    # A native extension both workers load (_hashlib, for sqlalchemy): one finding when heavy, naming
    # every process that loaded it with its own load time.
    for f in prof["findings"]:
        if f["id"] == "native-heavy-load":
            assert f["pids"] == loaded_in(prof, f["module"]), f
            for pid in f["pids"]:
                assert re.search(r"[\d.]+ [mu]s(?: load)? in pid %d \((?:master|worker)\)" % pid, f["evidence"]), f
    assert sorted(loaded_in(prof, "_hashlib")) == sorted(w["pid"] for w in workers)
    # The report's process table: the master first, each with its own totals.
    table = r.stdout[r.stdout.index("Processes ("):]
    table = table[:table.index("\n\n")]
    # A row starts with its pid and ppid; a long command goes on a line of its own under it (docs/report.md).
    rows = [ln.split() for ln in table.splitlines() if re.match(r"^ +\d+ +\d+ ", ln)]
    assert [int(x[0]) for x in rows] == [p["pid"] for p in procs]
    assert [x[2] for x in rows] == ["master", "worker", "worker"]
    print(table)


@pytest.mark.skipif(not shutil.which("gunicorn"), reason="Debian's gunicorn is not installed")
def test_gunicorn_without_tracer_says_rows_are_mixed(coldstart, tmp_path):
    """--no-trace: the interleaved stream is reported as such, never merged silently."""
    (tmp_path / "app.py").write_text(FLASK_APP)
    port = free_port()
    r, prof = profile(coldstart, tmp_path, "--no-trace", "--ready", "http://127.0.0.1:%d/" % port, "--",
                      "gunicorn", "-w", "2", "-b", "127.0.0.1:%d" % port, "--chdir", str(tmp_path), "app:app")
    assert prof is not None, r.stderr
    main = prof["runs"][0]["processes"][0]
    assert main.get("mixed") is True
    msgs = [w["msg"] for w in prof["warnings"] if "imported more than once in one tree" in w["msg"]]
    assert len(msgs) == 1 and "'flask'" in msgs[0] or "'sqlalchemy'" in msgs[0], prof["warnings"]
    assert "mixed rows" in r.stdout


ASGI_APP = """
import json
import decimal

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})
"""


def has_module(name):
    return subprocess.run([DEBIAN_PYTHON, "-c", "import " + name], capture_output=True).returncode == 0


@pytest.mark.skipif(not has_module("uvicorn"), reason="Debian's python3-uvicorn is not installed")
def test_uvicorn_two_workers(coldstart, tmp_path):
    (tmp_path / "asgiapp.py").write_text(ASGI_APP)
    port = free_port()
    r, prof = profile(coldstart, tmp_path, "--ready", "http://127.0.0.1:%d/" % port, "--",
                      DEBIAN_PYTHON, "-m", "uvicorn", "--workers", "2", "--port", str(port), "--app-dir",
                      str(tmp_path), "asgiapp:app")
    assert prof is not None, r.stderr
    procs = prof["runs"][0]["processes"]
    main = procs[0]
    workers = [p for p in procs if p["role"] == "worker"]
    assert main["role"] == "main" and "uvicorn" in main["argv"]
    assert len(workers) == 2, [(p["pid"], p["role"], p["argv"]) for p in procs]
    for w in workers:
        assert w["ppid"] == main["pid"] and w["origin"] == "exec"
    # The worker that answered had imported the app; the other may have been stopped before.
    assert [w for w in workers if "asgiapp" in names(w)]
    assert "asgiapp" not in names(main) and "uvicorn.config" in names(main)
    check_trees(prof)


MP_SCRIPT = """
import multiprocessing, os, sys, subprocess

def child():
    import colorsys

if __name__ == "__main__":
    method = sys.argv[1]
    if method == "osfork":
        import json
        pid = os.fork()
        if pid == 0:
            import colorsys
            os._exit(0)
        os.waitpid(pid, 0)
        import fractions
    elif method == "subprocess":
        subprocess.run([sys.executable, "-c", "import colorsys"], check=True)
        import fractions
    else:
        ctx = multiprocessing.get_context(method)
        ps = [ctx.Process(target=child) for _ in range(2)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
            assert p.exitcode == 0
        import fractions
"""


def strace_truth(path):
    """pid -> [(name, cum)] of the rows each process wrote, from strace -f."""
    truth = collections.defaultdict(list)
    for line in open(path):
        m = re.match(r'(\d+)\s+write\(2, "(.*)", \d+(?:\)| <unfinished)', line)
        if not m:
            continue
        text = m.group(2).encode().decode("unicode_escape")
        for row in text.split("\n"):
            r = re.match(r"import time:\s+(-?\d+) \|\s+(-?\d+) \| ( *)(\S+)$", row)
            if r:
                truth[int(m.group(1))].append((r.group(4), int(r.group(2))))
    return truth


@pytest.mark.parametrize("method", ["osfork", "subprocess", "fork", "spawn", "forkserver"])
def test_processes_hold_their_own_imports(coldstart, tmp_path, method):
    script = tmp_path / "mp.py"
    script.write_text(MP_SCRIPT)
    r, prof = profile(coldstart, tmp_path, "--python", DEBIAN_PYTHON, str(script), method)
    assert r.returncode == 0, r.stderr
    procs = prof["runs"][0]["processes"]
    main = procs[0]
    assert main["role"] in ("main", "master") and str(script) in main["argv"]
    assert "colorsys" not in names(main) and "fractions" in names(main)
    children = [p for p in procs if "colorsys" in names(p)]
    want = 1 if method in ("osfork", "subprocess") else 2
    assert len(children) == want, [(p["pid"], p["role"], names(p)[:5]) for p in procs]
    for c in children:
        if method in ("osfork", "fork"):
            assert c["origin"] == "fork" and c["ppid"] == main["pid"]
            assert c["role"] == ("fork" if method == "osfork" else "worker")
            assert len(names(c)) < 5, names(c)  # the tree starts at the fork
        elif method == "forkserver":
            server = [p for p in procs if p["role"] == "forkserver"]
            assert len(server) == 1 and c["ppid"] == server[0]["pid"] and c["role"] == "worker"
        elif method == "spawn":
            assert c["origin"] == "exec" and c["role"] == "worker" and c["ppid"] == main["pid"]
        else:
            assert c["role"] == "subprocess" and c["ppid"] == main["pid"]
            # subprocess passes no -X importtime: the child's tree is its trace, none "without a row".
            assert not [n for n in c["nodes"] if n[5] & TRACE_ONLY]
            assert c["startup_cpu_ns"] > 0
    check_trees(prof)


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed: no oracle for the pids of rows")
@pytest.mark.parametrize("method", ["osfork", "subprocess", "fork", "forkserver"])
def test_rows_go_to_the_process_that_printed_them(coldstart, tmp_path, method):
    """strace -f records the pid of every write: each process's importtime
    rows are exactly those in its tree (start-ups that overlapped
    excepted: spawn is checked for names above)."""
    script = tmp_path / "mp.py"
    script.write_text(MP_SCRIPT)
    log = tmp_path / "strace.txt"
    r, prof = profile(coldstart, tmp_path, "--python", DEBIAN_PYTHON, "--", "strace", "-f", "-qq",
                      "-e", "trace=write", "-e", "signal=none", "-s", "400", "-o", str(log),
                      DEBIAN_PYTHON, str(script), method)
    assert r.returncode == 0, r.stderr
    # The script prints nothing: a row given back to stderr is a row some process lost.
    assert "import time:" not in r.stderr, r.stderr
    truth = strace_truth(log)
    for p in prof["runs"][0]["processes"]:
        crowded = any("started at the same time" in w["msg"] and str(p["pid"]) in w["msg"]
                      for w in prof["warnings"])
        # Neither importtime rows: imports it could not see, and the collector's pauses ([gc]).
        got = collections.Counter((n[0], n[4]) for n in p["nodes"] if not n[5] & (TRACE_ONLY | CACHED | GC))
        if crowded:
            continue
        assert got == collections.Counter(truth.get(p["pid"], [])), p["pid"]


def test_fork_under_preset_fn(coldstart, tmp_path):
    """The same attribution under cgroup v1 limits (0.1 CPU, 128 MiB)."""
    script = tmp_path / "mp.py"
    script.write_text(MP_SCRIPT)
    r, prof = profile(coldstart, tmp_path, "--python", DEBIAN_PYTHON, "--preset", "fn", "--no-baseline",
                      str(script), "fork", timeout=600)
    if r.returncode == 3:
        pytest.skip("cgroup limits unavailable here: %s" % r.stderr.strip()[-200:])
    assert r.returncode == 0, r.stderr
    procs = prof["runs"][0]["processes"]
    assert "colorsys" not in names(procs[0])
    assert len([p for p in procs if p["role"] == "worker" and "colorsys" in names(p)]) == 2
    check_trees(prof)


@pytest.mark.skipif(not shutil.which("gunicorn"), reason="Debian's gunicorn is not installed")
def test_gunicorn_under_preset_fn(coldstart, tmp_path):
    (tmp_path / "app.py").write_text(FLASK_APP)
    port = free_port()
    r, prof = profile(coldstart, tmp_path, "--preset", "fn", "--no-baseline", "--ready-timeout", "120",
                      "--ready", "http://127.0.0.1:%d/" % port, "--", "gunicorn", "-w", "2", "-b",
                      "127.0.0.1:%d" % port, "--chdir", str(tmp_path), "app:app", timeout=600)
    if r.returncode == 3:
        pytest.skip("cgroup limits unavailable here: %s" % r.stderr.strip()[-200:])
    assert prof is not None, r.stderr
    procs = prof["runs"][0]["processes"]
    assert procs[0]["role"] == "master" and len([p for p in procs if p["role"] == "worker"]) == 2
    assert "sqlalchemy" not in names(procs[0])
    check_trees(prof)
    # Under the CPU limit the report speaks CPU time, and says what throttling explains.
    assert "Top modules by cumulative CPU time" in r.stdout
    assert "throttled in" in r.stdout


def pids_in_text(text):
    """The pids a finding's text names: "pid 12", "pids 13 and 14", "pids 1, 2 and 3"."""
    got = set()
    for m in re.finditer(r"\bpids? ((?:\d+(?:, | and ))*\d+)", text):
        got.update(int(x) for x in re.findall(r"\d+", m.group(1)))
    return got


# Findings about files on disk, or of the timeline (samples of the target's own process only).
NOT_ABOUT_A_PROCESS = {"native-unstripped", "startup-boto-client", "startup-django-admin", "startup-regex",
                       "startup-work"}


def check_findings(prof):
    """Every finding is said once per module and names the pids it holds in:
    its "pids" are processes of the run in the run's order (the target's
    first), each named in its text, and no other process is named."""
    order = [p["pid"] for p in prof["runs"][0]["processes"]]
    seen = collections.Counter((f["id"], f["module"]) for f in prof["findings"] if f["module"])
    assert not [k for k, n in seen.items() if n > 1], seen
    for f in prof["findings"]:
        pids = f["pids"]
        assert pids == sorted(pids, key=order.index), (f["id"], pids, order)
        if len(order) > 1 and f["id"] not in NOT_ABOUT_A_PROCESS:
            assert pids, f
        text = f["title"] + " " + f["evidence"]
        named = pids_in_text(text)
        if len(pids) == len(order) > 2:
            assert "all %d processes" % len(order) in text, f
        assert set(pids) <= named | ({order[0]} if f["id"] == "config-rejected" else set()), f
        assert named <= set(order), f


def loaded_in(prof, module):
    procs = prof["runs"][0]["processes"]
    return [procs[e["proc"]]["pid"] for e in prof["native"]["extensions"] if e["module"] == module]


SLOW_EXT = r"""
#include <Python.h>
#include <time.h>
/*
 * Loading runs 30 ms of CPU in every process: a heavy native load, whatever
 * the machine (a load that only waited, for a CPU or asleep, is not heavy).
 */
static long long cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
__attribute__((constructor)) static void slow(void)
{
	long long t = cpu_ns();
	while (cpu_ns() - t < 30000000LL)
		;
}
static struct PyModuleDef def = { PyModuleDef_HEAD_INIT, "slowload", NULL, -1, NULL };
PyMODINIT_FUNC PyInit_slowload(void) { return PyModule_Create(&def); }
"""

FORK_SCRIPT = """
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
pid = os.fork()
import slowload, sidefx
if pid == 0:
    import childonly
    os._exit(0)
os.waitpid(pid, 0)
"""


def build_slow_ext(where):
    info = subprocess.run([DEBIAN_PYTHON, "-S", "-E", "-c",
                           "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'));"
                           "print(sysconfig.get_paths()['include'])"],
                          capture_output=True, text=True, check=True).stdout.split("\n")
    src = where / "slowload.c"
    src.write_text(SLOW_EXT)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-I", info[1], "-o", str(where / ("slowload" + info[0])),
                    str(src)], check=True)


def test_fork_findings_name_their_processes(coldstart, tmp_path):
    """After os.fork() both processes import the same modules: each finding
    about them is said once naming both pids, the parent (the target) first;
    what only the child did names the child alone."""
    build_slow_ext(tmp_path)
    (tmp_path / "sidefx.py").write_text(
        "import os\nopen(os.path.join(os.path.dirname(__file__), 'out-%d' % os.getpid()), 'w').close()\n")
    (tmp_path / "childonly.py").write_text("import time\ntime.sleep(0.02)\n")
    script = tmp_path / "forker.py"
    script.write_text(FORK_SCRIPT)
    r, prof = profile(coldstart, tmp_path, "--python", DEBIAN_PYTHON, str(script))
    assert r.returncode == 0, r.stderr
    procs = prof["runs"][0]["processes"]
    assert [p["role"] for p in procs] == ["main", "fork"], [(p["pid"], p["role"]) for p in procs]
    parent, child = procs[0]["pid"], procs[1]["pid"]
    check_findings(prof)

    def only(fid, module=None):
        got = [f for f in prof["findings"] if f["id"] == fid and (module is None or f["module"] == module)]
        assert len(got) == 1, (fid, module, [(f["id"], f["module"], f["evidence"]) for f in prof["findings"]])
        return got[0]

    f = only("import-side-effect", "sidefx")
    assert f["pids"] == [parent, child]
    assert "both processes: pid %d (main), pid %d (fork)" % (parent, child) in f["evidence"], f
    f = only("import-side-effect", "childonly")
    assert f["pids"] == [child] and "(pid %d)" % child in f["evidence"] and str(parent) not in f["evidence"], f
    f = only("compiled-at-startup")
    assert f["evidence"].count("'sidefx'") == 1 and "'sidefx' (" in f["evidence"], f
    assert re.search(r"'sidefx' \([^)]*in 2 processes\)", f["evidence"]), f
    assert f["pids"] == [parent, child]
    # The native load, 30 ms in each process: one finding, each process with its own load time.
    assert loaded_in(prof, "slowload") == [parent, child]
    f = only("native-heavy-load", "slowload")
    assert f["pids"] == [parent, child]
    assert re.search(r"slowload: [\d.]+ ms load in pid %d \(main\), [\d.]+ ms in pid %d \(fork\)" % (parent, child),
                     f["evidence"]), f
    assert f["cost_us"] >= 30000
    # The report says it once too.
    assert r.stdout.count("[native-heavy-load] native extension 'slowload'") == 1, r.stdout


def test_django_runserver_autoreloader_child_is_traced(coldstart, tmp_path):
    """manage.py runserver serves from a child its autoreloader starts with an
    environment built from os.environ (and, in Django 3.2, without -X
    importtime): that child, the one that answers, has its own traced tree."""
    if subprocess.run([DEBIAN_PYTHON, "-c", "import django"], capture_output=True).returncode:
        pytest.skip("python3-django is not installed (tests/install-deps.sh)")
    admin = shutil.which("django-admin") or "/usr/bin/django-admin"
    proj = tmp_path / "proj"
    proj.mkdir()
    subprocess.run([admin, "startproject", "site1", str(proj)], check=True, capture_output=True)
    port = free_port()
    r, prof = profile(coldstart, tmp_path, "--python", DEBIAN_PYTHON, "-q", "--no-report",
                      "--ready", "http://127.0.0.1:%d/" % port, "--ready-status", "200-499", "--timeout", "90",
                      str(proj / "manage.py"), "runserver", "127.0.0.1:%d" % port)
    assert r.returncode == 0, r.stderr
    procs = prof["runs"][0]["processes"]
    main = procs[0]
    children = [p for p in procs if p["ppid"] == main["pid"] and "runserver" in (p["argv"] or "")]
    assert len(children) == 1, [(p["pid"], p["ppid"], p["argv"]) for p in procs]
    child = children[0]
    assert child["timing"] is not None
    # The serving process set Django up again and loaded what serves the requests.
    assert "django.core.servers.basehttp" in names(child), names(child)[-20:]
