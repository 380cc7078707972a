"""Comparisons the data decides: which of two rows is faster, by how much, and whether a sentence
that says so still holds.

A *side* is one row: an experiment on a GPU, a row name (or ``"fastest"``/``"slowest"``, picked
among ``among``), and a case. ``speed_ratio`` says how many times faster side a is than side b; ``Claim`` checks a
relation between them at every case it names, and says which figures break it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import metrics
from . import fmt
from .results import Problem, View

# What "faster" compares. time: the medians (same work on both sides); pct_ceiling: the share of
# each run's copy bandwidth (different sizes, or different GPUs' ceilings).
MEASURES = ("time", "pct_ceiling")
RELATION = re.compile(r"faster|slower|one of|within (\d+(?:\.\d+)?)%")


PICKS = {"fastest": False, "best": False, "slowest": True}  # "best" reads better in some sentences


@dataclass(frozen=True)
class Side:
    view: View
    name: str
    case: str
    with_copies: bool = False  # add the case's host<->device copies to the time
    among: list[str] | str = "kernel"  # what "fastest"/"slowest" choose from: names, or a kind

    def row(self):
        if self.name in PICKS:
            return self.view.pick(self.case, self.among, slowest=PICKS[self.name])
        return self.view.timed(self.name, self.case)

    def ms(self) -> float:
        ms = self.row().time.median_ms
        if self.with_copies:
            ms += sum(self.view.timed(t, self.case).time.median_ms for t in ("h2d", "d2h"))
        return ms

    def speed(self, by: str) -> float:
        """Larger is faster."""
        if by == "time":
            return 1 / self.ms()
        pct = metrics.pct_of_ceiling(self.row(), self.view.record)
        if pct is None:
            raise Problem("absent", f"{self.describe()} is not GPU memory traffic: it has no % of the copy "
                                    "bandwidth", self.view.experiment, self.view.gpu)
        return pct

    def figure(self, by: str) -> str:
        if by == "time":
            return fmt.duration(self.ms())
        return fmt.percent(self.speed(by)) + " of copy"

    def describe(self) -> str:
        name = self.row().name
        exp = f"{self.view.experiment}/" if self.view.experiment else ""
        return f"`{exp}{name}`{' with copies' if self.with_copies else ''} at {fmt.case(self.case)}"


def speed_ratio(a: Side, b: Side, by: str = "time") -> float:
    """How many times faster a is than b: above 1 when a is faster, below 1 when slower."""
    return a.speed(by) / b.speed(by)


def check_relation(relation: str) -> re.Match:
    m = RELATION.fullmatch(relation)
    if m is None:
        raise Problem("error", f"a claim's relation is 'faster', 'slower', 'within N%' or 'one of'; got {relation!r}")
    return m


def holds(relation: str, a: Side, b: Side, by: str) -> tuple[bool, str]:
    """Whether ``a <relation> b`` holds, and the figures that decided it."""
    m = check_relation(relation)
    r = speed_ratio(a, b, by)
    figures = f"{a.describe()} {a.figure(by)} against {b.describe()} {b.figure(by)} ({fmt.speed_words(r)})"
    # "faster" holds only where the page would say "faster", not "as fast as" (1.001×).
    if relation == "faster":
        return r > 1 and "faster" in fmt.speed_words(r), figures
    if relation == "slower":
        return r < 1 and "slower" in fmt.speed_words(r), figures
    return max(r, 1 / r) - 1 <= float(m.group(1)) / 100, figures


def one_of(a: Side, names: list[str]) -> tuple[bool, str]:
    """Whether the row ``a`` picks (``best``, say) is one of ``names``."""
    row = a.row()
    return row.name in names, f"{a.describe()}: `{row.name}`, {fmt.duration(row.time.median_ms)}"
