"""Smaller truths of the outputs and the command line (issue 27, item 7).

- The SVG's subtitle gives the import total its width adds up to, the
  figure the report's headline gives, not only the wall time.
- The HTML summary and `why` leave coldstart's own bootstrap out of the
  import totals, as the text report does: the three agree to the digit.
- The default flamegraph of a run with other processes says so and how to
  draw them.
- `profile -c CODE` leaves the options after the code to coldstart; the
  code's arguments come after `--`.
- Unknown commands and options near a known one get "did you mean".
- A pyenv shim is named as such, and the interpreter it runs is read.
"""
import json
import os
import re
import subprocess

import pytest

from conftest import DEBIAN_PYTHON


def headline_imports(stdout):
    m = re.search(r"^imports ([\d.]+ (?:us|ms|s))", stdout.splitlines()[1])
    assert m, stdout[:400]
    return m.group(1)


def profiled(coldstart, tmp_path, *args):
    out = tmp_path / "p.json"
    r = coldstart("profile", "-o", out, "--python", DEBIAN_PYTHON, *args, env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    return out, r


def test_svg_subtitle_gives_the_import_total(coldstart, tmp_path):
    out, r = profiled(coldstart, tmp_path, "-c", "import json, email.parser")
    svg = tmp_path / "p.svg"
    assert coldstart("export", out, "-o", svg).returncode == 0
    sub = re.search(r'<text class="cs-sub"[^>]*>([^<]*)</text>', svg.read_text()).group(1)
    assert ", imports %s," % headline_imports(r.stdout) in sub, (sub, r.stdout.splitlines()[1])


def test_html_and_why_totals_leave_out_the_bootstrap(coldstart, tmp_path):
    out, r = profiled(coldstart, tmp_path, "-c", "import json, email.parser")
    # The report says its bootstrap was left out; the other views must agree with it.
    assert "its bootstrap and tracer took" in r.stdout
    total = headline_imports(r.stdout)
    html = tmp_path / "p.html"
    assert coldstart("export", out, "-o", html).returncode == 0
    row = re.search(r"<th>imports</th><td>([\d.]+ (?:us|ms|s)) \(without", html.read_text())
    assert row and row.group(1) == total, (row and row.group(1), total)
    w = coldstart("why", "email.parser", out, "--no-source", env={"COLUMNS": "200"})
    assert w.returncode == 0, w.stderr
    m = re.search(r"of this process's ([\d.]+ (?:us|ms|s))", w.stdout)
    assert m and m.group(1) == total, (w.stdout, total)


SPAWN = """
import multiprocessing as mp

def f(x):
    import json
    return x

if __name__ == "__main__":
    with mp.get_context("spawn").Pool(1) as pool:
        pool.map(f, [1])
"""


def test_default_flamegraph_says_other_processes_exist(coldstart, tmp_path):
    (tmp_path / "app.py").write_text(SPAWN)
    out, r = profiled(coldstart, tmp_path, "--no-report", tmp_path / "app.py")
    procs = json.loads(out.read_text())["runs"][0]["processes"]
    assert len(procs) >= 2
    svg, every = tmp_path / "p.svg", tmp_path / "all.svg"
    assert coldstart("export", out, "-o", svg).returncode == 0
    assert coldstart("export", out, "--all-procs", "-o", every).returncode == 0
    note = "%d other process%s not drawn: coldstart export --all-procs draws every process" % (
        len(procs) - 1, "" if len(procs) == 2 else "es")
    assert note in svg.read_text()
    assert "not drawn" not in every.read_text()


def test_c_code_leaves_later_options_to_coldstart(coldstart, tmp_path):
    out = tmp_path / "c.json"
    code = "import sys; print(sys.argv)"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "-c", code, "--no-report", "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['-c']", r.stdout
    assert json.loads(out.read_text())["runs"][0]["exit_code"] == 0
    # After --, the arguments are the code's, options or not.
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "-q", "--no-report", "-c", code, "--", "a", "--json")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['-c', 'a', '--json']", r.stdout
    # As after the first argument that is no option.
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "-q", "--no-report", "-c", code, "a", "--json")
    assert r.stdout.strip() == "['-c', 'a', '--json']", r.stdout


def test_did_you_mean(coldstart):
    for args, wanted in ((["profle"], "unknown command 'profle'; did you mean 'profile'?"),
                         (["help", "compre"], "unknown command 'compre'; did you mean 'compare'?"),
                         (["profile", "--jsn", "-c", "pass"], "unknown option '--jsn'; did you mean '--json'?"),
                         (["profile", "--readytimeout=3", "-c", "pass"],
                          "unknown option '--readytimeout=3'; did you mean '--ready-timeout'?"),
                         (["export", "--all-proc", "x.json"], "did you mean '--all-procs'?")):
        r = coldstart(*args)
        assert r.returncode == 2 and wanted in r.stderr, (args, r.stderr)
    # Nothing near: no guess.
    r = coldstart("profile", "--qwertyuiop", "-c", "pass")
    assert r.returncode == 2 and "unknown option '--qwertyuiop'" in r.stderr and "did you mean" not in r.stderr
    r = coldstart("zzz")
    assert r.returncode == 2 and "did you mean" not in r.stderr


PYENV_SHIM = "/root/.pyenv/shims/python3"


@pytest.mark.skipif(not os.path.exists(PYENV_SHIM), reason="no pyenv shim at %s" % PYENV_SHIM)
def test_pyenv_shim_is_named_as_such(coldstart, tmp_path):
    """A pyenv shim is a bash script that runs pyenv, which execs the interpreter:
    the report names it, and the interpreter's facts come from the real binary
    (the shim is no ELF file to read)."""
    out = tmp_path / "p.json"
    r = coldstart("profile", "-o", out, "--python", PYENV_SHIM, "-c", "import json", env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    prof = json.loads(out.read_text())
    assert prof["python_launcher"] == "pyenv shim", prof.get("python_launcher")
    assert prof["python_executable"].startswith("/root/.pyenv/versions/"), prof["python_executable"]
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("  interpreter ")][0]
    assert "a pyenv shim: it runs %s" % prof["python_executable"] in line, line
    assert not any("not an ELF file" in w["msg"] for w in prof["warnings"]), prof["warnings"]
    # An interpreter named by its own path is no launcher.
    r = coldstart("profile", "-o", out, "--python", DEBIAN_PYTHON, "-c", "import json")
    assert r.returncode == 0 and "python_launcher" not in json.loads(out.read_text())
