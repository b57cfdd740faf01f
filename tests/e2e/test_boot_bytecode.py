"""Every traced process runs coldstart's bootstrap (sitecustomize).  When it
cannot write bytecode (PYTHONDONTWRITEBYTECODE=1, a read-only datadir) it
must still not compile the bootstrap from source: coldstart keeps the
bootstrap's bytecode for each interpreter in its cache (docs/design.md,
"The tracer cache").

The target's compile() calls are seen by an audit hook that a .pth file of
the user site directory (PYTHONUSERBASE) installs: site runs .pth files
before sitecustomize, so the hook sees the bootstrap's import.  Audit hooks
exist from Python 3.8."""
import json
import os
import shutil
import stat
import subprocess

import pytest

from conftest import ALL_PYTHONS, COLDSTART, ROOT

HOOK = ("import sys, os; sys.addaudithook(lambda e, a, _p=os.environ.get('BOOT_COMPILE_LOG'): "
        "e == 'compile' and _p and isinstance(a[1], str) and a[1].endswith('sitecustomize.py') and "
        "open(_p, 'a').write(a[1] + '\\n'))\n")

INTERPRETERS = [p for p, v in ALL_PYTHONS if v and v >= (3, 8)]


def user_site(py, base):
    out = subprocess.run([py, "-c", "import site, sys; print(site.getusersitepackages())"], capture_output=True,
                         text=True, env={"PATH": "/usr/bin:/bin", "PYTHONUSERBASE": base}, check=True)
    return out.stdout.strip()


@pytest.fixture
def datadir(tmp_path):
    """A copy of python/ without any bytecode, read-only like an installed one."""
    data = str(tmp_path / "python")
    shutil.copytree(os.path.join(ROOT, "python"), data, ignore=shutil.ignore_patterns("__pycache__"))
    for top, dirs, files in os.walk(data):
        for name in files + dirs:
            p = os.path.join(top, name)
            os.chmod(p, os.stat(p).st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    os.chmod(data, 0o555)
    yield data
    for top, dirs, files in os.walk(data):
        os.chmod(top, 0o755)


def profile(py, data, tmp_path, cache):
    base = str(tmp_path / "userbase")
    site = user_site(py, base)
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "zz_boot_audit.pth"), "w") as f:
        f.write(HOOK)
    log = tmp_path / "compiled.txt"
    if log.exists():
        log.unlink()
    out = str(tmp_path / "p.json")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLDSTART_DATADIR": data,
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUSERBASE": base, "BOOT_COMPILE_LOG": str(log)}
    if cache:
        env["COLDSTART_CACHE_DIR"] = cache
    r = subprocess.run([COLDSTART, "profile", "--no-report", "-o", out, "--", py, "-c", "import json"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        doc = json.load(f)
    compiled = log.read_text().split() if log.exists() else []
    return doc, compiled


def tool_sitecustomize(doc):
    """The bootstrap's row, which coldstart must count as its own (kind tool)."""
    nodes = doc["runs"][0]["processes"][0]["nodes"]
    return [n for n in nodes if n[0] == "sitecustomize" and n[6] == "tool"]


@pytest.mark.parametrize("py", INTERPRETERS or [pytest.param(None, marks=pytest.mark.skip(
    reason="no Python 3.8+ found (audit hooks are needed)"))])
def test_bootstrap_is_not_compiled_in_the_target(py, datadir, tmp_path):
    cache = str(tmp_path / "cache")
    for attempt in ("first", "cached"):
        doc, compiled = profile(py, datadir, tmp_path, cache)
        # The hook works: the app's own source is compiled (-c), the bootstrap is not.
        assert not [c for c in compiled if "coldstart" in c or c.startswith(cache)], (attempt, compiled)
        assert tool_sitecustomize(doc), (attempt, doc["runs"][0]["processes"][0]["nodes"][:40])
        assert not any("bootstrap is compiled" in w["msg"] for w in doc["warnings"]), doc["warnings"]
    pycs = os.listdir(os.path.join(cache, "_boot", os.listdir(os.path.join(cache, "_boot"))[0], "__pycache__"))
    assert len(pycs) == 1 and pycs[0].startswith("sitecustomize.") and pycs[0].endswith(".pyc"), pycs


def test_hook_sees_the_source_bootstrap_compiled(datadir, tmp_path):
    """The check above can fail: with the cache refused (not private), the
    bootstrap is the source one and the hook sees it compiled, and the
    profile says why."""
    if not INTERPRETERS:
        pytest.skip("no Python 3.8+ found (audit hooks are needed)")
    cache = tmp_path / "open-cache"
    cache.mkdir()
    os.chmod(str(cache), 0o777)
    doc, compiled = profile(INTERPRETERS[0], datadir, tmp_path, str(cache))
    assert [c for c in compiled if c.startswith(datadir)], compiled
    assert tool_sitecustomize(doc)
    assert any("bootstrap is compiled in every process" in w["msg"] for w in doc["warnings"]), doc["warnings"]


PLAN_INTERPRETERS = [p for p, v in ALL_PYTHONS if v and v >= (3, 8)]


@pytest.mark.parametrize("py", PLAN_INTERPRETERS or [pytest.param(None, marks=pytest.mark.skip(
    reason="no Python 3.8+ found (audit hooks and plans need it)"))])
def test_plan_bootstrap_is_not_compiled_in_the_target(py, datadir, tmp_path):
    """`coldstart plan`'s planning run imports the plan bootstrap the same way."""
    base = str(tmp_path / "userbase")
    site = user_site(py, base)
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "zz_boot_audit.pth"), "w") as f:
        f.write(HOOK)
    log = tmp_path / "compiled.txt"
    cache = str(tmp_path / "cache")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLDSTART_DATADIR": datadir,
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUSERBASE": base, "BOOT_COMPILE_LOG": str(log),
           "COLDSTART_CACHE_DIR": cache}
    plan = str(tmp_path / "plan.json")
    r = subprocess.run([COLDSTART, "plan", "-o", plan, "--", py, "-c", "import json"], capture_output=True,
                       text=True, env=env, timeout=300, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    with open(plan) as f:
        assert "json" in f.read()  # the plan was recorded: the bootstrap ran
    compiled = log.read_text().split() if log.exists() else []
    assert not [c for c in compiled if "coldstart" in c or c.startswith(cache)], compiled
    assert "plan bootstrap" not in r.stderr, r.stderr
