"""The Lambda benchmark's floor (bench/lambda/floor.py, with
bench/lambda_bench.py's floor_keep() and its own Runtime API): strict mode
defers a module whose body registers what the handler reads, the bisection
finds that module and keeps it eager, and the floor then answers exactly
as awslambdaric and coldstart.lambda do under AWS's emulator (the
benchmark's `same` column compares these bodies).

The emulator part needs what tests/e2e/test_lambda_diff.py needs (the
peers beside the checkout, qemu-aarch64, unshare, the reference client
built) and skips with its reason otherwise.
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, ROOT, clean_env

BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)
import lambda_bench  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "lambda_diff", "rie_run.py")
PY = DEBIAN_PYTHON

# plugin's body registers an item in registry; the handler reads the
# registry and never plugin itself, so strict mode defers plugin and the
# answer loses the item.  csv and email.mime.text are imported and unused.
FILES = {
    "registry.py": "ITEMS = []\n\n\ndef register(x):\n    ITEMS.append(x)\n",
    "plugin.py": "import registry\n\nregistry.register('caf\\u00e9')\n",
    "fn_reg.py": """
import csv
import email.mime.text

import plugin  # noqa: F401 (registers)
import registry


def handler(event, context):
    return {"items": registry.ITEMS, "event": event, "pi": 3.25,
            "none": None, "ok": True, "text": "snow \\u2603",
            "n": [1, 2.5, -3]}
""",
}
EVENT = b'{"name": "bench", "values": [1, 2, 3, 4], "u": "\\u00e9"}'


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    d = tmp_path_factory.mktemp("lambda-floor")
    for name, text in FILES.items():
        (d / name).write_text(text)
    (d / "event.json").write_bytes(EVENT)
    env = clean_env()
    env.update(COLDSTART_PYTHON=PY, PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([COLDSTART, "plan", "--lambda", "fn_reg.handler",
                        "--request", "event.json", "-o", "plan_reg.json"],
                       cwd=str(d), env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return str(d)


def test_floor_keep_finds_the_registering_module(app):
    want = lambda_bench.local_answer(
        *lambda_bench.command(app, "reg", "cs-lambda"), app, EVENT)
    assert want[0] == "response"
    assert json.loads(want[1])["items"] == ["caf\u00e9"]
    # Strict mode alone defers plugin: the same process, another answer.
    bare = lambda_bench.local_answer(
        *lambda_bench.command(app, "reg", "floor", keep=[]), app, EVENT)
    assert bare[0] == "response"
    assert json.loads(bare[1])["items"] == []
    keep = lambda_bench.floor_keep(app, "reg", EVENT)
    assert keep == ["plugin"]
    kept = lambda_bench.local_answer(
        *lambda_bench.command(app, "reg", "floor", keep=keep), app, EVENT)
    assert kept == want


def _rie_setup():
    import test_lambda_diff
    return test_lambda_diff._setup()


def _under_rie(rie, app, argv, env, stem):
    spec = {"rie": ["qemu-aarch64", rie], "cmd": argv, "cwd": app,
            "env": env, "events": [EVENT.decode()]}
    with open(stem + ".spec", "w") as f:
        json.dump(spec, f)
    p = subprocess.run(["unshare", "-n", "-p", "-f", "--kill-child", PY,
                        RUNNER, stem + ".spec", stem + ".out"],
                       capture_output=True, text=True, timeout=300,
                       env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
    assert p.returncode == 0, p.stderr[-600:]
    with open(stem + ".out") as f:
        return json.load(f)["calls"]


def test_floor_answers_as_both_runtimes_under_the_emulator(app, tmp_path):
    skip, rie, ric = _rie_setup()
    if skip:
        print("SKIP: " + skip)
        pytest.skip(skip)
    calls = {}
    for v in ("awslambdaric", "cs-lambda", "floor"):
        argv, env = lambda_bench.command(app, "reg", v, ric=ric,
                                         keep=["plugin"])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        calls[v] = _under_rie(rie, app, argv, env, str(tmp_path / v))
    assert calls["awslambdaric"][0][0] == 200, calls
    assert json.loads(calls["awslambdaric"][0][1])["items"] == ["caf\u00e9"]
    # Byte for byte: simplejson's separators, ASCII escapes.
    assert '"text": "snow \\u2603"' in calls["awslambdaric"][0][1]
    assert calls["cs-lambda"] == calls["awslambdaric"]
    assert calls["floor"] == calls["awslambdaric"]
