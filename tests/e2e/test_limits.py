"""Constrained runs through the binary: --cpus, --memory, presets, and that the
run's cgroup is gone afterwards on every path (normal exit, --timeout, SIGINT,
SIGTERM, and a SIGKILLed coldstart followed by another run).

Real-cgroup tests need root and a usable cgroup (v1 here, or v2 with
controllers); they skip with the reason otherwise.  The fake-tree and
bad-input tests run anywhere.
"""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, run_coldstart

CGROUP_FS = "/sys/fs/cgroup"
CPU_LOOP = "n = 0\nfor i in range(3000000):\n    n += i\n"


def _limits_reason():
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    if not os.access(COLDSTART, os.X_OK):
        return None  # the coldstart fixture fails loudly instead
    out = run_coldstart("profile", "--memory", "256m", "--no-baseline", "--python", DEBIAN_PYTHON,
                        "-c", "pass", timeout=120)
    if out.returncode == 3:
        return "no usable cgroup here: " + out.stderr.strip()
    return None


REASON = _limits_reason()
needs_cgroups = pytest.mark.skipif(REASON is not None, reason=str(REASON))


def _run_places():
    """Where coldstart makes run cgroups for a child of ours: for every cgroup
    mount, the mount root, our own cgroup and (v2) its parent."""
    own = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctls, path = line.rstrip("\n").split(":", 2)
            own[ctls] = path
    places = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            fstype, mroot, mnt = fields[sep + 1], fields[3], fields[4]
            if fstype == "cgroup2":
                paths = [own.get("", "/")]
            elif fstype == "cgroup":
                opts = set(fields[sep + 3].split(","))
                paths = [p for c, p in own.items() if c and set(c.split(",")) <= opts]
            else:
                continue
            places.add(mnt)
            for path in paths:
                if mroot != "/" and path.startswith(mroot):
                    path = path[len(mroot):]
                places.add(os.path.normpath(mnt + "/" + path.strip("/")))
                places.add(os.path.dirname(os.path.normpath(mnt + "/" + path.strip("/"))))
    return sorted(p for p in places if p.startswith(CGROUP_FS))


RUN_PLACES = _run_places()


def run_dirs(pid):
    """Every coldstart-<pid>-* directory where coldstart makes run cgroups."""
    prefix = "coldstart-%d-" % pid
    found = []
    for place in RUN_PLACES:
        try:
            names = os.listdir(place)
        except OSError:
            continue
        found += [os.path.join(place, n) for n in names if n.startswith(prefix)]
    return found


def live_with_marker(marker):
    """Pids of live (non-zombie) processes whose command line has marker."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open("/proc/%s/stat" % entry) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z" and int(entry) != os.getpid():
            pids.append(int(entry))
    return pids


def wait_for(cond, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


def profile(*args, timeout=300):
    """Runs coldstart profile --json; returns (returncode, profile or None, stderr, pid)."""
    p = subprocess.Popen([COLDSTART, "profile", "--json"] + [str(a) for a in args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=timeout)
    data = json.loads(out) if out.strip().startswith("{") else None
    return p.returncode, data, err, p.pid


def measured(data):
    """The measured runs: not warm-up, not the unconstrained baseline."""
    return [r for r in data["runs"] if not r["warmup"] and not r.get("baseline")]


def spawn_sleeper_target(marker):
    """-c code that starts a grandchild sleeper (marker in its argv) and waits."""
    return ("import subprocess, time\n"
            "subprocess.Popen(['/bin/sleep', '%s'])\n"
            "time.sleep(300)\n" % marker)


@needs_cgroups
def test_cpus_slows_cpu_bound_loop(coldstart):
    # Under limits, profile first makes an unconstrained baseline run.
    rc, data, err, pid = profile("--cpus", "0.1", "--python", DEBIAN_PYTHON, "-c", CPU_LOOP)
    assert rc == 0, err
    assert run_dirs(pid) == []
    f = [r for r in data["runs"] if r.get("baseline")][0]
    r = measured(data)[0]
    assert f["cgroup"] is None
    free_cpu = f["user_us"] + f["sys_us"]
    # Against the CPU time the loop needs, not the free run's wall time,
    # which other load on a small host stretches.
    slowdown = r["wall_us"] / free_cpu
    print("free: wall %d us, cpu %d us; --cpus 0.1: wall %d us, cgroup %s; wall/cpu %.1fx, "
          "wall/wall %.1fx" % (f["wall_us"], free_cpu, r["wall_us"], r["cgroup"], slowdown,
                               r["wall_us"] / f["wall_us"]))
    assert data["limits"]["cpus"] == 0.1
    assert data["limits"]["backend"] in ("cgroup-v1", "cgroup-v2")
    assert r["cgroup"]["nr_throttled"] > 0
    assert r["cgroup"]["throttled_us"] > 0
    assert slowdown > 4


@needs_cgroups
def test_memory_limit_oom_is_reported(coldstart):
    rc, data, err, pid = profile("--memory", "64m", "--no-baseline", "--python", DEBIAN_PYTHON,
                                 "-c", "b = b'x' * (200 * 1024 * 1024)\nprint(len(b))")
    assert rc == 7, err
    run = measured(data)[0]
    assert run["status"] == "oom"
    assert run["cgroup"]["oom_kills"] >= 1
    assert 32 * 2**20 < run["cgroup"]["memory_peak"] <= 64 * 2**20
    assert data["limits"]["memory"] == 64 * 2**20
    assert data["limits"]["swap"] == 0
    assert run_dirs(pid) == []
    # And the human report says so.
    out = coldstart("profile", "--memory", "64m", "--no-baseline", "--python", DEBIAN_PYTHON,
                    "-c", "b = b'x' * (200 * 1024 * 1024)")
    assert out.returncode == 7
    assert "OOM" in out.stdout


@needs_cgroups
def test_memory_under_the_limit_runs(coldstart):
    rc, data, err, pid = profile("--memory", "256m", "--no-baseline", "--python", DEBIAN_PYTHON,
                                 "-c", "b = b'x' * (64 * 1024 * 1024)")
    assert rc == 0, err
    run = measured(data)[0]
    assert run["status"] == "exited"
    assert run["cgroup"]["oom_kills"] == 0
    assert run["cgroup"]["memory_peak"] >= 64 * 2**20
    assert run_dirs(pid) == []


@needs_cgroups
@pytest.mark.parametrize("preset,cpus,memory", [
    ("fn", 0.1, 128 * 2**20),
    ("lambda:1769", 1.0, 1769 * 2**20),
    ("lambda:256", 256 / 1769, 256 * 2**20),
])
def test_presets(coldstart, preset, cpus, memory):
    rc, data, err, pid = profile("--preset", preset, "--no-baseline", "--python", DEBIAN_PYTHON,
                                 "-c", "pass")
    assert rc == 0, err
    assert data["limits"]["preset"] == preset
    assert abs(data["limits"]["cpus"] - cpus) < 1e-6
    assert data["limits"]["memory"] == memory
    assert run_dirs(pid) == []


@needs_cgroups
def test_no_cgroup_left_after_runs_on_every_python(coldstart, python):
    rc, data, err, pid = profile("-n", "3", "--memory", "256m", "--pids", "64", "--python", python,
                                 "-c", "import json")
    assert rc == 0, err
    assert len(measured(data)) == 3
    for r in measured(data):
        assert r["cgroup"]["cpu_usage_us"] > 0
        assert r["cgroup"]["memory_peak"] > 0
    assert run_dirs(pid) == []


@needs_cgroups
def test_timeout_kills_everything_and_removes_cgroup(coldstart):
    marker = "301.%d" % os.getpid()
    rc, data, err, pid = profile("--timeout", "2", "--memory", "256m", "--no-baseline",
                                 "--python", DEBIAN_PYTHON, "-c", spawn_sleeper_target(marker),
                                 timeout=60)
    assert rc == 8, err
    assert measured(data)[0]["status"] == "timeout"
    assert run_dirs(pid) == []
    assert wait_for(lambda: not live_with_marker(marker), 10), live_with_marker(marker)


@needs_cgroups
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_to_coldstart_cleans_up(coldstart, sig, code):
    marker = "302.%d%d" % (os.getpid(), sig)
    p = subprocess.Popen([COLDSTART, "profile", "--memory", "256m", "--no-baseline",
                          "--python", DEBIAN_PYTHON, "-c", spawn_sleeper_target(marker)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: run_dirs(p.pid) and live_with_marker(marker)), \
            "the target never started inside its cgroup"
        dirs = run_dirs(p.pid)
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == code, err
    assert run_dirs(p.pid) == []
    assert not [d for d in dirs if os.path.exists(d)]
    assert wait_for(lambda: not live_with_marker(marker), 10), live_with_marker(marker)


@needs_cgroups
def test_sigkilled_coldstart_is_cleaned_by_next_run(coldstart):
    marker = "303.%d" % os.getpid()
    p = subprocess.Popen([COLDSTART, "profile", "--memory", "256m", "--no-baseline",
                          "--python", DEBIAN_PYTHON, "-c", spawn_sleeper_target(marker)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: run_dirs(p.pid) and live_with_marker(marker)), \
            "the target never started inside its cgroup"
        p.kill()
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    p.stdout.close()
    p.stderr.close()
    # SIGKILL leaves no chance to clean up: the cgroup stays, the sleeper in it.
    # (Another coldstart on this host may clean the hierarchy roots first; the
    # directory in our own cgroup is only ever seen from here.)
    left = run_dirs(p.pid)
    assert left, "expected the killed coldstart's cgroup to be left behind"
    if not live_with_marker(marker):
        print("note: another coldstart on this host already killed the sleeper")
    # The next constrained run removes it and what is inside.
    rc, data, err, pid = profile("--memory", "128m", "--no-baseline", "--python", DEBIAN_PYTHON,
                                 "-c", "pass")
    assert rc == 0, err
    assert run_dirs(p.pid) == []
    assert not [d for d in left if os.path.exists(d)]
    assert run_dirs(pid) == []
    assert wait_for(lambda: not live_with_marker(marker), 10), live_with_marker(marker)


def test_limits_unavailable_exit_3(coldstart, tmp_path):
    # An empty directory as the cgroup root: no cgroup filesystem at all.
    env = {"COLDSTART_CGROUP_ROOT": str(tmp_path)}
    out = coldstart("profile", "--cpus", "0.1", "--python", DEBIAN_PYTHON, "-c", "pass", env=env)
    assert out.returncode == 3, out.stderr
    assert "--no-limits" in out.stderr
    assert "root" in out.stderr
    out = coldstart("profile", "--cpus", "0.1", "--no-limits", "--python", DEBIAN_PYTHON,
                    "-c", "pass", env=env)
    assert out.returncode == 0, out.stderr


def test_v2_without_controllers_exit_3(coldstart, tmp_path):
    # Like this host's cgroup2 mount: no cpu or memory controller offered.
    (tmp_path / "cgroup.controllers").write_text("pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    out = coldstart("profile", "--memory", "128m", "--python", DEBIAN_PYTHON, "-c", "pass",
                    env={"COLDSTART_CGROUP_ROOT": str(tmp_path)})
    assert out.returncode == 3, out.stderr
    assert "'memory'" in out.stderr
    assert "delegate a cgroup v2 subtree" in out.stderr


def test_fake_v2_tree_end_to_end(coldstart, tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    out = coldstart("profile", "--json", "--cpus", "0.5", "--memory", "128m", "--pids", "32",
                    "--python", DEBIAN_PYTHON, "-c", "pass",
                    env={"COLDSTART_CGROUP_ROOT": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["limits"]["backend"] == "cgroup-v2"
    # A fake tree has no kernel behind it: the figures are unknown, not zero.
    assert measured(data)[0]["cgroup"]["cpu_usage_us"] == -1
    enabled = (tmp_path / "cgroup.subtree_control").read_text().split()
    assert {"cpu", "memory", "pids"} <= set(enabled)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("coldstart-")] == []


@pytest.mark.parametrize("args,message", [
    (["--cpus", "abc"], "invalid --cpus 'abc'"),
    (["--cpus", "0.001"], "the smallest CPU limit is 0.01"),
    (["--memory", "12q"], "invalid --memory '12q'"),
    (["--memory", "1k"], "the smallest memory limit is 4m"),
    (["--pids", "0"], "invalid --pids '0'"),
    (["--cpuset", "1-0"], "invalid --cpuset '1-0'"),
    (["--preset", "lambda:64"], "128 to 10240"),
    (["--preset", "aws"], "expected 'fn' or 'lambda:MB'"),
])
def test_bad_limit_values_are_usage_errors(coldstart, args, message):
    out = coldstart("profile", *args, "--python", DEBIAN_PYTHON, "-c", "pass")
    assert out.returncode == 2, out.stderr
    assert message in out.stderr
