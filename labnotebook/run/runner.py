"""One experiment's run on the GPU, case by case: the CUDA context, the compiled kernels and the
timer, and for every case its inputs, reference and rows (each kernel and baseline measured by
``measure``, the copies and the phase program beside them)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import numpy as np

from ..declare.experiment import Case, Experiment, Kernel, Launch, PythonKernel
from ..declare.typed_output import TypedOutputKernel
from ..errors import ExperimentError, NotebookError
from ..results.format import KernelInfo, Resources, Row
from ..results.rows import KernelRow, RunRow, TransferRow
from . import phases
from . import protocol
from . import reference as references
from .case_arrays import CaseArrays, poisoned
from .clock import Clock
from .compile import compile_cubin, target
from .device import open_context
from .host_code import CaseError, host_call, load_module, module_installed
from .launch import CudaLaunch, cuda_launch
from .measure import CaseSetup, Runnable, measure, runnable_row, verify
from .needs import BadNeeds, Target, unavailable_kernels
from .protocol.timing import GpuTimer


class FatalCudaError(NotebookError):
    """The CUDA context is unusable (an illegal address, say): nothing more can run in it."""


def own_outputs(k: Kernel, outputs: dict, case: Case) -> dict:
    """The poisoned buffers a TypedOutputKernel writes in its own types at ``case`` (none for
    another kernel)."""
    typed = k.outputs_at(case) if isinstance(k, TypedOutputKernel) else {}
    return {name: poisoned(outputs[name], dtype) for name, dtype in typed.items()}


class Runner:
    """Holds the context, the compiled kernels and the timer for one experiment's run.
    ``with_baselines`` False runs the kernels alone; ``only`` names the kernels and baselines to
    run (all when None); ``gpu_checks`` False keeps every check on the CPU (under a sanitizer,
    whose report must hold our kernels alone); ``emulate``: as an older GPU would (``needs.Target``)."""

    def __init__(self, exp: Experiment, folder: Path, root: Path, log: Callable[[str], None],
                 cubin_cache: Path | None = None, *, with_baselines: bool = True, only: set[str] | None = None,
                 gpu_checks: bool = True, emulate: tuple[int, int] | None = None):
        self.exp, self.folder, self.root, self.log = exp, folder, root, log
        self.cubin_cache = cubin_cache
        self.with_baselines, self.only, self.gpu_checks = with_baselines, only, gpu_checks
        self.cuda, self.device, self.context = open_context()
        self.timer = GpuTimer(self.cuda, self.device)
        try:
            target = Target.of(self.device.compute_capability(), self.device.get_attribute(
                self.cuda.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), emulate)
            self.blocked = unavailable_kernels(exp, folder, target)  # by name: their rows' fields
        except BadNeeds as e:
            raise ExperimentError(str(e)) from None
        self.capability, self.arch, self.max_shared = target.capability, target.arch, target.max_shared
        self.functions, self.modules = {}, {}  # by kernel name: loaded CUDA functions, Python modules
        self.kernel_info: dict[str, KernelInfo] = {}
        self.build_dir: Path | None = None
        self.clock = Clock()
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
        """nvcc for every CUDA kernel (in parallel: each is its own process), then load them."""
        with self.clock("compile"):
            self._compile(build_dir)

    def _compile(self, build_dir: Path) -> None:
        self.build_dir = build_dir
        # Not what cannot run here (nvcc would fail for an architecture the code was never meant for).
        cuda_kernels = [k for k in self.exp.kernels if isinstance(k, Kernel) and not self.unavailable
                        and k.name not in self.blocked]
        with ThreadPoolExecutor(max(1, min(8, len(cuda_kernels)))) as pool:
            compiled = list(pool.map(lambda k: compile_cubin(self.folder / k.source, build_dir, self.arch,
                                                             k.nvcc_options, self.root, self.cubin_cache),
                                     cuda_kernels))
        compiled_by_name = {k.name: c for k, c in zip(cuda_kernels, compiled)}
        for k in self.exp.kernels:
            if isinstance(k, PythonKernel):
                self.kernel_info[k.name] = KernelInfo(k.source, k.function, "python",
                                                      expected_failure=k.expected_failure)
                runs_here = not (k.name in self.blocked or self.unavailable or self.missing(k.requires))
                if runs_here and (self.only is None or k.name in self.only):
                    self.modules[k.name] = load_module(self.folder / k.source,
                                                       f"notebook_snippets.{self.exp.name}.{k.name}")
                continue
            c = compiled_by_name.get(k.name)
            if c is None:  # unavailable here: nothing was compiled
                self.kernel_info[k.name] = KernelInfo(k.source, k.function, "cuda", self.arch,
                                                      expected_failure=k.expected_failure)
                continue
            module = self.cuda.module_from_file(str(c.cubin))
            try:
                self.functions[k.name] = module.get_function(k.function)
            except self.cuda.Error:
                raise ExperimentError(f'{k.source} has no extern "C" __global__ function {k.function!r}')
            res = c.resources.get(k.function)  # none from PTX: the driver compiles it
            self.kernel_info[k.name] = KernelInfo(k.source, k.function, "cuda", target(self.arch, k.nvcc_options)[0],
                                                  Resources(**res) if res else None, k.expected_failure)

    # -- what runs ---------------------------------------------------------------------------
    def runnables(self) -> list[Runnable]:
        out = []
        for k in self.exp.kernels:
            if isinstance(k, PythonKernel):
                def make(case, inputs, outputs, k=k):
                    return getattr(self.modules[k.name], k.function)(case, inputs, outputs)
                out.append(Runnable(k.name, "kernel", "gpu", "torch", make, f"{k.function}()",
                                    k.requires, k.tolerance, k.timed_cases))
            else:
                def make(case, inputs, outputs, k=k):
                    launch, own = k.launch(case), own_outputs(k, outputs, case)  # a case not taken allocates nothing
                    return self.launcher(k, launch, {n: a.gpudata for n, a in {**inputs, **outputs, **own}.items()}, own)
                out.append(Runnable(k.name, "kernel", "gpu", "cuda", make, "launch()",
                                    (), k.tolerance, k.timed_cases))
        for b in self.exp.baselines if self.with_baselines else ():
            requires = b.requires + (("torch",) if b.library == "torch" and "torch" not in b.requires else ())
            out.append(Runnable(b.name, "baseline", b.device, b.library, b.prepare, "prepare()",
                                requires, b.tolerance, b.timed_cases))
        return [r for r in out if self.only is None or r.name in self.only]

    def launcher(self, k: Kernel, launch: Launch, buffers: dict, own: dict | None = None) -> CudaLaunch:
        """Kernel ``k``'s ``launch`` over ``buffers``, ready to run, returning ``own`` outputs."""
        return cuda_launch(self.cuda, self.functions[k.name], k.name, launch, buffers, self.max_shared, own or None)

    # -- one case ----------------------------------------------------------------------------
    def run_case(self, case: Case, timed: bool, untimed_phase: str = "edge cases",
                 only: set[str] | None = None) -> list[Row]:
        """Every row at ``case`` (of the runnables ``only`` names, where it names some). A timed
        case's wall time is counted by phase; an untimed one's all as ``untimed_phase`` ("edge
        cases" or "large cases")."""
        exp = self.exp

        def phase(name: str):
            return self.clock(name if timed else untimed_phase)
        base = {"case": case.name, "params": case.params, "timed": timed,
                "bytes": exp.bytes_moved(case) if exp.bytes_moved else None,
                "flops": exp.flops(case) if exp.flops else None,
                "intensity": exp.intensity(case) if exp.intensity else None}
        runnables = [r for r in self.runnables() if only is None or r.name in only]

        def failed(error: str) -> list[Row]:
            return [runnable_row(r, base, status="failed", error=error) for r in runnables]
        with phase("inputs"):
            try:
                inputs = host_call(exp.inputs, "inputs", case, case, protocol.case_rng(exp, case))
                arrays, reference = self.upload(case, inputs)
            except (CaseError, self.cuda.Error) as e:
                if isinstance(e, CaseError):
                    return failed(str(e))
                # Out of device memory, say: this case fails, the others still run.
                self.check_context(f"allocating case {case.name}")
                return failed(f"the case's buffers: {type(e).__name__}: {e}")
        at = CaseSetup(case, base, inputs, reference, arrays, phase)
        rows: list[Row] = []
        try:
            if timed and exp.time_transfers and self.only is None:
                with phase("timing"):
                    rows += self.transfer_rows(arrays, base)
            for r in runnables:
                time_it = timed and (r.timed_cases is None or case.name in r.timed_cases)
                if timed and not time_it and r.kind == "kernel":
                    row = KernelRow(name=r.name, status="skipped", **base,
                                    error=f"not run at {case.name} (timed at {', '.join(r.timed_cases)})")
                else:
                    with phase("baselines" if r.kind == "baseline" else "verify"):
                        row = measure(self, r, at, time_it)
                rows.append(row)
                self.log_row(len(rows), row)
            if timed and self.with_baselines and self.only is None and exp.phases and case.name in exp.phases.cases:
                with phase("baselines"):
                    rows += phases.measure(exp.phases, self.folder, case, inputs, self.build_dir,
                                           lambda outputs: verify(self, at, outputs, None)[:2],
                                           dict(os.environ), base)
        finally:
            arrays.free()
        return rows

    def upload(self, case: Case, inputs: dict, keep: bool = True) -> tuple[CaseArrays, object]:
        """``inputs`` on the GPU with room for the outputs, and the case's reference: on the GPU
        where ``references.goes_on_gpu``, else on the host (where ``keep`` False spares a
        row-wise reference, when only the outputs' shapes are wanted). Nothing stays allocated
        if it fails."""
        on_gpu = references.goes_on_gpu(self.exp, inputs, self.gpu_checks)
        reference, shapes = (None, None) if on_gpu else references.on_host(self.exp, case, inputs, keep)
        arrays = CaseArrays(self.cuda, inputs)
        try:
            if on_gpu:
                reference, shapes = references.on_gpu(self.exp, case, inputs, arrays, self.log)
            arrays.add_outputs({name: np.empty(shapes[name], dtype) for name, dtype in self.exp.outputs.items()})
        except BaseException:
            arrays.free()
            raise
        return arrays, reference

    def transfer_rows(self, arrays: CaseArrays, base: dict) -> list[TransferRow]:
        """The case's host<->device copies, as rows of their own."""
        times = self.timer.copies(arrays.inputs, {k: a.gpudata for k, a in arrays.dev_in.items()},
                                  arrays.host_out, {k: a.gpudata for k, a in arrays.dev_out.items()})
        moved = {"h2d": arrays.inputs, "d2h": arrays.host_out}
        return [TransferRow(name=name, status="ok", memory="pageable", time=t,
                            **{**base, "bytes": sum(a.nbytes for a in moved[name].values()), "intensity": None})
                for name, t in times.items()]

    def check_context(self, where: str) -> None:
        """After an error, find out whether the context survived; if not, stop everything."""
        try:
            self.context.synchronize()
            self.cuda.mem_alloc(1).free()
        except self.cuda.Error as e:
            raise FatalCudaError(f"{where} left the CUDA context unusable: {e}")

    def log_row(self, i: int, r: RunRow) -> None:
        shown = f" {r.time.median_ms:.4f} ms" if r.time else ""
        checked = f"  (verified in {r.verify_s:.2f} s)" if r.verify_s and r.verify_s >= 0.5 else ""
        self.log(f"{r.case:>18}  {r.name:<24} {r.status:<8}{shown}{checked}"
                 + (f"  {r.error}" if r.error else ""))
