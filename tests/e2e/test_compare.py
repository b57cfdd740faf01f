"""`coldstart compare` against real interpreters and real commands: the
variants run interleaved with the order rotating, the test says a real
difference is significant and a small sample cannot be, the modules that
differ are named, limit sets compare under real cgroups, and the table,
Markdown and JSON say the same."""
import json
import os
import re

import pytest

from conftest import DEBIAN_PYTHON, PYTHONS, python_version, run_coldstart


def other_python():
    for p in PYTHONS:
        if p != DEBIAN_PYTHON and os.path.realpath(p) != os.path.realpath(DEBIAN_PYTHON):
            return p
    return None


def test_interpreters(tmp_path):
    other = other_python()
    if not other:
        pytest.skip("only one interpreter with -X importtime found")
    md = tmp_path / "cmp.md"
    r = run_coldstart("compare", "-n", "3", "--warmup", "1", "--python", DEBIAN_PYTHON, "--python", other,
                      "--json", "--markdown", md, "-c", "import json, asyncio")
    assert r.returncode == 0, r.stderr
    cmp = json.loads(r.stdout)
    assert cmp["format"] == "coldstart-compare" and cmp["test"] == "mann-whitney-u"
    a, b = cmp["variants"]
    assert a["python"] == DEBIAN_PYTHON and b["python"] == other
    assert b["python_version"].startswith("%d.%d" % python_version(other))
    for v in (a, b):
        assert v["metrics"]["wall_us"]["n"] == 3
        assert [x["warmup"] for x in v["runs"]] == [True, False, False, False]
        assert v["metrics"]["imports_us"]["median"] > 0
    wall = cmp["comparisons"][0]["wall_us"]
    # Three runs a side: the smallest p the exact test allows is 0.1, so nothing can be significant.
    assert wall["exact"] and abs(wall["p_min"] - 0.1) < 1e-9 and not wall["significant"]
    assert abs(wall["ratio"] - b["metrics"]["wall_us"]["median"] / a["metrics"]["wall_us"]["median"]) < 1e-6
    names = {m["module"] for m in cmp["comparisons"][0]["modules"]}
    assert {"json", "asyncio"} <= names
    text = md.read_text()
    assert text.startswith("### coldstart compare: 2 interpreters")
    assert "| A | %s" % DEBIAN_PYTHON in text and "| B | %s" % other in text
    assert "<details><summary>Modules that differ most, B against A" in text


def test_table_says_when_a_sample_cannot_be_significant():
    r = run_coldstart("compare", "-n", "3", "--warmup", "0", "--python", DEBIAN_PYTHON, "--python", DEBIAN_PYTHON,
                      "--name", "first", "--name", "second", "-c", "pass")
    assert r.returncode == 0, r.stderr
    assert "  A  first" in r.stdout and "  B  second" in r.stdout
    assert ": cannot be significant\n" in r.stdout
    assert "with 3 and 3 runs the exact test cannot go below p = 0.1, whatever the times" in r.stdout
    # The table fits 80 columns (the verdict, the header and the module table were up to 91 wide).
    assert all(len(line) <= 80 for line in r.stdout.splitlines()), \
        [line for line in r.stdout.splitlines() if len(line) > 80]


def test_commands_interleaved_and_a_real_difference(tmp_path):
    log = tmp_path / "order.log"
    # Each run appends its name: the order the runs really happened in.
    fast = "%s -c 'open(\"%s\", \"a\").write(\"F\")'" % (DEBIAN_PYTHON, log)
    slow = "%s -c 'import time; open(\"%s\", \"a\").write(\"S\"); time.sleep(0.15)'" % (DEBIAN_PYTHON, log)
    r = run_coldstart("compare", "-n", "6", "--warmup", "1", "-o", tmp_path / "c.json", fast, slow)
    assert r.returncode == 0, r.stderr
    order = log.read_text()
    assert len(order) == 14
    # Round by round, the order rotating: F S | S F | F S ...
    assert order == "FS" + "SF" + "FS" + "SF" + "FS" + "SF" + "FS", order
    cmp = json.loads((tmp_path / "c.json").read_text())
    wall = cmp["comparisons"][0]["wall_us"]
    assert wall["ratio"] > 1.5 and wall["significant"] and wall["p_adjusted"] < 0.05
    assert re.search(r"B vs A   wall +\d+\.\d\dx slower \(\+\d+(\.\d)? ms\), p [\d.<]+: significant", r.stdout)
    assert cmp["variants"][0]["target"][0] == DEBIAN_PYTHON


def test_modules_that_differ(tmp_path):
    r = run_coldstart("compare", "-n", "3", "--warmup", "0", "--json",
                      "%s -c 'import json'" % DEBIAN_PYTHON,
                      "%s -c 'import json, email.mime.text'" % DEBIAN_PYTHON)
    assert r.returncode == 0, r.stderr
    mods = {m["module"]: m for m in json.loads(r.stdout)["comparisons"][0]["modules"]}
    new = mods["email.mime.text"]
    assert new["a_present"] == 0 and new["b_present"] == 3 and new["difference_us"] > 0
    assert mods["json"]["a_present"] == 3 == mods["json"]["b_present"]


def test_targets_output_is_discarded_unless_asked():
    cmd = "%s -c 'import sys; print(\"NOISE-OUT\"); print(\"NOISE-ERR\", file=sys.stderr)'" % DEBIAN_PYTHON
    r = run_coldstart("compare", "-n", "1", "--warmup", "0", cmd, cmd)
    assert r.returncode == 0, r.stderr
    # The labels quote the commands; the targets' own lines are what must not appear.
    lines = (r.stdout + r.stderr).splitlines()
    assert "NOISE-OUT" not in lines and "NOISE-ERR" not in lines
    r = run_coldstart("compare", "-n", "1", "--warmup", "0", "--show-output", cmd, cmd)
    assert "NOISE-OUT" not in r.stdout.splitlines()
    assert r.stderr.splitlines().count("NOISE-OUT") == 2 and r.stderr.splitlines().count("NOISE-ERR") == 2


def test_limit_sets():
    if os.geteuid() != 0:
        pytest.skip("cgroup limits need root here (cgroup v1)")
    r = run_coldstart("compare", "-n", "3", "--warmup", "1", "--json", "--python", DEBIAN_PYTHON,
                      "--limits", "none", "--limits", "cpus=0.2", "-c",
                      "import json, asyncio; sum(range(6000000))")
    if r.returncode == 3:
        pytest.skip("limits cannot be applied on this machine: " + r.stderr.strip())
    assert r.returncode == 0, r.stderr
    a, b = json.loads(r.stdout)["variants"]
    assert a["limits"] == "no limits" and b["limits"].startswith("0.2 CPU")
    # The limit held: 0.2 CPU is 20 ms of each 100 ms period, and a wall of W touches at most W/100 + 2
    # periods, so a run of C ms of CPU takes W >= 5 * (C - 40) ms wherever its start falls in a period;
    # 50 ms allows for the kernel handing out quota in slices.  (A fixed W >= 2.5 * C failed once: 59.9 ms
    # of CPU in 141 ms, three quotas back to back across two period ends.)  Unconstrained, W is about C,
    # which fails the bound for any C above 62.5 ms: the workload takes about 100 ms.  A wall against the
    # unconstrained one's would measure the machine's load (499 ms limited against 706 ms on a busy one).
    for run in b["runs"]:
        if not run["warmup"]:
            assert run["cpu_us"] > 80000 and run["wall_us"] >= 5 * (run["cpu_us"] - 50000), run


@pytest.mark.parametrize("args,said", [
    (["-c", "pass"], "one target is one variant"),
    (["--python", DEBIAN_PYTHON, "--python", DEBIAN_PYTHON, "--", "python3", "-c", "pass"],
     "names its own interpreter"),
    (["python3 -c pass | cat", "python3 -c pass"], "'|' needs a shell"),
    (["python3 -c 'pass", "python3"], "is not closed"),
    (["--limits", "cpu=1", "--limits", "none", "-c", "pass"], "no limit 'cpu'"),
    (["--json", "-o", "-", "a", "b"], "only one output can go to stdout"),
    (["--name", "x", "--name", "y", "--name", "z", "a", "b"], "3 names for 2 variants"),
    (["python3 -c pass", "--", "python3"], "'--' among commands: each command is one argument"),
    (["a", "b", "--python", "x", "--python", "y"], "--python does not apply to commands"),
    (["a", "b", "--nosuch"], "unknown option '--nosuch'"),
])
def test_usage_errors(args, said):
    r = run_coldstart("compare", *args)
    assert r.returncode == 2, r.stderr
    assert said in r.stderr


def test_a_failing_variant_is_said_not_compared_silently(tmp_path):
    # B exits 3 in every run: its (fast) figures must not pass for a faster start-up.
    md = tmp_path / "c.md"
    ok = "%s -c 'import json'" % DEBIAN_PYTHON
    bad = "%s -c 'import sys; sys.exit(3)'" % DEBIAN_PYTHON
    r = run_coldstart("compare", "-n", "3", "--warmup", "1", "--markdown", md, "-o", tmp_path / "c.json", ok, bad)
    assert r.returncode == 5, r.stderr
    assert "  ! B failed in 3 of 3 measured runs (exited with status 3): its figures are of failed runs" \
        in r.stdout.splitlines()
    assert "! A" not in r.stdout
    assert "**B failed in 3 of 3 measured runs** (exited with status 3)" in md.read_text()
    a, b = json.loads((tmp_path / "c.json").read_text())["variants"]
    assert (a["failed_runs"], a["failure"]) == (0, None)
    assert (b["failed_runs"], b["failure"]) == (3, "exited with status 3")


def test_options_among_the_commands(tmp_path):
    # A command is one argument, so options after the commands are coldstart's (the README's example).
    md = tmp_path / "pr.md"
    r = run_coldstart("compare", "-n", "2", "--warmup", "0", "%s -c 'import json'" % DEBIAN_PYTHON,
                      "%s -c 'import csv'" % DEBIAN_PYTHON, "--markdown", md, "--name", "json", "--name", "csv",
                      "-o", tmp_path / "c.json")
    assert r.returncode == 0, r.stderr
    assert md.read_text().startswith("### coldstart compare: 2 commands")
    assert "  A  json" in r.stdout and "  B  csv" in r.stdout
    cmp = json.loads((tmp_path / "c.json").read_text())
    assert [v["target"][-1] for v in cmp["variants"]] == ["import json", "import csv"]


# argv: port, seconds to sleep between listen() and serving.
LATE_SERVER = """
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
time.sleep(float(sys.argv[2]))
while True:
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok")
    c.close()
"""


def test_ready_is_the_first_answer_and_listening_a_second_figure(tmp_path):
    """Two servers that listen at once, one answering 0.4 s later: compare ranks
    them by the first good answer (B slower) and shows when each listened."""
    import socket
    (tmp_path / "late.py").write_text(LATE_SERVER)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "c.json"
    r = run_coldstart("compare", "-n", "3", "--warmup", "0", "--ready", "http://127.0.0.1:%d/" % port, "-o", out,
                      "%s %s %d 0.02" % (DEBIAN_PYTHON, tmp_path / "late.py", port),
                      "%s %s %d 0.42" % (DEBIAN_PYTHON, tmp_path / "late.py", port), timeout=300)
    assert r.returncode == 0, r.stderr
    c = json.loads(out.read_text())
    a, b = (v["metrics"] for v in c["variants"])
    assert b["ready_us"]["median"] - a["ready_us"]["median"] >= 300_000, (a["ready_us"], b["ready_us"])
    # Both listened at once: the answer is what differs.
    assert b["listening_us"]["median"] < b["ready_us"]["median"] - 300_000, b
    assert re.search(r"^  listen +median", r.stdout, re.M), r.stdout
    # Servers are ranked by readiness: it comes first.
    assert re.search(r"^  B vs A   ready +[\d.]+x slower", r.stdout, re.M), r.stdout


def test_options_after_dash_c_code(tmp_path):
    """compare reads its own options after -c CODE as profile does: -n, the
    interpreters and --json after the code apply; the code's arguments
    come after --."""
    r = run_coldstart("compare", "-c", "import sys; print(sys.argv)", "--python", DEBIAN_PYTHON,
                      "--python", DEBIAN_PYTHON, "-n", "2", "--warmup", "0", "--json", "--", "a", "b")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["runs"] == 2 and data["warmup"] == 0
    assert [v["target"] for v in data["variants"]] == [["-c", "import sys; print(sys.argv)", "a", "b"]] * 2
