"""Run experiments on this machine's GPUs and freeze what they produce.

At the start, every kernel the runs load and every key their records carry, compiled on every core
(``precompile.py``). For each GPU, first its copy ceiling (``ceilings.py``); for each experiment,
one timed run (a worker process with the experiment's time limit, on a GPU of its own; on a node of
several GPUs a long one is split by cases into parts that run side by side, each a timed run on a
GPU of its own, and merged into one record: ``split.py``), then, if it verified, one untimed job
per compute-sanitizer tool (``runs.py``, ``sanitizing.py``). When an experiment's last job is back,
``policy`` judges it and its record, or a failure record beside the last good one, is written
(``format.py``). Then the Nsight Compute pass (``profiling.py``). The large pass (``plan.LARGE``)
is the timed run alone, at each experiment's cases of 2^31 elements and more, verified, not timed:
no ceiling, sanitizer or profile, into a record of its own. ``plan.py`` decides what runs,
``schedule.py`` where; each worker is its own process (``workers.py``, ``processes.py``), so a
crash, a hang or a sticky CUDA error ends one experiment and nothing else.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ..results.freshness import CurrentKeys, Stored
from ..results.machine import CACHE as CUBIN_CACHE
from ..results.store import CEILINGS, Store
from ..run.device import compute_capability_from_smi
from . import ncu
from .ceilings import Ceilings
from .plan import Due, Options, Standing, Unloadable, plan
from .precompile import Precompile
from .processes import Processes
from .profiling import Profiling
from .records import Recorder
from .report import Outcome
from .runs import Runs
from .sanitizer import sanitizer_path
from .sanitizing import Sanitizing
from .schedule import Job, Scheduler
from .workers import Workers


class Build:
    """One invocation of ``build_results.py``: the experiments to run and where their results go.
    Whoever stops the build kills its workers through ``processes`` (``Processes.stop``)."""

    def __init__(self, root: Path, store: Store, console: Console, options: Options):
        self.root, self.store, self.console, self.options = root, store, console, options
        self.keys = CurrentKeys(root)  # what each result is keyed on, read once, before anything runs
        self.processes = Processes()

    def run(self, gpu_name: str, selected: dict[str, Path]) -> tuple[list[Outcome], float]:
        """Build ``selected`` on this machine's GPUs of model ``gpu_name``: the outcomes, and
        the seconds it all took."""
        t0 = time.perf_counter()
        options = self.options
        sanitize = options.sanitize and sanitizer_path() is not None
        if options.sanitize and not sanitize:
            self.console.print("[yellow]compute-sanitizer not found: results will record no sanitizer outcome[/]")
        ncu_version = ncu.version() if options.profile and ncu.ncu_path() else None
        if options.profile and ncu_version is None:
            self.console.print("[yellow]Nsight Compute (ncu) not found: results will record the profile as skipped[/]")
        recorder = Recorder(self.store, self.console, self.keys, options, gpu_name)
        todo: list[Due] = []
        reprofile: list[Standing] = []
        for step in plan(options, self.keys, self.store, gpu_name, selected, ncu=ncu_version is not None):
            if isinstance(step, Due):
                todo.append(step)
            elif isinstance(step, Unloadable):
                recorder.finish(step.name, gpu_name, step.key, None, step.error, time.perf_counter())
            elif step.reprofile:  # the results stand; their profile is redone
                reprofile.append(step)
            else:
                recorder.note(Outcome(step.name, "unchanged", f"results from {step.record.provenance.date}"))
        # The ceilings are measured whenever anything is timed, and on their own when they are
        # stale; a dry run stores none, and the large pass times nothing.
        timing = options.part.timed and not options.dry_run
        ceilings_due = timing and Stored.read(self.store, CEILINGS, gpu_name, self.keys).state != "fresh"
        if todo or ceilings_due or reprofile:
            gpus = ", ".join(map(str, options.gpus))
            unchanged = sum(o.state == "unchanged" for o in recorder.outcomes)
            self.console.print(f"[bold]{gpu_name}[/] (GPU {gpus}){options.part.heading}: running {len(todo)} "
                               f"experiment(s), {unchanged} unchanged"
                               + (f", {len(reprofile)} to profile" if reprofile and not todo else ""))
            # The project's cubin cache (keyed on nvcc, flags, source and headers), kept between
            # builds: the large pass, run after the main one, compiles nothing again.
            cubin_cache = self.root / CUBIN_CACHE
            cubin_cache.mkdir(parents=True, exist_ok=True)
            workers = Workers(self.root, self.processes, cubin_cache, options.gpus, self.console)
            ceilings = timing and bool(todo or ceilings_due)
            if todo:
                workers.start_servers()
            # Every kernel the runs load and every key they are stamped with, compiled while the
            # servers import and the ceilings are measured; the timed runs wait for it.
            precompile = Precompile(self.root, self.keys, cubin_cache, todo,
                                    compute_capability_from_smi(options.gpus[0]), ceilings=ceilings)
            try:
                self.schedule(workers, recorder, todo, reprofile, precompile, ceilings=ceilings,
                              sanitize=sanitize, ncu_version=ncu_version)
            finally:
                workers.close()
        return recorder.outcomes, time.perf_counter() - t0

    def schedule(self, workers: Workers, recorder: Recorder, todo: list[Due], reprofile: list[Standing],
                 precompile: Precompile, ceilings: bool, sanitize: bool, ncu_version: str | None) -> None:
        """The ceilings (where ``ceilings``) and the runs with their follow-ups over the GPUs,
        then the profile pass."""
        options = self.options
        profiling = Profiling(workers, recorder, self.keys, self.console, options.gpus, ncu_version)
        for standing in reprofile:
            profiling.later(standing.name, standing.record)
        measured = Ceilings(workers, recorder, self.console, options.gpus)
        runs = Runs(workers, recorder, measured, Sanitizing(workers, sanitize), profiling, precompile, options,
                    self.console)
        jobs: list[Job] = [measured.job(g) for g in options.gpus] if ceilings else []
        events = lambda e: self.console.print(f"[dim]{escape(e)}[/]")
        Scheduler(options.gpus, options.shared_slots, on_event=events).run(jobs + runs.jobs(todo))
        if precompile.seconds:
            self.console.print(f"[dim]every kernel and key compiled in {precompile.seconds:.1f} s, at the start[/]")
        if profiling.waiting:
            Scheduler(options.gpus, options.shared_slots, on_event=events).run(profiling.jobs())
