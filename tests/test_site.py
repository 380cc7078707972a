"""Rendering from result files: a miniature site per state (fresh, stale, missing, failed), and
the real notebook built with --strict."""

import subprocess
import sys
from pathlib import Path

import pytest

from labnotebook.experiments import source_hash
from labnotebook.site import fmt
from labnotebook.store import Store

from conftest import FAULTS, ROOT, copy_project

GPU = "NVIDIA H100 80GB HBM3"

PAGE = """---
title: Tiny
date: 2026-11-21
summary: a fixture entry
---
# Tiny

{{ results_table("wrong_answer", baseline="torch") }}

Median: {{ value("wrong_answer", "1_skips_last", "small") }}.
"""


def row(name, kind="kernel", status="ok", median=0.01, **extra):
    r = {"kind": kind, "name": name, "case": "small", "params": {"n": 1000}, "timed": True,
         "status": status, "bytes": 12_000_000, "flops": None,
         "check": {"max_abs_err": 0.0, "max_rel_err": 0.0, "mismatches": 0, "elements": 1000}}
    if status == "ok":
        r["time"] = {"median_ms": median, "q10_ms": median * 0.9, "q90_ms": median * 1.1,
                     "min_ms": median * 0.8, "max_ms": median * 1.2, "reps": 100}
    return {**r, **extra}


def record(source):
    return {"experiment": "wrong_answer", "gpu": GPU, "title": "Tiny", "status": "ok",
            "source_hash": source, "duration_s": 1.0, "problems": [], "kernels": {},
            "ceiling": {"gbs": 3000.0, "median_ms": 0.7, "bytes": 2 << 30},
            "provenance": {"date": "2026-11-21T05:00:00+00:00", "compute_capability": "9.0",
                           "sm_count": 132, "driver": "580", "cuda_driver_api": "13.0",
                           "nvcc": "13.0.88", "pycuda": "2026.1", "numpy": "2.5", "torch": None,
                           "git_commit": "abc"},
            "rows": [row("1_skips_last", median=0.008), row("torch", kind="baseline", median=0.01)]}


def build(tmp_path: Path, state: str, strict: bool):
    """Build a one-page site whose results are in the given state; return (process, page html)."""
    project = copy_project(tmp_path, [FAULTS / "snippets" / "wrong_answer"])
    config = (ROOT / "mkdocs.yml").read_text().split("\nnav:")[0]
    (project / "mkdocs.yml").write_text(config + "\nnav:\n  - tiny.md\n")
    (project / "docs").mkdir()
    (project / "docs" / "tiny.md").write_text(PAGE)
    store = Store(project / "results")
    current = source_hash(project / "snippets" / "wrong_answer")
    if state == "fresh":
        store.write(record(current))
    elif state == "stale":
        store.write(record("0000000000000000"))
    elif state == "corrupt":
        store.write(record(current))
        store.path("wrong_answer", GPU).write_text('{"format": "labnotebook-results/1", "rows": [')
    elif state == "failed":
        store.write(record("0000000000000000"))
        failed = record(current)
        failed["rows"][0] = row("1_skips_last", status="failed",
                                error="wrong answer: c: 1 of 1000 elements wrong; worst at index [999]: "
                                      "got nan, want <1.5>")
        store.write_failure("wrong_answer", GPU, {**failed, "error": failed["rows"][0]["error"],
                                                  "failed_at": "2026-11-21T06:00:00+00:00"})
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", *(["--strict"] if strict else []),
                           "-f", str(project / "mkdocs.yml"), "-d", str(project / "site")],
                          capture_output=True, text=True)
    page = project / "site" / "tiny" / "index.html"
    return proc, page.read_text() if page.exists() else ""


def test_fresh_results_render_numbers_and_pass_strict(tmp_path):
    proc, html = build(tmp_path, "fresh", strict=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Median: 8.00 µs." in html
    assert "1.25×" in html  # speed-up over torch: 0.010 / 0.008
    assert "7.20–8.80 µs" in html  # the spread: 10th to 90th percentile
    assert "1,500 GB/s" in html and "50.0%" in html
    assert "Measured on NVIDIA H100 80GB HBM3" in html and "(fresh)" in html


@pytest.mark.parametrize("state, box, words", [
    ("stale", "Stale results", "results are stale"),
    ("missing", "Missing results", "has no results"),
    ("failed", "Last run failed", "the last run failed"),
    ("corrupt", "Missing results", "is corrupt"),
])
def test_untrustworthy_results_are_shown_and_fail_strict(tmp_path, state, box, words):
    proc, _ = build(tmp_path / "strict", state, strict=True)
    assert proc.returncode != 0
    assert words in proc.stderr
    proc, html = build(tmp_path / "lax", state, strict=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert box in html


def test_failed_row_shows_the_reason_not_a_number(tmp_path):
    _, html = build(tmp_path, "failed", strict=False)
    assert "✗ failed: wrong answer: c: 1 of 1000 elements wrong" in html
    assert "&lt;1.5&gt;" in html  # captured text is escaped, never raw HTML
    assert "Median: <span class=\"nb-problem\"" in html


def test_a_page_naming_a_result_that_does_not_exist_fails_strict(tmp_path):
    project = tmp_path / "p"
    proc, _ = build(project, "fresh", strict=True)
    assert proc.returncode == 0
    page = project / "docs" / "tiny.md"
    page.write_text(PAGE.replace('"small"', '"huge"'))
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                           str(project / "mkdocs.yml"), "-d", str(project / "site")],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "no result for '1_skips_last' at case 'huge'" in proc.stderr


def test_real_notebook_builds_strict(built_site):
    for page in ("index.html", "vec_add/index.html", "vec_add_3d/index.html"):
        assert (built_site / page).exists()
    html = (built_site / "vec_add" / "index.html").read_text()
    assert "<svg" in html and "GB/s" in html and "Measured on NVIDIA H100 80GB HBM3" in html
    assert "nb-problem" not in html and "Stale results" not in html
    assert "extern" in html and "vec_add_float4" in html  # the kernels themselves, embedded


def test_index_lists_entries_oldest_first(built_site):
    html = (built_site / "index.html").read_text()
    assert html.index("Vector add: is the GPU faster?") < html.index("Vector add in 3D")


@pytest.mark.parametrize("ms, text", [(0.0528, "52.8 µs"), (5.6, "5.60 ms"), (1234.0, "1.23 s")])
def test_duration_format(ms, text):
    assert fmt.duration(ms) == text


def test_rate_and_ratio_format():
    assert fmt.rate(2858.4, "GB/s") == "2,858 GB/s" and fmt.rate(17.01, "GB/s") == "17.0 GB/s"
    assert fmt.times(106.2) == "106×" and fmt.percent(91.94) == "91.9%"
