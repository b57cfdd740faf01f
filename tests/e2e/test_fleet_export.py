"""coldstart export to the backends a fleet already runs, each checked by the
backend's own software: pprof read by `go tool pprof` (Debian golang-go), OTLP
decoded and verified by the official OpenTelemetry bindings (npm
@opentelemetry/otlp-transformer), Prometheus text pushed to a real
Pushgateway (Debian prometheus-pushgateway) and read back from it.  Profiles
come from real traced runs of Debian's interpreter: a script that starts a
second Python process, and an HTTP server measured to its first response."""
import gzip
import json
import os
import re
import shutil
import subprocess

import pytest

import fleet_util as fu
from conftest import DEBIAN_PYTHON

APP = """\
import json, email.parser, subprocess, sys
subprocess.run([sys.executable, "-c", "import decimal, fractions"], check=True)
"""

needs_go = pytest.mark.skipif(not shutil.which("go"), reason="go is not installed (Debian golang-go)")
needs_otlp = pytest.mark.skipif(bool(fu.missing_otlp_oracle()), reason=fu.missing_otlp_oracle() or "ready")


@pytest.fixture(scope="module")
def app_profile(tmp_path_factory):
    from conftest import run_coldstart
    d = tmp_path_factory.mktemp("app")
    (d / "app.py").write_text(APP)
    out = d / "app.json"
    r = run_coldstart("profile", "--no-report", "-o", out, "--python", DEBIAN_PYTHON, str(d / "app.py"),
                      timeout=180)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert len(doc["runs"][0]["processes"]) == 2, "the app's child process was not traced"
    return out, doc


@pytest.fixture(scope="module")
def server_profile(tmp_path_factory):
    from conftest import run_coldstart
    d = tmp_path_factory.mktemp("server")
    port = fu.free_port()
    out = d / "server.json"
    r = run_coldstart("profile", "--no-report", "-o", out, "--ready", "http://127.0.0.1:%d/" % port,
                      "--python", DEBIAN_PYTHON, "-m", "http.server", "--bind", "127.0.0.1", str(port),
                      timeout=180)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    # With --ready http:// the first good answer is the readiness: the first
    # response counts 0 from it (docs/profile-format.md).
    assert doc["runs"][0]["ready_us"] > 0 and doc["runs"][0]["first_response_us"] == 0
    return out, doc


def self_times(doc, run=0):
    """Sum of self time (us) per module name over every process of the run, as pprof merges functions."""
    flat = {}
    for proc in doc["runs"][run]["processes"]:
        for node in proc["nodes"]:
            if node[3] > 0:
                flat[node[0]] = flat.get(node[0], 0) + node[3]
    return flat


# --- pprof ----------------------------------------------------------------

def parse_raw(text):
    """go tool pprof -raw's samples: [(value, stack of location ids, string labels, pid)]."""
    lines = text[text.index("Samples:"):text.index("Locations")].splitlines()[2:]
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^\s+(\d+): ([\d ]+)$", lines[i])
        assert m, lines[i]
        labels, pid = lines[i + 1].strip(), re.match(r"^\s+pid:\[(\d+)\]$", lines[i + 2]).group(1)
        out.append((m.group(1), m.group(2).strip(), labels, pid))
        i += 3
    return out


@needs_go
def test_pprof_top_matches_the_profiles_self_times(coldstart, app_profile, tmp_path):
    path, doc = app_profile
    out = tmp_path / "app.pb.gz"
    r = coldstart("export", path, "--format", "pprof", "-o", out)
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    # Gzip once (not again for the .gz name): the inside is the protobuf, not a second gzip.
    assert data[:2] == b"\x1f\x8b" and gzip.decompress(data)[:2] != b"\x1f\x8b"
    top = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=8", "-unit=us", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert top.returncode == 0, top.stderr
    print(top.stdout)
    assert "Type: import" in top.stdout
    rows = re.findall(r"^\s*(\d+)us\s+[\d.]+%\s+[\d.]+%\s+\d+us\s+[\d.]+%\s+(\S+)\s*$", top.stdout, re.M)
    assert len(rows) == 8, top.stdout
    flat = self_times(doc)
    want = sorted(flat.values(), reverse=True)[:8]
    assert [int(v) for v, _ in rows] == want
    for value, name in rows:
        assert flat[name] == int(value), name


@needs_go
def test_pprof_raw_samples_are_import_stacks_with_labels(coldstart, app_profile, tmp_path):
    path, doc = app_profile
    out = tmp_path / "app.pb.gz"
    assert coldstart("export", path, "-f", "pprof", "-o", out).returncode == 0
    raw = subprocess.run(["go", "tool", "pprof", "-raw", str(out)], capture_output=True, text=True, timeout=120)
    assert raw.returncode == 0, raw.stderr
    assert "import/microseconds" in raw.stdout
    samples = parse_raw(raw.stdout)
    names = {i: n for i, n, _ in re.findall(r"^\s+(\d+): 0x0 M=1 (.*) (\S*):0 s=0$", raw.stdout, re.M)}
    procs = doc["runs"][0]["processes"]
    # pprof merges samples of equal stacks and labels (importtime rows a module name twice under one parent).
    want = {}
    for p in procs:
        for i, n in enumerate(p["nodes"]):
            if n[3] <= 0:
                continue
            chain, up = [], i
            while up >= 0:
                chain.append(p["nodes"][up][0])
                up = p["nodes"][up][2]
            key = (p["pid"], tuple(chain))
            want[key] = want.get(key, 0) + n[3]
    got = {}
    for value, stack, labels, pid in samples:
        frames = [names[i] for i in stack.split()]
        assert frames[-1].endswith("(pid %s)" % pid), frames
        key = (int(pid), tuple(frames[:-1]))
        got[key] = got.get(key, 0) + int(value)
    assert got == want
    for value, stack, labels, pid in samples:
        assert "phase:[" in labels and "role:[" in labels and "kind:[" in labels
    roles = {p["pid"]: p["role"] for p in procs}
    for _, _, labels, pid in samples:
        assert "role:[%s]" % roles[int(pid)] in labels
    # Stacks: leaf first, the process frame last; the deepest stack is the deepest import plus the process.
    depth = max(len(s.split()) for _, s, _, _ in samples)
    assert depth == 1 + max(max(n[1] for n in p["nodes"]) + 1 for p in procs)


# --- OTLP -----------------------------------------------------------------

def spans_by_name(res):
    out = {}
    for s in res["spans_list"]:
        out.setdefault(s["name"], []).append(s)
    return out


@needs_otlp
@pytest.mark.parametrize("fmt,form", [("otlp", "protobuf"), ("otlp-json", "json")])
def test_otlp_decodes_with_the_official_bindings(coldstart, app_profile, tmp_path, fmt, form):
    path, doc = app_profile
    out = tmp_path / ("app." + fmt)
    r = coldstart("export", path, "--format", fmt, "-o", out)
    assert r.returncode == 0, r.stderr
    res = fu.otlp_check(out, form)
    assert res["ok"], res.get("error")
    print({k: v for k, v in res.items() if k != "spans_list"})
    run = doc["runs"][0]
    procs = run["processes"]
    # One trace, one root (the main process); the child process hangs under it.
    assert res["traces"] == 1 and res["roots"] == 1
    nr_phase = 1 if procs[0]["tracer_ns"] > procs[0]["start_ns"] else 0
    nr_phase += sum(1 for p in procs[1:] if p["origin"] == "exec" and p["tracer_ns"] > p["start_ns"])
    assert res["spans"] == sum(len(p["nodes"]) for p in procs) + len(procs) + nr_phase
    resource = res["resource"]
    assert resource["service.name"] == "app.py"
    assert resource["process.pid"] == str(procs[0]["pid"])
    assert resource["process.executable.path"] == DEBIAN_PYTHON
    assert resource["process.runtime.version"] == doc["python_version"]
    assert resource["coldstart.limits"] == "no limits"
    byname = spans_by_name(res)
    spans = {s["id"]: s for s in res["spans_list"]}
    child = [s for s in res["spans_list"] if s["attrs"].get("process.pid") == str(procs[1]["pid"])][0]
    main = [s for s in res["spans_list"] if s["attrs"].get("process.pid") == str(procs[0]["pid"])]
    assert child["parent"] == [m for m in main if not m["parent"]][0]["id"]
    # Imports the tracer timed keep their real start and end (relative to their process) where the
    # tracer's times nest (docs/export.md: where they contradict nesting, the layout clamps them).
    timed = 0
    fields = doc["timing_fields"]
    for p, proc_span in ((procs[0], [m for m in main if not m["parent"]][0]), (procs[1], child)):
        tms = [dict(zip(fields, t)) for t in p["timing"]]
        known = [tm["start_ns"] >= 0 and tm["end_ns"] >= 0 for tm in tms]
        for i, (node, tm) in enumerate(zip(p["nodes"], tms)):
            if not known[i]:
                continue
            up = node[2]
            before = [j for j in range(i) if p["nodes"][j][2] == up]
            if up >= 0 and not (known[up] and tms[up]["start_ns"] <= tm["start_ns"] and
                                tm["end_ns"] <= tms[up]["end_ns"]):
                continue
            if before and not (known[before[-1]] and tms[before[-1]]["end_ns"] <= tm["start_ns"]):
                continue
            # Both processes may import a module with the same own time: the one at this offset.
            exact = [s for s in byname["import " + node[0]]
                     if int(s["start"]) - int(proc_span["start"]) == tm["start_ns"] and
                     int(s["end"]) - int(s["start"]) == tm["end_ns"] - tm["start_ns"]]
            assert len(exact) == 1, (node[0], byname["import " + node[0]], tm)
            assert exact[0]["attrs"]["coldstart.self_us"] == str(node[3])
            timed += 1
    assert timed >= 4
    decimal = byname["import decimal"][0]
    assert decimal["attrs"]["coldstart.kind"] == "stdlib"
    assert decimal["attrs"]["coldstart.phase"] == "import"
    assert any(spans[s["parent"]]["name"].startswith("import ") for s in res["spans_list"]
               if s["name"].startswith("import ") and s["parent"] in spans)


@needs_otlp
def test_otlp_json_and_protobuf_are_the_same_trace(coldstart, app_profile, tmp_path):
    path, _ = app_profile
    a, b = tmp_path / "a.pb", tmp_path / "a.json"
    assert coldstart("export", path, "-f", "otlp", "-o", a).returncode == 0
    assert coldstart("export", path, "-f", "otlp-json", "-o", b).returncode == 0
    ra, rb = fu.otlp_check(a, "protobuf"), fu.otlp_check(b, "json")
    assert ra["ok"] and rb["ok"]
    assert ra["spans_list"] == rb["spans_list"] and ra["resource"] == rb["resource"]
    # A second export of the same profile is the same trace (ids come from the profile).
    c = tmp_path / "c.pb"
    assert coldstart("export", path, "-f", "otlp", "-o", c).returncode == 0
    assert c.read_bytes() == a.read_bytes()


@needs_otlp
def test_otlp_server_has_ready_and_first_response_phases(coldstart, server_profile, tmp_path):
    path, doc = server_profile
    out = tmp_path / "s.json"
    r = coldstart("export", path, "-f", "otlp-json", "-o", out, "--service-name", "web")
    assert r.returncode == 0, r.stderr
    res = fu.otlp_check(out, "json")
    assert res["ok"], res.get("error")
    assert res["resource"]["service.name"] == "web"
    run = doc["runs"][0]
    byname = spans_by_name(res)
    root = [s for s in res["spans_list"] if not s["parent"]][0]
    ready, first = byname["until ready"][0], byname["first response"][0]
    assert ready["parent"] == root["id"] and first["parent"] == root["id"]
    assert int(ready["start"]) == int(root["start"])
    assert int(ready["end"]) - int(ready["start"]) == run["ready_ns"] - run["processes"][0]["start_ns"]
    assert int(first["start"]) == int(ready["end"])
    assert int(first["end"]) - int(first["start"]) == run["first_response_us"] * 1000
    assert root["attrs"]["coldstart.ready_us"] == str(run["ready_us"])
    phases = {s["attrs"]["coldstart.phase"] for s in res["spans_list"] if s["name"].startswith("import ")}
    assert "startup" in phases and "before ready" in phases


def test_otlp_service_name_from_the_sdk_variable(coldstart, app_profile, tmp_path):
    path, _ = app_profile
    r = coldstart("export", path, "-f", "otlp-json", env={"OTEL_SERVICE_NAME": "billing"})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    attrs = {a["key"]: a["value"] for a in doc["resourceSpans"][0]["resource"]["attributes"]}
    assert attrs["service.name"] == {"stringValue": "billing"}


# --- Prometheus -----------------------------------------------------------

@pytest.mark.skipif(not shutil.which("prometheus-pushgateway"),
                    reason="prometheus-pushgateway is not installed (Debian prometheus-pushgateway)")
@pytest.mark.skipif(not shutil.which("curl"), reason="curl is not installed")
def test_prometheus_text_pushed_to_a_real_pushgateway(coldstart, server_profile, tmp_path):
    path, doc = server_profile
    out = tmp_path / "s.prom"
    r = coldstart("export", path, "-f", "prometheus", "--top", "3", "-o", out)
    assert r.returncode == 0, r.stderr
    gw = fu.pushgateway(tmp_path)
    try:
        push = subprocess.run(["curl", "-sS", "--fail-with-body", "--data-binary", "@%s" % out,
                               gw.url + "/metrics/job/coldstart/instance/web-1"],
                              capture_output=True, text=True, timeout=60)
        assert push.returncode == 0, push.stdout + push.stderr
        back = fu.parse_exposition(fu.http_get(gw.url + "/metrics"))
    finally:
        gw.stop()
    ours = {(n, l.get("module")): (l, v) for n, l, v in back if n.startswith("coldstart_")}
    run = doc["runs"][0]
    labels, wall = ours[("coldstart_wall_seconds", None)]
    assert labels["job"] == "coldstart" and labels["instance"] == "web-1"
    assert labels["interpreter"] == DEBIAN_PYTHON
    assert labels["target"] == "-m http.server --bind 127.0.0.1 " + doc["target"][-1]
    assert wall == run["wall_us"] / 1e6
    assert ours[("coldstart_ready_seconds", None)][1] == run["ready_us"] / 1e6
    assert ours[("coldstart_first_response_seconds", None)][1] == run["first_response_us"] / 1e6
    assert ours[("coldstart_cpu_seconds", None)][1] == (run["user_us"] + run["sys_us"]) / 1e6
    assert ours[("coldstart_peak_rss_bytes", None)][1] == run["maxrss_kb"] * 1024
    main = run["processes"][0]
    assert ours[("coldstart_import_seconds", None)][1] == sum(n[4] for n in main["nodes"] if n[2] == -1) / 1e6
    per_name = {}
    for n in main["nodes"]:
        per_name[n[0]] = per_name.get(n[0], 0) + max(n[4], 0)
    modules = sorted(((cum, name) for name, cum in per_name.items()), reverse=True)[:3]
    got = sorted(((v, l["module"]) for (name, mod), (l, v) in ours.items()
                  if name == "coldstart_module_import_seconds"), reverse=True)
    assert got == [(cum / 1e6, name) for cum, name in modules]


def test_prometheus_label_values_are_escaped(coldstart, tmp_path):
    import export_profiles as ep
    doc = ep.profile_json([[ep.synthetic_roots(3)]])
    doc["target"] = ['we"ird\\app.py', "line\nbreak"]
    doc["runs"][0]["processes"][0]["nodes"][0][0] = 'mod"x'
    p = tmp_path / "p.json"
    p.write_text(json.dumps(doc))
    r = coldstart("export", p, "-f", "prometheus")
    assert r.returncode == 0, r.stderr
    samples = fu.parse_exposition(r.stdout)
    assert samples and all(l["target"] == 'we"ird\\app.py line?break' for _, l, _ in samples)
    assert any(l.get("module") == 'mod"x' for _, l, _ in samples)
    assert "\nline" not in r.stdout


def test_prometheus_a_module_imported_twice_is_one_series(coldstart, tmp_path):
    """Two series with equal labels make a Pushgateway refuse the whole push: a name the tree
    holds twice (importtime prints a row per attempt) is one series, its times summed."""
    import export_profiles as ep
    doc = ep.profile_json([[ep.synthetic_roots(6)]])
    nodes = doc["runs"][0]["processes"][0]["nodes"]
    nodes[1][0] = nodes[0][0]
    p = tmp_path / "p.json"
    p.write_text(json.dumps(doc))
    r = coldstart("export", p, "-f", "prometheus", "--top", "100")
    assert r.returncode == 0, r.stderr
    series = [(l["module"], v) for n, l, v in fu.parse_exposition(r.stdout) if n == "coldstart_module_import_seconds"]
    names = [m for m, _ in series]
    assert len(names) == len(set(names))
    assert dict(series)[nodes[0][0]] == pytest.approx((nodes[0][4] + nodes[1][4]) / 1e6)


@pytest.mark.parametrize("fmt", ["pprof", "otlp", "otlp-json", "prometheus"])
def test_new_formats_refuse_a_profile_without_runs(coldstart, tmp_path, fmt):
    import export_profiles as ep
    p = ep.write(tmp_path / "e.json", ep.profile_json([]))
    r = coldstart("export", p, "-f", fmt, "-o", tmp_path / "x")
    assert r.returncode == 1 and "no runs" in r.stderr
    assert not (tmp_path / "x").exists()


def test_unknown_format_lists_every_format(coldstart, app_profile):
    r = coldstart("export", app_profile[0], "-f", "png")
    assert r.returncode == 2
    for fmt in ("pprof", "otlp", "otlp-json", "prometheus"):
        assert fmt in r.stderr


@needs_otlp
def test_pathologically_deep_tree(coldstart, tmp_path):
    """3,000 nested imports: OTLP and Prometheus cope (the OTLP decodes, every parent resolves);
    pprof, whose every sample repeats its whole stack, refuses clearly, as folded does."""
    import export_profiles as ep
    doc = ep.profile_json([[[ep.Node("m", 10)]]])
    doc["runs"][0]["processes"][0]["nodes"] = [["m%d" % i, i, i - 1, 10, 10 * (3000 - i), 0, "app"]
                                               for i in range(3000)]
    path = ep.write(tmp_path / "deep.json", doc)
    for fmt in ("otlp", "prometheus"):
        r = coldstart("export", path, "-f", fmt, "-o", tmp_path / ("deep." + fmt), timeout=60)
        assert r.returncode == 0, (fmt, r.stderr)
    res = fu.otlp_check(tmp_path / "deep.otlp", "protobuf")
    assert res["ok"], res.get("error")
    assert res["spans"] == 3001 and res["roots"] == 1
    r = coldstart("export", path, "-f", "pprof", "-o", tmp_path / "deep.pb.gz", timeout=60)
    assert r.returncode == 1 and "deeper than 2048 levels" in r.stderr
    assert not (tmp_path / "deep.pb.gz").exists()
