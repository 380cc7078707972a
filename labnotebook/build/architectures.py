"""``build_results.py --arch 7.5 8.6``: every experiment's kernels, run on this GPU as GPUs of
those architectures would run them, into ``results/architectures/`` (``results/architectures.py``).

Each experiment is a worker of its own (``--emulate X.Y``): its kernels' PTX for that
architecture, compiled by the driver for this GPU, at every edge case, verified, within that
architecture's shared memory a block; a kernel whose ``needs:`` line asks for more is
unavailable, with the reason, and the rest run. No timing, no baseline: nothing here is a GPU's
result. Exits 1 where any kernel failed.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..declare.discover import load
from ..errors import NotebookError
from ..results import architectures
from ..results.architectures import ArchitectureRun, EntryRun, Outcome
from ..results.machine import CACHE as CUBIN_CACHE
from ..run.device import compute_capability_from_smi, git_commit
from ..run.needs import BadNeeds, parsed
from .policy import judge
from .processes import Processes
from .workers import Workers

MARK = {"verified": "[green]✓[/]", "xfail": "[yellow]✗ as declared[/]", "unavailable": "[dim]–[/]", "failed": "[red]✗[/]"}


def capabilities(given: list[str], gpu: int) -> list[str]:
    """``given`` checked: each ``X.Y``, none newer than GPU ``gpu`` (whose driver compiles their PTX)."""
    real = compute_capability_from_smi(gpu)
    for cc in given:
        try:
            newer = real and parsed(cc) > real
        except BadNeeds:
            raise NotebookError(f"--arch takes compute capabilities such as 7.5 or 8.6; got {cc!r}") from None
        if newer:
            raise NotebookError(f"--arch {cc}: this GPU is {real[0]}.{real[1]}; it runs the PTX of its own "
                                "architecture or an older one")
    return list(dict.fromkeys(given))


def run(root: Path, console: Console, given: list[str], selected: dict[str, Path], gpu: int, name: str) -> int:
    """Run ``selected`` as each architecture of ``given`` on GPU ``gpu`` (of model ``name``); write
    and show each."""
    results = root / "results"
    ccs = capabilities(given, gpu)
    lasts = last_runs(results)
    check_nothing_dropped(results, [lasts[cc] for cc in ccs if cc in lasts], selected, name)
    processes = Processes()
    (root / CUBIN_CACHE).mkdir(parents=True, exist_ok=True)
    workers = Workers(root, processes, root / CUBIN_CACHE, [gpu], console)
    failed = False
    try:
        for cc in ccs:
            done = _run_one(workers, cc, selected, gpu, name, results, lasts.get(cc))
            console.print(table(done))
            console.print(f"wrote {architectures.path(results, cc).relative_to(root).as_posix()}")
            failed |= bool(done.failed())
    finally:
        workers.close()
        processes.stop()
    return 1 if failed else 0


def last_runs(results: Path) -> dict[str, ArchitectureRun]:
    """The runs on file, by capability; none where they cannot be read (each is then replaced whole)."""
    try:
        return {r.capability: r for r in architectures.read_all(results)}
    except NotebookError:
        return {}


def check_nothing_dropped(results: Path, lasts: list[ArchitectureRun], selected: dict[str, Path], name: str) -> None:
    """Refuse, before anything runs, a run that would lose records: a file keeps the experiments
    that ``selected`` leaves out only where it was written on the same GPU model (its records
    name one GPU), so on another model every experiment it holds must run again."""
    for last in lasts:
        left_out = sorted(set(last.experiments) - set(selected)) if last.gpu != name else []
        if left_out:
            raise NotebookError(
                f"{architectures.path(results, last.capability).name} was run on an {last.gpu}; a run on an {name} "
                f"replaces it whole, and --only leaves out {', '.join(left_out)}, whose records would be lost. "
                "Run every experiment here (no --only), or run these on an " + last.gpu)


def _run_one(workers: Workers, cc: str, selected: dict[str, Path], gpu: int, name: str,
             results: Path, last: ArchitectureRun | None) -> ArchitectureRun:
    """One architecture's run, over the ``last`` one's experiments (on the same GPU model) where
    ``selected`` leaves some out: each keeps the date and commit it ran at."""
    runs: dict[str, EntryRun] = {}
    for experiment, folder in selected.items():
        exp = load(folder)
        workers.console.print(escape(f"{experiment} as compute capability {cc}"))
        started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        record, error = workers.run(experiment, gpu, ["--emulate", cc], time_limit=exp.time_limit_s)
        if record is None or record.provenance is None:
            runs[experiment] = EntryRun(started, git_commit(workers.root), {
                k.name: Outcome("failed", 0, error or "no provenance") for k in exp.kernels})
            continue
        p = record.provenance
        runs[experiment] = EntryRun(p.date, p.git_commit, architectures.outcomes(judge(exp, record)))
    kept = {n: r for n, r in (last.experiments.items() if last and last.gpu == name else ()) if n not in runs}
    done = ArchitectureRun(cc, name, dict(sorted({**kept, **runs}.items())))
    architectures.write(results, done)
    return done


def table(run: ArchitectureRun) -> Table:
    t = Table(title=f"as compute capability {run.capability} ({run.arch}), on an {run.gpu}", title_justify="left")
    for column in ("experiment", "kernel", "", "cases", "why"):
        t.add_column(column, overflow="fold")
    for name, entry in run.experiments.items():
        for kernel, o in entry.kernels.items():
            t.add_row(name, kernel, MARK[o.status], str(o.cases) if o.status == "verified" else "", escape(o.why))
            name = ""
    return t
