"""The text report fits the terminal (docs/report.md): real profiles of pandas,
Django (`manage.py check`) and gunicorn with two workers behind a Flask app,
rendered at 80 and 100 columns, on a pipe and on a real pseudo-terminal."""
import os
import re
import shutil
import socket
import subprocess
import textwrap

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, SAMPLES, on_terminal, run_coldstart

ESC = re.compile(r"\x1b\[[0-9;]*m")


def debian_has(mod):
    return subprocess.run([DEBIAN_PYTHON, "-c", "import " + mod], capture_output=True).returncode == 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    """name -> saved profile of a real program."""
    d = tmp_path_factory.mktemp("width")
    got = {}
    if debian_has("pandas"):
        r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "-o", d / "pandas.json", "--no-report",
                          "-c", "import pandas")
        assert r.returncode == 0, r.stderr
        got["pandas"] = d / "pandas.json"
    if debian_has("django"):
        site = d / "dj"
        (site / "mysite").mkdir(parents=True)
        (site / "mysite" / "__init__.py").write_text("")
        (site / "mysite" / "settings.py").write_text(textwrap.dedent("""\
            SECRET_KEY = "test"
            INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth"]
            DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
            """))
        (site / "manage.py").write_text(textwrap.dedent("""\
            import os, sys
            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")
            from django.core.management import execute_from_command_line
            execute_from_command_line(sys.argv)
            """))
        r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "-o", d / "django.json", "--no-report",
                          "manage.py", "check", cwd=site)
        assert r.returncode == 0, r.stderr
        got["django"] = d / "django.json"
    if shutil.which("gunicorn") and debian_has("flask"):
        port = free_port()
        r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--ready", "http://127.0.0.1:%d/health" % port,
                          "--timeout", "60", "-o", d / "gunicorn.json", "--no-report", "--",
                          "gunicorn", "-w", "2", "-b", "127.0.0.1:%d" % port, "app:app",
                          cwd=os.path.join(SAMPLES, "flask-app"))
        assert r.returncode == 0, r.stderr
        got["gunicorn"] = d / "gunicorn.json"
    return got


def profile_of(profiles, name):
    if name not in profiles:
        pytest.skip("%s is not installed for Debian's python3 (tests/install-deps.sh)" % name)
    return profiles[name]


def report(path, *args, columns=None):
    env = {"COLUMNS": str(columns)} if columns else {}
    r = run_coldstart("report", path, *args, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def section(text, title):
    """The lines of the section whose heading starts with title."""
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith(title))
    out = []
    for l in lines[start + 1:]:
        if not l:
            break
        out.append(l)
    return out


@pytest.mark.parametrize("name", ["pandas", "django", "gunicorn"])
@pytest.mark.parametrize("columns", [80, 100])
def test_every_line_fits(profiles, name, columns):
    text = report(profile_of(profiles, name), columns=columns)
    assert not ESC.search(text), "colour on a pipe"
    lines = text.rstrip("\n").split("\n")
    too_long = [l for l in lines if len(l) > columns]
    assert not too_long, too_long
    # The three-line summary comes first, then the sections.
    assert lines[0].startswith("coldstart: ") and ("no limits" in lines[0] or "CPU" in lines[0]), lines[0]
    assert "imports " in lines[1] and "wall " in lines[1], lines[1]
    assert lines[2].startswith("worst: ") or lines[2].startswith("no findings"), lines[2]
    assert lines[3] == "" and lines[4] == "Run"
    if name == "gunicorn":
        assert lines[1].startswith("ready "), lines[1]
        # Ready is gunicorn's first answer; its master listened long before.
        assert " · listening " in lines[1] and "first response" not in lines[1], lines[1]


def test_chains_shortened_in_the_middle(profiles):
    path = profile_of(profiles, "pandas")
    for columns in (80, 100):
        text = report(path, columns=columns)
        vias = [l for l in text.split("\n") if "via " in l]
        shortened = [l for l in vias if re.search(r"via pandas > \u2026 > \S+", l)]
        assert shortened, vias
        wide = report(path, "--wide", columns=columns)
        # --wide lifts the width: the whole chain and lines past it.
        assert "\u2026" not in "".join(l for l in wide.split("\n") if "via " in l)
        assert max(len(l) for l in wide.split("\n")) > columns


def test_findings_wrapped_with_a_hanging_indent(profiles):
    text = report(profile_of(profiles, "pandas"), "--top", "50", columns=80)
    lines = section(text, "What to fix")
    evidence = [i for i, l in enumerate(lines) if l.startswith("      evidence: ")]
    assert evidence
    wrapped = [i for i in evidence if i + 1 < len(lines) and lines[i + 1].startswith("        ")
               and not lines[i + 1].strip().startswith(("fix:", "evidence:"))]
    assert wrapped, lines[:20]


@pytest.mark.parametrize("name", ["pandas", "gunicorn"])
def test_every_section_honours_top(profiles, name):
    path = profile_of(profiles, name)
    text = report(path, "--top", "3")
    native = section(text, "Native extensions")
    rows = [l for l in native if re.match(r"^ +[0-9.]+ (ms|us|s)  ", l)]
    assert 0 < len(rows) <= 3, native
    assert any("more (--top" in l for l in native), native
    fixes = [l for l in section(text, "What to fix") if re.match(r"^  \[[a-z-]+\] ", l)]
    assert 0 < len(fixes) <= 3
    for title in ("Top modules by cumulative time", "Top modules by self time", "By top-level package"):
        rows = [l for l in section(text, title)[1:] if not l.startswith("            via ")]
        assert 0 < len(rows) <= 3, (title, rows)


def test_width_without_columns_is_100_on_a_pipe(profiles):
    path = profile_of(profiles, "pandas")
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    out = subprocess.run([COLDSTART, "report", str(path)], capture_output=True, text=True, env=env).stdout
    assert max(len(l) for l in out.split("\n")) <= 100
    assert max(len(l) for l in out.split("\n")) > 80


def test_terminal_width_and_colour(profiles):
    path = str(profile_of(profiles, "pandas"))
    out = on_terminal(["report", path], 90, {})
    assert ESC.search(out), "no colour on a terminal"
    plain = ESC.sub("", out)
    assert max(len(l) for l in plain.split("\n")) <= 90
    assert max(len(l) for l in plain.split("\n")) > 80
    out = on_terminal(["report", path], 90, {"NO_COLOR": "1"})
    assert not ESC.search(out), "colour despite NO_COLOR"
