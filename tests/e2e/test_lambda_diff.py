"""The Lambda differential test: coldstart.lambda against awslambdaric 4.0.1
itself, both under AWS's Runtime Interface Emulator (RIE).

Every case (a handler in tests/e2e/lambda_diff/, its events, its
environment) runs once under `python3 -m awslambdaric HANDLER` (the peer's
client, built by build-awslambdaric.sh against Debian's libcurl and cached
under build/) and once under `python3 -m coldstart.lambda HANDLER`, each as
the command of its own RIE (arm64, under qemu-user) in its own network and
pid namespaces (`unshare -n -p -f`: the RIE's port is fixed, and the
namespace's end takes everything it started along).  The answers the RIE
gives to the invocations (status and body) are compared, and so are the
lines the runtime logged (the RIE's own lines, START/END/REPORT and Go
panics dropped; timestamps and request ids replaced by placeholders).

A difference is allowed only when a rule in ALLOWED explains it (the rules
docs/lambda.md lists with the reasons); anything else fails.  The counts
are printed: identical, allowed (by rule), other.  The whole run takes
about a minute here (the RIE under qemu starts in ~0.3 s; three run at
once), so every case runs under the real RIE; none needs a stand-in
server.
"""
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, ROOT, clean_env

HERE = os.path.dirname(os.path.abspath(__file__))
FUNCS = os.path.join(HERE, "lambda_diff")
RUNNER = os.path.join(FUNCS, "rie_run.py")
PY = DEBIAN_PYTHON
BUILD = os.path.join(ROOT, "build")


def _find_peers():
    # shared/ lies beside the checkout (CI) or beside its parent (a
    # worktree).
    for cand in (os.environ.get("COLDSTART_PEERS"),
                 os.path.join(os.path.dirname(ROOT), "shared", "peers"),
                 os.path.join(os.path.dirname(os.path.dirname(ROOT)),
                              "shared", "peers")):
        if cand and os.path.isdir(os.path.join(cand, "awslambdaric-4.0.1")):
            return os.path.realpath(cand)
    return None


PEERS = _find_peers()


def _rie():
    """The RIE binary, unpacked once under build/; or None."""
    tgz = os.path.join(PEERS, "awslambdaric-4.0.1", "tests", "integration",
                       "resources", "aws-lambda-rie-arm64.tar.gz")
    dest = os.path.join(BUILD, "lambda-rie", "aws-lambda-rie-arm64")
    if os.path.isfile(dest):
        return dest
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(dest))
    try:
        subprocess.run(["tar", "xzf", tgz, "-C", tmp], check=True)
        os.chmod(os.path.join(tmp, "aws-lambda-rie-arm64"), 0o755)
        os.rename(os.path.join(tmp, "aws-lambda-rie-arm64"), dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _awslambdaric():
    """The reference client built for PY, cached under build/ (the build
    takes a few seconds, its cmake part most); or a reason it cannot be."""
    tag = subprocess.run([PY, "-c", "import sysconfig; print(sysconfig."
                          "get_config_var('EXT_SUFFIX'))"],
                         capture_output=True, text=True).stdout.strip()
    dest = os.path.join(BUILD, "awslambdaric" + tag.replace(".so", ""))
    if glob.glob(os.path.join(dest, "runtime_client*.so")):
        return dest
    for tool in ("cmake", "g++", "curl-config"):
        if shutil.which(tool) is None:
            return "building awslambdaric needs %s (tests/install-deps.sh)" \
                % tool
    os.makedirs(BUILD, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=BUILD)
    p = subprocess.run(["sh", os.path.join(PEERS, "build-awslambdaric.sh"),
                        os.path.join(tmp, "out"), PY],
                       capture_output=True, text=True)
    if p.returncode:
        shutil.rmtree(tmp, ignore_errors=True)
        return "build-awslambdaric.sh failed: %s" % p.stderr[-400:]
    try:
        os.rename(os.path.join(tmp, "out"), dest)
    except OSError:
        pass  # built meanwhile by another run
    shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _setup():
    if PEERS is None:
        return "the peers (shared/peers/awslambdaric-4.0.1) are not beside " \
               "the checkout", None, None
    if shutil.which("qemu-aarch64") is None:
        return "the RIE is an arm64 binary: needs qemu-aarch64 " \
               "(Debian qemu-user, tests/install-deps.sh)", None, None
    p = subprocess.run([PY, "-c", "import simplejson"], capture_output=True)
    if p.returncode:
        return "awslambdaric needs Debian's python3-simplejson", None, None
    p = subprocess.run(["unshare", "-n", "-p", "-f", "true"],
                       capture_output=True, text=True)
    if p.returncode:
        return ("each RIE needs its own network namespace (its port is "
                "fixed): unshare -n -p -f failed: %s" % p.stderr.strip()), \
            None, None
    ric = _awslambdaric()
    if not os.path.isdir(ric):
        return ric, None, None
    return None, _rie(), ric


# name, handler, events, extra environment, coldstart's warm mode
EV = ['{"key": "value"}']
TWO = ['{"n": 1}', '{"n": 2}']
BIG_EVENT = [json.dumps({"data": "z" * (5 * 1024 * 1024)})]
CASES = [
    (n, "funcs." + n, EV, {}, None) for n in (
        "ret_dict", "ret_list", "ret_str", "ret_int", "ret_float",
        "ret_none", "ret_bool", "ret_decimal", "ret_decimal_special",
        "ret_bytes", "ret_nested_bytes", "ret_nested_bad_bytes",
        "ret_namedtuple", "ret_tuple", "ret_set", "ret_object",
        "ret_generator", "ret_nan_inf", "ret_bigint", "ret_keys",
        "ret_bad_key", "ret_circular", "ret_subclasses", "ret_asdict",
        "ret_large", "raise_value_error", "raise_nested",
        "raise_custom", "raise_chained", "raise_no_message",
        "raise_keyerror", "raise_unicode", "raise_assert", "raise_exit",
        "ctx_fields", "ctx_remaining", "ctx_repr", "ctx_log", "trace_env",
        "log_records", "log_extra")
] + [
    ("ret_echo", "funcs.ret_echo",
     ['{"u": "caf\\u00e9 \u2603", "n": [1, 2.5, null]}', '"a string"',
      "[]", "12"], {}, None),
    ("event_not_json", "funcs.ret_echo", ["not json", "[1] x", '"\\x"'],
     {}, None),
    ("event_large", "funcs.ret_large_event", BIG_EVENT, {}, None),
    ("ret_too_large", "funcs.ret_too_large", TWO, {}, None),
    ("log_level_debug", "funcs.log_records", EV,
     {"AWS_LAMBDA_LOG_LEVEL": "DEBUG"}, None),
    ("log_level_error", "funcs.log_records", EV,
     {"AWS_LAMBDA_LOG_LEVEL": "ERROR"}, None),
    ("log_json", "funcs.log_records", EV,
     {"AWS_LAMBDA_LOG_FORMAT": "JSON"}, None),
    ("log_json_error", "funcs.raise_nested", EV,
     {"AWS_LAMBDA_LOG_FORMAT": "JSON"}, None),
    ("log_json_extra", "funcs.log_extra", EV,
     {"AWS_LAMBDA_LOG_FORMAT": "json"}, None),
    ("exec_env_312", "funcs.ret_str", EV,
     {"AWS_EXECUTION_ENV": "AWS_Lambda_python3.12"}, None),
    ("two_calls", "funcs.ret_echo", TWO, {}, None),
    ("init_malformed", "nodot", TWO, {}, None),
    ("init_no_module", "nomod.handler", TWO, {}, None),
    ("init_syntax_error", "bad_syntax.handler", TWO, {}, None),
    ("init_handler_missing", "funcs.missing", TWO, {}, None),
    ("init_builtin", "sys.handler", TWO, {}, None),
    ("init_no_submodule", "pkg.nosuch.handler", TWO, {}, None),
    ("init_raises", "raises_at_import.handler", TWO, {}, None),
    ("init_raises_eager", "raises_at_import.handler", TWO, {}, "eager"),
    ("init_missing_dependency", "needs_missing.handler", TWO, {}, None),
    ("init_dependency_syntax", "imports_bad.handler", TWO, {}, None),
    ("init_dependency_syntax_eager", "imports_bad.handler", TWO, {},
     "eager"),
    ("import_noisy", "noisy.handler", TWO, {}, None),
    ("import_noisy_eager", "noisy.handler", TWO, {}, "eager"),
    ("package_handler", "pkg.mod.handler", EV, {}, None),
    ("slash_handler", "pkg/mod.handler", EV, {}, None),
    ("dynamic_global", "dynamic.made", EV, {}, None),
    ("dynamic_missing", "dynamic.nothere", TWO, {}, None),
    ("star_import", "star.handler", EV, {}, None),
    ("eager_ok", "funcs.ret_dict", EV, {}, "eager"),
    # coldstart.lambda under a start-up plan made from the case's first
    # event (PLANNED): logging is then set up at its first use.
    ("plan_log_records", "funcs.log_records", EV, {}, None),
    ("plan_log_json", "funcs.log_records", EV,
     {"AWS_LAMBDA_LOG_FORMAT": "JSON"}, None),
    ("plan_log_level_debug", "funcs.log_records", EV,
     {"AWS_LAMBDA_LOG_LEVEL": "DEBUG"}, None),
    ("plan_log_extra", "funcs.log_extra", EV, {}, None),
    ("plan_ctx_log", "funcs.ctx_log", EV, {}, None),
    ("plan_raise_nested", "funcs.raise_nested", EV, {}, None),
    ("plan_late_log", "late_log.second", TWO, {}, None),
    ("plan_late_log_json", "late_log.second", TWO,
     {"AWS_LAMBDA_LOG_FORMAT": "JSON"}, None),
    ("plan_late_log_eager", "late_log.second", TWO, {}, "eager"),
    ("plan_late_import", "late_import.handler", TWO, {}, None),
    ("plan_import_noisy", "noisy.handler", TWO, {}, None),
    ("plan_event_not_json", "funcs.ret_echo", ['{"a": 1}', "not json"],
     {}, None),
    # The plan is made without RAISE_AT_IMPORT (_make_plan), so the
    # module loaded then; its body raising is reported with logging set
    # up at that moment.
    ("plan_init_raises", "raises_when.handler", TWO,
     {"RAISE_AT_IMPORT": "1"}, None),
    ("plan_init_raises_json", "raises_when.handler", TWO,
     {"RAISE_AT_IMPORT": "1", "AWS_LAMBDA_LOG_FORMAT": "JSON"}, None),
]
PLANNED = {c[0] for c in CASES if c[0].startswith("plan_")}

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                  r"[0-9a-f]{12}")
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
RIE_LINE = re.compile(
    r"^(time=|START RequestId|END RequestId|REPORT RequestId|\t|goroutine |"
    r"panic\(|net/http\.|github\.com/|go\.amzn\.com/|created by |"
    r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d http: panic)")


def _runtime_lines(log):
    """(lines the runtime logged, its own crash output): the RIE's lines
    dropped, timestamps and ids replaced."""
    lines, crash = [], []
    in_tb = False
    for line in log.split("\n"):
        if RIE_LINE.match(line) or not line:
            in_tb = False if not line.startswith("\t") else in_tb
            continue
        line = UUID.sub("<id>", STAMP.sub("<time>", line))
        if line == "Traceback (most recent call last):":
            in_tb = True
            crash.append(line)
            continue
        if in_tb:
            crash.append(line)
            if not line.startswith(" "):
                in_tb = False
            continue
        if line.startswith("coldstart-lambda: "):
            crash.append(line)
            continue
        lines.append(line)
    return lines, crash


EXITED = re.compile(r"Runtime exited with error: exit status (\d+)")


def _normal(out):
    calls = [[s, UUID.sub("<id>", b)] for s, b in out["calls"]]
    lines, crash = _runtime_lines(out["log"])
    # The exit statuses of runtimes that ended while the emulator ran them
    # (its own log lines; each exit is logged up to three times).
    exits = sorted(set(EXITED.findall(out["log"])))
    return {"calls": calls, "lines": lines, "crash": crash, "exits": exits}


def _dropped_init_error(a, c):
    """awslambdaric posts init errors to /runtime/init/error; this RIE
    panics on that post during the first invocation (the call gets an
    empty 502, the runtime a dropped connection: awslambdaric prints a
    Python traceback, coldstart.lambda one line).  Only the crash output
    differs."""
    return (a["calls"] == c["calls"] and a["lines"] == c["lines"]
            and a["calls"][0] == [502, ""] and a["crash"] != c["crash"])


def _deferred_init_error(a, c):
    """The module is found and compiles, so coldstart.lambda imports it on
    the first event: what its body raises is that event's error document
    (the one awslambdaric posts to init/error, which this RIE answers only
    on the next call; awslambdaric's traceback when the RIE drops that post
    is its own), and the next event tries the import again as a new init
    would.  From the second call on the answers are the same, and so is
    what both log."""
    return (a["calls"][0] == [502, ""] and c["calls"][0][0] == 200
            and c["calls"][0][1] == a["calls"][1][1]
            and a["calls"][1:] == c["calls"][1:]
            and a["lines"] == c["lines"])


def _refused_response(a, c):
    """A response over Lambda's 6 MB limit is refused (413) after the RIE
    has answered the caller with Function.ResponseSizeTooLarge:
    awslambdaric then dies (its client logs the 413, Python a traceback)
    and the next call pays a new init; coldstart.lambda logs one [ERROR]
    line and serves the next call.  The first caller gets the same answer;
    the next one, under awslambdaric, an empty body from the runtime the
    RIE started again, under coldstart.lambda the same answer again."""
    return (a["calls"][0] == c["calls"][0]
            and c["calls"] == [c["calls"][0]] * len(c["calls"])
            and any("413" in line for line in a["lines"])
            and a["crash"] and not c["crash"]
            and any("coldstart-lambda.ResponseRefused" in line
                    for line in c["lines"]))


def _runtime_exit_race(a, c):
    """Both runtimes ended during the invocation with the same status (the
    handler called sys.exit(), which neither catches), and the emulator
    answered each such call with an empty 200 or an empty 504: which of
    the two is a race in this emulator build between the runtime's exit and
    the invocation's reply (awslambdaric itself got 200, 200, 504 in three
    runs of the same handler).  Everything else is the same."""
    return (a["exits"] and a["exits"] == c["exits"]
            and a["lines"] == c["lines"] and a["crash"] == c["crash"]
            and len(a["calls"]) == len(c["calls"])
            and all(x[1] == y[1] == "" and x[0] in (200, 504) and
                    y[0] in (200, 504)
                    for x, y in zip(a["calls"], c["calls"])))


ALLOWED = {
    "runtime-exit-race": _runtime_exit_race,
    "dropped-init-error": _dropped_init_error,
    "deferred-init-error": _deferred_init_error,
    "refused-response": _refused_response,
}


def _run(rie, ric, workdir, case, runtime):
    name, handler, events, env, warm = case
    base = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
            "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
    base.update(env)
    if runtime == "awslambdaric":
        base["PYTHONPATH"] = ric
        cmd = [PY, "-m", "awslambdaric", handler]
    else:
        base["PYTHONPATH"] = os.path.join(ROOT, "python")
        if warm:
            base["COLDSTART_LAMBDA_WARM"] = warm
        if name in PLANNED:
            base["COLDSTART_PLAN"] = os.path.join(workdir, name + ".plan")
        cmd = [PY, "-m", "coldstart.lambda", handler]
    stem = os.path.join(workdir, "%s.%s" % (name, runtime))
    spec = {"rie": ["qemu-aarch64", rie], "cmd": cmd,
            "cwd": os.path.join(workdir, "funcs"), "env": base,
            "events": events}
    with open(stem + ".spec", "w") as f:
        json.dump(spec, f)
    p = subprocess.run(["unshare", "-n", "-p", "-f", "--kill-child", PY,
                        RUNNER, stem + ".spec", stem + ".out"],
                       capture_output=True, text=True, timeout=600,
                       env={"PATH": base["PATH"]})
    if p.returncode:
        raise AssertionError("%s under %s: the RIE run failed: %s" % (
            name, runtime, p.stderr[-600:]))
    with open(stem + ".out") as f:
        return _normal(json.load(f))


@pytest.fixture(scope="module")
def results():
    skip, rie, ric = _setup()
    if skip:
        print("SKIP: " + skip)
        pytest.skip(skip)
    workdir = tempfile.mkdtemp(prefix="coldstart-lambda-diff-")
    try:
        shutil.copytree(FUNCS, os.path.join(workdir, "funcs"),
                        ignore=shutil.ignore_patterns("__pycache__",
                                                      "rie_run.py"))
        for case in CASES:
            if case[0] in PLANNED:
                _make_plan(workdir, case)
        jobs = {}
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            for case in CASES:
                for runtime in ("awslambdaric", "coldstart"):
                    jobs[case[0], runtime] = pool.submit(
                        _run, rie, ric, workdir, case, runtime)
        out = {}
        for (name, runtime), job in jobs.items():
            out.setdefault(name, {})[runtime] = job.result()
        yield out
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _make_plan(workdir, case):
    """coldstart plan --lambda for a PLANNED case, from its first event,
    with its environment."""
    name, handler, events, env, _ = case
    event = os.path.join(workdir, name + ".event")
    with open(event, "w") as f:
        f.write(events[0])
    penv = clean_env()
    penv.update(env, COLDSTART_PYTHON=PY, PYTHONDONTWRITEBYTECODE="1")
    penv.pop("RAISE_AT_IMPORT", None)
    p = subprocess.run([COLDSTART, "plan", "--lambda", handler, "--request",
                        event, "-o", os.path.join(workdir, name + ".plan")],
                       cwd=os.path.join(workdir, "funcs"), env=penv,
                       capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise AssertionError("coldstart plan for %s failed: %s" % (
            name, p.stderr[-600:]))


def _seen(r):
    """What a caller and the runtime's own output show; the exit statuses
    the emulator logs only serve the runtime-exit-race rule."""
    return {k: v for k, v in r.items() if k != "exits"}


def _verdict(r):
    a, c = r["awslambdaric"], r["coldstart"]
    if _seen(a) == _seen(c):
        return "identical"
    for rule, check in ALLOWED.items():
        if check(a, c):
            return rule
    return "other"


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_same_as_awslambdaric(results, case):
    r = results[case]
    verdict = _verdict(r)
    a, c = r["awslambdaric"], r["coldstart"]
    diff = {k: {"awslambdaric": a[k], "coldstart": c[k]} for k in a
            if a[k] != c[k]}
    assert verdict != "other", json.dumps(diff, indent=1)[:8000]


def test_counts(results):
    counts = {}
    for case in results:
        v = _verdict(results[case])
        counts[v] = counts.get(v, 0) + 1
    handlers = {c[1] for c in CASES}
    print("\nlambda differential: %d cases, %d handlers: %s" % (
        len(results), len(handlers),
        ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    assert len(handlers) >= 40
    assert counts.get("other", 0) == 0
