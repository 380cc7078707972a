"""The worker's side of the profile pass: each kernel and GPU baseline of one or more experiments
launched once at its profile case (``profile_case``), for Nsight Compute to measure
(``labnotebook.build.ncu`` runs ncu and reads its report).

One worker under one ncu session profiles every experiment the build hands it: ncu's start-up,
Python's and torch's import cost about 8 s, which a session per experiment paid each time. The
worker runs under ``ncu --profile-from-start off --nvtx``. For each kernel or baseline: a
warm-up launch with the profiler off (JIT compilation, autotuning and lazy initialisation stay
out of the profile), then, with it on, the launch inside an NVTX range named ``RANGE`` and its
number in the session. ncu names each kernel's enclosing range, so a library call that launches
several kernels is attributed whole. Each experiment's account is written as soon as it is done:
a session that dies costs only the experiments after it, which the build profiles again.
Outputs were verified by the timed run; they are not checked here.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import tempfile
import time
from pathlib import Path
from typing import Iterator

from ..errors import NotebookError
from ..declare.discover import load
from ..declare.experiment import Case, Experiment, Kernel, Unsupported
from . import protocol
from .host_code import CaseError, host_call, module_installed
from .measure import Runnable
from .runner import FatalCudaError, Runner

RANGE = "labnotebook.profile."  # + the launch's number in the session


def profile_session(names: list[str], root: Path, cubin_cache: Path | None, out_dir: Path,
                    only: set[str] | None = None) -> int:
    """Profile each experiment in turn, writing ``out_dir/NAME.json`` (``profile_launches``'s
    account, its ``seconds``, or ``{"error": ...}``) as each is done. Returns the exit status:
    0, or 3 where a CUDA error left the context unusable and the rest could not run."""
    numbers = itertools.count()
    for name in names:
        t0 = time.perf_counter()
        status = 0
        try:
            folder = root / "snippets" / name
            launched = profile_launches(load(folder), folder, root, cubin_cache, numbers, only)
        except FatalCudaError as e:
            launched, status = {"error": str(e)}, 3
        except NotebookError as e:
            launched = {"error": str(e)}
        launched["seconds"] = round(time.perf_counter() - t0, 2)
        (out_dir / f"{name}.json").write_text(json.dumps(launched))
        if status:
            return status
    return 0


def profile_launches(exp: Experiment, folder: Path, root: Path, cubin_cache: Path | None,
                     numbers: Iterator[int], only: set[str] | None = None) -> dict:
    """Launch everything once at its profile case, each in its own range. Returns what the pass
    needs to read ncu's report: ``ranges`` ({name: its range's number}), ``cases`` ({name: case})
    and ``skipped`` ({name: why it has no profile}); and where the time went, ``seconds_by``
    ({name: its profiled launch, ncu's replays included; "case NAME": its inputs and reference})."""
    if not module_installed("nvtx"):
        raise NotebookError("the profile pass names each launch with an NVTX range: pip install nvtx")
    runner = Runner(exp, folder, root, log=lambda line: None, cubin_cache=cubin_cache, only=only)
    account = {"ranges": {}, "cases": {}, "skipped": {}, "seconds_by": {}}
    try:
        with tempfile.TemporaryDirectory(prefix="notebook-cubin-", dir=cubin_cache) as build_dir:
            runner.compile(Path(build_dir))
            runnables = runner.runnables()
            for case in exp.cases:
                mine = [r for r in runnables if profile_case(exp, r.name) == case.name]
                if mine:
                    _profile_case(runner, case, mine, numbers, account)
    finally:
        runner.close()
    return account


def profile_case(exp: Experiment, name: str) -> str | None:
    """Where ``name`` is profiled: ``Experiment.profile_case`` (the headline case, else the largest
    it is timed at), unless ``name`` is a CUDA kernel whose ``launch()`` declares that case
    Unsupported; then the largest case it is timed at whose launch it takes, so that a rung
    made for other shapes (softmax's warp per row, up to 1024 columns) still has a profile.
    ``launch()`` runs on the host alone, so the choice costs no input and no GPU."""
    case = exp.profile_case(name)
    kernel = next((k for k in exp.kernels if k.name == name and isinstance(k, Kernel)), None)
    if case is None or kernel is None or kernel.takes(next(c for c in exp.cases if c.name == case)):
        return case
    timed = [c for c in exp.cases if kernel.timed_cases is None or c.name in kernel.timed_cases]
    return next((c.name for c in reversed(timed) if kernel.takes(c)), case)


def _profile_case(runner: Runner, case: Case, runnables: list[Runnable], numbers: Iterator[int],
                  account: dict) -> None:
    exp, skipped = runner.exp, account["skipped"]
    for r in runnables:
        account["cases"][r.name] = case.name
    t0 = time.perf_counter()
    try:
        inputs = host_call(exp.inputs, "inputs", case, case, protocol.case_rng(exp, case))
        # The reference only gives the outputs' shapes here: on the GPU where it can go, it costs
        # milliseconds where the host takes seconds (attention's float64 at its headline).
        arrays, _ = runner.upload(case, inputs, keep=False)
    except (CaseError, runner.cuda.Error) as e:
        for r in runnables:
            skipped[r.name] = f"case {case.name}: {e}"
        return
    seconds = account["seconds_by"]
    seconds[f"case {case.name}"] = round(time.perf_counter() - t0, 2)
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
            number = next(numbers)
            account["ranges"][r.name] = number
            t0 = time.perf_counter()
            try:
                with _profiled(runner.cuda, RANGE + str(number)):
                    go()
                    runner.context.synchronize()
                seconds[r.name] = round(time.perf_counter() - t0, 2)
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
def _profiled(cuda, name: str):
    """The profiler on, inside the NVTX range ``name``."""
    import nvtx

    cuda.start_profiler()
    nvtx.push_range(name)
    try:
        yield
    finally:
        nvtx.pop_range()
        cuda.stop_profiler()
