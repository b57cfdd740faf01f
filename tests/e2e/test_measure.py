"""The measuring session through the binary: under limits, `profile` makes as
many unconstrained runs as measured ones, and the report's "N x slower" line
compares the medians of both -- or says what it compares when a profile holds
something else (one unconstrained run, from an older coldstart).

The limits go to a fake cgroup v2 tree ($COLDSTART_CGROUP_ROOT), so this runs
without root; what the limits do to a real target is test_limits.py's.
"""
import json
import re
import statistics

import pytest

from conftest import DEBIAN_PYTHON

# The lines read whole: --wide keeps the report from wrapping them at 100 columns (docs/report.md).
SLOWER = re.compile(r"unconstrained   wall .* -> ([\d.]+)x slower wall, ([\d.]+)x slower imports under the limits(.*)")


@pytest.fixture
def fake_v2(tmp_path):
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (root / "cgroup.subtree_control").write_text("")
    return {"COLDSTART_CGROUP_ROOT": str(root)}


def imports_total(run):
    # The main process's import total, as the report computes it: roots' cumulative times.
    return sum(n[4] for n in run["processes"][0]["nodes"] if n[2] == -1)


def ratio(runs_a, runs_b, key):
    return statistics.median([key(r) for r in runs_a]) / statistics.median([key(r) for r in runs_b])


def test_as_many_unconstrained_runs_as_measured(coldstart, fake_v2, tmp_path):
    out = tmp_path / "p.json"
    r = coldstart("profile", "-n", "3", "--warmup", "1", "--cpus", "0.5", "-o", out, "--top", "1", "--wide",
                  "--python", DEBIAN_PYTHON, "-c", "import json, email.parser", env=fake_v2)
    assert r.returncode == 0, r.stderr
    runs = json.loads(out.read_text())["runs"]
    # Unconstrained first (no cgroup), then the warm-up and the measured runs under the limits.
    assert [(x["baseline"], x["warmup"]) for x in runs] == \
        [(True, True)] * 3 + [(False, True)] + [(False, False)] * 3
    assert all(x["cgroup"] is None for x in runs[:3])
    assert all(x["cgroup"] is not None for x in runs[3:])
    m = SLOWER.search(r.stdout)
    assert m, r.stdout
    assert m.group(3) == " (medians of 3 runs each)"
    base, measured = runs[:3], runs[4:]
    assert float(m.group(1)) == pytest.approx(ratio(measured, base, lambda x: x["wall_us"]), abs=0.051)
    assert float(m.group(2)) == pytest.approx(ratio(measured, base, imports_total), abs=0.051)

    # A profile that holds one unconstrained run (an older coldstart's) says so.
    doc = json.loads(out.read_text())
    doc["runs"] = doc["runs"][:1] + doc["runs"][3:]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    r = coldstart("report", "--top", "1", "--wide", old)
    assert r.returncode == 0, r.stderr
    m = SLOWER.search(r.stdout)
    assert m, r.stdout
    assert m.group(3) == " (one unconstrained run against the median of 3)"
    assert float(m.group(1)) == pytest.approx(ratio(measured, base[:1], lambda x: x["wall_us"]), abs=0.051)


def test_one_run_each_and_no_baseline(coldstart, fake_v2, tmp_path):
    r = coldstart("profile", "--json", "--memory", "256m", "--python", DEBIAN_PYTHON, "-c", "pass", env=fake_v2)
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["runs"]
    assert [x["baseline"] for x in runs] == [True, False]
    r = coldstart("profile", "--top", "1", "--wide", "--memory", "256m", "--python", DEBIAN_PYTHON, "-c", "pass", env=fake_v2)
    m = SLOWER.search(r.stdout)
    assert m and m.group(3) == "", r.stdout

    r = coldstart("profile", "--json", "-n", "2", "--memory", "256m", "--no-baseline", "--python", DEBIAN_PYTHON,
                  "-c", "pass", env=fake_v2)
    assert r.returncode == 0, r.stderr
    assert [x["baseline"] for x in json.loads(r.stdout)["runs"]] == [False, False]
    # Without limits there is nothing to compare with.
    r = coldstart("profile", "--json", "-n", "2", "--python", DEBIAN_PYTHON, "-c", "pass")
    assert [x["baseline"] for x in json.loads(r.stdout)["runs"]] == [False, False]
