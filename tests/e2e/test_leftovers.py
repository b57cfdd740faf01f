"""Nothing a run starts or makes outlives it, also when coldstart is SIGKILLed.

Every run, unconstrained ones and the baseline of a constrained profile
included, lives in a cgroup of its own, so a later run can find and kill
what a SIGKILLed coldstart left running; its trace directory, its
`--ready fn` directory and `coldstart plan`'s FN_LISTENER directory are
under $TMPDIR and are cleaned by the same rule.
The rule never touches what belongs to a live coldstart, in this pid
namespace or another (leftover.h).

Real cgroups need root (v1 here, or v2 where it can be made); those tests
say why they skip otherwise.  Other coldstarts run on this machine at the
same time: every check looks only at this test's own pids and directories.
"""
import fcntl
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, run_coldstart
from test_limits import REASON, live_with_marker, run_dirs, wait_for

needs_cgroups = pytest.mark.skipif(REASON is not None, reason=str(REASON))


def escaping_target(marker):
    """-c code whose grandchild leaves the process group and session, then sleeps."""
    return ("import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        os.execv('/bin/sleep', ['sleep', '%s'])\n"
            "    os._exit(0)\n"
            "time.sleep(300)\n" % marker)


def start(args, env=None):
    return subprocess.Popen([COLDSTART, "profile", "--no-report", "-q"] + [str(a) for a in args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})))


def sigkill(p):
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)


def marker_for(tmp_path):
    # A sleep length no other process on the machine uses.
    return "%d.%06d" % (3000 + os.getpid() % 1000, abs(hash(str(tmp_path))) % 1000000)


def sleepers(marker):
    """The live /bin/sleep MARKER processes (not the coldstart and Python whose code names it)."""
    return live_with_marker("sleep " + marker)


def owned_dirs(tmpdir, pid):
    return sorted(n for n in os.listdir(tmpdir) if n.startswith(("coldstart-trace-%d-" % pid,
                                                                  "coldstart-fn-%d-" % pid)))


@needs_cgroups
@pytest.mark.parametrize("limits", [[], ["--memory", "256m"]], ids=["unconstrained", "baseline"])
def test_sigkilled_runs_tree_is_killed_by_the_next_run(tmp_path, limits):
    marker = marker_for(tmp_path)
    p = start(limits + ["--python", DEBIAN_PYTHON, "-c", escaping_target(marker)])
    try:
        assert wait_for(lambda: sleepers(marker)), p.stderr
        # With limits, the first run is the unconstrained baseline: it has a cgroup too.
        dirs = run_dirs(p.pid)
        assert dirs, "the run has no cgroup of its own"
    finally:
        sigkill(p)
    # Any coldstart on the machine (other people's included) may clean the run
    # from now on, which is the point; it cleans only what it can lock.  Locking
    # the directories first holds the others off while the grandchild is looked
    # at; when one of them was first, the run is being cleaned already.
    held = []
    for d in dirs:
        try:
            fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(fd)
        except BlockingIOError:
            os.close(fd)
    try:
        if len(held) == len(dirs):
            assert sleepers(marker), "the grandchild died with coldstart: nothing to clean"
        else:
            print("another coldstart on this machine cleans the run already")
    finally:
        for fd in held:
            os.close(fd)
    r = run_coldstart("profile", "--no-report", "--python", DEBIAN_PYTHON, "-c", "pass")
    assert r.returncode == 0, r.stderr
    assert wait_for(lambda: not sleepers(marker), timeout=10), \
        "the grandchild of a SIGKILLed run outlived the next run"
    assert not run_dirs(p.pid)


def test_sigkilled_runs_directories_are_cleaned_by_the_next_run(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {"TMPDIR": str(tmpdir)}
    p = start(["--ready", "fn", "--ready-timeout", "300", "--python", DEBIAN_PYTHON, "-c",
               "import time; time.sleep(300)"], env)
    try:
        assert wait_for(lambda: len(owned_dirs(tmpdir, p.pid)) == 2), os.listdir(tmpdir)
    finally:
        sigkill(p)
    left = owned_dirs(tmpdir, p.pid)
    assert len(left) == 2, left
    r = run_coldstart("profile", "--no-report", "--python", DEBIAN_PYTHON, "-c", "pass", env=env)
    assert r.returncode == 0, r.stderr
    assert owned_dirs(tmpdir, p.pid) == []
    assert os.listdir(tmpdir) == []


def test_fn_directory_honours_tmpdir(coldstart, tmp_path):
    code = "import os, sys; sys.stderr.write('FN=' + os.environ['FN_LISTENER'] + '\\n')"
    r = coldstart("profile", "--no-report", "--ready", "fn", "--ready-timeout", "1",
                  "--python", DEBIAN_PYTHON, "-c", code, env={"TMPDIR": str(tmp_path)})
    line = [ln for ln in r.stderr.splitlines() if ln.startswith("FN=")]
    assert line, r.stderr
    assert line[0].startswith("FN=unix:%s/coldstart-fn-" % tmp_path), line[0]
    assert line[0].endswith("/lsnr.sock")
    assert os.listdir(tmp_path) == []


@pytest.fixture
def short_tmpdir():
    made = []

    def make():
        made.append(tempfile.mkdtemp(prefix="cs-left", dir="/tmp"))
        return pathlib.Path(made[-1])

    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


def plan_fn(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("import time\ndef handler(ctx, data=None):\n    %s\n    return 'ok'\n" % body)
    (tmp_path / "req.json").write_text("{}")
    return ["plan", "--python", DEBIAN_PYTHON, "--fn", str(path), "--request", str(tmp_path / "req.json"),
            "-o", str(tmp_path / (name + ".plan.json"))]


@pytest.mark.parametrize("next_run", ["plan", "profile"])
def test_sigkilled_plans_directory_is_cleaned_by_the_next_run(tmp_path, short_tmpdir, next_run):
    """`coldstart plan`'s FN_LISTENER directory is under $TMPDIR, kept while
    its plan lives, and removed by the next run (a plan or a profile) once
    the plan was SIGKILLed."""
    # Short: the FDK's socket path in it must fit a unix socket address.
    tmpdir = short_tmpdir()
    env = {"TMPDIR": str(tmpdir)}
    p = subprocess.Popen([COLDSTART] + plan_fn(tmp_path, "slowfunc.py", "time.sleep(300)"),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **env))
    mine = "coldstart-plan-%d-" % p.pid

    def listening():
        return [n for n in os.listdir(tmpdir) if n.startswith(mine) and (tmpdir / n / "lsnr.sock").is_symlink()]

    try:
        assert wait_for(listening), (os.listdir(tmpdir), p.poll() is not None and p.stderr.read())
        live = sorted(os.listdir(tmpdir))
        # Its FN_LISTENER directory and its private one (docs/plan.md, "Files written while planning").
        assert len(listening()) == 1 and len(live) == 2 and all(n.startswith(mine) for n in live), live
        r = run_coldstart("profile", "--no-report", "--python", DEBIAN_PYTHON, "-c", "pass", env=env)
        assert r.returncode == 0, r.stderr
        assert sorted(os.listdir(tmpdir)) == live, "a live plan's directory was removed"
    finally:
        sigkill(p)
    assert sorted(os.listdir(tmpdir)) == live
    if next_run == "plan":
        r = run_coldstart(*plan_fn(tmp_path, "fastfunc.py", "pass"), env=env)
    else:
        r = run_coldstart("profile", "--no-report", "--python", DEBIAN_PYTHON, "-c", "pass", env=env)
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmpdir) == []


def test_fn_directory_too_long_for_a_socket_says_so(coldstart, tmp_path):
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    r = coldstart("profile", "--no-report", "--ready", "fn", "--python", DEBIAN_PYTHON, "-c", "pass",
                  env={"TMPDIR": str(deep)})
    assert r.returncode == 1, r.stderr
    assert "set TMPDIR to a shorter directory" in r.stderr


def test_kept_trace_survives_later_runs(coldstart, tmp_path):
    env = {"TMPDIR": str(tmp_path), "COLDSTART_KEEP_TRACE": "1"}
    r = coldstart("profile", "--no-report", "--python", DEBIAN_PYTHON, "-c", "pass", env=env)
    assert r.returncode == 0, r.stderr
    kept = [n for n in os.listdir(tmp_path) if n.startswith("coldstart-trace-kept-")]
    assert len(kept) == 1, os.listdir(tmp_path)
    r = coldstart("profile", "--no-report", "--python", DEBIAN_PYTHON, "-c", "pass",
                  env={"TMPDIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path) == kept


@needs_cgroups
def test_live_runs_leftovers_are_never_touched(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {"TMPDIR": str(tmpdir)}
    marker = marker_for(tmp_path)
    code = ("import subprocess, time\n"
            "subprocess.Popen(['/bin/sleep', '%s'])\n"
            "time.sleep(300)\n" % marker)
    a = start(["--ready", "fn", "--ready-timeout", "300", "--python", DEBIAN_PYTHON, "-c", code], env)
    try:
        assert wait_for(lambda: sleepers(marker) and len(owned_dirs(tmpdir, a.pid)) == 2)
        cgroups, dirs = run_dirs(a.pid), owned_dirs(tmpdir, a.pid)
        assert cgroups
        for limits in ([], ["--memory", "256m", "--no-baseline"]):
            r = run_coldstart("profile", "--no-report", *limits, "--python", DEBIAN_PYTHON, "-c", "pass",
                              env=env)
            assert r.returncode == 0, r.stderr
        assert run_dirs(a.pid) == cgroups
        assert owned_dirs(tmpdir, a.pid) == dirs
        assert sleepers(marker) and a.poll() is None
    finally:
        a.send_signal(signal.SIGTERM)
        rc = a.wait(timeout=60)
    assert rc == 128 + signal.SIGTERM, a.stderr.read()
    assert not run_dirs(a.pid) and owned_dirs(tmpdir, a.pid) == []
    assert wait_for(lambda: not sleepers(marker))


def _unshare_reason():
    if REASON is not None:
        return REASON
    if not shutil.which("unshare"):
        return "no unshare(1) to make a pid namespace (util-linux)"
    r = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, text=True)
    if r.returncode:
        return "cannot make a pid namespace: " + r.stderr.strip()
    return None


UNSHARE_REASON = _unshare_reason()


@pytest.mark.skipif(UNSHARE_REASON is not None, reason=str(UNSHARE_REASON))
def test_other_pid_namespace_cleans_quickly_and_harmlessly(tmp_path):
    """Live coldstarts here look dead from a new pid namespace (their pids mean
    nothing there): their locks keep them, and nothing waits on cgroups whose
    processes that namespace cannot see (about 1 s for each, before)."""
    marker = marker_for(tmp_path)
    code = ("import subprocess, time\n"
            "subprocess.Popen(['/bin/sleep', '%s'])\n"
            "time.sleep(30)\n" % marker)
    foreign = [start(limits + ["--python", DEBIAN_PYTHON, "-c", code])
               for limits in ([], ["--memory", "256m", "--no-baseline"], ["--cpus", "1", "--no-baseline"])]
    try:
        assert wait_for(lambda: len(sleepers(marker)) == 3 and all(run_dirs(f.pid) for f in foreign))
        cgroups = {f.pid: run_dirs(f.pid) for f in foreign}
        args = [COLDSTART, "profile", "--no-report", "--memory", "256m", "--no-baseline",
                "--python", DEBIAN_PYTHON, "-c", "pass"]
        spent = {}
        # Side by side, twice each: the same run here and in a new pid namespace.
        for _ in range(2):
            for where, cmd in (("here", args), ("pid namespace", ["unshare", "--pid", "--fork", "--mount-proc"]
                                                 + args)):
                t0 = time.monotonic()
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                spent.setdefault(where, []).append(time.monotonic() - t0)
                assert r.returncode == 0, (where, r.stderr)
        print("run here %s s, in a new pid namespace %s s, with %d foreign cgroup directories"
              % (spent["here"], spent["pid namespace"], sum(len(c) for c in cgroups.values())))
        # Before, each foreign directory cost about 1 s: 8 of them here.
        assert min(spent["pid namespace"]) < min(spent["here"]) + 1.0, spent
        assert {f.pid: run_dirs(f.pid) for f in foreign} == cgroups
        assert len(sleepers(marker)) == 3
    finally:
        for f in foreign:
            f.send_signal(signal.SIGTERM)
        codes = [f.wait(timeout=60) for f in foreign]
    assert codes == [128 + signal.SIGTERM] * 3
