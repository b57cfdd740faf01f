"""Shared fixtures for coldstart's end-to-end tests.

Every test runs the real built binary against real interpreters.  The
interpreters are Debian's /usr/bin/python3 plus every pyenv version found
under /root/.pyenv/versions (3.7 and newer; 2.7 and 3.6 are used only where a
test wants an interpreter without -X importtime).
"""
import fcntl
import glob
import json
import os
import pty
import re
import select
import struct
import shutil
import subprocess
import tempfile
import termios
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLDSTART = os.environ.get("COLDSTART") or os.path.join(ROOT, "coldstart")
SAMPLES = os.path.join(ROOT, "samples")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
DEBIAN_PYTHON = "/usr/bin/python3"


def _version(py):
    try:
        out = subprocess.run([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    m = re.match(r"(\d+)\.(\d+)", out.stdout.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def _find_pythons():
    found = []
    if os.access(DEBIAN_PYTHON, os.X_OK):
        found.append(DEBIAN_PYTHON)
    for d in sorted(glob.glob("/root/.pyenv/versions/*/bin/python3")) + \
            sorted(glob.glob("/root/.pyenv/versions/*/bin/python")):
        real = os.path.realpath(d)
        if any(os.path.realpath(f) == real for f in found):
            continue
        found.append(d)
    return found


ALL_PYTHONS = [(p, _version(p)) for p in _find_pythons()]
# Interpreters that support -X importtime (3.7+).
PYTHONS = [p for p, v in ALL_PYTHONS if v and v >= (3, 7)]
OLD_PYTHONS = [p for p, v in ALL_PYTHONS if v and v < (3, 7)]


# The pyenv versions `coldstart plan` (3.8+) is tested on beside Debian's
# (interpreter_params), and every interpreter found that it can plan.
PLAN_VERSIONS = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]
PLAN_PYTHONS = [p for p, v in ALL_PYTHONS if v and v >= (3, 8)]


def python_version(py):
    for p, v in ALL_PYTHONS:
        if p == py:
            return v
    return _version(py)


def interpreter_params(wanted):
    """pytest params: Debian's interpreter, then one pyenv interpreter per
    "X.Y" in wanted, or a skip that says which one is missing."""
    out = [pytest.param(DEBIAN_PYTHON, id="debian")]
    for want in wanted:
        found = [p for p, v in ALL_PYTHONS
                 if v and "%d.%d" % v == want and p != DEBIAN_PYTHON]
        if found:
            out.append(pytest.param(found[0], id="py" + want))
        else:
            out.append(pytest.param(None, id="py" + want, marks=pytest.mark.skip(
                reason="no pyenv Python %s under /root/.pyenv/versions" % want)))
    return out


def pytest_report_header(config):
    return "coldstart: %s; interpreters: %s" % (COLDSTART, ", ".join(
        "%s (%s)" % (p, ".".join(map(str, v)) if v else "?") for p, v in ALL_PYTHONS))


def clean_env(drop=("PYTHONPATH",)):
    """os.environ without coldstart's own variables, which a test sets
    itself, and without the names in drop.  COLDSTART_DATADIR stays: `make
    check` runs a binary built outside the checkout, which finds its python
    directory only through it."""
    return {k: v for k, v in os.environ.items()
            if not (k.startswith("COLDSTART_") and k != "COLDSTART_DATADIR")
            and k not in drop}


PLAN_BOOT = os.path.join(ROOT, "python", "coldstart", "_boot", "plan")


def plan_env(**extra):
    """clean_env(()) for a Python process that applies or records a plan
    through the bootstrap (PYTHONPATH=PLAN_BOOT, no bytecode written), with
    the variables in extra."""
    e = clean_env(())
    e["PYTHONPATH"] = PLAN_BOOT
    e["PYTHONDONTWRITEBYTECODE"] = "1"
    e.update(extra)
    return e


def plan_with_extension(workdir, py, script, out):
    """`coldstart plan -o OUT -- PY SCRIPT` in workdir; returns the plan's
    JSON.  Skips, saying why, when coldstart plan built no _plancode
    extension for py (no compiler or headers for it)."""
    p = subprocess.run([COLDSTART, "plan", "-o", out, "--", py, script],
                       cwd=workdir, capture_output=True, text=True,
                       timeout=300, env=clean_env(()))
    assert p.returncode == 0, p.stdout + p.stderr
    with open(out) as f:
        data = json.load(f)
    if not (data.get("code") or {}).get("ext"):
        pytest.skip("coldstart plan built no _plancode extension for %s: %s"
                    % (py, p.stderr.strip()))
    return data


def archive_entries(code):
    """The plan's code.at as lists (None for a row without archived code),
    whether written in its compact form (docs/plan.md) or as arrays."""
    at = code["at"]
    if not isinstance(at, str):
        return at
    rows = []
    for e in at.split(" ") if at else ():
        rows.append(None if e == "-" else [int(x, 16) for x in e.split(",")])
    return rows


def run_coldstart(*args, input=None, timeout=300, env=None, cwd=None):
    """Runs the coldstart binary; returns CompletedProcess with text output."""
    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    if env:
        full_env.update(env)
    return subprocess.run([COLDSTART] + [str(a) for a in args], input=input,
                          capture_output=True, text=True, timeout=timeout,
                          env=full_env, cwd=cwd)


@pytest.fixture(params=PYTHONS or [None], ids=lambda p: p or "no-python")
def python(request):
    if request.param is None:
        pytest.skip("no interpreter with -X importtime found")
    return request.param


@pytest.fixture
def coldstart():
    if not os.access(COLDSTART, os.X_OK):
        pytest.fail("coldstart binary not built: %s" % COLDSTART)
    return run_coldstart


def on_terminal(args, columns, env_extra):
    """Runs coldstart on a pseudo-terminal of the given width; returns what it printed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    env.pop("NO_COLOR", None)
    env.update(env_extra)
    p = subprocess.Popen([COLDSTART] + args, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            break
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.fixture
def workdir(request):
    """A fresh directory under /tmp named after the test module, removed afterwards."""
    d = tempfile.mkdtemp(prefix=request.module.__name__.replace("test_", "") + "-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def write(d, name, text):
    """Writes text, dedented, to d/name (making its directories); returns the path."""
    path = os.path.join(d, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


def installed_venv(prefix):
    """A venv with coldstart's python/ installed by a plain offline `pip
    install` (its own pip and setuptools, no wheel; --no-index makes any
    download fail at once): yields (its directory, the venv); skips, saying
    why, where Debian's interpreter lacks pip, setuptools or venv."""
    py = DEBIAN_PYTHON
    probe = subprocess.run([py, "-c", "import setuptools, venv, pip"],
                           capture_output=True, text=True)
    if probe.returncode:
        pytest.skip("%s lacks pip, setuptools or venv (Debian python3-pip, "
                    "python3-setuptools, python3-venv): %s"
                    % (py, probe.stderr.strip()))
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    try:
        src = os.path.join(d, "src")
        shutil.copytree(os.path.join(ROOT, "python"), src,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so",
                                                      "build", "*.egg-info"))
        venv = os.path.join(d, "venv")
        subprocess.run([py, "-m", "venv", venv], check=True, timeout=120)
        vpy = os.path.join(venv, "bin", "python")
        p = subprocess.run([vpy, "-m", "pip", "install", "-q", "--no-index",
                            src], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        yield d, venv
    finally:
        shutil.rmtree(d, ignore_errors=True)
