"""Trust and robustness of applied start-up plans (python/coldstart/plan.py,
docs/plan.md "Trust"): a plan, its code archive and its extension are used
only when nobody but the applying user (or root) could have written them or
a directory above them; a damaged plan never ends the target; the archive's
bytes cannot change under a running process; a plan made for one program is
not applied to another.

The attacks are real: the files are planted by the user `nobody` (runuser)
in real directories, and the plan is applied by root, as the test runs.
"""
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap

import pytest

from conftest import COLDSTART, ROOT, archive_entries, clean_env, plan_env as env

PY = "/usr/bin/python3"
FUZZ = os.path.join(ROOT, "tests", "fuzz", "plan_mutate.py")


def _nobody():
    if os.geteuid() != 0:
        pytest.skip("the attacks need root (to act as nobody and apply as root)")
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody on this machine")


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="plantrust", dir="/tmp")
    # nobody must reach its own directories below this one.
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def write(path, text, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    if mode is not None:
        os.chmod(path, mode)
    return path


def run(args, cwd, timeout=60, **extra):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env(**extra))


def as_nobody(args, cwd):
    p = subprocess.run(["runuser", "-u", "nobody", "--"] + args, cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    return p


USE = """
    import json, sys, textwrap
    print(textwrap.dedent("    ok"))
    p = sys.modules.get("coldstart.plan")
    print(json.dumps({"applied": bool(p and p.installed())}))
"""


def record(workdir, script="use.py", text=USE):
    """A plan (and its archive) of script, made in workdir by root."""
    write(os.path.join(workdir, script), text)
    plan = os.path.join(workdir, "plan.json")
    p = run([PY, script], workdir, COLDSTART_PLAN_RECORD=plan)
    assert p.returncode == 0, p.stdout + p.stderr
    assert os.path.exists(plan + ".code")
    return plan


def applied(p):
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])["applied"]


def plan_lines(stderr):
    return [ln for ln in stderr.splitlines() if ln.startswith("coldstart plan")]


def test_plan_in_a_directory_of_nobody_runs_no_foreign_code_as_root(workdir):
    """The issue's reproduction: a plan copied into a directory owned by
    nobody, textwrap's index row pointed at nobody's file there (its dir
    kept the standard library's).  Applied by root, nobody's file must not
    run: the plan is refused, naming the directory and the rule."""
    nobody = _nobody()
    plan = record(workdir)
    with open(plan) as f:
        data = json.load(f)
    evil = os.path.join(workdir, "evil")
    os.mkdir(evil)
    os.chown(evil, nobody.pw_uid, nobody.pw_gid)
    marker = os.path.join(evil, "ran-as")
    payload = ("import os\nopen(%r, 'w').write(str(os.getuid()))\n"
               "def dedent(s):\n    return s.strip()\n" % marker)
    names = [r[0] for r in data["index"]]
    i = names.index("textwrap")
    row = data["index"][i]
    # nobody writes the module and the doctored plan, in its directory.
    as_nobody([PY, "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])",
               os.path.join(evil, "textwrap.py"), payload], evil)
    st = os.stat(os.path.join(evil, "textwrap.py"))
    stdlib = os.path.dirname(row[2])
    row[2] = os.path.join(evil, "textwrap.py")
    row[3], row[4] = st.st_size, st.st_mtime_ns
    row[7] = stdlib  # where the finder looks: still the stdlib's
    data["code"]["at"] = archive_entries(data["code"])
    data["code"]["at"][i] = None  # the file itself runs
    data["code"]["path"] = plan + ".code"
    as_nobody([PY, "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])",
               os.path.join(evil, "plan.json"), json.dumps(data)], evil)
    p = run([PY, "use.py"], workdir,
            COLDSTART_PLAN=os.path.join(evil, "plan.json"))
    assert not os.path.exists(marker), "nobody's textwrap.py ran as root"
    assert applied(p) is False
    lines = plan_lines(p.stderr)
    assert len(lines) == 1, p.stderr
    assert "refusing plan" in lines[0] and evil in lines[0] and \
        "owned by uid %d" % nobody.pw_uid in lines[0], lines[0]
    assert p.stdout.splitlines()[0] == "ok"


def test_writable_plan_directories_and_symlinks_are_refused(workdir):
    nobody = _nobody()
    plan = record(workdir)
    assert applied(run([PY, "use.py"], workdir, COLDSTART_PLAN=plan)) is True
    # The plan itself writable by others.
    os.chmod(plan, 0o666)
    p = run([PY, "use.py"], workdir, COLDSTART_PLAN=plan)
    assert applied(p) is False
    assert "writable by group and others (mode 0666)" in p.stderr, p.stderr
    os.chmod(plan, 0o644)
    # A directory above it writable by others, without the sticky bit.
    shared = os.path.join(workdir, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o777)
    inner = os.path.join(shared, "plans")
    os.mkdir(inner)
    shutil.copy(plan, inner)
    shutil.copy(plan + ".code", inner)
    p = run([PY, "use.py"], workdir, COLDSTART_PLAN=os.path.join(inner, "plan.json"))
    assert applied(p) is False
    assert "the directory %r is writable by group and others (mode 0777)" % shared in p.stderr, p.stderr
    # With the sticky bit (as /tmp) nobody can replace what is in it: used.
    os.chmod(shared, 0o1777)
    p = run([PY, "use.py"], workdir, COLDSTART_PLAN=os.path.join(inner, "plan.json"))
    assert applied(p) is True, p.stderr
    assert plan_lines(p.stderr) == []
    # A symlink nobody plants in its own directory, to root's plan: the
    # plan it names is root's, in root's directories: used.  A symlink in
    # root's directory to a plan nobody owns: refused.
    theirs = os.path.join(workdir, "theirs")
    os.mkdir(theirs)
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
    as_nobody(["cp", plan, os.path.join(theirs, "plan.json")], theirs)
    link = os.path.join(workdir, "link.json")
    os.symlink(os.path.join(theirs, "plan.json"), link)
    p = run([PY, "use.py"], workdir, COLDSTART_PLAN=link)
    assert applied(p) is False
    assert "refusing plan" in p.stderr and "owned by uid %d" % nobody.pw_uid \
        in p.stderr, p.stderr


def test_archive_of_nobody_is_refused_and_the_program_runs_without_the_plan(workdir):
    nobody = _nobody()
    plan = record(workdir)
    theirs = os.path.join(workdir, "theirs")
    os.mkdir(theirs)
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
    code = os.path.join(theirs, "plan.json.code")
    as_nobody(["cp", plan + ".code", code], theirs)
    with open(plan) as f:
        data = json.load(f)
    data["code"]["path"] = code
    with open(plan, "w") as f:
        json.dump(data, f)
    os.unlink(plan + ".code")  # not found beside the plan either
    p = run([PY, "use.py"], workdir, COLDSTART_PLAN=plan)
    assert applied(p) is False
    lines = plan_lines(p.stderr)
    assert len(lines) == 1 and "refusing code archive %r" % code in lines[0] \
        and "running without the plan" in lines[0], p.stderr


TOOL = """
    import collections, json, sys
    P = collections.namedtuple("P", "x y")
    p = sys.modules.get("coldstart.plan")
    print(json.dumps({"applied": bool(p and p.installed()),
                      "ext": bool(p and p._ext)}))
"""


def _plan_with_ext(workdir, text=TOOL):
    """A plan made by coldstart plan (which builds the _plancode
    extension) of a script compiling a string."""
    write(os.path.join(workdir, "tool.py"), text)
    plan = os.path.join(workdir, "tool.plan.json")
    e = clean_env(())
    p = subprocess.run([COLDSTART, "plan", "-o", plan, "--", PY, "tool.py"],
                       cwd=workdir, capture_output=True, text=True,
                       timeout=120, env=e)
    assert p.returncode == 0, p.stdout + p.stderr
    with open(plan) as f:
        data = json.load(f)
    if not (data.get("code") or {}).get("ext"):
        pytest.skip("coldstart plan built no _plancode extension here: %s"
                    % p.stderr.strip())
    return plan, data


def test_extension_nobody_can_write_is_refused(workdir):
    nobody = _nobody()
    plan, data = _plan_with_ext(workdir)
    p = run([PY, "tool.py"], workdir, COLDSTART_PLAN=plan)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"applied": True, "ext": True}, p.stderr
    theirs = os.path.join(workdir, "theirs")
    os.mkdir(theirs)
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
    so = os.path.join(theirs, os.path.basename(data["code"]["ext"]["path"]))
    # root's cache is not readable by nobody: a copy it can read.
    stage = os.path.join(workdir, "stage.so")
    shutil.copy(data["code"]["ext"]["path"], stage)
    os.chmod(stage, 0o644)
    as_nobody(["cp", stage, so], theirs)
    st = os.stat(so)
    data["code"]["ext"].update(path=so, size=st.st_size, mtime_ns=st.st_mtime_ns)
    with open(plan, "w") as f:
        json.dump(data, f)
    p = run([PY, "tool.py"], workdir, COLDSTART_PLAN=plan)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"applied": False, "ext": False}, p.stderr
    lines = plan_lines(p.stderr)
    assert len(lines) == 1 and "refusing extension %r" % so in lines[0], p.stderr


SERVER = """
    import json, sys
    import helper  # deferred by the plan
    p = sys.modules["coldstart.plan"]
    print(json.dumps({"deferred": p.is_deferred(helper)}), flush=True)
    sys.stdin.readline()  # the test edits the archive meanwhile
    print(json.dumps({"who": helper.who(), "applied": True}), flush=True)
"""


def test_archive_edited_while_the_program_runs_injects_nothing(workdir):
    """The owner's archive rewritten in place (same size) while a program
    applying it runs: the next deferred import must not run the new bytes;
    it loads the module from its file, with one warning."""
    write(os.path.join(workdir, "helper.py"), "def who():\n    return 'file'\n")
    plan = record(workdir, "server.py", SERVER.replace(
        "sys.stdin.readline()", "0").replace("helper.who()", "'x'"))
    write(os.path.join(workdir, "server.py"), SERVER)
    with open(plan) as f:
        data = json.load(f)
    i = [r[0] for r in data["index"]].index("helper")
    off, length = archive_entries(data["code"])[i][:2]
    evil = compile("def who():\n    return 'injected'\n", "helper.py", "exec")
    import marshal
    blob = marshal.dumps(evil)
    assert len(blob) <= length
    e = env(COLDSTART_PLAN=plan, COLDSTART_PLAN_PROGRAM="any")
    proc = subprocess.Popen([PY, "server.py"], cwd=workdir, env=e,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(proc.stdout.readline())
        assert first == {"deferred": True}
        with open(plan + ".code", "r+b") as f:
            f.seek(off)
            f.write(blob)
        out, err = proc.communicate("go\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err
    assert json.loads(out.strip().splitlines()[-1])["who"] == "file", err
    lines = plan_lines(err)
    assert len(lines) == 1 and "helper" in lines[0] and \
        "not the ones the plan recorded" in lines[0], err


def test_a_fifo_or_a_huge_file_as_plan_never_blocks_or_grows(workdir):
    write(os.path.join(workdir, "use.py"), USE)
    fifo = os.path.join(workdir, "fifo.json")
    os.mkfifo(fifo)
    p = run([PY, "use.py"], workdir, timeout=30, COLDSTART_PLAN=fifo)
    assert applied(p) is False
    assert "is not a regular file" in p.stderr, p.stderr
    big = os.path.join(workdir, "big.json")
    with open(big, "wb") as f:
        f.truncate(1 << 30)  # sparse: costs no disk
    p = run([PY, "use.py"], workdir, timeout=30, COLDSTART_PLAN=big)
    assert applied(p) is False
    assert "more than a plan may be" in p.stderr, p.stderr


def test_plan_made_for_one_program_is_not_applied_to_another(workdir):
    """COLDSTART_PLAN reaches every Python process started with the
    environment: the plan applies to the program it was made for only
    (here: not to the other script, nor to a child running python -c)."""
    plan = record(workdir)
    write(os.path.join(workdir, "other.py"), USE)
    write(os.path.join(workdir, "parent.py"), """
        import subprocess, sys
        subprocess.run([sys.executable, "-c", "import sys, json; "
                        "p = sys.modules.get('coldstart.plan'); "
                        "print(json.dumps({'applied': bool(p and p.installed())}))"],
                       check=True)
    """)
    assert applied(run([PY, "use.py"], workdir, COLDSTART_PLAN=plan)) is True
    p = run([PY, "other.py"], workdir, COLDSTART_PLAN=plan)
    assert applied(p) is False
    assert "it was made for script %s" % os.path.join(workdir, "use.py") in \
        p.stderr and "not for this program (script %s)" % os.path.join(
            workdir, "other.py") in p.stderr, p.stderr
    # The same script by another relative path is the same program.
    sub = os.path.join(workdir, "sub")
    os.mkdir(sub)
    assert applied(run([PY, "../use.py"], sub, COLDSTART_PLAN=plan)) is True
    p = run([PY, "parent.py"], workdir, COLDSTART_PLAN=plan)
    assert applied(p) is False  # the child's line is the last
    assert "not for this program (command" in p.stderr, p.stderr


def test_damaged_plans_and_archives_never_end_the_target(workdir):
    """A short deterministic run of the mutation harness (tests/fuzz/
    plan_mutate.py; `make fuzz` runs it longer): mutated plans and
    archives, each applied in a real interpreter, which must never end with
    an uncaught exception or a signal."""
    p = subprocess.run([sys.executable, FUZZ, "--runs", "120", "--seed", "7",
                        "--workdir", workdir], capture_output=True, text=True,
                       timeout=600, env=clean_env(()))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "crashes: 0" in p.stdout, p.stdout[-3000:]


def test_root_plan_applied_by_a_service_user_and_moved_with_its_archive(workdir):
    """Portable plans: a plan root made (in root's directories, readable by
    all) applies for the service user `nobody` at every start without a
    word (root-owned is trusted; the extension in root's cache, which
    nobody cannot read, is left out quietly), and a plan copied elsewhere
    with its archive beside it keeps using that archive."""
    _nobody()
    plan, data = _plan_with_ext(workdir)
    for p in (plan, plan + ".code"):
        assert os.stat(p).st_mode & 0o044 == 0o044, oct(os.stat(p).st_mode)
    e = env(COLDSTART_PLAN=plan)
    p = subprocess.run(["runuser", "-u", "nobody", "--", "env", "-i"] +
                       ["%s=%s" % kv for kv in e.items()] + [PY, "tool.py"],
                       cwd=workdir, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1])["applied"] is True
    assert p.stderr == "", p.stderr
    # Moved elsewhere (the recorded archive path is gone): the archive
    # beside the plan is used.
    moved = os.path.join(workdir, "image", "etc")
    os.makedirs(moved)
    shutil.copy(plan, moved)
    shutil.copy(plan + ".code", moved)
    os.unlink(plan + ".code")
    # A script that says whether the archive is used: its plan, moved the
    # same way.
    plan, data = _plan_with_ext(workdir, TOOL.replace(
        '"ext": bool(p and p._ext)', '"archive": bool(p and p._code_fd)'))
    shutil.copy(plan, moved)
    shutil.copy(plan + ".code", moved)
    os.unlink(plan + ".code")
    p = run([PY, "tool.py"], workdir,
            COLDSTART_PLAN=os.path.join(moved, os.path.basename(plan)))
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) == \
        {"applied": True, "archive": True}, p.stderr
    assert plan_lines(p.stderr) == [], p.stderr


FUNC = """
    import json
    from fdk import response
    import helper

    def handler(ctx, data=None):
        return response.Response(ctx, response_data=json.dumps(
            {"v": helper.value()}))
"""


def _damage(plan, how):
    """A copy of plan damaged one way."""
    p = json.loads(json.dumps(plan))
    names = [r[0] for r in p["index"]]
    i = names.index("helper")
    if how == "from":
        p["from"] = {n: [[1, 2]] for n in names}
    elif how == "row":
        p["index"][i][8] = "not a list"
    elif how == "name":
        p["index"][i][0] = ["helper"]
    elif how == "at":
        p["code"]["at"] = archive_entries(p["code"])
        p["code"]["at"][i] = [p["code"]["size"] - 2, 50, 0]
    elif how == "all":
        p["all"] = {"helper": 7}
    elif how == "opcodes":
        p["opcodes"] = [300, "x", None]
    elif how == "path":
        p["index"][i][2] = "relative/helper.py"
    elif how == "python":
        p["python"] = "3.11"
    elif how == "code":
        p["code"] = ["not", "an", "object"]
    return p


@pytest.mark.parametrize("how", ["from", "row", "name", "at", "all",
                                 "opcodes", "path", "python", "code"])
def test_coldstart_fdk_with_a_damaged_plan_answers_its_calls(workdir, how):
    """coldstart-fdk --plan with a plan damaged in one field answers every
    call as without a plan, with one warning."""
    from test_plan import _fdk_calls, plan_cmd
    write(os.path.join(workdir, "func.py"), FUNC)
    write(os.path.join(workdir, "helper.py"),
          "def value():\n    return 42\n")
    write(os.path.join(workdir, "req.json"), "{}")
    out = os.path.join(workdir, "p.json")
    p = plan_cmd("--python", PY, "--fn", "func.py", "--request", "req.json",
                 "-o", out, cwd=workdir)
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        plan = json.load(f)
    bad = os.path.join(workdir, "bad.json")
    with open(bad, "w") as f:
        json.dump(_damage(plan, how), f)
    shutil.copy(out + ".code", bad + ".code")
    res, err = _fdk_calls(workdir, ["--plan", bad], [b"{}", b"{}"])
    assert res == [{"v": 42}, {"v": 42}], err
    assert "Traceback" not in err, err
    assert len(plan_lines(err)) <= 1, err


def test_a_row_naming_a_file_outside_its_directory_is_not_answered(workdir):
    """Even a plan that passes the trust rules answers a module only with
    the file the path-based finder would find: textwrap's row pointed at a
    file elsewhere while its directory stays the standard library's is
    left to the normal finders (the standard library's textwrap runs)."""
    plan = record(workdir)
    with open(plan) as f:
        data = json.load(f)
    other = os.path.join(workdir, "other")
    os.mkdir(other)
    marker = os.path.join(other, "ran")
    fake = write(os.path.join(other, "textwrap.py"),
                 "open(%r, 'w').write('x')\ndef dedent(s):\n    return s\n"
                 % marker)
    i = [r[0] for r in data["index"]].index("textwrap")
    row = data["index"][i]
    st = os.stat(fake)
    stdlib = os.path.dirname(row[2])
    row[2], row[3], row[4], row[7] = fake, st.st_size, st.st_mtime_ns, stdlib
    data["code"]["at"] = archive_entries(data["code"])
    data["code"]["at"][i] = None
    with open(plan, "w") as f:
        json.dump(data, f)
    p = run([PY, "use.py"], workdir, COLDSTART_PLAN=plan)
    assert applied(p) is True, p.stderr
    assert not os.path.exists(marker), "the row's file ran"
    assert p.stdout.splitlines()[0] == "ok"


@pytest.mark.parametrize("search", [[], ["/tmp"]])
def test_a_package_row_s_search_cannot_move_its_submodules(workdir, search):
    """A package's __path__ is the directory of its __init__, as the
    path-based finder makes it, whatever the plan's search says (an empty
    one ended the program with an ImportError: found by plan_mutate)."""
    plan = record(workdir, text=USE.replace(
        "import json, sys, textwrap",
        "import json, sys, textwrap, email.parser"))
    write(os.path.join(workdir, "use.py"), USE.replace(
        "import json, sys, textwrap",
        "import json, sys, textwrap, email.parser\n"
        "    print(json.dumps(email.__path__))"))
    with open(plan) as f:
        data = json.load(f)
    i = [r[0] for r in data["index"]].index("email")
    assert data["index"][i][8] is not None
    data["index"][i][8] = search
    with open(plan, "w") as f:
        json.dump(data, f)
    p = run([PY, "use.py"], workdir, COLDSTART_PLAN=plan,
            COLDSTART_PLAN_PROGRAM="any")
    assert applied(p) is True, p.stderr
    assert json.loads(p.stdout.splitlines()[0]) == \
        [os.path.dirname(data["index"][i][2])]
