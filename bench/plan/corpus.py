"""The plan corpus: real programs from Debian's packages that the plan
benchmark does not use, each planned with the documented one-liner on one
input and then run on five other inputs (or requests) that take other code
paths, with and without the plan.  A run counts as identical when what a
user sees is the same: stdout, stderr and exit status of a command and the
files it leaves in its working directory; status and body of each answer of
a server or an Fn function.  A plan refused up front (coldstart plan exits
1, or the applier declines it with one line on stderr) is a refusal, not a
failure.  Prints one row per program and the totals; exits 1 when a run
differed or crashed.

usage: python3 bench/plan/corpus.py [--only NAME[,NAME...]] [--keep DIR]
  COLDSTART (default ./coldstart) is the binary; PYTHON (default
  /usr/bin/python3) runs the servers, functions and `python3 -m` tools.
"""

import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "corpus"))
sys.path.insert(0, os.path.dirname(HERE))
import apps  # noqa: E402
import inputs  # noqa: E402
import fnagent  # noqa: E402

COLDSTART = os.environ.get("COLDSTART") or os.path.join(ROOT, "coldstart")
PY = os.environ.get("PYTHON") or "/usr/bin/python3"
BOOT = os.path.join(ROOT, "python", "coldstart", "_boot", "plan")
TIMEOUT = 120

AWS = [["dynamodb", "get-item", "--generate-cli-skeleton"],
       ["s3api", "put-object", "--generate-cli-skeleton"],
       ["ec2", "describe-instances", "--generate-cli-skeleton", "output"],
       ["--version"],
       ["s3", "ls", "--bogus-option"],
       ["configure", "list"]]
HTTP = [["--offline", "POST", "example.invalid/api", "name=corpus"],
        ["--offline", "--form", "POST", "example.invalid/f", "a=1", "b=2"],
        ["--offline", "GET", "example.invalid/q", "x==1", "Accept:text/plain"],
        ["--offline", "--json", "PUT", "example.invalid/j", "n:=3", "l:=[1,2]"],
        ["--offline", "--pretty=none", "DELETE", "example.invalid/d"],
        ["--offline", "POST", "example.invalid/bad", "broken:=[1,"]]
PYTEST = [
    "def test_ok():\n    assert 1 + 1 == 2\n",
    "def test_fail():\n    assert [1, 2] == [1, 3]\n",
    "import pytest\n\n\n@pytest.mark.parametrize('x', [1, 2, 3])\ndef test_p(x):\n    assert x < 3\n",
    "import pytest\n\n\ndef test_skip():\n    pytest.skip('not here')\n",
    "def test_error(:\n    pass\n",
    "import pytest\n\n\n@pytest.fixture\ndef v():\n    return {'a': 1}\n\n\ndef test_fx(v):\n    assert v['a']\n",
]

# name, argv before the input, input kind ("py", ..., or "args": the inputs
# are argument lists), output masks (regexes of what changes by itself),
# files to leave out of the comparison (regex over relative paths).
CLIS = [
    ("black", ["/usr/bin/black", "-q", "{in}"], "py", [], None),
    ("flake8", ["/usr/bin/flake8", "{in}"], "py", [], None),
    ("pylint", ["/usr/bin/pylint", "-sn", "--persistent=n", "{in}"], "py", [], None),
    ("isort", ["/usr/bin/isort", "{in}"], "py", [], None),
    ("pycodestyle", ["/usr/bin/pycodestyle", "{in}"], "py", [], None),
    ("pyflakes", ["/usr/bin/pyflakes3", "{in}"], "py", [], None),
    ("mypy", [PY, "-m", "mypy", "--no-incremental", "--cache-dir=/dev/null", "{in}"], "py", [], None),
    ("pygmentize", ["/usr/bin/pygmentize", "-f", "html", "-O", "full", "{in}"], "py", [], None),
    ("rst2html", ["/usr/bin/rst2html", "--no-datestamp", "{in}"], "rst", [], None),
    ("sphinx-build", ["/usr/bin/sphinx-build", "-q", "-b", "text", "-C", "-D", "master_doc=input", ".", "out"],
     "rst", [], r"(^|/)\.doctrees(/|$)|\.buildinfo$"),
    ("markdown_py", ["/usr/bin/markdown_py", "{in}"], "md", [], None),
    ("yamllint", ["/usr/bin/yamllint", "{in}"], "yaml", [], None),
    ("json.tool", [PY, "-m", "json.tool", "{in}"], "json", [], None),
    ("codespell", ["/usr/bin/codespell", "{in}"], "txt", [], None),
    ("chardetect", ["/usr/bin/chardetect", "{in}"], "txt", [], None),
    ("http", ["/usr/bin/http"], "args:http", [], None),
    ("aws", ["/usr/bin/aws"], "args:aws", [], None),
    ("pytest", ["/usr/bin/pytest-3", "-q", "-p", "no:cacheprovider", "test_input.py"], "pytest",
     [r"in \d+\.\d+s"], None),
]

SERVERS = [
    # name, app dir, argv ({port}), requests [(method, path, body)]
    ("django runserver", "django", [PY, "manage.py", "runserver", "--noreload", "127.0.0.1:{port}"],
     [("GET", "/hello/World", None), ("GET", "/page/a-b-c", None), ("GET", "/email/x@example.invalid", None),
      ("GET", "/email/not-an-email", None), ("GET", "/echo?a=1&b=2", None), ("GET", "/missing", None)]),
    ("flask (gunicorn -w 2)", "flask", ["/usr/bin/gunicorn", "-w", "2", "-b", "127.0.0.1:{port}", "app:app"],
     [("GET", "/hello/World", None), ("GET", "/page/<b>x</b>", None), ("GET", "/hash/abc", None),
      ("GET", "/missing", None), ("POST", "/echo?q=1", b"payload"), ("GET", "/nothing-here", None)]),
    ("fastapi (uvicorn)", "fastapi", [PY, "-m", "uvicorn", "--port", "{port}", "--log-level", "warning", "main:app"],
     [("GET", "/hello/World?times=2", None), ("POST", "/items", b'{"name": "a", "price": 2.5}'),
      ("POST", "/items", b'{"name": "a"}'), ("GET", "/fail/418", None), ("GET", "/openapi-paths", None),
      ("GET", "/hello/x?times=bad", None)]),
]

FUNCTIONS = [
    ("fn lxml", "fn_lxml", [{"id": 1, "items": ["a", "b"]}, {"id": 2, "items": []}, {"items": ["x"], "xpath": "//item"},
                            {"id": 3, "items": ["<&>"]}, {}, {"id": 4, "items": ["a"] * 50, "xpath": "count(//item)"}]),
    ("fn yaml", "fn_yaml", [{"a": 1, "b": [1, 2]}, {"yaml": "x: 1\ny: [a, b]"}, {"flow": True, "k": {"n": None}},
                            {"yaml": "d: 2001-12-14"}, {"yaml": "bad: [1"}, {"s": "multi\nline"}]),
    ("fn cryptography", "fn_crypto", [{"key": "k", "msg": "m"}, {"key": "other", "msg": ""}, {"kdf": True, "key": "pw"},
                                      {"kdf": True}, {"msg": "x" * 1000}, {"key": "\u00e9", "msg": "\u00fc"}]),
    ("fn networkx", "fn_networkx", [{"edges": [[1, 2, 1], [2, 3, 1]], "path": [1, 3]},
                                    {"edges": [[1, 2, 5], [1, 3, 1], [3, 2, 1]], "path": [1, 2]},
                                    {"edges": [[1, 2, 1], [3, 4, 1]], "what": "components"},
                                    {"edges": [[1, 2, 3], [2, 3, 1], [1, 3, 1]], "what": "mst"},
                                    {"edges": [[1, 2, 1]], "path": [1, 9]}, {"edges": [], "what": "components"}]),
    ("fn docutils", "fn_docutils", [{"rst": "Title\n=====\n\n*x*"}, {"rst": "- a\n- b", "part": "whole"},
                                    {"rst": "``code``", "writer": "latex"}, {"rst": ".. note:: n"},
                                    {"rst": "bad `x", "part": "fragment"}, {"rst": ""}]),
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def plan_env(plan):
    env = dict(os.environ)
    env["COLDSTART_PLAN"] = plan
    env["PYTHONPATH"] = BOOT + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def make_plan(argv, cwd, out, extra=()):
    """The documented one-liner: coldstart plan --verify -o OUT ... -- ARGV.
    Returns (made, reason, seconds)."""
    t0 = time.monotonic()
    p = subprocess.run([COLDSTART, "plan", "--verify", "-o", out] + list(extra) + (["--"] + argv if argv else []),
                       cwd=cwd, capture_output=True, text=True, timeout=600)
    took = time.monotonic() - t0
    if p.returncode == 0 and os.path.exists(out):
        return True, "", took
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    why = lines[-1] if lines else "exit %d" % p.returncode
    return False, "exit %d: %s" % (p.returncode, why), took


def snapshot(d, ignore):
    files = {}
    for dirpath, dirnames, filenames in os.walk(d):
        for f in filenames:
            rel = os.path.relpath(os.path.join(dirpath, f), d)
            if ignore and re.search(ignore, rel):
                continue
            with open(os.path.join(dirpath, f), "rb") as fh:
                files[rel] = fh.read()
    return files


def run_cli(argv, cwd, env, masks, ignore):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out, err = p.stdout, p.stderr
    for m in masks:
        out = re.sub(m.encode(), b"<masked>", out)
        err = re.sub(m.encode(), b"<masked>", err)
    return {"rc": p.returncode, "out": out, "err": err, "files": snapshot(cwd, ignore), "wall": wall, "cpu": cpu}


def verdict(a, b, keys):
    """'same', 'refused: ...' (the plan was declined with a coldstart line
    on stderr and nothing else differs) or 'differs: ...'."""
    if all(a[k] == b[k] for k in keys):
        return "same"
    if "err" in keys and all(a[k] == b[k] for k in keys if k != "err"):
        extra = [l for l in b["err"].splitlines() if l not in a["err"].splitlines()]
        if extra and all(l.startswith(b"coldstart") for l in extra):
            return "refused: " + extra[0].decode(errors="replace")[:100]
    what = [k for k in keys if a[k] != b[k]]
    return "differs: " + ",".join(what)


def prepare(work, kind, i, prog_argv):
    """A fresh working directory at the same path for every run, holding
    input I; returns the command line."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if kind.startswith("args:"):
        extra = {"args:aws": AWS, "args:http": HTTP}[kind][i]
        return prog_argv + extra
    if kind == "pytest":
        with open(os.path.join(work, "test_input.py"), "w") as f:
            f.write(PYTEST[i])
        return prog_argv
    path = inputs.write(work, kind, i)
    if kind == "rst" and "sphinx-build" in prog_argv[0]:
        return prog_argv
    return [a.replace("{in}", os.path.basename(path)) for a in prog_argv]


def missing(argv):
    """Why ARGV cannot run here (a program or module not installed), or
    None."""
    if argv[0].startswith("/") and not os.path.exists(argv[0]):
        return "not installed: %s (make bench installs it: tests/install-deps.sh bench)" % argv[0]
    if len(argv) > 2 and argv[1] == "-m":
        if subprocess.run([argv[0], "-c", "import " + argv[2].split(".")[0]], capture_output=True).returncode:
            return "not installed: python module %s (tests/install-deps.sh bench)" % argv[2]
    return None


def skipped(name, kind, why):
    return {"name": name, "kind": kind, "plan": False, "why": why, "plan_s": 0, "runs": [], "skipped": True}


def corpus_cli(name, argv, kind, masks, ignore, scratch):
    if missing(argv):
        return skipped(name, "cli", missing(argv))
    work = os.path.join(scratch, "work")
    plan = os.path.join(scratch, "plans", name + ".json")
    made, why, took = make_plan(prepare(work, kind, 0, argv), work, plan)
    row = {"name": name, "kind": "cli", "plan": made, "why": why, "plan_s": took, "runs": []}
    if not made:
        return row
    env = dict(os.environ)
    for i in range(1, 6):
        res = {}
        # Alternate which goes first, so that neither always runs on a
        # cache warmed by the other.
        for which in (("without", "with") if i % 2 else ("with", "without")):
            cmd = prepare(work, kind, i, argv)
            res[which] = run_cli(cmd, work, plan_env(plan) if which == "with" else env, masks, ignore)
        v = verdict(res["without"], res["with"], ("rc", "out", "err", "files"))
        row["runs"].append((v, res["without"]["wall"], res["with"]["wall"], res["without"]["cpu"], res["with"]["cpu"]))
    return row


def http_get(port, method, path, body, deadline):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body, method=method,
                                 headers={"Content-Type": "application/json"} if body else {})
    try:
        with urllib.request.urlopen(req, timeout=max(deadline - time.monotonic(), 1)) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def serve(argv, cwd, env, requests, port):
    """Starts the server, waits for its first answer, sends REQUESTS;
    returns (answers, seconds to the first answer, CPU of the run)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    deadline = t0 + TIMEOUT
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    answers, first = [], None
    try:
        while first is None:
            if p.poll() is not None:
                return None, None, None
            try:
                answers.append(http_get(port, *requests[0], deadline))
                first = time.monotonic() - t0
            except (OSError, urllib.error.URLError):
                if time.monotonic() > deadline:
                    return None, None, None
                time.sleep(0.005)
        for r in requests[1:]:
            answers.append(http_get(port, *r, deadline))
    finally:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except OSError:
            pass
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return answers, first, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def corpus_server(name, appdir, argv, requests, scratch, dirs):
    if missing(argv):
        return skipped(name, "server", missing(argv))
    cwd = dirs[appdir]
    plan = os.path.join(scratch, "plans", appdir + ".json")
    port = free_port()
    cmd = [a.replace("{port}", str(port)) for a in argv]
    made, why, took = make_plan(cmd, cwd, plan, ("--ready", "http://127.0.0.1:%d/health" % port))
    row = {"name": name, "kind": "server", "plan": made, "why": why, "plan_s": took, "runs": []}
    if not made:
        return row
    # Five runs, each sending the six requests (the first, never the
    # planning request, is also the one timed).
    for i in range(5):
        reqs = requests[i:] + requests[:i]
        res = {}
        for which in (("without", "with") if i % 2 else ("with", "without")):
            port = free_port()
            cmd = [a.replace("{port}", str(port)) for a in argv]
            res[which] = serve(cmd, cwd, plan_env(plan) if which == "with" else dict(os.environ), reqs, port)
        (a0, w0, c0), (a1, w1, c1) = res["without"], res["with"]
        if a0 is None or a1 is None:
            v = "differs: %s did not answer" % ("with" if a1 is None else "without")
        else:
            v = "same" if a0 == a1 else "differs: " + ", ".join(
                "%s %s" % (r[0], r[1]) for r, x, y in zip(reqs, a0, a1) if x != y)
        row["runs"].append((v, w0 or 0, w1 or 0, c0 or 0, c1 or 0))
    return row


def corpus_fn(name, appdir, bodies, scratch, dirs):
    func = os.path.join(dirs[appdir], "func.py")
    plan = os.path.join(scratch, "plans", appdir + ".json")
    req0 = os.path.join(scratch, appdir + ".req.json")
    with open(req0, "w") as f:
        json.dump(bodies[0], f)
    made, why, took = make_plan(None, scratch, plan, ("--python", PY, "--fn", func, "handler", "--request", req0))
    row = {"name": name, "kind": "fn", "plan": made, "why": why, "plan_s": took, "runs": []}
    if not made:
        return row
    fdk = os.path.join(ROOT, "python", "coldstart-fdk")
    for i in range(1, 6):
        body = json.dumps(bodies[i]).encode()
        res = {}
        for which in (("without", "with") if i % 2 else ("with", "without")):
            argv = [PY, fdk] + (["--plan", plan] if which == "with" else []) + [func, "handler"]
            res[which] = fnagent.run(argv, dict(os.environ), [body], timeout=TIMEOUT)
        a, b = res["without"], res["with"]
        if a["error"] or b["error"]:
            v = "differs: %s" % (b["error"] or a["error"])
        else:
            v = "same" if a["responses"] == b["responses"] else "differs: response"
        row["runs"].append((v, (a["first_ms"] or 0) / 1000, (b["first_ms"] or 0) / 1000,
                            (a["first_cpu_ms"] or 0) / 1000, (b["first_cpu_ms"] or 0) / 1000))
    return row


def median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2] if xs else 0


def main(argv):
    only, keep = None, None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--only" and args:
            only = set(args.pop(0).split(","))
        elif a == "--keep" and args:
            keep = args.pop(0)
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
    fnagent.interrupt_on_term()
    # coldstart's own Python side with its bytecode, as make install leaves
    # it: where PYTHONDONTWRITEBYTECODE is set, every run with the plan would
    # compile the applier from source (about 10 ms of CPU) and charge it to
    # the plan.
    subprocess.run([PY, "-m", "compileall", "-q", os.path.join(ROOT, "python", "coldstart")],
                   stdout=subprocess.DEVNULL, check=False)
    scratch = keep or tempfile.mkdtemp(prefix="coldstart-corpus-")
    os.makedirs(os.path.join(scratch, "plans"), exist_ok=True)
    dirs = apps.write(os.path.join(scratch, "apps"))
    rows = []
    try:
        jobs = ([(n, lambda c=c: corpus_cli(*c, scratch)) for c in CLIS for n in [c[0]]] +
                [(s[0], lambda s=s: corpus_server(*s, scratch, dirs)) for s in SERVERS] +
                [(f[0], lambda f=f: corpus_fn(*f, scratch, dirs)) for f in FUNCTIONS])
        for name, job in jobs:
            if only and name.split()[0] not in only and name not in only:
                continue
            print("... %s" % name, file=sys.stderr, flush=True)
            try:
                rows.append(job())
            except Exception as e:  # a crash of the harness's own is a row too
                rows.append({"name": name, "kind": "?", "plan": False, "why": "harness: %r" % e, "plan_s": 0,
                             "runs": [], "error": True})
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print("plan corpus: %s, python %s; wall and CPU: medians over the runs (servers and functions: exec -> first "
          "answer; commands: the whole run)" % (os.path.basename(COLDSTART), PY))
    print("%-22s %-6s %-9s %-32s %9s %9s %7s %7s" % ("program", "kind", "plan", "identical runs", "wall w/o",
                                                     "wall w/", "cpu w/o", "cpu w/"))
    bad = 0
    for r in rows:
        runs = r["runs"]
        same = sum(1 for v, *_ in runs if v == "same")
        refused = [v for v, *_ in runs if v.startswith("refused")]
        differs = [v for v, *_ in runs if v.startswith("differs")]
        bad += len(differs) + (1 if r.get("error") else 0)
        state = "made" if r["plan"] else "skipped" if r.get("skipped") else "refused"
        if r["plan"]:
            cell = "%d/%d" % (same, len(runs)) + (" (%d declined)" % len(refused) if refused else "") + \
                   (" DIFF: %s" % differs[0][9:] if differs else "")
            print("%-22s %-6s %-9s %-32s %8.0fms %8.0fms %6.0fms %6.0fms" % (
                r["name"], r["kind"], state, cell[:32], median([x[1] for x in runs]) * 1000,
                median([x[2] for x in runs]) * 1000, median([x[3] for x in runs]) * 1000,
                median([x[4] for x in runs]) * 1000))
            for v in refused[:1] + differs[:2]:
                print("    %s" % v)
        else:
            print("%-22s %-6s %-9s %s" % (r["name"], r["kind"], state, r["why"][:120]))
    total = sum(len(r["runs"]) for r in rows)
    ident = sum(1 for r in rows for v, *_ in r["runs"] if v == "same")
    print("%d programs: %d plans made, %d refused up front; %d of %d runs identical, %d declined by the applier, "
          "%d differ" % (len(rows), sum(1 for r in rows if r["plan"]),
                         sum(1 for r in rows if not r["plan"] and not r.get("skipped")),
                         ident, total, sum(1 for r in rows for v, *_ in r["runs"] if v.startswith("refused")), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
