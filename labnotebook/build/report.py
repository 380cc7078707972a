"""What a build says on the console when it is done: each experiment's outcome, and the rows of
a run that writes nothing (``--dry-run`` and the filters)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..results import metrics
from ..results.format import Record
from ..results.rows import CHECKED, RunRow


@dataclass
class Outcome:
    name: str
    state: str  # ran / profiled (the profile alone) / unchanged / failed / dry run
    detail: str = ""
    seconds: float = 0.0
    gpu: int | None = None
    phases: dict[str, float] = field(default_factory=dict)  # where its seconds went (format.REFRESH_PHASES)


def print_rows(console: Console, record: Record) -> None:
    """A run's rows as a table (what ``--dry-run`` and the filters show instead of writing)."""
    table = Table("case", "kernel", "status", "median", "throughput", "% of copy", "worst / bound", "verified in",
                  title=f"{record.experiment} on {record.gpu} (GPU {devices(record)})")
    for r in record.rows:
        value, unit = metrics.throughput(r)
        pct = metrics.pct_of_ceiling(r, record)
        table.add_row(escape(r.case), escape(r.name), r.status if not r.error else f"{r.status}: {escape(r.error)}",
                      f"{r.time.median_ms:.4f} ms" if r.time else "", f"{value:,.1f} {unit}" if value else "",
                      f"{pct:.1f}%" if pct else "", f"{r.check.bound_ratio:.2g}" if isinstance(r, CHECKED) and r.check else "",
                      f"{r.verify_s:.2f} s" if isinstance(r, RunRow) and r.verify_s is not None else "")
    console.print(table)


def devices(record: Record) -> str:
    """The GPU that ran ``record``, or each that ran a part of it."""
    indices = [p.device_index for p in record.split] if record.split else [record.provenance.device_index]
    return ", ".join(map(str, indices))


def print_outcomes(console: Console, gpu: str, outcomes: list[Outcome], wall_s: float) -> None:
    table = Table("experiment", "GPU", "state", "detail", "seconds", "where they went",
                  title=f"build_results on {gpu}")
    style = {"ran": "green", "profiled": "green", "unchanged": "dim", "failed": "bold red", "dry run": "cyan"}
    for o in outcomes:
        biggest = sorted(o.phases.items(), key=lambda kv: -kv[1])[:3]
        table.add_row(o.name, "" if o.gpu is None else str(o.gpu), f"[{style[o.state]}]{o.state}[/]",
                      escape(o.detail), f"{o.seconds:.1f}", " · ".join(f"{p} {s:.1f}" for p, s in biggest))
    console.print(table)
    counts = {s: sum(o.state == s for o in outcomes) for s in ("ran", "profiled", "unchanged", "failed", "dry run")}
    ran = [o for o in outcomes if o.state != "unchanged"]
    console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n or s not in ("dry run", "profiled"))
                  + f" in {wall_s:.1f} s" + (f"; sum of wall times {sum(o.seconds for o in ran):.1f} s" if ran else ""))
