#!/usr/bin/env python3
"""Writes a synthetic -X importtime log of N rows (default 1,000,000) that is
one valid tree: post-order rows as CPython prints them, varied depths (0..40),
dotted module names of realistic length, self/cumulative sums that agree, and
occasional wide numbers that push the columns.  Deterministic (fixed seed).

usage: gen_importtime.py [ROWS] [OUTPUT]   (OUTPUT defaults to stdout)
"""
import random
import sys

WORDS = ("aio", "http", "client", "server", "web", "json", "decoder", "encoder", "xml",
         "dom", "minidom", "asyncio", "events", "futures", "tasks", "base", "utils",
         "compat", "typing", "extensions", "multidict", "_multidict", "yarl", "_quoting",
         "attr", "_make", "charset_normalizer", "api", "models", "numpy", "core",
         "_multiarray_umath", "fastapi", "routing", "pydantic", "fields", "starlette",
         "requests", "adapters", "urllib3", "connectionpool", "ssl", "_ssl", "email",
         "parser", "feedparser", "logging", "handlers", "concurrent", "thread")


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    out = open(sys.argv[2], "w") if len(sys.argv) > 2 else sys.stdout
    rnd = random.Random(20241130)
    w = out.write
    w("import time: self [us] | cumulative | imported package\n")
    # Each open import: [name, sum of children's cumulative].
    stack = []
    emitted = 0
    buf = []

    def close():
        nonlocal emitted
        name, children = stack.pop()
        r = rnd.random()
        if r < 0.001:
            self_us = rnd.randrange(10**9, 10**11)  # wider than %9ld
        elif r < 0.05:
            self_us = rnd.randrange(5000, 200000)
        else:
            self_us = rnd.randrange(1, 3000)
        cum = self_us + children
        buf.append("import time: %9d | %10d | %s%s\n" % (self_us, cum, "  " * len(stack), name))
        if stack:
            stack[-1][1] += cum
        emitted += 1
        if len(buf) >= 10000:
            w("".join(buf))
            buf.clear()

    while emitted < rows:
        left = rows - emitted
        depth = len(stack)
        # Open more often near the top, close more often deep down, and
        # make sure every open import can still be closed within N rows.
        p_open = 0.62 if depth < 4 else 0.5 if depth < 12 else 0.3
        if depth < 40 and depth < left and rnd.random() < p_open:
            parts = rnd.randrange(1, 5)
            name = ".".join(rnd.choice(WORDS) for _ in range(parts))
            stack.append([name, 0])
        elif stack:
            close()
        else:
            stack.append([rnd.choice(WORDS), 0])
    w("".join(buf))
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
