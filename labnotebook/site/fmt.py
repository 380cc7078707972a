"""How numbers look on the page: three significant figures, units chosen for the size."""

from __future__ import annotations

import math


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


def spread(row: dict) -> str:
    """The 10th to 90th percentile of the repetitions, in the median's unit."""
    t = row["time"]
    unit = duration(t["median_ms"]).split()[-1]
    scale = {"s": 1e-3, "ms": 1.0, "µs": 1e3}[unit]
    return f"{sig(t['q10_ms'] * scale)}–{sig(t['q90_ms'] * scale)} {unit}"


def rate(value: float, unit: str) -> str:
    return f"{sig(value)} {unit}" if value < 1000 else f"{value:,.0f} {unit}"


def percent(p: float) -> str:
    return f"{p:.1f}%" if p < 100 else f"{p:.0f}%"


def times(x: float) -> str:
    return f"{sig(x)}×"


def error(check: dict) -> str:
    """A verified row's worst error: 'exact', or the largest relative error."""
    if check["max_abs_err"] == 0:
        return "exact"
    # Both: where results cancel towards zero the relative error is large and the absolute small.
    return f"rel {check['max_rel_err']:.1e}<br><small>abs {check['max_abs_err']:.1e}</small>"
