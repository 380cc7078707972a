"""Plots drawn at site-build time from the stored rows, as inline SVG that reads in light and dark."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .. import metrics  # noqa: E402
from .results import View  # noqa: E402

# Mid-grey text and axes read on Material's white and slate backgrounds alike.
INK = "#888888"
STYLE = {
    "svg.fonttype": "none", "svg.hashsalt": "labnotebook", "font.size": 11,
    "text.color": INK, "axes.labelcolor": INK, "axes.edgecolor": INK,
    "xtick.color": INK, "ytick.color": INK, "axes.facecolor": "none", "figure.facecolor": "none",
    "savefig.transparent": True, "axes.grid": True, "grid.color": INK, "grid.alpha": 0.25,
    "legend.frameon": False,
}


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def bandwidth_sweep(view: View, names: list[str], size_param: str, title: str,
                    cases: list[str] | None = None) -> str:
    """GB/s against problem size, one line per kernel or baseline, the copy ceiling as a line."""
    record = view.shown
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        for name in names:
            rows = [r for r in view.rows() if r["name"] == name and r["status"] == "ok" and "time" in r
                    and size_param in r["params"] and (cases is None or r["case"] in cases)]
            rows.sort(key=lambda r: r["params"][size_param])
            xs = [r["params"][size_param] for r in rows]
            ys = [metrics.throughput(r)[0] for r in rows]
            ax.plot(xs, ys, marker="o", markersize=3.5, label=name)
        ceiling = record["ceiling"]["gbs"]
        ax.axhline(ceiling, color=INK, linestyle="--", linewidth=1)
        ax.annotate(f"device-to-device copy, {ceiling:,.0f} GB/s", (0.01, ceiling),
                    xycoords=("axes fraction", "data"), va="bottom", fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(f"{size_param} (elements)" if size_param == "n" else size_param)
        ax.set_ylabel("GB/s (bytes read + written)")
        ax.set_title(f"{title} — {view.gpu}", fontsize=11)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
        return _svg(fig)


def ceiling_chart(entries: list[tuple[str, dict[str, float | None]]], gpus: list[str]) -> str:
    """Horizontal bars: each kernel's % of its GPU's copy bandwidth, one bar per GPU."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(entries) * len(gpus) + 1.2))
        height = 0.8 / len(gpus)
        for i, gpu in enumerate(gpus):
            ys = [k + i * height for k in range(len(entries))]
            xs = [pcts.get(gpu) or 0 for _, pcts in entries]
            ax.barh(ys, xs, height=height, label=gpu)
        ax.axvline(100, color=INK, linestyle="--", linewidth=1)
        ax.set_yticks([k + 0.4 - height / 2 for k in range(len(entries))], [name for name, _ in entries])
        ax.invert_yaxis()
        ax.set_xlabel("% of the device-to-device copy bandwidth measured in the same run")
        ax.legend(loc="lower right")
        return _svg(fig)


def case_bars(view: View, name: str, cases: list[str], title: str) -> str:
    """One row at several cases that are not a numeric sweep (block shapes, say), as bars of GB/s."""
    rows = [view.row(name, c) for c in cases]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 0.34 * len(cases) + 1.3))
        ax.barh(range(len(cases)), [metrics.throughput(r)[0] for r in rows], color="tab:blue")
        ceiling = view.shown["ceiling"]["gbs"]
        ax.axvline(ceiling, color=INK, linestyle="--", linewidth=1)
        ax.annotate(f"copy, {ceiling:,.0f} GB/s", (ceiling, len(cases) - 0.5), ha="right", fontsize=9)
        ax.set_yticks(range(len(cases)), cases)
        ax.invert_yaxis()
        ax.set_xlabel("GB/s (bytes read + written)")
        ax.set_title(f"{title} — {view.gpu}", fontsize=11)
        return _svg(fig)


def rung_bars(view: View, case: str, names: list[str], reference: str) -> str:
    """One case, every rung as a bar of its throughput, each labelled with its % of ``reference``
    (a library), which is drawn as a dashed line."""
    rows = [view.row(n, case) for n in names]
    ref = metrics.throughput(view.row(reference, case))[0]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 0.36 * len(names) + 1.3))
        values = [metrics.throughput(r)[0] or 0 for r in rows]
        unit = metrics.throughput(rows[-1])[1] or ""
        ax.barh(range(len(names)), values, color=["tab:orange" if n == reference else "tab:blue" for n in names])
        for i, v in enumerate(values):
            ax.annotate(f"{100 * v / ref:.0f}%", (v, i), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=9)
        ax.axvline(ref, color=INK, linestyle="--", linewidth=1)
        ax.set_yticks(range(len(names)), names)
        ax.invert_yaxis()
        ax.set_xlabel(f"{unit} (labels: % of {reference})")
        ax.set_title(f"{case} — {view.gpu}", fontsize=11)
        return _svg(fig)


def phase_chart(view: View, case: str) -> str:
    """A whole program's phases (medians over fresh processes) as bars on a log scale, since
    they span microseconds to a tenth of a second."""
    rows = [r for r in view.rows("phase") if r["case"] == case and "time" in r]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 0.36 * len(rows) + 1.3))
        ms = [r["time"]["median_ms"] for r in rows]
        colors = ["tab:orange" if r["name"] == "kernel" else "tab:blue" for r in rows]
        ax.barh(range(len(rows)), ms, color=colors)
        for i, (r, v) in enumerate(zip(rows, ms)):
            ax.annotate(f"{v:.3g} ms", (v, i), xytext=(3, 0), textcoords="offset points", va="center", fontsize=9)
        ax.set_xscale("log")
        ax.set_yticks(range(len(rows)), [r["name"] for r in rows])
        ax.invert_yaxis()
        ax.set_xlabel(f"milliseconds, median of {rows[0]['fresh_processes']} fresh processes (log scale)")
        ax.set_title(f"Where the time goes: vector add of {case} floats — {view.gpu}", fontsize=11)
        return _svg(fig)
