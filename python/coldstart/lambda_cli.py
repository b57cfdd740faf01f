"""The coldstart-lambda command: `python3 -m coldstart.lambda` for a script
entry point (an import statement cannot name coldstart.lambda: `lambda` is
a keyword).  As `python3 -m` does, it puts the working directory first on
sys.path: Lambda starts the runtime in the function's directory."""

import os
import sys


def main():
    cwd = os.getcwd()
    if not sys.path or sys.path[0] != cwd:
        sys.path.insert(0, cwd)
    from importlib import import_module
    return import_module("coldstart.lambda.__main__").main()


if __name__ == "__main__":
    sys.exit(main())
