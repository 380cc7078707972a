"""The site's macros as plain functions: each result state and each edge case gives a marker and
a warning naming the page and the macro, never an exception; comparisons take their direction
from the data; claims the data contradicts fail. No MkDocs build here (see test_site_builds.py).
"""

from __future__ import annotations

import dataclasses
import datetime
import html
import re
import shutil

import pytest

from labnotebook import settings
from labnotebook.errors import NotebookError
from labnotebook.results.format import Check, Timing
from labnotebook.results.freshness import CurrentKeys
from labnotebook.results.rows import TransferRow
from labnotebook.results import noise
from labnotebook.site import dashboard, fmt, frontmatter, macros, notebook, plots
from site_support import H100, H200, ROOT, collecting_context, STATES, fixture_project, record, rows

STATE_WORDS = {"stale": "⚠ stale", "failed_headline": "⚠ failed", "failed_other": "⚠ run failed",
               "corrupt": "⚠ unreadable results", "missing": "⚠ no results"}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return fixture_project(tmp_path_factory.mktemp("states"))


@pytest.fixture
def ctx(root):
    return collecting_context(root)


def words(out: str) -> str:
    """What a reader sees of a macro's output: tags dropped, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", out))


# -- formatting ----------------------------------------------------------------------------------

@pytest.mark.parametrize("ms, text", [(0.0528, "52.8 µs"), (5.6, "5.60 ms"), (1234.0, "1.23 s")])
def test_duration(ms, text):
    assert fmt.duration(ms) == text


def test_rates_and_percentages():
    assert fmt.rate(2858.4, "GB/s") == "2,858 GB/s" and fmt.rate(17.01, "GB/s") == "17.0 GB/s"
    assert fmt.percent(91.94) == "91.9%" and fmt.percent(101.2) == "101%"


@pytest.mark.parametrize("ratio, verdict, words", [
    (1.25, "faster", "1.25× faster than `b`"), (0.8, "slower", "1.25× slower than `b`"),
    (0.00393, "slower", "254× slower than `b`"), (1.0004, "faster", "0.04% faster than `b`"),
    (1.04, "level", "as fast as `b` (1.04×, within the spread)"), (0.997, "level", "as fast as `b` (within the spread)"),
])
def test_speed_words_take_their_direction_from_the_noise_rule(ratio, verdict, words):
    assert fmt.speed_words(noise.Comparison(ratio, verdict), "`b`") == words


@pytest.mark.parametrize("a, b, verdict", [
    ((1.0, 0.9, 1.1), (1.3, 1.2, 1.4), "faster"),  # a's 90th percentile below b's 10th
    ((1.3, 1.2, 1.4), (1.0, 0.9, 1.1), "slower"),
    ((1.0, 0.9, 1.2), (1.3, 1.2, 1.4), "level"),  # touching spreads are a tie
    ((1.0, 0.5, 3.0), (1.5, 1.4, 1.6), "level"),  # a 1.5× gap of medians inside one row's spread
])
def test_the_noise_rule_calls_a_direction_only_outside_both_spreads(a, b, verdict):
    assert noise.compare(noise.Spread(*a), noise.Spread(*b)).verdict == verdict


def test_the_fastest_is_named_with_every_row_tied_with_it():
    costs = {"x": noise.Spread(1.0, 0.9, 1.1), "y": noise.Spread(1.05, 1.0, 1.2), "z": noise.Spread(2, 1.9, 2.1)}
    assert noise.leaders(costs) == ["x", "y"]
    assert noise.leaders(costs, slowest=True) == ["z"]
    assert noise.leaders({"x": costs["x"], "z": costs["z"]}) == ["x"]


def test_times_that_add_up_add_their_spreads_as_bounds():
    total = noise.Spread(1, 0.9, 1.2) + noise.Spread(2, 1.5, 2.5)
    assert (total.median, total.lo, total.hi) == (3, 2.4, 3.7)


def test_powers_become_superscripts():
    assert fmt.superscripts("summing 2^28 floats, 2^{24} rows") == "summing 2²⁸ floats, 2²⁴ rows"


def test_error_cell_shows_how_close_a_row_came_to_failing():
    check = Check(max_abs_err=3e-6, max_rel_err=1.1e6, mismatches=0, elements=1000, atol=1e-5, rtol=1e-5,
                  bound_ratio=0.3)
    cell = fmt.error(check)
    assert ">30% of bound<" in cell
    assert "max rel error 1.10e+06" in cell and "atol 1.0e-05 + rtol 1.0e-05" in cell  # one hover away
    old = Check(3e-6, 1.1e6, 0, 1000, 1e-5, 1e-5, None)  # format 1: the ratio was not recoverable
    assert ">abs 3.0e-06, rel 1.1e+06<" in fmt.error(old)


# -- every state, every macro: a marker and a warning, never an exception -------------------------

@pytest.mark.parametrize("state", [s for s in STATES if s != "fresh"])
def test_each_state_marks_inline_and_block_macros_and_warns(ctx, state):
    figure = macros.value(ctx, state, "1_copy", "2^20")
    assert STATE_WORDS[state] in figure
    table = macros.results_table(ctx, state, baseline="torch")
    assert "nb-problem" in table or "!!! " in table
    assert ctx.warnings and all(w.startswith("p.md: ") for w in ctx.warnings)
    assert any(f'value("{state}", "1_copy", "2^20")' in w for w in ctx.warnings)  # the page and the macro


def test_fresh_results_give_numbers_and_no_warning(ctx):
    assert macros.value(ctx, "fresh", "1_copy", "2^20") == "8.00 µs"
    assert macros.value(ctx, "fresh", "1_copy", "2^20", "throughput") == "1,049 GB/s"
    out = macros.compare(ctx, "fresh", "2^20", "1_copy", "torch")
    assert words(out) == "1.25× faster than `torch`" and 'data-verdict="faster"' in out
    assert words(macros.compare(ctx, "fresh", "2^20", "torch", "1_copy", than="ours")) == "1.25× slower than ours"
    assert "Measured on NVIDIA H100 80GB HBM3" in macros.results_table(ctx, "fresh", baseline="torch")
    assert ctx.warnings == []


def test_a_failed_row_in_a_table_is_marked_even_when_the_page_asks_for_another(ctx):
    table = macros.results_table(ctx, "failed_other", cases=["small"])
    assert "✗ failed: wrong answer" in table and "&lt;1.5&gt;" in table  # captured text escaped
    assert any("failed_other/torch at small" in w for w in ctx.warnings)


@pytest.mark.parametrize("call, word", [
    (lambda c: macros.value(c, "fresh", "1_copy", "one"), "not timed"),  # an edge case: verified only
    (lambda c: macros.compare(c, "fresh", "one", "1_copy", "torch"), "not timed"),
    (lambda c: macros.value(c, "fresh", "1_copy", "huge"), "no such result"),
    (lambda c: macros.value(c, "fresh", "1_copy", "2^20", "no such figure"), "macro error"),
    (lambda c: macros.value(c, "nonexistent", "1_copy", "2^20"), "no such result"),
])
def test_edge_cases_are_markers_not_exceptions(ctx, call, word):
    assert f"⚠ {word}" in call(ctx)
    assert len(ctx.warnings) == 1


def test_a_figure_a_row_does_not_have_is_a_marker(ctx):
    torch = next(r for r in rows() if r.name == "torch" and r.case == "2^20")
    # Copies to the host have no share of the device copy bandwidth.
    copy = TransferRow(name="h2d", case=torch.case, params=torch.params, status=torch.status, timed=torch.timed,
                       bytes=torch.bytes, time=torch.time)
    ctx.view("fresh").stored.record.rows.append(copy)
    assert "⚠ no such result" in macros.value(ctx, "fresh", "h2d", "2^20", "pct_ceiling")
    assert macros.value(ctx, "fresh", "h2d", "2^20", "throughput") == "839 GB/s"


def test_a_bug_in_a_macro_marks_its_spot(ctx, monkeypatch):
    monkeypatch.setattr(macros.tables, "kernel_report", lambda view: 1 / 0)
    assert "Macro error" in macros.kernel_report(ctx, "fresh")
    assert "ZeroDivisionError" in ctx.warnings[0]


# -- claims -----------------------------------------------------------------------------------------

def claim(ctx, *args, body="the sentence.", **kwargs):
    return macros.claim(ctx, *args, caller=lambda: body, **kwargs)


def test_a_claim_that_holds_keeps_its_sentence_and_shows_its_figures_on_hover(ctx):
    out = claim(ctx, "fresh", "1_copy", "faster", "torch")
    assert out.startswith("the sentence.<span class=\"nb-claim\"")
    assert "8.00 µs [7.20 µs–8.80 µs] against" in html.unescape(out) and ctx.warnings == []


@pytest.mark.parametrize("args, kwargs", [
    (("fresh", "1_copy", "slower", "torch"), {}),
    (("fresh", "1_copy", "within 10%", "torch"), {"case": "2^20"}),
    (("fresh", "fastest", "one of", ["nothing"]), {"case": "small", "among": ["1_copy", "torch"]}),
])
def test_a_claim_the_data_contradicts_says_so_and_warns_with_the_figures(ctx, args, kwargs):
    out = claim(ctx, *args, **kwargs)
    assert "✗ contradicted by the results" in out and out.startswith("the sentence.")
    assert len(ctx.warnings) == 1 and "p.md: claim(" in ctx.warnings[0] and "µs" in ctx.warnings[0]


@pytest.mark.parametrize("body, stray", [("Unlike `torch`, it scales.", "`torch`"), ("Unlike rung 1, it scales.", "`1_copy`")])
def test_a_claims_words_name_only_the_rows_it_checks(ctx, body, stray):
    name = "torch" if "rung" in body else "1_copy"
    out = claim(ctx, "fresh", name, "within 50%", name, case="small", case_b="2^20", body=body)
    assert "✓" not in out and f"its sentence names {stray}, which it does not check" in ctx.warnings[0]
    assert "✓" in claim(ctx, "fresh", "1_copy", "faster", "torch", body="Rung 1 beats `torch`.")


def test_last_is_the_last_declared_rung(ctx):
    out = claim(ctx, "fresh", "last", "faster", "torch")
    assert "✓" in out and "`1_copy` faster than `torch`" in html.unescape(out)


def test_a_claim_with_nothing_to_check_is_not_a_tick(ctx):
    out = claim(ctx, "fresh", "1_cpoy", "faster", "torch")  # misspelt: no case where both ran
    assert "✓" not in out and "⚠" in out and "no case where" in ctx.warnings[0]


def test_faster_holds_only_outside_both_spreads(ctx):
    from labnotebook.site import claims

    class Fixed:
        def __init__(self, median, lo, hi):
            self.spread = noise.Spread(median, lo, hi)

        def cost(self, by):
            return self.spread

        def describe(self):
            return "x"

        def figure(self, by):
            return f"{self.spread.median} ms"
    quick, slow, overlapping = Fixed(1.0, 0.95, 1.05), Fixed(1.2, 1.1, 1.3), Fixed(1.2, 1.0, 1.3)
    assert claims.holds("faster", quick, slow, "time")[0] and claims.holds("slower", slow, quick, "time")[0]
    assert not claims.holds("faster", quick, overlapping, "time")[0]  # 1.2× by medians, yet inside the spread
    assert not claims.holds("slower", overlapping, quick, "time")[0]
    assert claims.holds("level", quick, overlapping, "time")[0] and not claims.holds("level", quick, slow, "time")[0]
    assert claims.holds("not slower", quick, slow, "time")[0] and claims.holds("not slower", quick, overlapping, "time")[0]
    assert claims.holds("not slower", overlapping, quick, "time")[0]  # a tie is not slower
    assert not claims.holds("not slower", slow, quick, "time")[0]
    assert claims.holds("behind by at most 20%", slow, quick, "time")[0]  # at 83% of its speed
    assert not claims.holds("behind by at most 10%", slow, quick, "time")[0]
    assert not claims.holds("behind by at most 20%", quick, slow, "time")[0]  # ahead is not behind
    assert claims.holds("behind by more than 10%", slow, quick, "time")[0]  # under 90% of its speed
    assert not claims.holds("behind by more than 20%", slow, quick, "time")[0]
    assert not claims.holds("behind by more than 10%", overlapping, quick, "time")[0]  # a tie is not behind
    assert claims.holds("within 20%", quick, slow, "time")[0] and claims.holds("within 20%", slow, quick, "time")[0]


def test_a_misspelt_baseline_in_a_table_is_marked_not_a_dash(ctx):
    macros.results_table(ctx, "fresh", baseline="trohc")
    assert any("no 'trohc'" in w for w in ctx.warnings)


def test_claims_across_gpus_and_cases(ctx):
    assert "✓" in claim(ctx, "fresh", "1_copy", "within 1%", "1_copy", case="2^20", gpu_b=H200)
    assert "contradicted" in claim(ctx, "fresh", "1_copy", "faster", "1_copy", case="small", case_b="2^20")
    assert "contradicted" not in claim(ctx, "fresh", "1_copy", "within 1%", "1_copy", case="small", case_b="2^20")


@pytest.fixture(scope="module")
def h200_differs(tmp_path_factory):
    """The fixture's experiments with their states on the H200 and fresh on the H100, where
    "fresh" has a kernel slower than torch on the H200 (and faster on the H100)."""
    from labnotebook.results.store import Store

    root = fixture_project(tmp_path_factory.mktemp("h200"), on=H200)
    store = Store(root / "results")
    h200 = store.read("fresh", H200)
    h200.rows = rows(kernel_ms=0.014)  # its spread clear of torch's
    store.write(h200)
    return root


def test_a_claim_speaks_of_every_gpu_with_fresh_results(h200_differs):
    ctx = collecting_context(h200_differs)
    out = claim(ctx, "fresh", "1_copy", "faster", "torch")
    assert "contradicted" in out and len(ctx.warnings) == 1
    assert "on the H200, `1_copy` faster than `torch`" in ctx.warnings[0] and "on the H100" not in ctx.warnings[0]
    ctx = collecting_context(h200_differs)
    out = claim(ctx, "fresh", "1_copy", "faster", "torch", gpu=H100)  # a sentence about one GPU
    assert "✓" in out and "on the H100" in out and "H200" not in out and ctx.warnings == []
    out = claim(ctx, "fresh", "1_copy", "slower", "torch", gpu=H200)
    assert "✓" in out and "on the H200" in out and ctx.warnings == []


@pytest.mark.parametrize("state, word, fails", [("stale", "stale", False), ("missing", "no results", False),
                                                ("failed_other", "run failed", True), ("corrupt", "unreadable", True)])
def test_a_claim_shows_no_tick_where_a_gpu_it_names_could_not_check_it(h200_differs, state, word, fails):
    ctx = collecting_context(h200_differs)
    out = claim(ctx, state, "1_copy", "faster", "torch")  # the state on the H200, fresh on the H100
    assert "✓" not in out and f"? not checked on the H200: {word}" in out
    assert "on the H100, `1_copy` faster than `torch`" in html.unescape(out)  # where it was checked, the hover says so
    assert bool(ctx.warnings) == fails  # a stale or missing GPU beside the reference is information only


def test_problems_on_a_draft_page_are_only_information(ctx):
    ctx.at("p.md", draft=True)
    assert "no results yet" in macros.value(ctx, "missing", "1_copy", "2^20")
    assert "No results yet" in macros.entry_results(ctx, "missing")
    assert "python build_results.py --only missing" in macros.entry_results(ctx, "missing")
    assert ctx.warnings == [] and ctx.infos


@pytest.mark.parametrize("call, words", [
    (lambda c: macros.value(c, "missing", "1_cpoy", "2^20"), "declares no kernel or baseline '1_cpoy' (it has 1_copy, torch)"),
    (lambda c: macros.value(c, "missing", "1_copy", "2^21"), "declares no case '2^21'"),
    (lambda c: macros.compare(c, "missing", "2^20", "1_copy", "trohc"), "declares no kernel or baseline 'trohc'"),
    (lambda c: macros.best(c, "missing", "2^99"), "declares no case '2^99'"),
    (lambda c: macros.value(c, "mising", "1_copy", "2^20"), "no experiment named 'mising'"),
])
def test_a_misspelt_kernel_case_or_experiment_fails_a_draft_too(ctx, call, words):
    ctx.at("p.md", draft=True)  # its results not yet run: only that is information in a draft
    assert "⚠" in call(ctx)
    assert len(ctx.warnings) == 1 and words in ctx.warnings[0]


def test_a_draft_is_listed_on_no_public_page(ctx):
    ctx.drafts = frozenset({"missing"})
    assert {line.experiment for line in dashboard.lines(ctx)} == set(STATES) - {"missing"}
    assert "[missing]" not in dashboard.execution_summary(ctx) and "[stale]" in dashboard.execution_summary(ctx)
    assert f"of {len(STATES) - 1} entries" in macros.results_provenance(ctx)
    assert "missing" not in dashboard.refresh_cost(ctx)


# -- the dashboard ------------------------------------------------------------------------------------

def test_dashboard_has_a_row_per_declared_row_and_a_marker_in_every_untrustworthy_cell(ctx):
    lines = {(line.experiment, line.name): line for line in dashboard.lines(ctx)}
    assert set(lines) == {(s, n) for s in STATES for n in ("1_copy", "torch")}
    for state, word in STATE_WORDS.items():
        figure, _ = lines[(state, "1_copy" if state != "failed_other" else "torch")].cells[H100]
        assert word in figure, state
        assert "⚠" not in lines[(state, "1_copy")].cells[H200][0]  # fresh there
    figure, versus = lines[("fresh", "1_copy")].cells[H100]
    assert (figure, words(versus)) == ("1,049 GB/s (35.0%)", "1.25× faster than `torch`")
    warned = " ".join(ctx.warnings)
    assert all(state in warned for state in STATE_WORDS)


# -- charts say what they plot ---------------------------------------------------------------------

def test_a_chart_title_names_a_size_only_when_every_plotted_case_has_it(ctx):
    view = ctx.view("fresh")
    mixed = plots.bandwidth_sweep(view, ["1_copy", "torch", "absent"], "n", None, ctx.note)
    assert "per case" not in mixed and ">absent<" not in mixed  # a legend lists what has points
    one = plots.bandwidth_sweep(view, ["1_copy"], "n", ["2^20"], ctx.note)
    assert "8 MiB read + written per case" in one
    width = float(re.search(r'<svg [^>]*width="([\d.]+)pt"', one).group(1))
    assert "min-width" not in one and width <= (plots.WIDTH + 0.2) * 72  # shrinks to a phone's column, never scrolls


def test_a_chart_is_drawn_once_for_the_same_figures_and_again_for_others(monkeypatch):
    from collections import OrderedDict

    real, drawn = plots._svg, []
    monkeypatch.setattr(plots, "_svg", lambda fig: drawn.append(fig) or real(fig))
    monkeypatch.setattr(plots, "_DRAWN", OrderedDict())
    monkeypatch.setattr(plots, "DRAWN_KEPT", 2)

    def chart(pct: float) -> str:
        return plots.ceiling_chart([("a", {H100: 50.0, H200: None}), ("b", {H100: pct, H200: 60.0})], [H100, H200])
    first = chart(75.0)
    assert chart(75.0) == first and len(drawn) == 1  # the same figures: the chart as drawn
    assert chart(75.5) != first and len(drawn) == 2  # a figure changed: drawn again
    chart(80.0)  # a third: the first, the least recently used of two kept, is forgotten
    assert chart(75.0) == first and len(drawn) == 4
    assert chart(80.0) and len(drawn) == 4


# -- front matter and the contents -----------------------------------------------------------------------

ENTRY = {"title": "T", "date": datetime.date(2026, 11, 21), "topic": "Memory", "summary": "s"}


@pytest.mark.parametrize("meta, words", [
    ({k: v for k, v in ENTRY.items() if k != "topic"}, "docs/x.md: front matter has no 'topic'; add `topic:"),
    ({**ENTRY, "sumary": "s"}, "front matter key 'sumary' is not one the notebook reads"),
    ({**ENTRY, "date": "21 November"}, "front matter 'date' must be YYYY-MM-DD"),
    ({**ENTRY, "draft": "yes"}, "front matter 'draft' must be true while"),
])
def test_front_matter_errors_are_one_line_naming_page_key_and_fix(meta, words):
    with pytest.raises(frontmatter.FrontMatterError) as e:
        frontmatter.check("docs/x.md", meta, entry=True)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_pages_outside_entries_need_only_a_title():
    frontmatter.check("docs/index.md", {"title": "Contents", "hide": ["toc"]}, entry=False)


def test_contents_lists_entries_by_topic_oldest_first_and_marks_drafts():
    pages = [frontmatter.Page(f"{n}.md", {**ENTRY, "title": n, "date": datetime.date(2026, 11, d)}, True)
             for n, d in (("b", 22), ("a", 21))]
    pages.append(frontmatter.Page("c.md", {**ENTRY, "title": "2^28", "draft": True}, True))
    text = frontmatter.contents(pages)
    listed = text[text.index("### Memory"):]
    assert listed.index("[a](a.md)") < listed.index("[b](b.md)")
    assert "[2²⁸](c.md) *(draft)*" in text
    assert text.startswith('!!! tip "Latest entry"\n    **2026-11-22** · [b]')  # not the draft


# -- the notebook's cache key ---------------------------------------------------------------------------

def test_the_notebook_reruns_only_when_its_inputs_change(root, tmp_path):
    nb = root / "docs" / "nb.ipynb"
    nb.write_text("{}")
    key = notebook.key(nb, root, CurrentKeys(root))
    assert notebook.key(nb, root, CurrentKeys(root)) == key
    copy = tmp_path / "copy"
    shutil.copytree(root / "results", copy / "results")
    (copy / "docs").mkdir()
    shutil.copyfile(nb, copy / "docs" / "nb.ipynb")
    (copy / "snippets").symlink_to(root / "snippets")
    assert notebook.key(copy / "docs" / "nb.ipynb", copy, CurrentKeys(copy)) == key  # the same inputs elsewhere
    record_ = record("fresh", H100, "x", rows(kernel_ms=0.009))
    from labnotebook.results.store import Store
    Store(copy / "results").write(record_)
    assert notebook.key(copy / "docs" / "nb.ipynb", copy, CurrentKeys(copy)) != key  # new results: run it again


def test_timing_spread_is_in_the_medians_unit():
    assert fmt.spread(Timing(0.05, 0.045, 0.055, 0.04, 0.06, 10)) == "45.0–55.0 µs"


# -- the large pass: its own file, its own state, said on the page ---------------------------------

@pytest.fixture(scope="module")
def large_root(tmp_path_factory):
    """The tiny experiment with a case of 2^31 elements, which runs in the large pass."""
    from labnotebook.results.freshness import CurrentKeys
    from labnotebook.results.rows import KernelRow
    from labnotebook.results.store import Store
    from site_support import record as make_record

    dst = fixture_project(tmp_path_factory.mktemp("large"), states=("fresh",))
    big = dst / "snippets" / "big"
    shutil.copytree(dst / "snippets" / "fresh", big)
    declaration = (big / "experiment.py").read_text()
    (big / "experiment.py").write_text(declaration.replace("    inputs=", '    large_cases=[Case("2^31", n=1 << 31)],\n    inputs=', 1))
    store, keys = Store(dst / "results"), CurrentKeys(dst)
    assert keys["big"].large_cases == ("2^31",)
    for gpu in (H100, H200):
        store.write(make_record("big", gpu, keys["big"].digest, rows()))
    huge = [KernelRow(name="1_copy", case="2^31", params={"n": 1 << 31}, status="ok", timed=False,
                      check=Check(0.0, 0.0, 0, 1 << 31, 0.0, 0.0, 0.0))]
    large = make_record("big", H100, keys["big"].digest, huge, part="large", profile=None)
    large.sources, large.wall_s = dict(keys["big"].files), 42.0
    store.write(large)
    return dst


def test_the_large_pass_shows_its_cases_and_says_which_pass_ran_them(large_root):
    ctx = collecting_context(large_root)
    table = macros.checks(ctx, "big")
    assert "2³¹" in table and "one" in table  # its case beside the main pass's edge case
    assert "The case of 2³¹ elements and more (2³¹) runs in a pass of its own" in table
    assert "`python build_results.py --large --only big`" in table and "it ran on 2026-11-21, in 42 s" in table
    assert ctx.warnings == []


def test_a_large_pass_not_on_record_is_a_marker_and_fails_strict_on_the_reference_gpu_only(large_root):
    ctx = collecting_context(large_root)
    table = macros.checks(ctx, "big", gpu=H200)
    assert "none are on record" in table and "no results" in table
    assert ctx.warnings == [] and any("--large --only big" in m for m in ctx.infos)  # not the reference GPU
    path = large_root / "results" / "big" / "nvidia-h100-80gb-hbm3.large.json"
    saved = path.read_text()
    try:
        path.unlink()
        ctx = collecting_context(large_root)
        assert "none are on record" in macros.checks(ctx, "big")
        assert any("big has no results (the large pass) on NVIDIA H100 80GB HBM3" in w and "--large --only big" in w
                   for w in ctx.warnings)
    finally:
        path.write_text(saved)


def test_a_stale_large_pass_shows_its_rows_marked(large_root):
    from labnotebook.results.store import Store

    store = Store(large_root / "results")
    saved = store.read("big", H100, "large")
    stale = dataclasses.replace(saved, source_hash="0" * 16, sources={"snippets/gone.cu": "0" * 16})
    try:
        store.write(stale)
        ctx = collecting_context(large_root)
        table = macros.checks(ctx, "big")
        assert "2³¹" in table and "and is stale" in table and "Stale results" in table
        assert any("big (the large pass) on NVIDIA H100 80GB HBM3: results of 2026-11-21 are stale" in w
                   for w in ctx.warnings)
    finally:
        store.write(saved)


# -- what mkdocs-macros is given, and the settings it reads --------------------------------------------

def test_every_macro_is_handed_to_mkdocs_macros():
    """``define_env`` registers each function marked ``@macro`` under its name (and the contents),
    bound to a context: a macro left out of the registry would be undefined on every page."""
    from labnotebook.site.context import MACROS

    from labnotebook.site import gpu_pages, portability

    marked = {name: fn for module in (macros, gpu_pages, portability) for name, fn in vars(module).items()
              if callable(fn) and hasattr(fn, "kind")}
    exposed = {}

    class Env:
        conf = {"config_file_path": str(ROOT / "mkdocs.yml"), "docs_dir": str(ROOT / "docs"), "nav": [],
                "extra": {"notebook": {"gpu": H100, "gpus": [H100, H200]}}}
        page = None

        def macro(self, fn, name):
            exposed[name] = fn

    macros.define_env(Env())
    assert marked and set(exposed) == set(marked) | {"contents"} and set(MACROS) == set(marked)
    assert all(exposed[name].__wrapped__ is fn for name, fn in marked.items())


def test_the_site_and_check_read_the_settings_by_one_rule(tmp_path):
    """MkDocs' config (``settings.of``, the site) and the file (``settings.read``, ``--check``) give
    the same settings, and the same error for a missing key."""
    assert settings.of({"extra": {"notebook": {"gpu": H200, "gpus": [H100]}}}) == settings.Settings(H200, (H200, H100))
    (tmp_path / "mkdocs.yml").write_text("site_url: !ENV [X, y]\nextra: {notebook: {gpus: [x]}}\n")
    with pytest.raises(NotebookError) as by_file:
        settings.read(tmp_path)
    with pytest.raises(NotebookError) as by_config:
        settings.of({"extra": {"notebook": {"gpus": ["x"]}}})
    assert str(by_file.value) == str(by_config.value) == (
        "mkdocs.yml: no extra.notebook.gpu, the reference GPU (KeyError: 'gpu'); add it under `extra: notebook:`")


def test_drafts_are_the_pages_whose_front_matter_says_so(tmp_path):
    """Read by the site's front-matter reader; a page whose front matter is broken is the site's to name."""
    (tmp_path / "docs").mkdir()
    for name, text in (("a", "---\ndraft: true\n---\n"), ("b", "---\ndraft: false\n---\n"), ("c", "no front matter"),
                       ("d", "---\n[broken\n---\n"), ("e", "---\n- a list\n---\n")):
        (tmp_path / "docs" / f"{name}.md").write_text(text)
    assert settings.drafts(tmp_path) == {"a"}


def test_the_site_s_modules_import_without_mkdocs():
    """The GPU suite's machines have no MkDocs, and its tests import the site's macros (the
    analysis notebook reads them too): MkDocs is imported only where a build calls in."""
    import subprocess
    import sys

    code = "import sys; sys.modules['mkdocs'] = None; import labnotebook.site.macros, labnotebook.site.notebook"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_source_files_are_listed_in_ladder_order():
    """Rung 10's file comes after rung 9's, not between rung 1's and rung 2's."""
    box = macros.sources(collecting_context(ROOT), "matmul")
    at = [box.index(f"<code>{name}</code>") for name in ("1_naive.cu", "2_coalesced.cu", "9_any_shape.cu", "10_async_ring.cu")]
    assert at == sorted(at)


def test_gpu_table_drops_the_copy_share_only_where_no_row_has_one():
    """A GEMM's rows have no share of the copy bandwidth: no column of dashes. A copy's do."""
    ctx = collecting_context(ROOT)
    gemm = macros.gpu_table(ctx, "matmul", "4096³", ["10_async_ring", "cuBLAS"])
    copy = macros.gpu_table(ctx, "vec_add", "2^28", ["1_add", "torch"])
    assert "H100 throughput" in gemm and "% of copy" not in gemm
    assert "H100 % of copy" in copy and "H200 % of copy" in copy
