"""coldstart why: every importer of a module and what would go away without it.

A small app whose import statements cover each case (the first importer, one
that finds the module loaded, a circular one, a branch not taken, a function,
TYPE_CHECKING, import_module) is profiled by every interpreter found and
answered from its own source; then real applications from Debian (pandas,
Django `manage.py check`, boto3, gunicorn with two workers) as a user would
ask about them.
"""
import json
import os
import shutil
import socket
import subprocess
import textwrap

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, FIXTURES, on_terminal, python_version

WIDTH = 100

APP = {
    "app.py": """\
        import cond_early
        import alpha
        import beta
        import lazy
        import typed
        import dyn
        """,
    "cond_early.py": """\
        import sys
        if sys.version_info < (3, 0):
            import heavy
        """,
    "alpha.py": "import heavy\n",
    "heavy/__init__.py": """\
        from heavy import part
        import only
        import circ
        import shared
        """,
    "heavy/part.py": "x = 1\n",
    "only.py": "y = 1\n",
    "circ.py": "import heavy\n",
    "shared.py": "z = 1\n",
    "beta.py": """\
        import heavy.part
        import shared
        """,
    "lazy.py": """\
        def f():
            import heavy
            return heavy
        """,
    "typed.py": """\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import heavy
        """,
    "dyn.py": """\
        import importlib
        importlib.import_module("heavy")
        name = "hea" + "vy"
        __import__(name)
        """,
}


def write_app(root):
    for rel, text in APP.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def env_for(cache, columns=WIDTH):
    """The answers below are read at the width a pipe gets without COLUMNS."""
    return {"COLDSTART_CACHE_DIR": str(cache), "COLUMNS": str(columns)}


def why(coldstart, *args, cache, cwd=None, ok=True):
    r = coldstart("why", *args, env=env_for(cache), cwd=cwd)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def why_json(coldstart, *args, cache, cwd=None):
    r = why(coldstart, *args, "--json", cache=cache, cwd=cwd)
    return json.loads(r.stdout)


def fits(text):
    long = [l for l in text.splitlines() if len(l) > WIDTH]
    assert not long, "lines over %d columns:\n%s" % (WIDTH, "\n".join(long))


def flat(text):
    """The text with its wrapping undone, to look for phrases."""
    return " ".join(text.split())


def importers(proc):
    return {im["module"]: im for im in proc["importers"]}


def profile_app(coldstart, python, root):
    write_app(root)
    out = root / "app.json"
    r = coldstart("profile", "--python", python, "-o", out, "app.py", cwd=root)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture
def app_profile(coldstart, python, tmp_path):
    return profile_app(coldstart, python, tmp_path)


def test_every_case_of_importer(coldstart, python, app_profile, tmp_path):
    d = why_json(coldstart, "heavy", app_profile, cache=tmp_path / "cache")
    assert d["source"]["read"], d["source"]
    proc = d["processes"][0]
    assert proc["role"] == "target"
    assert proc["loads"] == 2  # heavy, heavy.part
    got = importers(proc)
    assert got["alpha"]["status"] == "loaded"
    assert got["alpha"]["loaded"] == "heavy"
    assert got["alpha"]["cost_us"] == proc["module"]["cum_us"] > 0
    assert got["alpha"]["statements"][0]["line"] == 1
    assert got["beta"]["status"] == "found-loaded"
    assert got["beta"]["statements"][0]["imports"] == "heavy.part"
    assert got["circ"]["status"] == "circular"
    assert got["cond_early"]["status"] == "not-run"
    assert got["cond_early"]["statements"][0]["context"] == "cond"
    assert got["lazy"]["status"] == "in-function"
    assert got["typed"]["status"] == "never"
    assert got["dyn"]["status"] == "found-loaded"
    assert "call" in [s["via"] for s in got["dyn"]["statements"]]
    assert "app" not in got and "heavy.part" not in got and "__main__" not in got
    assert list(got)[0] == "alpha"  # the loader first
    gone = {m["name"] for m in proc["gone"]["modules"]}
    assert gone == {"heavy", "heavy.part", "only", "circ"}
    kept = {k["name"]: k for k in proc["gone"]["kept"]}
    assert set(kept) == {"shared"}
    assert kept["shared"]["by"] == "beta"
    assert kept["shared"]["statement"]["line"] == 2

    # The same answer as text, within 100 columns.
    r = why(coldstart, "heavy", app_profile, cache=tmp_path / "cache")
    fits(r.stdout)
    assert "loaded it      alpha.py:1" in r.stdout
    assert "circ.py:1" in r.stdout and "in a function" in r.stdout
    assert "If heavy were never imported, 4 modules would go away" in flat(r.stdout)
    assert "shared" in r.stdout and "beta (beta.py:2)" in r.stdout


def test_functions_option_and_main_script(coldstart, python, app_profile, tmp_path):
    d = why_json(coldstart, "heavy", app_profile, "--functions", cache=tmp_path / "cache")
    assert d["assumes"]["functions_run"] is True
    # lazy's import would load heavy: nothing goes, heavy's package stays.
    proc = d["processes"][0]
    assert proc["gone"]["modules"] == [] or {m["name"] for m in proc["gone"]["modules"]} <= {"heavy", "heavy.part",
                                                                                               "only", "circ"}
    # The script's own statements: __main__ loads alpha.
    d = why_json(coldstart, "alpha", app_profile, cache=tmp_path / "cache")
    got = importers(d["processes"][0])
    assert got["__main__"]["status"] == "loaded"
    assert [s["line"] for s in got["__main__"]["statements"] if s["via"] == "statement"] == [2]


def test_importtime_only_profile(coldstart, python, tmp_path):
    """No trace: the files are located by name through the interpreter; the
    importers from the source are still found."""
    write_app(tmp_path)
    log = tmp_path / "imports.log"
    with open(log, "w") as f:
        subprocess.run([python, "-X", "importtime", "app.py"], cwd=tmp_path, stderr=f, check=True)
    out = tmp_path / "log.json"
    r = coldstart("parse", log, "-o", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cache = tmp_path / "cache"
    # The log names no interpreter: without --python only the recorded loads.
    r = why(coldstart, "heavy", out, cache=cache, cwd=tmp_path)
    assert "Import statements not read: the profile does not name its interpreter" in flat(r.stdout)
    assert "alpha" in r.stdout and "beta" not in r.stdout
    d = why_json(coldstart, "heavy", out, "--python", python, cache=cache, cwd=tmp_path)
    assert d["source"]["read"]
    got = importers(d["processes"][0])
    assert got["alpha"]["status"] == "loaded"
    assert got["beta"]["status"] == "found-loaded"
    assert got["lazy"]["status"] == "in-function"
    r = why(coldstart, "heavy", out, "--python", python, cache=cache, cwd=tmp_path)
    assert "The profile has no trace: module files were located by name" in flat(r.stdout)
    fits(r.stdout)


def test_cache_follows_the_files(coldstart, tmp_path):
    out = profile_app(coldstart, DEBIAN_PYTHON, tmp_path)
    cache = tmp_path / "cache"
    first = why_json(coldstart, "heavy", out, cache=cache)["source"]
    assert first["cached"] == 0 and first["parsed"] == first["files"] > 10
    assert first["cache"] == "used"
    again = why_json(coldstart, "heavy", out, cache=cache)["source"]
    assert again["parsed"] == 0 and again["cached"] == first["files"]
    # beta now imports only too: only that file is read again, and only stays.
    (tmp_path / "beta.py").write_text("import heavy.part\nimport shared\nimport only\n")
    d = why_json(coldstart, "heavy", out, cache=cache)
    assert d["source"]["parsed"] == 1
    assert "only" in {k["name"] for k in d["processes"][0]["gone"]["kept"]}
    nocache = why_json(coldstart, "heavy", out, "--no-cache", cache=cache)["source"]
    assert nocache["parsed"] == nocache["files"] and nocache["cache"] == "off"
    # A cache directory someone else could write to is refused, and said so.
    os.chmod(cache / "imports", 0o777)
    r = why(coldstart, "heavy", out, cache=cache)
    assert "The cache was refused" in flat(r.stdout)
    assert why_json(coldstart, "heavy", out, cache=cache)["source"]["parsed"] > 0
    os.chmod(cache / "imports", 0o700)


def test_errors(coldstart, tmp_path):
    out = profile_app(coldstart, DEBIAN_PYTHON, tmp_path)
    cache = tmp_path / "cache"
    r = why(coldstart, "haevy", out, cache=cache, ok=False)
    assert r.returncode == 1
    assert "'haevy' is not imported in" in r.stderr and "close names: heavy" in r.stderr
    r = why(coldstart, "part", out, cache=cache, ok=False)
    assert r.returncode == 1 and "heavy.part" in r.stderr
    for args in (["heavy"], [], ["heavy", out, "extra"], ["heavy", out, "--top", "x"],
                 ["heavy", out, "--run", "2"], ["heavy", out, "--bogus"]):
        r = why(coldstart, *args, cache=cache, ok=False)
        assert r.returncode == 2, (args, r.stderr)
        assert "Try 'coldstart why --help'." in r.stderr or "--run 2" in r.stderr
    r = why(coldstart, "heavy", tmp_path / "missing.json", cache=cache, ok=False)
    assert r.returncode == 1 and "missing.json" in r.stderr
    (tmp_path / "bad.json").write_text("{not json")
    assert why(coldstart, "heavy", tmp_path / "bad.json", cache=cache, ok=False).returncode == 1
    # No interpreter to read with: the recorded importers, and what is missing.
    r = why(coldstart, "heavy", out, "--python", "/nonexistent/python3", cache=cache)
    assert "Import statements not read: cannot run '/nonexistent/python3'" in flat(r.stdout)
    assert "loaded it      recorded" in r.stdout and "alpha" in r.stdout
    r = why(coldstart, "heavy", out, "--no-source", cache=cache)
    assert "(--no-source)" in flat(r.stdout)
    r = coldstart("why", "--help")
    assert r.returncode == 0 and "usage: coldstart why MODULE PROFILE" in r.stdout
    assert max(len(l) for l in r.stdout.splitlines()) <= 80
    assert coldstart("help").stdout.count("why") >= 1


def test_python314_cached_rows(coldstart, tmp_path):
    """3.14's -X importtime=2 prints a cached row for every later import of a
    loaded module: those are importers too, read without any interpreter."""
    out = tmp_path / "p.json"
    r = coldstart("parse", os.path.join(FIXTURES, "importtime", "py3.14-importtime2-app.log"), "-o", out)
    assert r.returncode == 0, r.stderr
    d = why_json(coldstart, "os", out, cache=tmp_path / "cache")
    assert not d["source"]["read"]
    proc = d["processes"][0]
    statuses = [im["status"] for im in proc["importers"]]
    assert statuses.count("loaded") == 1
    assert statuses.count("found-loaded") >= 10
    vias = {s["via"] for im in proc["importers"] for s in im["statements"]}
    assert "recorded-again" in vias
    # Repeats are not loads: os alone goes.
    assert [m["name"] for m in proc["gone"]["modules"]] == ["os"]


# --- real applications (Debian's interpreter and packages) -------------------

def debian_has(*mods):
    code = "import importlib.util, sys; sys.exit(all(importlib.util.find_spec(m) for m in sys.argv[1:]) is False)"
    return subprocess.run([DEBIAN_PYTHON, "-c", code] + list(mods)).returncode == 0


@pytest.fixture(scope="module")
def real_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("why-cache")


@pytest.fixture(scope="module")
def pandas_profile(tmp_path_factory):
    if not debian_has("pandas"):
        pytest.skip("Debian's python3-pandas is not installed (tests/install-deps.sh)")
    d = tmp_path_factory.mktemp("pandas")
    out = d / "pandas.json"
    from conftest import run_coldstart
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "-o", out, "-c", "import pandas", cwd=d)
    assert r.returncode == 0, r.stderr
    return out


def test_pandas_pytz(coldstart, pandas_profile, real_cache):
    d = why_json(coldstart, "pytz", pandas_profile, cache=real_cache)
    proc = d["processes"][0]
    got = importers(proc)
    # pandas loads its hard dependencies with __import__(name) in a loop.
    assert got["pandas"]["status"] == "loaded"
    assert got["pandas"]["cost_us"] > 0
    # More importers than the one importtime shows, the Cython ones read from their .pyx.
    found = [m for m, im in got.items() if im["status"] == "found-loaded"]
    assert "pandas.core.dtypes.dtypes" in found
    assert any(m.startswith("pandas._libs.") for m in found)
    assert d["source"]["pyx"] > 0
    gone = {m["name"] for m in proc["gone"]["modules"]}
    assert {"pytz", "pytz.lazy", "pytz.tzinfo"} <= gone
    assert not any(m.startswith("pandas") for m in gone)
    r = why(coldstart, "pytz", pandas_profile, cache=real_cache)
    fits(r.stdout)
    assert "__init__.py:17 computed  pandas" in r.stdout or "computed  pandas" in r.stdout


def test_fits_the_terminal(coldstart, pandas_profile, real_cache):
    """The answer fits COLUMNS, else the terminal's width (TIOCGWINSZ), else
    100 columns, as the report does (docs/report.md); --wide lifts it."""
    def longest(text):
        return max(len(l) for l in text.splitlines())

    by = {}
    for columns in (60, 80, 160):
        r = coldstart("why", "pytz", pandas_profile, env=env_for(real_cache, columns))
        assert r.returncode == 0, r.stderr
        assert longest(r.stdout) <= columns, [l for l in r.stdout.splitlines() if len(l) > columns]
        by[columns] = r.stdout
    # Chains and argv use the room: longer lines at 160 than 100 allows, shortened at 60.
    assert longest(by[160]) > WIDTH, by[160]
    assert "\u2026" in by[60]
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    env["COLDSTART_CACHE_DIR"] = str(real_cache)
    pipe = subprocess.run([COLDSTART, "why", "pytz", str(pandas_profile)], capture_output=True, text=True, env=env)
    assert pipe.returncode == 0, pipe.stderr
    assert WIDTH - 20 < longest(pipe.stdout) <= WIDTH
    term = on_terminal(["why", "pytz", str(pandas_profile)], 72, {"COLDSTART_CACHE_DIR": str(real_cache)})
    assert "pytz" in term and longest(term) <= 72, term
    wide = coldstart("why", "pytz", pandas_profile, "--wide", env=env_for(real_cache, 60))
    assert wide.returncode == 0 and longest(wide.stdout) > 60


def test_pandas_numpy(coldstart, pandas_profile, real_cache):
    d = why_json(coldstart, "numpy", pandas_profile, cache=real_cache)
    proc = d["processes"][0]
    got = importers(proc)
    assert sum(im["status"] == "found-loaded" for im in got.values()) > 50
    assert sum(im["status"] == "loaded" for im in got.values()) >= 1
    for im in got.values():
        assert not im["module"].startswith("numpy.")
        assert im["chain"][-1] == im["module"] or im["module"] == "__main__"
    gone = {m["name"] for m in proc["gone"]["modules"]}
    assert "numpy" in gone and "numpy.core.multiarray" in gone
    assert proc["gone"]["self_us"] <= proc["gone"]["import_total_us"]
    r = why(coldstart, "numpy", pandas_profile, "--top", "0", cache=real_cache)
    fits(r.stdout)
    # The loader's line is the __import__(name) loop, not an `import numpy` in a function that did not run.
    assert "computed  pandas\n" in r.stdout
    assert "more (--top 0 lists all)" not in r.stdout


@pytest.fixture(scope="module")
def django_profile(tmp_path_factory):
    if not debian_has("django"):
        pytest.skip("Debian's python3-django is not installed (tests/install-deps.sh)")
    d = tmp_path_factory.mktemp("django")
    (d / "mysite").mkdir()
    (d / "mysite" / "__init__.py").write_text("")
    (d / "mysite" / "settings.py").write_text(textwrap.dedent("""\
        SECRET_KEY = "test"
        INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth"]
        DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
        USE_TZ = True
        """))
    (d / "manage.py").write_text(textwrap.dedent("""\
        import os
        import sys


        def main():
            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")
            from django.core.management import execute_from_command_line
            execute_from_command_line(sys.argv)


        if __name__ == "__main__":
            main()
        """))
    out = d / "django.json"
    from conftest import run_coldstart
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "-o", out, "manage.py", "check", cwd=d)
    assert r.returncode == 0, r.stderr
    assert "System check identified no issues" in r.stdout
    return out


def test_django_check(coldstart, django_profile, real_cache):
    d = why_json(coldstart, "django", django_profile, cache=real_cache)
    got = importers(d["processes"][0])
    # manage.py imports django inside main(), which start-up called.
    main = got["__main__"]
    assert main["status"] == "loaded"
    assert any(s["via"] == "statement" and s["context"] == "func" and s["line"] == 7 for s in main["statements"])
    d = why_json(coldstart, "django.db.models", django_profile, cache=real_cache)
    proc = d["processes"][0]
    got = importers(proc)
    assert sum(im["status"] == "loaded" for im in got.values()) >= 1
    assert sum(im["status"] == "found-loaded" for im in got.values()) >= 5
    gone = {m["name"] for m in proc["gone"]["modules"]}
    assert "django.db.models.fields" in gone
    assert not any(m.startswith("django.forms") for m in gone)  # kept by django.forms.models users
    r = why(coldstart, "django.db.models", django_profile, cache=real_cache)
    fits(r.stdout)


def test_boto3(coldstart, tmp_path, real_cache):
    if not debian_has("boto3"):
        pytest.skip("Debian's python3-boto3 is not installed (tests/install-deps.sh)")
    out = tmp_path / "boto3.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "-o", out, "-c",
                  "import boto3; boto3.client('s3', region_name='us-east-1')")
    assert r.returncode == 0, r.stderr
    d = why_json(coldstart, "urllib3", out, cache=real_cache)
    got = importers(d["processes"][0])
    assert "botocore.httpsession" in got
    assert got["botocore.httpsession"]["status"] in ("loaded", "found-loaded")
    assert sum(im["status"] == "loaded" for im in got.values()) >= 1
    fits(why(coldstart, "urllib3", out, cache=real_cache).stdout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_gunicorn_two_workers(coldstart, tmp_path, real_cache):
    """Across processes: the app is imported in each worker (no --preload),
    each a fork of the master, and answered per process, the target's first."""
    if not shutil.which("gunicorn") or not debian_has("requests"):
        pytest.skip("gunicorn or python3-requests is not installed (tests/install-deps.sh)")
    (tmp_path / "app.py").write_text(textwrap.dedent("""\
        import json
        import requests


        def app(environ, start_response):
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps({"requests": requests.__version__}).encode()]
        """))
    port = free_port()
    out = tmp_path / "g.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--ready", "http://127.0.0.1:%d/" % port, "--timeout", "60",
                  "-o", out, "--", "gunicorn", "-w", "2", "-b", "127.0.0.1:%d" % port, "app:app", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = why_json(coldstart, "requests", out, cache=real_cache)
    procs = d["processes"]
    workers = [p for p in procs if p["role"] == "fork"]
    assert len(workers) == 2, [(p["pid"], p["role"]) for p in procs]
    master = workers[0]["ppid"]
    assert workers[1]["ppid"] == master
    # The master imports no app: answered first if its tree has requests, else listed as not importing it.
    assert procs[0]["role"] == "target" or master in d["elsewhere"]
    for w in workers:
        got = importers(w)
        assert got["app"]["status"] == "loaded"
        assert got["app"]["statements"][0]["line"] == 2
        assert "requests" in {m["name"] for m in w["gone"]["modules"]}
    text = why(coldstart, "requests", out, cache=real_cache).stdout
    fits(text)
    assert text.count(", a fork of %d" % master) == 2


def readers_of(cache):
    """pids of import readers started for this cache directory."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"_imports.py") for a in argv) and os.path.join(str(cache), "imports").encode() in argv:
            pids.append(int(pid))
    return pids


@pytest.mark.parametrize("how", ["ctrl-c", "sigkill"])
def test_interrupted_read_leaves_nothing(pandas_profile, tmp_path, how):
    """Ctrl-C (SIGINT to the whole group) or SIGKILL of coldstart alone while
    the reader parses pandas: no reader process and no half-written cache
    stays behind."""
    import signal
    import time
    cache = tmp_path / "cache"
    env = dict(os.environ, COLDSTART_CACHE_DIR=str(cache))
    p = subprocess.Popen([COLDSTART, "why", "numpy", str(pandas_profile)], env=env, start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while not readers_of(cache) and time.time() < deadline:
        time.sleep(0.05)
    assert readers_of(cache), "the reader never started"
    time.sleep(0.5)
    if how == "ctrl-c":
        os.killpg(p.pid, signal.SIGINT)
    else:
        os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    deadline = time.time() + 15
    while readers_of(cache) and time.time() < deadline:
        time.sleep(0.05)
    assert readers_of(cache) == []
    leftovers = [f for f in (cache / "imports").iterdir() if f.name.endswith(".tmp")] \
        if (cache / "imports").exists() else []
    assert leftovers == []


def test_runs(coldstart, tmp_path):
    """--run picks a run of a repeated profile; the default is the median one, as the report's."""
    write_app(tmp_path)
    out = tmp_path / "n.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "-n", "3", "-o", out, "app.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cache = tmp_path / "cache"
    d = why_json(coldstart, "heavy", out, "--run", "3", cache=cache)
    assert d["run"] == 3 and d["runs"] == 3
    assert importers(d["processes"][0])["alpha"]["status"] == "loaded"
    pids = {why_json(coldstart, "heavy", out, "--run", str(n), cache=cache)["processes"][0]["pid"] for n in (1, 2, 3)}
    assert len(pids) == 3
    assert why_json(coldstart, "heavy", out, cache=cache)["run"] in (1, 2, 3)
    r = why(coldstart, "heavy", out, "--run", "4", cache=cache, ok=False)
    assert r.returncode == 2 and "holds 3 runs" in r.stderr
