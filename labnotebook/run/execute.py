"""Run one experiment on the GPU: for every case, make inputs and the reference; then for every
kernel and baseline alike, poison the outputs, run once, verify every element, and only then
time it (``runner.Runner``, ``measure.measure``).

This runs inside a worker process (see ``worker.py``), so a crash or a sticky CUDA error here
takes down this experiment alone. Judging the rows (expected failures, what fails a run) is
``labnotebook.build.policy``'s job, not this module's.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

from ..declare.experiment import Case, Experiment
from ..results.format import Ceiling, Provenance, Record, Row
from .device import describe
from .runner import Runner


def run_experiment(exp: Experiment, folder: Path, root: Path, ceiling: Ceiling | None,
                   log: Callable[[str], None] = print, measure_ceiling: bool = True, cases: list[Case] | None = None,
                   edge_cases: list[Case] | None = None, large_cases: list[Case] | None = None,
                   with_baselines: bool = True, only: set[str] | None = None,
                   only_at: dict[str, set[str]] | None = None,
                   cubin_cache: Path | None = None, gpu_checks: bool = True,
                   emulate: tuple[int, int] | None = None) -> Record:
    """Run ``exp`` and return its results record, unjudged (``labnotebook.build.policy`` decides what
    the rows mean for the run). Without a ``ceiling`` (the build's, measured on this GPU) the
    copy bandwidth is measured here, unless ``measure_ceiling`` is False (a run that only
    verifies). ``cases``, ``edge_cases`` and ``large_cases`` default to the declaration's;
    ``only`` names the kernels and baselines to run (all when None), and ``only_at`` those of
    them to run at a case, by its name (all at a case it does not name); ``gpu_checks`` False keeps
    every check on the CPU (under a sanitizer, whose report must hold our kernels alone);
    ``emulate`` runs the kernels as a GPU of that compute capability would (``Runner``)."""
    runner = Runner(exp, folder, root, log, cubin_cache, with_baselines=with_baselines, only=only,
                    gpu_checks=gpu_checks, emulate=emulate)
    try:
        with tempfile.TemporaryDirectory(prefix="notebook-cubin-", dir=cubin_cache) as build_dir:
            runner.compile(Path(build_dir))  # kept for the phase program's fresh processes
            if ceiling is None and measure_ceiling:
                with runner.clock("timing"):
                    ceiling, _ = runner.timer.copy_bandwidth()
            plan = ([(c, True, "") for c in (exp.cases if cases is None else cases)]
                    + [(c, False, "edge cases") for c in (exp.edge_cases if edge_cases is None else edge_cases)]
                    + [(c, False, "large cases") for c in (exp.large_cases if large_cases is None else large_cases)])
            rows: list[Row] = []
            for i, (case, is_timed, phase) in enumerate(plan):
                log(f"[{i + 1:>3}/{len(plan)}] {case.name}")
                rows += runner.run_case(case, is_timed, phase, (only_at or {}).get(case.name))
        info = describe(runner.cuda, runner.device)
    finally:
        try:
            runner.close()
        except runner.cuda.Error:
            pass
    return Record(experiment=exp.name, title=exp.title, gpu=info["gpu"], provenance=Provenance(**info),
                  ceiling=ceiling, kernels=runner.kernel_info, rows=rows, status="ok",
                  phases_s=runner.clock.rounded())
