"""Charts drawn at site-build time from the stored rows, as inline SVG that reads in light and dark.

Titles and legends say only what is plotted: the cases a chart draws decide what its title may
claim about them (a shared size is named only if every plotted case has it), and a legend lists
only the rows and GPUs that have a point on the chart.
"""

from __future__ import annotations

import functools
import io
import math
from collections import OrderedDict
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from ..results import metrics
from ..results.format import Row
from . import fmt, tables
from .fmt import cell
from .views import Problem, View
from .style import INK, MIN_FONT, STYLE
from .tables import Note, note_failure

# Charts scale down to their column and never scroll: drawn this wide (constrained layout keeps
# every label inside), a chart's 10 pt text is 10.8 px in a 390 px phone's 358 px column, and
# about 10 px on a 360 px phone.
WIDTH = 4.5  # inches


_DRAWN: OrderedDict[str, str] = OrderedDict()  # this process's charts, by what they were drawn from
DRAWN_KEPT = 128


def drawn_once(draw):
    """``draw``, run once per process for the same arguments: plain values (numbers, strings,
    and lists, tuples, dicts and dataclasses of them), whose repr says all they hold. A chart
    takes a quarter of a second or more to draw, and ``mkdocs serve`` draws every chart again at
    each edit, most of them from the same rows; the latest ``DRAWN_KEPT`` are kept."""
    @functools.wraps(draw)
    def once(*args):
        key = f"{draw.__qualname__}{args!r}"
        if key in _DRAWN:
            _DRAWN.move_to_end(key)
        else:
            _DRAWN[key] = draw(*args)
            while len(_DRAWN) > DRAWN_KEPT:
                _DRAWN.popitem(last=False)
        return _DRAWN[key]
    return once


def _svg(fig) -> str:
    """The figure as inline SVG; the page's CSS shrinks it to its column (never past its drawn size)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _plain_log_ticks(axis, base: int) -> None:
    """Log-axis labels as text (2²⁰, 1,000) rather than mathtext, which reads the same and is
    the slowest part of drawing a chart."""
    def label(v, _):
        if base == 2:
            return fmt.superscripts(f"2^{round(math.log2(v))}") if v > 0 else ""
        return f"{v:,.0f}" if v >= 1 else f"{v:g}"
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_formatter(NullFormatter())


def figure(svg: str) -> str:
    return f'<figure class="nb-plot">\n{svg}\n</figure>'


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{fmt.sig(value)} {unit}"
    return f"{nbytes} B"


def _shared_size(rows: list[Row]) -> str:
    """A title's line of its own, '128 MiB read + written per case', where every plotted row moves
    the same bytes; else nothing."""
    sizes = {r.bytes for r in rows}
    return f"\n{_size(sizes.pop())} read + written per case" if len(sizes) == 1 and None not in sizes else ""


def _timed(view: View, name: str, cases: list[str], note: Note) -> list[Row]:
    """``name``'s verified, timed rows at ``cases``; failures among them are noted."""
    out = []
    for r in view.rows():
        if r.name == name and r.case in cases:
            note_failure(view, r, note)
            if r.ok and r.time:
                out.append(r)
    return out


def bandwidth_sweep(view: View, names: list[str], size_param: str, cases: list[str] | None,
                    note: Note) -> str:
    """Throughput against problem size, one line per row name, the copy ceiling as a line."""
    cases = cases or [c for c in view.cases() if any(size_param in r.params for r in view.rows() if r.case == c)]
    lines = {}
    for name in names:
        rows = sorted((r for r in _timed(view, name, cases, note) if size_param in r.params),
                      key=lambda r: r.params[size_param])
        if rows:
            lines[name] = rows
        else:
            note(Problem("absent", f"{view.experiment} on {view.gpu}: no timed {name!r} to plot against "
                                   f"{size_param}", view.experiment, view.gpu))
    if not lines:
        raise Problem("absent", f"{view.experiment} on {view.gpu}: nothing to plot against {size_param}",
                      view.experiment, view.gpu)
    plotted = [r for rows in lines.values() for r in rows]
    unit = metrics.throughput(plotted[0])[1]
    points = tuple((name, tuple((r.params[size_param], metrics.throughput(r)[0]) for r in rows))
                   for name, rows in lines.items())
    return _sweep(points, unit, metrics.ceiling_gbs(view.record) if unit == "GB/s" else None, size_param,
                  f"{unit} by {size_param}{_shared_size(plotted)}\n{view.gpu}")


@drawn_once
def _sweep(lines: tuple, unit: str, ceiling: float | None, size_param: str, title: str) -> str:
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(layout="constrained", figsize=(WIDTH, 3.6 + 0.22 * math.ceil(len(lines) / 2)))
        for name, points in lines:
            ax.plot([x for x, _ in points], [y for _, y in points], marker="o", markersize=3.5, label=name)
        if ceiling:
            ax.axhline(ceiling, color=INK, linestyle="--", linewidth=1)
            ax.annotate(f"copy, {ceiling:,.0f} GB/s", (0.01, ceiling), xycoords=("axes fraction", "data"),
                        va="bottom", fontsize=MIN_FONT)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        _plain_log_ticks(ax.xaxis, 2)
        _plain_log_ticks(ax.yaxis, 10)
        ax.set_xlabel(f"{size_param} (elements)" if size_param == "n" else size_param)
        ax.set_ylabel(f"{unit} (bytes read + written)" if unit == "GB/s" else unit)
        ax.set_title(title, wrap=True)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=min(2, len(lines)))
        return _svg(fig)


def case_bars(view: View, name: str, cases: list[str]) -> str:
    """One row at several cases that are not a numeric sweep (block shapes, say), as bars."""
    rows = [view.timed(name, c) for c in cases]
    unit = metrics.throughput(rows[0])[1]
    return _case_bars(tuple(fmt.case(c) for c in cases), tuple(metrics.throughput(r)[0] for r in rows), unit,
                      metrics.ceiling_gbs(view.record) if unit == "GB/s" else None,
                      f"{name}: {unit} at each case{_shared_size(rows)}\n{view.gpu}")


@drawn_once
def _case_bars(labels: tuple, values: tuple, unit: str, ceiling: float | None, title: str) -> str:
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(layout="constrained", figsize=(WIDTH, 0.34 * len(labels) + 1.4))
        ax.barh(range(len(labels)), values, color="tab:blue")
        if ceiling:
            ax.axvline(ceiling, color=INK, linestyle="--", linewidth=1)
            ax.annotate(f"copy, {ceiling:,.0f} GB/s", (ceiling, len(labels) - 0.5), ha="right", fontsize=MIN_FONT)
        ax.set_yticks(range(len(labels)), labels)
        ax.invert_yaxis()
        ax.set_xlabel(f"{unit} (bytes read + written)" if unit == "GB/s" else unit)
        ax.set_title(title, wrap=True)
        return _svg(fig)


def rung_bars(view: View, case: str, names: list[str], reference: str) -> str:
    """One case, every rung as a bar of its throughput, each labelled with its % of ``reference``
    (a library), which is drawn as a dashed line."""
    rows = [view.timed(n, case) for n in names]
    ref = metrics.throughput(view.timed(reference, case))[0]
    unit = metrics.throughput(rows[0])[1]
    return _rung_bars(tuple(names), tuple(metrics.throughput(r)[0] for r in rows), reference, ref, unit,
                      f"{unit} at {fmt.case(case)}\n{view.gpu}")


@drawn_once
def _rung_bars(names: tuple, values: tuple, reference: str, ref: float, unit: str, title: str) -> str:
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(layout="constrained", figsize=(WIDTH, 0.36 * len(names) + 1.4))
        ax.barh(range(len(names)), values, color=["tab:orange" if n == reference else "tab:blue" for n in names])
        for i, v in enumerate(values):
            ax.annotate(f"{100 * v / ref:.0f}%", (v, i), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=MIN_FONT)
        ax.axvline(ref, color=INK, linestyle="--", linewidth=1)
        ax.set_yticks(range(len(names)), names)
        ax.invert_yaxis()
        ax.margins(x=0.12)
        ax.set_xlabel(f"{unit} (labels: % of {reference})")
        ax.set_title(title, wrap=True)
        return _svg(fig)


def phase_chart(view: View, case: str) -> str:
    """A whole program's phases (medians over fresh processes) as bars on a log scale, since
    they span microseconds to a tenth of a second."""
    rows = view.phases(case)
    return _phase_chart(tuple(r.name for r in rows), tuple(r.time.median_ms for r in rows), rows[0].fresh_processes,
                        f"One whole program at {fmt.case(case)}, phase by phase\n{view.gpu}")


@drawn_once
def _phase_chart(names: tuple, ms: tuple, processes: int, title: str) -> str:
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(layout="constrained", figsize=(WIDTH, 0.36 * len(names) + 1.4))
        ax.barh(range(len(names)), ms, color=["tab:orange" if n == "kernel" else "tab:blue" for n in names])
        for i, v in enumerate(ms):
            ax.annotate(fmt.duration(v), (v, i), xytext=(3, 0), textcoords="offset points", va="center",
                        fontsize=MIN_FONT)
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis, 10)
        ax.margins(x=0.25)
        ax.set_yticks(range(len(names)), names)
        ax.invert_yaxis()
        ax.set_xlabel(f"ms, median of {processes} fresh processes (log scale)")
        ax.set_title(title, wrap=True)
        return _svg(fig)


@drawn_once
def ceiling_chart(entries: list[tuple[str, dict[str, float | None]]], gpus: list[str]) -> str:
    """Horizontal bars: each row's % of its GPU's copy bandwidth, one bar per GPU that has one.
    Each row's name stands above its bars, not beside them, so the bars have the whole width of
    a phone; the scale is at the top and the bottom of the long chart."""
    shown = [g for g in gpus if any(pcts.get(g) for _, pcts in entries)]
    if not shown:
        raise Problem("absent", "no headline row has a bandwidth on any GPU")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(layout="constrained", figsize=(WIDTH, 0.42 * len(entries) + 1.2))
        height = 0.5 / len(shown)  # a row is one unit: its name, then its bars, then a gap
        for i, gpu in enumerate(shown):
            ax.barh([k + 0.4 + (i + 0.5) * height for k in range(len(entries))],
                    [pcts.get(gpu) or 0 for _, pcts in entries], height=height, label=gpu)
        for k, (name, _) in enumerate(entries):
            ax.annotate(name, (0, k + 0.35), xytext=(2, 0), textcoords="offset points", va="bottom",
                        fontsize=MIN_FONT)
        ax.axvline(100, color=INK, linestyle="--", linewidth=1)
        ax.set_yticks([])
        ax.set_ylim(len(entries), -1.5)  # room at the top for the legend
        ax.tick_params(axis="x", labeltop=True)
        ax.xaxis.set_label_position("top")
        ax.set_xlabel("% of the copy bandwidth measured in the same run")
        ax.legend(loc="upper left", ncol=1)  # clear of the 100% line at the right
        return _svg(fig)


def undrawn(missing: list[tuple[str, str, str]]) -> str:
    """Under a chart, what it could not draw, per GPU, and why (the table or page says more)."""
    by_gpu: dict[str, list[str]] = {}
    for what, gpu, why in missing:
        by_gpu.setdefault(gpu, []).append(f"{cell(what)} ({cell(why)})")
    return "".join(f'\n\n<p class="nb-problem">⚠ Not drawn for the {tables.short(g)}: {", ".join(items)}.</p>\n'
                   for g, items in by_gpu.items())


def _fitted(label: str, width: int = 28) -> str:
    """A legend label broken before its figure where it would not fit the roofline's width."""
    return label if len(label) <= width else label.replace(": ", ":\n", 1)


@dataclass
class RoofPoint:
    """One kernel or baseline on a roofline: flops per byte of its least traffic, and TFLOP/s."""

    experiment: str
    name: str
    kind: str  # "kernel" or "baseline"
    case: str
    intensity: float
    tflops: float
    limiter: str = "–"  # by its profile, in words
    copy_gbs: float | None = None  # the copy bandwidth measured in the point's own run

    def roof(self, copy_gbs: float, roofs: dict[str, float]) -> tuple[str, float]:
        """The roof above this point and its height here: the memory roof (the copy bandwidth
        of its own run, as its entry's "% of copy", else ``copy_gbs``, times the intensity) or,
        where that is higher, the lowest compute roof the point is under (a tensor-core kernel
        above the FP32 roof is held to the tensor-core one)."""
        above = [kv for kv in sorted(roofs.items(), key=lambda kv: kv[1]) if kv[1] >= self.tflops]
        name, tflops = above[0] if above else max(roofs.items(), key=lambda kv: kv[1])
        memory = (self.copy_gbs or copy_gbs) * self.intensity / 1e3
        return ("copy", memory) if memory < tflops else (name, tflops)


@drawn_once
def roofline(gpu: str, copy_gbs: float, roofs: dict[str, float], points: list[RoofPoint]) -> str:
    """Log-log roofline: the memory roof (the copy bandwidth, a slope), each compute roof
    (``roofs``: label -> TFLOP/s, flat), and a point per kernel, coloured by entry. The roofs,
    then the entries in two columns, are named below the chart, where no line or point can run
    into them."""
    if not points:
        raise Problem("absent", f"no kernel on {gpu} declares its arithmetic intensity and has a timed row")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(layout="constrained", figsize=(WIDTH, 5.6))
        top = max(roofs.values()) if roofs else max(p.tflops for p in points) * 2
        lo = min(min(p.intensity for p in points), 0.05) / 2
        hi = max(max(p.intensity for p in points), top * 1e3 / copy_gbs) * 2
        lines = ax.plot([lo, top * 1e3 / copy_gbs], [lo * copy_gbs / 1e3, top], color=INK, linewidth=1.5,
                        label=f"copy: {fmt.rate(copy_gbs, 'GB/s')}")
        for (name, tflops), style in zip(sorted(roofs.items(), key=lambda kv: kv[1]), ("--", ":", "-.")):
            ridge = tflops * 1e3 / copy_gbs
            lines += ax.plot([ridge, hi], [tflops, tflops], color=INK, linestyle=style, linewidth=1.5,
                             label=_fitted(f"{name}: {fmt.sig(tflops)} TFLOP/s"))
        entries = list(dict.fromkeys(p.experiment for p in points))
        colours = plt.get_cmap("tab10")
        marks = []
        for i, entry in enumerate(entries):
            mine = [p for p in points if p.experiment == entry]
            shape = "osD^"[i // 10 % 4]  # ten colours, then the next shape
            for kind, marker in (("kernel", shape), ("baseline", "x")):
                sel = [p for p in mine if p.kind == kind]
                if sel:
                    first = kind == "kernel" or not any(p.kind == "kernel" for p in mine)
                    dots = ax.scatter([p.intensity for p in sel], [p.tflops for p in sel], marker=marker, s=28,
                                      color=colours(i % 10), label=entry if first else None, zorder=3)
                    marks += [dots] if first else []
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(top=top * 3)
        _plain_log_ticks(ax.xaxis, 10)
        _plain_log_ticks(ax.yaxis, 10)
        ax.set_xlabel("flops per byte of the least traffic")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"Roofline of the {gpu.removeprefix('NVIDIA ')}\n"
                     f"{len(points)} kernels and baselines (● ours, × libraries)")
        ax.legend(handles=lines, loc="upper left", bbox_to_anchor=(0, -0.13), handlelength=2.2)
        fig.legend(handles=marks, loc="outside lower center", ncol=2, columnspacing=1.2)
        return _svg(fig)
