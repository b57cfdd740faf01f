"""Every reader of a profile (report, export in each format, diff, check,
inspect --profile) against hostile files: gzip bombs, bytes that are not
UTF-8, and figures crafted to overflow.  Each test runs the real binary (the
sanitiser build under `make check`, where an overflow aborts)."""
import json
import os
import subprocess
import xml.etree.ElementTree as ET
import zlib

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON

FORMATS = ["svg", "folded", "speedscope", "chrome", "html"]
SANITISED = b"__asan_init" in open(COLDSTART, "rb").read() if os.path.exists(COLDSTART) else False


def readers(path, other=None):
    """(name, argv) of every command that reads a profile."""
    out = [("report", ["report", path]),
           ("report --tree", ["report", "--tree", "--all-processes", path]),
           ("diff", ["diff", other or path, path]),
           ("check", ["check", "--budget", "total=1ms", "--budget", "startup=1ms", path]),
           ("inspect --profile", ["inspect", "--profile", path])]
    for f in FORMATS:
        out.append(("export " + f, ["export", "--format", f, "-o", "-", path]))
    return out


TIME = "/usr/bin/time"


def run(argv, env=None, limit_mb=3072):
    """Runs coldstart; returns (exit code, stdout, stderr, the child's peak RSS
    in MiB from wait4).  The child may not grow past limit_mb, so that a
    regression fails the test and not the machine: RLIMIT_AS, or in the
    sanitiser build (which maps terabytes of shadow) ASan's own RSS limit."""
    import resource
    import tempfile
    full = dict(os.environ)
    full.pop("NO_COLOR", None)
    full.update(env or {})
    if SANITISED:
        full["ASAN_OPTIONS"] = full.get("ASAN_OPTIONS", "") + ":hard_rss_limit_mb=%d" % limit_mb
    # The peak comes from GNU time, which starts coldstart from its own small
    # process: a process forked from this one (pytest, which grows over the
    # suite) keeps the parent's peak RSS across exec in its ru_maxrss, so
    # wait4 here would report pytest's size, not coldstart's.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile() as peak:
        pid = os.fork()
        if pid == 0:
            try:
                if not SANITISED:
                    resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                os.execve(TIME, [TIME, "-f", "%M %x", "-o", peak.name, COLDSTART] + argv, full)
            finally:
                os._exit(127)
        _, status, _ = os.wait4(pid, 0)
        out.seek(0)
        err.seek(0)
        words = open(peak.name).read().split()
        # "Command terminated by signal N" comes first when a signal ended it.
        rc = os.waitstatus_to_exitcode(status)
        if "signal" in words:
            rc = -int(words[words.index("signal") + 1])
        return rc, out.read(), err.read(), int(words[-2]) / 1024


def no_sanitiser_report(err):
    assert b"runtime error" not in err and b"AddressSanitizer" not in err, err.decode("utf-8", "replace")


def gzip_member(data):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    """The issue's bomb: 47 MB of gzip that inflates to about 47 GB of zero
    bytes (gzip members one after the other: zlib reads them as one stream),
    and one whose text starts as a profile and goes on as 16 GiB of spaces."""
    d = tmp_path_factory.mktemp("bombs")
    zeros = gzip_member(bytes(64 << 20))
    z = d / "zeros.json.gz"
    with open(z, "wb") as f:
        while f.tell() < 47_000_000:
            f.write(zeros)
    s = d / "spaces.json.gz"
    with open(s, "wb") as f:
        f.write(gzip_member(b'{"format":"coldstart-profile","version":2,"runs":[],"x":1'))
        spaces = gzip_member(b" " * (64 << 20))
        for _ in range(256):
            f.write(spaces)
        f.write(gzip_member(b"}"))
    return {"zeros": str(z), "spaces": str(s), "zeros_size": os.path.getsize(z)}


@pytest.mark.parametrize("name", [r[0] for r in readers("x")])
def test_gzip_bomb_of_zeros_is_refused_at_once(bombs, name):
    argv = dict(readers(bombs["zeros"]))[name]
    rc, _, err, rss = run(argv)
    assert bombs["zeros_size"] >= 47_000_000
    no_sanitiser_report(err)
    assert rc == 1, (rc, err)
    assert b"cannot read '%s': invalid JSON: byte 0x00 where a value was expected at line 1 column 1" \
        % bombs["zeros"].encode() in err, err
    # Before: the whole text was inflated into memory (4 GiB after 3 s, then the limit killed it).
    assert rss < (400 if SANITISED else 100), rss


@pytest.mark.parametrize("name", [r[0] for r in readers("x")])
def test_gzip_bomb_stops_at_the_documented_limit(bombs, name):
    argv = dict(readers(bombs["spaces"]))[name]
    rc, _, err, rss = run(argv)
    no_sanitiser_report(err)
    assert rc == 1, (rc, err)
    assert b"more than 1.00 GiB of text (after decompression), the limit (COLDSTART_MAX_PROFILE_SIZE " \
           b"raises it)" in err, err
    assert rss < (400 if SANITISED else 100), rss


def test_size_limit_can_be_lowered_and_raised(bombs):
    rc, _, err, _ = run(["report", bombs["spaces"]], env={"COLDSTART_MAX_PROFILE_SIZE": "64m"})
    assert rc == 1 and b"more than 64.0 MiB of text" in err, err
    rc, _, err, _ = run(["report", bombs["spaces"]], env={"COLDSTART_MAX_PROFILE_SIZE": "lots"})
    assert rc == 1 and b"COLDSTART_MAX_PROFILE_SIZE='lots' is not a size such as 4g" in err, err


def test_size_limit_is_in_the_manual():
    r = subprocess.run([COLDSTART, "help", "--man"], capture_output=True, text=True, check=True)
    assert ".B COLDSTART_MAX_PROFILE_SIZE\nthe most text a profile read back may hold" in r.stdout, r.stdout[-2000:]


LATIN1_SCRIPT = b"""\
import sys
sys.path.insert(0, sys.argv[2])
import m\xe9t\xe9o
sys.stderr.buffer.write(b"log line \\xe9t\\xe9\\n")
print(m\xe9t\xe9o.__name__.encode("utf-8", "surrogateescape"))
"""


@pytest.fixture(scope="module")
def latin1_profile(tmp_path_factory):
    """A real script at a Latin-1 path, given a Latin-1 argument, importing a
    module from a Latin-1 directory, printing a Latin-1 log line."""
    base = str(tmp_path_factory.mktemp("latin1")).encode()
    d = base + b"/caf\xe9"
    mods = base + b"/modul\xe9s"
    os.mkdir(d)
    os.mkdir(mods)
    with open(d + b"/app.py", "wb") as f:
        f.write(LATIN1_SCRIPT.replace(b"m\xe9t\xe9o", b"meteo"))
    with open(mods + b"/meteo.py", "wb") as f:
        f.write(b"X = 1\n")
    out = base + b"/p.json"
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    r = subprocess.run([COLDSTART.encode(), b"profile", b"--runs", b"2", b"--no-report", b"-o", out, b"--",
                        DEBIAN_PYTHON.encode(), d + b"/app.py", b"arg\xe9", mods],
                       capture_output=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert b"log line \xe9t\xe9" in r.stderr  # the target's own stderr passes through untouched
    gz = base + b"/p.json.gz"
    r = subprocess.run([COLDSTART.encode(), b"profile", b"--no-report", b"-o", gz, b"--",
                        DEBIAN_PYTHON.encode(), d + b"/app.py", b"arg\xe9", mods],
                       capture_output=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return out.decode("utf-8", "surrogateescape"), gz.decode("utf-8", "surrogateescape")


def test_non_utf8_profile_is_valid_json_that_keeps_the_fact(latin1_profile):
    path, _ = latin1_profile
    with open(path, "rb") as f:
        raw = f.read()
    doc = json.loads(raw.decode("utf-8"))  # strict: the file is UTF-8
    assert doc["target"][1].endswith("/caf\\xe9/app.py"), doc["target"]
    assert doc["target"][2] == "arg\\xe9"
    assert doc["escaped_bytes"] > 0
    files = [t[8] for p in doc["runs"][0]["processes"] for t in p.get("timing", []) if t[8]]
    assert any("/modul\\xe9s/meteo.py" in f for f in files), files


@pytest.mark.parametrize("name", [r[0] for r in readers("x")])
def test_non_utf8_profile_reads_back_everywhere(latin1_profile, name):
    for path in latin1_profile:
        argv = dict(readers(path))[name]
        rc, out, err, _ = run(argv)
        no_sanitiser_report(err)
        expect = 1 if name == "check" else 0  # 1 ms budgets fail: the verdict, not a read error
        assert rc == expect, (path, rc, err)
        assert b"cannot read" not in err, err
        if name == "report":
            assert b"arg\\xe9" in out and b"are shown as \\xHH" in out, out
        if name.startswith("export "):
            fmt = name.split()[1]
            if fmt in ("speedscope", "chrome"):
                json.loads(out.decode("utf-8"))
            elif fmt == "svg":
                ET.fromstring(out)
            else:
                out.decode("utf-8")


def test_profiles_written_before_the_fix_are_readable(tmp_path):
    """Old writers put raw bytes into the JSON; every reader takes them now."""
    p = tmp_path / "old.json"
    p.write_bytes(b'{"format":"coldstart-profile","version":2,"target":["/tmp/caf\xe9/app.py"],'
                  b'"runs":[{"status":"exited","processes":[{"argv":"python3 caf\xe9/app.py",'
                  b'"nodes":[["caf\xe9",0,-1,5,5,0,"app"]]}]}]}')
    for name, argv in readers(str(p)):
        rc, out, err, _ = run(argv)
        no_sanitiser_report(err)
        assert rc == 0, (name, err)  # 5 us pass the 1 ms budgets
        assert b"cannot read" not in err, err


def crafted(nodes_per_proc, cum, runs=3, procs=1):
    nodes = [["m%d" % i, 0, -1, cum, cum, 0, "app"] for i in range(nodes_per_proc)]
    return {"format": "coldstart-profile", "version": 2, "target": ["x"],
            "runs": [{"status": "exited", "wall_us": 1000, "maxrss_kb": 1 << 40,
                      "processes": [{"pid": i + 1, "nodes": nodes} for i in range(procs)]}
                     for _ in range(runs)]}


def test_total_that_wrapped_fails_closed(tmp_path):
    """Four roots of 2^62 us summed to 2^64 = 0 and passed a 1 ms budget."""
    p = tmp_path / "wrap.json"
    p.write_text(json.dumps(crafted(4, 1 << 62)))
    rc, out, err, _ = run(["check", "--budget", "total=1ms", str(p)])
    no_sanitiser_report(err)
    assert rc == 1, (rc, out, err)
    assert b"node 0: 'self_us' 4611686018427387904 is out of range (-1000000000000000 to " \
           b"1000000000000000)" in err, err
    # Within the documented range the sum saturates instead of wrapping.
    p.write_text(json.dumps(crafted(10000, 10 ** 15)))
    rc, out, err, _ = run(["check", "--budget", "total=1ms", "--budget", "startup=1ms",
                           "--budget", "m1=2000000000s", str(p)])
    no_sanitiser_report(err)
    assert rc == 1, (rc, out, err)
    assert b"budget FAIL total: 9223372036854.78 s > 1.0 ms" in out, out
    assert b"budget ok   m1: 1000000000.00 s <= 2000000000.00 s" in out, out


def test_crafted_figures_pass_every_reader(tmp_path):
    """The largest figures a profile may hold, in every reader (the sanitiser build aborted)."""
    p = tmp_path / "big.json"
    doc = crafted(10000, 10 ** 15, procs=2)
    doc["runs"][0]["wall_us"] = 10 ** 15
    doc["runs"][1]["wall_us"] = -1
    for r in doc["runs"]:
        for pr in r["processes"]:
            pr["timing"] = [[-10 ** 18, 10 ** 18, 10 ** 18, 10 ** 18, 10 ** 18, 10 ** 18, 1 << 40, -1, None]
                            for _ in pr["nodes"]]
    p.write_text(json.dumps(doc))
    neg = tmp_path / "neg.json"
    neg.write_text(json.dumps(crafted(10000, -10 ** 15)))
    for path, other in ((p, neg), (neg, p)):
        for name, argv in readers(str(path), str(other)):
            rc, out, err, _ = run(argv)
            no_sanitiser_report(err)
            assert rc in (0, 1) and b"cannot read" not in err, (name, rc, err)


def test_negative_time_fails_a_budget(tmp_path):
    p = tmp_path / "neg.json"
    p.write_text(json.dumps(crafted(3, -5000)))
    rc, out, err, _ = run(["check", "--budget", "m1=1ms", str(p)])
    assert rc == 1, (rc, out, err)
    assert b"budget FAIL m1: -5.0 ms (negative: not a time that can pass)" in out, out
    # The total leaves negative roots out: it read "0 us" and passed.
    rc, out, err, _ = run(["check", "--budget", "total=1ms", str(p)])
    assert rc == 1, (rc, out, err)
    assert b"budget FAIL total: -5.0 ms (negative: not a time that can pass)" in out, out


def test_diff_of_processes_without_nodes(tmp_path):
    """diff passed NULL to qsort when no process had a node (the sanitiser build aborted)."""
    p = tmp_path / "empty.json"
    p.write_text(json.dumps(crafted(0, 0)))
    rc, out, err, _ = run(["diff", str(p), str(p)])
    no_sanitiser_report(err)
    assert rc == 0, (rc, err)
    assert b"0 regressions flagged" in out, out
