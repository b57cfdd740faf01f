"""A file write at import."""
import os
import tempfile

_path = os.path.join(tempfile.gettempdir(), "coldstart-sidefx-%d.txt" % os.getpid())
with open(_path, "w") as _f:
    _f.write("written at import\n")
os.unlink(_path)
