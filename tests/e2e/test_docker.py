"""`coldstart docker` against a real engine.

The session starts Debian's dockerd itself (tests/docker/start-dockerd.sh:
no iptables, no bridge, a private data root, exec root and socket for this
session only), imports a small bookworm + python3 image built with
debootstrap (tests/docker/build-image.sh, cached in build/docker/), runs
constrained containers through the built binary, and stops the daemon at the
end.  Every test checks that no container is left behind.  When dockerd
truly cannot start (not root, not installed, refused by the kernel) the
tests print why and skip.
"""
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import COLDSTART, OLD_PYTHONS, PYTHONS, ROOT, SAMPLES, python_version, run_coldstart

IMAGE = "coldstart-test-python:bookworm"
SCRIPTS = os.path.join(ROOT, "tests", "docker")
PYTHON_DIR = os.path.join(ROOT, "python")
# Imports with a visible cost on a tenth of a CPU.
HEAVY = "import asyncio, json, xml.dom.minidom, email.parser"


def _skip(reason):
    print("\ntest_docker: skipping: " + reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def engine():
    """The private dockerd, started for this session, with the test image.

    Its data root persists in build/docker/daemon so the image is imported
    once; a lock keeps concurrent sessions (two `make e2e` in one tree) from
    sharing or stopping each other's daemon: the second one waits.
    """
    if os.geteuid() != 0:
        _skip("dockerd needs root (running as uid %d)" % os.geteuid())
    for tool in ("dockerd", "docker"):
        if not shutil.which(tool):
            _skip("'%s' is not installed (Debian package docker.io)" % tool)
    if not os.access(COLDSTART, os.X_OK):
        pytest.fail("coldstart binary not built: %s" % COLDSTART)
    top = os.path.join(ROOT, "build", "docker")
    os.makedirs(top, exist_ok=True)
    lock = open(os.path.join(top, "daemon.lock"), "w")
    deadline = time.monotonic() + 900
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail("another test session held build/docker/daemon.lock for 15 minutes")
            time.sleep(1)
    env = dict(os.environ, COLDSTART_DOCKER_DIR=os.path.join(top, "daemon"))
    env.pop("DOCKER_HOST", None)
    try:
        start = subprocess.run(["sh", os.path.join(SCRIPTS, "start-dockerd.sh")], env=env,
                               capture_output=True, text=True, timeout=120)
        if start.returncode != 0:
            _skip("dockerd cannot start here: " + start.stderr.strip().replace("\n", " | "))
        env["DOCKER_HOST"] = start.stdout.strip().split("=", 1)[1]
        build = subprocess.run(["sh", os.path.join(SCRIPTS, "build-image.sh")], env=env,
                               capture_output=True, text=True, timeout=1800)
        assert build.returncode == 0, "building the test image failed:\n" + build.stdout + build.stderr
        yield {"host": env["DOCKER_HOST"], "env": env}
    finally:
        subprocess.run(["sh", os.path.join(SCRIPTS, "stop-dockerd.sh")], env=env, timeout=120)
        lock.close()


def docker(engine, *args, timeout=60):
    return subprocess.run(["docker"] + list(args), env=engine["env"], capture_output=True,
                          text=True, timeout=timeout)


def containers(engine):
    out = docker(engine, "ps", "-a", "--format", "{{.Names}}")
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.fixture
def cs(engine):
    """Runs coldstart against the session's daemon; checks nothing is left behind."""
    assert containers(engine) == [], "containers left by an earlier test"

    def run(*args, env=None, timeout=300):
        full = {"DOCKER_HOST": engine["host"]}
        full.update(env or {})
        return run_coldstart(*args, env=full, timeout=timeout)

    yield run
    assert containers(engine) == [], "coldstart left containers behind"


def load(path):
    with open(str(path)) as f:
        return json.load(f)


def node_names(proc):
    return [n[0] for n in proc["nodes"]]


def imports_us(run):
    """The target's own import time: cumulative of every top-level row after start-up."""
    proc = run["processes"][0]
    return sum(n[4] for n in proc["nodes"] if n[2] == -1 and n[6] != "startup")


def test_plain_profile_with_tracer(cs, tmp_path):
    out = tmp_path / "p.json"
    r = cs("docker", "--network", "none", "-v", "%s:/samples:ro" % SAMPLES, "-o", out,
           IMAGE, "python3", "/samples/side-effects/app.py")
    assert r.returncode == 0, r.stderr
    assert "side-effects sample: served by port" in r.stdout  # the container's stdout
    assert "target          %s python3 /samples/side-effects/app.py" % IMAGE in r.stdout
    assert "python3 in image %s (Python 3.11" % IMAGE in r.stdout
    assert "Top modules by cumulative time" in r.stdout
    p = load(out)
    assert p["command"] == "docker"
    assert p["python_version"].startswith("3.11.")
    assert p["target"] == [IMAGE, "python3", "/samples/side-effects/app.py"]
    run = p["runs"][0]
    assert run["status"] == "exited" and run["exit_code"] == 0
    names = node_names(run["processes"][0])
    assert "sidefx" in names and "sidefx.proc" in names
    # Only the in-container tracer sees the subprocess run at import.
    ids = [(f["id"], f.get("module")) for f in p["findings"]]
    assert ("import-side-effect", "sidefx.proc") in ids, ids
    # The tracer's own timings (start of each import) came back from the container.
    timing = run["processes"][0]["timing"]
    assert timing and any(t[0] > 0 for t in timing)
    # The container's own lifetime, not the CLI's.
    assert 0 < run["wall_us"] < 60 * 1000000


def _in_container(py):
    """(volume args, command) running interpreter py inside the test image."""
    if py == "/usr/bin/python3":
        return [], "python3"  # the image's own Debian 3.11
    root = os.path.dirname(os.path.dirname(os.path.realpath(py)))
    return ["-v", "%s:%s:ro" % (root, root)], os.path.join(root, "bin", os.path.basename(py))


@pytest.mark.parametrize("py", PYTHONS or [None], ids=lambda p: p or "no-python")
def test_every_interpreter_with_tracer(cs, tmp_path, py):
    """Each interpreter found, mounted into the container: importtime and the pure-Python tracer."""
    if py is None:
        _skip("no interpreter with -X importtime found")
    vols, cmd = _in_container(py)
    out = tmp_path / "p.json"
    r = cs("docker", "--no-report", "-o", out, *vols, IMAGE, cmd, "-c", "import json, email.parser")
    assert r.returncode == 0, r.stderr
    p = load(out)
    assert tuple(int(x) for x in p["python_version"].split(".")[:2]) == python_version(py)
    proc = p["runs"][0]["processes"][0]
    names = node_names(proc)
    assert "json" in names and "email.parser" in names
    assert proc.get("timing") and any(t[0] > 0 for t in proc["timing"]), "no tracer records"


@pytest.mark.parametrize("py", [p for p in OLD_PYTHONS if "3.6" in p] or [None], ids=lambda p: p or "none")
def test_python_without_importtime_in_image(cs, py):
    if py is None:
        _skip("no Python 3.6 found under /root/.pyenv")
    vols, cmd = _in_container(py)
    r = cs("docker", *vols, IMAGE, cmd, "-c", "pass")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "has no -X importtime (it needs Python 3.7 or newer)" in r.stderr


def test_no_trace_is_importtime_only(cs, tmp_path):
    out = tmp_path / "p.json"
    r = cs("docker", "--no-trace", "--no-report", "-o", out, IMAGE, "python3", "-c", "import json")
    assert r.returncode == 0, r.stderr
    proc = load(out)["runs"][0]["processes"][0]
    assert "json" in node_names(proc)
    assert not proc.get("timing")


def test_limits_reach_the_container(cs, tmp_path):
    """The mapped flags are what the container's cgroup holds (v1 or v2)."""
    code = (
        "import os\n"
        "def rd(*p):\n"
        "    for x in p:\n"
        "        if os.path.exists(x): return open(x).read().split()\n"
        "print('CPU', *rd('/sys/fs/cgroup/cpu.max', '/sys/fs/cgroup/cpu/cpu.cfs_quota_us'))\n"
        "print('MEM', *rd('/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes'))\n"
        "print('PIDS', *rd('/sys/fs/cgroup/pids.max', '/sys/fs/cgroup/pids/pids.max'))\n"
        "print('CPUSET', *rd('/sys/fs/cgroup/cpuset.cpus', '/sys/fs/cgroup/cpuset/cpuset.cpus'))\n")
    r = cs("docker", "--preset", "fn", "--pids", "50", "--cpuset", "0", "--no-report", IMAGE,
           "python3", "-c", code)
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    assert lines["CPU"].split()[0] == "10000", lines  # 0.1 CPU of a 100000 us period
    assert lines["MEM"] == str(128 << 20), lines
    assert lines["PIDS"] == "50", lines
    assert lines["CPUSET"] == "0", lines


CPU_PROBE = HEAVY + "\nimport sys, time\nsys.stdout.write('CPU %d\\n' % (time.process_time() * 1e6))"


def test_fn_preset_slows_start_up(cs, tmp_path):
    """0.1 CPU makes start-up several times slower: about 10x on an idle machine.

    Other load on a small machine slows the unconstrained runs too, so the
    ratio of wall times is only asserted to show a slowdown; the 3x bound is
    against the CPU time the same work takes unconstrained, which load does
    not inflate, while a 0.1 CPU quota cannot give more than 0.1 s of CPU per
    second of wall.
    """
    free, fn = tmp_path / "free.json", tmp_path / "fn.json"
    r = cs("docker", "-n", "3", "--no-report", "-o", free, IMAGE, "python3", "-c", CPU_PROBE)
    assert r.returncode == 0, r.stderr
    cpu = min(int(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("CPU "))
    r = cs("docker", "-n", "2", "--preset", "fn", "-o", fn, IMAGE, "python3", "-c", CPU_PROBE)
    assert r.returncode == 0, r.stderr
    assert "limits          0.1 CPU, 128.0 MiB memory (preset fn) via docker" in r.stdout
    pf, pc = load(free), load(fn)
    assert len(pf["runs"]) == 3 and len(pc["runs"]) == 2
    assert pc["limits"]["cpus"] == pytest.approx(0.1) and pc["limits"]["memory"] == 128 << 20

    def proc_wall(run):  # the interpreter's own life, from the in-container tracer
        proc = run["processes"][0]
        return (proc["end_ns"] - proc["start_ns"]) // 1000

    slow = min(proc_wall(run) for run in pc["runs"])
    quick = min(proc_wall(run) for run in pf["runs"])
    slow_imp = min(imports_us(run) for run in pc["runs"])
    quick_imp = min(imports_us(run) for run in pf["runs"])
    print("process wall: unconstrained best %d us (CPU %d us), --preset fn best %d us; "
          "wall ratio %.1f, vs CPU %.1f; imports %d -> %d us"
          % (quick, cpu, slow, slow / quick, slow / cpu, quick_imp, slow_imp))
    assert slow > 3 * cpu
    assert slow > 1.5 * quick and slow_imp > 1.5 * quick_imp


def test_oom_is_reported(cs, tmp_path):
    out = tmp_path / "oom.json"
    r = cs("docker", "--memory", "64m", "-o", out, IMAGE, "python3", "-c",
           "import json\nb = bytearray(200 * 1024 * 1024)\nprint('survived')")
    assert r.returncode == 7, r.stdout + r.stderr
    assert "survived" not in r.stdout.splitlines()
    assert "OOM: killed by the memory limit of 64.0 MiB" in r.stdout
    run = load(out)["runs"][0]
    assert run["status"] == "oom"
    assert "json" in node_names(run["processes"][0])


@pytest.mark.parametrize("entry", ["coldstart-fdk", "fdk-python"])
def test_ready_fn(cs, tmp_path, entry):
    out = tmp_path / "fn.json"
    if entry == "coldstart-fdk":
        command = ["python3", "/opt/cs-python/coldstart-fdk", "/app/func.py", "handler"]
    else:
        command = ["python3", "/app/func.py"]  # fdk.handle(handler) in __main__
    r = cs("docker", "--ready", "fn", "--preset", "fn", "--ready-timeout", "60", "-o", out,
           "-v", "%s:/opt/cs-python:ro" % PYTHON_DIR,
           "-v", "%s:/app:ro" % os.path.join(SAMPLES, "fn-hello"),
           "-e", "PYTHONPATH=/opt/cs-python", IMAGE, *command)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ready " in r.stdout and "first response" in r.stdout
    run = load(out)["runs"][0]
    assert run["status"] == "stopped"
    assert run["ready_us"] > 0 and run["first_response_us"] >= 0
    names = node_names(run["processes"][0])
    # fn-hello's own module-level imports, paid before readiness.
    assert "xml.dom.minidom" in names and "asyncio" in names
    print("%s: ready %d us after start, first response %d us later" %
          (entry, run["ready_us"], run["first_response_us"]))


def test_ready_fn_never_ready(cs, tmp_path):
    r = cs("docker", "--ready", "fn", "--ready-timeout", "2", "--no-report", IMAGE, "python3", "-c",
           "import time; time.sleep(30)", timeout=60)
    assert r.returncode == 9, r.stdout + r.stderr
    assert "not ready after 2000 ms" in r.stderr


def test_ready_http_on_host_network(cs, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "http.json"
    r = cs("docker", "--network", "host", "--ready", "http://127.0.0.1:%d/" % port, "--no-report",
           "-o", out, IMAGE, "python3", "-m", "http.server", "--bind", "127.0.0.1", str(port))
    assert r.returncode == 0, r.stdout + r.stderr
    run = load(out)["runs"][0]
    assert run["status"] == "stopped" and run["ready_us"] > 0
    # -m runs http.server through runpy (no import row); its imports have rows.
    assert "socketserver" in node_names(run["processes"][0])


def test_ready_tcp_unpublishable_port_says_why(cs):
    """The test daemon has no bridge, so a published port never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = cs("docker", "--ready", "tcp:%d" % port, "--ready-timeout", "3", "--no-report", IMAGE,
           "python3", "-m", "http.server", "--bind", "0.0.0.0", str(port), timeout=60)
    assert r.returncode == 9, r.stdout + r.stderr
    assert "port %d was published on 127.0.0.1 and never answered" % port in r.stderr
    assert "try --network host" in r.stderr


def test_failing_and_signalled_targets(cs):
    r = cs("docker", "--no-report", IMAGE, "python3", "-c", "import sys; sys.exit(3)")
    assert r.returncode == 5, r.stderr
    r = cs("docker", "--exit-code", "--no-report", IMAGE, "python3", "-c", "import sys; sys.exit(3)")
    assert r.returncode == 3, r.stderr
    r = cs("docker", IMAGE, "python3", "-c", "import os; os.kill(os.getpid(), 9)")
    assert r.returncode == 6, r.stderr
    assert "killed by signal 9" in r.stdout


def test_timeout_removes_the_container(cs):
    t0 = time.monotonic()
    r = cs("docker", "--timeout", "2", IMAGE, "python3", "-c", "import time; time.sleep(60)", timeout=60)
    assert r.returncode == 8, r.stdout + r.stderr
    assert "timed out" in r.stdout
    assert time.monotonic() - t0 < 50


def test_interrupt_removes_the_container(engine, cs):
    env = dict(os.environ, DOCKER_HOST=engine["host"])
    p = subprocess.Popen([COLDSTART, "docker", "--no-report", IMAGE, "python3", "-c",
                          "import time; time.sleep(60)"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not containers(engine) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert containers(engine), "the container never appeared"
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + signal.SIGINT, err
    assert "interrupted by signal 2" in err


def test_killed_coldstart_is_cleaned_up_next_time(engine, cs):
    env = dict(os.environ, DOCKER_HOST=engine["host"])
    p = subprocess.Popen([COLDSTART, "docker", "--no-report", IMAGE, "python3", "-c",
                          "import time; time.sleep(60)"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    name = "coldstart-%d-0" % p.pid
    deadline = time.monotonic() + 30
    while name not in containers(engine) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = containers(engine)
    p.kill()
    p.wait()
    assert left == [name], left
    time.sleep(0.5)
    assert containers(engine) == left  # SIGKILL leaves it running
    r = cs("docker", "--no-report", IMAGE, "python3", "-c", "pass")
    assert r.returncode == 0, r.stderr


def test_other_hosts_containers_are_left_alone(engine, cs):
    """A daemon shared with other machines: their pids mean nothing here."""
    made = docker(engine, "create", "--name", "elsewhere-1", "--label", "coldstart.pid=999999",
                  "--label", "coldstart.host=some-other-host", IMAGE, "python3", "-c", "pass")
    assert made.returncode == 0, made.stderr
    try:
        r = cs("docker", "--no-report", IMAGE, "python3", "-c", "pass")
        assert r.returncode == 0, r.stderr
        assert containers(engine) == ["elsewhere-1"]
    finally:
        docker(engine, "rm", "-f", "elsewhere-1")


# Errors: each with its exit code and message, none of them a hang.

def test_no_docker_cli(cs, tmp_path):
    r = cs("docker", IMAGE, "python3", "-c", "pass", env={"PATH": str(tmp_path)})
    assert r.returncode == 4, r.stderr
    assert "no 'docker' command found on PATH" in r.stderr


def test_no_podman_cli(cs, tmp_path):
    if shutil.which("podman"):
        _skip("podman is installed here; the missing-CLI path is covered by test_no_docker_cli")
    r = cs("docker", "--engine", "podman", IMAGE, "python3", "-c", "pass")
    assert r.returncode == 4, r.stderr
    assert "no 'podman' command found on PATH" in r.stderr


def test_daemon_unreachable(cs, tmp_path):
    r = cs("docker", IMAGE, "python3", "-c", "pass",
           env={"DOCKER_HOST": "unix://%s/missing.sock" % tmp_path})
    assert r.returncode == 4, r.stderr
    assert "engine is unreachable" in r.stderr and "missing.sock" in r.stderr


def test_daemon_that_never_answers(cs):
    """A socket that accepts and stays silent: the engine timeout ends it."""
    d = tempfile.mkdtemp(prefix="cs-mute-", dir="/tmp")
    path = os.path.join(d, "mute.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                pass
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        t0 = time.monotonic()
        r = cs("docker", "--engine-timeout", "2", IMAGE, "python3", "-c", "pass",
               env={"DOCKER_HOST": "unix://" + path}, timeout=60)
        took = time.monotonic() - t0
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        srv.close()
        shutil.rmtree(d)
    assert r.returncode == 4, r.stderr
    assert "did not finish within 2000 ms" in r.stderr
    assert took < 30


def test_missing_image(cs):
    r = cs("docker", "coldstart-no-such-image:1", "python3", "-c", "pass")
    assert r.returncode == 4, r.stderr
    assert "image 'coldstart-no-such-image:1' is not in the engine" in r.stderr
    assert "coldstart never pulls" in r.stderr


def test_container_that_never_starts(cs):
    r = cs("docker", IMAGE, "no-such-command")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "could not be run (status 127: not found in the image)" in r.stderr
    r = cs("docker", "--no-init", IMAGE, "no-such-command")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "the container never started" in r.stderr and "no-such-command" in r.stderr
    # An image with no command at all: the engine refuses to create it.
    r = cs("docker", IMAGE)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "create' failed" in r.stderr


def test_usage_errors(cs):
    r = cs("docker")
    assert r.returncode == 2 and "no image" in r.stderr
    r = cs("docker", "--engine", "lxc", IMAGE)
    assert r.returncode == 2 and "--engine is docker or podman" in r.stderr
    r = cs("docker", "--ready", "unix:/tmp/x.sock", IMAGE, "python3")
    assert r.returncode == 2 and "cannot reach into a container" in r.stderr
    r = cs("docker", "--swap", "1g", IMAGE, "python3")
    assert r.returncode == 2 and "--swap needs --memory" in r.stderr
