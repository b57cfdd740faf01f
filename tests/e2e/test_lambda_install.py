"""Installing python/ with a plain `pip install`, offline, gives a
coldstart-lambda script that is the script itself, not pip's generated
entry-point wrapper: that wrapper imports `re` (enum, functools,
collections, operator, copyreg) before main(), CPU Lambda bills as init.
Debian's pip and setuptools in a throw-away venv (made once for this
file); the source is copied first so no build files land in the tree."""
import os
import subprocess

import pytest

from conftest import installed_venv
from lambda_api import RuntimeAPI

# What the installed coldstart-lambda must not load before its first
# GET next: pip's wrapper brings the first five with `re`; importlib's
# package (import_module) brings warnings and types.  A clean venv's
# interpreter loads none of them at start-up.
NOT_BEFORE_NEXT = ("re", "enum", "functools", "collections", "operator",
                   "copyreg", "contextlib", "runpy", "importlib.util",
                   "warnings", "types")

HANDLER = """
def handler(event, context):
    return {"got": event}
"""


@pytest.fixture(scope="module")
def venv():
    yield from installed_venv("lambdapip")


def test_installed_lambda_script_loads_only_the_runtime_before_next(venv):
    d, venv = venv
    vpy = os.path.join(venv, "bin", "python")
    script = os.path.join(venv, "bin", "coldstart-lambda")
    with open(script) as f:
        first = f.readline()
    assert first == "#!%s\n" % vpy, first
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    p = subprocess.run([vpy, "-c", "import sys; print('\\n'.join("
                        "sys.modules))"], env=env, cwd=d,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    at_start = set(p.stdout.split())
    assert not at_start & set(NOT_BEFORE_NEXT), sorted(at_start)
    p = subprocess.run([script, "--version"], env=env, cwd=d,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("coldstart-lambda "), \
        p.stderr
    task = os.path.join(d, "task")
    os.mkdir(task)
    with open(os.path.join(task, "app.py"), "w") as f:
        f.write(HANDLER)
    dump = os.path.join(d, "modules.txt")
    with RuntimeAPI() as api:
        api.add_event('{"n": 1}', "r1")
        proc = subprocess.Popen(
            [script, "app.handler"], cwd=task,
            env=dict(env, AWS_LAMBDA_RUNTIME_API=api.address,
                     COLDSTART_LAMBDA_DEBUG_MODULES=dump),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            posted = api.posted("r1")
        finally:
            if proc.poll() is None:
                proc.terminate()
            out, err = proc.communicate(timeout=30)
    # The handler was found in the working directory, as `python3 -m`
    # finds it, and answered.
    assert posted.json() == {"got": {"n": 1}}, err
    with open(dump) as f:
        at_next = set(f.read().split())
    assert sorted(m for m in NOT_BEFORE_NEXT if m in at_next) == [], err
    own = {m for m in at_next if m.split(".")[0] == "coldstart"}
    assert own == {"coldstart", "coldstart.lambda_cli", "coldstart.lambda",
                   "coldstart.lambda.__main__", "coldstart.lambda.api",
                   "coldstart.lambda.bootstrap", "coldstart.lambda.errors",
                   "coldstart.lambda.logs"}, sorted(own)
    assert at_next - at_start - own <= {"_socket"}, \
        sorted(at_next - at_start - own)
