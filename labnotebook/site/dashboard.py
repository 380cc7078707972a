"""The results dashboard: every entry's headline figures on every GPU, and how each run went.

Entries come from the declarations (``snippets/*/experiment.py``), so an entry whose results are
missing, stale, failed or unreadable on a GPU still has its rows, with a marker in each cell
where a number would be.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..results import metrics, noise
from ..declare.experiment import Baseline, Experiment
from . import fmt, markers, profile_tables
from .context import Context, mark, marker
from .fmt import cell
from .tables import ref, refresh_time, short, table
from .views import Problem


@dataclass
class Line:
    """One row of the dashboard: a kernel or baseline of an entry at its headline case."""

    experiment: str
    name: str
    label: str
    case: str
    cells: dict[str, tuple[str, str]]  # gpu -> (throughput cell, comparison cell)
    pcts: dict[str, float | None]  # gpu -> % of copy, for the chart (None: not drawn)
    limiter: str = ""  # what limits it on the notebook's GPU, by its profile
    undrawn: dict[str, str] = field(default_factory=dict)  # gpu -> why it has no trustworthy number there


def _label(exp: Experiment, name: str) -> str:
    base = next((b for b in exp.baselines if b.name == name), None)
    return f"{name} ({'CPU' if base.device == 'cpu' else 'GPU'})" if isinstance(base, Baseline) else f"`{name}`"


def _timed_at(exp: Experiment, name: str, case: str) -> bool:
    """Whether the declaration times ``name`` at ``case`` (a slow rung may leave a case out)."""
    runnable = next(r for r in [*exp.kernels, *exp.baselines] if r.name == name)
    return runnable.timed_cases is None or case in runnable.timed_cases


def _cell(ctx: Context, experiment: str, gpu: str, name: str, case: str,
          baseline: str) -> tuple[str, str, float | None, str | None]:
    """The throughput cell, the comparison cell, the % of copy the chart draws (None where the
    number cannot be trusted) and, then, why."""
    view = ctx.view(experiment, gpu, note=False)
    stale = view.problem() if view.record is not None else None
    try:
        row = view.timed(name, case)
    except Problem as p:
        declined = view.record and view.record.row(name, case)
        if p.kind == "skipped":  # the kernel declares it cannot run this case, or this machine lacks what it needs
            said = "unavailable" if declined.unavailable else "not supported"
            return f'<abbr title="{cell(declined.error or "")}">– {said}</abbr>', "", None, None
        return marker(ctx, p), "", None, markers.LOOKS[p.kind][2]
    value, unit = metrics.throughput(row)
    pct = metrics.pct_of_ceiling(row, view.record)
    figure = fmt.rate(value, unit) + (f" ({fmt.percent(pct)})" if pct else "") if value else fmt.duration(row.time.median_ms)
    versus = "–"
    if name != baseline:
        try:
            base = view.timed(baseline, case)
            versus = fmt.compared(noise.compare_times(row.time, base.time), f"`{baseline}`",
                                  ref(view, row), ref(view, base))
        except Problem as p:
            versus = marker(ctx, p)
    if stale:
        return mark(ctx, stale, figure), versus, None, markers.LOOKS[stale.kind][2]
    return figure, versus, pct, None


def lines(ctx: Context, gpus: list[str] | None = None) -> list[Line]:
    """Every declared kernel and baseline of every entry at its headline case, on every GPU shown
    (or of ``gpus``); what limits it on the reference GPU, where that is among them."""
    gpus = gpus or ctx.shown
    out = []
    for experiment in ctx.published:
        try:
            exp = ctx.results.declaration(experiment)
            if exp.headline is None:
                raise Problem("absent", f"{experiment} declares no headline: add headline=Headline(case, baseline) "
                                        "to its Experiment", experiment)
        except Problem as p:
            out.append(Line(experiment, "", marker(ctx, p), "", {}, {}))
            continue
        case, baseline = exp.headline.case, exp.headline.baseline
        for name in exp.runnable_names():
            if not _timed_at(exp, name, case):
                continue
            cells, pcts, undrawn = {}, {}, {}
            for gpu in gpus:
                figure, versus, pcts[gpu], why = _cell(ctx, experiment, gpu, name, case, baseline)
                cells[gpu] = (figure, versus)
                if why:
                    undrawn[gpu] = why
            limiter = _limiter(ctx, experiment, exp, name, case) if ctx.gpu in gpus else ""
            out.append(Line(experiment, name, _label(exp, name), case, cells, pcts, limiter, undrawn))
    return out


def _limiter(ctx: Context, experiment: str, exp: Experiment, name: str, case: str) -> str:
    """What limits ``name`` by its profile; a kernel that cannot take the headline case was
    profiled at a case of its own, which the cell names."""
    base = next((b for b in exp.baselines if b.name == name), None)
    if base is not None and base.device == "cpu":
        return "–"
    view = ctx.view(experiment, ctx.gpu, note=False)
    if view.record is None:
        return ""  # the throughput cell already carries the marker
    try:
        profile = profile_tables.profile_of(view, name)
    except Problem as p:
        return marker(ctx, p)
    elsewhere = f" (at {fmt.case(profile.case)})" if profile.case != case else ""
    return profile_tables.limiter(profile.main) + elsewhere


def dashboard_table(ctx: Context, rows: list[Line], gpus: list[str] | None = None) -> str:
    """A row per line. Its first column, pinned on a phone while the table scrolls, names the row
    and its entry; each GPU's figures follow it (of ``gpus``, every one shown where None), so the
    key figure is in view without scrolling; then, where the reference GPU is among them, what
    limits the row there."""
    gpus = gpus or ctx.shown
    limiter = ctx.gpu in gpus
    head = ["kernel or baseline · entry"]
    for g in gpus:
        head += [f"{short(g)}: throughput (% of copy)", f"{short(g)}: against the entry's baseline"]
    head += ["case"] + ([f"limiter on the {short(ctx.gpu)} (Nsight Compute)"] if limiter else [])
    lines = []
    for line in rows:
        entry = f"[{line.experiment}]({ctx.to(line.experiment + '.md')})"
        cells = [f"{line.label} · {entry}" if line.name else f"{entry} {line.label}"]
        for g in gpus:
            cells += list(line.cells.get(g, ("", "")))
        lines.append(cells + [cell(fmt.case(line.case))] + ([line.limiter] if limiter else []))
    return table(head, lines)


def execution_summary(ctx: Context, gpus: list[str] | None = None) -> str:
    """Like sphinx-gallery's computation times: each experiment's last run on each GPU (of
    ``gpus``; every one shown where None)."""
    head = ["experiment", "GPU", "date", "commit", "refresh", "state", "rows", "compute-sanitizer"]
    lines = []
    for experiment in ctx.published:
        for g in gpus or ctx.shown:
            v = ctx.view(experiment, g, note=False)
            problem = v.problem()
            state = v.state if problem is None else marker(ctx, problem)
            record = v.record
            link = f"[{experiment}]({ctx.to(experiment + '.md')})"
            if record is None:
                lines.append([link, cell(g), "–", "–", "–", state, "–", "–"])
                continue
            count = {s: sum(r.status == s for r in record.rows) for s in ("ok", "xfail", "failed", "skipped")}
            shown = ", ".join(f"{n} {s}" for s, n in count.items() if n)
            san = record.sanitizer
            san_text = ("not run" if not san else
                        "clean" if all(e.errors == 0 for t in san.values() for e in t.values()) else "findings")
            date = record.failed_at or (record.provenance.date if record.provenance else "")
            p = record.provenance
            commit = f"`{p.git_commit[:10]}`" if p and p.git_commit else "–"
            run_time = refresh_time(record) or "–"
            lines.append([link, cell(g), f"{date[:16].replace('T', ' ')} UTC", commit, run_time, state, shown,
                          san_text])
    return table(head, lines)


def refresh_cost(ctx: Context) -> str:
    """Where each GPU's refresh spent its wall time: per experiment, ``Record.wall_s`` split
    into its phases (``format.REFRESH_PHASES``), and the sum over the GPU's results files."""
    from ..results.format import REFRESH_PHASES
    from ..results.store import CEILINGS

    out = []
    for g in ctx.shown:
        stored = {name: ctx.view(name, g, note=False).record for name in [CEILINGS, *ctx.published]}
        records = [(n, r) for n, r in stored.items() if r is not None and r.wall_s is not None]
        if not records:
            out.append(f"**{cell(g)}**: no results file records its refresh time yet (format 5 and later do).\n")
            continue
        phases = [p for p in REFRESH_PHASES if any(p in r.phases_s for _, r in records)]
        lines = [[n if n == CEILINGS else f"[{n}]({ctx.to(n + '.md')})", f"**{fmt.sig(r.wall_s, 3)}**",
                  *[fmt.sig(r.phases_s[p], 2) if p in r.phases_s else "–" for p in phases]] for n, r in records]
        total = sum(r.wall_s for _, r in records)
        lines.append(["**sum**", f"**{fmt.sig(total, 3)}**",
                      *[fmt.sig(sum(r.phases_s.get(p, 0.0) for _, r in records), 3) for p in phases]])
        untimed = [n for n in ctx.published if stored[n] is not None and stored[n].wall_s is None]
        absent = [n for n in ctx.published if stored[n] is None]
        note = "".join(f" Not counted ({why}): {', '.join(names)}." for why, names in
                       (("no refresh time on record", untimed), ("no results", absent)) if names)
        split = [f"{n} (GPUs {', '.join(str(p.device_index) for p in r.split)})" for n, r in records if r.split]
        if split:
            note += (f" Split by cases over several GPUs of a node, each part timed on a GPU of its own, "
                     f"with the parts' wall times added up: {', '.join(split)}.")
        out.append(f"**{cell(g)}**: the sum of the results files' wall times is {fmt.sig(total, 3)} s "
                   f"({fmt.sig(total / 60, 2)} minutes).{note}{large_pass_cost(ctx, g)}\n\n"
                   + table(["experiment", "wall s", *phases], lines))
    return "\n\n".join(out) + "\n"


def large_pass_cost(ctx: Context, gpu: str) -> str:
    """A sentence on what the large pass (run apart, ``--large``) cost on ``gpu``, or ""."""
    views = [ctx.view(name, gpu, note=False) for name in ctx.published]
    records = [(v.experiment, v.large.record) for v in views if v.large is not None]
    timed = [(n, r) for n, r in records if r is not None and r.part == "large" and r.wall_s is not None]
    if not timed:
        return ""
    each = ", ".join(f"{n} {fmt.sig(r.wall_s, 2)} s" for n, r in timed)
    return (f" The cases of {fmt.superscripts('2^31')} elements and more run in a pass of their own "
            f"(`python build_results.py --large`), not counted above: {fmt.sig(sum(r.wall_s for _, r in timed), 3)} s "
            f"more ({each}).")


def results_provenance(ctx: Context) -> str:
    """Per GPU, the dates and commits of the runs the site's published numbers come from."""
    lines = []
    for g in ctx.shown:
        records = [ctx.view(e, g, note=False).record for e in ctx.published]
        records = [r for r in records if r is not None and r.provenance]
        commits = sorted({r.provenance.git_commit[:10] for r in records if r.provenance.git_commit})
        dates = sorted(r.provenance.date[:10] for r in records)
        if not records:
            lines.append(f"- **{cell(g)}**: no results yet.")
            continue
        span = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        lines.append(f"- **{cell(g)}**: {len(records)} of {len(ctx.published)} entries, measured "
                     f"{span} at commit{'s' if len(commits) > 1 else ''} "
                     + ", ".join(f"`{c}`" for c in commits) + ".")
    return "\n".join(lines) + "\n"
