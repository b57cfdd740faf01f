"""The coldstart-lambda command: `python3 -m coldstart.lambda` for a script
(an import statement cannot name coldstart.lambda: `lambda` is a keyword).
As `python3 -m` does, it puts the working directory first on sys.path:
Lambda starts the runtime in the function's directory.  The module is
imported with __import__, not importlib.import_module: the importlib
package would bring warnings and types before the first event."""

import os
import sys


def main():
    cwd = os.getcwd()
    if not sys.path or sys.path[0] != cwd:
        sys.path.insert(0, cwd)
    __import__("coldstart.lambda.__main__")
    return sys.modules["coldstart.lambda.__main__"].main()


if __name__ == "__main__":
    sys.exit(main())
