"""The macros a page uses to show results: plain functions of a ``Context``, registered with
mkdocs-macros by the thin ``define_env`` at the end. Each parses its arguments, calls the module
that does the work (``tables``, ``plots``, ``claims``, ``roofline``, ``dashboard``...) and
returns its Markdown.

Every number, and every word that compares two numbers, comes through one of these, from the
committed results. The rule all of them follow (a marker where the number would be, and a
warning that fails ``--strict``) lives in ``context.macro``. docs/authoring.md lists them for
authors; each docstring states its contract.
"""

from __future__ import annotations

import logging
from pathlib import Path

from .. import settings
from ..results import metrics, noise
from ..declare.experiment import Kernel
from ..results.rows import CHECKED
from ..results.store import CEILINGS
from . import claims, dashboard as board, entry_sources, fmt, frontmatter, plots, profile_tables, tables
from . import gpu_pages, portability  # noqa: F401 - and their macros: the GPU pages, the architectures
from .claims import Side
from .context import MACROS, Context, macro
from .roofline import rooflines
from .views import Problem

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
    """One case on every GPU with results (or those named), side by side."""
    views = [ctx.view(experiment, g) for g in gpus or ctx.shown]
    return tables.gpu_table(views, case, kernels, ctx.note) + "\n"


@macro("block")
def phase_table(ctx, experiment, case, gpu=None):
    """Every phase of a whole program run in fresh processes: median, spread, share."""
    return tables.phase_table(ctx.view(experiment, gpu), case)


@macro("block")
def gpu_facts(ctx):
    """Each GPU's properties as its driver reported them in the last run (the ceiling runs)."""
    return tables.gpu_facts([ctx.view(CEILINGS, g).require() for g in ctx.measured()]) + "\n"


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
    return entry_sources.files(ctx, experiment)


@macro("block")
def reproduce(ctx, experiment):
    """The commands that re-make this entry's results on a GPU, annotated."""
    return entry_sources.commands(ctx, experiment)


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
            '??? note "What the run printed"', tables.indent(run_output(ctx, experiment))]
    parts += ["## Reproduce this entry", reproduce(ctx, experiment), sources(ctx, experiment)]
    return "\n\n".join(parts) + "\n"


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
    return plots.figure(plots.ceiling_chart(entries, ctx.shown)) + plots.undrawn(
        [(f"{line.experiment} · {line.name}", gpu, why) for line in lines for gpu, why in line.undrawn.items()])


@macro("block")
def roofline(ctx, tensor=None):
    """A roofline per GPU. Its memory roof is the copy bandwidth and its FP32 roof the FMA
    microbenchmark, both measured by the ceilings run on that GPU; ``tensor`` = (experiment,
    [baselines]) names the library runs whose best TFLOP/s is drawn as the tensor-core roof.
    Each kernel and GPU baseline that declares its arithmetic intensity is placed at the case
    it was profiled at (``run/profiled.py: profile_case``), its timed median there."""
    return rooflines(ctx, tensor)


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
    return board.results_provenance(ctx)


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
    return claims.same_output(ctx, experiment, kernels, gpu)


@macro("inline")
def claim(ctx, experiment, a, relation, b, case=None, cases=None, case_b=None, gpu=None, gpu_b=None,
          experiment_b=None, among="kernel", by="time", caller=None):
    """Check a sentence's comparison against the data at every case it covers. Use it as
    ``{% call claim(...) %}the sentence{% endcall %}``: the sentence is shown with a ✓ whose
    hover gives the figures, or, where the data contradicts it, followed by the figures that do,
    with a warning that fails --strict naming the page, the claim and the figures.

    ``relation`` (by the noise rule, ``labnotebook/results/noise.py``): "faster" or "slower" (outside
    both rows' spreads), "level" (inside them), "within N%" (medians, either way), "behind by at
    most N%" (not faster, and at least 100 − N % of the other's speed), "behind by more than N%"
    (slower, and under 100 − N % of the other's speed: a bar not met), or "one of" (``a`` is
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
    return claims.judged(ctx, caller() if caller else "", experiment, a, relation, b, case, cases, case_b, gpu,
                         gpu_b, experiment_b, among, by)


# -- registration --------------------------------------------------------------------------------

def define_env(env) -> None:
    """Register every macro (``context.MACROS``: each ``@macro`` above), bound to one Context per
    build that follows the page being rendered."""
    import functools

    from .views import Results

    config_file = Path(env.conf["config_file_path"])
    notebook = settings.of(env.conf, config_file.name)
    try:
        pages = frontmatter.pages(Path(env.conf["docs_dir"]), env.conf["nav"])
    except frontmatter.FrontMatterError:
        pages = []  # the hooks report it, in one line, before any page renders
    drafts = frozenset(Path(p.path).stem for p in pages if p.entry and p.draft)
    results = Results(config_file.parent)
    ctx = Context(results, notebook.gpu, list(notebook.gpus), warn=log.warning, info=log.info, drafts=drafts,
                  shown=gpu_pages.every_gpu(config_file.parent, results.keys, notebook.gpus))

    def bind(fn):
        @functools.wraps(fn)
        def bound(*args, **kwargs):
            page = env.page
            ctx.at(page.file.src_uri if page else "?", bool(page and page.meta.get("draft")))
            return fn(ctx, *args, **kwargs)
        return bound

    for name, fn in MACROS.items():
        env.macro(bind(fn), name)
    env.macro(lambda: contents(ctx, pages), "contents")
