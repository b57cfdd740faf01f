"""check and diff for CI (docs/diff-check.md): Markdown and GitHub annotations,
the failed-rule count, budgets whose module never appears, and diff's warning
when the two profiles are not like for like."""
import re

import pytest

import export_profiles as ep


@pytest.fixture
def profiles(tmp_path):
    def make(name, runs, **kw):
        return ep.write(tmp_path / name, ep.profile_json(runs, **kw))
    return make


def app_runs(extra=0):
    asyncio_ = ep.Node("asyncio", 3000, kind="stdlib", children=[ep.Node("asyncio.events", 2000, kind="stdlib")])
    web = ep.Node("web", 5000 + extra, kind="thirdparty", children=[asyncio_])
    return [[[ep.Node("encodings", 2000, kind="startup"), ep.Node("app", 1000 + jitter, children=[web])]]
            for jitter in (0, 400, 900)]


RULES = ("--budget", "total=10ms", "--budget", "web=5ms", "--budget", "app=1s", "--forbid", "asyncio",
         "--forbid", "xml")


def test_check_counts_the_failed_rules(coldstart, profiles):
    r = coldstart("check", profiles("app.json", app_runs()), *RULES)
    assert r.returncode == 1
    assert r.stdout.rstrip().endswith("check failed (3 of 5 rules)"), r.stdout
    r = coldstart("check", profiles("app.json", app_runs()), "--budget", "total=1s", "--forbid", "xml")
    assert r.returncode == 0
    assert r.stdout.rstrip().endswith("check passed (2 rules)"), r.stdout


def test_check_warns_about_a_budget_whose_module_never_appears(coldstart, profiles):
    p = profiles("app.json", app_runs())
    r = coldstart("check", p, "--budget", "wbe=1ms", "--budget", "web=1s")
    assert r.returncode == 0  # a budget that cannot fail still passes: the warning says why
    assert re.search(r"^warning: budget 'wbe': no module of that name was imported", r.stdout, re.M), r.stdout
    assert "'web'" not in r.stdout.split("warning:")[1]
    r = coldstart("check", p, "--budget", "wbe=1ms", "--format", "github")
    assert re.search(r"^::warning title=coldstart budget wbe::budget 'wbe': no module", r.stdout, re.M), r.stdout
    r = coldstart("check", p, "--budget", "wbe=1ms", "--format", "markdown")
    assert "> **Warning:** budget 'wbe'" in r.stdout


def test_check_markdown(coldstart, profiles, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    r = coldstart("check", profiles("app.json", app_runs()), *RULES, "--format", "markdown",
                  "--markdown", summary)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0] == "### coldstart check failed (3 of 5 rules)"
    assert "| rule | verdict | measured |" in lines
    assert "| budget `total` | **FAIL** | 13.4 ms > 10.0 ms |" in lines
    assert "| budget `app` | ok | 11.4 ms <= 1.00 s |" in lines
    assert "| forbid `asyncio` | **FAIL** | asyncio imported via app > web > asyncio |" in lines
    # --markdown appends (GITHUB_STEP_SUMMARY is shared by the job's steps).
    text = summary.read_text()
    assert text.startswith("# earlier step\n### coldstart check failed (3 of 5 rules)")


def test_check_github_annotations(coldstart, profiles):
    p = profiles("app.json", app_runs())
    r = coldstart("check", p, *RULES, "--format", "github")
    assert r.returncode == 1
    errors = [l for l in r.stdout.splitlines() if l.startswith("::error ")]
    assert len(errors) == 3, r.stdout
    assert "::error title=coldstart budget total::total: 13.4 ms > 10.0 ms (%s)" % p in errors
    assert r.stdout.rstrip().endswith("check failed (3 of 5 rules)")


def test_check_format_errors(coldstart, profiles, tmp_path):
    p = profiles("app.json", app_runs())
    r = coldstart("check", p, "--budget", "total=1s", "--format", "html")
    assert r.returncode == 2 and "--format takes text, markdown or github, not 'html'" in r.stderr
    r = coldstart("check", p, "--budget", "total=1s", "--markdown", tmp_path / "no" / "dir.md")
    assert r.returncode == 1 and "no directory" in r.stderr  # an unwritable file, checked before any work


def test_diff_markdown_and_github(coldstart, profiles, tmp_path):
    a = profiles("a.json", app_runs())
    b = profiles("b.json", app_runs(extra=20000))
    r = coldstart("diff", a, b, "--format", "markdown", "--markdown", tmp_path / "s.md")
    assert r.returncode == 1
    assert r.stdout.startswith("### coldstart diff: 2 regressions flagged\n"), r.stdout
    assert re.search(r"^\| `web` \| \+20\.0 ms \| 5\.0 ms → 25\.0 ms \| \+20\.0 ms \| ", r.stdout, re.M), r.stdout
    assert "| import total | 13.4 ms | 33.4 ms | +20.0 ms | **regression** |" in r.stdout
    assert (tmp_path / "s.md").read_text() == r.stdout
    assert "not like for like" not in r.stdout + r.stderr
    r = coldstart("diff", a, b, "--format", "github")
    assert r.returncode == 1
    assert re.search(r"^::error title=coldstart diff%3A web slower::web: self 5\.0 ms -> 25\.0 ms", r.stdout, re.M)
    assert r.stdout.rstrip().endswith("2 regressions flagged")


def test_diff_warns_when_profiles_are_not_like_for_like(coldstart, profiles, tmp_path):
    a = profiles("a.json", app_runs())
    b_doc = ep.profile_json(app_runs(), target=("other.py",), python_version="3.12.1")
    b_doc["limits"]["cpus"] = 0.1
    b_doc["limits"]["memory"] = 128 << 20
    b = ep.write(tmp_path / "b.json", b_doc)
    r = coldstart("diff", a, b)
    assert r.returncode == 1 or r.returncode == 0
    warnings = [l for l in r.stderr.splitlines() if l.startswith("coldstart: warning: ")]
    assert len(warnings) == 3, r.stderr
    assert "different limits: no limits, then 0.1 CPU, 128.0 MiB memory" in warnings[0]
    assert "different interpreters: /usr/bin/python3 (Python 3.11.2), then /usr/bin/python3 (Python 3.12.1)" \
        in warnings[1]
    assert "different targets: 'app.py', then 'other.py'" in warnings[2]
    r = coldstart("diff", a, b, "--format", "github")
    assert r.stdout.count("::warning title=coldstart diff%3A not like for like::") == 3
    r = coldstart("diff", a, b, "--format", "markdown")
    assert r.stdout.count("> **Warning:** the profiles ran") == 3
    # The same profile twice: no warning.
    r = coldstart("diff", a, a)
    assert r.returncode == 0 and "warning" not in r.stderr
