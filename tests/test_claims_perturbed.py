"""Every comparison the site makes, under perturbation: each ``claim``, ``compare`` and ``best``
call on every page is found in docs/*.md (a new one is covered without a test of its own), and
for each the rows it reads are changed, in memory, until what it says is false, on each GPU it
names in turn; then each GPU's results file is removed, and truncated. The page must flip its
words, or the claim must lose its ✓ and fail the build, by the noise rule (labnotebook/results/noise.py).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import html
import re
import shutil
from pathlib import Path

import pytest

from labnotebook.results.format import Timing
from labnotebook.site import claims, macros
from labnotebook.site.claims import PICKS, Side
from labnotebook.site.context import Context
from labnotebook.site.views import Results
from labnotebook.results.store import Store
from site_support import H100, H200, ROOT, project

CALL = re.compile(r"\{%\s*call\s+(claim\(.*?\))\s*%\}|\{\{\s*((?:compare|best)\(.*?\))\s*\}\}", re.S)


@dataclasses.dataclass(frozen=True)
class Call:
    page: str
    macro: str
    args: tuple
    kwargs: dict

    def __str__(self):
        return f"{self.page}: {self.macro}{self.args}"


def page_calls() -> list[Call]:
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name == "authoring.md":  # the guide's calls are examples, in code blocks
            continue
        for m in CALL.finditer(page.read_text()):
            node = ast.parse(m.group(1) or m.group(2), mode="eval").body
            found.append(Call(page.name, node.func.id, tuple(ast.literal_eval(a) for a in node.args),
                              {k.arg: ast.literal_eval(k.value) for k in node.keywords}))
    return found


CALLS = page_calls()
CLAIMS = [c for c in CALLS if c.macro == "claim"]


def test_the_pages_make_claims_and_comparisons_of_every_kind():
    relations = {c.args[2].split()[0] for c in CLAIMS}
    assert {"faster", "slower", "level", "within", "behind", "one"} <= relations
    assert sum(c.macro == "compare" for c in CALLS) > 50 and any(c.macro == "best" for c in CALLS)


# -- a project whose results can be perturbed ---------------------------------------------------------

@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return project(tmp_path_factory.mktemp("perturbed"), pages=[])


@pytest.fixture(scope="module", autouse=True)
def each_file_parsed_once():
    """``evaluate`` reads every record it needs from disk again (a perturbation changes them in
    memory), and parsing them was most of this module's time: a file read again with the same
    bytes gets a copy of what those bytes parsed to, its lists and dicts copied (a perturbation
    puts other rows in a record's list; the rows themselves are frozen); other bytes (a
    truncated file) are parsed as they are."""
    from labnotebook.results import store

    read, parsed = store.read_record, {}

    def read_record(path: Path):
        key = (path, path.read_bytes())
        if key not in parsed:
            parsed[key] = read(path)
        record = copy.copy(parsed[key])
        for f in dataclasses.fields(record):
            if isinstance(getattr(record, f.name), (list, dict)):
                setattr(record, f.name, copy.copy(getattr(record, f.name)))
        return record

    with pytest.MonkeyPatch.context() as m:
        m.setattr(store, "read_record", read_record)
        yield


@pytest.fixture(scope="module")
def shared(root):
    """What every evaluation shares: the keys and folders (hashing sources is the slow part)."""
    r = Results(root)
    return r.keys, r.folders


def evaluate(root, shared, call: Call, perturb=None) -> tuple[str, list[str]]:
    """The call's output and the warnings it raised, over results re-read from ``root`` and
    changed by ``perturb(results)`` first."""
    results = Results(root)
    results.__dict__["keys"], results.__dict__["folders"] = shared
    if perturb:
        perturb(results)
    warnings = []
    ctx = Context(results, H100, [H100, H200], warn=warnings.append).at(call.page)
    fn = getattr(macros, call.macro)
    kwargs = dict(call.kwargs, caller=lambda: "S") if call.macro == "claim" else call.kwargs
    return fn(ctx, *call.args, **kwargs), warnings


def scale(results: Results, experiment: str, gpu: str, name: str, case: str, k: float) -> None:
    """Every time of one row multiplied by ``k``."""
    record = results.view(experiment, gpu).record
    row = record.row(name, case)
    t = row.time
    faster = dataclasses.replace(row, time=Timing(t.median_ms * k, t.q10_ms * k, t.q90_ms * k, t.min_ms * k,
                                                  t.max_ms * k, t.reps))
    record.rows = [faster if r is row else r for r in record.rows]


def read_by(side: Side) -> list[str]:
    """The rows a side's time is made of: every candidate of a pick, a kernel and its copies."""
    if side.name in PICKS:
        among = side.among
        return [r.name for r in side.view.record.rows if r.case == side.case and r.ok and r.time
                and (r.kind == among if isinstance(among, str) else r.name in among)]
    return [side.row().name] + (["h2d", "d2h"] if side.with_copies else [])


def ticked(out: str) -> bool:
    return 'class="nb-claim"' in out


def verdict(out: str) -> str | None:
    m = re.search(r'data-verdict="(\w+)"', out)
    return m.group(1) if m else None


# -- claims ------------------------------------------------------------------------------------------

def sides(call: Call) -> list[tuple[str, str]]:
    """The (GPU of a, GPU of b) pairs a claim is checked on."""
    gpu, gpu_b = call.kwargs.get("gpu"), call.kwargs.get("gpu_b")
    return [(g, g) for g in (H100, H200)] if gpu is None and gpu_b is None else [(gpu or H100, gpu_b or gpu or H100)]


def falsify(call: Call, ga: str, gb: str):
    """A perturbation of the rows a claim reads on (ga, gb) that makes it false at one case."""
    experiment, a, relation, b = call.args
    kw = call.kwargs
    experiment_b, among, by = kw.get("experiment_b", experiment), kw.get("among", "kernel"), kw.get("by", "time")

    def perturb(results: Results):
        first_a = claims._last(_Ctx(results), experiment, a)
        first_b = claims._last(_Ctx(results), experiment_b, b)
        view_a, view_b = results.view(experiment, ga), results.view(experiment_b, gb)
        pairs = claims._pairs(first_a, first_b, relation)
        where = kw.get("cases") or ([kw["case"]] if "case" in kw else
                                    claims._where_all_ran(view_a, view_b, pairs, relation, kw.get("case_b"), among))
        case = where[0]
        x, y = pairs[0]
        if relation == "one of":  # a row outside the names, made the fastest by far
            leader = Side(view_a, x, case, among=among).row()
            outsider = next(r for r in view_a.record.rows if r.case == case and r.ok and r.time and r.name not in y
                            and (r.kind == among if isinstance(among, str) else r.name in among))
            k = leader.time.q10_ms / outsider.time.q90_ms
            scale(results, experiment, ga, outsider.name, case, k / 4 if not PICKS[x] else k * 4)
            return
        sa = Side(view_a, x, case, among=among).cost(by)
        sb = Side(view_b, y, kw.get("case_b") or case, among=among).cost(by)
        if relation in ("faster", "slower") or relation.startswith("behind by more"):
            k = sb.median / sa.median  # the same median: level
        elif relation == "not slower":  # a far behind
            k = 4 * sb.hi / sa.lo
        elif relation.startswith("within"):
            k = 3 * sb.median / sa.median * (1 + float(re.search(r"[\d.]+", relation).group()) / 100)
        else:  # level, behind by at most N%: a far ahead
            k = sb.lo / sa.hi / 4
        scale(results, experiment, ga, x, case, k)
    return perturb


class _Ctx:
    """What ``claims._last`` reads of a context."""

    def __init__(self, results):
        self.results = results


@pytest.mark.parametrize("call", CLAIMS, ids=str)
def test_each_claim_holds_and_fails_when_its_rows_make_it_false_on_each_gpu(root, shared, call):
    out, warnings = evaluate(root, shared, call)
    assert ticked(out) and not warnings, (out, warnings)
    for ga, gb in sides(call):
        out, warnings = evaluate(root, shared, call, falsify(call, ga, gb))
        assert not ticked(out) and "contradicted by the results" in out, (ga, gb, html.unescape(out))
        assert warnings, (ga, gb)  # a contradiction fails --strict on any GPU


def named_gpus(call: Call) -> list[str]:
    if call.macro == "claim":
        return sorted({g for pair in sides(call) for g in pair})
    return sorted({call.kwargs.get("gpu") or H100, call.kwargs.get("gpu_b") or call.kwargs.get("gpu") or H100})


def experiments(call: Call) -> list[str]:
    return sorted({call.args[0], call.kwargs.get("experiment_b", call.args[0])})


@pytest.mark.parametrize("damage", ["removed", "truncated"])
@pytest.mark.parametrize("call", CALLS, ids=str)
def test_a_gpu_whose_results_file_is_gone_or_broken_leaves_no_tick_and_no_clean_words(root, shared, call, damage):
    for gpu in named_gpus(call):
        for experiment in experiments(call):
            path = Store(root / "results").path(experiment, gpu)
            kept = path.with_suffix(".kept")
            shutil.copyfile(path, kept)
            try:
                if damage == "removed":
                    path.unlink()
                else:
                    path.write_bytes(kept.read_bytes()[: kept.stat().st_size // 2])
                out, warnings = evaluate(root, shared, call)
            finally:
                shutil.move(kept, path)
            assert not ticked(out), (gpu, experiment, out)
            assert "⚠" in out or "? not checked on the" in out, (gpu, experiment, out)  # said where it shows
            if gpu == H100 or damage == "truncated":  # the reference GPU's results, or unreadable ones: fail
                assert warnings, (gpu, experiment)


# -- rendered comparisons: compare() and best() ----------------------------------------------------------

def flip(call: Call, was: str):
    """A perturbation that turns a rendered comparison's verdict into another one."""
    experiment, case, a, b = call.args[:4]
    kw = call.kwargs
    gpu, gpu_b = kw.get("gpu") or H100, kw.get("gpu_b") or kw.get("gpu") or H100

    def perturb(results: Results):
        sa = Side(results.view(experiment, gpu), a, case, kw.get("with_copies", False), kw.get("among", "kernel"))
        sb = Side(results.view(kw.get("experiment_b", experiment), gpu_b), b, kw.get("case_b") or case)
        ta, tb = sa.cost("time"), sb.cost("time")
        k = tb.lo / ta.hi / 4 if was != "faster" else tb.hi / ta.lo * 4  # far ahead, or far behind
        others = set(read_by(sb)) if sb.view is sa.view and sb.case == case and sb.name not in PICKS else set()
        for name in set(read_by(sa)) - others:  # b stays as it is, even where a picks among it
            scale(results, experiment, gpu, name, case, k)
    return perturb


COMPARES = [c for c in CALLS if c.macro == "compare"]


@pytest.mark.parametrize("call", COMPARES, ids=str)
def test_each_rendered_comparison_changes_its_words_with_the_data(root, shared, call):
    out, warnings = evaluate(root, shared, call)
    was = verdict(out)
    assert was and not warnings, out
    flipped, _ = evaluate(root, shared, call, flip(call, was))
    assert verdict(flipped) not in (was, None), (was, flipped)
    assert ("faster" in flipped) == (verdict(flipped) == "faster")


@pytest.mark.parametrize("call", [c for c in CALLS if c.macro == "best"], ids=str)
def test_the_fastest_named_changes_when_another_row_overtakes_it(root, shared, call):
    out, _ = evaluate(root, shared, call)
    experiment, case = call.args[:2]
    among = call.kwargs.get("among", "kernel")

    def perturb(results):
        view = results.view(experiment, call.kwargs.get("gpu") or H100)
        slowest = view.pick(case, among, slowest=True)
        scale(results, experiment, view.gpu, slowest.name, case, view.pick(case, among).time.q10_ms / slowest.time.q90_ms / 4)
    after, _ = evaluate(root, shared, call, perturb)
    assert after != out and "tied" not in after, (out, after)


# -- charts that draw several GPUs or many rows say what they could not draw ------------------------------

ROOFLINE = Call("gpu.md", "roofline", (), {"tensor": ["matmul_fp16", ["cuBLAS GemmEx", "cuBLAS Hgemm"]]})
CEILING_CHART = Call("dashboard.md", "ceiling_chart", (), {})


@pytest.mark.parametrize("call", [ROOFLINE, CEILING_CHART], ids=str)
def test_a_chart_marks_each_row_and_gpu_it_could_not_draw(root, shared, call, monkeypatch):
    import matplotlib.pyplot as plt

    from labnotebook.site import plots

    # What a chart says it left out, not the chart: its figure is made, not drawn (the drawn
    # charts are read in a browser, test_browser.py), and kept from the charts drawn after it.
    monkeypatch.setattr(plots, "_svg", lambda fig: plt.close(fig) or "<svg></svg>")
    monkeypatch.setattr(plots, "_DRAWN", type(plots._DRAWN)())
    before, _ = evaluate(root, shared, call)
    assert "Not drawn" not in before
    path = Store(root / "results").path("softmax", H200)
    kept = path.with_suffix(".kept")
    shutil.move(path, kept)
    try:
        gone, _ = evaluate(root, shared, call)
    finally:
        shutil.move(kept, path)
    assert "Not drawn for the H200:" in gone and "softmax" in gone.split("Not drawn for the H200:")[1]

    def fail_a_row(results):
        record = results.view("softmax", H100).record
        row = record.row("1_naive", "8192x8192")
        failed = dataclasses.replace(row, status="failed", time=None, error="wrong answer")
        record.rows = [failed if r is row else r for r in record.rows]
    failed, _ = evaluate(root, shared, call, fail_a_row)
    assert re.search(r"Not drawn for the H100: [^<]*softmax · 1&#95;naive \((failed|row failed)\)", failed), failed[-600:]
