"""The copy ceiling: each GPU measures its own (the pseudo-experiment ``ceilings``) before any
timed run, the timed runs on a GPU compare their throughput with it, and one record per GPU
model keeps them all."""

from __future__ import annotations

import dataclasses
import json

from rich.console import Console
from rich.markup import escape

from ..results.format import Record
from ..results.store import CEILINGS
from .records import Recorder
from .schedule import Job
from .workers import Workers, worker_result


class Ceilings:
    """Each GPU's ceiling, as it is measured; written once every GPU of ``gpus`` has one. A dry
    run measures none: its worker measures the copy bandwidth it compares with itself."""

    def __init__(self, workers: Workers, recorder: Recorder, console: Console, gpus: list[int]):
        self.workers, self.recorder, self.console, self.gpus = workers, recorder, console, gpus
        self.records: dict[int, Record] = {}

    def worker_args(self, gpu: int) -> list[str]:
        """What a run on ``gpu`` is told of its ceiling: nothing where none was measured."""
        ceiling = self.records.get(gpu)
        return ["--ceiling", json.dumps(dataclasses.asdict(ceiling.ceiling))] if ceiling else []

    def job(self, gpu: int) -> Job:
        def run(g: int):
            # Afresh, not forked: it needs neither torch nor the engine's run, and it goes while
            # the GPU's fork server is still importing them.
            return self.workers.run(CEILINGS, g, [], time_limit=300, forked=False)

        def then(result):
            record, error = worker_result(result)
            if error:
                self.console.print(f"[red]GPU {gpu}: ceiling measurement failed:[/] {escape(error)}")
                return []
            self.records[gpu] = record
            self.console.print(f"GPU {gpu}: copy ceiling {record.ceiling.gbs:,.0f} GB/s")
            if len(self.records) == len(self.gpus):
                self.store()
            return []
        return Job("copy ceiling", run, timed=True, estimate_s=5, gpu=gpu, then=then)

    def store(self) -> None:
        """One file per GPU model: the first GPU's record, with every GPU's measurement as a row."""
        records = [self.records[g] for g in sorted(self.records)]
        first = records[0]
        first.rows = [r for rec in records for r in rec.rows]
        self.recorder.write_ceilings(first)

