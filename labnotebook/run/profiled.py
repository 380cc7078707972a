"""The worker's side of the profile pass: each kernel and GPU baseline launched once at its
profile case (``Experiment.profile_case``), for Nsight Compute to measure (``labnotebook.profile`` runs ncu and reads it).

The worker runs under ``ncu --profile-from-start off``. For each kernel or baseline: a warm-up
launch with the profiler off (JIT compilation, autotuning and lazy initialisation stay out of
the profile), then, with it on, a marker kernel and the launch. ncu lists kernels in launch
order, so each marker opens the next one's launches: a library call that launches several
kernels is attributed whole. Outputs were verified by the timed run; they are not checked here.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import numpy as np

from .compile import compile_cubin
from .declare import Case, Experiment, Unsupported
from . import protocol
from .execute import CaseArrays, CaseError, Runnable, Runner, host_call

MARKER = "labnotebook_profile_marker"
MARKER_SOURCE = Path(__file__).with_name("marker.cu")


def profile_launches(exp: Experiment, folder: Path, root: Path, cubin_cache: Path | None,
                     only: set[str] | None = None) -> dict:
    """Launch everything once at its profile case between markers. Returns what the pass needs
    to read ncu's report: ``order`` (the names, one per marker), ``cases`` ({name: case}) and
    ``skipped`` ({name: why it has no profile})."""
    runner = Runner(exp, folder, root, log=lambda line: None, cubin_cache=cubin_cache)
    runner.only = only
    order: list[str] = []
    cases: dict[str, str] = {}
    skipped: dict[str, str] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="notebook-cubin-", dir=cubin_cache) as build_dir:
            runner.compile(Path(build_dir))
            marker = _marker(runner, Path(build_dir), root)
            runnables = runner.runnables()
            for case in exp.cases:
                mine = [r for r in runnables if exp.profile_case(r.name) == case.name]
                if mine:
                    _profile_case(runner, case, mine, marker, order, cases, skipped)
    finally:
        runner.close()
    return {"order": order, "cases": cases, "skipped": skipped}


def _marker(runner: Runner, build_dir: Path, root: Path):
    compiled = compile_cubin(MARKER_SOURCE, build_dir, runner.arch, (), root, runner.cubin_cache)
    fn = runner.cuda.module_from_file(str(compiled.cubin)).get_function(MARKER)
    return lambda index: fn(np.int32(index), grid=(1, 1, 1), block=(1, 1, 1))


def _profile_case(runner: Runner, case: Case, runnables: list[Runnable], marker, order, cases, skipped) -> None:
    exp = runner.exp
    for r in runnables:
        cases[r.name] = case.name
    try:
        inputs = host_call(exp.inputs, "inputs", case, case, protocol.case_rng(exp, case))
        _, shapes = runner.reference_and_shapes(case, inputs, keep=False)
        arrays = CaseArrays(runner.cuda, inputs, {n: np.empty(shapes[n], dt) for n, dt in exp.outputs.items()})
    except (CaseError, runner.cuda.Error) as e:
        for r in runnables:
            skipped[r.name] = f"case {case.name}: {e}"
        return
    try:
        for r in runnables:
            why = _why_not(runner, r)
            if why:
                skipped[r.name] = why
                continue
            try:
                ins, outs = arrays.arrays(r.library)
                go = r.make(case, ins, outs)
                go()  # warm-up, unprofiled
                runner.context.synchronize()
            except Unsupported as e:
                skipped[r.name] = str(e)
                continue
            except Exception as e:
                runner.check_context(f"profiling {r.name}")
                skipped[r.name] = f"{type(e).__name__}: {e}"
                continue
            # Counted before its marker goes out: a launch that fails after it still owns that
            # marker, so the ones after it keep theirs (its own profile is the failure).
            order.append(r.name)
            try:
                with _profiler(runner.cuda):
                    marker(len(order) - 1)
                    go()
                    runner.context.synchronize()
            except Exception as e:
                runner.check_context(f"profiling {r.name}")
                skipped[r.name] = f"{type(e).__name__}: {e}"
    finally:
        arrays.free()


def _why_not(runner: Runner, r: Runnable) -> str | None:
    if r.device == "cpu":
        return "runs on the CPU: no GPU kernel to profile"
    unmet = runner.unavailable or runner.missing(r.requires)
    return unmet["error"] if unmet else None


@contextlib.contextmanager
def _profiler(cuda):
    cuda.start_profiler()
    try:
        yield
    finally:
        cuda.stop_profiler()
