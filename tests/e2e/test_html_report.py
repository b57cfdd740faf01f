"""The HTML report in a real browser (headless Chromium, 1280x800): it renders
with no script error, shows the summary, processes, findings and modules, the
module table starts by cost and sorts by any column (docs/export.md)."""
import os
import shutil
import subprocess

import pytest

import export_profiles as ep
from conftest import DEBIAN_PYTHON, ROOT

CONSUMERS = os.path.join(ROOT, "tests", "consumers")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def browser_problem():
    """Why Chromium cannot be driven here, or None.  Chromium itself is started once, so a skip
    says what truly failed, not that a file was missing."""
    if not shutil.which("node"):
        return "node is not installed (tests/install-deps.sh installs nodejs)"
    if not os.path.isdir(os.path.join(CONSUMERS, "node_modules", "playwright-core")):
        return "playwright-core is missing: run 'npm ci --prefix tests/consumers' (tests/install-deps.sh does)"
    if not os.access(CHROMIUM, os.X_OK):
        return "no Chromium at %s (Debian package 'chromium', in tests/install-deps.sh)" % CHROMIUM
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", "about:blank"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or "<html" not in r.stdout:
        return "Chromium cannot run here: exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])
    return None


@pytest.fixture(scope="module")
def browser():
    why = browser_problem()
    if why:
        print("skipping the browser test: " + why)
        pytest.skip(why)


def check(page, shot):
    r = subprocess.run(["node", os.path.join(CONSUMERS, "html_check.mjs"), str(page), str(shot)],
                       capture_output=True, text=True, timeout=240, cwd=CONSUMERS)
    assert r.returncode == 0, r.stderr
    import json
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_html_report_renders_and_sorts(coldstart, browser, tmp_path):
    roots = ep.real_roots(DEBIAN_PYTHON)
    doc = ep.profile_json([[roots, ep.synthetic_roots(12, seed=5)]], findings=[
        {"id": "heavy-import", "severity": "warning", "title": "'asyncio' takes 40% of the import time",
         "evidence": "asyncio costs 40 ms", "fix": "defer it", "module": "asyncio", "cost_us": 40000}])
    path = ep.write(tmp_path / "real.json", doc)
    page = tmp_path / "r.html"
    r = coldstart("export", path, "-o", page)
    assert r.returncode == 0, r.stderr
    shot = tmp_path / "shot.png"
    res = check(page, shot)
    assert res["errors"] == []
    assert res["viewport"] == {"width": 1280, "height": 800}
    with open(shot, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(head[16:20], "big") == 1280 and int.from_bytes(head[20:24], "big") == 800
    assert os.path.getsize(shot) > 20000  # a blank page compresses to a few KiB
    for h in ("Summary", "Findings (1)", "Flamegraph", "Processes (2)", "Modules"):
        assert any(x.startswith(h) for x in res["headings"]), (h, res["headings"])
    assert "Summary" in res["first_screen"]
    text = res["body_text"]
    assert "'asyncio' takes 40% of the import time" in text and "defer it" in text
    assert "python3 app.py" in text and "python3 -c child1" in text
    assert res["processes"] == 2
    # By cost first: cumulative time, largest first.
    cum = res["default_cum"]
    ep_order = {n.name: i for i, n in enumerate(ep.walk(roots))}
    assert cum == sorted(cum, reverse=True) and cum[0] == max(n.cum_us for n in ep.walk(roots))
    # Any column sorts: a first click sorts descending, a second reverses.  (The columns are clicked in order,
    # module first, which clears the cost column's initial direction.)
    def runs(v):
        return [x for i, x in enumerate(v) if i == 0 or v[i - 1] != x]
    for name, got in res["sorted"].items():
        first, second = got["first"], got["second"]
        assert len(first) == len(second) == len(cum)
        if name in ("self", "cumulative", "depth", "process"):
            assert first == sorted(first, reverse=True), (name, first[:8])
            assert second == sorted(second), (name, second[:8])
        elif name == "module":
            assert second == first[::-1] and first != sorted(first, key=lambda m: ep_order.get(m, 0)), name
        else:
            assert runs(second) == runs(first)[::-1] and len(runs(first)) > 1, (name, runs(first))


def test_html_before_and_after_ready(coldstart, tmp_path):
    """gunicorn -w 2: ready is the first answer, so the master and the worker that answered imported before
    it, though the workers were forked after the master listened; the page says so per process and per module,
    and gives the listening moment beside ready."""
    import re
    import socket
    if not shutil.which("gunicorn") or subprocess.run([DEBIAN_PYTHON, "-c", "import flask"]).returncode:
        pytest.skip("gunicorn or python3-flask is not installed (tests/install-deps.sh)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "g.json"
    r = coldstart("profile", "--python", DEBIAN_PYTHON, "--ready", "http://127.0.0.1:%d/health" % port,
                  "--timeout", "60", "-q", "-o", out, "--no-report", "--html", tmp_path / "g.html", "--",
                  "gunicorn", "-w", "2", "-b", "127.0.0.1:%d" % port, "app:app",
                  cwd=os.path.join(ROOT, "samples", "flask-app"))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "g.html").read_text()
    assert "<th>began</th>" in page
    assert re.search(r"imports by readiness</th><td>[\d.]+ (ms|s) before ready, ", page), page[:2000]
    procs = re.search(r'<table id="cs-processes".*?</table>', page, re.S).group(0)
    assert "before ready</th><th class=\"n\">after ready</th>" in procs
    rows = re.findall(r"<tr>(.*?)</tr>", procs, re.S)[1:]
    assert len(rows) >= 3, rows
    cells = [re.findall(r'data-v="(-?\d+)"', row) for row in rows]
    # columns with data-v: #, pid, modules, imports, before, after
    after = [int(c[5]) for c in cells]
    before = [int(c[4]) for c in cells]
    assert before[0] > 0 and after[0] == 0  # the master imported everything before it was ready
    # The worker that answered loaded the app before its answer (the other may still be loading then).
    assert sum(1 for b in before[1:] if b > 0) >= 1, cells
    assert re.search(r"listening after</th><td>[\d.]+ (ms|s) \(median", page), page[:3000]
    r = coldstart("export", out, "--all-procs", "-o", tmp_path / "all.html")
    assert r.returncode == 0, r.stderr
    mods = (tmp_path / "all.html").read_text()
    assert "<td>before ready</td>" in mods
