"""Judging a run by the failure policy and writing what it measured: its record, or a failure
record beside the last good one, keyed on the files it was measured from; and each
experiment's outcome, noted for the report at the end."""

from __future__ import annotations

import time

from rich.console import Console
from rich.markup import escape

from ..declare.experiment import Experiment
from ..results import machine
from ..results.format import Record
from ..results.freshness import CurrentKeys
from ..results.keys import Key
from ..results.store import CEILINGS, Store
from . import policy
from .plan import Options
from .report import Outcome, print_rows
from .sanitizer import TOOLS


class Recorder:
    """The records of one build on ``gpu_name``, and its outcomes in the order they came."""

    def __init__(self, store: Store, console: Console, keys: CurrentKeys, options: Options, gpu_name: str):
        self.store, self.console, self.keys, self.options, self.gpu_name = store, console, keys, options, gpu_name
        self.outcomes: list[Outcome] = []

    def note(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)

    def judge(self, name: str, key: Key, exp: Experiment, record: Record, previous: Record | None) -> None:
        """Stamp a run's record and judge it: its own problems, then any result it would lose."""
        self.stamp(record, key, name)
        policy.judge(exp, record)
        lost = [] if self.options.force else policy.lost(previous, record)
        if lost:
            record.status, record.problems = "failed", [f"{p}; keeping those results (--force replaces them)"
                                                        for p in lost]

    def judge_sanitizer(self, name: str, exp: Experiment, record: Record) -> str | None:
        """Fail ``record`` by its sanitizer report where the policy says so, and return the
        error; or say that the tools found it clean."""
        findings = policy.sanitizer_findings(exp, record.sanitizer)
        if findings:
            record.problems = findings
            record.status = "failed"
            return "compute-sanitizer: " + findings[0]
        self.console.print(f"{name}: compute-sanitizer {', '.join(TOOLS)} clean")
        return None

    def finish(self, name: str, gpu_name: str | None, key: Key | None, record: Record | None, error: str | None,
               t0: float, gpu: int | None = None) -> None:
        """Write the record, or a failure record beside the last good one; note the outcome."""
        seconds = time.perf_counter() - t0
        if record is not None and record.status != "ok" and error is None:
            error = policy.summary_reason(record.problems)
        if self.options.dry_run:
            if record is not None:
                print_rows(self.console, record)
            self.note(Outcome(name, "failed" if error else "dry run", error or "nothing written" + split_over(record),
                              seconds, gpu, record.phases_s if record else {}))
            return
        if error is None:
            record.wall_s = round(seconds, 2)
            self.store.write(record)
            self.note(Outcome(name, "ran", f"{len(record.rows)} results" + split_over(record), seconds, gpu,
                              record.phases_s))
            return
        failure = record or Record(experiment=name, title=name, gpu=gpu_name or self.gpu_name,
                                   provenance=None, rows=[], status="failed", part=self.options.part.name)
        failure.status, failure.error, failure.wall_s = "failed", error, round(seconds, 2)
        self.stamp(failure, key)
        failure.failed_at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
        self.store.write_failure(failure)
        self.console.print(f"[bold red]✗ {name}:[/] {escape(error)}")
        self.note(Outcome(name, "failed", error, seconds, gpu, failure.phases_s))

    def stamp(self, record: Record, key: Key | None, name: str | None = None) -> None:
        """Key ``record`` on the files it was measured from (read before the run started) and,
        for the record of a run (``name``), on the machine code its CUDA kernels compile to here
        (None where this machine has no nvcc to say)."""
        record.source_hash = key.digest if key else None
        record.sources = dict(key.files) if key else {}
        cc = record.provenance.compute_capability if record.provenance else None
        if name and key and key.cubins and cc:
            code = self.keys.machine(name, machine.arch_of(cc))
            record.machine = None if isinstance(code, str) else code

    def write_ceilings(self, record: Record) -> None:
        """The copy ceilings' record: keyed like a run's, as the pseudo-experiment ``ceilings``."""
        self.stamp(record, self.keys[CEILINGS], CEILINGS)
        self.store.write(record)

    def profiled(self, name: str, record: Record, status: str, seconds: float, gpu: int) -> None:
        """Write ``record`` again, now with its profile; its outcome counts the profile's seconds."""
        self.store.write(record)
        outcome = next((o for o in self.outcomes if o.name == name and o.state == "ran"), None)
        if outcome is None:
            self.note(Outcome(name, "profiled", f"profile {status}", seconds, gpu, {"profile": seconds}))
        else:
            outcome.seconds += seconds
            outcome.phases = record.phases_s


def split_over(record: Record | None) -> str:
    """What an outcome says of a run split over several GPUs: each part's GPU and seconds."""
    if record is None or not record.split:
        return ""
    return "; split: " + ", ".join(f"part {i + 1} on GPU {p.device_index} ({p.wall_s:.1f} s)"
                                   for i, p in enumerate(record.split))
