"""Wall time runs from the target's exec to its exit.

Each run's wall time is compared with the target's own account of its
lifetime, CLOCK_MONOTONIC at its start and at its exit.  It must contain
that span, and exceed it by no more than a reference observer's wall time
does for the same command, run by run, alternating with coldstart's:
0.5 ms more in the median of ten pairs, 2 ms more in all but the worst two.
The reference (tests/fixtures/wallclock/observe.c) reads the clock in the
child right before execv, as coldstart does, and again the moment a pidfd
wakes a parent that has nothing else to do; it runs under coldstart itself,
so that its runs see what coldstart's see (the tracer, importtime, the stderr
pipe, the cgroup).  A loop that noticed the exit only on a 50 ms poll, as
before, fails both bounds; so does one that waited for the end of file.

What lies outside a target's span -- the execve, the dynamic loading, the
teardown after its last reading -- is the machine's, and it drifts: for
`python3 -c pass` the reference saw 1.5 ms and 2.2 ms within the same few
minutes here, where an absolute 2 ms bound on coldstart's median tested the
machine (it failed in CI at 2.04 ms).  Now and then a run's execve itself
waits in the kernel (seen: 8.4 ms in uninterruptible sleep, woken by an
unrelated process), which no observer controls; hence the worst two pairs
are not bounded.  Two targets keep an account:

- tests/fixtures/wallclock/target.c, a static binary that reads the clock
  first thing in main and last thing before _exit (about 0.6 ms outside its
  span).  It runs plain, and with a child that keeps stderr open past the
  target's exit, so that no end of file comes with the exit and only the
  exit itself can wake coldstart.
- `python3 -c pass` with tests/fixtures/wallclock/wallclock.c preloaded (a
  constructor after the dynamic loading, a destructor in exit()), the case
  the issue measured.

The comparison runs under SCHED_FIFO: on a loaded machine a target can wait
for a CPU before its first clock reading or after its last, which is wall
time its own clock cannot see, and the test would then measure the machine's
other work.  Real-time priority needs root; without it the tests say so and
skip.  bench/wall_bench.sh prints the same error under the machine's
ordinary load.  Both ways to notice the exit are tested: a pidfd, and
SIGCHLD through the signal pipe (COLDSTART_NO_PIDFD=1).
"""
import json
import os
import subprocess

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, ROOT

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "wallclock")
WAKE = {"pidfd": {}, "sigchld": {"COLDSTART_NO_PIDFD": "1"}}
EXCESS_MS = 0.5
ROUNDS = 10


def _fifo():
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))


def _fifo_reason():
    try:
        subprocess.run(["/bin/true"], check=True, preexec_fn=_fifo)
    except (OSError, subprocess.SubprocessError) as e:
        return "SCHED_FIFO unavailable (%s): the comparison would measure the machine's load" % e
    return None


def _sanitized_reason():
    """make check runs a binary built with AddressSanitizer: its overhead is
    what these tests measure, and its runtime refuses the LD_PRELOADed
    clock ahead of it."""
    try:
        with open(COLDSTART, "rb") as f:
            if b"__asan_init" in f.read():
                return "%s is built with AddressSanitizer (make check): its own wall time is what is measured" \
                    % COLDSTART
    except OSError:
        pass
    return None


FIFO_REASON = _sanitized_reason() or _fifo_reason()
pytestmark = pytest.mark.skipif(FIFO_REASON is not None, reason=str(FIFO_REASON))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("wallclock")
    so, target, observe = str(d / "wallclock.so"), str(d / "target"), str(d / "observe")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", so, os.path.join(FIXTURE, "wallclock.c")],
                   check=True)
    subprocess.run(["cc", "-O2", "-o", observe, os.path.join(FIXTURE, "observe.c")], check=True)
    if subprocess.run(["cc", "-O2", "-static", "-o", target, os.path.join(FIXTURE, "target.c")]).returncode:
        pytest.fail("cannot link tests/fixtures/wallclock/target.c statically (libc6-dev has libc.a)")
    return so, target, observe


def profile_fifo(args, env):
    p = subprocess.run([COLDSTART, "profile", "--json"] + args, capture_output=True, text=True,
                       env=dict(os.environ, **env), timeout=300, preexec_fn=_fifo)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["runs"]


def observe_fifo(built, tmp_path, n, profile_args, argv, env):
    """[(pid, wall ms)] of n runs of argv seen by the reference observer,
    itself run by coldstart (profile_args before the command), so that the
    runs see what coldstart's own runs see: the tracer, importtime, the
    stderr pipe, the cgroup."""
    out = tmp_path / "observed"
    profile_fifo(["-q", "-o", str(tmp_path / "observer.json")] + profile_args +
                 ["--", built[2], str(n), str(out)] + argv, env)
    seen = [(int(pid), int(ns) / 1e6) for pid, ns in (line.split() for line in out.read_text().splitlines())]
    out.unlink()
    assert len(seen) == n, seen
    return seen


def own_spans(d):
    """{pid: span in ms} of the processes that kept an account in d, in the order they started."""
    out = []
    for f in d.iterdir():
        pid, start, end = map(int, f.read_text().split())
        out.append((start, pid, (end - start) / 1e6))
    return {pid: span for _, pid, span in sorted(out)}


def compare(built, tmp_path, python, args, argv, env):
    """[(coldstart's error, the reference observer's error)] of ROUNDS
    rounds, in ms: each run's wall time less the target's own span;
    coldstart runs args, the observer argv.  The two alternate run by run,
    so that a pair sees the same machine (its cost of exec and teardown
    drifts by half a millisecond within minutes here)."""
    clock = tmp_path / "clock"
    clock.mkdir()
    env = dict(env, WALLCLOCK_OUT=str(clock))
    py = ["--python", python] if python else []
    pairs = []
    for _ in range(ROUNDS):
        before = set(own_spans(clock))
        (pid, wall), = observe_fifo(built, tmp_path, 1, py, argv, env)
        run, = profile_fifo(py + args, env)
        spans = own_spans(clock)
        # A Python run names its process (the preload also reports coldstart
        # and its interpreter probe: match by pid); the static target's run is
        # the one account that is new and not the observer's.
        ours = run["processes"][0]["pid"]
        if ours <= 0:
            ours, = set(spans) - before - {pid}
        pairs.append((run["wall_us"] / 1e3 - spans[ours], wall - spans[pid]))
    return pairs


def check(pairs):
    text = " ".join("%.3f/%.3f" % p for p in pairs) + " (coldstart/reference, ms)"
    excess = sorted(ours - ref for ours, ref in pairs)
    # Never shorter than the target's own span.
    assert all(ours >= 0 for ours, _ in pairs), text
    # What coldstart adds to what the machine costs anyway: in the median,
    # and in all but the worst two of ten pairs (a run that waited in the
    # kernel inside execve is not the observer's doing: see the docstring).
    assert excess[len(excess) // 2] <= EXCESS_MS, text
    assert excess[-3] <= 2.0, text


@pytest.mark.parametrize("wake", sorted(WAKE))
@pytest.mark.parametrize("mode", ["plain", "child"])
def test_static_target_wall_within_half_a_ms_of_the_reference(built, tmp_path, mode, wake):
    check(compare(built, tmp_path, None, ["--", built[1], mode], [built[1], mode], WAKE[wake]))


@pytest.mark.parametrize("wake", sorted(WAKE))
def test_python_pass_wall_within_half_a_ms_of_the_reference(built, tmp_path, wake):
    check(compare(built, tmp_path, DEBIAN_PYTHON, ["-c", "pass"], [DEBIAN_PYTHON, "-c", "pass"],
                   dict(WAKE[wake], LD_PRELOAD=built[0])))
