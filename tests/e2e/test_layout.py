"""tests/check_layout.py, the rule of direction of src/ (docs/design.md, "The map"):
the tree passes it, and a tree with an upward include, a new module cycle, an
include not written from src/ or a file outside the stage folders fails it."""
import os
import shutil
import subprocess
import sys

from conftest import ROOT

CHECK = os.path.join(ROOT, "tests", "check_layout.py")


def run_check(*args):
    return subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True, timeout=120)


def tree(tmp_path, files):
    src = tmp_path / "src"
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    return str(src)


def test_the_tree_keeps_the_rule():
    r = run_check("--counts")
    assert r.returncode == 0, r.stderr
    assert " 0 upward," in r.stdout


def test_the_tree_keeps_the_rule_in_its_calls_too():
    obj = os.path.join(ROOT, "build", "obj")
    if not os.path.isdir(obj) or not shutil.which("nm"):
        print("no build/obj (run make) or no nm: the call edges are checked by make layout instead")
        return
    r = run_check("--objects", obj, "--counts")
    assert r.returncode == 0, r.stderr


def test_an_include_up_the_stages_fails(tmp_path):
    src = tree(tmp_path, {
        "util.h": "", "util.c": '#include "util.h"\n',
        "model/profile.h": '#include "util.h"\n#include "render/report.h"\n',
        "model/profile.c": '#include "model/profile.h"\n',
        "render/report.h": '#include "model/profile.h"\n',
        "render/report.c": '#include "render/report.h"\n',
    })
    r = run_check("--src", src)
    assert r.returncode == 1
    assert "upward edge: model/profile -> render/report (include)" in r.stderr
    assert "module cycle of 2: model/profile, render/report" in r.stderr


def test_a_new_cycle_in_one_folder_fails(tmp_path):
    src = tree(tmp_path, {
        "model/a.h": "", "model/a.c": '#include "model/a.h"\n#include "model/b.h"\n',
        "model/b.h": "", "model/b.c": '#include "model/b.h"\n#include "model/a.h"\n',
    })
    r = run_check("--src", src, "--counts")
    assert r.returncode == 1
    assert "module cycle of 2: model/a, model/b" in r.stderr
    assert "0 upward, 1 cycles" in r.stdout


def test_side_by_side_stages_do_not_use_each_other(tmp_path):
    src = tree(tmp_path, {
        "plan/p.h": "", "plan/p.c": '#include "plan/p.h"\n#include "analysis/a.h"\n',
        "analysis/a.h": "", "analysis/a.c": '#include "analysis/a.h"\n',
    })
    r = run_check("--src", src)
    assert r.returncode == 1 and "upward edge: plan/p -> analysis/a" in r.stderr


def test_an_include_must_name_its_folder(tmp_path):
    src = tree(tmp_path, {
        "model/a.h": "", "model/a.c": '#include "a.h"\n',
    })
    r = run_check("--src", src)
    assert r.returncode == 1
    assert 'src/model/a.c:1: #include "a.h" should be "model/a.h"' in r.stderr


def test_a_folder_that_is_no_stage_fails(tmp_path):
    src = tree(tmp_path, {"misc/x.c": "int x;\n"})
    r = run_check("--src", src)
    assert r.returncode == 1 and "folder 'misc' is no stage" in r.stderr


def test_a_downward_include_passes(tmp_path):
    src = tree(tmp_path, {
        "util.h": "", "util.c": '#include "util.h"\n',
        "model/profile.h": '#include "util.h"\n', "model/profile.c": '#include "model/profile.h"\n',
        "cmd/main.c": '#include "model/profile.h"\n#include <stdio.h>\n',
    })
    r = run_check("--src", src, "--counts")
    assert r.returncode == 0, r.stderr
    assert "2 module edges" in r.stdout and "0 upward, 0 cycles" in r.stdout


def test_a_cycle_between_the_export_table_and_a_format_fails(tmp_path):
    # render/export/ was a tolerated cycle until export.c's shared helpers moved
    # to frames.c; a format that calls back into the table fails again.
    src = tree(tmp_path, {
        "render/export/export.h": "",
        "render/export/export.c": '#include "render/export/export.h"\n#include "render/export/svg.h"\n',
        "render/export/svg.h": "",
        "render/export/svg.c": '#include "render/export/svg.h"\n#include "render/export/export.h"\n',
    })
    r = run_check("--src", src, "--counts")
    assert r.returncode == 1
    assert "module cycle of 2: render/export/export, render/export/svg" in r.stderr
    assert "(2 modules in them, 0 tolerated)" in r.stdout


def test_a_cycle_between_the_profile_and_its_timeline_fails(tmp_path):
    # The last tolerated cycle, cut when the timeline's builder moved to
    # ingest/ and its tree view to render/export/: TOLERATED is empty.
    src = tree(tmp_path, {
        "model/profile.h": '#include "model/timeline.h"\n',
        "model/profile.c": '#include "model/profile.h"\n',
        "model/timeline.h": "",
        "model/timeline.c": '#include "model/timeline.h"\n#include "model/profile.h"\n',
    })
    r = run_check("--src", src, "--counts")
    assert r.returncode == 1
    assert "module cycle of 2: model/profile, model/timeline" in r.stderr
    assert "(2 modules in them, 0 tolerated)" in r.stdout
