"""`coldstart plan` in a directory other users can write (issue 25, item 1):
everything a run writes lives in its own private directory until the plan
is done, so nothing another user plants beside the output is read or
written through.  The attacks run as the real user `nobody`, on real
files, against the real binary run as root.
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import textwrap
import time

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, ROOT, clean_env

NOBODY = 65534

pytestmark = [
    pytest.mark.skipif(not os.path.exists(DEBIAN_PYTHON),
                       reason="Debian's python3 is not installed"),
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="the attacks need root to plan and nobody to plant"),
]


@pytest.fixture
def shared():
    """A shared directory as /tmp is: world-writable and sticky, and a
    private one beside it for the test's own files."""
    base = tempfile.mkdtemp(prefix="plantrust", dir="/tmp")
    os.chmod(base, 0o755)
    d = os.path.join(base, "shared")
    os.mkdir(d)
    os.chmod(d, 0o1777)
    own = os.path.join(base, "own")
    os.mkdir(own, 0o700)
    tmp = os.path.join(base, "tmp")
    os.mkdir(tmp, 0o700)
    yield d, own, tmp
    shutil.rmtree(base, ignore_errors=True)


def write(d, name, text, mode=0o644):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    os.chmod(path, mode)
    return path


def as_nobody(code, *args):
    """Runs python code as the user nobody."""
    subprocess.run(["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY),
                    "--clear-groups", DEBIAN_PYTHON, "-c", code] + list(args),
                   check=True, timeout=60, env={"PATH": "/usr/bin:/bin"})


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def server(own):
    write(own, "server.py", """
        import json, sys
        from http.server import BaseHTTPRequestHandler, HTTPServer

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                import statistics
                body = self.rfile.read(int(self.headers["Content-Length"]))
                out = json.dumps(statistics.mean(json.loads(body)["xs"])).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
            def log_message(self, *a):
                pass

        HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
    """)
    write(own, "r1.json", '{"xs": [1, 2, 3]}')


def start_plan(own, tmp, args):
    """coldstart plan started through a shell that waits for a line on its
    stdin before it executes coldstart (same pid): the attacker knows the
    pid and plants first.  Returns the process."""
    env = clean_env()
    env["TMPDIR"] = tmp
    cmd = "read go; exec %s plan %s" % (COLDSTART, " ".join(args))
    return subprocess.Popen(["sh", "-c", cmd], cwd=own, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(p):
    out, err = p.communicate("go\n", timeout=300)
    return p.returncode, out, err


def test_a_record_another_user_planted_is_not_the_plan(shared):
    """Before, the picker read every p.json.tmp-PID.pidN beside the output
    and kept the one with the largest summary.load: nobody's record became
    root's plan."""
    d, own, tmp = shared
    server(own)
    port = free_port()
    out = os.path.join(d, "p.json")
    p = start_plan(own, tmp, ["--ready", "http://127.0.0.1:%d/" % port,
                              "--request", "r1.json", "-o", out, "--",
                              DEBIAN_PYTHON, "server.py", str(port)])
    forged = {"format": "coldstart-plan", "version": 1, "code": None,
              "index": [], "summary": {"load": 10 ** 9},
              "modules": [{"name": "planted_by_nobody", "action": "load",
                           "kind": "source", "path": "/tmp/x.py"}]}
    planted = ["%s.tmp-%d.pid%d" % (out, p.pid, n) for n in (2, 99999)]
    as_nobody("import json, sys\nfor p in sys.argv[2:]:\n"
              "    open(p, 'w').write(sys.argv[1])", json.dumps(forged),
              *planted)
    rc, stdout, stderr = finish(p)
    assert rc == 0, stderr
    plan = json.load(open(out))
    names = {m["name"] for m in plan["modules"]}
    assert "planted_by_nobody" not in names
    assert "statistics" in names and plan["summary"]["load"] < 1000
    assert "processes recorded" not in stdout
    # Left where they were, unread; nothing else of the run is left.
    assert sorted(os.listdir(d)) == sorted(["p.json", "p.json.code"] +
                                           [os.path.basename(x) for x in planted])
    assert os.listdir(tmp) == []


def test_links_another_user_planted_are_not_written_through(shared):
    """A symlink at every name the run used beside the output (the plan's
    and the archive's temporary names, .pick, .bisect, .forced, its lock
    and its temporary, .forced-load, the recorder's .tmpPID of the next few
    hundred pids): root must not write through one.  Before, writing the
    plan with its archive's path went through p.json.tmp-PID and
    overwrote the link's target."""
    d, own, tmp = shared
    server(own)
    port = free_port()
    out = os.path.join(d, "p.json")
    victims = os.path.join(own, "victims")
    os.mkdir(victims)
    p = start_plan(own, tmp, ["--ready", "http://127.0.0.1:%d/" % port,
                              "--request", "r1.json", "--verify", "-o", out,
                              "--", DEBIAN_PYTHON, "server.py", str(port)])
    tmp_name = "%s.tmp-%d" % (out, p.pid)
    code_tmp = "%s.code.tmp-%d" % (out, p.pid)
    names = [tmp_name, code_tmp, tmp_name + ".pick", tmp_name + ".bisect",
             tmp_name + ".forced", tmp_name + ".forced.lock",
             tmp_name + ".forced-load"]
    for pid in range(p.pid + 1, p.pid + 300):
        names += ["%s.tmp%d" % (tmp_name, pid), "%s.tmp%d" % (code_tmp, pid),
                  "%s.forced.tmp%d" % (tmp_name, pid)]
    links = {}
    for i, name in enumerate(names):
        victim = os.path.join(victims, "v%d" % i)
        if i % 2 == 0:  # half exist, half would be created
            write(victims, "v%d" % i, "precious %d\n" % i, mode=0o600)
        links[name] = victim
    as_nobody("import json, os, sys\n"
              "for name, victim in json.loads(sys.argv[1]).items():\n"
              "    os.symlink(victim, name)", json.dumps(links))
    rc, stdout, stderr = finish(p)
    assert rc == 0, stderr
    assert "verified" in stdout
    through = [name for i, name in enumerate(names)
               if (open(links[name]).read() != "precious %d\n" % i if i % 2 == 0
                   else os.path.exists(links[name]))]
    assert through == []
    assert [n for n in names if not os.path.islink(n)] == []
    plan = json.load(open(out))
    assert "statistics" in {m["name"] for m in plan["modules"]}
    assert plan["code"]["path"] == os.path.basename(out) + ".code"
    assert os.listdir(tmp) == []


@pytest.mark.parametrize("case", ["502", "timeout", "refused", "not-python"])
def test_a_failed_run_leaves_nothing_behind(shared, case):
    """Whatever way a run fails, the output's directory and TMPDIR hold
    after it what they held before: the private directory goes whole."""
    d, own, tmp = shared
    write(own, "req.json", "{}")
    write(own, "names.py", "NAMES = []\n")
    write(own, "plugin.py", "import names\nnames.NAMES.append('plugin')\n")
    write(own, "func.py", """
        import json, os, time
        import names
        import plugin
        from fdk import response

        def handler(ctx, data=None):
            if os.environ.get("CASE") == "502":
                raise RuntimeError("failing on purpose")
            if os.environ.get("CASE") == "timeout":
                time.sleep(60)
            if os.environ.get("CASE") == "refused":  # another answer every time
                return response.Response(ctx, response_data=str(time.time_ns()))
            return response.Response(ctx, response_data=json.dumps(names.NAMES))
    """)
    env = clean_env()
    env["TMPDIR"] = tmp
    env["CASE"] = case
    out = os.path.join(d, "p.json")
    args = ["--python", DEBIAN_PYTHON, "--fn", "func.py", "--request",
            "req.json", "-o", out]
    if case == "refused":
        args.append("--verify")
    if case == "timeout":
        args += ["--timeout", "4s"]
    if case == "not-python":
        args = ["-o", out, "--", "sh", "-c", "echo hi"]
    before = sorted(os.listdir(own))
    p = subprocess.run([COLDSTART, "plan"] + args, cwd=own, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == {"502": 5, "timeout": 8, "refused": 1,
                            "not-python": 1}[case], p.stderr
    assert os.listdir(d) == []
    assert sorted(os.listdir(own)) == before
    assert os.listdir(tmp) == []


def test_an_output_on_another_file_system_is_copied_whole(shared):
    """TMPDIR on a tmpfs, the output on the disk: the archive and the plan
    are copied into new files beside the output and renamed; the archive
    keeps the mtime the plan records, and no temporary file is left."""
    d, own, tmp = shared
    if os.stat("/dev/shm").st_dev == os.stat(d).st_dev:
        pytest.skip("/dev/shm is on the same file system as /tmp here: no second one")
    shm = tempfile.mkdtemp(prefix="plantrust", dir="/dev/shm")
    try:
        env = clean_env()
        env["TMPDIR"] = shm
        out = os.path.join(d, "p.json")
        p = subprocess.run([COLDSTART, "plan", "-o", out, "--", DEBIAN_PYTHON,
                            "-c", "import json, fractions; print(fractions.Fraction(1, 3))"],
                           cwd=own, env=env, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        plan = json.load(open(out))
        st = os.stat(out + ".code")
        assert plan["code"]["path"] == os.path.basename(out) + ".code"
        assert (plan["code"]["size"], plan["code"]["mtime_ns"]) == \
            (st.st_size, st.st_mtime_ns)
        assert sorted(os.listdir(d)) == ["p.json", "p.json.code"]
        assert os.listdir(shm) == []
        mask = os.umask(0)
        os.umask(mask)
        assert os.stat(out).st_mode & 0o777 == 0o666 & ~mask
        # Applied, the archive is used: no warning.
        env = clean_env()
        env["COLDSTART_PLAN"] = out
        env["PYTHONPATH"] = os.path.join(ROOT, "python",
                                         "coldstart", "_boot", "plan")
        r = subprocess.run([DEBIAN_PYTHON, "-c",
                            "import json, fractions; print(fractions.Fraction(1, 3))"],
                           cwd=own, env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.stdout == "1/3\n" and r.stderr == "", r.stderr
    finally:
        shutil.rmtree(shm, ignore_errors=True)
