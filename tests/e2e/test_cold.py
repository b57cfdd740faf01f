"""--cold: before each run the files the runs before read are dropped from
the page cache, checked with mincore, and each run says whether it was cold;
a measured run that read files not evicted before it is made again.  The
proof is the target's own view: at start it asks the kernel (util-linux
fincore, which uses mincore) how much of a module of its own is cached, before
importing it.  Eviction needs no privilege (POSIX_FADV_DONTNEED on files this
user can open), so nothing here needs root; fincore is the one requirement."""
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, run_coldstart


def make_app(tmp_path):
    """A module of 2 MB that only this test reads, and a target that reports its residency then imports it."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "bigmod.py").write_text("DATA = %r\n" % ("x" * (2 << 20)))
    main = app / "main.py"
    main.write_text(
        "import subprocess, sys, os\n"
        "here = os.path.dirname(os.path.abspath(__file__))\n"
        "out = subprocess.run(['fincore', '-b', '-n', '-o', 'RES', os.path.join(here, 'bigmod.py')],\n"
        "                     capture_output=True, text=True).stdout.split()\n"
        "print('RESIDENT', out[0] if out else '?', flush=True)\n"
        "import bigmod\n")
    return main


def resident_seen(stdout):
    return [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("RESIDENT ")]


@pytest.fixture
def fincore():
    if not shutil.which("fincore"):
        pytest.skip("util-linux fincore not installed: the target cannot look at its own page cache")


def test_cold_runs_start_with_the_modules_evicted(tmp_path, fincore):
    main = make_app(tmp_path)
    out = tmp_path / "p.json"
    r = run_coldstart("profile", "--cold", "-n", "3", "--python", DEBIAN_PYTHON, "--json-fd", "1", main,
                      cwd=tmp_path)
    # --json-fd 1 is --json: the target's stdout goes to stderr.
    assert r.returncode == 0, r.stderr
    seen = resident_seen(r.stderr)
    profile = json.loads(r.stdout)
    runs = profile["runs"]
    # One warm-up run first learns which files to evict; the measured runs start cold.
    assert [x["warmup"] for x in runs] == [True, False, False, False]
    assert len(seen) == 4
    assert seen[1:] == [0, 0, 0], seen
    # The verdict follows the mincore check, and a run that was not cold says so.  Which runs are cold is
    # not the test's to decide: on a busy machine other Pythons read the stdlib's bytecode again within
    # milliseconds of the eviction (docs/cold.md); the module only this test reads is the proof above.
    warnings = [w["msg"] for w in profile["warnings"]]
    for k, x in enumerate(runs[1:], start=2):
        cold = x["cold"]
        assert cold["module_bytes"] >= 2 << 20 and not cold["partial"], cold
        assert cold["took"] == (cold["module_resident"] * 100 <= cold["module_bytes"] * 5)
        said = any(w.startswith("run %d was not cold: " % k) for w in warnings)
        assert said == (not cold["took"]), (cold, warnings)
    # Nothing known yet but the interpreter and the script: not a cold run, and said so.
    assert runs[0]["cold"]["partial"] and not runs[0]["cold"]["took"]
    assert runs[0]["cold"]["module_bytes"] < 2 << 20
    # The report says so, for the run it shows.
    shown = run_coldstart("report", "-", input=r.stdout)
    assert re.search(r"cold start      (yes|NO, the eviction did not take): \d+ files", shown.stdout)


def test_warm_runs_find_the_module_cached(tmp_path, fincore):
    main = make_app(tmp_path)
    r = run_coldstart("profile", "-n", "2", "--python", DEBIAN_PYTHON, "--no-report", "-o", tmp_path / "p.json",
                      main, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    seen = resident_seen(r.stdout)
    # Without --cold the second run finds what the first read.
    assert len(seen) == 2 and seen[1] > 0, seen
    runs = json.loads((tmp_path / "p.json").read_text())["runs"]
    assert all(x["cold"] is None for x in runs)
    r = run_coldstart("report", tmp_path / "p.json")
    assert "cold start" not in r.stdout


def test_cold_compare(tmp_path, fincore):
    main = make_app(tmp_path)
    r = run_coldstart("compare", "--cold", "-n", "2", "--warmup", "0", "--json", "--show-output",
                      "--python", DEBIAN_PYTHON, "--limits", "none", "--limits", "none", main, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cmp = json.loads(r.stdout)
    assert cmp["cold"] is True and cmp["warmup"] == 1
    for v in cmp["variants"]:
        # Each measured run says whether it was cold (True or False, never unknown).
        assert [type(x["cold"]) for x in v["runs"] if not x["warmup"]] == [bool, bool]
    # Every measured run of either variant found the module evicted.
    seen = resident_seen(r.stderr)
    assert len(seen) == 6
    # The warm-up round learns the files; every measured run found the module evicted.
    assert seen[2:] == [0, 0, 0, 0], seen


# What a run reads that the runs before it did not: every run counted as cold must start with it evicted too.
# The targets below read a private file of 2 MB (only this test reads it, so no other program on the machine
# warms it), cached by the test before the session, and print how much of it the page cache held when they
# started, as the kernel says (fincore, util-linux), before reading it.

LATE_MAIN = (
    "import os, subprocess\n"
    "here = os.path.dirname(os.path.abspath(__file__))\n"
    "def resident(path):\n"
    "    out = subprocess.run(['fincore', '-b', '-n', '-o', 'RES', path], capture_output=True, text=True)\n"
    "    return out.stdout.split()[0] if out.stdout.split() else '?'\n"
    "marker = os.path.join(here, 'ran-once')\n"
    "if os.path.exists(marker):\n"
    "    print('RESIDENT', resident(os.path.join(here, 'late.py')), flush=True)\n"
    "    import late\n"
    "else:\n"
    "    open(marker, 'w').close()\n"
    "    print('FIRST', flush=True)\n")


def cache(path):
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def cold_runs(profile):
    return [x for x in profile["runs"] if not x["warmup"]]


def test_a_module_first_read_by_a_measured_run_is_evicted_before_a_cold_run(tmp_path, fincore):
    """The learning run does not import `late` (the target imports it from its second start on): the first
    measured run reads it from the page cache.  That run is not cold: it is kept as a warm-up and made again,
    so that each of the runs asked for starts with `late` evicted."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "late.py").write_text("DATA = %r\n" % ("y" * (2 << 20)))
    (app / "main.py").write_text(LATE_MAIN)
    cache(app / "late.py")
    r = run_coldstart("profile", "--cold", "-n", "3", "--python", DEBIAN_PYTHON, "--json-fd", "1", app / "main.py",
                      cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    profile = json.loads(r.stdout)
    runs = profile["runs"]
    lines = [line.split() for line in r.stderr.splitlines() if line.startswith(("RESIDENT ", "FIRST"))]
    assert len(lines) == len(runs), (lines, len(runs))
    seen = [int(x[1]) if x[0] == "RESIDENT" else None for x in lines]
    measured = [k for k, x in enumerate(runs) if not x["warmup"]]
    # The runs asked for are made, and every one of them started with the module evicted.
    assert len(measured) == 3, [(x["warmup"], x["cold"]) for x in runs]
    assert [seen[k] for k in measured] == [0, 0, 0], (seen, [(x["warmup"], x["cold"]) for x in runs])
    # The run that found it cached is not counted, and the profile says why.
    found_cached = [k for k, v in enumerate(seen) if v]
    assert found_cached == [1], seen
    late = runs[1]
    assert late["warmup"] and late["cold"]["unevicted"] >= 1 and not late["cold"]["took"], late["cold"]
    warnings = [w["msg"] for w in profile["warnings"]]
    assert any(w.startswith("measured run 1 read ") and "made again" in w for w in warnings), warnings
    assert any(w.startswith("run 2 was not cold: NO, it read ") and "late.py" in w for w in warnings), warnings
    # A run counted as cold read nothing that was not evicted before it.
    assert all(x["cold"]["unevicted"] == 0 for x in cold_runs(profile))


def test_the_module_run_with_dash_m_is_evicted(tmp_path, fincore):
    """`-m app` runs app/__main__.py through runpy, without an import the tracer or importtime sees: the file
    is still one the target reads at every start.  The package's __init__ (imported first) reports it."""
    pkg = tmp_path / "app"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import os, subprocess\n"
        "main = os.path.join(os.path.dirname(os.path.abspath(__file__)), '__main__.py')\n"
        "out = subprocess.run(['fincore', '-b', '-n', '-o', 'RES', main], capture_output=True, text=True)\n"
        "print('RESIDENT', out.stdout.split()[0] if out.stdout.split() else '?', flush=True)\n")
    (pkg / "__main__.py").write_text("DATA = %r\n" % ("z" * (2 << 20)))
    cache(pkg / "__main__.py")
    r = run_coldstart("profile", "--cold", "-n", "2", "--python", DEBIAN_PYTHON, "--json-fd", "1", "-m", "app",
                      cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    profile = json.loads(r.stdout)
    seen = resident_seen(r.stderr)
    assert len(seen) == len(profile["runs"]) == 3, (seen, profile["runs"])
    # The learning run found it cached (the test read it); the measured runs found it evicted.
    assert seen[0] > 0 and seen[1:] == [0, 0], seen


def private_interpreter(root):
    """Debian's python3.11 under a prefix of its own: a copy of the binary and a standard library of symlinks but
    for sysconfig, whose source and bytecode are copies only this test's processes read."""
    lib = root / "lib" / "python3.11"
    (lib / "__pycache__").mkdir(parents=True)
    (root / "bin").mkdir()
    shutil.copy2("/usr/bin/python3.11", root / "bin" / "python3")
    own = {"sysconfig.py", "sysconfig.cpython-311.pyc"}
    for sub in ("", "__pycache__"):
        for name in os.listdir(os.path.join("/usr/lib/python3.11", sub)):
            src = os.path.join("/usr/lib/python3.11", sub, name)
            if name == "__pycache__" and not sub:
                continue
            if name in own:
                shutil.copy2(src, lib / sub / name)
            else:
                os.symlink(src, lib / sub / name)
    return root / "bin" / "python3", lib / "__pycache__" / "sysconfig.cpython-311.pyc"


def test_nothing_of_coldstart_reads_the_files_between_the_eviction_and_the_exec(tmp_path, fincore):
    """Before each run coldstart asks the interpreter about itself (`python -S -E -c 'import sys, sysconfig'`,
    for the tracer's build): that reads sysconfig's bytecode.  When the target imports sysconfig too, the file
    is in the eviction set, and it must be evicted after that question, not before it."""
    if not os.path.exists("/usr/bin/python3.11") or not os.path.isdir("/usr/lib/python3.11/__pycache__"):
        pytest.skip("needs Debian's python3.11 with its bytecode in /usr/lib/python3.11/__pycache__")
    python, pyc = private_interpreter(tmp_path / "prefix")
    main = tmp_path / "main.py"
    main.write_text(
        "import subprocess\n"
        "out = subprocess.run(['fincore', '-b', '-n', '-o', 'RES', %r], capture_output=True, text=True).stdout\n"
        "print('RESIDENT', out.split()[0] if out.split() else '?', flush=True)\n"
        "import sysconfig\n"
        "assert sysconfig.__cached__ == %r, sysconfig.__cached__\n" % (str(pyc), str(pyc)))
    r = run_coldstart("profile", "--cold", "-n", "2", "--python", python, "--json-fd", "1", main, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    profile = json.loads(r.stdout)
    seen = resident_seen(r.stderr)
    assert len(seen) == len(profile["runs"]) == 3, (seen, r.stderr[-2000:])
    # The warm-up learns sysconfig; each measured run starts with its bytecode evicted.
    assert seen[1:] == [0, 0], seen


def test_compare_makes_a_cold_run_that_read_unevicted_files_again(tmp_path, fincore):
    """compare --cold: as profile, a measured run that read a module not evicted before it is kept as a
    warm-up and made again, so each variant's measured runs start with everything they read evicted."""
    app = tmp_path / "app"
    app.mkdir()
    for tag in "AB":
        (app / ("late_%s.py" % tag)).write_text("DATA = %r\n" % (tag * (2 << 20)))
        cache(app / ("late_%s.py" % tag))
    (app / "main.py").write_text(
        "import importlib, os, subprocess, sys\n"
        "here, tag = os.path.dirname(os.path.abspath(__file__)), sys.argv[1]\n"
        "marker = os.path.join(here, 'ran-once-' + tag)\n"
        "if os.path.exists(marker):\n"
        "    late = os.path.join(here, 'late_%s.py' % tag)\n"
        "    out = subprocess.run(['fincore', '-b', '-n', '-o', 'RES', late], capture_output=True, text=True)\n"
        "    print('RESIDENT', tag, out.stdout.split()[0], flush=True)\n"
        "    importlib.import_module('late_' + tag)\n"
        "else:\n"
        "    open(marker, 'w').close()\n"
        "    print('RESIDENT', tag, '-', flush=True)\n")
    r = run_coldstart("compare", "--cold", "-n", "2", "--warmup", "0", "--json", "--show-output",
                      "%s %s A" % (DEBIAN_PYTHON, app / "main.py"), "%s %s B" % (DEBIAN_PYTHON, app / "main.py"),
                      cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    cmp = json.loads(r.stdout)
    lines = [line.split() for line in r.stderr.splitlines() if line.startswith("RESIDENT ")]
    for tag, v in zip("AB", cmp["variants"]):
        seen = [x[2] for x in lines if x[1] == tag]
        assert len(seen) == len(v["runs"]), (seen, v["runs"])
        measured = [s for s, x in zip(seen, v["runs"]) if not x["warmup"]]
        # Two measured runs, both cold and both started with the late module evicted.
        assert measured == ["0", "0"], (seen, v["runs"])
        # The learning run, then the run that found late_X cached, kept as a warm-up.
        assert [x["warmup"] for x in v["runs"]][:2] == [True, True] and seen[1] != "0", (seen, v["runs"])


def test_a_module_another_process_maps_is_not_called_evicted(tmp_path):
    """DONTNEED cannot drop the pages of a file another process maps: a module kept mapped (here by a process
    the test starts, as another running Python maps an extension) stays cached, and the runs that read it are
    not cold.  They say so; the file is not set apart as the interpreter and libc are."""
    app = tmp_path / "app"
    app.mkdir()
    big = app / "bigmod.py"
    big.write_text("DATA = %r\n" % ("m" * (2 << 20)))
    (app / "main.py").write_text("import bigmod\n")
    holder = subprocess.Popen(
        [DEBIAN_PYTHON, "-c",
         "import mmap, sys\n"
         "f = open(sys.argv[1], 'rb')\n"
         "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
         "sum(m[i] for i in range(0, len(m), 4096))\n"
         "print('mapped', flush=True)\n"
         "sys.stdin.read()\n", str(big)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "mapped\n"
        r = run_coldstart("profile", "--cold", "-n", "2", "--python", DEBIAN_PYTHON, "--json-fd", "1",
                          app / "main.py", cwd=tmp_path)
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    assert r.returncode == 0, r.stderr
    profile = json.loads(r.stdout)
    warnings = [w["msg"] for w in profile["warnings"]]
    for k, x in enumerate(profile["runs"][1:], start=2):
        cold = x["cold"]
        # The mapped module counts with the modules, and it is still cached: not cold, and said so.
        assert cold["module_resident"] >= 2 << 20 and not cold["took"], cold
        assert any(w.startswith("run %d was not cold: NO, the eviction did not take" % k) for w in warnings), \
            warnings


def test_data_files_the_target_reads_are_evicted(tmp_path, fincore):
    """A start reads data besides modules (time zones, certificates, configuration): the tracer records the
    files a process opens for reading, in an import or not, and they are evicted with the modules."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "table.dat").write_bytes(b"t" * (2 << 20))
    (app / "conf.dat").write_bytes(b"c" * (1 << 20))
    (app / "loader.py").write_text(
        "import os\n"
        "with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'table.dat'), 'rb') as f:\n"
        "    TABLE = f.read()\n")
    (app / "main.py").write_text(
        "import os, subprocess\n"
        "here = os.path.dirname(os.path.abspath(__file__))\n"
        "def resident(name):\n"
        "    out = subprocess.run(['fincore', '-b', '-n', '-o', 'RES', os.path.join(here, name)],\n"
        "                         capture_output=True, text=True).stdout.split()\n"
        "    return out[0] if out else '?'\n"
        "print('RESIDENT', resident('table.dat'), resident('conf.dat'), flush=True)\n"
        "import loader\n"
        "os.chdir(here)\n"
        "with open('conf.dat', 'rb') as f:\n"
        "    f.read()\n")
    cache(app / "table.dat")
    cache(app / "conf.dat")
    r = run_coldstart("profile", "--cold", "-n", "2", "--python", DEBIAN_PYTHON, "--json-fd", "1", app / "main.py",
                      cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    profile = json.loads(r.stdout)
    seen = [line.split()[1:] for line in r.stderr.splitlines() if line.startswith("RESIDENT ")]
    assert len(seen) == len(profile["runs"]) == 3, (seen, profile["runs"])
    # Read inside an import (table.dat) and at the top level by a relative path (conf.dat): both evicted.
    assert seen[1:] == [["0", "0"], ["0", "0"]], seen
    assert all(x["cold"]["unevicted"] == 0 for x in cold_runs(profile))
