"""An experiment's timed run and what follows it: once the build's compiles are done
(``precompile.py``), a worker with the experiment's time limit on a GPU of its own (on a node of
several GPUs, a long run is split by cases into parts, each a worker on a GPU of its own, and
their records merged: ``split.py``); if it verified, its sanitizer pass; then its record, judged
by the policy, is written (or a failure record beside the last good one), and it waits for its
profile."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from ..results.format import Record
from . import split
from .ceilings import Ceilings
from .plan import Due, Options
from .precompile import Precompile
from .profiling import Profiling
from .records import Recorder
from .sanitizing import Sanitizing
from .schedule import Job
from .workers import Workers, worker_result

DEFAULT_ESTIMATE_S = 60.0  # an experiment's first run, which has no last one to go by


def estimate_s(previous: Record | None) -> float:
    """What an experiment's refresh should take: its last one's wall time, where it has one."""
    estimate = (previous.wall_s or previous.phases_s.get("timed run")) if previous else None
    return estimate or DEFAULT_ESTIMATE_S


class Runs:
    """The timed runs of one build, each followed by its passes."""

    def __init__(self, workers: Workers, recorder: Recorder, ceilings: Ceilings, sanitizing: Sanitizing,
                 profiling: Profiling, precompile: Precompile, options: Options, console: Console):
        self.workers, self.recorder, self.ceilings = workers, recorder, ceilings
        self.sanitizing, self.profiling, self.precompile = sanitizing, profiling, precompile
        self.options, self.console = options, console

    def jobs(self, todo: list[Due]) -> list[Job]:
        """The timed runs of ``todo``, each one job or, where ``split.count`` says so, one per part."""
        estimates = [estimate_s(due.previous) for due in todo]
        # Split the main pass alone, unfiltered: --kernel and --case print one run as asked.
        options = self.options
        gpus = len(options.gpus) if options.part.timed and not (options.kernels or options.cases) else 1
        jobs: list[Job] = []
        for due, estimate in zip(todo, estimates):
            parts = split.count(estimate, sum(estimates), gpus, len(due.exp.cases))
            jobs += self.timed(due, estimate, split.divide(due.exp, due.previous, parts) if parts > 1 else None)
        return jobs

    def timed(self, due: Due, estimate: float, parts: list[list[str]] | None) -> list[Job]:
        """The timed run of ``due``: one job, or one per part where ``parts`` gives each its cases,
        all at the run's ``estimate`` so that they start together where GPUs are free. Once the
        last is back, the run (its parts' records merged) goes on to its passes."""
        name = due.name
        extra = []
        if self.options.kernels:
            extra += ["--kernel", *self.options.kernels]
        if self.options.cases:
            extra += ["--case", *self.options.cases]
        extra += self.options.part.worker_args
        if parts:
            listing = "; ".join(f"part {i + 1}: {', '.join(cases)}" for i, cases in enumerate(parts))
            self.console.print(escape(f"{name}: split into {len(parts)} parts by cases, each on a GPU of its own: "
                                      f"{listing}"))
        results: dict[int, tuple[Record | None, str | None]] = {}

        def job(i: int, cases: list[str] | None) -> Job:
            args = extra + (["--case", *cases] if cases else [])

            def run(g: int):
                waited = round(self.precompile.wait(), 2)  # nothing timed runs beside the build's compiles
                record, error = self.workers.run(name, g, args + self.ceilings.worker_args(g),
                                                 time_limit=due.exp.time_limit_s,
                                                 label=f"{name} {i + 1}/{len(parts)}" if parts else None)
                if record is not None and waited:  # the run's own time, counted where it went
                    record.phases_s["compile"] = round(record.phases_s.get("compile", 0.0) + waited, 2)
                    record.wall_s = round(record.wall_s + waited, 2)
                return record, error

            def then(result):
                results[i] = worker_result(result)
                return self.ran(due, estimate, parts, jobs, results) if len(results) == len(jobs) else []
            label = f"{name}: timed run" + (f", part {i + 1} of {len(parts)}" if parts else "")
            return Job(label, run, timed=True, estimate_s=estimate, then=then)

        jobs = [job(i, cases) for i, cases in enumerate(parts or [None])]
        return jobs

    def ran(self, due: Due, estimate: float, parts: list[list[str]] | None, jobs: list[Job],
            results: dict[int, tuple[Record | None, str | None]]) -> list[Job]:
        """Every part of ``due``'s run is back (``results`` by part): a part that failed fails the
        run; else the run's record is judged and, where it stands, goes on to its passes."""
        name, key = due.name, due.key
        # Its parts' wall times end to end: the GPU-seconds it cost (a whole run's, its own wall time).
        t0 = max(job.ended for job in jobs) - sum(job.ended - job.started for job in jobs)
        gpu = jobs[0].ran_on
        failed = [(i, error) for i, (_, error) in sorted(results.items()) if error]
        if failed:
            i, error = failed[0]
            if parts:
                more = f" (and {len(failed) - 1} more part(s))" if len(failed) > 1 else ""
                error = f"part {i + 1} of {len(parts)}, on GPU {jobs[i].ran_on}{more}: {error}"
            self.recorder.finish(name, None, key, None, error, t0, gpu)
            return []
        record = split.merge(due.exp, [(cases, results[i][0]) for i, cases in enumerate(parts)]) if parts \
            else results[0][0]
        self.recorder.judge(name, key, due.exp, record, due.previous)
        if record.status != "ok" or self.options.dry_run or not self.options.part.follow_ups:
            self.recorder.finish(name, record.gpu, key, record, None, t0, gpu)
            return []
        return self.sanitizing.jobs(name, due.exp, record, estimate,
                                    then=lambda: self.sanitized(due, record, t0, gpu), previous=due.previous)

    def sanitized(self, due: Due, record: Record, t0: float, gpu: int) -> list[Job]:
        """The run's record, its sanitizer report in (where the pass ran), judged and written;
        then, where it stands, queued for its profile."""
        error = self.recorder.judge_sanitizer(due.name, due.exp, record) if record.sanitizer is not None else None
        self.recorder.finish(due.name, record.gpu, due.key, record, error, t0, gpu)
        if error is None and self.options.profile:
            self.profiling.later(due.name, record, due.exp)
        return []
