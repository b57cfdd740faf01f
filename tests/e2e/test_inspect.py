"""End-to-end tests of `coldstart inspect`: facts about real Debian extensions
(numpy's _multiarray_umath, _ssl, _ctypes) checked against readelf and ldd,
interpreter facts for every interpreter found, hostile files, exit codes, and
the native section of a real numpy profile."""
import glob
import json
import os
import re
import subprocess

import pytest

from conftest import ALL_PYTHONS, DEBIAN_PYTHON, FIXTURES, ROOT, run_coldstart

ELF = os.path.join(FIXTURES, "elf")
MODULES = ["numpy.core._multiarray_umath", "_ssl", "_ctypes"]


def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def module_file(module, python=DEBIAN_PYTHON):
    out = subprocess.run([python, "-c", "import %s as m; print(m.__file__)" % module],
                         capture_output=True, text=True)
    if out.returncode:
        pytest.fail("%s cannot import %s (install python3-numpy): %s" % (python, module, out.stderr))
    return out.stdout.strip()


def readelf_facts(path):
    """What readelf says: NEEDED in order, relocation and symbol counts, build-id, segments."""
    dyn = sh("readelf", "-dW", path)
    rel = sh("readelf", "-rW", path)
    syms = sh("readelf", "-W", "--dyn-syms", path)
    notes = sh("readelf", "-nW", path)
    segs = sh("readelf", "-lW", path)
    loads = [l.split() for l in segs.splitlines() if l.strip().startswith("LOAD ")]
    return {
        "needed": re.findall(r"Shared library: \[([^\]]+)\]", dyn),
        "relocs": sum(int(n) for n in re.findall(r"^Relocation section .* contains (\d+) entr", rel, re.M)),
        "plt": sum(int(n) for n in re.findall(r"^Relocation section '\.rela?\.plt' .* contains (\d+) entr", rel, re.M)),
        "dynsyms": int(re.search(r"Symbol table '\.dynsym' contains (\d+) entries", syms).group(1)),
        "build_id": re.search(r"Build ID: ([0-9a-f]+)", notes).group(1),
        "load_segments": len(loads),
        "load_filesz": sum(int(l[4], 16) for l in loads),
        "load_memsz": sum(int(l[5], 16) for l in loads),
        "soname": (re.findall(r"Library soname: \[([^\]]+)\]", dyn) or [None])[0],
    }


def assert_matches_readelf(facts, path):
    want = readelf_facts(path)
    assert facts["needed"] == want["needed"]
    assert facts["relocs"] == want["relocs"]
    assert facts["plt_relocs"] == want["plt"]
    assert facts["dynsyms"] == want["dynsyms"]
    assert facts["build_id"] == want["build_id"]
    assert facts["load_segments"] == want["load_segments"]
    assert facts["load_filesz"] == want["load_filesz"]
    assert facts["load_memsz"] == want["load_memsz"]
    assert facts["soname"] == want["soname"]
    assert facts["file_size"] == os.path.getsize(path)


def ldd_map(path):
    out = subprocess.run(["ldd", path], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}).stdout
    found = dict(re.findall(r"^\s*(\S+) => (\S+)", out, re.M))
    # The loader itself is listed by path only: "/lib64/ld-linux-x86-64.so.2 (0x...)".
    for path in re.findall(r"^\s*(/\S+) \(0x", out, re.M):
        found.setdefault(os.path.basename(path), path)
    return found


def inspect_json(coldstart, *args):
    r = coldstart("inspect", "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_help(coldstart):
    r = coldstart("inspect", "--help")
    assert r.returncode == 0
    assert r.stdout.startswith("usage: coldstart inspect")
    assert "--python PATH" in r.stdout and "--profile FILE" in r.stdout


@pytest.mark.parametrize("args,message", [
    (["--bogus"], "unknown option '--bogus'"),
    (["--python"], "option '--python' needs a value (PATH)"),
    (["--python="], "--python needs a path"),
    (["--no-python", "_ssl"], "module names need an interpreter"),
    (["--python", DEBIAN_PYTHON, "--no-python", "x.so"], "cannot be used together"),
    (["--profile", "p.json", "_ssl"], "--profile takes no MODULE"),
])
def test_usage_errors(coldstart, args, message):
    r = coldstart("inspect", *args)
    assert r.returncode == 2
    assert message in r.stderr
    assert "Try 'coldstart inspect --help'." in r.stderr
    assert r.stdout == ""


def test_real_extensions_match_readelf(coldstart):
    doc = inspect_json(coldstart, "--python", DEBIAN_PYTHON, *MODULES)
    assert [o["target"] for o in doc["objects"]] == MODULES
    for obj in doc["objects"]:
        path = module_file(obj["module"])
        assert obj["error"] is None
        assert obj["facts"]["path"] == path
        assert_matches_readelf(obj["facts"], path)
        # Debian strips extensions and ships the debug info in -dbg packages.
        assert obj["facts"]["symtab"] == 0
        assert obj["facts"]["debuglink"] is True
        # Every library is where the loader (ldd) finds it, with readelf's numbers.
        ldd = ldd_map(path)
        needs = obj["needs"]
        assert needs[0]["how"] == "root"
        for lib in needs[1:]:
            assert lib["path"], lib
            assert os.path.realpath(lib["path"]) == os.path.realpath(ldd[lib["name"]])
            if not lib["preloaded"]:
                assert_matches_readelf(lib["facts"], lib["path"])
        names = {l["name"]: l for l in needs}
        # libc comes with the interpreter: already loaded, not charged again.
        assert names["libc.so.6"]["preloaded"] is True


def test_numpy_names_its_blas(coldstart):
    doc = inspect_json(coldstart, "--python", DEBIAN_PYTHON, "numpy.core._multiarray_umath")
    obj = doc["objects"][0]
    new = [l for l in obj["needs"][1:] if not l["preloaded"]]
    assert any(l["name"].startswith("libblas") or "openblas" in l["name"] for l in new)
    totals = obj["needs_totals"]
    assert totals["objects"] == len(new)
    assert totals["relocs"] == sum(l["facts"]["relocs"] for l in new)
    assert totals["file_bytes"] == sum(os.path.getsize(l["path"]) for l in new)


def test_text_output(coldstart):
    r = coldstart("inspect", "--python", DEBIAN_PYTHON, "_ssl")
    assert r.returncode == 0, r.stderr
    path = module_file("_ssl")
    want = readelf_facts(path)
    assert r.stdout.startswith("interpreter /usr/bin/python3")
    # The summary table, then the details.
    assert re.search(r"^_ssl +\S+ \S+ +\S+ \S+ +%d  2: " % want["relocs"], r.stdout, re.M), r.stdout
    assert "\n_ssl\n  file      %s\n" % path in r.stdout
    assert "  relocs    %d dynamic" % want["relocs"] in r.stdout
    assert "  build-id  %s\n" % want["build_id"] in r.stdout
    assert re.search(r"^    libssl\.so\.3  /\S+libssl\.so\.3  \[ld\.so\.cache\]", r.stdout, re.M)
    assert re.search(r"^    libc\.so\.6  \(already loaded: ", r.stdout, re.M)


def interpreters():
    return [p for p, v in ALL_PYTHONS if v]


@pytest.mark.parametrize("py", interpreters())
def test_interpreter_facts(coldstart, py):
    real = os.path.realpath(py)
    version = subprocess.run([py, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             capture_output=True, text=True).stdout.strip()
    doc = inspect_json(coldstart, "--python", py)
    it = doc["interpreter"]
    assert it["exe"] == real
    assert it["version"] == version
    needed = readelf_facts(real)["needed"]
    libpython = [n for n in needed if n.startswith("libpython")]
    assert it["shared"] == bool(libpython)
    if libpython:
        assert os.path.basename(it["libpython"]).startswith(libpython[0])
        assert it["static"] is False
    else:
        assert it["static"] is True
    assert doc["objects"] == []


@pytest.mark.parametrize("py", [p for p, v in ALL_PYTHONS if v and v >= (3, 0)])
def test_ctypes_on_every_interpreter(coldstart, py):
    path = module_file("_ctypes", py)
    if not path.endswith(".so"):
        pytest.skip("%s has _ctypes built in (%s): no file to inspect" % (py, path))
    doc = inspect_json(coldstart, "--python", py, "_ctypes")
    obj = doc["objects"][0]
    assert obj["facts"]["path"] == path
    assert_matches_readelf(obj["facts"], path)
    ldd = ldd_map(path)
    for lib in obj["needs"][1:]:
        assert os.path.realpath(lib["path"]) == os.path.realpath(ldd[lib["name"]])


@pytest.mark.parametrize("target,message", [
    ("json", "'json' is not a native extension"),
    ("sys", "'sys' is built into the interpreter"),
    ("no_such_module_xyz", "no module named 'no_such_module_xyz'"),
    ("/nonexistent/x.so", "cannot read '/nonexistent/x.so': No such file or directory"),
    (os.path.join(ELF, "hostile", "text.so"), "not an ELF file"),
])
def test_bad_targets(coldstart, target, message):
    r = coldstart("inspect", "--python", DEBIAN_PYTHON, target)
    assert r.returncode == 1
    assert message in r.stderr
    assert "coldstart: error: " in r.stderr


def test_bad_target_does_not_hide_good_ones(coldstart):
    r = coldstart("inspect", "--json", "--python", DEBIAN_PYTHON, "no_such_module_xyz", "_ctypes")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["objects"][0]["error"]
    assert doc["objects"][1]["facts"]["path"] == module_file("_ctypes")


def test_bad_interpreter(coldstart):
    r = coldstart("inspect", "--python", "/nonexistent/python3", "_ssl")
    assert r.returncode == 1
    assert "/nonexistent/python3" in r.stderr
    assert r.stdout == ""


def test_directory_and_other_files_say_what_they_are(coldstart, tmp_path):
    # A FILE argument is not a module: the message named '(null)' before.
    (tmp_path / "p.json").write_text("{}" * 100)
    for arg, message in ((tmp_path, "cannot read '%s': a directory" % tmp_path),
                         (tmp_path / "p.json", "cannot read '%s': not an ELF file" % (tmp_path / "p.json"))):
        r = coldstart("inspect", "--python", DEBIAN_PYTHON, str(arg))
        assert r.returncode == 1
        assert message in r.stderr and "(null)" not in r.stderr, r.stderr


def test_fifo_does_not_hang(coldstart, tmp_path):
    fifo = tmp_path / "pipe.so"
    os.mkfifo(fifo)
    r = coldstart("inspect", "--no-python", str(fifo), timeout=30)
    assert r.returncode == 1
    assert "not a regular file" in r.stderr


HOSTILE = sorted(glob.glob(os.path.join(ELF, "hostile", "*")))


@pytest.mark.parametrize("path", HOSTILE, ids=os.path.basename)
def test_hostile_files(coldstart, path):
    r = coldstart("inspect", "--no-python", path, timeout=30)
    assert r.returncode in (0, 1), r.stderr
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr
    if r.returncode == 1:
        assert re.match(r"coldstart: error: cannot read '.*': [a-z]", r.stderr), r.stderr
    else:
        assert r.stdout.startswith("object ")
        assert "\n%s\n  file      " % path in r.stdout
    j = coldstart("inspect", "--json", "--no-python", path, timeout=30)
    assert j.returncode == r.returncode
    json.loads(j.stdout)


def test_needed_loop(coldstart):
    doc = inspect_json(coldstart, "--no-python", os.path.join(ELF, "loop", "liba.so"))
    obj = doc["objects"][0]
    assert [l["name"] for l in obj["needs"][1:]] == ["libb.so"]
    assert any("a loop" in w for w in obj["warnings"])


def test_missing_library(coldstart):
    r = coldstart("inspect", "--no-python", os.path.join(ELF, "missing.so"))
    assert r.returncode == 0
    assert "libnothere.9  NOT FOUND" in r.stdout
    assert "1 NOT FOUND" in r.stdout


def test_ld_library_path(coldstart):
    lib = os.path.join(ELF, "rpath", "lib", "libmid.so")
    r = coldstart("inspect", "--json", "--no-python", lib,
                  env={"LD_LIBRARY_PATH": os.path.join(ELF, "search", "good")})
    needs = json.loads(r.stdout)["objects"][0]["needs"]
    assert needs[1]["how"] == "LD_LIBRARY_PATH"
    assert needs[1]["path"].endswith("/search/good/libtiny.so.1")


def test_profile_native_section(coldstart, tmp_path):
    """The issue's test: a numpy profile names the libraries behind native load time."""
    out = tmp_path / "np.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "-q", "--no-report", "-o", out,
                  "-c", "import numpy")
    assert r.returncode == 0, r.stderr
    prof = json.loads(out.read_text())
    at = prof["timing_fields"].index("file")
    files = [t[at] for t in prof["runs"][0]["processes"][0].get("timing") or []]
    if not any(f and f.endswith(".so") for f in files):
        pytest.fail("the profile records no extension files (is the tracer built?): %s" % r.stderr)
    r = coldstart("inspect", "--json", "--profile", out)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    exts = {e["module"]: e for e in doc["native"]["extensions"]}
    umath = exts["numpy.core._multiarray_umath"]
    assert umath["load_us"] >= 0
    libs = [l for l in umath["tree"][1:] if not l["preloaded"]]
    assert any("blas" in l["name"] for l in libs)
    for l in libs:
        assert_matches_readelf(l["facts"], l["path"])
    text = coldstart("inspect", "--profile", out).stdout
    assert re.search(r"^\s+\S+ (us|ms)  numpy\.core\._multiarray_umath: .* relocs; needs libblas\.so\.3 \(",
                     text, re.M), text
    # Once the report shows the section by itself (report_extra_section), it must agree.
    report = coldstart("report", out).stdout
    if "Native extensions" in report:
        assert "numpy.core._multiarray_umath" in report


def native_section(report):
    """The "Native extensions" section of a text report, up to the next blank line."""
    m = re.search(r"^Native extensions\n(?:.+\n)*", report, re.M)
    return m.group(0) if m else None


def test_saved_report_keeps_native_section(coldstart, tmp_path):
    """`report` of a saved profile shows the native section the live report showed, interpreter line included."""
    out = tmp_path / "ssl.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "-q", "--color", "never", "-o", out,
                  "-c", "import ssl, _ctypes")
    assert r.returncode == 0, r.stderr
    live = native_section(r.stdout)
    assert live, r.stdout
    assert re.search(r"^  interpreter /\S+: Python 3\.11\.\d+, libpython static$", live, re.M), live
    assert re.search(r"^\s+\S+ (us|ms)  _ssl: .* relocs; needs libssl\.so\.3 \(", live, re.M), live
    saved = coldstart("report", "--color", "never", out)
    assert saved.returncode == 0, saved.stderr
    assert native_section(saved.stdout) == live
    doc = json.loads(out.read_text())
    assert doc["native"]["python"]["exe_facts"]["defines_python"] is True


def test_resolution_matches_ldd_for_every_debian_extension(coldstart):
    """Every extension of Debian's Python and numpy: the same libraries, from the same files, as ldd."""
    files = sorted(glob.glob("/usr/lib/python3.11/lib-dynload/*.so") +
                   glob.glob("/usr/lib/python3/dist-packages/numpy/**/*.so", recursive=True))
    assert len(files) > 40
    for path in files:
        r = coldstart("inspect", "--json", "--no-python", path)
        assert r.returncode == 0, r.stderr
        needs = json.loads(r.stdout)["objects"][0]["needs"][1:]
        mine = {l["name"]: os.path.realpath(l["path"]) for l in needs}
        theirs = {n: os.path.realpath(p) for n, p in ldd_map(path).items()}
        assert set(mine) == set(theirs) - {"linux-vdso.so.1"}, path
        for name, real in mine.items():
            assert real == theirs[name], (path, name)
