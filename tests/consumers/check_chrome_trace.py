#!/usr/bin/env python3
"""Structural validator for Chrome trace event files (what Perfetto insists on).

Checks every "X" event has a name, numeric non-negative ts and dur, integer
pid and tid; that the events of each (pid, tid) nest perfectly (a slice that
starts inside another ends inside it: Perfetto rejects overlap); and that
every track is named by a process_name metadata event.  Times are compared in
integer nanoseconds, so decimal microseconds do not drift.

Usage: check_chrome_trace.py FILE  (gzip or plain); prints problems, exit 1 if any.
"""
import gzip
import json
import sys
from decimal import Decimal


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data, parse_float=Decimal)


def ns(v):
    return int(Decimal(str(v)) * 1000)


def validate(doc):
    errors = []
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        return ["no traceEvents array"], {}
    tracks, named = {}, set()
    for i, e in enumerate(events):
        if not isinstance(e, dict) or "ph" not in e:
            errors.append("event %d: not an object with ph" % i)
            continue
        if e["ph"] == "M":
            if e.get("name") == "process_name":
                named.add(e.get("pid"))
            continue
        if e["ph"] != "X":
            errors.append("event %d: unexpected ph %r" % (i, e["ph"]))
            continue
        for key in ("name", "ts", "dur", "pid", "tid"):
            if key not in e:
                errors.append("event %d: missing %s" % (i, key))
        if not isinstance(e.get("name"), str):
            errors.append("event %d: name is not a string" % i)
            continue
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            errors.append("event %d: pid/tid not integers" % i)
            continue
        if not isinstance(e.get("ts"), (int, float, Decimal)) or \
                not isinstance(e.get("dur"), (int, float, Decimal)):
            errors.append("event %d: ts/dur not numbers" % i)
            continue
        if e["ts"] < 0 or e["dur"] < 0:
            errors.append("event %d (%s): negative ts or dur" % (i, e["name"]))
        tracks.setdefault((e["pid"], e["tid"]), []).append((ns(e["ts"]), ns(e["dur"]), e["name"], i))
    for (pid, tid), evs in tracks.items():
        if pid not in named:
            errors.append("pid %d has no process_name metadata" % pid)
        # Outer slices first: by start, then longest.
        evs.sort(key=lambda x: (x[0], -x[1], x[3]))
        stack = []
        for ts, dur, name, i in evs:
            end = ts + dur
            while stack and ts >= stack[-1][1] and not (dur == 0 and ts == stack[-1][1] == stack[-1][0]):
                stack.pop()
            if stack and end > stack[-1][1]:
                errors.append("pid %d tid %d: '%s' [%d, %d] overlaps '%s' [%d, %d]" % (
                    pid, tid, name, ts, end, stack[-1][2], stack[-1][0], stack[-1][1]))
            stack.append((ts, end, name))
    stats = {"tracks": len(tracks), "slices": sum(len(v) for v in tracks.values())}
    return errors, stats


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    errors, stats = validate(load(sys.argv[1]))
    for e in errors[:50]:
        print(e)
    print("%d tracks, %d slices, %d problems" % (stats.get("tracks", 0), stats.get("slices", 0), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
