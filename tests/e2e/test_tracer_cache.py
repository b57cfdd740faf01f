"""The tracer build cache must never load a library another user planted.

A real second user (created with useradd; the tests need root for that and
say so when they skip) plants a `_tracer<EXT_SUFFIX>` whose constructor
leaves a marker file; coldstart then profiles a real interpreter.  The
planted code must not run, and the profile must say why the cache was not
used.  The interpreter is Debian's, with a copy of coldstart's python/
directory that has no prebuilt tracer beside the source, so the cache is
what coldstart would load."""
import json
import os
import shutil
import subprocess
import tempfile
import uuid

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, ROOT

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("useradd"),
    reason="needs root and useradd to create the second user who plants the library")

PLANTED_C = r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void)
{
    int fd = open(MARKER, O_WRONLY | O_CREAT, 0644);
    if (fd >= 0)
        close(fd);
}
"""


def fnv1a(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


@pytest.fixture(scope="module")
def planter():
    """A second user, removed afterwards."""
    name = "csplant%s" % uuid.uuid4().hex[:8]
    subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                    "--shell", "/usr/sbin/nologin", name], check=True, capture_output=True)
    out = subprocess.run(["id", "-u", name], check=True, capture_output=True, text=True)
    yield {"name": name, "uid": int(out.stdout)}
    subprocess.run(["userdel", name], capture_output=True)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A datadir without a prebuilt tracer, the source hash, the ABI suffix."""
    # Outside /tmp: the namespace test below mounts a fresh /tmp.
    base = tempfile.mkdtemp(prefix="coldstart-cache-test-", dir="/var/tmp")
    os.chmod(base, 0o755)
    data = os.path.join(base, "python")
    shutil.copytree(os.path.join(ROOT, "python"), data,
                    ignore=shutil.ignore_patterns("_tracer*.so", "__pycache__"))
    # The cache's hash covers the source and the headers it includes, in that order.
    src = b""
    for name in ("_tracer.c", "_fill.h", "_module.h"):
        with open(os.path.join(data, "coldstart", name), "rb") as f:
            src += f.read()
    src_hash = fnv1a(src)
    suffix = subprocess.run([DEBIAN_PYTHON, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                            check=True, capture_output=True, text=True).stdout.strip()
    yield {"base": base, "data": data, "hash": src_hash, "suffix": suffix}
    shutil.rmtree(base, ignore_errors=True)


def plant(planter, where, marker, setup):
    """Builds the planted library at where (a file path), owned by the planter."""
    src = os.path.join(setup["base"], "planted.c")
    with open(src, "w") as f:
        f.write(PLANTED_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-DMARKER=\"%s\"" % marker, "-o", where, src], check=True)
    os.chown(where, planter["uid"], -1)
    os.chmod(where, 0o755)


def profile(setup, env, out):
    e = {"PATH": "/usr/bin:/bin", "COLDSTART_DATADIR": setup["data"]}
    e.update(env)
    return subprocess.run([COLDSTART, "profile", "--no-report", "-o", out, "--", DEBIAN_PYTHON, "-c", "import json"],
                          capture_output=True, text=True, env=e, timeout=300)


def warnings_of(out):
    with open(out) as f:
        return [w["msg"] for w in json.load(f)["warnings"]]


def test_planted_library_in_shared_tmp_is_never_loaded(planter, setup):
    """The issue's case: HOME and XDG_CACHE_HOME unset (env -i).  The cache
    was /tmp/.cache/coldstart, where the planter's library ran as root.  Run
    in a mount namespace with a fresh /tmp (and /root) so the machine's own
    are untouched."""
    h, sfx = setup["hash"], setup["suffix"]
    planted_dir = "/tmp/.cache/coldstart/tracer/" + h
    # The fresh /tmp hides a checkout under /tmp: run a copy of the binary
    # from the setup's directory (/var/tmp), with the copied datadir.
    cs = os.path.join(setup["base"], "coldstart")
    shutil.copy2(COLDSTART, cs)
    script = r"""
set -e
mount --make-rprivate /
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0700 tmpfs /root
setpriv --reuid={uid} --regid=65534 --clear-groups mkdir -p {pdir}
cc -shared -fPIC -DMARKER='"/tmp/planted-ran"' -o {pdir}/_tracer{sfx} {base}/planted.c
chown {uid} {pdir}/_tracer{sfx}
env -i PATH=/usr/bin:/bin COLDSTART_DATADIR={data} {cs} profile --no-report -o /tmp/p.json -- {py} -c 'import json'
echo "rc=$?"
if [ -e /tmp/planted-ran ]; then echo PLANTED-RAN; fi
ls -d /root/.cache/coldstart/tracer/{h} >/dev/null 2>&1 && echo CACHE-IN-ROOT-HOME
cat /tmp/p.json
""".format(uid=planter["uid"], pdir=planted_dir, sfx=sfx, base=setup["base"], data=setup["data"],
           cs=cs, py=DEBIAN_PYTHON, h=h)
    with open(os.path.join(setup["base"], "planted.c"), "w") as f:
        f.write(PLANTED_C)
    r = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    assert "rc=0" in r.stdout, (r.stdout[:2000], r.stderr)
    assert "PLANTED-RAN" not in r.stdout, "the planted library ran in the target"
    assert "CACHE-IN-ROOT-HOME" in r.stdout, r.stdout[:2000]  # the home from the password database
    doc = json.loads(r.stdout[r.stdout.index("{"):])
    assert not any("pure-Python tracer" in w["msg"] for w in doc["warnings"]), doc["warnings"]


def test_cache_owned_by_another_user_is_refused(planter, setup, tmp_path):
    cache = tmp_path / "cache"
    d = cache / "tracer" / setup["hash"]
    d.mkdir(parents=True)
    marker = str(tmp_path / "ran")
    plant(planter, str(d / ("_tracer" + setup["suffix"])), marker, setup)
    for p in (cache, cache / "tracer", d):
        os.chown(p, planter["uid"], -1)
    out = str(tmp_path / "p.json")
    r = profile(setup, {"COLDSTART_CACHE_DIR": str(cache)}, out)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(marker), "the planted library ran in the target"
    w = warnings_of(out)
    assert any("tracer build cache: the cache is not used: '%s' is owned by uid %d, not by uid 0 who runs "
               "coldstart; the tracer is built for this run only" % (cache, planter["uid"]) in m for m in w), w
    assert not any("pure-Python tracer" in m for m in w), w


@pytest.mark.parametrize("mode,who", [(0o777, "others"), (0o775, "its group"), (0o1777, "others")],
                         ids=["0777", "0775", "01777"])
def test_cache_writable_by_others_is_refused(planter, setup, tmp_path, mode, who):
    cache = tmp_path / "cache"
    d = cache / "tracer" / setup["hash"]
    d.mkdir(parents=True)
    os.chmod(cache, mode)
    marker = str(tmp_path / "ran")
    plant(planter, str(d / ("_tracer" + setup["suffix"])), marker, setup)
    out = str(tmp_path / "p.json")
    r = profile(setup, {"COLDSTART_CACHE_DIR": str(cache)}, out)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(marker)
    w = warnings_of(out)
    assert any("'%s' is writable by %s (chmod go-w '%s')" % (cache, who, cache) in m for m in w), w


def test_ancestor_owned_by_another_user_is_refused(planter, setup, tmp_path):
    """The planter could rename a directory of ours inside one of theirs."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, planter["uid"], -1)
    cache = theirs / "cache"
    out = str(tmp_path / "p.json")
    r = profile(setup, {"COLDSTART_CACHE_DIR": str(cache)}, out)
    assert r.returncode == 0, r.stderr
    w = warnings_of(out)
    assert any("'%s' is owned by uid %d" % (theirs, planter["uid"]) in m for m in w), w


@pytest.mark.parametrize("kind", ["symlink", "foreign-owner", "group-writable"])
def test_untrusted_extension_in_our_cache_is_rebuilt(planter, setup, tmp_path, kind):
    cache = tmp_path / "cache"
    d = cache / "tracer" / setup["hash"]
    d.mkdir(parents=True)
    ext = d / ("_tracer" + setup["suffix"])
    marker = str(tmp_path / "ran")
    if kind == "symlink":
        elsewhere = tmp_path / "elsewhere.so"
        plant(planter, str(elsewhere), marker, setup)
        os.chown(elsewhere, 0, -1)  # even one of ours: a link is never followed
        os.symlink(str(elsewhere), str(ext))
    else:
        plant(planter, str(ext), marker, setup)
        if kind == "group-writable":
            os.chown(ext, 0, -1)
            os.chmod(ext, 0o775)
    out = str(tmp_path / "p.json")
    r = profile(setup, {"COLDSTART_CACHE_DIR": str(cache)}, out)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(marker), "the planted library ran in the target"
    st = os.lstat(ext)
    assert st.st_uid == 0 and not (st.st_mode & 0o022) and not os.path.islink(ext)
    w = warnings_of(out)
    assert any("in the cache, so it was built again" in m for m in w), w
    # The rebuilt one is used from then on, without a warning.
    r = profile(setup, {"COLDSTART_CACHE_DIR": str(cache)}, out)
    assert r.returncode == 0 and not any("tracer build cache" in m for m in warnings_of(out))


def test_fresh_cache_is_private(setup, tmp_path):
    cache = tmp_path / "new" / "cache"
    out = str(tmp_path / "p.json")
    r = profile(setup, {"COLDSTART_CACHE_DIR": str(cache), "HOME": "/nonexistent"}, out)
    assert r.returncode == 0, r.stderr
    for p in (cache, cache / "tracer", cache / "tracer" / setup["hash"]):
        assert os.stat(p).st_mode & 0o777 == 0o700, oct(os.stat(p).st_mode)
    ext = cache / "tracer" / setup["hash"] / ("_tracer" + setup["suffix"])
    assert os.stat(ext).st_mode & 0o777 == 0o755
    assert not warnings_of(out)


def boot_cache(setup, cache):
    """The bootstrap's cache directory: <cache>/_boot/<hash of the bootstrap>."""
    with open(os.path.join(setup["data"], "coldstart", "_boot", "sitecustomize.py"), "rb") as f:
        return cache / "_boot" / fnv1a(f.read())


def planted_pyc(py, marker, copy, where, tmp_path):
    """Bytecode that leaves a marker, with a header that matches the cached
    copy of the bootstrap, so the interpreter would load it as its bytecode."""
    src = tmp_path / "planted_boot.py"
    src.write_text("open(%r, 'w').close()\n" % marker)
    subprocess.run([py, "-c", "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], "
                    "doraise=True, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)",
                    str(src), str(where)], check=True)
    st = os.stat(copy)
    data = bytearray(where.read_bytes())
    data[8:16] = (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + st.st_size.to_bytes(4, "little")
    where.write_bytes(bytes(data))


@pytest.mark.parametrize("what", ["pyc", "copy"])
@pytest.mark.parametrize("kind", ["symlink", "foreign-owner", "group-writable"])
def test_untrusted_bootstrap_in_our_cache_is_written_again(planter, setup, tmp_path, what, kind):
    """The bootstrap's copy and bytecode in the cache follow the extension's
    rules: a file coldstart did not write (another owner, writable by the
    group, a symbolic link) is replaced before the target can run it."""
    cache = tmp_path / "cache"
    out = str(tmp_path / "p.json")
    env = {"COLDSTART_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
    assert profile(setup, env, out).returncode == 0
    d = boot_cache(setup, cache)
    copy = d / "sitecustomize.py"
    tag = subprocess.run([DEBIAN_PYTHON, "-c", "import sys; print(sys.implementation.cache_tag)"],
                         check=True, capture_output=True, text=True).stdout.strip()
    pyc = d / "__pycache__" / ("sitecustomize.%s.pyc" % tag)
    assert copy.is_file() and pyc.is_file(), sorted(os.listdir(d))
    marker = str(tmp_path / "ran")
    target = pyc if what == "pyc" else copy
    planted = tmp_path / ("planted." + what)
    if what == "pyc":
        planted_pyc(DEBIAN_PYTHON, marker, copy, planted, tmp_path)
    else:
        planted.write_text("open(%r, 'w').close()\n" % marker)
    target.unlink()
    if kind == "symlink":
        os.symlink(str(planted), str(target))  # root's own file: a link is never followed
    else:
        shutil.copyfile(str(planted), str(target))
        if kind == "foreign-owner":
            os.chown(target, planter["uid"], -1)
            os.chmod(target, 0o644)
        else:
            os.chmod(target, 0o664)
    if what == "pyc" and kind != "symlink":
        # The planted bytecode's header matches the copy: Python would load it.
        st = os.stat(copy)
        assert int.from_bytes(target.read_bytes()[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
    r = profile(setup, env, out)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(marker), "the planted bootstrap ran in the target"
    check_rewritten(copy, pyc, out)


def check_rewritten(copy, pyc, out):
    for p in (copy, pyc):
        st = os.lstat(p)
        assert st.st_uid == 0 and not (st.st_mode & 0o022) and not os.path.islink(p), (p, oct(st.st_mode))
    assert not any("bootstrap is compiled" in m for m in warnings_of(out)), warnings_of(out)


def test_planted_bytecode_would_run(setup, tmp_path):
    """The planted bytecode above is real: the same file written as
    coldstart would (root's, 0644) runs in the target, so it is the cache's
    rules that keep the planted ones out."""
    cache = tmp_path / "cache"
    out = str(tmp_path / "p.json")
    env = {"COLDSTART_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
    assert profile(setup, env, out).returncode == 0
    d = boot_cache(setup, cache)
    pyc = next((d / "__pycache__").iterdir())
    marker = str(tmp_path / "ran")
    planted_pyc(DEBIAN_PYTHON, marker, d / "sitecustomize.py", pyc, tmp_path)
    os.chmod(pyc, 0o644)
    r = profile(setup, env, out)
    assert r.returncode == 0, r.stderr
    assert os.path.exists(marker), "the control plant did not run: the tests above would prove nothing"


def test_refused_cache_leaves_the_source_bootstrap(planter, setup, tmp_path):
    """A cache of another user's is not used for the bootstrap either: the
    target runs the source one and the profile says so."""
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chown(cache, planter["uid"], -1)
    out = str(tmp_path / "p.json")
    r = profile(setup, {"COLDSTART_CACHE_DIR": str(cache)}, out)
    assert r.returncode == 0, r.stderr
    w = warnings_of(out)
    assert any("the bootstrap is compiled in every process" in m for m in w), w
    assert not (cache / "_boot").exists()
    with open(out) as f:
        nodes = json.load(f)["runs"][0]["processes"][0]["nodes"]
    assert [n for n in nodes if n[0] == "sitecustomize" and n[6] == "tool"], nodes[:20]
