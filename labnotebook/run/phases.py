"""Where the time goes: a whole program, timed phase by phase, each time in a fresh process.

A kernel's time is a small part of what a program that uses it pays: creating the CUDA context,
loading the module, allocating, copying, freeing. Those costs only show in a process that
starts cold, so the engine runs the experiment's program (``PhaseProgram``) ``repeats`` times,
each in a new Python process, and keeps the median of every phase. Each phase is also an NVTX
range, so ``nsys profile`` shows the same phases on its timeline.

The child: ``python -m labnotebook.run.phases FOLDER SOURCE CASE_JSON INPUTS.npz CUBIN_DIR OUT``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..results.format import Row
from ..results.rows import PhaseRow
from ..declare.experiment import Case
from .protocol.timing import stats

TIME_LIMIT_S = 300  # one fresh process: context, copies, kernel, teardown
# Each fresh process costs a second or more (Python, NumPy, PyCUDA, a context): a program runs
# in ``PhaseProgram.repeats`` of them at most, and stops at ``LEAST_PROCESSES`` once they have
# taken ``BUDGET_S`` (the median and the spread of five are what the page shows).
LEAST_PROCESSES = 5
BUDGET_S = 5.0


class PhaseClock:
    """``with clock("name"):`` times a block on the host clock and marks it as an NVTX range.
    Whatever the block queues on the GPU must be finished by its end (the program syncs)."""

    def __init__(self):
        self.ms: dict[str, float] = {}
        try:
            import nvtx
            self.nvtx = nvtx
        except ImportError:
            self.nvtx = None

    @contextlib.contextmanager
    def __call__(self, name: str):
        marker = self.nvtx.annotate(name, domain="labnotebook") if self.nvtx else contextlib.nullcontext()
        with marker:
            t0 = time.perf_counter()
            yield
            self.ms[name] = (time.perf_counter() - t0) * 1e3


def child(argv: list[str]) -> None:
    folder, source, case_json, inputs_path, cubin_dir, out = argv
    spec = importlib.util.spec_from_file_location("notebook_phase_program", Path(folder) / source)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    params = json.loads(case_json)
    case = Case(params.pop("__name__"), **params)
    inputs = dict(np.load(inputs_path))
    clock = PhaseClock()
    outputs = program.main(case, inputs, clock, Path(cubin_dir))
    np.savez(out, **outputs)
    Path(out + ".json").write_text(json.dumps({"ms": clock.ms, "nvtx": clock.nvtx is not None}))


def measure(program, folder: Path, case: Case, inputs: dict, cubin_dir: Path, verify, env: dict,
            base: dict) -> list[Row]:
    """Run ``program`` in up to ``program.repeats`` fresh processes (``BUDGET_S``); one row per
    phase, verified. ``verify(outputs)`` returns the outputs' ``(Check, status)``; ``base`` holds
    the case's row fields."""
    runs, checks = [], []
    t0 = time.perf_counter()
    fields = {k: base[k] for k in ("case", "params", "timed")}
    with tempfile.TemporaryDirectory(prefix="notebook-phases-") as tmp:
        np.savez(Path(tmp) / "inputs.npz", **inputs)
        for i in range(program.repeats):
            out = str(Path(tmp) / f"out{i}.npz")
            params = json.dumps({"__name__": case.name, **case.params})
            try:
                proc = subprocess.run([sys.executable, "-m", "labnotebook.run.phases", str(folder), program.source,
                                       params, str(Path(tmp) / "inputs.npz"), str(cubin_dir), out],
                                      capture_output=True, text=True, env=env, timeout=TIME_LIMIT_S)
            except subprocess.TimeoutExpired:
                return [PhaseRow(name=program.source, status="failed", **fields,
                                 error=f"the program ran past {TIME_LIMIT_S} s and was killed")]
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                return [PhaseRow(name=program.source, status="failed", **fields,
                                 error=f"the program failed: {last}")]
            runs.append(json.loads(Path(out + ".json").read_text()))
            checks.append(verify(dict(np.load(out))))
            if len(runs) >= LEAST_PROCESSES and time.perf_counter() - t0 > BUDGET_S:
                break
    failed = next((c for c, status in checks if status != "ok"), None)
    rows = []
    for name in runs[0]["ms"]:
        rows.append(PhaseRow(name=name, status="failed" if failed else "ok", **fields,
                             check=failed or checks[0][0], fresh_processes=len(runs), nvtx=runs[0]["nvtx"],
                             error="wrong answer in a fresh process" if failed else None,
                             time=None if failed else stats([r["ms"][name] for r in runs])))
    return rows


if __name__ == "__main__":
    child(sys.argv[1:])
