"""`make demo` (samples/demo.sh) tells the whole story on one screen: the
bundled Fn function under fdk-python, behind coldstart-fdk, and behind
coldstart-fdk with a verified start-up plan, each with ready and first
response side by side."""

import os
import subprocess

import json

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON as PY, ROOT as REPO



@pytest.mark.skipif(not os.path.exists(PY), reason="needs Debian's /usr/bin/python3")
def test_demo_shows_three_variants_and_the_plan_answers_first(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run(["sh", os.path.join(REPO, "samples", "demo.sh"), COLDSTART, PY, str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) <= 40, "the demo must fit one screen:\n" + proc.stdout
    for title in ("== 1. the fdk-python way", "== 2. the same function behind coldstart-fdk",
                  "== 3. the same with a verified start-up plan"):
        assert any(line.startswith(title) for line in lines), proc.stdout
    # The plan the demo applied was verified, and the table reads from the
    # profiles the demo wrote.
    assert (out / "plan.json").exists() and (out / "coldstart-fdk-plan.json").exists()
    table = lines[lines.index(next(l for l in lines if l.startswith("== side by side"))):]
    rows = {l.split()[0]: l for l in table[2:5]}
    assert set(rows) == {"fdk-python", "coldstart-fdk", "coldstart-fdk-plan"}, proc.stdout

    def measured(name):
        # runs[0] is the baseline run (flagged "warmup", as warm-ups are):
        # the measured run is the one that is not.
        runs = json.load(open(out / (name + ".json")))["runs"]
        return [r for r in runs if not r.get("warmup")][0]

    # The story's point: with the plan the first call costs less than
    # fdk-python's.  By CPU (user + sys of the run to the first answer and
    # the stop): under Fn's 10% quota one run's wall time moves in 100 ms
    # steps, and beside other work a single run's wall can land either
    # side (724 ms for fdk-python against 761 ms with the plan was seen
    # beside a CPU hog; by CPU 133 ms against 87 ms in a run here).
    def cpu(name):
        r = measured(name)
        return r["user_us"] + r["sys_us"]

    assert cpu("coldstart-fdk-plan") < cpu("fdk-python"), proc.stdout
    assert "coldstart-fdk-plan: ready" in proc.stdout, proc.stdout
