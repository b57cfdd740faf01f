"""End-to-end tests of `coldstart profile`, `parse` and `report` against real
interpreters: numbers, streams, exit codes, cleanup."""
import collections
import gzip
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import COLDSTART, OLD_PYTHONS, SAMPLES, DEBIAN_PYTHON, run_coldstart, python_version


def rows_of(log_text):
    """(name, self, cum) of every row of the first process, as the interpreter printed them."""
    rows = []
    headers = 0
    for line in log_text.splitlines():
        i = line.find("import time:")
        if i < 0:
            continue
        line = line[i:]
        if "self [us]" in line:
            headers += 1
            if headers > 1:
                break
            continue
        parts = line[len("import time:"):].split("|")
        if len(parts) != 3 or "cached" in parts[0]:
            continue
        rows.append((parts[2].strip(), int(parts[0]), int(parts[1])))
    return rows


def nodes_of(profile, run=0, proc=0):
    p = profile["runs"][run]["processes"][proc]
    return [(n[0], n[3], n[4]) for n in p["nodes"] if not (n[5] & 1)]


def test_rows_are_the_interpreters_own(coldstart, python, tmp_path):
    raw = tmp_path / "raw.log"
    out = tmp_path / "p.json"
    r = coldstart("profile", "--python", python, "--no-trace", "--raw-log", raw, "-o", out,
                  "-c", "import json, xml.dom.minidom, email.parser")
    assert r.returncode == 0, r.stderr
    prof = json.loads(out.read_text())
    rows = rows_of(raw.read_text())
    assert len(rows) > 20
    assert collections.Counter(nodes_of(prof)) == collections.Counter(rows)
    # The report quotes the same numbers: the top module's cumulative time.
    assert prof["python_version"].startswith("%d.%d" % python_version(python))
    assert "import time:" not in r.stderr


def test_report_numbers_match_json(coldstart, tmp_path):
    out = tmp_path / "p.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--no-trace", "-o", out, "--top", "3",
                  "--color", "never", "-c", "import asyncio")
    assert r.returncode == 0, r.stderr
    prof = json.loads(out.read_text())
    nodes = prof["runs"][0]["processes"][0]["nodes"]
    top = max(nodes, key=lambda n: n[4])
    assert top[0] in r.stdout
    # The top module's line carries its cumulative time.
    table = r.stdout.split("Top modules by cumulative time")[1].splitlines()[2]
    line = table if table.split()[4 if table.split()[1] in ("ms", "us", "s") else 2] == top[0] else ""
    assert line, table
    cum_ms = top[4] / 1000.0
    assert ("%.1f ms" % cum_ms) in line or ("%d us" % top[4]) in line or ("%.2f s" % (cum_ms / 1000)) in line


def test_stderr_passthrough_and_glued_rows(coldstart, python, tmp_path):
    code = ("import sys\n"
            "sys.stderr.write('hello from the target\\n')\n"
            "sys.stderr.write('WARN: partial')\n"
            "sys.stderr.flush()\n"
            "import json\n"
            "sys.stderr.write(' end\\n')\n")
    r = coldstart("profile", "--python", python, "--no-trace", "--no-report", "-c", code)
    assert r.returncode == 0, r.stderr
    assert "hello from the target\n" in r.stderr
    # The glued prefix reaches the user byte for byte; the rows do not.
    assert "WARN: partial" in r.stderr
    assert "import time:" not in r.stderr
    assert r.stdout == ""


def test_stdin_and_stdout_untouched(coldstart, python):
    r = coldstart("profile", "--python", python, "--no-trace", "--no-report", "-c",
                  "import sys; data = sys.stdin.read(); sys.stdout.write(data.upper())",
                  input="some input\nline two\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "SOME INPUT\nLINE TWO\n"


def test_module_and_script_targets(coldstart, tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("import sys, json\nprint('main', sys.argv[1:])\n")
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--no-trace", "--json", "-m", "mypkg", "a", "--b",
                  cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # With --json stdout is the profile's alone: the target's stdout goes to stderr.
    assert "main ['a', '--b']" in r.stderr
    prof = json.loads(r.stdout)
    assert prof["target"] == ["-m", "mypkg", "a", "--b"]
    names = [n[0] for n in prof["runs"][0]["processes"][0]["nodes"]]
    assert "json" in names

    script = tmp_path / "app.py"
    script.write_text("import sys, email.parser\nprint(sys.argv)\n")
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--no-trace", "--no-report", script, "x", "-y")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == repr([str(script), "x", "-y"])


def test_any_command_through_env(coldstart, tmp_path):
    script = tmp_path / "tool"
    script.write_text("#!%s\nimport json, email.parser\nprint('tool ran')\n" % DEBIAN_PYTHON)
    script.chmod(0o755)
    out = tmp_path / "p.json"
    r = coldstart("profile", "--no-trace", "-o", out, "--", script)
    assert r.returncode == 0, r.stderr
    assert "tool ran" in r.stdout
    prof = json.loads(out.read_text())
    assert prof["python"] == DEBIAN_PYTHON
    names = [n[0] for n in prof["runs"][0]["processes"][0]["nodes"]]
    assert "email.parser" in names


def test_exit_codes(coldstart, tmp_path):
    py = DEBIAN_PYTHON
    assert coldstart("profile", "--python", py, "--no-trace", "--no-report", "-c", "pass").returncode == 0
    r = coldstart("profile", "--python", py, "--no-trace", "--no-report", "-c", "raise SystemExit(3)")
    assert r.returncode == 5
    r = coldstart("profile", "--python", py, "--no-trace", "--no-report", "--exit-code", "-c", "raise SystemExit(3)")
    assert r.returncode == 3
    r = coldstart("profile", "--python", py, "--no-trace", "-c", "import os; os.kill(os.getpid(), 9)")
    assert r.returncode == 6
    assert "killed by signal 9" in r.stdout
    r = coldstart("profile", "--python", "/nonexistent/python9", "-c", "pass")
    assert r.returncode == 4
    assert "/nonexistent/python9" in r.stderr
    r = coldstart("profile", "--python", py, "missing_script.py")
    assert r.returncode == 1
    assert "missing_script.py" in r.stderr
    assert coldstart("profile").returncode == 2
    assert coldstart("profile", "--bogus", "x.py").returncode == 2
    assert coldstart("profile", "--runs", "0", "x.py").returncode == 2
    assert coldstart("nosuchcommand").returncode == 2
    r = coldstart("profile", "--help")
    assert r.returncode == 0 and "usage: coldstart profile" in r.stdout


@pytest.mark.parametrize("old", OLD_PYTHONS or [None])
def test_interpreter_without_importtime(coldstart, old):
    if old is None:
        pytest.skip("no Python older than 3.7 on this machine")
    r = coldstart("profile", "--python", old, "-c", "pass")
    assert r.returncode == 4
    assert "no -X importtime" in r.stderr


def test_timeout_kills_the_tree(coldstart, tmp_path):
    marker = tmp_path / "pids"
    code = ("import subprocess, sys, time, os\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "open(%r, 'w').write('%%d %%d' %% (os.getpid(), p.pid))\n"
            "time.sleep(60)\n") % str(marker)
    t0 = time.monotonic()
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--no-trace", "--timeout", "1.5", "-c", code)
    assert time.monotonic() - t0 < 20
    assert r.returncode == 8, r.stderr
    assert "timed out" in r.stdout
    for pid in map(int, marker.read_text().split()):
        assert not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z"


def test_sigint_stops_target_and_exits_130(tmp_path):
    marker = tmp_path / "pid"
    code = "import os, time\nopen(%r, 'w').write(str(os.getpid()))\ntime.sleep(60)\n" % str(marker)
    p = subprocess.Popen([COLDSTART, "profile", "--python", DEBIAN_PYTHON, "--no-trace", "-c", code],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if marker.exists() and marker.read_text():
            break
        time.sleep(0.05)
    target = int(marker.read_text())
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert not os.path.exists("/proc/%d" % target)


def test_json_roundtrip_and_gzip(coldstart, tmp_path):
    out = tmp_path / "p.json.gz"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--no-trace", "-o", out, "--color", "never",
                  "-c", "import json")
    assert r.returncode == 0, r.stderr
    with gzip.open(out, "rt") as f:
        prof = json.load(f)
    assert prof["format"] == "coldstart-profile" and prof["version"] == 2
    # Version 2 lists every node before its parent, in the order importtime printed the rows.
    nodes = prof["runs"][0]["processes"][0]["nodes"]
    assert all(n[2] == -1 or n[2] > i for i, n in enumerate(nodes))
    again = coldstart("report", out, "--color", "never")
    assert again.returncode == 0, again.stderr
    # The same tables, rendered from the saved file.
    assert again.stdout.split("Top modules by cumulative time")[1] == \
        r.stdout.split("Top modules by cumulative time")[1]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = coldstart("report", bad)
    assert r.returncode == 1 and "bad.json" in r.stderr
    r = coldstart("report", tmp_path / "missing.json")
    assert r.returncode == 1 and "missing.json" in r.stderr


def test_parse_matches_profile(coldstart, tmp_path):
    raw = tmp_path / "raw.log"
    prof_path = tmp_path / "p.json"
    parsed_path = tmp_path / "q.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--no-trace", "--raw-log", raw, "-o", prof_path,
                  "--no-report", "-c", "import json, asyncio")
    assert r.returncode == 0, r.stderr
    r = coldstart("parse", raw, "-o", parsed_path, "--no-report")
    assert r.returncode == 0, r.stderr
    a = json.loads(prof_path.read_text())["runs"][0]["processes"][0]["nodes"]
    b = json.loads(parsed_path.read_text())["runs"][0]["processes"][0]["nodes"]
    assert a == b
    r = coldstart("parse", "-", input=raw.read_text())
    assert r.returncode == 0 and "asyncio" in r.stdout
    empty = tmp_path / "empty.log"
    empty.write_text("nothing to see\n")
    r = coldstart("parse", empty)
    assert r.returncode == 1 and "no -X importtime rows" in r.stderr


def test_version_1_files_still_read(coldstart, tmp_path):
    """A version 1 file (pre-order nodes) reads as the same profile as its version 2 form
    (children first); a parent index pointing the wrong way for the version is refused."""
    raw = tmp_path / "raw.log"
    v2 = tmp_path / "v2.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--no-trace", "--raw-log", raw, "-o", v2,
                  "--no-report", "-c", "import json, asyncio")
    assert r.returncode == 0, r.stderr
    doc = json.loads(v2.read_text())
    nodes = doc["runs"][0]["processes"][0]["nodes"]
    # Rewrite the same tree in pre-order, as version 1 files have it.
    children = collections.defaultdict(list)
    for i, n in enumerate(nodes):
        children[n[2]].append(i)
    order = []
    stack = list(reversed(children[-1]))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children[i]))
    assert sorted(order) == list(range(len(nodes)))
    newidx = {old: new for new, old in enumerate(order)}
    v1doc = json.loads(v2.read_text())
    v1doc["version"] = 1
    v1doc["runs"][0]["processes"][0]["nodes"] = [
        nodes[i][:2] + [newidx[nodes[i][2]] if nodes[i][2] >= 0 else -1] + nodes[i][3:] for i in order]
    v1 = tmp_path / "v1.json"
    v1.write_text(json.dumps(v1doc))
    a = coldstart("report", v2, "--color", "never", "--tree")
    b = coldstart("report", v1, "--color", "never", "--tree")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    assert a.stdout == b.stdout and "asyncio" in a.stdout
    # Reading version 1 and saving again gives the version 2 nodes back.
    again = tmp_path / "again.json"
    r = coldstart("report", v1, "-o", again, "--no-report")
    assert r.returncode == 0, r.stderr
    assert json.loads(again.read_text())["runs"][0]["processes"][0]["nodes"] == nodes
    # A version 2 node whose parent comes before it, and an unknown version.
    bad = json.loads(v2.read_text())
    bad["runs"][0]["processes"][0]["nodes"][-1][2] = 0
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    r = coldstart("report", tmp_path / "bad.json")
    assert r.returncode == 1 and "does not follow it" in r.stderr, r.stderr
    bad = json.loads(v2.read_text())
    bad["version"] = 3
    (tmp_path / "bad3.json").write_text(json.dumps(bad))
    r = coldstart("report", tmp_path / "bad3.json")
    assert r.returncode == 1 and "unsupported profile version 3" in r.stderr, r.stderr


def test_colour_only_when_asked(coldstart):
    args = ("profile", "--python", DEBIAN_PYTHON, "--no-trace")
    target = ("-c", "import json")
    assert "\033[" not in coldstart(*args, *target).stdout  # not a terminal
    assert "\033[1m" in coldstart(*args, "--color", "always", *target).stdout
    env_r = run_coldstart(*args, *target, env={"NO_COLOR": "1"})
    assert "\033[" not in env_r.stdout


def test_tree_pruning(coldstart):
    base = ("profile", "--python", DEBIAN_PYTHON, "--no-trace", "--color", "never")
    target = ("-c", "import asyncio")
    full = coldstart(*base, "--tree", *target).stdout.split("Import tree")[1]
    shallow = coldstart(*base, "--depth", "0", *target).stdout.split("Import tree")[1]
    pruned = coldstart(*base, "--threshold", "2ms", *target).stdout.split("Import tree")[1]
    assert "asyncio.base_events" in full
    assert "asyncio.base_events" not in shallow
    assert "subtrees hidden" in shallow
    assert len(pruned.splitlines()) < len(full.splitlines())


def test_child_interpreters_are_separate_processes(coldstart, tmp_path):
    out = tmp_path / "p.json"
    code = ("import subprocess, sys, json\n"
            "subprocess.run([sys.executable, '-X', 'importtime', '-c', 'import email.parser'], check=True)\n")
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--no-trace", "-o", out, "--no-report", "-c", code)
    assert r.returncode == 0, r.stderr
    prof = json.loads(out.read_text())
    procs = prof["runs"][0]["processes"]
    assert len(procs) >= 2
    assert any(n[0] == "email.parser" for p in procs[1:] for n in p["nodes"])
    assert not any(n[0] == "email.parser" for n in procs[0]["nodes"])


def test_fn_sample_report(coldstart, tmp_path):
    out = tmp_path / "p.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--no-trace", "--color", "never", "-o", out, "-c",
                  "import sys; sys.path.insert(0, %r); sys.path.insert(0, %r); import func"
                  % (os.path.join(os.path.dirname(SAMPLES), "python"), os.path.join(SAMPLES, "fn-hello")))
    assert r.returncode == 0, r.stderr
    assert "Top modules by self time" in r.stdout
    nodes = json.loads(out.read_text())["runs"][0]["processes"][0]["nodes"]
    func = [i for i, n in enumerate(nodes) if n[0] == "func"][0]
    # The function's module-level imports hang under it, as the Fn team saw them.
    for mod in ("asyncio", "xml.dom.minidom", "fdk"):
        assert any(n[0] == mod and n[2] == func for n in nodes), mod
    assert "asyncio" in r.stdout.split("Top modules by cumulative time")[1]


def test_deepchain_slow_module_and_chain(coldstart, python):
    code = "import sys; sys.path.insert(0, %r); import deepchain" % os.path.join(SAMPLES, "deepchain")
    out_env = {"DEEPCHAIN_SLOW_MS": "40"}
    r = run_coldstart("profile", "--python", python, "--no-trace", "--color", "never", "--wide", "--top", "5", "-c", code,
                      env=out_env)
    assert r.returncode == 0, r.stderr
    # The leaf burns 40 ms of CPU; ranked by wall time, a small module that
    # waited longer for a CPU on a loaded machine may come first, so the leaf
    # must be among the first few, with its chain, not necessarily first.
    rows = r.stdout.split("Top modules by self time")[1].split("\n\n")[0].splitlines()[2:]
    leaf = [row for row in rows if "deepchain.a.b.c.leaf" in row]
    assert leaf, rows
    assert "via deepchain > deepchain.a > deepchain.a.b > deepchain.a.b.c" in leaf[0]


def test_flask_sample(coldstart, tmp_path):
    out = tmp_path / "p.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--no-trace", "-o", out, "--no-report",
                  os.path.join(SAMPLES, "flask-app", "app.py"), "--check")
    assert r.returncode == 0, r.stderr
    assert "/hello/<name>" in r.stdout
    prof = json.loads(out.read_text())
    nodes = {n[0]: n for n in prof["runs"][0]["processes"][0]["nodes"]}
    assert nodes["flask"][6] == "thirdparty"
    assert nodes["json"][6] in ("stdlib", "startup")
    assert nodes["werkzeug"][4] > 0
