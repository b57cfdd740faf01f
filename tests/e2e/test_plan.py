"""End-to-end tests of `coldstart plan` (src/cmd/cmd_plan.c, src/plan/plan_target.c)
with the real binary, Debian's python3 and its packages (jinja2), real
unix and TCP sockets and real processes.
"""
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, PLAN_PYTHONS, ROOT, archive_entries, clean_env, write

BENCH_FNS = os.path.join(ROOT, "bench", "plan")

pytestmark = pytest.mark.skipif(not os.path.exists(DEBIAN_PYTHON),
                                reason="Debian's python3 is not installed")


def plan_cmd(*args, cwd=None, timeout=300):
    env = clean_env()
    return subprocess.run([COLDSTART, "plan"] + list(args), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env=env)


def test_real_function_plan_verifies_and_defers(workdir):
    fn = os.path.join(BENCH_FNS, "fn_jinja2")
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--python", DEBIAN_PYTHON, "--fn",
                 os.path.join(fn, "func.py"), "handler", "--request",
                 os.path.join(fn, "request.json"), "--verify", "-o", out,
                 cwd=fn)
    assert p.returncode == 0, p.stderr
    assert "verified: 1 response identical" in p.stdout
    assert "deferred to their first use" in p.stdout
    with open(out) as f:
        plan = json.load(f)
    assert plan["format"] == "coldstart-plan" and plan["version"] == 1
    mods = {m["name"]: m for m in plan["modules"]}
    assert mods["jinja2"]["kind"] == "source"
    # The template renders in the request: jinja2's runtime code ran.
    assert mods["jinja2.runtime"]["used"] is True
    assert mods["jinja2.runtime"]["action"] == "load"
    assert mods["func"]["used"] is True
    assert any(m["action"] == "defer" for m in plan["modules"])
    for m in plan["modules"]:
        if m["action"] == "defer":
            assert m["kind"] in ("source", "bytecode") and not m["used"]
    # The plan and its code archive, nothing left behind.
    assert sorted(os.listdir(workdir)) == ["p.json", "p.json.code"]
    # Relative to the plan, so that the two can move together.
    assert plan["code"]["path"] == os.path.basename(out) + ".code"
    assert plan["code"]["size"] == os.path.getsize(out + ".code")
    assert len(archive_entries(plan["code"])) == len(plan["index"])


def test_verify_keeps_eager_every_module_whose_deferral_changes_it(workdir):
    # plugin's and plugin2's bodies append to another module's list: no
    # heuristic sees that, so only --verify can.  One run finds both (a
    # bisection each) and writes the plan that answers the same, saying
    # what it kept; before, it refused the plan and named one, so a rerun
    # per module was needed.
    write(workdir, "names.py", "NAMES = []\n")
    write(workdir, "plugin.py", """
        import names
        names.NAMES.append("plugin")
    """)
    write(workdir, "filler.py", "X = 1\n")
    write(workdir, "plugin2.py", """
        import names
        names.NAMES.append("plugin2")
    """)
    write(workdir, "func.py", """
        import json
        import names
        import plugin
        import filler
        import plugin2
        from fdk import response

        def handler(ctx, data=None):
            return response.Response(ctx, response_data=json.dumps(names.NAMES))
    """)
    write(workdir, "req.json", "{}")
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--python", DEBIAN_PYTHON, "--fn", "func.py", "--request",
                 "req.json", "--verify", "-o", out, cwd=workdir)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "deferring 'plugin' changes the responses: it stays eager" in p.stdout
    assert "deferring 'plugin2' changes the responses: it stays eager" in p.stdout
    assert "identical with the plan once 2 modules stayed eager" in p.stdout
    mods = {m["name"]: m for m in json.load(open(out))["modules"]}
    for name in ("plugin", "plugin2"):
        assert mods[name]["action"] == "eager"
        assert mods[name]["reasons"][-1]["code"] == "verify"
    assert mods["filler"]["action"] == "defer"
    assert sorted(f for f in os.listdir(workdir) if f.startswith("p.json")) == \
        ["p.json", "p.json.code"]
    # --eager gives the same plan without the bisection.
    p = plan_cmd("--python", DEBIAN_PYTHON, "--fn", "func.py", "--request",
                 "req.json", "--verify", "--eager", "plugin", "--eager",
                 "plugin2", "-o", out, cwd=workdir)
    assert p.returncode == 0, p.stderr
    assert "changes the responses" not in p.stdout
    mods = {m["name"]: m for m in json.load(open(out))["modules"]}
    assert mods["plugin"]["action"] == "eager"
    assert mods["plugin"]["reasons"] == [{"code": "pinned",
                                          "detail": "pinned with --eager"}]


def test_verify_binds_at_once_the_from_imports_whose_laziness_changes_it(workdir):
    # app runs in the request; its `from plugin import helper` would load
    # plugin (whose body registers itself by a plain statement), but the
    # plan binds helper lazily, and app never calls it: only --verify sees
    # the difference, and the fix is app's from-imports, not plugin.
    write(workdir, "names.py", "NAMES = []\n")
    write(workdir, "plugin.py", """
        import names
        names.NAMES.append("plugin")
        def helper():
            return 1
    """)
    write(workdir, "app.py", """
        from plugin import helper
        def f():
            return 2
    """)
    write(workdir, "main.py", """
        import json
        import app
        import names
        print(json.dumps([app.f(), names.NAMES]))
    """)
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--verify", "-o", out, "--", DEBIAN_PYTHON, "main.py",
                 cwd=workdir)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "binding the from-imports of 'app' lazily changes the " \
           "responses: they bind at once" in p.stdout, p.stdout
    plan = json.load(open(out))
    assert "app" not in plan["from"]
    mods = {m["name"]: m for m in plan["modules"]}
    assert "changed the responses" in mods["app"]["lazy_from_off"]
    p = plan_cmd("--verify", "--eager-from", "app", "-o", out, "--",
                 DEBIAN_PYTHON, "main.py", cwd=workdir)
    assert p.returncode == 0, p.stdout + p.stderr
    plan = json.load(open(out))
    assert "app" not in plan["from"]
    mods = {m["name"]: m for m in plan["modules"]}
    # app's from-import now binds at once, which runs plugin's body before
    # the response: the verified plan loads it at once instead of deferring it.
    assert mods["plugin"]["used"] is False
    assert mods["plugin"]["action"] == "load" and mods["plugin"]["forced"] is True


def test_verify_compares_a_commands_stderr(workdir):
    """Same exit status, same (empty) stdout, another stderr: with plugin
    deferred the tool fails with a traceback instead of its usage error.
    Before, --verify compared stdout and the status only and said
    'verified' for the plan that deferred plugin."""
    write(workdir, "names.py", "NAMES = []\n")
    write(workdir, "plugin.py", """
        import names
        names.NAMES.append("usage: tool NAME")
    """)
    write(workdir, "main.py", """
        import sys
        import names
        import plugin
        try:
            sys.stderr.write(names.NAMES[0] + "\\n")
        except IndexError:
            raise SystemExit(2) from None
        sys.exit(2)
    """)
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--verify", "-o", out, "--", DEBIAN_PYTHON, "main.py",
                 cwd=workdir)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "deferring 'plugin' changes the responses: it stays eager" in p.stdout, p.stdout
    mods = {m["name"]: m for m in json.load(open(out))["modules"]}
    assert mods["plugin"]["action"] == "eager"


def test_verify_replays_from_the_first_state_and_compares_files_written(workdir):
    """A formatter rewrites its input and reports nothing on stdout; the
    rule that makes it upper-case the text is registered by plugin's body,
    which nothing else reads.  Before, the recording run formatted the
    file, the replays found it formatted already, and --verify said
    'verified' for a plan deferring plugin (which formats nothing).  Now
    every replay starts from the file as it was, the files written are
    compared, plugin stays eager, and the file ends as one run leaves it."""
    write(workdir, "rules.py", "RULES = []\n")
    write(workdir, "plugin.py", """
        import rules
        rules.RULES.append(str.upper)
    """)
    write(workdir, "fmt.py", """
        import sys
        import rules
        import plugin
        path = sys.argv[1]
        text = open(path).read()
        for rule in rules.RULES:
            text = rule(text)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        import os
        os.replace(path + ".tmp", path)
        if len(rules.RULES) and not os.path.exists("log"):
            open("log", "w").write("formatted")
    """)
    write(workdir, "data.txt", "hello\n")
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--verify", "-o", out, "--", DEBIAN_PYTHON, "fmt.py",
                 "data.txt", cwd=workdir)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "deferring 'plugin' changes the responses: it stays eager" in p.stdout, p.stdout
    mods = {m["name"]: m for m in json.load(open(out))["modules"]}
    assert mods["plugin"]["action"] == "eager"
    assert open(os.path.join(workdir, "data.txt")).read() == "HELLO\n"
    assert open(os.path.join(workdir, "log")).read() == "formatted"
    assert sorted(os.listdir(workdir)) == ["data.txt", "fmt.py", "log", "p.json",
                                           "p.json.code", "plugin.py", "rules.py"]


def test_verify_replays_a_command_that_counts_its_runs(workdir):
    """A command that counts its runs in a file, makes a directory, removes
    a file and retargets a link: every replay starts from the tree the
    recording found (it prints 1 each time), and the tree ends as one run
    leaves it.  Before, the replays printed 2, 3, 4: 'not reproducible'."""
    write(workdir, "tool.py", """
        import os, fractions
        n = int(open("count").read()) + 1 if os.path.exists("count") else 1
        open("count", "w").write(str(n))
        os.makedirs("out/sub", exist_ok=True)
        open("out/sub/x.txt", "w").write(str(fractions.Fraction(n, 3)))
        if os.path.exists("old.txt"):
            os.unlink("old.txt")
        os.unlink("ln")
        os.symlink("b", "ln")
        print(n, sorted(os.listdir(".")))
    """)
    write(workdir, "old.txt", "old")
    os.symlink("a", os.path.join(workdir, "ln"))
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--verify", "-o", out, "--", DEBIAN_PYTHON, "tool.py",
                 cwd=workdir)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verified: 1 response identical" in p.stdout
    assert open(os.path.join(workdir, "count")).read() == "1"
    assert open(os.path.join(workdir, "out", "sub", "x.txt")).read() == "1/3"
    assert not os.path.exists(os.path.join(workdir, "old.txt"))
    assert os.readlink(os.path.join(workdir, "ln")) == "b"
    assert sorted(os.listdir(workdir)) == ["count", "ln", "out", "p.json",
                                           "p.json.code", "tool.py"]


def test_verify_masks_what_changes_by_itself(workdir):
    """A tool that prints its own timing answers differently every run:
    unverifiable, unless --mask says which part to ignore."""
    write(workdir, "main.py", """
        import time, fractions
        t = time.perf_counter_ns()
        print(fractions.Fraction(1, 3))
        print("took %d ns" % (time.perf_counter_ns() - t + time.time_ns() % 1000003))
    """)
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--verify", "-o", out, "--", DEBIAN_PYTHON, "main.py",
                 cwd=workdir)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "not reproducible" in p.stderr
    assert not os.path.exists(out)
    p = plan_cmd("--verify", "--mask", "took [0-9]+ ns", "-o", out, "--",
                 DEBIAN_PYTHON, "main.py", cwd=workdir)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verified: 1 response identical" in p.stdout
    p = plan_cmd("--mask", "took [0-9]+ ns", "-o", out, "--", DEBIAN_PYTHON,
                 "main.py", cwd=workdir)
    assert p.returncode == 2 and "give --verify too" in p.stderr
    p = plan_cmd("--verify", "--mask", "took [0-9", "-o", out, "--",
                 DEBIAN_PYTHON, "main.py", cwd=workdir)
    assert p.returncode == 2 and "--mask 'took [0-9'" in p.stderr


def test_a_run_that_fails_is_said_once_with_its_stderr(workdir, tmp_path):
    """A run that times out, the planning run or --verify's run without the
    plan: one error naming which, then the target's last stderr (exit 8).
    The count lives outside the working directory, which every replay puts
    back as the recording found it."""
    count = str(tmp_path / "count")
    write(workdir, "tool.py", """
        import os, sys, time, fractions
        c = %r
        n = int(open(c).read()) + 1 if os.path.exists(c) else 1
        open(c, "w").write(str(n))
        if n != 2:
            sys.stderr.write("stuck on run %%d\\n" %% n)
            sys.stderr.flush()
            time.sleep(60)
        print(fractions.Fraction(1, 3))
    """ % count)
    out = os.path.join(workdir, "p.json")
    for runs_before, what, stuck in ((1, "verify: the run without the plan failed", 3),
                                     (0, "planning run", 1)):
        with open(count, "w") as f:
            f.write(str(runs_before))
        p = plan_cmd("--verify", "--timeout", "10s", "-o", out, "--", DEBIAN_PYTHON, "tool.py",
                     cwd=workdir)
        assert p.returncode == 8, p.stdout + p.stderr
        assert p.stderr.splitlines() == [
            "coldstart: error: %s: timed out waiting for the target to exit" % what,
            "-- the target's last stderr output:",
            "stuck on run %d" % stuck], p.stderr
        assert not os.path.exists(out)

def test_run_to_exit_command_and_coldstart_run(workdir):
    write(workdir, "tool.py", """
        import sys
        import json
        import fractions
        import decimal
        print(json.dumps({"args": sys.argv[1:], "half": str(fractions.Fraction(1, 2))}))
    """)
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--verify", "-o", out, "--", DEBIAN_PYTHON, "tool.py", "x",
                 cwd=workdir)
    assert p.returncode == 0, p.stderr
    plan = json.load(open(out))
    mods = {m["name"]: m for m in plan["modules"]}
    assert mods["fractions"]["used"] is True
    assert mods["decimal"]["action"] == "defer"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([DEBIAN_PYTHON, "-m", "coldstart.run", "--plan", out,
                        "tool.py", "x"], cwd=workdir, capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 0 and r.stderr == ""
    assert json.loads(r.stdout) == {"args": ["x"], "half": "1/2"}
    # The plan names its archive relative to itself: moved together into
    # another directory (a plan made in CI, copied into an image), the two
    # apply as before, without a word.
    assert plan["code"]["path"] == "p.json.code"
    moved = os.path.join(workdir, "image", "plans")
    os.makedirs(moved)
    for f in ("p.json", "p.json.code"):
        os.rename(os.path.join(workdir, f), os.path.join(moved, f))
    r = subprocess.run([DEBIAN_PYTHON, "-m", "coldstart.run", "--plan", os.path.join(moved, "p.json"),
                        "tool.py", "y"], cwd=workdir, capture_output=True, text=True, timeout=60,
                       env=env)
    assert r.returncode == 0 and r.stderr == ""
    assert json.loads(r.stdout) == {"args": ["y"], "half": "1/2"}


def test_verify_loads_at_once_what_the_plan_defers_and_a_body_forces(workdir):
    """helper is not used by the run, but shaper's body reads its CONST at
    import: deferred, it would run at that read all the same.  --verify
    replays with the plan, sees it forced, and the plan written loads it at
    once (marked forced), verified; what nothing reads stays deferred."""
    write(workdir, "helper.py", "CONST = 21\n")
    write(workdir, "idle.py", "IDLE = 1\n")
    write(workdir, "shaper.py", """
        from helper import CONST
        import idle
        DOUBLE = CONST * 2
    """)
    write(workdir, "tool.py", """
        import sys
        sys.path.insert(0, sys.path[0])
        import shaper
        print(shaper.DOUBLE)
    """)
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--verify", "-o", out, "--", DEBIAN_PYTHON, "tool.py", cwd=workdir)
    assert p.returncode == 0, p.stderr
    assert "ran before the first response anyway" in p.stdout, p.stdout
    assert "read at import by what runs" in p.stdout, p.stdout
    plan = json.load(open(out))
    mods = {m["name"]: m for m in plan["modules"]}
    assert mods["helper"]["used"] is False
    assert mods["helper"]["action"] == "load" and mods["helper"]["forced"] is True
    assert mods["idle"]["action"] == "defer" and "forced" not in mods["idle"]
    rows = {r[0]: r for r in plan["index"]}
    assert rows["helper"][5] == "load" and rows["idle"][5] == "defer"
    for action in ("load", "eager", "defer"):
        assert plan["summary"][action] == sum(m["action"] == action for m in plan["modules"])
    # Without --verify there is no run with the plan to learn it from.
    out2 = os.path.join(workdir, "p2.json")
    p = plan_cmd("-o", out2, "--", DEBIAN_PYTHON, "tool.py", cwd=workdir)
    assert p.returncode == 0, p.stderr
    mods2 = {m["name"]: m for m in json.load(open(out2))["modules"]}
    assert mods2["helper"]["action"] == "defer" and not any("forced" in m for m in mods2.values())
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([DEBIAN_PYTHON, "-m", "coldstart.run", "--plan", out, "tool.py"], cwd=workdir,
                       capture_output=True, text=True, timeout=60, env=env)
    assert (r.returncode, r.stdout, r.stderr) == (0, "42\n", "")


def test_output_that_cannot_be_written_fails_at_once(workdir):
    """-o into a missing directory, onto a directory or to -: an error before any run (the
    recorder would only find out at the end of one, after the command's timeout)."""
    for out, message in (("/nonexistent-coldstart-dir/p.json", "no directory"), (workdir, "is a directory"),
                         ("-", "standard output")):
        t0 = time.monotonic()
        p = plan_cmd("-o", out, "--", DEBIAN_PYTHON, "-c", "pass", cwd=workdir)
        assert p.returncode == 1, p.stderr
        assert message in p.stderr, p.stderr
        assert time.monotonic() - t0 < 10
        assert not glob.glob(os.path.join(workdir, "*"))


SCRIPTS = {
    "globals.py": """
        import sys
        print(__file__, sys.argv[0], __name__, __package__, __spec__, __cached__,
              type(__loader__).__name__, sorted(globals()), sys.modules["__main__"] is sys.modules[__name__])
    """,
    "raises.py": "def f():\n    1/0\nf()\n",
    "exits.py": "import sys\nsys.exit(3)\n",
    "syntax.py": "def (\n",
    "pickles.py": """
        import pickle
        class A: pass
        print(len(pickle.dumps(A())), pickle.loads(pickle.dumps(A())).__class__ is A)
    """,
    "interrupted.py": "raise KeyboardInterrupt\n",
}


@pytest.mark.parametrize("python", PLAN_PYTHONS)
def test_coldstart_run_runs_a_script_as_python_does(workdir, python):
    # What the script sees of itself (__file__ absolute since 3.9, argv[0] as
    # typed, the loader, the globals), its traceback from its own frame, its
    # exit status (1 after an exception, killed by SIGINT after
    # KeyboardInterrupt): byte for byte those of `python script.py`.
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    for name, text in SCRIPTS.items():
        write(workdir, name, text)
        plain = subprocess.run([python, name], cwd=workdir, capture_output=True, text=True, timeout=60)
        ours = subprocess.run([python, "-m", "coldstart.run", name], cwd=workdir, capture_output=True,
                              text=True, timeout=60, env=env)
        assert (ours.returncode, ours.stdout, ours.stderr) == \
            (plain.returncode, plain.stdout, plain.stderr), name


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _stats_server(d, prologue=""):
    """server.py: an HTTP server answering a POSTed {"xs": [...]} with its
    mean (statistics; decimal imported and not used), after prologue."""
    write(d, "server.py", prologue + """
import json
import sys
import statistics
import decimal
from http.server import BaseHTTPRequestHandler, HTTPServer

class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        xs = json.loads(body)["xs"]
        out = json.dumps({"mean": statistics.mean(xs)}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *a):
        pass

HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


def test_http_server_with_requests(workdir):
    port = _free_port()
    _stats_server(workdir)
    write(workdir, "r1.json", '{"xs": [1, 2, 3]}')
    write(workdir, "r2.json", '{"xs": [10, 20]}')
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--ready", "http://127.0.0.1:%d/stats" % port, "--request",
                 "r1.json", "--request", "r2.json", "--verify", "-o", out,
                 "--", DEBIAN_PYTHON, "server.py", str(port), cwd=workdir)
    assert p.returncode == 0, p.stderr
    assert "verified: 2 responses identical" in p.stdout
    mods = {m["name"]: m for m in json.load(open(out))["modules"]}
    assert mods["statistics"]["used"] is True
    assert mods["decimal"]["action"] == "defer"


def _plan_stats_server(workdir, prologue):
    """Plans _stats_server(prologue) with one request; (the run, the plan's
    path, the port), the run having succeeded."""
    port = _free_port()
    _stats_server(workdir, prologue=prologue)
    write(workdir, "r1.json", '{"xs": [1, 2, 3]}')
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--ready", "http://127.0.0.1:%d/" % port, "--request",
                 "r1.json", "-o", out, "--", DEBIAN_PYTHON, "server.py",
                 str(port), cwd=workdir)
    assert p.returncode == 0, p.stderr
    return p, out, port


def test_a_python_child_of_the_target_does_not_write_the_plan(workdir):
    """A server that runs a Python child (subprocess) before it is ready:
    the child inherits the planning environment but not the control pipe,
    so it records nothing and the plan is the server's.  Before, the child
    wrote its plan at once (its copy of the control descriptor was another
    file) and coldstart plan took that one: 0 modules, argv ['-c']."""
    p, out, port = _plan_stats_server(workdir, prologue="""
import subprocess, sys, time
subprocess.run([sys.executable, "-c", "import json, wave"], check=True)
time.sleep(0.3)
""")
    plan = json.load(open(out))
    assert plan["argv"] == ["server.py", str(port)]
    mods = {m["name"]: m for m in plan["modules"]}
    assert mods["statistics"]["used"] is True
    assert "http.server" in mods and "wave" not in mods
    assert "processes recorded" not in p.stdout
    assert "do not record" not in p.stderr, p.stderr
    assert sorted(os.listdir(workdir)) == ["p.json", "p.json.code",
                                           "r1.json", "server.py"]


def test_a_python_child_running_at_the_response_is_named(workdir):
    """A Python process the target started (not forked) and that still runs
    at the last response records nothing, and may be the one that answered
    (Django's runserver under its autoreloader): coldstart plan names it.
    One that ended before (the test above) is not named."""
    p, out, port = _plan_stats_server(workdir, prologue="""
import subprocess, sys
helper = subprocess.Popen([sys.executable, "-c",
                           "import time; time.sleep(120)", "helper-mark"])
""")
    assert "started Python processes (not forked) that do not record" in \
        p.stderr, p.stderr
    line = [x for x in p.stderr.splitlines() if "helper-mark" in x]
    assert len(line) == 1 and line[0].split()[0].isdigit(), p.stderr
    assert "import time; time.sleep(120) helper-mark" in line[0]
    assert json.load(open(out))["argv"] == ["server.py", str(port)]
    assert not _procs_with("helper-mark"), "the helper outlived the run"


def test_a_prefork_server_is_planned_from_the_worker_that_answered(workdir):
    """gunicorn with two workers (forked, not executed): the master and
    both workers record; the plan is the one of the worker whose request
    used the most modules, with its own code archive.  Before, each worker
    wrote the plan and the archive at its exit over the others', so the
    plan named an archive another process had rewritten (applying it said
    'not using the code archive ...: changed since the plan was made')."""
    if not os.path.exists("/usr/lib/python3/dist-packages/gunicorn"):
        pytest.skip("Debian's gunicorn is not installed "
                    "(tests/install-deps.sh installs it)")
    port = _free_port()
    write(workdir, "app.py", """
        import json

        def app(environ, start_response):
            import fractions
            out = json.dumps({"f": str(fractions.Fraction(1, 3))}).encode()
            start_response("200 OK", [("Content-Length", str(len(out)))])
            return [out]
    """)
    out = os.path.join(workdir, "p.json")
    url = "http://127.0.0.1:%d/" % port
    argv = [DEBIAN_PYTHON, "-m", "gunicorn", "-w", "2", "-b",
            "127.0.0.1:%d" % port, "app:app"]
    p = plan_cmd("--ready", url, "--verify", "-o", out, "--", *argv,
                 cwd=workdir)
    assert p.returncode == 0, p.stderr
    # A worker gunicorn forks after the response (the first worker ready
    # answers) no longer records: 2 or 3 processes.
    import re
    assert re.search(r"([23]) processes recorded \(the target and ([12]) it "
                     r"forked\); the plan is the one of a forked child",
                     p.stdout), p.stdout
    assert "verified: 1 response identical" in p.stdout
    plan = json.load(open(out))
    mods = {m["name"]: m for m in plan["modules"]}
    # What only the answering worker ran: the app and its request's import.
    assert mods["app"]["used"] is True
    assert mods["fractions"]["action"] == "load"
    assert mods["gunicorn.workers.sync"]["used"] is True
    code = plan["code"]
    assert code["path"] == os.path.basename(out) + ".code"
    st = os.stat(out + ".code")
    assert (code["size"], code["mtime_ns"]) == (st.st_size, st.st_mtime_ns)
    # No record of another process is left behind.
    assert sorted(os.listdir(workdir)) == ["app.py", "p.json", "p.json.code"]
    # Applied: the archive is used (no warning) and the answer is the same.
    env = clean_env()
    env["COLDSTART_PLAN"] = out
    env["PYTHONPATH"] = os.path.join(ROOT, "python", "coldstart", "_boot",
                                     "plan")
    srv = subprocess.Popen(argv, cwd=workdir, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        import urllib.request
        deadline = time.monotonic() + 60
        while True:
            try:
                body = urllib.request.urlopen(url, timeout=10).read()
                break
            except OSError:
                assert srv.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        srv.terminate()
        err = srv.communicate(timeout=60)[1].decode()
    assert body == b'{"f": "1/3"}'
    assert "coldstart plan:" not in err, err


@pytest.mark.parametrize("args,message", [
    ([], "nothing to plan"),
    (["--fn", "func.py"], "at least one --request"),
    (["--ready", "tcp:80", "--", "true"], "expected fn, exit or http"),
    (["--ready", "http://10.0.0.1:80/", "--", "true"], "on this machine"),
    (["--request", "r.json", "--", "true"], "takes no requests"),
    (["--eager", "a b", "--", "true"], "expected a module name"),
    (["--bogus"], "unknown option"),
    (["--timeout", "soon", "--", "true"], "not a duration"),
    (["--timeout", "0", "--", "true"], "more than zero"),
    (["--fn", "f.py", "--", "true"], "either --fn"),
])
def test_usage_errors(workdir, args, message):
    write(workdir, "func.py", "def handler(ctx, data=None):\n    return 1\n")
    p = plan_cmd(*args, cwd=workdir)
    assert p.returncode == 2, p.stderr
    assert message in p.stderr


def test_help():
    p = plan_cmd("--help")
    assert p.returncode == 0
    for word in ("--fn", "--request", "--verify", "--eager", "Exit status"):
        assert word in p.stdout


def test_missing_interpreter_and_failing_function(workdir):
    write(workdir, "func.py", """
        import no_such_module_for_plan
        def handler(ctx, data=None):
            return "x"
    """)
    write(workdir, "req.json", "{}")
    p = plan_cmd("--python", "/nonexistent/python3", "--fn", "func.py",
                 "--request", "req.json", cwd=workdir)
    assert p.returncode == 4, p.stderr
    assert "/nonexistent/python3" in p.stderr
    p = plan_cmd("--python", DEBIAN_PYTHON, "--fn", "func.py", "--request",
                 "req.json", cwd=workdir)
    assert p.returncode == 5, p.stderr
    assert "answered 502" in p.stderr
    assert "no_such_module_for_plan" in p.stderr
    assert not os.path.exists(os.path.join(workdir, "coldstart-plan.json"))


def test_a_target_that_never_becomes_ready_times_out(workdir):
    write(workdir, "func.py", "def handler(ctx, data=None):\n    return 1\n")
    write(workdir, "req.json", "{}")
    p = plan_cmd("--timeout", "2s", "--ready", "fn", "--request", "req.json",
                 "--", DEBIAN_PYTHON, "-c", "import time; time.sleep(60)",
                 cwd=workdir)
    assert p.returncode == 9, p.stderr
    assert "timed out waiting for lsnr.sock" in p.stderr


def _procs_with(marker):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGQUIT], ids=["SIGINT", "SIGQUIT"])
def test_ctrl_c_stops_the_target_and_cleans_up(workdir, sig):
    """The FN_LISTENER directory is this run's, under its own TMPDIR (other
    coldstart plans on the machine have theirs in /tmp), and gone after
    Ctrl-C (SIGQUIT too: 128+N, as for profile)."""
    write(workdir, "slowfunc.py", """
        import time
        def handler(ctx, data=None):
            time.sleep(120)
            return "late"
    """)
    write(workdir, "req.json", "{}")
    tmpdir = os.path.join(workdir, "tmp")
    os.mkdir(tmpdir)
    env = clean_env()
    env["TMPDIR"] = tmpdir
    p = subprocess.Popen([COLDSTART, "plan", "--python", DEBIAN_PYTHON,
                          "--fn", os.path.join(workdir, "slowfunc.py"),
                          "--request", "req.json"], cwd=workdir, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    marker = os.path.join(workdir, "slowfunc.py")
    mine = "coldstart-plan-%d-" % p.pid

    def listening():
        return [f for f in os.listdir(tmpdir) if f.startswith(mine)
                and os.path.lexists(os.path.join(tmpdir, f, "lsnr.sock"))]

    for _ in range(300):
        if _procs_with(marker) and listening():
            break
        time.sleep(0.05)
    # The FN_LISTENER directory and the run's private one (its records).
    assert len(listening()) == 1, os.listdir(tmpdir)
    assert len([f for f in os.listdir(tmpdir) if f.startswith(mine)]) == 2, os.listdir(tmpdir)
    time.sleep(1.0)
    p.send_signal(sig)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 128 + sig, err
    assert b"interrupted" in err
    time.sleep(0.2)
    assert [q for q in _procs_with(marker) if q != p.pid] == []
    assert os.listdir(tmpdir) == []
    assert [f for f in os.listdir(workdir) if "plan.json" in f] == []


def test_what_a_sigkilled_plan_started_is_gone_after_the_next_run(workdir):
    """coldstart plan runs its target in a cgroup of its own, as profile
    does: what the target started (here in a session of its own) does not
    outlive a SIGKILLed coldstart plan past the next run, which also
    removes the dead run's private directory.  Before, the target and its
    child ran on, and the target wrote its record beside the output at its
    exit."""
    marker = "plan-sigkill-sleeper-%d" % os.getpid()
    started = os.path.join(workdir, "started")
    write(workdir, "tool.py", """
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)",
                          sys.argv[1]], start_new_session=True)
        open(sys.argv[2], "w").close()
        time.sleep(600)
    """)
    tmpdir = os.path.join(workdir, "tmp")
    os.mkdir(tmpdir)
    env = clean_env()
    env["TMPDIR"] = tmpdir
    out = os.path.join(workdir, "p.json")
    p = subprocess.Popen([COLDSTART, "plan", "-o", out, "--", DEBIAN_PYTHON,
                          "tool.py", marker, started], cwd=workdir, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(600):
            if os.path.exists(started) and _procs_with(marker):
                break
            time.sleep(0.05)
        assert _procs_with(marker), p.stderr.read() if p.poll() is not None else ""
        p.kill()
        p.wait(timeout=30)
        p.stderr.close()
        # The next run: a short script, planned whole.
        q = subprocess.run([COLDSTART, "plan", "-o", os.path.join(workdir, "q.json"),
                            "--", DEBIAN_PYTHON, "-c", "import json"], cwd=workdir,
                           env=env, capture_output=True, text=True, timeout=300)
        assert q.returncode == 0, q.stderr
        left = _procs_with(marker)
        assert left == [], "the SIGKILLed plan's processes still run"
        assert os.listdir(tmpdir) == []
        assert sorted(f for f in os.listdir(workdir) if ".json" in f) == \
            ["q.json", "q.json.code"]
    finally:
        for pid in _procs_with(marker) + _procs_with(started):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_profile_report_points_at_plans(workdir):
    fn = os.path.join(BENCH_FNS, "fn_numpy")
    out = os.path.join(workdir, "prof.json")
    env = clean_env()
    p = subprocess.run([COLDSTART, "profile", "--python", DEBIAN_PYTHON,
                        "--ready", "fn", "--no-baseline", "-o", out, "--",
                        DEBIAN_PYTHON, os.path.join(ROOT, "python",
                                                    "coldstart-fdk"),
                        "func.py", "handler"], cwd=fn, capture_output=True,
                       text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    assert "[startup-plan]" in p.stdout
    prof = json.load(open(out))
    f = [x for x in prof["findings"] if x["id"] == "startup-plan"]
    assert len(f) == 1
    assert f[0]["cost_us"] >= 5000
    assert "numpy" in f[0]["evidence"] and "coldstart plan --fn" in f[0]["fix"]
    # Without a first response (no --ready) there is nothing to say.
    p = subprocess.run([COLDSTART, "profile", "--python", DEBIAN_PYTHON,
                        "--no-baseline", "-o", out, "-c", "import json"],
                       cwd=workdir, capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    assert [x for x in json.load(open(out)).get("findings", [])
            if x["id"] == "startup-plan"] == []



def test_profile_under_a_plan_does_not_advise_making_one(workdir):
    # The demo's third run: the function applies its verified plan, and
    # what still ran before the first response is what the plan runs at
    # once; the finding says so instead of telling to record a plan.
    hello = os.path.join(ROOT, "samples", "fn-hello")
    func = os.path.join(hello, "func.py")
    plan = os.path.join(workdir, "plan.json")
    env = clean_env()
    q = subprocess.run([COLDSTART, "plan", "--fn", func, "handler",
                        "--python", DEBIAN_PYTHON, "--request",
                        os.path.join(hello, "request.json"), "-o", plan],
                       cwd=workdir, capture_output=True, text=True,
                       timeout=300, env=env)
    assert q.returncode == 0, q.stderr
    out = os.path.join(workdir, "prof.json")
    p = subprocess.run([COLDSTART, "profile", "--python", DEBIAN_PYTHON,
                        "--ready", "fn", "--no-baseline", "-o", out, "--",
                        DEBIAN_PYTHON, os.path.join(ROOT, "python",
                                                    "coldstart-fdk"),
                        "--plan", plan, func, "handler"], cwd=workdir,
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    assert "coldstart plan:" not in p.stderr, p.stderr  # applied, not refused
    f = [x for x in json.load(open(out))["findings"]
         if x["id"] == "startup-plan"]
    # asyncio, which the function's request path uses, runs at once.
    assert len(f) == 1 and "asyncio" in f[0]["evidence"], f
    assert "under a start-up plan" in f[0]["title"], f[0]
    assert "coldstart plan --fn" not in f[0]["fix"], f[0]
    assert "the plan runs these at once" in f[0]["fix"], f[0]

def _fn_call(sock_path, body, call_id):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock_path)
    s.sendall(("POST /call HTTP/1.1\r\nHost: x\r\nFn-Call-Id: %s\r\n"
               "Content-Length: %d\r\n\r\n" % (call_id, len(body))).encode()
              + body)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, _, rest = buf.partition(b"\r\n\r\n")
    n = int([line.split(b":")[1] for line in head.split(b"\r\n")
             if line.lower().startswith(b"content-length")][0])
    while len(rest) < n:
        rest += s.recv(65536)
    s.close()
    return rest[:n]


def test_coldstart_fdk_applies_the_plan_and_warms_in_background(workdir):
    write(workdir, "unused_dep.py", "VALUE = 3\n")
    write(workdir, "func.py", """
        import json, sys, time
        import unused_dep
        from fdk import response

        def handler(ctx, data=None):
            plan = sys.modules.get("coldstart.plan")
            wait = json.loads(data.getvalue() or b"{}").get("wait", 0)
            end = time.time() + wait
            while plan and plan.deferred() and time.time() < end:
                time.sleep(0.02)
            return response.Response(ctx, response_data=json.dumps(
                {"plan": plan is not None,
                 "deferred": plan.deferred() if plan else None}))
    """)
    write(workdir, "req.json", "{}")
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--python", DEBIAN_PYTHON, "--fn", "func.py", "--request",
                 "req.json", "-o", out, cwd=workdir)
    assert p.returncode == 0, p.stderr
    mods = {m["name"]: m for m in json.load(open(out))["modules"]}
    assert mods["unused_dep"]["action"] == "defer"
    # Lazy: the body stays deferred (checked for half a second); background:
    # it loads in a thread once the first response is out.
    # COLDSTART_PLAN does what --plan does.
    for warm, wait, stays, by_env in (("lazy", 0.5, True, False),
                                      ("background", 10, False, False),
                                      ("lazy", 0.5, True, True)):
        d = tempfile.mkdtemp(prefix="planfn", dir="/tmp")
        sock = os.path.join(d, "lsnr.sock")
        env = clean_env()
        env.update(FN_LISTENER="unix:" + sock, FN_FORMAT="http-stream")
        how = ["--plan", out]
        if by_env:
            env["COLDSTART_PLAN"] = out
            how = []
        proc = subprocess.Popen([DEBIAN_PYTHON,
                                 os.path.join(ROOT, "python", "coldstart-fdk")]
                                + how + ["--warm", warm, "func.py", "handler"],
                                cwd=workdir, env=env, stderr=subprocess.PIPE)
        try:
            for _ in range(600):
                if os.path.islink(sock):
                    break
                time.sleep(0.01)
            r1 = json.loads(_fn_call(sock, b"{}", "c1"))
            r2 = json.loads(_fn_call(sock, json.dumps({"wait": wait}).encode(),
                                     "c2"))
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
            shutil.rmtree(d, ignore_errors=True)
        assert b"coldstart plan:" not in err, err
        assert r1["plan"] is True and "unused_dep" in r1["deferred"], warm
        if stays:
            assert r2["deferred"] == r1["deferred"]
        else:
            assert r2["deferred"] == []


@pytest.mark.parametrize("version", ["2.7.18", "3.7.16"])
def test_old_interpreters_are_refused_at_once(workdir, version):
    py = "/root/.pyenv/versions/%s/bin/python" % version
    if not os.path.exists(py):
        pytest.skip("pyenv %s is not installed" % version)
    t = time.time()
    p = plan_cmd("--", py, "-c", "print(1)", cwd=workdir)
    assert p.returncode == 4, p.stderr
    assert "cannot be planned: 3.8 or newer is needed" in p.stderr
    assert time.time() - t < 30
    assert os.listdir(workdir) == []


def test_a_plan_given_to_a_runtime_on_3_7_is_left_with_its_reason(workdir):
    # Plans are for 3.8 and newer; coldstart-lambda on 3.7 given one says
    # why it does not apply it and answers without it (plan.py once did not
    # compile on 3.7, and the runtime failed its init with a SyntaxError).
    py = "/root/.pyenv/versions/3.7.16/bin/python"
    if not os.path.exists(py):
        pytest.skip("pyenv 3.7.16 is not installed")
    write(workdir, "app.py", "def handler(event, context):\n    return {'ok': 1}\n")
    write(workdir, "event.json", "{}")
    p = plan_cmd("--python", DEBIAN_PYTHON, "--lambda", "app.handler",
                 "--request", "event.json", "-o", "p.json", cwd=workdir)
    assert p.returncode == 0, p.stderr
    env = clean_env()
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    r = subprocess.run([py, os.path.join(ROOT, "python", "coldstart-lambda"),
                        "--plan", "p.json", "--serve-events", "event.json",
                        "app.handler"], cwd=workdir, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == ["response event-1 application/json",
                                         '{"ok": 1}'], r.stdout
    assert "coldstart plan: ignoring stale plan 'p.json': the plan was made " \
        "by another interpreter" in r.stderr, r.stderr


def _fdk_calls(workdir, how, bodies, extra_env=()):
    """Runs coldstart-fdk (args how before FUNC) on func.py, sends each body
    as a call; returns (the responses, its stderr)."""
    d = tempfile.mkdtemp(prefix="planfn", dir="/tmp")
    sock = os.path.join(d, "lsnr.sock")
    env = clean_env(("PYTHONPATH", "FDK_DEBUG"))
    env.update(FN_LISTENER="unix:" + sock, FN_FORMAT="http-stream")
    env.update(extra_env)
    proc = subprocess.Popen([DEBIAN_PYTHON,
                             os.path.join(ROOT, "python", "coldstart-fdk")]
                            + how + ["func.py", "handler"],
                            cwd=workdir, env=env, stderr=subprocess.PIPE)
    try:
        for _ in range(600):
            if os.path.islink(sock):
                break
            time.sleep(0.01)
        out = [json.loads(_fn_call(sock, b, "c%d" % i))
               for i, b in enumerate(bodies, 1)]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        shutil.rmtree(d, ignore_errors=True)
    return out, err.decode()


def test_under_a_plan_logging_is_set_up_at_its_first_use(workdir):
    # The sample request does not log: under the plan, logging is not
    # imported for it; a later call that logs gets fdk-python's set-up, with
    # the same lines as without the plan.
    write(workdir, "func.py", """
        import json, sys
        from fdk import response

        def handler(ctx, data=None):
            req = json.loads(data.getvalue() or b"{}")
            plan = sys.modules.get("coldstart.plan")
            lg = sys.modules.get("logging")
            state = "absent" if lg is None else (
                "deferred" if plan and plan.is_deferred(lg) else "loaded")
            if req.get("log"):
                import logging
                logging.getLogger("app").info("info %s", req["log"])
                logging.getLogger("fdk").info("not shown: fdk is at WARNING")
                logging.warning("root %d", len(logging.getLogger().handlers))
            return response.Response(ctx, response_data=json.dumps(
                {"before": state, "log": req.get("log")}))
    """)
    write(workdir, "req.json", "{}")
    out = os.path.join(workdir, "p.json")
    # (no --verify: the response says whether logging is deferred)
    p = plan_cmd("--python", DEBIAN_PYTHON, "--fn", "func.py", "--request",
                 "req.json", "-o", out, cwd=workdir)
    assert p.returncode == 0, p.stderr
    bodies = [b"{}", b'{"log": 1}', b'{"log": 2}']
    plain, plain_err = _fdk_calls(workdir, [], bodies)
    planned, planned_err = _fdk_calls(workdir, ["--plan", out], bodies)
    assert "coldstart plan:" not in planned_err, planned_err
    assert plain[0]["before"] == "loaded"
    assert planned[0]["before"] == "deferred"
    assert planned[1]["before"] == "deferred"
    assert planned[2]["before"] == "loaded"
    lines = [ln for ln in plain_err.splitlines() if " - " in ln]
    assert lines == ["c2 - app - INFO - info 1", "c2 - root - WARNING - root 1",
                     "c3 - app - INFO - info 2", "c3 - root - WARNING - root 1"]
    assert [ln for ln in planned_err.splitlines() if " - " in ln] == lines


def _plan_func(workdir):
    """Plans func.py in workdir for the request {} (no --verify); returns
    the plan's path."""
    write(workdir, "req.json", "{}")
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--python", DEBIAN_PYTHON, "--fn", "func.py", "--request",
                 "req.json", "-o", out, cwd=workdir)
    assert p.returncode == 0, p.stderr
    return out


# What coldstart-fdk itself imports for a function's first call under a plan,
# beyond the interpreter's start-up: the server, the plan's reader and the
# C modules they use.  Each module here costs every function's first call
# (under Fn's 10% CPU quota, a tenth of a millisecond of CPU is a
# millisecond of its time), so the list is pinned.
FIRST_CALL_EXTRA = {"_socket", "select", "gc", "_json", "_contextvars",
                    "contextvars", "atexit",
                    # fdk-python's TracingContext holds a ZipkinAttrs
                    # namedtuple from the start (its own tests read it):
                    # the same type, made without collections (about 4 M
                    # instructions with keyword, operator and reprlib).
                    "_collections"}


def test_under_a_plan_a_call_imports_only_what_the_server_needs(workdir):
    write(workdir, "func.py", """
        import sys
        from fdk import response

        def handler(ctx, data=None):
            # The modules whose bodies ran (logging is created deferred), as
            # JSON made without the json module.
            plan = sys.modules["coldstart.plan"]
            names = sorted(n for n, m in list(sys.modules.items())
                           if m is not None and not plan.is_deferred(m))
            return response.Response(ctx, response_data='["%s"]' % '", "'.join(
                names))
    """)
    out = _plan_func(workdir)
    env = clean_env(("PYTHONPATH", "FDK_DEBUG"))
    start = subprocess.run([DEBIAN_PYTHON, "-c",
                            "import sys; print(' '.join(sys.modules))"],
                           env=env, capture_output=True, text=True,
                           timeout=60).stdout.split()
    (loaded,), err = _fdk_calls(workdir, ["--plan", out], [b"{}"])
    assert "coldstart plan:" not in err, err
    extra = {m for m in set(loaded) - set(start)
             if m.split(".")[0] not in ("coldstart", "fdk", "func")}
    assert extra <= FIRST_CALL_EXTRA, sorted(extra - FIRST_CALL_EXTRA)


def test_under_a_plan_the_function_file_is_not_compiled_again(workdir):
    # The plan's code archive holds FUNC's code: compiling the file again
    # (the compiler's first use in a process builds all its AST types)
    # cost more than the rest of a trivial function's first call.  A
    # sitecustomize's audit hook sees every compile() of the process.
    write(workdir, "func.py", """
        from fdk import response

        def handler(ctx, data=None):
            return response.Response(ctx, response_data='{"ok": 1}')
    """)
    hook = os.path.join(workdir, "hook")
    os.mkdir(hook)
    log = os.path.join(workdir, "compiled.txt")
    write(hook, "sitecustomize.py", """
        import os, sys

        def audit(event, args):
            if event == "compile" and args[1] is not None:
                with open(os.environ["COMPILED_LOG"], "a") as f:
                    f.write(os.fsdecode(args[1]) + "\\n")
        sys.addaudithook(audit)
    """)
    out = _plan_func(workdir)
    env = {"PYTHONPATH": hook, "COMPILED_LOG": log}
    func = os.path.join(workdir, "func.py")
    for how, compiled in (([], True), (["--plan", out], False)):
        if os.path.exists(log):
            os.unlink(log)
        got, err = _fdk_calls(workdir, how, [b"{}", b"{}"], env)
        assert got == [{"ok": 1}] * 2, err
        assert "coldstart plan:" not in err, err
        names = open(log).read().split() if os.path.exists(log) else []
        assert (func in names) is compiled, (how, names)


def test_under_a_plan_a_call_without_lazy_names_makes_none_of_their_classes(
        workdir):
    # coldstart.plan's six lazy-name classes cost about 50 K instructions
    # each to create; they are made when the first body with lazy
    # from-imports runs, and this function's first call runs none.
    write(workdir, "func.py", """
        import sys
        from fdk import response

        def handler(ctx, data=None):
            plan = sys.modules["coldstart.plan"]
            made = [n for n in ("_Pending", "_Builtins", "_BodyRunning",
                                "_LazyBase", "_LazyNames", "_LazyNamesGetattr")
                    if getattr(plan, n, None) is not None]
            return response.Response(ctx, response_data='["%s"]' % '", "'.join(
                made))
    """)
    out = _plan_func(workdir)
    (made,), err = _fdk_calls(workdir, ["--plan", out], [b"{}"])
    assert "coldstart plan:" not in err, err
    assert made == [""], made


def test_a_script_that_imports_threading_late_is_planned_whole(workdir):
    # subprocess imports threading, which imports _weakrefset: that body
    # ended while threading's was half made, and the recorder asked the
    # half-made module for setprofile, failed inside the target's import
    # and wrote a plan of the modules imported until then (26 of Django's
    # 583 for `manage.py check`).
    write(workdir, "late.py", """
        import subprocess
        import email.message
        print(email.message.Message().get_content_type())
    """)
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--verify", "-o", out, "--", DEBIAN_PYTHON, "late.py",
                 cwd=workdir)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    with open(out) as f:
        names = {m["name"] for m in json.load(f)["modules"]}
    assert {"subprocess", "threading", "email.message"} <= names, sorted(names)


@pytest.mark.skipif(not os.path.exists("/usr/lib/python3/dist-packages/django"),
                    reason="Debian's python3-django is not installed")
def test_django_manage_check_is_planned(workdir):
    subprocess.run([DEBIAN_PYTHON, "-m", "django", "startproject", "site_"],
                   cwd=workdir, check=True, capture_output=True)
    proj = os.path.join(workdir, "site_")
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--verify", "-o", out, "--", DEBIAN_PYTHON, "manage.py",
                 "check", cwd=proj)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verified" in p.stdout + p.stderr
    with open(out) as f:
        names = {m["name"] for m in json.load(f)["modules"]}
    assert len(names) > 300 and "django.core.management" in names, len(names)


def test_a_failing_recorder_writes_no_plan_and_leaves_the_target_alone(
        workdir):
    # A class whose metaclass hides __mro__ from attribute reads (the
    # interpreter never reads it so) makes the recorder's look at new
    # classes fail: the target runs on as without the recorder, and
    # coldstart plan says what failed instead of writing an incomplete plan.
    write(workdir, "odd.py", """
        class Meta(type):
            def __getattribute__(cls, name):
                if name == "__mro__":
                    raise RuntimeError("this class hides its __mro__")
                return type.__getattribute__(cls, name)

        class Odd(metaclass=Meta):
            pass
    """)
    write(workdir, "tool.py", """
        import odd, json
        print(json.dumps({"odd": type(odd.Odd()).__name__}))
    """)
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("-o", out, "--", DEBIAN_PYTHON, "tool.py", cwd=workdir)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "the recorder failed" in p.stderr and "class_built" in p.stderr, \
        p.stderr
    assert "this class hides its __mro__" in p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    assert not os.path.exists(out)
