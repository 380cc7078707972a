"""An experiment's timed run and what follows it: a worker with the experiment's time limit on a
GPU of its own; if it verified, its sanitizer pass; then its record, judged by the policy, is
written (or a failure record beside the last good one), and it waits for its profile."""

from __future__ import annotations

import time

from ..results.format import Record
from .ceilings import Ceilings
from .plan import Due, Options
from .profiling import Profiling
from .records import Recorder
from .sanitizing import Sanitizing
from .schedule import Job
from .workers import Workers, worker_result

DEFAULT_ESTIMATE_S = 60.0  # an experiment's first run, which has no last one to go by


class Runs:
    """The timed runs of one build, each followed by its passes."""

    def __init__(self, workers: Workers, recorder: Recorder, ceilings: Ceilings, sanitizing: Sanitizing,
                 profiling: Profiling, options: Options):
        self.workers, self.recorder, self.ceilings = workers, recorder, ceilings
        self.sanitizing, self.profiling, self.options = sanitizing, profiling, options

    def job(self, due: Due) -> Job:
        name, key, exp, previous = due.name, due.key, due.exp, due.previous
        t0 = 0.0
        estimate = (previous.wall_s or previous.phases_s.get("timed run")) if previous else None
        estimate = estimate or DEFAULT_ESTIMATE_S
        extra = []
        if self.options.kernels:
            extra += ["--kernel", *self.options.kernels]
        if self.options.cases:
            extra += ["--case", *self.options.cases]
        extra += self.options.part.worker_args

        def run(g: int):
            nonlocal t0
            t0 = time.perf_counter()
            return self.workers.run(name, g, extra + self.ceilings.worker_args(g), time_limit=exp.time_limit_s)

        def then(result):
            record, error = worker_result(result)
            if error:
                self.recorder.finish(name, None, key, None, error, t0, job.ran_on)
                return []
            self.recorder.judge(name, key, exp, record, previous)
            if record.status != "ok" or self.options.dry_run or not self.options.part.follow_ups:
                self.recorder.finish(name, record.gpu, key, record, None, t0, job.ran_on)
                return []
            return self.sanitizing.jobs(name, exp, record, estimate,
                                        then=lambda: self.sanitized(due, record, t0, job.ran_on))

        job = Job(f"{name}: timed run", run, timed=True, estimate_s=estimate, then=then)
        return job

    def sanitized(self, due: Due, record: Record, t0: float, gpu: int) -> list[Job]:
        """The run's record, its sanitizer report in (where the pass ran), judged and written;
        then, where it stands, queued for its profile."""
        error = self.recorder.judge_sanitizer(due.name, due.exp, record) if record.sanitizer is not None else None
        self.recorder.finish(due.name, record.gpu, due.key, record, error, t0, gpu)
        if error is None and self.options.profile:
            self.profiling.later(due.name, record, gpu, due.exp)
        return []
