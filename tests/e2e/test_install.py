"""`make install` / `make uninstall` with DESTDIR: the installed binary finds
its bootstrap, the installed coldstart-fdk and coldstart-lambda find their packages, and uninstall
leaves nothing behind."""
import os
import subprocess

from conftest import DEBIAN_PYTHON, ROOT


def make(*args):
    return subprocess.run(["make", "-C", ROOT, "--no-print-directory"] + list(args),
                          capture_output=True, text=True, timeout=600)


def test_install_and_uninstall(tmp_path):
    dest = tmp_path / "dest"
    r = make("install", "DESTDIR=%s" % dest, "PREFIX=/usr/local", "PYTHON=%s" % DEBIAN_PYTHON)
    assert r.returncode == 0, r.stdout + r.stderr
    binary = dest / "usr/local/bin/coldstart"
    fdk = dest / "usr/local/bin/coldstart-fdk"
    pydir = next((dest / "usr/local/lib").glob("python3*/dist-packages"))
    assert os.access(binary, os.X_OK) and os.access(fdk, os.X_OK)
    assert (pydir / "coldstart" / "fdk" / "server.py").exists()
    assert (pydir / "fdk" / "__init__.py").exists()

    env = dict(os.environ)
    env.pop("COLDSTART_DATADIR", None)
    r = subprocess.run([str(binary), "profile", "--python", DEBIAN_PYTHON, "--json", "-c", "import json"],
                       capture_output=True, text=True, timeout=120, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    # The installed copy found its own bootstrap: the trace is there.
    assert "tracer unavailable" not in r.stderr
    assert '"timing"' in r.stdout

    env["PYTHONPATH"] = str(pydir)
    r = subprocess.run([str(fdk), "--help"], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "FN_LISTENER" in r.stdout
    lam = dest / "usr/local/bin/coldstart-lambda"
    r = subprocess.run([str(lam), "--help"], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "AWS_LAMBDA_RUNTIME_API" in r.stdout, r.stderr

    r = make("uninstall", "DESTDIR=%s" % dest, "PREFIX=/usr/local", "PYTHON=%s" % DEBIAN_PYTHON)
    assert r.returncode == 0, r.stderr
    left = [p for p in dest.rglob("*") if p.is_file()]
    assert left == []
