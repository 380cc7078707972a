"""Whole builds, in this process: the real notebook (strict), a miniature site with an experiment
in every bad state, drafts, front matter, and real pages over results perturbed so that their
comparisons flip."""

from __future__ import annotations

import dataclasses
import html
import json
import logging
import re
import shutil

import pytest
import yaml

from labnotebook.results.freshness import CurrentKeys
from labnotebook.site import notebook
from labnotebook.results.store import Store
from site_support import H100, H200, ROOT, SUBPATH, build, fixture_project, project

def is_draft(page) -> bool:
    text = page.read_text()
    return text.startswith("---") and bool((yaml.safe_load(text.split("---", 2)[1]) or {}).get("draft"))


ENTRIES = [line.strip()[2:] for line in (ROOT / "mkdocs.yml").read_text().split("- Entries:")[1].splitlines()
           if line.strip().startswith("- ")]


# -- the real notebook -------------------------------------------------------------------------------

def test_real_notebook_builds_strict(built_site):
    assert built_site.ok, "\n".join(built_site.warnings) or built_site.error
    html = built_site.html("vec_add")
    assert "<svg" in html and "GB/s" in html and "Measured on NVIDIA H100 80GB HBM3" in html
    assert "nb-problem" not in html and "Stale results" not in html
    assert "extern" in html and "vec_add_float4" in html  # the kernels themselves, embedded
    assert 'class="nb-claim"' in built_site.html("softmax")  # checked claims, with their figures on hover


def test_no_rendered_comparison_calls_rows_whose_spreads_overlap_faster_or_slower(built_site):
    """Every comparison the site renders (sentences, tables, the dashboard) is marked with the
    rows it compares; read those rows' 10th and 90th percentiles from the results files here,
    on our own, and hold the words to the rule: a direction only outside both spreads."""
    files = {}

    def spread(ref: str) -> tuple[float, float]:
        experiment, gpu, case, names = ref.split("|")
        if (experiment, gpu) not in files:
            path = next(p for p in (ROOT / "results" / experiment).glob("*.json")
                        if ".failure" not in p.name and ".large" not in p.name
                        and json.loads(p.read_text())["gpu"] == gpu)
            files[experiment, gpu] = json.loads(path.read_text())["rows"]
        times = [next(r["time"] for r in files[experiment, gpu] if r["name"] == n and r["case"] == case)
                 for n in names.split("+")]
        return sum(t["q10_ms"] for t in times), sum(t["q90_ms"] for t in times)

    seen = 0
    for page in built_site.site.glob("**/index.html"):
        for m in re.finditer(r'<span class="nb-cmp" data-a="([^"]+)" data-b="([^"]+)"[^>]*>(.*?)</span>',
                             page.read_text()):
            (a_lo, a_hi), (b_lo, b_hi) = spread(html.unescape(m.group(1))), spread(html.unescape(m.group(2)))
            words, seen = html.unescape(m.group(3)), seen + 1
            where = f"{page.parent.name}: {words} ({m.group(1)} against {m.group(2)})"
            if "faster" in words:
                assert a_hi < b_lo, where
            elif "slower" in words:
                assert a_lo > b_hi, where
            else:
                assert "as fast as" in words or "level" in words, where
                assert a_hi >= b_lo and a_lo <= b_hi, where
    assert seen > 100  # sentences, tables and the dashboard


def test_every_page_that_shows_numbers_names_its_commit(built_site):
    entries = [e[:-3] for e in ENTRIES if e != "gpu.md" and not is_draft(ROOT / "docs" / e)]  # a draft shows none yet
    for page in ["index", "dashboard", "analysis", "gpu", "time_breakdown", *entries]:
        assert "commit" in built_site.text(page) and re.search(r"\b[0-9a-f]{7,10}\b", built_site.text(page)), page
    h200 = built_site.text("softmax").split("The same ladder on an H200")[1]
    assert re.search(r"NVIDIA H200, 2026-\d\d-\d\d, commit [0-9a-f]{7,40}", h200)  # git short hashes vary in length


def test_titles_show_powers_as_superscripts_in_the_nav_and_the_page(built_site):
    html = built_site.html("block_reduce")
    assert "<title>Block reduction: summing 2²⁸ floats" in html and "2^28" not in html.split("<article")[0]


def test_index_lists_entries_oldest_first_and_the_runs_behind_them(built_site):
    text = built_site.text("index")
    assert text.index("Vector add: is the GPU faster?") < text.index("Vector add in 3D")
    assert re.search(rf"{H100} ?: \d+ of \d+ entries, measured", text)


def test_the_analysis_notebook_is_rendered_from_its_frozen_copy(built_site):
    root = built_site.site.parent
    frozen = root / notebook.FROZEN / "analysis.ipynb"
    assert notebook.frozen_inputs(frozen) == notebook.key(root / "docs" / "analysis.ipynb", root, CurrentKeys(root))
    assert (built_site.site / "analysis" / "analysis.ipynb").read_bytes() == frozen.read_bytes()
    assert '"output_type": "display_data"' in frozen.read_text()
    text = built_site.text("analysis")
    assert "H200 - H100" in text and "commit" in text and "Kept their share" in text


def test_a_notebook_runs_once_without_the_tcp_warning_then_again_only_on_other_inputs(tmp_path, capfd, monkeypatch):
    import nbclient
    import nbformat

    nb = tmp_path / "docs" / "quiet.ipynb"
    nb.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")]), nb)
    folder = notebook.executed(nb, "quiet.ipynb", tmp_path, CurrentKeys(tmp_path))
    frozen = tmp_path / notebook.FROZEN / "quiet.ipynb"
    assert folder == frozen.parent and "42" in frozen.read_text()
    assert "without encryption" not in capfd.readouterr().err  # the kernel's own stderr, a process of its own
    assert notebook.frozen_inputs(frozen) == notebook.key(nb, tmp_path, CurrentKeys(tmp_path))
    assert '"execution"' not in frozen.read_text()  # no timestamps: it changes with its output alone

    def ran(self, *args, **kwargs):
        raise AssertionError("the notebook ran")
    monkeypatch.setattr(nbclient.NotebookClient, "execute", ran)
    assert notebook.executed(nb, "quiet.ipynb", tmp_path, CurrentKeys(tmp_path)) == folder  # the same inputs
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 9)")]), nb)
    with pytest.raises(AssertionError, match="the notebook ran"):
        notebook.executed(nb, "quiet.ipynb", tmp_path, CurrentKeys(tmp_path))


def test_a_build_logs_no_macros_set_up_chatter(tmp_path, caplog):
    root = fixture_project(tmp_path, states=("fresh",))
    with caplog.at_level(logging.INFO, logger="mkdocs"):
        assert build(root).ok
    assert "Building documentation" in caplog.text  # INFO reaches the log, the plugin's own chatter does not
    assert "[macros]" not in caplog.text


def test_the_404_page_finds_its_assets_under_a_sub_path(built_site):
    html = (built_site.site / "404.html").read_text()
    assert f'href="{SUBPATH}assets/stylesheets/' in html and f'src="{SUBPATH}assets/javascripts/' in html


# -- every state at once: markers where the numbers would be, and warnings naming the pages ---------

MARKERS = {"stale": "⚠ stale", "failed_headline": "⚠ failed", "failed_other": "⚠ run failed",
           "corrupt": "⚠ unreadable results", "missing": "⚠ no results"}


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    return build(fixture_project(tmp_path_factory.mktemp("faults")))


def test_each_bad_state_gives_a_site_with_markers_where_the_numbers_would_be(faults):
    assert faults.ok, faults.error  # a non-strict build always gives a site
    for state, marker in MARKERS.items():
        text = faults.text(state)
        headline = text.split("Median at the headline:")[1][:60]
        assert marker in headline, (state, headline)
        assert f"{state}.md: " in " ".join(faults.warnings), state
    assert "Median at the headline: 8.00 µs." in faults.text("fresh")
    board = faults.text("dashboard")
    for state, marker in MARKERS.items():
        row = board.split(f" 1_copy · {state} ")[1][:120] if state != "failed_other" else board.split(" torch (GPU) · failed_other ")[1][:120]
        assert "⚠" in row, (state, row)
    assert not [w for w in faults.warnings if w.startswith("fresh.md")]


def test_the_strict_build_of_that_site_fails_naming_every_page(faults):
    strict = build(faults.site.parent, strict=True)
    assert not strict.ok and "strict mode" in strict.error
    for state in MARKERS:
        assert strict.warned(f"{state}.md: "), state
    assert strict.warned("dashboard.md: dashboard(): ")


def test_stale_or_missing_results_on_another_gpu_are_marked_and_fail_nothing(tmp_path):
    root = fixture_project(tmp_path, states=("fresh", "stale", "missing"), on=H200)
    strict = build(root, strict=True)
    assert strict.ok, strict.warnings
    for state in ("stale", "missing"):
        h200 = strict.text(state).split("On every GPU:")[1]
        assert MARKERS[state] in h200 or "No results" in h200 or "Stale results" in h200, (state, h200[:300])
        assert f"Median at the headline: 8.00 µs." in strict.text(state)  # the reference GPU's, fresh
    assert "⚠" in strict.text("dashboard").split(" 1_copy · stale ")[1][:200]


THIRD = "NVIDIA GeForce RTX 4090"


def with_a_third_gpu(root, experiments=("fresh", "ceilings")):
    """The H200's records of ``experiments`` filed again as a reader's RTX 4090's, as its results
    files would arrive (a GPU no page names)."""
    store = Store(root / "results")
    for name in experiments:
        r = store.read(name, H200)
        r.gpu = THIRD
        r.provenance = dataclasses.replace(r.provenance, gpu=THIRD, compute_capability="8.9")
        store.write(r)


def test_a_third_gpu_gets_a_page_and_a_column_and_the_reference_stays_strict(tmp_path):
    root = fixture_project(tmp_path / "a", states=("fresh", "missing"), on=H200)
    with_a_third_gpu(root)
    built = build(root, strict=True)
    assert built.ok, built.warnings  # its missing results elsewhere are marked, not failed
    page = built.text("gpus/nvidia-geforce-rtx-4090")
    assert f"measured on an {THIRD}" in page and "claims are checked on those alone" in page
    assert "1_copy · fresh" in page and "8.0 compute capability" not in page
    assert f'href="gpus/nvidia-geforce-rtx-4090/"' in built.html("index")  # in the nav, under GPUs
    assert "RTX 4090: throughput (% of copy)" in built.text("dashboard")
    h200 = built.text("gpus/nvidia-h200")
    assert "limiter on the" not in h200 and "limiter on the" in built.text("gpus/nvidia-h100-80gb-hbm3")
    # The reference GPU's strictness is the same with a third GPU present.
    stale = fixture_project(tmp_path / "b", states=("fresh", "stale"))
    with_a_third_gpu(stale)
    strict = build(stale, strict=True)
    assert not strict.ok and strict.warned("stale.md: ") and not strict.warned("gpus/nvidia-geforce-rtx-4090.md")


@pytest.mark.parametrize("state", ["failed_headline", "corrupt"])
def test_a_failed_or_unreadable_result_on_another_gpu_still_fails_strict(tmp_path, state):
    root = fixture_project(tmp_path, states=("fresh", state), on=H200)
    strict = build(root, strict=True)
    assert not strict.ok and strict.warned(f"{state}.md: ")


def test_a_missing_profile_is_marked_and_fails_nothing(tmp_path):
    root = fixture_project(tmp_path, states=("fresh",))
    page = root / "docs" / "fresh.md"
    page.write_text(page.read_text() + '\n{{ profile("fresh") }}\n')
    store = Store(root / "results")
    record = store.read("fresh", H100)
    record.profile = None
    store.write(record)
    strict = build(root, strict=True)
    assert strict.ok, strict.warnings
    assert "⚠ no profile" in strict.text("fresh") or "No profile" in strict.text("fresh")


# -- drafts ---------------------------------------------------------------------------------------------

def test_a_draft_without_results_builds_strict_until_it_is_published(tmp_path):
    root = fixture_project(tmp_path, states=("fresh", "missing"), drafts=("missing",))
    draft = build(root, strict=True)
    assert draft.ok, draft.warnings
    assert "No results yet" in draft.text("missing") and "python build_results.py --only missing" in draft.text("missing")
    assert "Entry of 2026-11-21 · draft" in draft.text("missing")
    page = root / "docs" / "missing.md"
    page.write_text(page.read_text().replace("draft: true\n", ""))
    published = build(root, strict=True)
    assert not published.ok and published.warned("missing.md: ", "has no results")


def test_a_missing_front_matter_key_fails_at_once_in_one_line(tmp_path):
    root = fixture_project(tmp_path, states=("fresh",))
    page = root / "docs" / "fresh.md"
    page.write_text(page.read_text().replace("topic: Fixtures\n", ""))
    built = build(root)
    assert not built.ok
    assert built.warnings == ["docs/fresh.md: front matter has no 'topic'; add `topic: <the contents section it "
                              "belongs to, such as 'Memory'>` between the --- lines at the top of the page"]


def test_a_declaration_that_does_not_load_fails_at_once_naming_the_experiment_not_the_notebook(tmp_path):
    root = fixture_project(tmp_path, states=("fresh", "missing"), drafts=("missing",))
    shutil.copyfile(ROOT / "docs" / "analysis.ipynb", root / "docs" / "analysis.ipynb")  # it loads every declaration
    declaration = root / "snippets" / "missing" / "experiment.py"
    declaration.write_text(declaration.read_text().replace('"1_copy.cu"', '"1_cpy.cu"'))
    built = build(root)
    assert not built.ok
    assert built.warnings == ["missing: its declaration does not load: kernel file 1_cpy.cu does not exist; fix: edit "
                              "snippets/missing/ (`pytest tests/test_experiments.py` checks a declaration, no GPU needed)"]


# -- the real pages, over results that say something else ---------------------------------------------

def scale(store: Store, experiment: str, gpu: str, name: str, factor: float, cases=None) -> None:
    """Make ``name``'s times ``factor`` times what they were (at ``cases``, or every case)."""
    record = store.read(experiment, gpu)
    def scaled(row):
        return dataclasses.replace(row, time=dataclasses.replace(row.time, **{
            f: getattr(row.time, f) * factor for f in ("median_ms", "q10_ms", "q90_ms", "min_ms", "max_ms")}))
    record.rows = [scaled(row) if row.name == name and row.time and (cases is None or row.case in cases) else row
                   for row in record.rows]
    store.write(record)


@pytest.fixture(scope="module")
def flipped(tmp_path_factory):
    pages = ["block_reduce.md", "softmax.md", "coalescing.md", "cublas.md", "matmul.md", "gpu.md"]
    root = project(tmp_path_factory.mktemp("flipped"), pages=pages, entries=pages)
    store = Store(root / "results")
    grid = store.read("block_reduce", H100).row("2_grid_stride_float4", "2^28").time.median_ms
    scale(store, "block_reduce", H100, "torch", grid / 2 / store.read("block_reduce", H100).row("torch", "2^28").time.median_ms)
    scale(store, "softmax", H100, "torch", 0.2)  # torch.softmax faster than every rung
    scale(store, "coalescing", H100, "torch", 2.0, cases=["stride 32"])
    scale(store, "matmul", H100, "torch", 1.2, cases=["1024³"])
    scale(store, "matmul", H200, "cuBLAS", 1 / 1.5, cases=["4096³"])
    return build(root)


def test_a_comparison_rendered_from_the_data_flips_with_it(flipped):
    assert re.search(r"That is [\d.]+× faster than the two-level rung ?, and 2\.00× slower than torch\.sum ?\.",
                     flipped.text("block_reduce"))
    assert re.search(r"takes [\d.]+ µs: [\d.]+× slower than torch\.softmax", flipped.text("softmax"))


@pytest.mark.parametrize("page, claim", [
    ("softmax.md", "`12_pipelined` faster than `torch`"),
    ("coalescing.md", "`torch` within 10% of `1_strided_read`"),
    ("cublas.md", "`torch` within 3% of `cuBLAS`"),
    ("matmul.md", "within 5%"),
    ("gpu.md", "within 2%"),
])
def test_a_claim_the_data_no_longer_supports_fails_naming_page_claim_and_figures(flipped, page, claim):
    warned = flipped.warned(f"{page}: claim(", "does not hold", claim)
    assert warned and re.search(r"\d+(\.\d+)? (µs|ms)", warned[0]), flipped.warnings
    assert "contradicted by the results" in flipped.text(page[:-3])


def test_a_headline_kernel_its_machine_could_not_run_is_said_unavailable_on_the_dashboard(tmp_path):
    """A kernel whose GPU machine lacked what it needs (cuTile's compiler, say) is recorded as
    skipped with the reason: the dashboard says so, with the reason on hover, and the strict
    build passes; a page that needs its number (a value, a comparison, a table of it) still fails it."""
    import dataclasses

    from labnotebook.results.store import Store

    root = fixture_project(tmp_path, states=("fresh",))
    store = Store(root / "results")
    record = store.read("fresh", H100)
    record.rows = [dataclasses.replace(r, status="skipped", time=None, check=None, unavailable=True,
                                       error="requires cuda.tile, which is not installed")
                   if r.name == "1_copy" else r for r in record.rows]
    store.write(record)
    built = build(root, strict=True)
    assert not built.ok and all(w.startswith("fresh.md: ") for w in built.warnings), built.warnings
    page = root / "docs" / "fresh.md"
    text = page.read_text()
    for needs in ('{{ value("fresh", "1_copy", "2^20") }}', '{{ compare("fresh", "2^20", "1_copy", "torch") }}',
                  '{{ gpu_table("fresh", "2^20", ["1_copy", "torch"]) }}'):
        assert needs in text
        text = text.replace(needs, "none")
    page.write_text(text)
    built = build(root, strict=True)
    assert built.ok, built.warnings
    row = built.text("dashboard").split(" 1_copy · fresh ")[1][:80]
    assert "– unavailable" in row and "⚠" not in row, row
