"""heavy-import advice a server can follow (docs/findings.md): a framework that
serves the requests is never advised to be imported inside a function; real
gunicorn with two workers behind a Flask app, real uvicorn with a FastAPI app."""
import os
import shutil
import socket
import subprocess

import pytest

from conftest import DEBIAN_PYTHON, SAMPLES


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def has(mod):
    return subprocess.run([DEBIAN_PYTHON, "-c", "import " + mod], capture_output=True).returncode == 0


def heavy(coldstart, out):
    r = coldstart("report", out, "--json")
    import json
    return [f for f in json.loads(r.stdout)["findings"] if f["id"] == "heavy-import"]


def plan_fix(coldstart, out):
    """The startup-plan finding's fix: a server is planned with its probe around its command, not with --fn."""
    r = coldstart("report", out, "--json")
    import json
    fixes = [f["fix"] for f in json.loads(r.stdout)["findings"] if f["id"] == "startup-plan"]
    assert len(fixes) == 1, fixes
    assert "coldstart plan --ready http://127.0.0.1:PORT/PATH" in fixes[0] and "--fn" not in fixes[0], fixes[0]
    return fixes[0]


def test_gunicorn_flask(coldstart, tmp_path):
    if not shutil.which("gunicorn") or not has("flask"):
        pytest.skip("gunicorn or python3-flask is not installed (tests/install-deps.sh)")
    port = free_port()
    out = tmp_path / "g.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--ready", "http://127.0.0.1:%d/health" % port,
                  "--timeout", "60", "-q", "-o", out, "--no-report", "--",
                  "gunicorn", "-w", "2", "-b", "127.0.0.1:%d" % port, "app:app",
                  cwd=os.path.join(SAMPLES, "flask-app"))
    assert r.returncode == 0, r.stderr
    found = heavy(coldstart, out)
    # The master's gunicorn.app.wsgiapp, or flask where the workers' imports count as start-up.
    servers = [f for f in found if f["module"].split(".")[0] in ("gunicorn", "flask", "werkzeug")]
    assert servers, [f["module"] for f in found]
    for f in servers:
        top = f["module"].split(".")[0]
        assert "inside the function that uses it" not in f["fix"], f
        assert "serves the requests" in f["fix"] and "coldstart why %s" % top in f["fix"]
        assert "gunicorn --preload" in f["fix"]
    assert "--verify -- gunicorn -w 2 -b 127.0.0.1:%d app:app`" % port in plan_fix(coldstart, out)


def test_uvicorn_fastapi(coldstart, tmp_path):
    if not has("uvicorn") or not has("fastapi"):
        pytest.skip("python3-uvicorn or python3-fastapi is not installed (tests/install-deps.sh)")
    (tmp_path / "fa.py").write_text("from fastapi import FastAPI\napp = FastAPI()\n\n"
                                    "@app.get('/health')\ndef health():\n    return {'ok': True}\n")
    port = free_port()
    out = tmp_path / "u.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--ready", "http://127.0.0.1:%d/health" % port,
                  "--timeout", "60", "-q", "-o", out, "--no-report", "--",
                  DEBIAN_PYTHON, "-m", "uvicorn", "--port", str(port), "fa:app", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    found = heavy(coldstart, out)
    servers = [f for f in found if f["module"].split(".")[0] in ("uvicorn", "fastapi", "starlette")]
    assert servers, [f["module"] for f in found]
    for f in servers:
        assert "inside the function that uses it" not in f["fix"], f
        assert "serves the requests" in f["fix"]
        assert "--preload" not in f["fix"]  # not run by gunicorn
    assert "--verify -- %s -m uvicorn --port %d fa:app`" % (DEBIAN_PYTHON, port) in plan_fix(coldstart, out)
    # A library that is not a server keeps the ordinary advice.
    others = [f for f in found if f not in servers and f["module"] != "fa"]
    for f in others:
        assert "inside the function that uses it" in f["fix"], f


def test_django_manage_check_is_not_a_server(coldstart, tmp_path):
    """`manage.py check` imports Django, does its work and exits: it serves no
    request, so Django's modules get the ordinary advice, not the server's."""
    if not has("django"):
        pytest.skip("python3-django is not installed (tests/install-deps.sh)")
    admin = shutil.which("django-admin") or "/usr/bin/django-admin"
    proj = tmp_path / "proj"
    proj.mkdir()
    subprocess.run([admin, "startproject", "site1", str(proj)], check=True, capture_output=True)
    out = tmp_path / "c.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "-q", "-o", out, "--no-report", "manage.py", "check",
                  cwd=proj)
    assert r.returncode == 0, r.stderr
    found = [f for f in heavy(coldstart, out) if f["module"].startswith("django")]
    assert found, "no heavy-import of django at all"
    for f in found:
        assert "serves the requests" not in f["fix"], f
        assert "inside the function that uses it" in f["fix"], f
