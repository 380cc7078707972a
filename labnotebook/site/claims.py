"""Comparisons the data decides: which of two rows is faster, by how much, and whether a sentence
that says so still holds, by the noise rule (``labnotebook/results/noise.py``).

A *side* is one row: an experiment on a GPU, a row name (or ``"fastest"``/``"slowest"``, picked
among ``among``), and a case. ``comparison`` says how many times faster side a is than side b and
whether that stands outside the two rows' spreads; ``holds`` checks a relation between them, and
says which figures decided it. ``judged`` checks a ``claim`` macro's sentence on every GPU and
case it covers, and that its words name only the rows it checks; ``same_output`` compares
outputs by digest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..results import metrics, noise
from . import fmt, markers, tables
from .context import Context
from .fmt import cell
from .views import Problem, View

# What "faster" compares. time: the medians (same work on both sides); pct_ceiling: the share of
# each run's copy bandwidth (different sizes, or different GPUs' ceilings).
MEASURES = ("time", "pct_ceiling")
# faster / slower: outside both spreads; level: inside them; within N%: medians within N% either
# way; behind by at most N%: not faster, and at least (100 - N)% of the other's speed; behind by
# more than N%: slower, and under (100 - N)% of the other's speed (a bar not met).
RELATION = re.compile(r"faster|slower|level|not slower|one of|within (\d+(?:\.\d+)?)%|behind by at most (\d+(?:\.\d+)?)%"
                      r"|behind by more than (\d+(?:\.\d+)?)%")
RELATIONS = ("'faster', 'slower', 'level', 'not slower', 'within N%', 'behind by at most N%', 'behind by more than N%' "
             "or 'one of'")


PICKS = {"fastest": False, "best": False, "slowest": True}  # "best" reads better in some sentences


@dataclass(frozen=True)
class Side:
    view: View
    name: str
    case: str
    with_copies: bool = False  # add the case's host<->device copies to the time
    among: list[str] | str = "kernel"  # what "fastest"/"slowest" choose from: names, or a kind

    def __post_init__(self):
        """A misspelt row or case is an error before any result is read (results may be
        missing, in a draft, and a misspelling is no less one)."""
        misspelt = self.view.undeclared(None if self.name in PICKS else self.name, self.case)
        if misspelt is not None:
            raise misspelt

    def row(self):
        if self.name in PICKS:
            return self.view.pick(self.case, self.among, slowest=PICKS[self.name])
        return self.view.timed(self.name, self.case)

    def time(self) -> noise.Spread:
        """The time with its spread; with its copies, their spreads added as bounds."""
        t = noise.Spread.of(self.row().time)
        if self.with_copies:
            for copy in ("h2d", "d2h"):
                t = t + noise.Spread.of(self.view.timed(copy, self.case).time)
        return t

    def cost(self, by: str) -> noise.Spread:
        """Smaller is faster: the time, or for ``pct_ceiling`` the time over the bytes it moved
        in units of this run's copy bandwidth (the reciprocal of its share of it)."""
        if by == "time":
            return self.time()
        pct = metrics.pct_of_ceiling(self.row(), self.view.record)
        if pct is None:
            raise Problem("absent", f"{self.describe()} is not GPU memory traffic: it has no % of the copy "
                                    "bandwidth", self.view.experiment, self.view.gpu)
        t = self.time()
        return t.scaled(100 / pct / t.median)

    def figure(self, by: str) -> str:
        t = self.cost(by)
        if by == "time":
            return f"{fmt.duration(t.median)} [{fmt.duration(t.lo)}–{fmt.duration(t.hi)}]"
        return f"{fmt.percent(100 / t.median)} [{fmt.percent(100 / t.hi)}–{fmt.percent(100 / t.lo)}] of copy"

    def ref(self) -> str:
        """The rows this side reads, as ``fmt.compared`` marks them."""
        names = self.row().name + ("+h2d+d2h" if self.with_copies else "")
        return f"{self.view.experiment}|{self.view.gpu}|{self.case}|{names}"

    def describe(self) -> str:
        name = self.row().name
        exp = f"{self.view.experiment}/" if self.view.experiment else ""
        return f"`{exp}{name}`{' with copies' if self.with_copies else ''} at {fmt.case(self.case)}"


def comparison(a: Side, b: Side, by: str = "time") -> noise.Comparison:
    """A against B by the noise rule: the ratio of medians (above 1 when a is faster) and
    whether it stands outside both spreads."""
    return noise.compare(a.cost(by), b.cost(by))


def check_relation(relation: str) -> re.Match:
    m = RELATION.fullmatch(relation)
    if m is None:
        raise Problem("error", f"a claim's relation is {RELATIONS}; got {relation!r}")
    return m


def holds(relation: str, a: Side, b: Side, by: str) -> tuple[bool, str]:
    """Whether ``a <relation> b`` holds, and the figures that decided it (medians with their
    10th–90th percentiles)."""
    m = check_relation(relation)
    c = comparison(a, b, by)
    figures = f"{a.describe()} {a.figure(by)} against {b.describe()} {b.figure(by)} ({fmt.speed_words(c)})"
    if relation in ("faster", "slower", "level"):
        return c.verdict == relation, figures
    if relation == "not slower":  # faster, or level by the noise rule: at least as fast
        return c.verdict != "slower", figures
    if m.group(1):
        return max(c.ratio, 1 / c.ratio) - 1 <= float(m.group(1)) / 100, figures
    if m.group(3):
        return c.verdict == "slower" and c.ratio < 1 - float(m.group(3)) / 100, figures
    return c.verdict != "faster" and c.ratio >= 1 - float(m.group(2)) / 100, figures


def one_of(a: Side, names: list[str]) -> tuple[bool, str]:
    """Whether the row ``a`` picks (``best``, say), and every row tied with it by the noise
    rule, is one of ``names``."""
    tied = a.view.leaders(a.case, a.among, slowest=PICKS[a.name]) if a.name in PICKS else [a.row()]
    shown = ", ".join(f"`{r.name}` {fmt.duration(r.time.median_ms)} [{fmt.spread(r.time)}]" for r in tied)
    return all(r.name in names for r in tied), f"{a.describe()}: {shown}" + (
        " (tied within the spread)" if len(tied) > 1 else "")


def same_output(ctx: Context, experiment, kernels, gpu) -> str:
    """Whether the kernels wrote bit-identical outputs in every case where all ran, by digest
    (the ``same_output`` macro)."""
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


# -- a claim's sentence, checked -----------------------------------------------------------------

def judged(ctx: Context, body: str, experiment, a, relation, b, case, cases, case_b, gpu, gpu_b, experiment_b,
           among, by) -> str:
    """The sentence ``body`` with its mark: a ✓ whose hover gives the figures, a ✗ and the figures
    where the data contradicts it, a ? where a GPU's results could not be checked (the ``claim``
    macro, ``macros.py``, states the contract)."""
    if by not in MEASURES:
        raise Problem("error", f"claim(): by is one of {MEASURES}; got {by!r}")
    check_relation(relation)
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
    if relation == "one of" or isinstance(a, str) and a in PICKS:
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
        if isinstance(a, str) and a in PICKS else _names(a)
    verb = {"faster": "faster than", "slower": "slower than", "level": "level with", "not slower": "not slower than",
            "one of": "one of"}.get(
        relation, re.sub(r"behind by (at most|more than)", r"behind, by \1", relation) + (" of" if "within" in relation else ""))
    statement = (f"on the {tables.short(view_a.gpu)}, {subject} {verb} {_names(b)}{' ' + other if other else ''}, "
                 f"at {', '.join(fmt.case(c) for c in where)}")
    checked, broken = [], []
    for c in where:
        for x, y in pairs:
            side = Side(view_a, x, c, among=among)
            ok, figures = (one_of(side, y) if relation == "one of"
                           else holds(relation, side, Side(view_b, y, case_b or c, among=among), by))
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
