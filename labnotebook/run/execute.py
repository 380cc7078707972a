"""Run one experiment on the GPU: for every case, make inputs, compute the reference, then for
every kernel poison the outputs, launch, verify every element, and only then time it.

This runs inside a worker process (see ``worker.py``), so a crash or a sticky CUDA error here
takes down this experiment alone.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ExperimentError, NotebookError
from . import phases
from .compile import compile_cubin
from .declare import Case, Experiment, Kernel, Launch, PythonKernel, Tolerance, Unsupported
from .device import describe, open_context
from .timing import GpuTimer, time_cpu
from .verify import compare

POISON_BYTE = 0xFF  # all-ones bytes are NaN in every float type, so an unwritten element fails.


class FatalCudaError(NotebookError):
    """The CUDA context is unusable (an illegal address, say): nothing more can run in it."""


def _host_call(fn, what: str, case: Case, *args, **kwargs):
    """Call the experiment's own host code; if it raises, say which function and which case."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        raise ExperimentError(f"host code {what}() raised {type(e).__name__}: {e} (case {case.name})") from e


def _digest(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        h.update(np.ascontiguousarray(arrays[name]).tobytes())
    return h.hexdigest()[:16]


def _as_numpy(value) -> np.ndarray:
    if hasattr(value, "cpu"):  # torch tensors, on whatever device
        value = value.detach().cpu().numpy()
    elif hasattr(value, "get"):  # PyCUDA GPUArrays
        value = value.get()
    return np.asarray(value)


def module_installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def _load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise ExperimentError(f"{path.name} raised {type(e).__name__} on import: {e}") from e
    return module


class Runner:
    """Holds the context, the compiled kernels and the timer for one experiment's run."""

    def __init__(self, exp: Experiment, folder: Path, root: Path, log: Callable[[str], None]):
        self.exp, self.folder, self.root, self.log = exp, folder, root, log
        self.cuda, self.device, self.context = open_context()
        self.timer = GpuTimer(self.cuda)
        major, minor = self.device.compute_capability()
        self.arch = f"sm_{major}{minor}"
        self.capability = (major, minor)
        self.functions: dict[str, object] = {}
        self.modules: dict[str, object] = {}
        self.with_baselines = True
        self.kernel_info: dict[str, dict] = {}
        self.unavailable = self.missing(exp.requires, exp.min_compute_capability)

    def missing(self, modules: tuple[str, ...], capability: tuple[int, int] | None = None) -> dict | None:
        """Why something that needs ``modules`` and ``capability`` cannot run here, as the
        fields of a skipped row, or None. A missing module is named so that the build can run
        the experiment again once it is installed."""
        if capability and self.capability < tuple(capability):
            return {"status": "skipped", "unavailable": True,
                    "error": f"not supported on this GPU: needs compute capability "
                             f"{capability[0]}.{capability[1]}, this GPU has {self.capability[0]}.{self.capability[1]}"}
        for module in modules:
            if not module_installed(module):
                return {"status": "skipped", "unavailable": True, "missing_module": module,
                        "error": f"requires {module}, which is not installed"}
        return None

    def close(self) -> None:
        self.context.pop()

    # -- compiling ---------------------------------------------------------------------------
    def compile(self, build_dir: Path) -> None:
        for k in self.exp.kernels:
            if isinstance(k, PythonKernel):
                self.kernel_info[k.name] = {"source": k.source, "function": k.function, "language": "python",
                                            "expected_failure": k.expected_failure}
                if not self.unavailable and not self.missing(k.requires):
                    self.modules[k.name] = _load_module(self.folder / k.source, f"notebook_snippets.{self.exp.name}.{k.name}")
                continue
            compiled = compile_cubin(self.folder / k.source, build_dir, self.arch, k.nvcc_options, self.root)
            module = self.cuda.module_from_file(str(compiled.cubin))
            try:
                self.functions[k.name] = module.get_function(k.function)
            except self.cuda.Error:
                raise ExperimentError(f'{k.source} has no extern "C" __global__ function {k.function!r}')
            self.kernel_info[k.name] = {
                "source": k.source, "function": k.function, "arch": self.arch,
                "resources": compiled.resources.get(k.function, {}),
                "expected_failure": k.expected_failure}

    # -- one case ----------------------------------------------------------------------------
    def run_case(self, case: Case, timed: bool, seed: int) -> list[dict]:
        exp, cuda = self.exp, self.cuda
        rng = np.random.default_rng([exp.seed, seed])
        inputs = _host_call(exp.inputs, "inputs", case, case, rng)
        reference = _host_call(exp.reference, "reference", case, **inputs)
        missing = set(exp.outputs) - set(reference)
        if missing:
            raise ExperimentError(f"reference() returned no {sorted(missing)}")
        buffers = {name: cuda.to_device(np.ascontiguousarray(a)) for name, a in inputs.items()}
        host_out = {name: np.empty(reference[name].shape, dtype) for name, dtype in exp.outputs.items()}
        buffers.update({name: cuda.mem_alloc(max(a.nbytes, 1)) for name, a in host_out.items()})
        rows = []
        base = {"case": case.name, "params": case.params, "timed": timed,
                "bytes": exp.bytes_moved(case) if exp.bytes_moved else None,
                "flops": exp.flops(case) if exp.flops else None}
        try:
            if timed and exp.time_transfers:
                rows += self.transfer_rows(inputs, host_out, buffers, base)
            for k in exp.kernels:
                if self.unavailable:
                    result = self.unavailable
                elif k.cases is not None and case.name not in k.cases:
                    result = {"status": "skipped", "error": f"not run at {case.name} (runs at {', '.join(k.cases)})"}
                elif isinstance(k, PythonKernel):
                    result = self.run_python_kernel(k, case, inputs, reference, timed)
                else:
                    result = self.run_kernel(k, case, buffers, host_out, reference, timed)
                rows.append({"kind": "kernel", "name": k.name, **base, **result})
            if timed and self.with_baselines and exp.phases and case.name in exp.phases.cases:
                rows += phases.measure(exp.phases, self.folder, case, inputs, self.build_dir,
                                       lambda outputs: self._verify(outputs, reference), dict(os.environ))
            for b in exp.baselines if self.with_baselines else ():
                time_it = timed and (b.timed_cases is None or case.name in b.timed_cases)
                rows.append({"kind": "baseline", "name": b.name, "device": b.device, **base, "timed": time_it,
                             **self.run_baseline(b, case, inputs, reference, time_it)})
        finally:
            for buf in buffers.values():
                try:
                    buf.free()
                except cuda.Error:
                    pass  # the context is already broken; the error that broke it is on its way up
        return rows

    def run_kernel(self, k: Kernel, case: Case, buffers, host_out, reference, timed) -> dict:
        try:
            launch = k.launch(case)
        except Unsupported as e:
            return {"status": "skipped", "error": f"unsupported: {e}"}
        go = self._launcher(k, launch, buffers)
        row: dict = {"launch": {"grid": list(launch.grid), "block": list(launch.block),
                                "shared_bytes": launch.shared_bytes}}
        try:
            for name, host in host_out.items():
                self.cuda.memset_d8(buffers[name], POISON_BYTE, max(host.nbytes, 1))
            go()
            self.context.synchronize()
            for name, host in host_out.items():
                self.cuda.memcpy_dtoh(host, buffers[name])
        except self.cuda.Error as e:
            self._check_context(f"kernel {k.name}")
            return {**row, "status": "failed", "error": f"CUDA error: {e}"}
        row.update(self._verify(host_out, reference, k.tolerance))
        row["digest"] = _digest(host_out)
        if row["status"] == "ok" and timed:
            try:
                row["time"] = self.timer.time(go)
            except self.cuda.Error as e:
                self._check_context(f"timing kernel {k.name}")
                return {**row, "status": "failed", "error": f"CUDA error while timing: {e}"}
        return row

    def run_python_kernel(self, k: PythonKernel, case: Case, inputs, reference, timed) -> dict:
        unmet = self.missing(k.requires)
        if unmet:
            return unmet
        import torch

        x = {name: torch.from_numpy(np.ascontiguousarray(a)).cuda() for name, a in inputs.items()}
        out = {name: torch.from_numpy(np.empty(reference[name].shape, dtype)).cuda()
               for name, dtype in self.exp.outputs.items()}
        try:
            go = getattr(self.modules[k.name], k.function)(case, x, out)
            for t in out.values():
                t.view(torch.uint8).fill_(POISON_BYTE)
            go()
            torch.cuda.synchronize()
        except Unsupported as e:
            return {"status": "skipped", "error": str(e), "unavailable": True}
        except Exception as e:  # a DSL compiler's error, or a launch that failed
            self._check_context(f"kernel {k.name}")
            return {"status": "failed", "error": f"{type(e).__name__}: {e}".strip()}
        host = {name: t.cpu().numpy() for name, t in out.items()}
        row = {**self._verify(host, reference, k.tolerance), "digest": _digest(host)}
        if row["status"] == "ok" and timed:
            row["time"] = self.timer.time(go)
        return row

    def run_baseline(self, b, case: Case, inputs, reference, timed: bool) -> dict:
        unmet = self.missing(b.requires)
        if unmet:
            return unmet
        fn = b.prepare(case, inputs)
        outputs = {name: _as_numpy(v) for name, v in fn().items()}
        row = self._verify(outputs, reference, b.tolerance)
        if row["status"] == "ok" and timed:
            row["time"] = self.timer.time(fn) if b.device == "gpu" else time_cpu(fn)
        return row

    def transfer_rows(self, inputs, host_out, buffers, base) -> list[dict]:
        """Host<->device copies from ordinary (pageable) NumPy arrays, as a naive program makes them."""
        cuda = self.cuda

        def h2d():
            for name, a in inputs.items():
                cuda.memcpy_htod(buffers[name], a)

        def d2h():
            for name, a in host_out.items():
                cuda.memcpy_dtoh(a, buffers[name])

        rows = []
        for name, fn, arrays in (("h2d", h2d, inputs), ("d2h", d2h, host_out)):
            rows.append({"kind": "transfer", "name": name, **base, "status": "ok",
                         "bytes": sum(a.nbytes for a in arrays.values()), "memory": "pageable",
                         "time": self.timer.time(fn)})
        return rows

    # -- helpers -----------------------------------------------------------------------------
    def _launcher(self, k: Kernel, launch: Launch, buffers) -> Callable[[], None]:
        args = []
        for a in launch.args:
            if isinstance(a, str):
                if a not in buffers:
                    raise ExperimentError(f"kernel {k.name}: launch names buffer {a!r}; "
                                          f"the buffers are {sorted(buffers)}")
                args.append(buffers[a])
            else:
                args.append(a)
        grid = tuple(int(g) for g in launch.grid) + (1,) * (3 - len(launch.grid))
        block = tuple(int(b) for b in launch.block) + (1,) * (3 - len(launch.block))
        fn = self.functions[k.name]
        if launch.shared_bytes > 48 * 1024:  # more than the default needs the kernel's opt-in
            fn.set_attribute(self.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, launch.shared_bytes)
        return lambda: fn(*args, grid=grid, block=block, shared=launch.shared_bytes)

    def _verify(self, outputs, reference, tolerance: Tolerance | None = None) -> dict:
        tolerance = tolerance or self.exp.tolerance
        checks = {name: compare(outputs[name], reference[name], tolerance)
                  for name in self.exp.outputs}
        worst = max(checks.values(), key=lambda c: (c.max_abs_err, c.mismatches))
        row = {"status": "ok" if all(c.ok for c in checks.values()) else "failed",
               "check": {**worst.as_record(), "atol": tolerance.atol, "rtol": tolerance.rtol}}
        bad = [c.describe(n) for n, c in checks.items() if not c.ok]
        if bad:
            row["error"] = "wrong answer: " + "; ".join(bad)
        return row

    def _check_context(self, where: str) -> None:
        """After a CUDA error, find out whether the context survived; if not, stop everything."""
        try:
            self.context.synchronize()
            self.cuda.mem_alloc(1).free()
        except self.cuda.Error as e:
            raise FatalCudaError(f"{where} left the CUDA context unusable: {e}")


def apply_expected_failures(exp: Experiment, rows: list[dict]) -> list[str]:
    """Turn failures of declared expected-failure kernels into ``xfail``; return problems, such as
    an expected failure that passed everywhere (sphinx-gallery's rule: it must fail)."""
    problems = []
    for k in exp.kernels:
        if not k.expected_failure:
            continue
        mine = [r for r in rows if r["kind"] == "kernel" and r["name"] == k.name]
        for r in mine:
            if r["status"] == "failed":
                r["status"] = "xfail"
        if mine and not any(r["status"] == "xfail" for r in mine):
            problems.append(f"kernel {k.name} is declared to fail ({k.expected_failure}) "
                            "but passed every case")
    return problems


def run_experiment(exp: Experiment, folder: Path, root: Path, ceiling: dict | None,
                   log: Callable[[str], None] = print, cases: list[Case] | None = None,
                   edge_cases: list[Case] | None = None, with_baselines: bool = True) -> dict:
    """Run ``exp`` and return its results record (see ``store.py`` for the format)."""
    t0 = time.perf_counter()
    runner = Runner(exp, folder, root, log)
    runner.with_baselines = with_baselines
    try:
        with tempfile.TemporaryDirectory(prefix="notebook-cubin-") as build_dir:
            runner.build_dir = Path(build_dir)  # kept for the phase program's fresh processes
            runner.compile(runner.build_dir)
            if ceiling is None:
                ceiling = runner.timer.copy_bandwidth()
            timed = exp.cases if cases is None else cases
            edges = exp.edge_cases if edge_cases is None else edge_cases
            rows = []
            plan = [(c, True) for c in timed] + [(c, False) for c in edges]
            for i, (case, is_timed) in enumerate(plan):
                case_rows = runner.run_case(case, is_timed, seed=i)
                for r in case_rows:
                    shown = r["time"]["median_ms"] if "time" in r else None
                    log(f"[{i + 1:>3}/{len(plan)}] {case.name:>12}  {r['name']:<18} {r['status']:<8}"
                        + (f" {shown:.4f} ms" if shown is not None else "")
                        + (f"  {r['error']}" if r.get("error") else ""))
                rows += case_rows
        problems = apply_expected_failures(exp, rows)
        info = describe(runner.cuda, runner.device)
    finally:
        try:
            runner.close()
        except runner.cuda.Error:
            pass
    failed = [f"{r['name']} @ {r['case']}: {r['error']}" for r in rows if r["status"] == "failed"]
    return {
        "experiment": exp.name, "title": exp.title, "gpu": info["gpu"], "provenance": info,
        "ceiling": {k: ceiling[k] for k in ("gbs", "median_ms", "bytes")},
        "kernels": runner.kernel_info, "rows": rows,
        "status": "failed" if failed or problems else "ok",
        "problems": problems + failed,
        "duration_s": round(time.perf_counter() - t0, 2),
    }
