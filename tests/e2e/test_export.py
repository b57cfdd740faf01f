"""coldstart export: every format checked by a consumer that can say no.

Folded and speedscope are checked arithmetically here and loaded into the real
speedscope app; Chrome traces go through a nesting validator; SVG and HTML
are parsed as XML/HTML and opened in headless Chromium, where search and zoom
are driven through the real UI.  Profiles come from real `-X importtime`
output of every interpreter found, and from synthetic trees of known shape.
"""
import gzip
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest

import export_profiles as ep
from conftest import DEBIAN_PYTHON, PYTHONS, ROOT

CONSUMERS = os.path.join(ROOT, "tests", "consumers")
sys.path.insert(0, CONSUMERS)
import check_chrome_trace  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
FORMATS = ["svg", "folded", "speedscope", "chrome", "html"]


def export(coldstart, profile, fmt, out, *extra):
    r = coldstart("export", profile, "--format", fmt, "-o", out, *extra)
    assert r.returncode == 0, r.stderr
    return ep.read_output(out)


def layout_width(node):
    """What the exporters promise: max(cum, sum of the children's widths)."""
    return max(node.cum_us, sum(layout_width(c) for c in node.children))


@pytest.fixture
def real_profile(python, tmp_path):
    roots = ep.real_roots(python)
    path = ep.write(tmp_path / "real.json", ep.profile_json([[roots]]))
    return path, roots


# --- folded -----------------------------------------------------------------

def test_folded_frame_widths_equal_cumulative(coldstart, real_profile, tmp_path):
    path, roots = real_profile
    text = export(coldstart, path, "folded", tmp_path / "out.folded")
    lines = text.splitlines()
    assert lines and all(re.match(r"^[^\n]+ \d+$", l) for l in lines), lines[:3]
    weights = {}
    for line in lines:
        stack, count = line.rsplit(" ", 1)
        weights[stack] = weights.get(stack, 0) + int(count)
    assert all(w > 0 for w in weights.values())
    proc = lines[0].split(";", 1)[0]
    # Folded stacks merge identical paths (a .pth can import the same module
    # twice under site), so expectations are summed per path too.
    expect, cum, children = {}, {}, {}

    def collect(node, prefix):
        path_ = prefix + ";" + node.name
        expect[path_] = expect.get(path_, 0) + layout_width(node)
        cum[path_] = cum.get(path_, 0) + node.cum_us
        children[path_] = children.get(path_, 0) + len(list(ep.walk(node.children)))
        for c in node.children:
            collect(c, path_)
    for r in roots:
        collect(r, proc)
    for path_, want in expect.items():
        width = sum(w for s, w in weights.items() if s == path_ or s.startswith(path_ + ";"))
        assert width == want, path_
        # importtime rounds self and cum separately: at most 1 us per child.
        assert abs(width - cum[path_]) <= children[path_] + 1, path_


def test_folded_main_process_only_unless_all_procs(coldstart, tmp_path):
    doc = ep.profile_json([[ep.synthetic_roots(30, seed=2), ep.synthetic_roots(10, seed=3)]])
    path = ep.write(tmp_path / "p.json", doc)
    one = export(coldstart, path, "folded", tmp_path / "a.folded")
    both = export(coldstart, path, "folded", tmp_path / "b.folded", "--all-procs")
    assert {l.split(";")[0] for l in one.splitlines()} == {"python3 app.py (pid 1000)"}
    assert {l.split(";")[0] for l in both.splitlines()} == {"python3 app.py (pid 1000)",
                                                            "python3 -c child1 (pid 1001)"}


# --- speedscope ---------------------------------------------------------------

def check_evented(doc):
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    for prof in doc["profiles"]:
        assert prof["type"] == "evented" and prof["unit"] == "microseconds"
        stack, last = [], prof["startValue"]
        for ev in prof["events"]:
            assert ev["at"] >= last, "at decreased"
            last = ev["at"]
            assert 0 <= ev["frame"] < len(frames)
            if ev["type"] == "O":
                stack.append(ev["frame"])
            else:
                assert ev["type"] == "C" and stack and stack.pop() == ev["frame"], "unbalanced close"
        assert not stack, "unclosed frames"
        assert prof["endValue"] >= last
    return frames


def test_speedscope_events_balance_and_never_go_back(coldstart, real_profile, tmp_path):
    path, roots = real_profile
    doc = json.loads(export(coldstart, path, "speedscope", tmp_path / "o.speedscope.json"))
    frames = check_evented(doc)
    assert {f["name"] for f in frames} == {n.name for n in ep.walk(roots)}
    opens = [e for e in doc["profiles"][0]["events"] if e["type"] == "O"]
    assert len(opens) == len(list(ep.walk(roots)))
    # Laid out from the tree: the root spans its cumulative time.
    ev = doc["profiles"][0]["events"]
    assert frames[ev[0]["frame"]]["name"] == roots[0].name
    close = next(e for e in ev[1:] if e["frame"] == ev[0]["frame"] and e["type"] == "C")
    assert close["at"] - ev[0]["at"] == pytest.approx(layout_width(roots[0]))


def test_speedscope_uses_real_timestamps(coldstart, tmp_path):
    roots = ep.add_timing(ep.synthetic_roots(60, seed=5))
    doc_in = ep.profile_json([[roots, ep.add_timing(ep.synthetic_roots(12, seed=6))]])
    path = ep.write(tmp_path / "t.json", doc_in)
    doc = json.loads(export(coldstart, path, "speedscope", tmp_path / "t.speedscope.json"))
    frames = check_evented(doc)
    assert len(doc["profiles"]) == 2, "one profile per process"
    expect = {n.name: n.timing for n in ep.walk(roots)}
    for ev in doc["profiles"][0]["events"]:
        start, end = expect[frames[ev["frame"]]["name"]]
        assert ev["at"] == pytest.approx((start if ev["type"] == "O" else end) / 1000.0)


def test_speedscope_clamps_contradictory_timestamps(coldstart, tmp_path):
    """A child said to start before and end after its parent, siblings overlapping."""
    kids = [ep.Node("b", 10, kind="app", timing=(500, 9000000)),
            ep.Node("c", 10, kind="app", timing=(100, 200))]
    root = ep.Node("a", 5, 30, kind="app", children=kids, timing=(1000, 50000))
    path = ep.write(tmp_path / "bad.json", ep.profile_json([[[root]]]))
    check_evented(json.loads(export(coldstart, path, "speedscope", tmp_path / "x.json.speedscope.json")))
    out = tmp_path / "bad.trace.json"
    export(coldstart, path, "chrome", out)
    errors, _ = check_chrome_trace.validate(check_chrome_trace.load(str(out)))
    assert errors == []


# --- Chrome trace ---------------------------------------------------------------

def test_chrome_trace_nests_perfectly(coldstart, real_profile, tmp_path):
    path, roots = real_profile
    out = tmp_path / "o.trace.json"
    export(coldstart, path, "chrome", out)
    errors, stats = check_chrome_trace.validate(check_chrome_trace.load(str(out)))
    assert errors == []
    assert stats == {"tracks": 1, "slices": len(list(ep.walk(roots)))}


def test_chrome_trace_one_track_per_process_with_timing(coldstart, tmp_path):
    procs = [ep.add_timing(ep.synthetic_roots(40, seed=s)) for s in (7, 8, 9)]
    path = ep.write(tmp_path / "m.json.gz", ep.profile_json([procs]))
    out = tmp_path / "m.trace.json.gz"
    r = coldstart("export", path, "-o", out)  # format from the name, gzip both ways
    assert r.returncode == 0, r.stderr
    doc = check_chrome_trace.load(str(out))
    errors, stats = check_chrome_trace.validate(doc)
    assert errors == [] and stats["tracks"] == 3
    names = {e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "process_name"}
    assert names == {"python3 app.py (pid 1000)", "python3 -c child1 (pid 1001)",
                     "python3 -c child2 (pid 1002)"}
    first = next(e for e in doc["traceEvents"] if e["ph"] == "X")
    assert first["ts"] == Decimal(procs[0][0].timing[0]) / 1000


# --- SVG ----------------------------------------------------------------------

def frames_of(svg_text):
    root = ET.fromstring(svg_text)
    return [g for g in root.iter(SVG + "g") if "cs-f" in g.get("class", "").split()]


def test_svg_draws_every_frame_coloured_by_kind(coldstart, real_profile, tmp_path):
    path, roots = real_profile
    text = export(coldstart, path, "svg", tmp_path / "o.svg")
    frames = frames_of(text)
    nodes = list(ep.walk(roots))
    drawn = {g.get("data-n") for g in frames}
    big = [n for n in nodes if layout_width(n) * 1180.0 / sum(map(layout_width, roots)) >= 0.1]
    assert {n.name for n in big} <= drawn
    fill = {g.get("data-n"): g.find(SVG + "rect").get("fill") for g in frames}
    kinds = {n.name: n.kind for n in nodes}
    by_kind = {}
    for name, f in fill.items():
        if name in kinds:
            by_kind.setdefault(kinds[name], set()).add(f)
    # Start-up (grey) and stdlib (blue) frames never share a colour.
    assert by_kind["startup"].isdisjoint(by_kind["stdlib"])
    root = next(g for g in frames if "cs-root" in g.get("class"))
    assert float(root.find(SVG + "rect").get("width")) == pytest.approx(1180, abs=0.01)
    assert "<script" in text and "]]></script>" in text


def test_svg_icicle_puts_the_root_on_top(coldstart, tmp_path):
    path = ep.write(tmp_path / "p.json", ep.profile_json([[ep.synthetic_roots(50)]]))

    def root_and_child_y(*extra):
        frames = frames_of(export(coldstart, path, "svg", tmp_path / "o.svg", *extra))
        y = {g.get("data-d"): float(g.find(SVG + "rect").get("y")) for g in frames}
        return y["0"], y["1"]
    r, c = root_and_child_y()
    assert r > c
    r, c = root_and_child_y("--icicle")
    assert r < c


def test_svg_all_procs_stacks_one_graph_per_process(coldstart, tmp_path):
    doc = ep.profile_json([[ep.synthetic_roots(30, seed=2), ep.synthetic_roots(10, seed=3)]])
    path = ep.write(tmp_path / "p.json", doc)
    one = frames_of(export(coldstart, path, "svg", tmp_path / "a.svg"))
    two = frames_of(export(coldstart, path, "svg", tmp_path / "b.svg", "--all-procs"))
    assert len([g for g in one if "cs-root" in g.get("class")]) == 1
    assert len([g for g in two if "cs-root" in g.get("class")]) == 2
    assert len(two) == 30 + 10 + 2


def test_svg_5000_modules_leaves_out_subpixel_frames(coldstart, tmp_path):
    roots = ep.synthetic_roots(5000, seed=11)
    path = ep.write(tmp_path / "big.json.gz", ep.profile_json([[roots]]))
    out = tmp_path / "big.svg"
    text = export(coldstart, path, "svg", out)
    drawn = len(frames_of(text))
    skipped = int(re.search(r"(\d+) frames narrower than 0.1 px not drawn", text).group(1))
    assert drawn + skipped == 5001 and 0 < skipped
    every = len(frames_of(export(coldstart, path, "svg", tmp_path / "all.svg", "--minwidth", "0")))
    assert every == 5001
    print("5000 modules: %d frames drawn, %d below 0.1 px left out; %d bytes (all drawn: %d bytes)" % (
        drawn, skipped, os.path.getsize(out), os.path.getsize(tmp_path / "all.svg")))


def test_hostile_names_stay_well_formed(coldstart, tmp_path):
    name = "a<b>&\"c'\x01;d ]]> </script>"
    root = ep.Node(name, 500, kind="app", children=[ep.Node("x\ty", 300, kind="app")])
    path = ep.write(tmp_path / "h.json", ep.profile_json([[[root]]], target=("<&>",)))
    ET.fromstring(export(coldstart, path, "svg", tmp_path / "h.svg"))
    page = export(coldstart, path, "html", tmp_path / "h.html")
    assert "</script> </script>" not in page and name not in page
    frames = check_evented(json.loads(export(coldstart, path, "speedscope", tmp_path / "h.speedscope.json")))
    assert frames[0]["name"] == "a<b>&\"c'?;d ]]> </script>"
    folded = export(coldstart, path, "folded", tmp_path / "h.folded")
    assert folded.splitlines()[0].endswith(";a<b>&\"c'?:d ]]> </script> 500")
    errors, _ = check_chrome_trace.validate(json.loads(export(coldstart, path, "chrome", tmp_path / "h.trace.json")))
    assert errors == []


# --- HTML ---------------------------------------------------------------------

class Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.refs = {}, []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            if k in ("src", "href") and v:
                self.refs.append(v)


def test_html_is_one_offline_file(coldstart, real_profile, tmp_path):
    path, roots = real_profile
    doc = json.load(open(path))
    doc["findings"] = [{"id": "heavy-import", "severity": "warning", "title": "asyncio is slow",
                        "evidence": "asyncio costs 40 ms", "fix": "defer it", "module": "asyncio",
                        "cost_us": 40000}]
    ep.write(path, doc)
    page = export(coldstart, path, "html", tmp_path / "r.html")
    p = Collect()
    p.feed(page)
    assert p.refs == [], "the report must not load anything"
    assert p.tags["svg"] == 1 and p.tags["table"] >= 2
    assert "asyncio is slow" in page and "defer it" in page
    rows = re.search(r'<table id="cs-modules".*?</table>', page, re.S).group(0).count("<tr>") - 1
    assert rows == len(list(ep.walk(roots)))


# --- files, gzip, errors --------------------------------------------------------

def test_gzip_round_trip_every_format(coldstart, tmp_path):
    doc = ep.profile_json([[ep.synthetic_roots(200, seed=4)]])
    plain = ep.write(tmp_path / "p.json", doc)
    packed = ep.write(tmp_path / "p.json.gz", doc)
    for fmt in FORMATS:
        a = tmp_path / ("a." + fmt)
        b = tmp_path / ("b." + fmt + ".gz")
        export(coldstart, plain, fmt, a)
        export(coldstart, packed, fmt, b)
        with open(b, "rb") as f:
            assert f.read(2) == b"\x1f\x8b", fmt + " output is not gzip"
        assert gzip.open(b).read() == open(a, "rb").read(), fmt


def test_stdout_and_format_from_name(coldstart, tmp_path):
    path = ep.write(tmp_path / "p.json", ep.profile_json([[ep.synthetic_roots(20)]]))
    r = coldstart("export", path, "-f", "folded")
    assert r.returncode == 0 and r.stdout.startswith("python3 app.py (pid 1000);pkg1")
    for name, marker in (("x.speedscope.json", '"$schema"'), ("x.trace.json", '"traceEvents"'),
                         ("x.html", "<!DOCTYPE html>"), ("x.svg.gz", "<svg"), ("x.folded", ";pkg1")):
        r = coldstart("export", path, "-o", tmp_path / name)
        assert r.returncode == 0, r.stderr
        assert marker in ep.read_output(tmp_path / name), name
    r = coldstart("export", path, "-o", tmp_path / "x.json")
    assert r.returncode == 2 and "--format" in r.stderr


@pytest.mark.parametrize("args,code,message", [
    ((), 2, "needs a PROFILE"),
    (("--help",), 0, "usage: coldstart export"),
    (("P", "--format", "png"), 2, "unknown format 'png'"),
    (("P", "--bogus"), 2, "unknown option '--bogus'"),
    (("P", "--run", "0"), 2, "--run '0'"),
    (("P", "--run", "9"), 1, "run 9 does not exist"),
    (("P", "--width", "5"), 2, "--width '5'"),
    (("P", "-o"), 2, "'-o' needs a value"),
    (("MISSING",), 1, "cannot read"),
    (("CORRUPT",), 1, "error"),
    (("P", "-o", "/nonexistent-dir/x.svg"), 1, "cannot write '/nonexistent-dir/x.svg'"),
    (("EMPTY",), 1, "no runs"),
])
def test_errors_are_clear(coldstart, tmp_path, args, code, message):
    p = ep.write(tmp_path / "p.json", ep.profile_json([[ep.synthetic_roots(5)]]))
    (tmp_path / "corrupt.json").write_bytes(b'{"format": "coldstart-profile", "runs": [')
    empty = ep.write(tmp_path / "empty.json", ep.profile_json([]))
    subst = {"P": p, "MISSING": str(tmp_path / "nope.json"), "CORRUPT": str(tmp_path / "corrupt.json"),
             "EMPTY": empty}
    r = coldstart("export", *[subst.get(a, a) for a in args], timeout=30)
    assert r.returncode == code, (r.stdout, r.stderr)
    assert message in (r.stdout if code == 0 else r.stderr)
    assert "Traceback" not in r.stderr and "Sanitizer" not in r.stderr


# --- real viewers ---------------------------------------------------------------

def consumers_ready():
    why = []
    if not shutil.which("node"):
        why.append("node is not installed")
    if not os.path.isdir(os.path.join(CONSUMERS, "node_modules", "speedscope")) or \
            not os.path.isdir(os.path.join(CONSUMERS, "node_modules", "playwright-core")):
        why.append("npm packages missing: run 'npm install --prefix tests/consumers'")
    if not os.access(os.environ.get("CHROMIUM", "/usr/bin/chromium"), os.X_OK):
        why.append("no Chromium at /usr/bin/chromium (Debian package 'chromium')")
    return "; ".join(why)


needs_browser = pytest.mark.skipif(bool(consumers_ready()), reason=consumers_ready() or "ready")


def node(script, *args, timeout=240):
    r = subprocess.run(["node", os.path.join(CONSUMERS, script)] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=timeout, cwd=CONSUMERS)
    assert r.returncode == 0, r.stderr
    return [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]


# speedscope prints "30.37ms (12%)" for timed profiles and "53,301 (18%)" for
# folded samples (our samples are microseconds).
TIME = re.compile(r"^([\d.,]+)(ms|µs|s|) ")


def ms(text):
    m = TIME.match(text)
    return float(m.group(1).replace(",", "")) * {"ms": 1000, "µs": 1, "s": 1e6, "": 1}[m.group(2)]


@needs_browser
def test_speedscope_app_loads_our_files(coldstart, tmp_path):
    roots = ep.real_roots(DEBIAN_PYTHON)
    path = ep.write(tmp_path / "real.json", ep.profile_json([[roots, ep.synthetic_roots(10)]]))
    ss = tmp_path / "real.speedscope.json"
    folded = tmp_path / "real.folded"
    export(coldstart, path, "speedscope", ss)
    export(coldstart, path, "folded", folded)
    trace = tmp_path / "real.trace.json"
    export(coldstart, path, "chrome", trace)
    # speedscope imports Chrome traces too: a third, independent reader.
    results = node("speedscope_import.mjs", tmp_path / "shot", ss, folded, trace)
    assert len(results) == 3
    cum = {n.name: layout_width(n) for n in ep.walk(roots)}
    for res in results:
        assert res["loaded"], res
        assert res["errors"] == [] and res["dialogs"] == []
        # Chrome frames are keyed by name and args: "json {...}".
        totals = {row[2].split(" {")[0]: ms(row[0]) for row in res["rows"] if TIME.match(row[0])}
        assert len(totals) >= 20, res["body_text"]
        # speedscope's own sandwich totals equal our cumulative times.
        checked = 0
        for name, total in totals.items():
            if name in cum and sum(1 for n in ep.walk(roots) if n.name == name) == 1:
                assert total == pytest.approx(cum[name], abs=max(10, cum[name] * 0.006)), name
                checked += 1
        assert checked >= 20
    assert os.path.getsize(str(tmp_path / "shot-0.png")) > 10000


def flame_check(path, zoom, term, prefix):
    res = node("flame_check.mjs", path, zoom, term, prefix)
    assert len(res) == 1
    return res[0]


@needs_browser
def test_svg_in_chromium_hover_search_zoom(coldstart, tmp_path):
    path = ep.write(tmp_path / "real.json", ep.profile_json([[ep.real_roots(DEBIAN_PYTHON)]]))
    svg = tmp_path / "real.svg"
    export(coldstart, path, "svg", svg)
    res = flame_check(svg, "json", "^json", tmp_path / "svg")
    assert res["errors"] == []
    assert res["rendered"] == res["frames"] > 50
    assert res["details"].startswith("json (standard library): cumulative")
    assert res["highlighted"] >= 2 and res["highlight_fill"] == "rgb(230,0,230)"
    assert res["matched"].startswith("Matched: ")
    assert res["zoomed"] == "json" and res["width_after"] == pytest.approx(1180, abs=0.1)
    assert res["visible_zoomed"] < res["frames"]
    assert res["width_reset"] == pytest.approx(res["width_before"], abs=0.01)
    assert res["visible_reset"] == res["frames"]
    for shot in ("initial", "search", "zoom"):
        assert os.path.getsize(str(tmp_path / ("svg-%s.png" % shot))) > 10000


@needs_browser
def test_5000_module_svg_stays_usable_in_chromium(coldstart, tmp_path):
    path = ep.write(tmp_path / "big.json", ep.profile_json([[ep.synthetic_roots(5000, seed=11)]]))
    svg = tmp_path / "big.svg"
    export(coldstart, path, "svg", svg)
    res = flame_check(svg, "pkg2", r"^pkg2\.m0", tmp_path / "big")
    assert res["errors"] == []
    assert res["rendered"] == res["frames"] > 500
    assert res["highlighted"] > 0 and res["zoomed"] == "pkg2"
    assert res["width_after"] == pytest.approx(1180, abs=0.1)
    print("5000 modules in Chromium: %d frames, load %d ms, zoom click %d ms" % (
        res["frames"], res["load_ms"], res["zoom_ms"]))


@needs_browser
def test_html_report_in_chromium(coldstart, tmp_path):
    roots = ep.real_roots(DEBIAN_PYTHON)
    path = ep.write(tmp_path / "real.json", ep.profile_json([[roots]]))
    page = tmp_path / "r.html.gz"
    export(coldstart, path, "html", page)
    plain = tmp_path / "r.html"
    plain.write_text(ep.read_output(page))
    res = flame_check(plain, "json", "email", tmp_path / "html")
    assert res["errors"] == []
    assert res["rendered"] == res["frames"] > 50
    assert res["highlighted"] >= 2 and res["zoomed"] == "json"
    assert res["table_rows"] == len(list(ep.walk(roots)))
    # The table starts by cost (cumulative, largest first); clicking that column reverses it.
    least = min(n.cum_us for n in ep.walk(roots))
    assert res["top_rows"][0] == least and res["top_rows"] == sorted(res["top_rows"])


# --- real traced profiles (coldstart profile, tracer timestamps, subprocesses) ----

def test_real_traced_profile_every_format(coldstart, python, tmp_path):
    app = tmp_path / "app.py"
    app.write_text("import json, subprocess, sys\n"
                   "subprocess.run([sys.executable, '-c', 'import email.parser'], check=True)\n")
    prof = tmp_path / "p.json.gz"
    r = coldstart("profile", "--python", python, "--no-report", "-q", "-o", prof,
                  "--flamegraph", tmp_path / "p.svg", "--html", tmp_path / "p.html", app, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(ep.read_output(prof))
    procs = doc["runs"][0]["processes"]
    assert len(procs) == 2, [p["argv"] for p in procs]
    # The profile command's own --flamegraph/--html go through the same table.
    assert len(frames_of(ep.read_output(tmp_path / "p.svg"))) > 20
    assert "<svg" in ep.read_output(tmp_path / "p.html")

    out = tmp_path / "p.trace.json"
    export(coldstart, prof, "chrome", out)
    errors, stats = check_chrome_trace.validate(check_chrome_trace.load(str(out)))
    assert errors == [] and stats["tracks"] == 2
    assert stats["slices"] == sum(len(p["nodes"]) for p in procs)

    ss = json.loads(export(coldstart, prof, "speedscope", tmp_path / "p.speedscope.json"))
    frames = check_evented(ss)
    assert len(ss["profiles"]) == 2
    timing = procs[0].get("timing")
    if not timing or all(t[0] < 0 for t in timing):
        print("%s: no tracer timestamps in this profile; speedscope laid out from the tree" % python)
        return
    # Real timestamps: imports the tracer timed (and whose parents it timed:
    # start-up imports before it loaded are laid out from importtime) open
    # exactly at the tracer's start, unless clamped into their parent.
    nodes = procs[0]["nodes"]
    timed = {}
    for i, (node, t) in enumerate(zip(nodes, timing)):
        parent = node[2]
        if t[0] >= 0 and (parent < 0 or timing[parent][0] >= 0):
            timed.setdefault(node[0], set()).add(t[0] / 1000.0)
    assert timed, "the tracer timed nothing"
    opens = [e for e in ss["profiles"][0]["events"] if e["type"] == "O" and frames[e["frame"]]["name"] in timed]
    exact = sum(1 for e in opens if any(abs(e["at"] - s) < 0.002 for s in timed[frames[e["frame"]]["name"]]))
    assert exact >= 0.9 * len(opens), (exact, len(opens))


def test_pathologically_deep_tree(coldstart, tmp_path):
    """3,000 nested imports: every format but folded copes; folded refuses clearly."""
    doc = ep.profile_json([[[ep.Node("m", 10)]]])
    doc["runs"][0]["processes"][0]["nodes"] = [["m%d" % i, i, i - 1, 10, 10 * (3000 - i), 0, "app"]
                                               for i in range(3000)]
    path = ep.write(tmp_path / "deep.json", doc)
    for fmt in ("svg", "speedscope", "chrome", "html"):
        r = coldstart("export", path, "-f", fmt, "-o", tmp_path / ("deep." + fmt), timeout=60)
        assert r.returncode == 0, (fmt, r.stderr)
    errors, stats = check_chrome_trace.validate(check_chrome_trace.load(str(tmp_path / "deep.chrome")))
    assert errors == [] and stats["slices"] == 3000
    r = coldstart("export", path, "-f", "folded", timeout=60)
    assert r.returncode == 1 and "deeper than 2048 levels" in r.stderr


def test_long_command_shortened_in_the_middle(coldstart, tmp_path):
    """A long command keeps its start (the interpreter, the script) and its end
    (the last arguments) in process labels and titles: the middle goes."""
    script = tmp_path / "a" / "very" / "deep" / "directory" / "for" / "the" / "script" / "run_the_service.py"
    script.parent.mkdir(parents=True)
    script.write_text("import json\n")
    prof = tmp_path / "long.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "-o", prof, "--no-report", script,
                  "--config", "/etc/service/production.yaml", "--workers", "4", "--the-last-argument")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "long.speedscope.json"
    export(coldstart, prof, "speedscope", out)
    names = [p["name"] for p in json.loads(out.read_text())["profiles"]]
    assert names and all(n.startswith("/usr/bin/python3 ") and "\u2026" in n and
                         re.search(r"--the-last-argument \(pid \d+\)$", n) for n in names), names
    assert all(len(n.split(" (pid")[0]) <= 80 for n in names), names
    svg = tmp_path / "long.svg"
    export(coldstart, prof, "svg", svg)
    title = re.search(r"<text[^>]*>(coldstart import flamegraph: [^<]*)</text>", svg.read_text())
    assert title and "--the-last-argument" in title.group(1), title
    # The summary line of the report does the same with the target at the terminal's width.
    rep = coldstart("report", prof, env={"COLUMNS": "70"})
    first = rep.stdout.split("\n")[0]
    assert len(first) <= 70 and first.startswith("coldstart: /") and "\u2026" in first, first
    assert "--the-last-argument" in first, first
