"""Wall time runs from the target's exec to its exit.

Each run's wall time is compared with the target's own account of its
lifetime, CLOCK_MONOTONIC at its start and at its exit, and must contain
that span and exceed it by at most 2 ms.  Two targets keep such accounts:

- tests/fixtures/wallclock/target.c, a static binary that reads the clock
  first thing in main and last thing before _exit: what lies outside its
  span is the execve itself and an almost empty teardown (about 0.5 ms
  here), so the bound tests coldstart.  It runs plain, and with a child that
  keeps stderr open past the target's exit, so that no end of file comes with
  the exit and only the exit itself can wake coldstart.
- `python3 -c pass` with tests/fixtures/wallclock/wallclock.c preloaded (a
  constructor after the dynamic loading, a destructor in exit()), the case
  the issue measured: the interpreter's exec and loading (about 0.9 ms here)
  and the teardown of its heap (about 0.5 ms) are wall time outside that
  span, with a tail of their own (its pages faulted back in after the page
  cache dropped them, interrupts: 1 run in 240 was 2.37 ms).  So the 2 ms
  bound holds for the median of its runs, and every run must lie between
  its own span and 10 ms more (a loop that noticed the exit only on a 50 ms
  poll, as before, fails both).

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


def _fifo():
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))


def _fifo_reason():
    try:
        subprocess.run(["/bin/true"], check=True, preexec_fn=_fifo)
    except (OSError, subprocess.SubprocessError) as e:
        return "SCHED_FIFO unavailable (%s): the comparison would measure the machine's load" % e
    return None


FIFO_REASON = _fifo_reason()
pytestmark = pytest.mark.skipif(FIFO_REASON is not None, reason=str(FIFO_REASON))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("wallclock")
    so, target = str(d / "wallclock.so"), str(d / "target")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", so, os.path.join(FIXTURE, "wallclock.c")],
                   check=True)
    if subprocess.run(["cc", "-O2", "-static", "-o", target, os.path.join(FIXTURE, "target.c")]).returncode:
        pytest.fail("cannot link tests/fixtures/wallclock/target.c statically (libc6-dev has libc.a)")
    return so, target


def profile_fifo(args, env):
    p = subprocess.run([COLDSTART, "profile", "--json"] + args, capture_output=True, text=True,
                       env=dict(os.environ, **env), timeout=300, preexec_fn=_fifo)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["runs"]


def own_spans(d):
    """[(pid, span in ms)] of the processes that kept an account in d, in the order they started."""
    out = []
    for f in d.iterdir():
        pid, start, end = map(int, f.read_text().split())
        out.append((start, pid, (end - start) / 1e6))
    return [(pid, span) for _, pid, span in sorted(out)]


def check(errors, most=2.0):
    # Never shorter than the target's own span, and at most `most` ms longer.
    assert all(0 <= e <= most for e in errors), " ".join("%.3f" % e for e in errors)


@pytest.mark.parametrize("wake", sorted(WAKE))
@pytest.mark.parametrize("mode", ["plain", "child"])
def test_static_target_wall_within_2ms(built, tmp_path, mode, wake):
    clock = tmp_path / "clock"
    clock.mkdir()
    runs = profile_fifo(["-n", "10", "--", built[1], mode], dict(WAKE[wake], WALLCLOCK_OUT=str(clock)))
    spans = own_spans(clock)
    assert len(spans) == len(runs) == 10
    check([r["wall_us"] / 1e3 - span for r, (_, span) in zip(runs, spans)])


@pytest.mark.parametrize("wake", sorted(WAKE))
def test_python_pass_wall_within_2ms(built, tmp_path, wake):
    clock = tmp_path / "clock"
    clock.mkdir()
    runs = profile_fifo(["-n", "10", "--python", DEBIAN_PYTHON, "-c", "pass"],
                        dict(WAKE[wake], LD_PRELOAD=built[0], WALLCLOCK_OUT=str(clock)))
    # The preload also reports coldstart and its interpreter probe: match by pid.
    spans = dict(own_spans(clock))
    errors = sorted(r["wall_us"] / 1e3 - spans[r["processes"][0]["pid"]] for r in runs)
    check(errors, most=10.0)
    assert errors[len(errors) // 2] <= 2.0, " ".join("%.3f" % e for e in errors)
