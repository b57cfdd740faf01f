"""The command-line conventions: every command's --help within 80 columns and
equal to `coldstart help CMD` and `-h`, the exit codes listed, the man page
and the bash completion made from the same option tables (and installed),
errors that name the file and the reason before anything runs, machine output
on a channel of its own (--json, -o -, --json-fd), and the target's PYTHONPATH
and sys.path as the app would have them, on every interpreter."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, PYTHONS, ROOT, run_coldstart


def commands():
    out = run_coldstart("--help").stdout
    block = out.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [m.group(1) for m in re.finditer(r"^  ([a-z]+) +\S", block, re.M)]


def listed_options(text):
    opts = set()
    for line in text.split("options:\n", 1)[1].splitlines():
        m = re.match(r"^  (?:-\w, |    )(--[\w-]+)", line)
        if m:
            opts.add(m.group(1))
    return opts


def test_command_list_is_complete():
    names = commands()
    for want in ("profile", "compare", "report", "export", "diff", "check", "help"):
        assert want in names


@pytest.mark.parametrize("cmd", [c for c in commands() if c != "help"])
def test_help_conventions(cmd):
    long_help = run_coldstart(cmd, "--help")
    assert long_help.returncode == 0, long_help.stderr
    assert long_help.stdout.startswith("usage: coldstart %s" % cmd)
    wide = [line for line in long_help.stdout.splitlines() if len(line) > 80]
    assert wide == [], "%s --help has lines past 80 columns" % cmd
    # Text the wrapper had to break shows as a stray indented piece ("6 target killed\n  by\n"): every text
    # must arrive within 80 columns; a line indented by two follows a heading ("options:") or another such line.
    lines = long_help.stdout.splitlines()
    stray = [(a, b) for a, b in zip(lines, lines[1:])
             if re.match(r"  \S", b) and a and not a.startswith(" ") and not a.endswith(":")]
    assert stray == [], "%s --help: text broken by the wrapper" % cmd
    assert run_coldstart(cmd, "-h").stdout == long_help.stdout
    assert run_coldstart("help", cmd).stdout == long_help.stdout
    assert "--help" in listed_options(long_help.stdout)


def test_help_command():
    top = run_coldstart("help")
    assert top.returncode == 0 and top.stdout == run_coldstart("--help").stdout
    r = run_coldstart("help", "nosuch")
    assert r.returncode == 2 and "unknown command 'nosuch'" in r.stderr
    r = run_coldstart("help", "--help")
    assert r.returncode == 0 and "--man" in r.stdout
    assert all(len(line) <= 80 for line in run_coldstart("--help").stdout.splitlines())


def test_top_level_help_lists_every_exit_code():
    text = run_coldstart("--help").stdout
    block = text.split("exit status:\n", 1)[1]
    listed = set(re.findall(r"^  (\d+|128\+N) ", block, re.M))
    with open(os.path.join(ROOT, "src", "exit.h")) as f:
        defined = set(re.findall(r"#define EXIT_\w+ (\d+)", f.read()))
    assert defined and defined <= listed, "exit codes missing from --help: %s" % (defined - listed)
    assert "128+N" in listed
    with open(os.path.join(ROOT, "docs", "exit-codes.md")) as f:
        documented = set(re.findall(r"^\| (\d+|128\+N) \|", f.read(), re.M))
    assert listed <= documented, "exit codes missing from docs/exit-codes.md: %s" % (listed - documented)


def man_sections(page):
    """{command: set of --options} from the man page's per-command sections."""
    sections = {}
    for part in re.split(r'^\.SS "coldstart ', page, flags=re.M)[1:]:
        name = part.split('"', 1)[0]
        opts = set()
        for m in re.finditer(r"^\.TP\n(?:\\fB\\-\w\\fR, )?\\fB\\-\\-([\w\\-]+)\\fR", part, re.M):
            opts.add("--" + m.group(1).replace("\\-", "-"))
        sections[name] = opts
    return sections


def test_man_page_matches_help():
    r = run_coldstart("help", "--man")
    assert r.returncode == 0, r.stderr
    page = r.stdout
    assert page.startswith(".TH COLDSTART 1")
    sections = man_sections(page)
    for cmd in commands():
        if cmd == "help":
            continue
        assert cmd in sections, "no man section for %s" % cmd
        assert sections[cmd] == listed_options(run_coldstart(cmd, "--help").stdout), cmd
    for code in ("0", "2", "9", "128+N"):
        assert ".B %s\n" % code in page
    groff = shutil.which("groff")
    if not groff:
        pytest.skip("groff not installed: the page's roff is not checked for warnings")
    w = subprocess.run([groff, "-man", "-ww", "-z"], input=page, capture_output=True, text=True)
    assert w.returncode == 0 and w.stderr == "", w.stderr
    # Rendered for an 80-column terminal, nothing runs past it: usage lines and tables are verbatim in roff,
    # so they must arrive wrapped for the page's indent.
    w = subprocess.run([groff, "-man", "-Tutf8", "-rLL=80n", "-P-cbou"], input=page, capture_output=True,
                       text=True)
    assert w.returncode == 0, w.stderr
    long = [line for line in w.stdout.splitlines() if len(line) > 80]
    assert not long, long


def bash_complete(script, words):
    """COMPREPLY for the words typed so far (the last one being completed)."""
    code = "source %s\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_coldstart\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n" % (
        script, " ".join("'%s'" % w for w in words), len(words) - 1)
    r = subprocess.run(["bash", "--norc", "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return [line for line in r.stdout.splitlines() if line]


def test_bash_completion(tmp_path):
    if not shutil.which("bash"):
        pytest.skip("no bash")
    script = tmp_path / "coldstart.bash"
    r = run_coldstart("help", "--completion", "bash")
    assert r.returncode == 0, r.stderr
    script.write_text(r.stdout)
    out = subprocess.run(["bash", "--norc", "-c", "source %s; complete -p coldstart" % script],
                         capture_output=True, text=True)
    assert "-F _coldstart coldstart" in out.stdout
    assert set(bash_complete(script, ["coldstart", ""])) >= set(commands())
    assert bash_complete(script, ["coldstart", "comp"]) == ["compare"]
    for cmd in commands():
        if cmd == "help":
            continue
        offered = {w for w in bash_complete(script, ["coldstart", cmd, "--"]) if w.startswith("--")}
        assert offered == listed_options(run_coldstart(cmd, "--help").stdout), cmd
    assert bash_complete(script, ["coldstart", "profile", "--color", ""]) == ["auto", "always", "never"]
    assert "svg" in bash_complete(script, ["coldstart", "export", "p.json", "--format", ""])
    # A value that is a file completes as one.
    assert "README.md" in bash_complete(script, ["coldstart", "report", "-o", "READ"])
    assert bash_complete(script, ["coldstart", "help", "pro"]) == ["profile"]
    r = run_coldstart("help", "--completion", "zsh")
    assert r.returncode == 2 and "bash" in r.stderr


def test_install_puts_man_page_and_completion(tmp_path):
    dest = tmp_path / "dest"
    make = ["make", "-C", ROOT, "--no-print-directory", "DESTDIR=%s" % dest, "PREFIX=/usr/local",
            "PYTHON=%s" % DEBIAN_PYTHON]
    r = subprocess.run(make + ["install"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    man = dest / "usr/local/share/man/man1/coldstart.1"
    comp = dest / "usr/local/share/bash-completion/completions/coldstart"
    assert man.read_text() == run_coldstart("help", "--man").stdout
    assert comp.read_text() == run_coldstart("help", "--completion", "bash").stdout
    if shutil.which("man"):
        r = subprocess.run(["man", "-l", str(man)], capture_output=True, text=True,
                           env=dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="80"))
        assert r.returncode == 0 and "coldstart compare" in r.stdout
    r = subprocess.run(make + ["uninstall"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert not man.exists() and not comp.exists()


def test_output_paths_are_checked_before_the_target_runs(tmp_path):
    marker = tmp_path / "ran"
    code = "open(%r, 'w').close(); import time; time.sleep(20)" % str(marker)
    for args, said in [(["-o", str(tmp_path / "no" / "p.json")], "no directory '%s'" % (tmp_path / "no")),
                       (["--flamegraph", str(tmp_path)], "is a directory"),
                       (["--html", str(tmp_path / "f" / "x.html")], "no directory"),
                       # A directory no file can be made in, whoever runs it (root passes access()).
                       (["--html", "/proc/coldstart-x.html"], "cannot create a file in '/proc'"),
                       (["--markdown", "/proc/coldstart-x.md"], "cannot create a file in '/proc'")]:
        start = time.monotonic()
        if args[0] == "--markdown":
            r = run_coldstart("compare", *args, "%s -c %r" % (DEBIAN_PYTHON, code), "%s -c pass" % DEBIAN_PYTHON)
        else:
            r = run_coldstart("profile", "--python", DEBIAN_PYTHON, *args, "-c", code)
        assert r.returncode == 1, r.stderr
        assert said in r.stderr
        assert time.monotonic() - start < 10
        assert not marker.exists(), "the target ran before the bad path was said"
    # The probe leaves nothing behind, and a good path is written.
    out = tmp_path / "fresh.json"
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--quiet", "--no-report", "-o", out, "-c", "pass")
    assert r.returncode == 0 and json.loads(out.read_text())["format"] == "coldstart-profile", r.stderr
    # Two outputs on stdout are a usage error.
    r = run_coldstart("profile", "--json", "-o", "-", "-c", "pass")
    assert r.returncode == 2 and "only one output can go to stdout" in r.stderr


def test_usage_errors_before_running():
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--ready", "tcp:abc", "-c", "pass")
    assert r.returncode == 2 and "tcp:abc" not in r.stdout and "abc" in r.stderr
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--ready", "tpc:8000", "-c", "pass")
    assert r.returncode == 2, r.stderr
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--cpuset", "99", "-c", "pass")
    assert r.returncode == 3, r.stderr
    assert "CPU 99 does not exist" in r.stderr and "root" not in r.stderr


@pytest.mark.parametrize("python,said", [
    ("/nonexistent/python3", "no interpreter '/nonexistent/python3': no such file"),
    ("/tmp", "interpreter '/tmp' is a directory"),
    ("/etc/passwd", "interpreter '/etc/passwd' is not executable"),
    ("nosuchpython3", "no interpreter 'nosuchpython3' on PATH"),
])
def test_python_errors_once(python, said):
    r = run_coldstart("profile", "--python", python, "-c", "pass")
    assert r.returncode == 4
    lines = r.stderr.strip().splitlines()
    assert lines == ["coldstart: error: " + said + (": pass --python PATH" if "PATH" in said else "")], r.stderr



def test_not_python_said_once():
    """A program that is not Python: one error line, from profile and compare alike (exit 4)."""
    for argv in (("profile", "--python", "/bin/false", "-c", "pass"),
                 ("compare", "--python", "/bin/false", "--python", DEBIAN_PYTHON, "-c", "pass")):
        r = run_coldstart(*argv)
        assert r.returncode == 4, r.stderr
        assert r.stderr.strip().splitlines() == [
            "coldstart: error: '/bin/false' does not behave like a Python interpreter (status 1)"], r.stderr

PRINTS = "import json; print('hello from the app'); print('second line')"


def test_json_on_stdout_alone():
    for args in (["--json"], ["-o", "-"]):
        r = run_coldstart("profile", "--python", DEBIAN_PYTHON, *args, "-c", PRINTS)
        assert r.returncode == 0, r.stderr
        profile = json.loads(r.stdout)
        assert profile["format"] == "coldstart-profile"
        assert "hello from the app" in r.stderr


def test_json_fd_keeps_stdout_the_apps(tmp_path):
    out = tmp_path / "p.json"
    # The target must not inherit the JSON's descriptor (its own fd 3 may be another file).
    code = PRINTS + ("\nimport os\nfds = [os.readlink('/proc/self/fd/' + f) for f in os.listdir('/proc/self/fd')"
                     " if os.path.lexists('/proc/self/fd/' + f)]"
                     "\nprint('fd 3 closed' if %r not in fds else 'fd 3 open')" % str(out))
    shell = "exec %s profile --python %s --json-fd 3 -c %s 3>%s" % (
        COLDSTART, DEBIAN_PYTHON, subprocess.list2cmdline([code]), out)
    r = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("hello from the app\nsecond line\nfd 3 closed\n")
    assert "import time:" not in r.stdout and "coldstart" in r.stdout  # the report follows
    assert json.loads(out.read_text())["format"] == "coldstart-profile"
    r = run_coldstart("profile", "--json-fd", "9", "-c", "pass")
    assert r.returncode == 1 and "--json-fd 9: no such open descriptor" in r.stderr


def test_report_and_exports_show_the_same_run(tmp_path):
    svg = tmp_path / "f.svg"
    p = tmp_path / "p.json"
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "-n", "3", "--warmup", "2", "-o", p,
                      "--flamegraph", svg, "-c", "import json")
    assert r.returncode == 0, r.stderr
    m = re.search(r"run shown +#(\d) of 3 measured \(the median by wall time; run (\d) of the JSON\)", r.stdout)
    assert m, r.stdout
    json_run = int(m.group(2))
    assert json_run == int(m.group(1)) + 2
    assert "run %d of 5" % json_run in svg.read_text()
    runs = json.loads(p.read_text())["runs"]
    walls = sorted(x["wall_us"] for x in runs if not x["warmup"])
    assert runs[json_run - 1]["wall_us"] == walls[1]


SYS_PATH = "import json, os, sys; print(json.dumps([sys.path, os.environ.get('PYTHONPATH')]))"


def test_target_sees_its_own_pythonpath(python, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    for pp in (None, str(app), "%s:%s" % (app, tmp_path)):
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        if pp:
            env["PYTHONPATH"] = pp
        alone = subprocess.run([python, "-c", SYS_PATH], capture_output=True, text=True, env=env, cwd=tmp_path)
        r = subprocess.run([COLDSTART, "profile", "--no-report", "--python", python, "-c", SYS_PATH],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "tracer unavailable" not in r.stderr
        assert json.loads(r.stdout) == json.loads(alone.stdout)


def test_children_stay_traced_with_pythonpath_hidden():
    code = "import os, subprocess, sys; subprocess.run([sys.executable, '-c', 'import json'])"
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--json", "-c", code)
    assert r.returncode == 0, r.stderr
    procs = json.loads(r.stdout)["runs"][0]["processes"]
    assert len(procs) == 2 and "import json" in procs[1]["argv"]


def test_unreadable_profile_names_the_file_and_the_reason(tmp_path):
    r = run_coldstart("report", tmp_path)
    assert r.returncode == 1
    assert r.stderr.strip() == "coldstart: error: cannot read '%s': Is a directory" % tmp_path
    r = run_coldstart("report", tmp_path / "missing.json")
    assert r.returncode == 1 and "missing.json': No such file or directory" in r.stderr


def test_damaged_gzip_says_so(tmp_path):
    import gzip
    prof = tmp_path / "p.json"
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--quiet", "--no-report", "-o", prof,
                      "-c", "import json")
    assert r.returncode == 0, r.stderr
    whole = gzip.compress(prof.read_bytes())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[:len(whole) // 2])
    # Only the trailer missing: every byte of JSON is there, but the file is not whole.
    tail = tmp_path / "tail.json.gz"
    tail.write_bytes(whole[:-4])
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(whole[:10] + b"\xff" * 40)
    for path, said in ((cut, "truncated gzip data"), (tail, "truncated gzip data"),
                       (bad, "corrupt gzip data (invalid block type)")):
        for cmd in (["report"], ["export", "--format", "folded"], ["why", "json"]):
            r = run_coldstart(*cmd, path)
            assert r.returncode == 1, (cmd, path, r.stdout)
            assert r.stderr.startswith("coldstart: error: cannot read '%s': %s" % (path, said)), r.stderr
            assert r.stderr.count(path.name) == 1, r.stderr
    log = tmp_path / "it.log"
    subprocess.run([DEBIAN_PYTHON, "-X", "importtime", "-c", "import asyncio"], stderr=open(log, "wb"), check=True)
    whole = gzip.compress(log.read_bytes())
    cut = tmp_path / "it.log.gz"
    cut.write_bytes(whole[:len(whole) // 2])
    r = run_coldstart("parse", cut)
    assert r.returncode == 1 and "truncated gzip data" in r.stderr, r.stderr


@pytest.mark.parametrize("cmd", ["profile", "compare", "report"])
def test_a_reader_that_stops_early_ends_coldstart_quietly(cmd, tmp_path):
    prof = tmp_path / "p.json"
    args = {"profile": ["profile", "--python", DEBIAN_PYTHON, "-c", "import json"],
            "compare": ["compare", "-n", "1", "--warmup", "0", "%s -c pass" % DEBIAN_PYTHON,
                        "%s -c pass" % DEBIAN_PYTHON],
            "report": ["report", str(prof)]}[cmd]
    if cmd == "report":
        r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--quiet", "--no-report", "-o", prof,
                          "-c", "import json")
        assert r.returncode == 0, r.stderr
    # The reader is gone before the first line is written (| head that has seen enough): no "Broken pipe"
    # error, and the status of a filter ended by SIGPIPE, as every command has it.  The read end is closed
    # before coldstart starts, so a fast command cannot finish its writes first.
    rd, wr = os.pipe()
    os.close(rd)
    p = subprocess.Popen([COLDSTART] + args, stdout=wr, stderr=subprocess.PIPE)
    os.close(wr)
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == -13, err
    assert "Broken pipe" not in err, err


def test_python_with_a_command(tmp_path):
    # A launcher whose #! line names no Python: --python says which interpreter it runs.
    launch = tmp_path / "launch"
    launch.write_text('#!/bin/sh\nexec %s "$@"\n' % DEBIAN_PYTHON)
    launch.chmod(0o755)
    r = run_coldstart("profile", "--json", "--", launch, "-c", "import json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["python_version"] is None
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--json", "--", launch, "-c", "import json")
    assert r.returncode == 0, r.stderr
    prof = json.loads(r.stdout)
    assert prof["python"] == DEBIAN_PYTHON and prof["python_version"].startswith("3.")
    assert "warning" not in r.stderr
    # A command that names its own interpreter keeps it, and a --python that differs is said, not ignored.
    others = [p for p in PYTHONS if os.path.realpath(p) != os.path.realpath(DEBIAN_PYTHON)]
    if not others:
        pytest.skip("only one interpreter found: the --python that does not apply cannot be tried")
    r = run_coldstart("profile", "--python", others[0], "--json", "--", DEBIAN_PYTHON, "-c", "import json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["python"] == DEBIAN_PYTHON
    assert "coldstart: warning: --python %s does not apply: '%s' runs %s" % (others[0], DEBIAN_PYTHON, DEBIAN_PYTHON) \
        in r.stderr
