"""The fleet view on the real thing: profiles of several targets pushed by
`coldstart report --push-gateway` (one instance each, as several machines
would) to Debian's prometheus-pushgateway, scraped by Debian's prometheus
2.42, and PromQL questions answered from it: "the 5 slowest cold starts"
and "import time p90 by target", checked against the profiles."""
import json
import shutil
import subprocess
import time
import urllib.parse

import pytest

import fleet_util as fu
from conftest import DEBIAN_PYTHON

TARGETS = {
    "small.py": "import json\n",
    "medium.py": "import json, email.parser, decimal\n",
    "large.py": "import json, email.parser, decimal, http.client, xml.dom.minidom, fractions\n",
}
INSTANCES = 3

pytestmark = pytest.mark.skipif(not (shutil.which("prometheus-pushgateway") and shutil.which("prometheus")),
                                reason="Debian prometheus-pushgateway and prometheus are needed")


def promql(prom, query):
    r = json.loads(fu.http_get(prom.url + "/api/v1/query?query=" + urllib.parse.quote(query)))
    assert r["status"] == "success", r
    return r["data"]["result"]


def quantile(q, values):
    """PromQL's quantile(): linear interpolation between the closest ranks."""
    v = sorted(values)
    rank = q * (len(v) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (rank - lo)


def test_promql_answers_from_pushed_profiles(coldstart, tmp_path):
    gw = fu.pushgateway(tmp_path)
    prom = None
    try:
        walls, imports = {}, {}
        for name, code in TARGETS.items():
            (tmp_path / name).write_text(code)
            for i in range(INSTANCES):
                out = tmp_path / ("%s-%d.json" % (name, i))
                r = coldstart("profile", "--no-report", "-o", out, "--python", DEBIAN_PYTHON, tmp_path / name)
                assert r.returncode == 0, r.stderr
                r = coldstart("report", out, "--no-report", "--push-gateway",
                              "%s/metrics/job/coldstart/instance/host-%d" % (gw.url, i))
                assert r.returncode == 0, r.stderr
                run = json.loads(out.read_text())["runs"][0]
                target = str(tmp_path / name)
                walls[(target, "host-%d" % i)] = run["wall_us"] / 1e6
                imports.setdefault(target, []).append(
                    sum(n[4] for n in run["processes"][0]["nodes"] if n[2] == -1) / 1e6)
        (tmp_path / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n"
            "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
            "    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % gw.port)
        prom = fu.Daemon(lambda port: ["prometheus", "--config.file=%s" % (tmp_path / "prometheus.yml"),
                                       "--storage.tsdb.path=%s" % (tmp_path / "tsdb"),
                                       "--web.listen-address=127.0.0.1:%d" % port],
                         "/-/ready", tmp_path, "prometheus")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = promql(prom, "count(coldstart_wall_seconds)")
            if got and int(got[0]["value"][1]) == len(walls):
                break
            time.sleep(0.5)
        else:
            pytest.fail("prometheus never scraped the %d profiles: %s" % (len(walls), got))

        top = promql(prom, "topk(5, coldstart_wall_seconds)")
        got = sorted(((float(s["value"][1]), s["metric"]["target"], s["metric"]["instance"]) for s in top),
                     reverse=True)
        want = sorted(((v, t, inst) for (t, inst), v in walls.items()), reverse=True)[:5]
        print("topk(5, coldstart_wall_seconds):\n" + "\n".join("  %.6f s  %s  %s" % g for g in got))
        assert got == want

        p90 = promql(prom, "quantile by (target) (0.9, coldstart_import_seconds)")
        got = {s["metric"]["target"]: float(s["value"][1]) for s in p90}
        print("quantile by (target) (0.9, coldstart_import_seconds):\n" +
              "\n".join("  %.6f s  %s" % (v, t) for t, v in sorted(got.items())))
        assert set(got) == set(imports)
        for t, values in imports.items():
            assert got[t] == pytest.approx(quantile(0.9, values), abs=1e-9), t
        # Module counts do not vary from run to run: the heaviest target imports the most.
        mods = promql(prom, "topk(1, max by (target) (coldstart_modules))")
        assert mods[0]["metric"]["target"].endswith("large.py")
    finally:
        if prom:
            prom.stop()
        gw.stop()
