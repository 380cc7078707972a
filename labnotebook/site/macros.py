"""The macros a page uses to show results: plain functions of a ``Context``, registered with
mkdocs-macros by the thin ``define_env`` at the end.

Every number, and every word that compares two numbers, comes through one of these, from the
committed results. The rule all of them follow (a marker where the number would be, and a
warning that fails ``--strict``) lives in ``context.macro``. docs/authoring.md lists them for
authors; each docstring states its contract.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from ..results import metrics, noise
from ..declare.experiment import Kernel
from ..results.store import CEILINGS
from ..results.rows import CHECKED, BaselineRow
from . import claims, dashboard as board, fmt, frontmatter, markers, plots, profile_tables, tables
from .claims import Side
from .context import Context, macro
from .fmt import cell
from .views import Problem, run_command

log = logging.getLogger("mkdocs.plugins.labnotebook")


# -- tables ------------------------------------------------------------------------------------

@macro("block")
def results_table(ctx, experiment, cases=None, kernels=None, baseline=None, percent=False, gpu=None):
    """Rows at cases (default: every timed row), with the comparison with ``baseline`` in words
    ("1.25× faster", "3.1× slower"; with ``percent``, as "% of" it), and the provenance box."""
    v = ctx.view(experiment, gpu)
    return (tables.results_table(v, ctx.note, cases, kernels, baseline, percent) + "\n\n"
            + tables.provenance(v))


@macro("block")
def side_by_side(ctx, experiment, kernels, cases, gpu=None):
    """A compact table of a few rows, each compared with the first: a rung beside the one before."""
    v = ctx.view(experiment, gpu)
    return tables.results_table(v, ctx.note, cases, kernels, kernels[0]) + tables.caption([v])


@macro("block")
def checks(ctx, experiment, gpu=None):
    """Every case that was verified but not timed (edge sizes, extreme values), per row."""
    return tables.checks_table(ctx.view(experiment, gpu), ctx.note)


@macro("block")
def kernel_report(ctx, experiment, gpu=None):
    """Registers, shared memory, spills, occupancy and the compute-sanitizer's verdict per kernel."""
    return tables.kernel_report(ctx.view(experiment, gpu))


@macro("block")
def profile(ctx, experiment, gpu=None):
    """Nsight Compute's view of each kernel and GPU baseline at its profile case (limiter, DRAM,
    caches, occupancy, stalls), and a sentence per rung on what its profile changed."""
    v = ctx.view(experiment, gpu)
    steps = profile_tables.ladder(v, ctx.note)
    return profile_tables.profile_table(v, ctx.note) + ("\n\n" + steps if steps else "") + "\n"


@macro("block")
def end_to_end(ctx, experiment, kernel, cpu, cases, gpu=None):
    """The CPU against the GPU, kernel alone and with its host<->device copies."""
    return tables.end_to_end_table(ctx.view(experiment, gpu), kernel, cpu, cases) + "\n"


@macro("block")
def gpu_table(ctx, experiment, case, kernels, gpus=None):
    """One case on every GPU of ``extra.notebook.gpus`` (or those named), side by side."""
    views = [ctx.view(experiment, g) for g in gpus or ctx.gpus]
    return tables.gpu_table(views, case, kernels, ctx.note) + "\n"


@macro("block")
def phase_table(ctx, experiment, case, gpu=None):
    """Every phase of a whole program run in fresh processes: median, spread, share."""
    return tables.phase_table(ctx.view(experiment, gpu), case)


@macro("block")
def gpu_facts(ctx):
    """Each GPU's properties as its driver reported them in the last run (the ceiling runs)."""
    return tables.gpu_facts([ctx.view(CEILINGS, g).require() for g in ctx.gpus]) + "\n"


@macro("block")
def run_output(ctx, experiment, gpu=None):
    """What the run reported, row by row, as the build prints it."""
    lines = []
    for r in ctx.view(experiment, gpu).require().rows:
        t = f"{r.time.median_ms:.4f} ms" if r.time else ""
        lines.append(f"{r.case:>20}  {r.name:<24} {r.status:<8} {t}  {r.error or ''}".rstrip())
    return "```text\n" + "\n".join(lines) + "\n```\n"


@macro("block")
def sources(ctx, experiment):
    """Links to the exact files that ran (copied into the site by the hooks), the engine files
    the results are keyed on besides them, and the key's hash."""
    ctx.results.folder(experiment)
    key = ctx.results.keys[experiment]
    if key.error:
        raise Problem("error", f"{experiment}: {key.error}", experiment)
    here = f"snippets/{experiment}/"
    links = " · ".join(f'<a href="../{path}" download><code>{path.removeprefix(here)}</code></a>'
                       for path in sorted(key.files) if path.startswith(here))
    engine = ", ".join(f"`{path.removeprefix('labnotebook/')}`" for path in sorted(key.files)
                       if not path.startswith(here) and "/protocol/" not in path)
    return (f'!!! abstract "Source files"\n    {links}. Its results are keyed on these, on {engine} and on the '
            f"measurement protocol (`run/protocol/`): together they hash to `{key.digest}`, and results measured "
            "from exactly these files record the same hash. An edit anywhere else stales nothing.\n")


@macro("block")
def reproduce(ctx, experiment):
    """The commands that re-make this entry's results on a GPU, annotated."""
    ctx.results.folder(experiment)
    return f"""```bash
pip install -e '.[gpu]'  # (1)!
{run_command(experiment)} --force  # (2)!
python build_results.py --summary | grep '"{experiment}"'  # (3)!
mkdocs serve  # (4)!
```

1.  On a machine with an NVIDIA GPU and the CUDA toolkit: PyCUDA builds against `nvcc`.
2.  Compiles, verifies and times every kernel of this entry, runs compute-sanitizer over the
    CUDA C++ ones (no sanitizer frame could name a Python-DSL kernel), and writes
    `results/{experiment}/<gpu>.json` — only if every check passed.
3.  Every result of this entry on every GPU, one JSON object per line: what this page is drawn from.
4.  The page again, now from your GPU's results if you point `extra.notebook.gpu` in `mkdocs.yml` at it.
"""


@macro("block")
def entry_results(ctx, experiment, cases=None, kernels=None, baseline=None, percent=False, numbers=True):
    """The part every entry page has: its numbers (``results_table`` with these arguments and the
    provenance box; ``numbers=False`` where the page shows its tables itself), the checks, the
    compiler's and sanitizer's report, the run's output, the source files and how to reproduce
    it. Without results (a draft) it says so, with the command to run."""
    parts = []
    if numbers:
        options = {k: v for k, v in dict(cases=cases, kernels=kernels, baseline=baseline, percent=percent).items() if v}
        parts += ["## The numbers", results_table(ctx, experiment, **options)]
    if ctx.results.view(experiment, ctx.gpu).record is None:
        parts += [] if numbers else [results_table(ctx, experiment)]  # its box says what is missing
    else:
        edges = checks(ctx, experiment)
        parts += (["## Verified, not timed", edges] if edges.strip() else []) + [
            "## What the compiler gave each kernel", kernel_report(ctx, experiment),
            "## What the profiler saw", profile(ctx, experiment),
            '??? note "What the run printed"', _indent(run_output(ctx, experiment))]
    parts += ["## Reproduce this entry", reproduce(ctx, experiment), sources(ctx, experiment)]
    return "\n\n".join(parts) + "\n"


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else line for line in text.splitlines())


# -- charts ------------------------------------------------------------------------------------

@macro("block")
def sweep_plot(ctx, experiment, names, size_param="n", cases=None, gpu=None):
    """Throughput against ``size_param``, one line per name; the title says what every plotted
    case shares, the legend only what has points."""
    v = ctx.view(experiment, gpu)
    v.require()
    return plots.figure(plots.bandwidth_sweep(v, names, size_param, cases, ctx.note))


@macro("block")
def case_bars(ctx, experiment, kernel, cases, gpu=None):
    """One row at several cases that are not a numeric sweep (block shapes, say), as bars."""
    v = ctx.view(experiment, gpu)
    return plots.figure(plots.case_bars(v, kernel, cases))


@macro("block")
def rung_bars(ctx, experiment, case, kernels, reference, gpu=None):
    """Every rung at one case as a bar, labelled with its % of ``reference``."""
    v = ctx.view(experiment, gpu)
    return plots.figure(plots.rung_bars(v, case, kernels, reference))


@macro("block")
def phase_chart(ctx, experiment, case, gpu=None):
    """A whole program's phases as bars, on a log scale."""
    v = ctx.view(experiment, gpu)
    return plots.figure(plots.phase_chart(v, case))


# -- the dashboard and the contents --------------------------------------------------------------

@macro("block")
def dashboard(ctx):
    """Every entry's kernels and baselines at its declared headline case, on every GPU, compared
    with its declared baseline; a marker in every cell that has no trustworthy number."""
    return f'<div class="nb-dashboard" markdown>\n\n{board.dashboard_table(ctx, board.lines(ctx))}\n\n</div>\n'


@macro("block")
def ceiling_chart(ctx):
    """Each headline row's bandwidth as a share of its GPU's copy bandwidth."""
    lines = board.lines(ctx)
    entries = [(f"{line.experiment} · {line.name}", line.pcts) for line in lines if any(line.pcts.values())]
    return plots.figure(plots.ceiling_chart(entries, ctx.gpus)) + _undrawn(
        [(f"{line.experiment} · {line.name}", gpu, why) for line in lines for gpu, why in line.undrawn.items()])


def _undrawn(missing: list[tuple[str, str, str]]) -> str:
    """Under a chart, what it could not draw, per GPU, and why (the table or page says more)."""
    by_gpu: dict[str, list[str]] = {}
    for what, gpu, why in missing:
        by_gpu.setdefault(gpu, []).append(f"{cell(what)} ({cell(why)})")
    return "".join(f'\n\n<p class="nb-problem">⚠ Not drawn for the {tables.short(g)}: {", ".join(items)}.</p>\n'
                   for g, items in by_gpu.items())


@macro("block")
def roofline(ctx, tensor=None):
    """A roofline per GPU. Its memory roof is the copy bandwidth and its FP32 roof the FMA
    microbenchmark, both measured by the ceilings run on that GPU; ``tensor`` = (experiment,
    [baselines]) names the library runs whose best TFLOP/s is drawn as the tensor-core roof.
    Each kernel and GPU baseline that declares its arithmetic intensity is placed at the case
    it was profiled at (``run/profiled.py: profile_case``), its timed median there."""
    charts = []
    for gpu in ctx.gpus:
        roofs_record = ctx.view(CEILINGS, gpu).require()
        fma, copy = metrics.fma_tflops(roofs_record), metrics.ceiling_gbs(roofs_record)
        if fma is None or copy is None:
            lacking = "FP32 FMA rate" if fma is None else "copy bandwidth"
            raise Problem("absent", f"the ceilings on {gpu} hold no {lacking} (measured by runs since the "
                                    f"roofline was added): run `{run_command(CEILINGS)}` there", CEILINGS, gpu)
        roofs = {"FP32 FMA": fma}
        if tensor:
            experiment, names = tensor
            rows = [r for r in ctx.view(experiment, gpu).require().rows
                    if r.name in names and r.ok and r.time and r.flops]
            if not rows:
                raise Problem("absent", f"{experiment} on {gpu} has no timed row of {', '.join(names)}", experiment, gpu)
            best_row = max(rows, key=lambda r: metrics.throughput(r)[0])
            roofs[f"tensor cores ({best_row.name}, {fmt.case(best_row.case)})"] = metrics.throughput(best_row)[0]
        points, missing = _roof_points(ctx, gpu)
        charts.append(plots.figure(plots.roofline(gpu, copy, roofs, points)) + _undrawn(missing) + "\n\n"
                      + _roof_table(gpu, copy, roofs, points))
    return "\n\n".join(charts) + "\n"


def _roof_table(gpu, copy, roofs, points) -> str:
    """Every point of a roofline as a row, with the roof above it and its share of that roof:
    the figures behind points the chart draws on top of each other."""
    rows = []
    for p in points:
        roof, height = p.roof(copy, roofs)
        rows.append([f"`{p.name}`", p.experiment, cell(fmt.case(p.case)), fmt.sig(p.intensity), fmt.sig(p.tflops),
                     f"{fmt.percent(100 * p.tflops / height)} of {roof}", p.limiter])
    body = tables.table(["kernel", "entry", "case", "flops / byte", "TFLOP/s", "share of the roof above it",
                         "limiter (Nsight Compute)"], rows)
    return (f'??? note "Every point on the {tables.short(gpu)}\'s roofline, with its share of the roof above it"\n'
            + _indent(body) + "\n")


def _roof_points(ctx, gpu) -> tuple[list[plots.RoofPoint], list[tuple[str, str, str]]]:
    """The points of a GPU's roofline, and what could not be drawn: (what, gpu, why)."""
    points, missing = [], []
    for experiment in ctx.published:
        view = ctx.view(experiment, gpu, note=False)
        problem = view.problem()
        if problem is not None:
            ctx.report(problem)  # a point from stale or failed results is not drawn as if it were good
            missing.append((experiment, gpu, markers.LOOKS[problem.kind][2]))
            continue
        exp = ctx.results.declaration(experiment)
        for name in exp.runnable_names():
            profiled = view.record.profile.profiles.get(name) if view.record.profile else None
            case = profiled.case if profiled and profiled.main else exp.profile_case(name)
            row = view.record.row(name, case) if case else None
            if row is None or isinstance(row, BaselineRow) and row.device == "cpu" or not row.intensity and row.ok:
                continue  # not on the GPU, or declares no arithmetic intensity: not a roofline point
            if not row.ok or not row.time:
                missing.append((f"{experiment} · {name}", gpu, "skipped" if row.status == "skipped" else
                                "failed" if not row.ok else "not timed"))
                continue
            value, unit = metrics.throughput(row)
            tflops = value if unit == "TFLOP/s" else value * row.intensity / 1e3
            try:
                limiter = profile_tables.limiter(profile_tables.profile_of(view, name).main)
            except Problem:  # no profile, or a stale one: the point stands, its limiter is unknown
                limiter = "–"
            points.append(plots.RoofPoint(experiment, name, row.kind, case, row.intensity, tflops, limiter,
                                          metrics.ceiling_gbs(view.record)))
    return points, missing


@macro("block")
def execution_summary(ctx):
    """When each experiment last ran on each GPU, at which commit, and how it went."""
    return board.execution_summary(ctx) + "\n"


@macro("block")
def refresh_cost(ctx):
    """What refreshing the notebook cost on each GPU: every results file's wall time, by phase."""
    return board.refresh_cost(ctx)


@macro("block")
def results_provenance(ctx):
    """Which runs the site's numbers come from: per GPU, the dates and commits of its results."""
    lines = []
    for g in ctx.gpus:
        records = [ctx.view(e, g, note=False).record for e in ctx.published]
        records = [r for r in records if r is not None and r.provenance]
        commits = sorted({r.provenance.git_commit[:10] for r in records if r.provenance.git_commit})
        dates = sorted(r.provenance.date[:10] for r in records)
        if not records:
            lines.append(f"- **{cell(g)}**: no results yet.")
            continue
        span = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        lines.append(f"- **{cell(g)}**: {len(records)} of {len(ctx.published)} entries, measured "
                     f"{span} at commit{'s' if len(commits) > 1 else ''} "
                     + ", ".join(f"`{c}`" for c in commits) + ".")
    return "\n".join(lines) + "\n"


def contents(ctx, pages):
    """The published entries, by topic, oldest first, from their front matter (a draft is
    reached from the navigation alone)."""
    return frontmatter.contents([p for p in pages if p.entry and not p.draft])


# -- inline figures and words --------------------------------------------------------------------

@macro("inline")
def value(ctx, experiment, kernel, case, what="median", gpu=None, among="kernel"):
    """One figure of one verified, timed row: median, throughput, pct_ceiling (of the copy
    bandwidth; GPU memory traffic only) or max_error (any verified row). ``kernel`` may be
    "fastest" (or "best") or "slowest": picked at ``case`` among ``among`` (names, or a kind)."""
    v = ctx.view(experiment, gpu)
    row = v.row(kernel, case) if what == "max_error" else Side(v, kernel, case, among=among).row()
    if what == "median":
        return fmt.duration(row.time.median_ms)
    if what == "throughput":
        value_, unit = metrics.throughput(row)
        if value_ is None:
            raise Problem("absent", f"{experiment}/{row.name} at {case} moves no declared bytes or flops", experiment)
        return fmt.rate(value_, unit)
    if what == "pct_ceiling":
        pct = metrics.pct_of_ceiling(row, v.record)
        if pct is None:
            raise Problem("absent", f"{experiment}/{row.name} at {case} is not GPU memory traffic: it has no % "
                                    "of the copy bandwidth", experiment)
        return fmt.percent(pct)
    if what == "max_error":
        if not row.ok or not isinstance(row, CHECKED) or row.check is None:
            raise Problem("row failed" if row.status == "failed" else "absent",
                          f"{experiment}/{row.name} at {case} has no verified output ({row.status})", experiment)
        return fmt.sig(row.check.max_abs_err, 2)
    raise Problem("error", f"value(): 'what' is median, throughput, pct_ceiling or max_error; got {what!r}")


@macro("inline")
def ceiling(ctx, experiment, gpu=None):
    """The copy bandwidth measured in the same run as the experiment's results."""
    record = ctx.view(experiment, gpu).require()
    gbs = metrics.ceiling_gbs(record)
    if gbs is None:
        raise Problem("absent", f"{experiment} on {record.gpu} recorded no copy ceiling", experiment, record.gpu)
    return fmt.rate(gbs, "GB/s")


@macro("inline")
def compare(ctx, experiment, case, a, b, than=None, case_b=None, gpu_b=None, experiment_b=None,
            with_copies=False, among="kernel", gpu=None):
    """'1.3× faster than `b`', '1.2× slower than `b`' or 'as fast as `b` (1.01×, within the
    spread)': the direction word from the data by the noise rule, never a ratio below 1. ``b``
    may be at another case (``case_b``), on another GPU (``gpu_b``) or of another experiment
    (``experiment_b``); ``than`` replaces the default name of ``b`` ("" leaves it out: "1.3×
    faster"); ``with_copies`` adds a's copies to its time; ``a`` may be "fastest"/"slowest",
    picked among ``among``."""
    side_a = Side(ctx.view(experiment, gpu), a, case, with_copies, among)
    side_b = Side(ctx.view(experiment_b or experiment, gpu_b or gpu), b, case_b or case, among=among)
    if than is None:
        than = f"`{b}`" + (f" at {fmt.case(case_b)}" if case_b else "") + (
            f" on the {tables.short(gpu_b)}" if gpu_b else "")
    return fmt.compared(claims.comparison(side_a, side_b), than, side_a.ref(), side_b.ref())


@macro("inline")
def profile_gain(ctx, experiment, a, b, gpu=None):
    """A sentence on what Nsight Compute saw change from kernel ``a`` to ``b`` (DRAM throughput,
    occupancy, the busiest pipe, the leading stall), direction words from the data."""
    return profile_tables.gain(ctx.view(experiment, gpu), a, b)


@macro("inline")
def limiter(ctx, experiment, kernel, gpu=None):
    """What limits ``kernel`` by its profile: memory-, compute- or latency-bound."""
    return profile_tables.limiter(profile_tables.profile_of(ctx.view(experiment, gpu), kernel).main)


@macro("inline")
def best(ctx, experiment, case, among="kernel", gpu=None):
    """The name of the fastest verified, timed row at ``case`` among ``among`` (names, or a kind;
    default: the kernels), and of every row tied with it by the noise rule:
    "`a`", or "`a` (tied with `b` within the spread)"."""
    first, *tied = ctx.view(experiment, gpu).leaders(case, among)
    ties = f" (tied with {_and(f'`{r.name}`' for r in tied)} within the spread)" if tied else ""
    return f"`{first.name}`{ties}"


def _and(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


@macro("inline")
def noise_rule(ctx):
    """The rule every comparison on the site follows, as ``labnotebook/results/noise.py`` states it."""
    return noise.RULE


COUNTED = {
    "kernels": lambda exp: exp.kernels,
    "CUDA kernels": lambda exp: [k for k in exp.kernels if isinstance(k, Kernel)],
    "baselines": lambda exp: exp.baselines,
    "cases": lambda exp: exp.cases,
    "edge cases": lambda exp: exp.edge_cases,
}
NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()


@macro("inline")
def count(ctx, experiment, what="kernels", capital=False):
    """How many of ``what`` (a key of ``COUNTED``) the experiment declares, as a word up to
    twelve ("Twelve" with ``capital``): counts in prose come from the declaration."""
    if what not in COUNTED:
        raise Problem("error", f"count(): what is one of {', '.join(COUNTED)}; got {what!r}")
    n = len(COUNTED[what](ctx.results.declaration(experiment)))
    word = NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else f"{n:,}"
    return word.capitalize() if capital else word


@macro("inline")
def same_output(ctx, experiment, kernels, gpu=None):
    """Whether the kernels wrote bit-identical outputs in every case where all ran (by digest)."""
    by_case: dict[str, dict[str, str]] = {}
    for r in ctx.view(experiment, gpu).require().rows:
        if r.kind == "kernel" and r.name in kernels and r.ok and r.digest:
            by_case.setdefault(r.case, {})[r.name] = r.digest
    both = {c: set(d.values()) for c, d in by_case.items() if len(d) == len(kernels)}
    differ = [c for c, digests in both.items() if len(digests) != 1]
    if differ or not both:
        if not both:
            raise Problem("absent", f"{experiment}: {kernels} never verified together at one case", experiment)
        raise Problem("contradicted", f"{experiment}: {kernels} differ at {differ}", experiment)
    together = "both" if len(kernels) == 2 else f"all {len(kernels)}"
    return f"bit-identical in all {len(both)} cases where {together} ran"


@macro("inline")
def claim(ctx, experiment, a, relation, b, case=None, cases=None, case_b=None, gpu=None, gpu_b=None,
          experiment_b=None, among="kernel", by="time", caller=None):
    """Check a sentence's comparison against the data at every case it covers. Use it as
    ``{% call claim(...) %}the sentence{% endcall %}``: the sentence is shown with a ✓ whose
    hover gives the figures, or, where the data contradicts it, followed by the figures that do,
    with a warning that fails --strict naming the page, the claim and the figures.

    ``relation`` (by the noise rule, ``labnotebook/results/noise.py``): "faster" or "slower" (outside
    both rows' spreads), "level" (inside them), "within N%" (medians, either way), "behind by at
    most N%" (not faster, and at least 100 − N % of the other's speed), or "one of" (``a`` is
    "fastest" or "slowest", picked among ``among``, and it and every row tied with it are among
    the names ``b`` lists). ``a`` and ``b`` are row names, or lists (every pair of them is
    checked; two lists pair up in order); "last" is the experiment's last rung.
    ``cases`` (or ``case``): where to check; by default every timed case where both sides ran.
    ``case_b``/``gpu_b``/``experiment_b``: the other side's case, GPU or experiment.
    ``by="pct_ceiling"`` compares shares of each run's copy bandwidth instead of times.

    The sentence may name rows only among those it checks (in backticks, or as "rung N").
    With no ``gpu`` and no ``gpu_b``, it speaks of every GPU the page shows; it is checked on
    each, and a GPU whose results are stale, failed, missing or unreadable shows a marker in
    place of the ✓ (the reference GPU's results must be fresh; ``Context.lenient``)."""
    body = caller() if caller else ""
    if by not in claims.MEASURES:
        raise Problem("error", f"claim(): by is one of {claims.MEASURES}; got {by!r}")
    claims.check_relation(relation)
    a, b = _last(ctx, experiment, a), _last(ctx, experiment_b or experiment, b)
    _words_name_the_rows(ctx, body, experiment, experiment_b, a, b, relation)
    sides = [(g, g) for g in ctx.gpus] if gpu is None and gpu_b is None else [(gpu or ctx.gpu, gpu_b or gpu or ctx.gpu)]
    verdicts, unchecked = [], []
    for ga, gb in sides:
        problems = [p for p in (ctx.results.view(experiment, ga).problem(),
                                ctx.results.view(experiment_b or experiment, gb).problem()) if p is not None]
        if problems:
            for p in problems:
                ctx.report(p)
            unchecked.append(problems[0])
            continue
        verdicts.append(_claim_on(ctx, experiment, a, relation, b, case, cases, case_b, ga, gb, experiment_b, among, by))
    broken = [(statement, figures) for ok, statement, figures in verdicts if not ok]
    if broken:
        problem = Problem("contradicted", "; ".join(f"the claim “{statement}” does not hold: {'; '.join(figures)}"
                                                    for statement, figures in broken), experiment)
        ctx.report(problem)
        shown = "; ".join(f for _, figures in broken for f in figures)
        marker = f' <span class="nb-problem" title="{cell(problem)}">✗ contradicted by the results: {cell(shown)}</span>'
        return _attach(body, marker)
    checked = " · ".join(f"{statement}: {'; '.join(figures)}" for _, statement, figures in verdicts)
    if unchecked:
        where = "; ".join(f"the {tables.short(p.gpu)}: {markers.LOOKS[p.kind][2]}" for p in unchecked)
        title = "; ".join(str(p) for p in unchecked) + (f" · Checked: {checked}" if checked else "")
        return _attach(body, f' <span class="nb-unchecked" title="{cell(title)}">? not checked on {cell(where)}</span>')
    return _attach(body, f'<span class="nb-claim" title="Checked against the results ({noise.RULE}): '
                         f'{cell(checked)}">✓</span>')


def _last(ctx, experiment, names):
    """``"last"`` (alone or in a list) as the experiment's last declared rung."""
    if names == "last" or isinstance(names, list) and "last" in names:
        last = ctx.results.declaration(experiment).kernels[-1].name
        return last if names == "last" else [last if n == "last" else n for n in names]
    return names


RUNG = re.compile(r"\brungs? (\d+)(?:(?:,| and| or| to|–) (\d+))*", re.I)
NAME = re.compile(r"`([^`]+)`")


def _words_name_the_rows(ctx, body, experiment, experiment_b, a, b, relation) -> None:
    """A claim's sentence names no row of its experiments that the claim does not check: the
    words and the check name the same rows. Rows are named in backticks (`5_flash2`) or as
    "rung 5"; "fastest"/"slowest" claims check every row, so their words may name any."""
    if relation == "one of" or isinstance(a, str) and a in claims.PICKS:
        return
    checked = {n for side in (a, b) for n in (side if isinstance(side, list) else [side])}
    rows, rungs = set(), {}
    for name in {experiment, experiment_b or experiment}:
        for row in ctx.results.declaration(name).runnable_names():
            rows.add(row)
            number = row.split("_")[0]
            if number.isdigit():
                rungs.setdefault(int(number), set()).add(row)
    named = {n for n in NAME.findall(body) if n in rows}
    for m in RUNG.finditer(body):
        for n in re.findall(r"\d+", m.group(0)):
            named |= rungs.get(int(n), set())
    stray = sorted(named - checked, key=fmt.rung_order)
    if stray:
        raise Problem("error", f"claim(): its sentence names {', '.join(f'`{n}`' for n in stray)}, which it does not "
                               f"check (it checks {_names(sorted(checked, key=fmt.rung_order))}): name those rows in "
                               "the claim, or leave them out of its words", experiment)


def _claim_on(ctx, experiment, a, relation, b, case, cases, case_b, gpu, gpu_b, experiment_b, among, by):
    """``(holds, statement, figures)`` for a claim with side a on ``gpu`` and side b on ``gpu_b``."""
    view_a, view_b = ctx.results.view(experiment, gpu), ctx.results.view(experiment_b or experiment, gpu_b)
    pairs = _pairs(a, b, relation)
    where = cases or ([case] if case else _where_all_ran(view_a, view_b, pairs, relation, case_b, among))
    if not where:  # a misspelt row, or rows that never ran together: nothing to check is no ✓
        raise Problem("absent", f"claim(): no case where {_names(a)} and {_names(b)} were both timed", experiment)
    other = " ".join(x for x in (experiment_b, case_b and f"at {fmt.case(case_b)}",
                                 gpu_b != gpu and f"on the {tables.short(gpu_b)}") if x)
    subject = f"the {a} of {_names(among) if isinstance(among, list) else 'the ' + among + 's'}" \
        if isinstance(a, str) and a in claims.PICKS else _names(a)
    verb = {"faster": "faster than", "slower": "slower than", "level": "level with", "one of": "one of"}.get(
        relation, relation.replace("behind by at most", "behind, by at most") + (" of" if "within" in relation else ""))
    statement = (f"on the {tables.short(view_a.gpu)}, {subject} {verb} {_names(b)}{' ' + other if other else ''}, "
                 f"at {', '.join(fmt.case(c) for c in where)}")
    checked, broken = [], []
    for c in where:
        for x, y in pairs:
            side = Side(view_a, x, c, among=among)
            ok, figures = (claims.one_of(side, y) if relation == "one of"
                           else claims.holds(relation, side, Side(view_b, y, case_b or c, among=among), by))
            (checked if ok else broken).append(figures)
    return (not broken, statement, broken or checked)


def _where_all_ran(view_a, view_b, pairs, relation, case_b, among) -> list[str]:
    """Every timed case where each named row of both sides was verified and timed."""
    def ran(view, name, case):
        try:
            Side(view, name, case, among=among).row()  # a pick from a set with no timed row at case did not run
            return True
        except Problem:
            return False
    return [c for c in view_a.cases() if all(ran(view_a, x, c) and (relation == "one of" or ran(view_b, y, case_b or c))
                                             for x, y in pairs)]


def _attach(body: str, tick: str) -> str:
    """The tick after the sentence's last word, keeping the whitespace that follows it."""
    stripped = body.rstrip()
    return stripped + tick + body[len(stripped):]


def _pairs(a, b, relation):
    if relation == "one of":
        return [(a, b)]
    a_list, b_list = (a if isinstance(a, list) else [a]), (b if isinstance(b, list) else [b])
    if len(a_list) > 1 and len(b_list) > 1:
        if len(a_list) != len(b_list):
            raise Problem("error", f"claim(): lists a={a_list} and b={b_list} are compared pairwise; "
                                   "give them the same length")
        return list(zip(a_list, b_list))
    return [(x, y) for x in a_list for y in b_list]


def _names(x) -> str:
    return ", ".join(f"`{n}`" for n in x) if isinstance(x, list) else f"`{x}`"


# -- registration --------------------------------------------------------------------------------

MACROS = [results_table, side_by_side, checks, kernel_report, end_to_end, gpu_table, phase_table, gpu_facts,
          run_output, sources, reproduce, entry_results, sweep_plot, case_bars, rung_bars, phase_chart, dashboard,
          ceiling_chart, execution_summary, refresh_cost, results_provenance, value, ceiling, compare, best,
          count, noise_rule, same_output, claim, profile, profile_gain, limiter, roofline]


def define_env(env) -> None:
    """Register every macro, bound to one Context per build that follows the page being rendered."""
    import functools

    from .views import Results

    root = Path(env.conf["config_file_path"]).parent
    notebook = env.conf["extra"]["notebook"]
    try:
        pages = frontmatter.pages(Path(env.conf["docs_dir"]), env.conf["nav"])
    except frontmatter.FrontMatterError:
        pages = []  # the hooks report it, in one line, before any page renders
    drafts = frozenset(Path(p.path).stem for p in pages if p.entry and p.draft)
    ctx = Context(Results(root), notebook["gpu"], list(notebook["gpus"]), warn=log.warning, info=log.info,
                  drafts=drafts)

    def bind(fn):
        @functools.wraps(fn)
        def bound(*args, **kwargs):
            page = env.page
            ctx.at(page.file.src_uri if page else "?", bool(page and page.meta.get("draft")))
            return fn(ctx, *args, **kwargs)
        return bound

    for fn in MACROS:
        env.macro(bind(fn), fn.__name__)
    env.macro(lambda: contents(ctx, pages), "contents")
