"""Installing python/ with a plain `pip install`, offline, gives the coldstart
and fdk packages and a working coldstart-fdk script.  Debian's pip,
setuptools and wheel are used in a throw-away venv; the source is copied
first so no build files land in the tree."""
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import DEBIAN_PYTHON, ROOT


def test_pip_install_offline_provides_packages_and_script():
    py = DEBIAN_PYTHON
    probe = subprocess.run([py, "-c", "import setuptools, venv, pip"],
                           capture_output=True, text=True)
    if probe.returncode:
        pytest.skip("%s lacks pip, setuptools or venv (Debian python3-pip, "
                    "python3-setuptools, python3-venv): %s"
                    % (py, probe.stderr.strip()))
    d = tempfile.mkdtemp(prefix="fdkpip", dir="/tmp")
    try:
        src = os.path.join(d, "src")
        shutil.copytree(os.path.join(ROOT, "python"), src,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so",
                                                      "build", "*.egg-info"))
        venv = os.path.join(d, "venv")
        # A plain venv (its own pip and setuptools, no wheel) and a plain
        # `pip install`: the build runs isolated, and must not need the
        # network (--no-index makes any download attempt fail at once).
        subprocess.run([py, "-m", "venv", venv], check=True, timeout=120)
        vpy = os.path.join(venv, "bin", "python")
        p = subprocess.run([vpy, "-m", "pip", "install", "-q", "--no-index",
                            src], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        script = os.path.join(venv, "bin", "coldstart-fdk")
        p = subprocess.run([script, "--version"], capture_output=True,
                           text=True, timeout=60, cwd=d)
        assert p.returncode == 0 and p.stdout.startswith("coldstart-fdk "), \
            p.stderr
        p = subprocess.run([vpy, "-c", "import coldstart.lazy, fdk.response, "
                            "fdk.context, coldstart.fdk; "
                            "print(fdk.response.Response.__module__, "
                            "coldstart.fdk.__file__)"],
                           capture_output=True, text=True, timeout=60, cwd=d)
        assert p.returncode == 0, p.stderr
        mod, path = p.stdout.split()
        assert mod == "coldstart.fdk.response"
        assert path.startswith(venv)
        p = subprocess.run([script], capture_output=True, text=True,
                           timeout=60, cwd=d, env={"PATH": "/usr/bin:/bin"})
        assert p.returncode == 2 and "missing FUNC" in p.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)
