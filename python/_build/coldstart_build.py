"""PEP 517 build backend that lets `pip install ./python` work offline.

It is setuptools' own backend, but found in the interpreter's site
directories (Debian's python3-setuptools and python3-wheel) even inside
pip's isolated build environment, so pip has nothing to download.
"""

import os
import site
import sys


def _expose_site_packages(prefixes=None):
    # pip's isolated build hides the interpreter's site directories; the
    # packages are still there, so put them back at the end of sys.path.
    try:
        paths = site.getsitepackages(prefixes)
    except (AttributeError, TypeError):
        paths = []
    for p in paths:
        if os.path.isdir(p) and p not in sys.path:
            sys.path.append(p)


try:
    import setuptools.build_meta as _backend
except ImportError:
    _expose_site_packages()
    try:
        import setuptools.build_meta as _backend
    except ImportError:
        raise ImportError(
            "building coldstart needs setuptools >= 61 installed for %s "
            "(Debian: apt-get install python3-setuptools python3-wheel)"
            % sys.executable)

try:
    import wheel  # noqa: F401 - setuptools needs it to build wheels
except ImportError:
    _expose_site_packages()
    try:
        import wheel  # noqa: F401,F811
    except ImportError:
        # A venv without system packages has setuptools but not wheel;
        # the base interpreter's (Debian's python3-wheel) will do.
        _expose_site_packages([sys.base_prefix])

from setuptools.build_meta import *  # noqa: F401,F403,E402


def _missing(requirements):
    out = []
    for req in requirements:
        name = req.split(";")[0]
        for sep in "<>=!~[ ":
            name = name.split(sep)[0]
        try:
            __import__(name.replace("-", "_"))
        except ImportError:
            out.append(req)
    return out


def get_requires_for_build_wheel(config_settings=None):
    return _missing(_backend.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_sdist(config_settings=None):
    return _missing(_backend.get_requires_for_build_sdist(config_settings))


def get_requires_for_build_editable(config_settings=None):
    return _missing(_backend.get_requires_for_build_editable(config_settings))
