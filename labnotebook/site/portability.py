"""Which kernels run on which architecture: the ``architectures`` macro, from the runs of
``build_results.py --arch`` (``results/architectures/``), as a reader with an older GPU asks it."""

from __future__ import annotations

from collections import Counter

from ..results import architectures as arch_runs
from ..results.architectures import ArchitectureRun
from . import fmt
from .context import macro
from .fmt import cell
from .tables import table
from .views import Problem

# What a reader may have of each architecture.
FAMILIES = {"7.5": "Turing: T4, RTX 20", "8.0": "Ampere: A100", "8.6": "Ampere: RTX 30, A10",
            "8.7": "Ampere: Jetson Orin", "8.9": "Ada: RTX 40, L4", "9.0": "Hopper: H100, H200",
            "10.0": "Blackwell: B200", "12.0": "Blackwell: RTX 50"}
SHOWN = {"verified": "verified", "xfail": "fail\u00a0as\u00a0declared", "unavailable": "unavailable", "failed": "failed"}


@macro("block")
def architectures(ctx):
    """Every published entry's kernels as each older architecture runs them (``build_results.py
    --arch``): a sentence per run, then an entry per row and an architecture per column."""
    runs = runs_of(ctx)
    return summary(runs) + "\n\n" + matrix(ctx, runs) + "\n"


@macro("inline")
def shared_memory_walls(ctx):
    """The kernels an older architecture cannot run, at some cases or all, for want of shared
    memory a block, each with the architectures: the evidence for what the page says of them.
    None left makes it a Problem: the sentence it backs would no longer hold."""
    walls: dict[str, list[str]] = {}
    for run in runs_of(ctx):
        for experiment in ctx.published:
            entry = run.experiments.get(experiment)
            for kernel, o in (entry.kernels.items() if entry else ()):
                if "bytes of shared memory a block" in o.why:
                    where = o.why.split(":")[0] if o.status == "verified" else "every case it takes"
                    walls.setdefault(f"`{experiment}/{kernel}` ({where})", []).append(run.capability)
    if not walls:
        raise Problem("contradicted", "no kernel is unavailable on an older architecture for want of shared memory")
    return "; ".join(f"{k} as {' and '.join(ccs)}" for k, ccs in walls.items())


def runs_of(ctx) -> list[ArchitectureRun]:
    runs = arch_runs.read_all(ctx.results.root / "results")
    if not runs:
        raise Problem("missing", "no architecture run on record: on a GPU, `python build_results.py --arch 7.5 8.0 "
                                 "8.6 8.9` writes results/architectures/")
    return runs


def summary(runs: list[ArchitectureRun]) -> str:
    """One sentence per run: what it ran on, when and at which commits, and what came of it,
    counted from the file."""
    out = []
    for run in runs:
        entries = run.experiments.values()
        counts = Counter(o.status for entry in entries for o in entry.kernels.values())
        said = ", ".join(f"{counts[s]} {SHOWN[s]}" for s in SHOWN if counts[s])
        dates = sorted({e.date[:10] for e in entries})
        commits = sorted({e.commit[:10] for e in entries if e.commit})
        when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
        at = f" at commit{'s' if len(commits) > 1 else ''} " + ", ".join(f"`{c}`" for c in commits) if commits else ""
        out.append(f"- **{run.capability}** ({FAMILIES.get(run.capability, 'compute capability ' + run.capability)}): "
                   f"run on an {cell(run.gpu)} on {when}{at}; {said}.")
    return "\n".join(out)


def matrix(ctx, runs: list[ArchitectureRun]) -> str:
    """An entry per row, an architecture per column: how many of its kernels verified there, and
    how many it could not run, each reason in the cell's hover and in the list under the table;
    and how many kernels the entry declares now that the run never saw (added since)."""
    head = ["entry", *(f"{r.capability} ({FAMILIES.get(r.capability, '')})" for r in runs)]
    lines, reasons = [], []
    for experiment in ctx.published:
        declared = [k.name for k in ctx.results.declaration(experiment).kernels]
        row = [f"[{experiment}]({ctx.to(experiment + '.md')})"]
        for run in runs:
            entry = run.experiments.get(experiment)
            if entry is None:
                row.append("– not run")
                continue
            kernels = entry.kernels
            parts = []
            for status in SHOWN:
                names = [k for k, o in kernels.items() if o.status == status]
                if not names:
                    continue
                why = "; ".join(f"{k}: {kernels[k].why}" for k in names if kernels[k].why)
                text = f"{len(names)}\u00a0{SHOWN[status]}"  # a count and its word on one line
                parts.append(f'<abbr title="{cell(why)}">{text}</abbr>' if why else text)
                if status in ("unavailable", "failed"):
                    reasons += [f"`{experiment}/{k}` as {run.capability}: {fmt.cell(kernels[k].why)}" for k in names]
            unseen = [k for k in declared if k not in kernels]
            if unseen:
                parts.append(f'<abbr title="{cell(", ".join(unseen))}">{len(unseen)}\u00a0not\u00a0run\u00a0yet</abbr>')
                reasons += [f"`{experiment}/{k}` as {run.capability}: added after this run; "
                            f"`build_results.py --arch {run.capability}` runs it" for k in unseen]
            row.append(" · ".join(parts))
        lines.append(row)
    listed = "\n".join(f"    - {r}" for r in reasons)
    details = f'\n\n??? note "What did not run as each architecture, and why"\n\n{listed}\n' if reasons else ""
    return table(head, lines) + details

