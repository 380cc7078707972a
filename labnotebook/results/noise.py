"""The noise rule: when two timed rows may be called faster, slower or level, in one place.

Every timed row records the median of its repetitions and their 10th and 90th percentiles (its
run-to-run spread). Two rows run a few percent apart from one run to the next, and a power-capped
GPU's clock moves with what ran before, so a difference of medians smaller than that spread is
a coin toss, not a direction. The rule is conservative and needs nothing beyond the quantiles
already stored:

- A is **faster** than B only when A's slowest tenth is still quicker than B's quickest tenth
  (A's 90th percentile below B's 10th); **slower** the other way round;
- otherwise the two are **level**: "as fast as", with the ratio of medians shown as such.
- A row is the **fastest** of a set only with that margin over every other row; a row whose
  spread overlaps the fastest's is tied with it, and is named with it.

Times that add up (a kernel with its copies) add their spreads as bounds: the sum's 10th
percentile is at least the sum of the 10th percentiles, its 90th at most the sum of the 90ths.
Rates compared across GPUs (a share of each run's own copy bandwidth) scale each side's times by
its run's constant; the spreads scale with them.

Bootstrapping the ratio of medians would be sharper, but needs every repetition stored: a
refresh of every experiment on both GPUs to record them. The quantiles decide soundly today.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .format import Timing

Verdict = Literal["faster", "slower", "level"]

# The rule as a reader is told it (the site's "How to read a comparison" and every hover).
RULE = ("a row is faster than another only when its 90th-percentile time is below the other's "
        "10th percentile; otherwise the two are level, within their run-to-run spread")


@dataclass(frozen=True)
class Spread:
    """A cost (a time, or a time scaled to a rate's reciprocal: smaller is better) with its
    run-to-run spread: the median and the 10th and 90th percentiles of the repetitions."""

    median: float
    lo: float
    hi: float

    @classmethod
    def of(cls, t: Timing) -> "Spread":
        return cls(t.median_ms, t.q10_ms, t.q90_ms)

    def __add__(self, other: "Spread") -> "Spread":
        return Spread(self.median + other.median, self.lo + other.lo, self.hi + other.hi)

    def scaled(self, k: float) -> "Spread":
        return Spread(self.median * k, self.lo * k, self.hi * k)


@dataclass(frozen=True)
class Comparison:
    """A against B: how many times faster A is by medians (above 1 when A is quicker), and
    what the rule lets a sentence say about it."""

    ratio: float
    verdict: Verdict

    @property
    def level(self) -> bool:
        return self.verdict == "level"


def compare(a: Spread, b: Spread) -> Comparison:
    """A against B by the rule (costs: smaller is better)."""
    ratio = b.median / a.median
    if a.hi < b.lo:
        return Comparison(ratio, "faster")
    if a.lo > b.hi:
        return Comparison(ratio, "slower")
    return Comparison(ratio, "level")


def compare_times(a: Timing, b: Timing) -> Comparison:
    """Two timed rows, A against B, by the rule."""
    return compare(Spread.of(a), Spread.of(b))


def leaders(costs: dict[str, Spread], slowest: bool = False) -> list[str]:
    """The names that may be called fastest (or slowest): the first by median, and every other
    whose spread overlaps it, in order of median. One name means a margin over the runner-up."""
    order = sorted(costs, key=lambda n: costs[n].median, reverse=slowest)
    return [n for n in order if n == order[0] or compare(costs[order[0]], costs[n]).level]
