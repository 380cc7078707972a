"""The roofline per GPU: its roofs, from the ceilings run on that GPU (and, for the tensor cores,
the library runs named), and its points, each kernel and GPU baseline that declares its
arithmetic intensity at the case it was profiled at; the chart (``plots.roofline``) and, under it,
every point as a table row."""

from __future__ import annotations

from ..results import metrics
from ..results.store import CEILINGS
from . import fmt, markers, plots, profile_tables, tables
from .context import Context
from .fmt import cell
from .views import Problem, run_command


def rooflines(ctx: Context, tensor=None) -> str:
    """Every GPU's roofline, as the ``roofline`` macro (``macros.py``) describes it."""
    charts = []
    for gpu in ctx.measured():
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
        charts.append(plots.figure(plots.roofline(gpu, copy, roofs, points)) + plots.undrawn(missing) + "\n\n"
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
            + tables.indent(body) + "\n")


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
            if row is None or row.on_cpu or not row.intensity and row.ok or row.unavailable:
                # not on the GPU, no arithmetic intensity declared, or a kernel its GPU's machine could
                # not run (its entry and the dashboard say why): not a roofline point, nor a problem
                continue
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
                                          metrics.ceiling_gbs(view.record, row)))
    return points, missing
