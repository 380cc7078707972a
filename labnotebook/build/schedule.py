"""Jobs over a node's GPUs: never two timed runs on one GPU, and nothing beside a timed run.

A *timed* job (an experiment's run, or a part of one split by cases over several GPUs, a
ceiling measurement) has its GPU to itself, since anything beside it would disturb its timings. An *untimed* job (a compute-sanitizer pass, which only
verifies) may share a GPU with other untimed jobs, up to ``shared_slots`` at once. A job may be
pinned to one GPU (each GPU measures its own ceiling) and may add follow-up jobs when it
finishes (an experiment's sanitizer passes and its profile, once its run has succeeded).

Follow-ups go before any job not yet started: an experiment is finished, and its results
written, before another one starts, so a build that is stopped keeps every experiment it got
through. Among the jobs that may go, timed ones go first, longest first (the estimate is the
last run's duration), so a node finishes about when its longest experiment does; untimed jobs
fill GPUs that have no timed job left to take.

Jobs run in threads that each wait on a worker process; this module never touches a GPU and is
tested on the CPU with stand-in jobs.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(eq=False)
class Job:
    label: str
    run: Callable[[int], Any]  # given the GPU index, does the work (blocking) and returns a result
    timed: bool = True
    estimate_s: float = 0.0
    gpu: int | None = None  # pinned to this GPU; None: any
    # Called in the scheduler's thread with the result (or the exception), returns follow-ups.
    then: Callable[[Any], list["Job"]] | None = None
    # Filled in as it runs.
    ran_on: int | None = field(default=None, init=False)
    started: float | None = field(default=None, init=False)  # time.perf_counter() when it started
    ended: float | None = field(default=None, init=False)  # and when it ended, before ``then``
    follow_up: bool = field(default=False, init=False)  # added by another job's ``then``


class Scheduler:
    def __init__(self, gpus: list[int], shared_slots: int = 4, on_event: Callable[[str], None] = lambda s: None):
        if not gpus:
            raise ValueError("no GPUs to schedule on")
        self.gpus, self.shared_slots, self.on_event = list(gpus), max(1, shared_slots), on_event
        self.running: dict[int, list[Job]] = {g: [] for g in self.gpus}
        self.pending: list[Job] = []
        self.done: queue.Queue = queue.Queue()

    def run(self, jobs: list[Job]) -> None:
        """Run ``jobs`` and every follow-up they add; return when all have finished."""
        self.pending = list(jobs)
        for job in self.pending:
            if job.gpu is not None and job.gpu not in self.running:
                raise ValueError(f"{job.label} is pinned to GPU {job.gpu}, which is not in {self.gpus}")
        while self.pending or any(self.running.values()):
            self._dispatch()
            job, result = self.done.get()
            self.running[job.ran_on].remove(job)
            self.on_event(f"GPU {job.ran_on}: done  {job.label} ({job.ended - job.started:.1f} s)")
            if job.then is not None:
                for follow_up in job.then(result):
                    follow_up.follow_up = True
                    self.pending.append(follow_up)

    def _dispatch(self) -> None:
        for g in self.gpus:
            while (job := self._next_for(g)) is not None:
                self._start(job, g)

    def _next_for(self, g: int) -> Job | None:
        here = self.running[g]
        mine = [j for j in self.pending if j.gpu in (None, g)]
        mine = [j for j in mine if j.follow_up] or mine  # finish what was started first
        timed = [j for j in mine if j.timed]
        # A timed job waits for a free GPU; while timed work is waiting anywhere, this GPU
        # takes no new untimed job, so that it drains for the timed one.
        if timed:
            if here:
                return None
            return max(timed, key=lambda j: (j.gpu is not None, j.estimate_s))
        untimed = [j for j in mine if not j.timed]
        if untimed and len(here) < self.shared_slots and not any(j.timed for j in here):
            return max(untimed, key=lambda j: j.estimate_s)
        return None

    def _start(self, job: Job, g: int) -> None:
        self.pending.remove(job)
        job.ran_on = g
        self.running[g].append(job)
        self.on_event(f"GPU {g}: start {job.label}")

        def work():
            job.started = time.perf_counter()
            try:
                result = job.run(g)
            except BaseException as e:  # reported to `then`, never lost in a thread
                result = e
            job.ended = time.perf_counter()
            self.done.put((job, result))

        threading.Thread(target=work, name=job.label, daemon=True).start()
