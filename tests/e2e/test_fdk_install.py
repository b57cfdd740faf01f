"""Installing python/ with a plain `pip install`, offline, gives the coldstart
and fdk packages and a working coldstart-fdk script.  Debian's pip,
setuptools and wheel are used in a throw-away venv (made once for this
file); the source is copied first so no build files land in the tree."""
import os
import signal
import subprocess
import time

import pytest

from conftest import SAMPLES, installed_venv

# Modules the installed coldstart-fdk must not load before its socket is
# ready: pip's generated entry-point wrapper imports `re`, which brings
# enum, functools, collections, operator and copyreg; `python -m` brings
# runpy, importlib.util and contextlib.  A clean venv's interpreter loads
# none of them at start-up, so each one is CPU spent before the link.
NOT_BEFORE_READY = ("re", "enum", "functools", "collections", "operator",
                    "copyreg", "contextlib", "runpy", "importlib.util",
                    "importlib.machinery", "warnings", "types")


@pytest.fixture(scope="module")
def venv():
    yield from installed_venv("fdkpip")


def test_pip_install_offline_provides_packages_and_script(venv):
    d, venv = venv
    vpy = os.path.join(venv, "bin", "python")
    script = os.path.join(venv, "bin", "coldstart-fdk")
    p = subprocess.run([script, "--version"], capture_output=True,
                       text=True, timeout=60, cwd=d)
    assert p.returncode == 0 and p.stdout.startswith("coldstart-fdk "), \
        p.stderr
    p = subprocess.run([vpy, "-c", "import coldstart.lazy, fdk.response, "
                        "fdk.context, coldstart.fdk; "
                        "print(fdk.response.Response.__module__, "
                        "coldstart.fdk.__file__)"],
                       capture_output=True, text=True, timeout=60, cwd=d)
    assert p.returncode == 0, p.stderr
    mod, path = p.stdout.split()
    assert mod == "coldstart.fdk.response"
    assert path.startswith(venv)
    p = subprocess.run([script], capture_output=True, text=True,
                       timeout=60, cwd=d, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 2 and "missing FUNC" in p.stderr


def test_installed_script_loads_nothing_more_than_the_server_before_ready(
        venv):
    # The documented ENTRYPOINT is the installed script: until lsnr.sock
    # is linked it may load only the server's own three modules and
    # _socket beyond what the venv's interpreter loads by itself.
    d, venv = venv
    vpy = os.path.join(venv, "bin", "python")
    script = os.path.join(venv, "bin", "coldstart-fdk")
    with open(script) as f:
        first = f.readline()
    assert first == "#!%s\n" % vpy, first
    env = {"PATH": "/usr/bin:/bin"}
    p = subprocess.run([vpy, "-c", "import sys; print('\\n'.join(sys.modules))"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    at_start = set(p.stdout.split())
    assert not at_start & set(NOT_BEFORE_READY), sorted(at_start)
    run = os.path.join(d, "run")
    os.mkdir(run)
    sock = os.path.join(run, "lsnr.sock")
    dump = os.path.join(d, "modules.txt")
    env = dict(env, FN_LISTENER="unix:" + sock,
               COLDSTART_FDK_DEBUG_MODULES=dump)
    proc = subprocess.Popen(
        [script, os.path.join(SAMPLES, "fn-hello", "func.py"), "handler"],
        env=env, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not os.path.islink(sock):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "not ready after 60 s"
            time.sleep(0.01)
        with open(dump) as f:
            at_ready = set(f.read().split())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert sorted(m for m in NOT_BEFORE_READY if m in at_ready) == []
    own = {m for m in at_ready if m.split(".")[0] in ("coldstart", "fdk")}
    assert own == {"coldstart", "coldstart.fdk", "coldstart.fdk.server"}, \
        sorted(own)
    assert at_ready - at_start - own <= {"_socket"}, \
        sorted(at_ready - at_start - own)
    assert not os.path.lexists(sock)
