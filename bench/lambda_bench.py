"""Cold starts of six real Lambda handlers (bench/lambda/fn_*.py: numpy,
requests, jinja2, boto3, pandas, pydantic from Debian) under AWS's Runtime
Interface Emulator, the runtime in a cgroup v1 of 10% of a CPU and 128 MiB
(the RIE outside it), four ways:

  awslambdaric    awslambdaric 4.0.1 (the peer's client, built by
                  build-awslambdaric.sh), `python3 -m awslambdaric`
  cs-lambda       `python3 -m coldstart.lambda`
  cs-lambda+plan  the same with the plan `coldstart plan --lambda
                  --verify` makes (COLDSTART_PLAN)
  floor           bench/lambda/floor.py: the least a runtime process can
                  do to answer the same: the plan in strict mode (only the
                  modules the event used run their bodies, with what those
                  read at import and native extensions), the handler
                  called once, the Runtime API spoken over _socket; where
                  strict mode changes the answer, the plan's eager modules
                  bisection shows it needs stay eager, and so do those
                  whose bodies run before the answer anyway (floor_keep)
  before          with BEFORE=DIR only: coldstart.lambda --plan of another
                  built checkout (DIR), with the plan its own planner
                  makes: a change measured alone, side by side

For each cold start: wall time from the first invocation's POST to its
answer (the RIE starts the runtime at that invocation, so this is init
plus the first call, as Lambda bills them), the runtime's CPU time until
then (cpuacct), its peak memory.  Medians of ROUNDS rounds (default 3),
the variants' order rotated each round; the answers must be identical.
The summary gives the geometric means of the CPU ratios, among them
awslambdaric/floor (can the runtime and the plan reach the goal at all)
and plan/floor (how far the planned runtime is above the floor).

Environment: ROUNDS, FUNCS (e.g. "numpy boto3"), COLDSTART_PEERS, BEFORE;
LATER=S reads each runtime's CPU again S seconds after the answer and
prints what it used meanwhile (work after its answer that the CPU column
does not count).
"""
import glob
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
BUILD = os.path.join(ROOT, "build")
CG = "/sys/fs/cgroup"
VARIANTS = ("awslambdaric", "cs-lambda", "cs-lambda+plan", "floor")
# BEFORE=DIR: a built checkout whose planned runtime runs beside (before).
BEFORE = os.environ.get("BEFORE")
MEASURED = VARIANTS + (("before",) if BEFORE else ())


def peers():
    for cand in (os.environ.get("COLDSTART_PEERS"),
                 os.path.join(os.path.dirname(ROOT), "shared", "peers"),
                 os.path.join(os.path.dirname(os.path.dirname(ROOT)),
                              "shared", "peers")):
        if cand and os.path.isdir(os.path.join(cand, "awslambdaric-4.0.1")):
            return cand
    return None


def skip(why):
    print("lambda_bench: skipped: " + why)
    sys.exit(0)


def setup():
    p = peers()
    if p is None:
        skip("the peers (shared/peers/awslambdaric-4.0.1) are not beside "
             "the checkout")
    if shutil.which("qemu-aarch64") is None:
        skip("needs qemu-aarch64 (Debian qemu-user) for the arm64 RIE")
    for c in ("cpu", "cpuacct", "memory"):
        if not os.path.isfile(os.path.join(CG, c, "tasks")):
            skip("needs cgroup v1 %s mounted at %s/%s (and root)" % (c, CG, c))
    rie = os.path.join(BUILD, "lambda-rie", "aws-lambda-rie-arm64")
    if not os.path.isfile(rie):
        os.makedirs(os.path.dirname(rie), exist_ok=True)
        subprocess.run(["tar", "xzf", os.path.join(
            p, "awslambdaric-4.0.1", "tests", "integration", "resources",
            "aws-lambda-rie-arm64.tar.gz"), "-C", os.path.dirname(rie)],
            check=True)
    suffix = subprocess.run([PY, "-c", "import sysconfig; print(sysconfig."
                             "get_config_var('EXT_SUFFIX'))"],
                            capture_output=True, text=True).stdout.strip()
    ric = os.path.join(BUILD, "awslambdaric" + suffix.replace(".so", ""))
    if not glob.glob(os.path.join(ric, "runtime_client*.so")):
        r = subprocess.run(["sh", os.path.join(p, "build-awslambdaric.sh"),
                            ric, PY], capture_output=True, text=True)
        if r.returncode:
            skip("build-awslambdaric.sh failed: " + r.stderr[-300:])
    # Both runtimes from bytecode, as an image built with compileall has.
    if BEFORE and not os.path.exists(os.path.join(BEFORE, "coldstart")):
        raise SystemExit("lambda_bench: BEFORE=%s is not a built checkout "
                         "(no coldstart there)" % BEFORE)
    for d in (ric, os.path.join(ROOT, "python", "coldstart")) + (
            (os.path.join(BEFORE, "python", "coldstart"),) if BEFORE else ()):
        subprocess.run([PY, "-m", "compileall", "-q", d], check=True)
    return rie, ric


# The benchmark's functions (bench/lambda/fn_*.py), in the tables' order.
FUNCTIONS = ["numpy", "requests", "jinja2", "boto3", "pandas", "pydantic"]


def copy_handlers(work):
    """The handlers and the event into work (not the bench's own scripts,
    nor a __pycache__ that importing them left); returns the event's
    bytes."""
    for f in glob.glob(os.path.join(HERE, "lambda", "fn_*.py")) + [
            os.path.join(HERE, "lambda", "event.json")]:
        shutil.copy(f, work)
    with open(os.path.join(work, "event.json"), "rb") as f:
        return f.read()


def make_plan(work, fn, out, root=ROOT, verify=True):
    """`coldstart plan --lambda` of root's checkout for fn_FN.handler and
    work/event.json into work/out; exits saying why when it fails."""
    r = subprocess.run([os.path.join(root, "coldstart"), "plan", "--lambda",
                        "fn_%s.handler" % fn, "--request", "event.json"] +
                       (["--verify"] if verify else []) + ["-o", out],
                       cwd=work, env=dict(os.environ, COLDSTART_PYTHON=PY),
                       capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise SystemExit("coldstart plan (%s) for %s failed: %s"
                         % (root, fn, r.stderr[-500:]))


def cgroups(name, create):
    for c in ("cpu", "cpuacct", "memory"):
        d = os.path.join(CG, c, name)
        if create:
            os.mkdir(d)
        else:
            try:
                os.rmdir(d)
            except OSError:
                pass
    if create:
        with open(os.path.join(CG, "cpu", name, "cpu.cfs_period_us"), "w") as f:
            f.write("100000")
        with open(os.path.join(CG, "cpu", name, "cpu.cfs_quota_us"), "w") as f:
            f.write("10000")
        with open(os.path.join(CG, "memory", name,
                               "memory.limit_in_bytes"), "w") as f:
            f.write(str(128 * 1024 * 1024))


# fn -> modules the floor keeps eager although strict mode would defer
# them (floor_keep()), and those of them kept because they ran anyway.
FLOOR_KEEP = {}
FLOOR_FORCED = {}


def floor_program(work):
    """bench/lambda/floor.py compiled into work/floor.pyc, which the
    interpreter runs as it is: a script would be compiled at every start
    (about 3 ms of CPU, the compiler's first use), where the runtimes'
    modules come compiled."""
    src = os.path.join(HERE, "lambda", "floor.py")
    out = os.path.join(work, "floor.pyc")
    if not os.path.isfile(out) or \
            os.stat(out).st_mtime_ns < os.stat(src).st_mtime_ns:
        import py_compile
        py_compile.compile(src, cfile=out, doraise=True)
    return out


def command(work, fn, variant, ric=None, keep=None):
    """(argv, environment) of a runtime for fn_FN.handler in work."""
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8"}
    handler = "fn_%s.handler" % fn
    plan = os.path.join(work, "plan_%s.json" % fn)
    if variant == "awslambdaric":
        env["PYTHONPATH"] = ric
        return [PY, "-m", "awslambdaric", handler], env
    if variant == "before":
        env["PYTHONPATH"] = os.path.join(BEFORE, "python")
        env["COLDSTART_PLAN"] = os.path.join(work, "plan_%s.before.json" % fn)
        return [PY, "-m", "coldstart.lambda", handler], env
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    if variant == "floor":
        env["FLOOR_KEEP"] = ",".join(FLOOR_KEEP.get(fn, ()) if keep is None
                                     else keep)
        return [PY, floor_program(work), plan, handler], env
    if variant.endswith("+plan"):
        env["COLDSTART_PLAN"] = plan
    return [PY, "-m", "coldstart.lambda", handler], env


def local_answer(argv, env, cwd, event, timeout=120, term=False):
    """What a runtime posts for its first event, served by a Runtime API of
    the bench's own on a loopback port (no RIE, no cgroup, no CPU limit):
    ("response" or "error" or "init/error", body bytes), or None when the
    runtime ended or took longer than timeout seconds first.  Later GETs
    next wait; the runtime is ended once it asks for the next event after
    its answer (what it does after the first response, such as writing
    COLDSTART_PLAN_FORCED_OUT, is done then), or 10 s after the answer;
    killed, or with term sent SIGTERM (a tool it runs under may then write
    its output)."""
    import http.server
    got = []
    done = threading.Event()
    asked = threading.Event()
    stop = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            if not self.path.endswith("/runtime/invocation/next") or got:
                if done.is_set():
                    asked.set()
                stop.wait()
                self.close_connection = True
                return
            got.append(None)
            self.send_response(200)
            for k, v in (("Lambda-Runtime-Aws-Request-Id", "floor-check"),
                         ("Lambda-Runtime-Deadline-Ms",
                          str(int(time.time() * 1000) + 600000)),
                         ("Lambda-Runtime-Invoked-Function-Arn",
                          "arn:aws:lambda:local:000000000000:function:f"),
                         ("Content-Type", "application/json"),
                         ("Content-Length", str(len(event)))):
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(event)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length",
                                                        "0")))
            kind = "init/error" if self.path.endswith("/init/error") else \
                self.path.rstrip("/").rsplit("/", 1)[-1]
            self.send_response(202)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
            got.append((kind, body))
            done.set()

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            pass  # the runtime ended with its connection open

    server = Server(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    # No bytecode written by these checks: the measured runs start from
    # what the bench compiled.
    env = dict(env, AWS_LAMBDA_RUNTIME_API="127.0.0.1:%d" %
               server.server_address[1], PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + timeout
        while not done.wait(0.05):
            if p.poll() is not None or time.monotonic() > end:
                break
        end = time.monotonic() + 10
        while done.is_set() and not asked.wait(0.05):
            if p.poll() is not None or time.monotonic() > end:
                break
    finally:
        if p.poll() is None:
            if term:
                p.terminate()
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    p.kill()
            else:
                p.kill()
        p.wait()
        stop.set()
        server.shutdown()
        server.server_close()
    return got[-1] if done.is_set() else None


def floor_keep(work, fn, event):
    """The floor is strict mode: every pure-Python module the event did not
    use is deferred, the plan's eager list ignored.  Where that changes the
    answer (a body that registers what the call looks up), the eager
    modules it needs are found by bisection, one at a time, and kept eager:
    the least the process must run to answer the same.  Then the eager
    modules whose bodies strict mode runs before the answer all the same
    are kept eager too (FLOOR_FORCED).  The answers are compared through
    local_answer() (the bench's own Runtime API, without the RIE), with
    coldstart.lambda's without a plan as the reference.  Computed anew
    with each new plan (a few runtime starts)."""
    want = local_answer(*command(work, fn, "cs-lambda"), work, event)
    if want is None or want[0] != "response":
        raise SystemExit("%s: coldstart.lambda gave no response locally: %r"
                         % (fn, want))

    def answers(keep):
        return local_answer(*command(work, fn, "floor", keep=keep), work,
                            event) == want

    with open(os.path.join(work, "plan_%s.json" % fn)) as f:
        plan = json.load(f)
    # What strict mode defers beyond the plan, in import order; the
    # bisection's candidates leave out those kept for native extensions.
    strict = [m for m in plan["modules"] if m["action"] == "eager" and
              not m["used"] and m["kind"] in ("source", "bytecode")]
    cands = [m["name"] for m in strict if not any(
        r["code"] in ("native", "native-parent", "native-init")
        for r in m["reasons"])]
    strict = [m["name"] for m in strict]
    keep = []
    if not answers(keep):
        if not answers(cands):
            raise SystemExit("%s: strict mode changes the answer even with "
                             "the whole eager list kept" % fn)
        pool = list(cands)
        while not answers(keep):
            # The shortest prefix of pool that, kept with keep, answers.
            lo, hi = 0, len(pool)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if answers(keep + pool[:mid]):
                    hi = mid
                else:
                    lo = mid
            keep.append(pool[hi - 1])
            pool = pool[:hi - 1]
    # The eager modules strict mode defers whose bodies run before the
    # answer all the same (read by the call or by a body that runs): the
    # floor keeps them eager too, as the plan does, since a deferred
    # module forced later costs more than its plain import.  Kept eager
    # they may import others at once: again until nothing new is forced.
    forced = []
    out = os.path.join(work, "floor-forced-%s.json" % fn)
    for _ in range(len(strict)):
        argv, env = command(work, fn, "floor", keep=keep + forced)
        env["COLDSTART_PLAN_FORCED_OUT"] = out
        if local_answer(argv, env, work, event) != want:
            raise SystemExit("%s: the floor's answer changed with the "
                             "forced modules kept eager" % fn)
        with open(out) as f:
            new = set(json.load(f))
        for f in (out, out + ".lock"):
            os.unlink(f)
        more = [m for m in strict if m in new and m not in keep + forced]
        if not more:
            break
        forced += more
    FLOOR_FORCED[fn] = forced
    return keep + forced


def one(rie, ric, work, fn, variant):
    cmd, env = command(work, fn, variant, ric)
    name = "coldstart-lbench-%d" % os.getpid()
    cgroups(name, True)
    try:
        later = os.environ.get("LATER")
        p = subprocess.run(["unshare", "-n", "-p", "-f", "--kill-child", PY,
                            os.path.join(HERE, "lambda", "runner.py")] +
                           (["--later", later] if later else []) + [name,
                            os.path.join(work, "event.json"), rie] + cmd,
                           cwd=work, env=env, capture_output=True, text=True,
                           timeout=600)
    finally:
        cgroups(name, False)
    if p.returncode:
        raise SystemExit("%s under %s failed: %s" % (fn, variant,
                                                     p.stderr[-500:]))
    return json.loads(p.stdout)


def main():
    rie, ric = setup()
    rounds = int(os.environ.get("ROUNDS", "3"))
    fns = os.environ.get("FUNCS", " ".join(FUNCTIONS)).split()
    work = tempfile.mkdtemp(prefix="coldstart-lambda-bench-")
    try:
        event = copy_handlers(work)
        for fn in fns:
            make_plan(work, fn, "plan_%s.json" % fn)
            if BEFORE:
                make_plan(work, fn, "plan_%s.before.json" % fn, BEFORE)
            FLOOR_KEEP[fn] = floor_keep(work, fn, event)
        res = {}
        for i in range(rounds):
            for fn in fns:
                k = i % len(MEASURED)
                order = MEASURED[k:] + MEASURED[:k]
                for v in order:
                    res.setdefault((fn, v), []).append(one(rie, ric, work,
                                                           fn, v))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = open("/proc/loadavg").read().split()[:3]
    print("Lambda cold starts under the RIE, runtime in 10%% CPU / 128 MiB "
          "(cgroup v1), medians of %d; load average %s while measuring "
          "(other jobs share the machine)" % (rounds, " ".join(load)))
    print("init + first invoke: wall ms / CPU ms / peak MiB")
    print("%-9s| %-23s| %-23s| %-23s| %-23s| %s" % (
        "function", *VARIANTS,
        "cpu ric/cs ric/plan ric/floor plan/floor  same"))
    # CPU ratios: awslambdaric over each variant, and plan over floor.
    pairs = {"cs": ("awslambdaric", "cs-lambda"),
             "plan": ("awslambdaric", "cs-lambda+plan"),
             "floor": ("awslambdaric", "floor"),
             "plan/floor": ("cs-lambda+plan", "floor")}
    ratios = {k: [] for k in pairs}
    for fn in fns:
        cells, med = [], {}
        for v in VARIANTS:
            runs = res[fn, v]
            m = [statistics.median(r[k] for r in runs)
                 for k in ("wall_ms", "cpu_ms", "peak_mib")]
            med[v] = m
            cells.append("%7.0f %7.0f %6.1f" % tuple(m))
        bodies = {r["body"] for v in MEASURED for r in res[fn, v]}
        statuses = {r["status"] for v in MEASURED for r in res[fn, v]}
        same = len(bodies) == 1 and statuses == {200}
        r = {k: med[a][1] / med[b][1] for k, (a, b) in pairs.items()}
        for k in pairs:
            ratios[k].append(r[k])
        print("%-9s| %s| %s| %s| %s|     %6.2f %8.2f %9.2f %10.2f  %s" % (
            fn, *cells, r["cs"], r["plan"], r["floor"], r["plan/floor"],
            "yes" if same else "NO"))
    g = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in ratios.items()}
    print("geometric mean of CPU ratios: awslambdaric/cs-lambda %.2f, "
          "awslambdaric/cs-lambda+plan %.2f, awslambdaric/floor %.2f, "
          "cs-lambda+plan/floor %.2f" % (g["cs"], g["plan"], g["floor"],
                                         g["plan/floor"]))
    if os.environ.get("LATER"):
        print("CPU ms used in the %s s after the answer (medians): %s" % (
            os.environ["LATER"], "; ".join(
                "%s %s" % (fn, " ".join(
                    "%s %.1f" % (v, statistics.median(
                        r["later_cpu_ms"] for r in res[fn, v]))
                    for v in MEASURED)) for fn in fns)))
    if BEFORE:
        # The change alone: CPU and wall of the planned runtime before it
        # (BEFORE) and now, the same rounds.
        print("before (%s) / now, coldstart.lambda with its plan: "
              "wall ms, CPU ms, CPU ratio" % BEFORE)
        cpu = []
        for fn in fns:
            b, n = (statistics.median(r["cpu_ms"] for r in res[fn, v])
                    for v in ("before", "cs-lambda+plan"))
            bw, nw = (statistics.median(r["wall_ms"] for r in res[fn, v])
                      for v in ("before", "cs-lambda+plan"))
            cpu.append(b / n)
            print("%-9s| %7.0f %7.0f | %7.1f %7.1f | %5.3f" % (
                fn, bw, nw, b, n, b / n))
        print("geometric mean of before/now by CPU: %.3f" % math.exp(
            sum(map(math.log, cpu)) / len(cpu)))
    kept = []
    for fn in fns:
        forced = FLOOR_FORCED.get(fn, [])
        need = [m for m in FLOOR_KEEP.get(fn, ()) if m not in forced]
        if need or forced:
            kept.append("%s: %s%s" % (fn, " ".join(need) or "-",
                                      " (+%d run anyway)" % len(forced)
                                      if forced else ""))
    print("floor: strict mode; modules kept eager for the same answer "
          "(+ those whose bodies ran before it all the same): %s"
          % ("; ".join(kept) if kept else "none"))


if __name__ == "__main__":
    main()
