"""Every file coldstart writes is written whole or not at all.

Each writer (profile -o, report -o, every export format, compare -o and
--markdown, diff -o, --flamegraph and --markdown, check --markdown) is run
against /dev/full and against a tiny tmpfs filled to the last page: it must
exit 1 with "cannot write 'X': No space left on device", never abort, leave
the previous file as it was and no temporary beside it.  Links: a symbolic
link another user planted in a sticky, world-writable directory is refused
(the fs.protected_symlinks rule), the user's own link is followed and stays
a link.  The attacks run as the real user nobody.
"""
import gzip
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, FIXTURES, run_coldstart

PROFILE = os.path.join(FIXTURES, "profile", "py3.12.json")
NOBODY = 65534
PYC = DEBIAN_PYTHON + " -c pass"

# (name, argv with OUT where the output path goes); each writes at least a few KiB.
WRITERS = [
    ("profile-o", ["profile", "--python", DEBIAN_PYTHON, "--no-report", "-q", "-o", "OUT", "-c", "import json"]),
    ("report-o", ["report", "--no-report", PROFILE, "-o", "OUT"]),
    ("report-o-gz", ["report", "--no-report", PROFILE, "-o", "OUT.gz"]),
    ("report-html", ["report", "--no-report", PROFILE, "--html", "OUT"]),
    ("export-svg", ["export", PROFILE, "-f", "svg", "-o", "OUT"]),
    ("export-html", ["export", PROFILE, "-f", "html", "-o", "OUT"]),
    ("export-html-gz", ["export", PROFILE, "-f", "html", "-o", "OUT.gz"]),
    ("export-folded", ["export", PROFILE, "-f", "folded", "-o", "OUT"]),
    ("export-speedscope", ["export", PROFILE, "-f", "speedscope", "-o", "OUT"]),
    ("export-chrome", ["export", PROFILE, "-f", "chrome", "-o", "OUT"]),
    ("compare-o", ["compare", "-n", "1", "--warmup", "0", "-o", "OUT", PYC, PYC]),
    ("compare-markdown", ["compare", "-n", "1", "--warmup", "0", "--markdown", "OUT", PYC, PYC]),
    ("diff-o", ["diff", PROFILE, PROFILE, "-o", "OUT"]),
    ("diff-flamegraph", ["diff", PROFILE, PROFILE, "--flamegraph", "OUT"]),
    ("diff-markdown", ["diff", PROFILE, PROFILE, "--markdown", "OUT"]),
    ("check-markdown", ["check", PROFILE, "--budget", "total=100s", "--markdown", "OUT"]),
]
# These append (as to $GITHUB_STEP_SUMMARY) rather than replace.
APPENDERS = {"diff-markdown", "check-markdown"}


def _argv(argv, out):
    return [a.replace("OUT", out) for a in argv]


def _out_name(argv, out):
    return out + ".gz" if "OUT.gz" in argv else out


def _needs_root():
    if os.geteuid() != 0:
        pytest.skip("needs root: mounts a tmpfs and runs the attacker as the user nobody")


@pytest.mark.parametrize("name,argv", WRITERS, ids=[w[0] for w in WRITERS])
def test_writer_on_dev_full_fails_with_exit_1(name, argv):
    r = run_coldstart(*[a.replace("OUT.gz", "/dev/full").replace("OUT", "/dev/full") for a in argv])
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "cannot write '/dev/full': No space left on device" in r.stderr
    assert "double free" not in r.stderr and "Aborted" not in r.stderr


def test_compare_markdown_on_dev_full_does_not_abort():
    # The comparison could not be flushed: fclose was called twice (exit 134).
    r = run_coldstart("compare", "-n", "1", "--warmup", "0", "--markdown", "/dev/full", "true", "true")
    assert r.returncode == 1, r.stderr[-2000:]
    assert r.stderr.count("cannot write '/dev/full'") == 1


@pytest.fixture
def full_tmpfs():
    """A 64 KiB tmpfs, unmounted afterwards."""
    _needs_root()
    d = tempfile.mkdtemp(prefix="cs-full-")
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", d], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        os.rmdir(d)
        pytest.skip("cannot mount a tmpfs here: %s" % e)
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", d])
        os.rmdir(d)


def _fill(d):
    """Fills d to its last byte."""
    with open(os.path.join(d, "filler"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    # The last partial page too.
    with open(os.path.join(d, "filler2"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0")
        except OSError:
            pass


@pytest.mark.parametrize("name,argv", WRITERS, ids=[w[0] for w in WRITERS])
def test_writer_on_full_disk_keeps_the_previous_file(full_tmpfs, name, argv):
    out = _out_name(argv, os.path.join(full_tmpfs, "out"))
    # 4000 bytes: an append of more than 96 bytes fills the page, then fails part-way.
    previous = b"previous good output\n" + b"x" * (4000 - 21)
    with open(out, "wb") as f:
        f.write(previous)
    os.chmod(out, 0o640)
    _fill(full_tmpfs)
    before = sorted(os.listdir(full_tmpfs))
    r = run_coldstart(*_argv(argv, os.path.join(full_tmpfs, "out")))
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "No space left on device" in r.stderr, r.stderr[-2000:]
    with open(out, "rb") as f:
        assert f.read() == previous, "the previous file was damaged"
    assert sorted(os.listdir(full_tmpfs)) == before, "a temporary was left behind"
    assert os.stat(out).st_mode & 0o777 == 0o640


@pytest.mark.parametrize("name,argv", WRITERS, ids=[w[0] for w in WRITERS])
def test_writer_replaces_the_file_keeping_its_mode(tmp_path, name, argv):
    out = _out_name(argv, str(tmp_path / "out"))
    with open(out, "wb") as f:
        f.write(b"old\n")
    os.chmod(out, 0o600)
    r = run_coldstart(*_argv(argv, str(tmp_path / "out")))
    assert r.returncode in (0, 1) and "cannot write" not in r.stderr, r.stderr[-2000:]
    with open(out, "rb") as f:
        data = f.read()
    if name in APPENDERS:
        assert data.startswith(b"old\n") and len(data) > 4
    else:
        assert data != b"old\n" and len(data) > 4
    if out.endswith(".gz"):
        gzip.decompress(data)
    assert os.stat(out).st_mode & 0o777 == 0o600
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(out)]


def test_new_file_gets_the_umask_mode(tmp_path):
    out = tmp_path / "p.json"
    r = subprocess.run(["sh", "-c", 'umask 027 && exec "$0" "$@"', COLDSTART, "report", "--no-report",
                        PROFILE, "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert os.stat(out).st_mode & 0o777 == 0o640
    json.loads(out.read_text())


@pytest.fixture
def sticky_dir():
    """A world-writable sticky directory like /tmp, owned by root."""
    _needs_root()
    d = tempfile.mkdtemp(prefix="cs-sticky-", dir="/var/tmp")
    os.chmod(d, 0o1777)
    try:
        yield d
    finally:
        shutil.rmtree(d)


def _as_nobody(argv):
    return subprocess.run(argv, user=NOBODY, group=NOBODY, extra_groups=[], capture_output=True, text=True)


@pytest.mark.parametrize("argv", [
    ["export", PROFILE, "-f", "folded", "-o", "OUT"],
    ["report", "--no-report", PROFILE, "-o", "OUT"],
    ["check", PROFILE, "--budget", "total=100s", "--markdown", "OUT"],
    ["diff", PROFILE, PROFILE, "-o", "OUT"],
], ids=["export", "report", "check-markdown", "diff"])
def test_link_planted_by_another_user_in_a_sticky_dir_is_refused(sticky_dir, tmp_path, argv):
    victim = tmp_path / "victim"
    victim.write_text("root's precious file\n")
    link = os.path.join(sticky_dir, "out")
    r = _as_nobody(["ln", "-s", str(victim), link])
    assert r.returncode == 0, r.stderr
    assert os.lstat(link).st_uid == NOBODY
    r = run_coldstart(*_argv(argv, link))
    assert r.returncode in (1, 2), (r.returncode, r.stderr)
    assert "is a symbolic link owned by uid %d in the shared directory" % NOBODY in r.stderr, r.stderr
    assert victim.read_text() == "root's precious file\n"
    assert os.path.islink(link)
    assert sorted(os.listdir(sticky_dir)) == ["out"]


def test_own_link_is_followed_and_stays_a_link(sticky_dir, tmp_path):
    target = tmp_path / "real.folded"
    target.write_text("old\n")
    link = os.path.join(sticky_dir, "mine")
    os.symlink(os.path.relpath(str(target), sticky_dir), link)
    r = run_coldstart("export", PROFILE, "-f", "folded", "-o", link)
    assert r.returncode == 0, r.stderr
    assert os.path.islink(link)
    assert target.read_text() != "old\n" and ";" in target.read_text()
    assert sorted(os.listdir(tmp_path)) == ["real.folded"]


def test_nobody_cannot_redirect_roots_output_into_a_file(sticky_dir, tmp_path):
    # The attacker's link points at a name in a directory only root can write.
    (tmp_path / "etc").mkdir()
    victim = tmp_path / "etc" / "config"
    victim.write_text("do not touch\n")
    link = os.path.join(sticky_dir, "profile.json")
    assert _as_nobody(["ln", "-s", str(victim), link]).returncode == 0
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--no-report", "-q", "-o", link, "-c", "pass")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "symbolic link owned by uid %d" % NOBODY in r.stderr
    assert victim.read_text() == "do not touch\n"


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1"])
def test_dev_stdout_is_written_in_place(tmp_path, name):
    # A link in /proc names an open descriptor: a pipe, or a file the shell
    # opened with >> that must keep what it held.
    log = tmp_path / "app.log"
    log.write_text("kept\n")
    r = subprocess.run(["sh", "-c", '"$0" export "$1" -f folded -o "$2" >> "$3"', COLDSTART, PROFILE, name,
                        str(log)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = log.read_text()
    assert text.startswith("kept\nprocess ") and text.count("kept") == 1
    assert sorted(os.listdir(tmp_path)) == ["app.log"]
    r = subprocess.run(["sh", "-c", '"$0" report --no-report "$1" -o "$2" | cat', COLDSTART, PROFILE, name],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["format"] == "coldstart-profile"


def test_file_planted_by_another_user_in_a_sticky_dir_is_not_replaced(sticky_dir):
    # Replaced by rename, root's output would have gone to a file nobody owns.
    planted = os.path.join(sticky_dir, "p.json")
    assert _as_nobody(["sh", "-c", "echo planted > %s" % planted]).returncode == 0
    r = run_coldstart("report", "--no-report", PROFILE, "-o", planted)
    assert r.returncode == 1, r.stderr
    assert "'%s' belongs to uid %d in the shared directory" % (planted, NOBODY) in r.stderr
    with open(planted) as f:
        assert f.read() == "planted\n"
    assert sorted(os.listdir(sticky_dir)) == ["p.json"]


def test_signal_while_the_temporary_exists_removes_it(tmp_path):
    # gdb stops coldstart at the rename that would finish the write, when the
    # temporary is complete beside the old file; SIGTERM then must remove it
    # and end coldstart by that signal, the old file as it was.
    gdb = shutil.which("gdb")
    if not gdb:
        pytest.skip("gdb is not installed (tests/install-deps.sh installs it): it stops coldstart mid-write")
    out = tmp_path / "out.folded"
    out.write_text("old\n")
    r = subprocess.run([gdb, "-q", "-batch", "-nx", "-ex", "set debuginfod enabled off",
                        "-ex", "handle SIGTERM nostop noprint pass", "-ex", "break rename", "-ex", "run",
                        "-ex", "shell ls -a %s" % tmp_path, "-ex", "signal SIGTERM",
                        "--args", COLDSTART, "export", PROFILE, "-f", "folded", "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert ".out.folded." in r.stdout, r.stdout + r.stderr  # the temporary, seen at the rename
    assert "terminated with signal SIGTERM" in r.stdout, r.stdout
    assert out.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["out.folded"]
