"""Comparisons the data decides: which of two rows is faster, by how much, and whether a sentence
that says so still holds, by the noise rule (``labnotebook/results/noise.py``).

A *side* is one row: an experiment on a GPU, a row name (or ``"fastest"``/``"slowest"``, picked
among ``among``), and a case. ``comparison`` says how many times faster side a is than side b and
whether that stands outside the two rows' spreads; ``holds`` checks a relation between them, and
says which figures decided it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..results import metrics, noise
from . import fmt
from .views import Problem, View

# What "faster" compares. time: the medians (same work on both sides); pct_ceiling: the share of
# each run's copy bandwidth (different sizes, or different GPUs' ceilings).
MEASURES = ("time", "pct_ceiling")
# faster / slower: outside both spreads; level: inside them; within N%: medians within N% either
# way; behind by at most N%: not faster, and at least (100 - N)% of the other's speed.
RELATION = re.compile(r"faster|slower|level|one of|within (\d+(?:\.\d+)?)%|behind by at most (\d+(?:\.\d+)?)%")
RELATIONS = "'faster', 'slower', 'level', 'within N%', 'behind by at most N%' or 'one of'"


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
    if m.group(1):
        return max(c.ratio, 1 / c.ratio) - 1 <= float(m.group(1)) / 100, figures
    return c.verdict != "faster" and c.ratio >= 1 - float(m.group(2)) / 100, figures


def one_of(a: Side, names: list[str]) -> tuple[bool, str]:
    """Whether the row ``a`` picks (``best``, say), and every row tied with it by the noise
    rule, is one of ``names``."""
    tied = a.view.leaders(a.case, a.among, slowest=PICKS[a.name]) if a.name in PICKS else [a.row()]
    shown = ", ".join(f"`{r.name}` {fmt.duration(r.time.median_ms)} [{fmt.spread(r.time)}]" for r in tied)
    return all(r.name in names for r in tied), f"{a.describe()}: {shown}" + (
        " (tied within the spread)" if len(tied) > 1 else "")
