"""How numbers and names look on the page: three significant figures, units chosen for the size,
ratios as words, powers of two as superscripts."""

from __future__ import annotations

import html
import math
import re

from ..results.noise import Comparison
from ..results.format import Check, Timing

SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant figures, with thousands separators, no exponent."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return f"{x:,.{decimals}f}"


def duration(ms: float) -> str:
    if ms >= 1000:
        return f"{sig(ms / 1000)} s"
    if ms >= 1:
        return f"{sig(ms)} ms"
    return f"{sig(ms * 1000)} µs"


def spread(t: Timing) -> str:
    """The 10th to 90th percentile of the repetitions, in the median's unit."""
    unit = duration(t.median_ms).split()[-1]
    scale = {"s": 1e-3, "ms": 1.0, "µs": 1e3}[unit]
    return f"{sig(t.q10_ms * scale)}–{sig(t.q90_ms * scale)} {unit}"


def rate(value: float, unit: str) -> str:
    return f"{sig(value)} {unit}" if value < 1000 else f"{value:,.0f} {unit}"


def percent(p: float) -> str:
    return f"{p:.1f}%" if p < 100 else f"{p:.0f}%"


def times(x: float) -> str:
    return f"{sig(x)}×"


def speed_words(c: Comparison, than: str = "") -> str:
    """A comparison as words, by the noise rule (``labnotebook/results/noise.py``), never a ratio below
    1: '1.25× faster than X', '1.25× slower than X', or, where the spreads overlap, 'as fast as
    X (1.01×, within the spread)': a tie is said as one, with the ratio of medians beside it. A
    difference outside tight spreads that a ratio would round to 1.00× is said in percent: '0.43%
    slower than X'."""
    ratio = c.ratio if c.ratio >= 1 else 1 / c.ratio
    shown = times(ratio) if times(ratio) != times(1.0) or c.level else f"{(ratio - 1) * 100:.2g}%"
    if c.level:
        apart = "" if shown == times(1.0) else f"{shown}, "
        words = f"as fast as {than}" if than else "level"
        return f"{words} ({apart}within the spread)"
    words = f"{shown} {c.verdict}"
    return f"{words} than {than}" if than else words


def compared(c: Comparison, than: str, a: str, b: str) -> str:
    """``speed_words`` marked with the rows it compares (``experiment|gpu|case|name``, names of
    a sum joined by ``+``), so that a test of the built site can hold every comparison it
    renders to the noise rule, reading the results files on its own."""
    return (f'<span class="nb-cmp" data-a="{cell(a)}" data-b="{cell(b)}" data-verdict="{c.verdict}">'
            f"{speed_words(c, than)}</span>")


def rung_order(name: str) -> tuple:
    """Rungs by their number (2 before 10), then other names alphabetically: a results file keeps
    its kernels sorted as strings (12_pipelined before 1_naive)."""
    head = name.split("_")[0]
    return (0, int(head), name) if head.isdigit() else (1, 0, name)


def superscripts(text: str) -> str:
    """Powers written ``2^28`` or ``2^{28}`` as ``2²⁸``: for titles, navigation and table cells,
    where KaTeX does not run."""
    return re.sub(r"\^\{?(-?\d+)\}?", lambda m: m.group(1).translate(SUPERSCRIPTS), text)


def case(name: str) -> str:
    """A case's display name (``2^28`` -> ``2²⁸``)."""
    return superscripts(name)


MARKDOWN = str.maketrans({"|": "&#124;", "`": "&#96;", "*": "&#42;", "_": "&#95;", "[": "&#91;", "\n": " "})


def cell(text: object) -> str:
    """Escape anything captured from a program before it goes into a table cell or an attribute:
    HTML, and the characters Markdown would act on (a backtick would end an attribute early)."""
    return html.escape(str(text)).translate(MARKDOWN)


def bound(ratio: float) -> str:
    """A verified row's worst error as a share of its allowed bound."""
    if ratio == 0:
        return "exact"
    if not math.isfinite(ratio):
        return "∞ of bound"
    if ratio < 1e-3:
        return "<0.1% of bound"
    return f"{sig(100 * ratio, 2)}% of bound"


def tolerance(check: Check) -> str:
    """The bound each element was held to, as the verifier applies it."""
    parts = [f"atol {check.atol:.1e}"] if check.atol else []
    if check.rtol:
        parts.append(f"rtol {check.rtol:.1e} × |reference|")
    return " + ".join(parts) or "exact"


def check_detail(check: Check) -> str:
    """Everything about a comparison, for a hover: the raw errors, the tolerance, the count."""
    return (f"max abs error {check.max_abs_err:.2e}; max rel error {check.max_rel_err:.2e}; "
            f"tolerance {tolerance(check)}; {check.mismatches:,} of {check.elements:,} elements outside it")


def error(check: Check) -> str:
    """A verified row's error cell: how close it came to failing (its worst error over its bound),
    with the raw errors and the tolerance on hover. Rows from format 1 that could not recover
    the ratio show the raw errors themselves."""
    if check.bound_ratio is not None:
        shown = bound(check.bound_ratio)
    elif check.max_abs_err == 0:
        shown = "exact"
    else:
        shown = f"abs {check.max_abs_err:.1e}, rel {check.max_rel_err:.1e}"
    return f'<abbr title="{cell(check_detail(check))}">{shown}</abbr>'
