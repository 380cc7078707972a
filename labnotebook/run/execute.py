"""Run one experiment on the GPU: for every case, make inputs and the reference; then for every
kernel and baseline alike, poison the outputs, run once, verify every element, and only then
time it.

CUDA kernels, Python-DSL kernels and baselines take one path (``Runner.measure``): the same
poisoned output buffers, the same error capture (whatever a launch, a preparation or a library
call raises is that row's failure, named, and the others still run), the same timer. Only the
arrays differ: PyCUDA buffers for CUDA kernels, torch views of the same device memory for
Triton, cuTile and PyTorch, NumPy arrays for CPU baselines.

This runs inside a worker process (see ``worker.py``), so a crash or a sticky CUDA error here
takes down this experiment alone. Judging the rows (expected failures, what fails a run) is
``labnotebook.build.policy``'s job, not this module's.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ExperimentError, NotebookError
from ..results.format import Ceiling, Check, KernelInfo, LaunchShape, Provenance, Record, Resources, Row
from . import phases
from . import protocol
from .compile import compile_cubin, target
from ..declare.experiment import (Case, Experiment, Kernel, Launch, PythonKernel, Tolerances, Unavailable,
                                  Unsupported, tolerance_at)
from .device import describe, open_context
from .protocol import POISON_BYTE
from .protocol.timing import GpuTimer, time_cpu
from .protocol.verify import (GPU_CHECK_MIN, Comparison, DeviceReference, reference_in_gpu_slices,
                              reference_in_slices, verify_outputs, within_on_gpu)
from .outputs import Outputs, torch_view
from .tma import TensorMap
# The most a kept float64 reference may take, on any machine: enough for 2^31 elements and some
# (a reference recomputed for every kernel and baseline costs far more than the memory).
REFERENCE_CAP = 24 << 30
GPU_HEADROOM = 4 << 30  # device memory left free beside a reference uploaded for the GPU check
# CUDA's launch limits, the same on every GPU since compute capability 3.0 (the CUDA C
# Programming Guide's table of technical specifications).
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024


class InvalidLaunch(Exception):
    """A launch() whose grid or block CUDA would refuse: a limit its launch() did not declare."""


def launch_dims(launch: Launch, max_shared: int | None = None) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``launch``'s grid and block as three dimensions each, checked before anything is launched.
    A grid with no blocks (a size of 0: ``cdiv(0, 256)``) has nothing to run and is declared
    Unsupported; a dimension past CUDA's limits raises InvalidLaunch naming it, where the GPU
    would only say "invalid argument"."""
    dims = {}
    for what, given, limits in (("grid", launch.grid, MAX_GRID), ("block", launch.block, MAX_BLOCK)):
        if not 1 <= len(given) <= 3:
            raise InvalidLaunch(f"{what} {tuple(given)}: one to three dimensions")
        padded = tuple(int(d) for d in given) + (1,) * (3 - len(given))
        for axis, (d, most) in enumerate(zip(padded, limits)):
            if what == "grid" and d == 0:
                raise Unsupported(f"grid {padded} has no blocks: nothing to launch at this size")
            if not 1 <= d <= most:
                raise InvalidLaunch(f"{what} {padded}: {what}Dim.{'xyz'[axis]} must be 1 to {most}; "
                                    "declare the limit in launch() with Unsupported")
        dims[what] = padded
    threads = dims["block"][0] * dims["block"][1] * dims["block"][2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise InvalidLaunch(f"block {dims['block']}: {threads} threads, at most {MAX_THREADS_PER_BLOCK} a block")
    if launch.shared_bytes < 0 or (max_shared is not None and launch.shared_bytes > max_shared):
        raise InvalidLaunch(f"{launch.shared_bytes} bytes of dynamic shared memory: "
                            f"this GPU gives a block at most {max_shared}")
    return dims["grid"], dims["block"]


def reference_budget() -> int:
    """How many bytes of float64 reference a case may keep: a quarter of the machine's memory
    (of this GPU's share of it, on a node where several run at once), at most REFERENCE_CAP.
    Beyond it the reference is recomputed slice by slice per output."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0
    sharing = max(1, int(os.environ.get("NOTEBOOK_GPUS_SHARING", "1")))
    return min(REFERENCE_CAP, total // (4 * sharing))


class Clock:
    """Where a run's wall time goes, by phase (``format.REFRESH_PHASES``): ``with clock("verify"):``.
    A phase entered inside another stops the outer one's clock until it is left, so every
    second is counted once."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[str] = []
        self._since = time.perf_counter()

    @contextmanager
    def __call__(self, phase: str):
        self._switch()
        self._stack.append(phase)
        try:
            yield
        finally:
            self._switch()
            self._stack.pop()

    def _switch(self) -> None:
        now = time.perf_counter()
        if self._stack:
            self.seconds[self._stack[-1]] += now - self._since
        self._since = now

    def rounded(self) -> dict[str, float]:
        return {phase: round(s, 2) for phase, s in self.seconds.items()}


class FatalCudaError(NotebookError):
    """The CUDA context is unusable (an illegal address, say): nothing more can run in it."""


class CaseError(Exception):
    """The experiment's own host code (``inputs``, ``reference``) failed at one case."""


def host_call(fn, what: str, case: Case | None, *args, **kwargs):
    """Call the experiment's own host code; if it raises, say which function and which case."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        where = f" (case {case.name})" if case else ""
        raise CaseError(f"host code {what}() raised {type(e).__name__}: {e}{where}") from e


def _elements(value) -> int:
    return value.numel() if hasattr(value, "numel") else int(np.prod(np.shape(value)))


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


@dataclass
class Runnable:
    """A kernel or a baseline, as the engine runs it: ``make(case, inputs, outputs)`` returns
    the callable that runs it once, given arrays of ``library``."""

    name: str
    kind: str  # "kernel" or "baseline"
    device: str  # "gpu" or "cpu": how it is timed
    library: str  # "cuda" (PyCUDA buffers), "torch", "pycuda" (GPUArrays) or "numpy"
    make: Callable[[Case, dict, dict], Callable[[], Any]]
    what: str  # what to call its setup in an error message: "launch()", "prepare()"
    requires: tuple[str, ...] = ()
    tolerance: Tolerances | None = None
    timed_cases: tuple[str, ...] | None = None


class CaseArrays:
    """One case's inputs and outputs: on the host, on the device (uploaded once), and as each
    library sees the device memory (torch tensors are views of the same buffers, not copies)."""

    def __init__(self, cuda, inputs: dict[str, np.ndarray], host_out: dict[str, np.ndarray] | None = None):
        self.cuda, self.inputs = cuda, inputs
        self.dev_in = {k: self._alloc(v) for k, v in inputs.items()}
        self.host_out: dict[str, np.ndarray] = {}
        self.dev_out: dict = {}
        for k, v in inputs.items():
            if v.nbytes:
                cuda.memcpy_htod(self.dev_in[k].gpudata, np.ascontiguousarray(v))
        self._torch: tuple[dict, dict] | None = None
        self._reference_on_gpu: dict = {}  # output name -> its reference on the GPU, or None: no room
        self.device_reference: DeviceReference | None = None  # one computed there, freed with the case
        if host_out is not None:
            self.add_outputs(host_out)

    def _alloc(self, a: np.ndarray):  # one byte at least, so an empty array still has an address
        from pycuda import gpuarray

        return gpuarray.GPUArray(a.shape, a.dtype, gpudata=self.cuda.mem_alloc(max(a.nbytes, 1)))

    def add_outputs(self, host_out: dict[str, np.ndarray]) -> None:
        """The outputs, on the host and on the device, once their shapes are known."""
        self.host_out = host_out
        self.dev_out = {k: self._alloc(v) for k, v in host_out.items()}
        self._torch = None

    def arrays(self, library: str) -> tuple[dict, dict]:
        if library == "numpy":
            return self.inputs, self.host_out
        if library in ("pycuda", "cuda"):
            return self.dev_in, self.dev_out
        if self._torch is None:
            import torch

            def view(a):
                return torch.as_tensor(a, device="cuda") if a.size else torch.empty(a.shape, device="cuda")
            self._torch = ({k: view(v) for k, v in self.dev_in.items()},
                           {k: view(v) for k, v in self.dev_out.items()})
        return self._torch

    def reference_on_gpu(self, reference: Mapping[str, np.ndarray], name: str):
        """``reference[name]`` as a torch tensor on the GPU: where it was computed there, or
        uploaded once per case; None where that would not leave ``GPU_HEADROOM`` free."""
        if isinstance(reference, DeviceReference):
            return reference.tensors[name]
        if name not in self._reference_on_gpu:
            import torch

            want = np.ascontiguousarray(reference[name])
            free, _ = torch.cuda.mem_get_info()
            self._reference_on_gpu[name] = torch.from_numpy(want).to("cuda") \
                if want.nbytes + GPU_HEADROOM < free else None
        return self._reference_on_gpu[name]

    def poison(self, device: str) -> None:
        if device == "cpu":
            for a in self.host_out.values():
                a.view(np.uint8).fill(POISON_BYTE)
        else:
            for a in self.dev_out.values():
                if a.nbytes:
                    self.cuda.memset_d8(a.gpudata, POISON_BYTE, a.nbytes)

    def fetch(self, device: str, returned, on_gpu: bool) -> Outputs:
        """The outputs: what the runnable returned as ``{name: array}``, else what it wrote in
        place (a library call's own return value, the out= array, is ignored). Those on the
        GPU stay there until read; with ``on_gpu``, each of ``GPU_CHECK_MIN`` elements or more
        gets a torch view there, for the check and the digest."""
        if isinstance(returned, Mapping):
            views = {k: torch_view(v) for k, v in returned.items() if on_gpu and _elements(v) >= GPU_CHECK_MIN}
            return Outputs(returned, device=views, copy=lambda k: _as_numpy(returned[k]))
        if device == "cpu":
            return Outputs(self.host_out, host=self.host_out)
        views = {k: self.arrays("torch")[1][k] for k, a in self.dev_out.items() if on_gpu and a.size >= GPU_CHECK_MIN}

        def copy(name: str) -> np.ndarray:
            if self.dev_out[name].nbytes:
                self.cuda.memcpy_dtoh(self.host_out[name], self.dev_out[name].gpudata)
            return self.host_out[name]
        return Outputs(self.host_out, device=views, copy=copy)

    def free(self) -> None:
        self._torch = None
        self._reference_on_gpu = {}
        if self.device_reference is not None:
            self.device_reference.release()
        if "torch" in sys.modules:  # what torch's allocator keeps, PyCUDA's next case may need
            sys.modules["torch"].cuda.empty_cache()
        for a in (*self.dev_in.values(), *self.dev_out.values()):
            try:
                a.gpudata.free()
            except self.cuda.Error:
                pass  # the context is already broken; the error that broke it is on its way up


class Runner:
    """Holds the context, the compiled kernels and the timer for one experiment's run."""

    def __init__(self, exp: Experiment, folder: Path, root: Path, log: Callable[[str], None],
                 cubin_cache: Path | None = None):
        self.exp, self.folder, self.root, self.log = exp, folder, root, log
        self.cubin_cache = cubin_cache
        self.cuda, self.device, self.context = open_context()
        self.timer = GpuTimer(self.cuda, self.device)
        major, minor = self.device.compute_capability()
        self.arch = f"sm_{major}{minor}"
        self.capability = (major, minor)
        self.max_shared = self.device.get_attribute(self.cuda.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.functions: dict[str, object] = {}
        self.modules: dict[str, object] = {}
        self.with_baselines = True
        self.only: set[str] | None = None  # run only these kernels and baselines (--kernel)
        self.kernel_info: dict[str, KernelInfo] = {}
        self.build_dir: Path | None = None
        self.case_arrays: CaseArrays | None = None  # the case being run: its inputs and outputs
        self.clock = Clock()
        self.gpu_checks = True  # large outputs checked on the GPU first (not under a sanitizer)
        self._timed_case = True  # whether the case being run is timed (its phases are counted apart)
        self.untimed_phase = "edge cases"  # what an untimed case's time is counted as ("large cases")
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
    def phase(self, name: str):
        """The clock for ``name`` at a timed case; an untimed case's is ``untimed_phase``."""
        return self.clock(name if self._timed_case else self.untimed_phase)

    def compile(self, build_dir: Path) -> None:
        """nvcc for every CUDA kernel (in parallel: each is its own process), then load them."""
        with self.clock("compile"):
            self._compile(build_dir)

    def _compile(self, build_dir: Path) -> None:
        self.build_dir = build_dir
        # Nothing to compile where nothing can run (too old a GPU for this experiment, say):
        # nvcc would fail for an architecture the kernels were never meant for.
        cuda_kernels = [k for k in self.exp.kernels if isinstance(k, Kernel)] if not self.unavailable else []
        with ThreadPoolExecutor(max(1, min(8, len(cuda_kernels)))) as pool:
            compiled = list(pool.map(lambda k: compile_cubin(self.folder / k.source, build_dir, self.arch,
                                                             k.nvcc_options, self.root, self.cubin_cache),
                                     cuda_kernels))
        compiled_by_name = {k.name: c for k, c in zip(cuda_kernels, compiled)}
        for k in self.exp.kernels:
            if isinstance(k, PythonKernel):
                self.kernel_info[k.name] = KernelInfo(k.source, k.function, "python",
                                                      expected_failure=k.expected_failure)
                if not self.unavailable and not self.missing(k.requires) and (self.only is None or k.name in self.only):
                    self.modules[k.name] = _load_module(self.folder / k.source,
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
            res = c.resources.get(k.function)
            self.kernel_info[k.name] = KernelInfo(k.source, k.function, "cuda", target(self.arch, k.nvcc_options)[0],
                                                  Resources(**res) if res else None, k.expected_failure)

    # -- what runs ---------------------------------------------------------------------------
    def runnables(self) -> list[Runnable]:
        out = []
        for k in self.exp.kernels:
            if isinstance(k, PythonKernel):
                out.append(Runnable(k.name, "kernel", "gpu", "torch", self._python_kernel(k), f"{k.function}()",
                                    k.requires, k.tolerance, k.timed_cases))
            else:
                out.append(Runnable(k.name, "kernel", "gpu", "cuda", self._cuda_kernel(k), "launch()",
                                    (), k.tolerance, k.timed_cases))
        for b in self.exp.baselines if self.with_baselines else ():
            requires = b.requires + (("torch",) if b.library == "torch" and "torch" not in b.requires else ())
            out.append(Runnable(b.name, "baseline", b.device, b.library, b.prepare, "prepare()",
                                requires, b.tolerance, b.timed_cases))
        return [r for r in out if self.only is None or r.name in self.only]

    def _cuda_kernel(self, k: Kernel):
        def make(case, inputs, outputs):
            launch = k.launch(case)
            self._last_launch = launch
            return self._launcher(k, launch, {n: a.gpudata for n, a in {**inputs, **outputs}.items()})
        return make

    def _python_kernel(self, k: PythonKernel):
        def make(case, inputs, outputs):
            return getattr(self.modules[k.name], k.function)(case, inputs, outputs)
        return make

    # -- one case ----------------------------------------------------------------------------
    def run_case(self, case: Case, timed: bool) -> list[Row]:
        self._timed_case = timed
        exp = self.exp
        base = {"case": case.name, "params": case.params, "timed": timed,
                "bytes": exp.bytes_moved(case) if exp.bytes_moved else None,
                "flops": exp.flops(case) if exp.flops else None,
                "intensity": exp.intensity(case) if exp.intensity else None}
        runnables = self.runnables()

        def failed(error: str) -> list[Row]:
            return [Row(kind=r.kind, name=r.name, status="failed", error=error,
                        device=r.device if r.kind == "baseline" else None, **base) for r in runnables]
        self.case_arrays = None
        with self.phase("inputs"):
            try:
                inputs = host_call(exp.inputs, "inputs", case, case, protocol.case_rng(exp, case))
                on_gpu = self.reference_goes_on_gpu(inputs)
                reference, shapes = (None, None) if on_gpu else self.reference_and_shapes(case, inputs)
                self.case_arrays = CaseArrays(self.cuda, inputs)
                if on_gpu:
                    reference, shapes = self.reference_on_gpu(case, inputs)
                self.case_arrays.add_outputs({name: np.empty(shapes[name], dtype) for name, dtype in exp.outputs.items()})
            except (CaseError, self.cuda.Error) as e:
                if self.case_arrays is not None:
                    self.case_arrays.free()
                if isinstance(e, CaseError):
                    return failed(str(e))
                # Out of device memory, say: this case fails, the others still run.
                self.check_context(f"allocating case {case.name}")
                return failed(f"the case's buffers: {type(e).__name__}: {e}")
        rows: list[Row] = []
        try:
            if timed and exp.time_transfers and self.only is None:
                with self.phase("timing"):
                    rows += self.transfer_rows(self.case_arrays, base)
            for r in runnables:
                time_it = timed and (r.timed_cases is None or case.name in r.timed_cases)
                if timed and not time_it and r.kind == "kernel":
                    row = Row(kind=r.kind, name=r.name, status="skipped", **base,
                              error=f"not run at {case.name} (timed at {', '.join(r.timed_cases)})")
                else:
                    with self.phase("baselines" if r.kind == "baseline" else "verify"):
                        row = self.measure(r, case, base, inputs, reference, time_it)
                rows.append(row)
                self.log_row(len(rows), row)
            if timed and self.with_baselines and self.only is None and exp.phases and case.name in exp.phases.cases:
                with self.phase("baselines"):
                    rows += phases.measure(exp.phases, self.folder, case, inputs, self.build_dir,
                                           lambda outputs: self._verify(outputs, inputs, reference, None, case)[:2],
                                           dict(os.environ), base)
        finally:
            self.case_arrays.free()
        return rows

    def reference_goes_on_gpu(self, inputs: dict) -> bool:
        """Whether this case's reference is computed on the GPU: the experiment's reference is
        written for the array API, the checks run there, and the inputs are large."""
        return (self.exp.array_api_reference and self.gpu_checks and module_installed("torch")
                and module_installed("array_api_compat")
                and sum(_elements(v) for v in inputs.values()) >= GPU_CHECK_MIN)

    def reference_on_gpu(self, case: Case, inputs: dict) -> tuple[Mapping, dict[str, tuple]]:
        """The reference computed on the GPU from the uploaded inputs (``DeviceReference``) and
        the outputs' shapes; on the host as usual where the GPU has no room for it."""
        import torch

        exp, ins = self.exp, self.case_arrays.arrays("torch")[0]
        try:
            if exp.rowwise_reference:
                tensors = host_call(reference_in_gpu_slices, "reference", case, ins, exp.reference)
            else:
                whole = host_call(exp.reference, "reference", case, **ins)
                tensors = {n: torch.as_tensor(whole[n], dtype=torch.float64, device="cuda") for n in exp.outputs
                           if n in whole}
        except CaseError as e:
            if not isinstance(e.__cause__, torch.cuda.OutOfMemoryError):
                raise
            self.log("  (no room for the reference on the GPU: computing it on the host)")
            torch.cuda.empty_cache()
            return self.reference_and_shapes(case, inputs)
        self.require_outputs(case, tensors)
        self.case_arrays.device_reference = DeviceReference(tensors)
        return self.case_arrays.device_reference, {n: tuple(t.shape) for n, t in tensors.items()}

    def reference_and_shapes(self, case: Case, inputs: dict, keep: bool = True) -> tuple[dict | None, dict[str, tuple]]:
        """The whole reference and the outputs' shapes. A row-wise reference too big to keep
        (``reference_budget``) is None: it is computed slice by slice while verifying each output."""
        exp = self.exp
        if exp.rowwise_reference:
            first = host_call(exp.reference, "reference", case, **{k: v[:1] for k, v in inputs.items()})
            rows = next(iter(inputs.values())).shape[0]
            ref, shapes = None, {n: (rows, *np.shape(first[n])[1:]) for n in exp.outputs if n in first}
            if keep and set(shapes) == set(exp.outputs) and sum(8 * np.prod(s) for s in shapes.values()) <= reference_budget():
                # It fits: compute it once (in slices, on every core) for every kernel to be checked against.
                ref = host_call(reference_in_slices, "reference", case, inputs, exp.reference, shapes)
        else:
            ref = host_call(exp.reference, "reference", case, **inputs)
            shapes = {n: np.shape(ref[n]) for n in exp.outputs if n in ref}
        self.require_outputs(case, shapes)
        return ref, shapes

    def require_outputs(self, case: Case, found: Mapping) -> None:
        """The reference gave every declared output (``found`` is keyed by output name)."""
        missing = sorted(set(self.exp.outputs) - set(found))
        if missing:
            raise CaseError(f"host code reference() returned no {missing} (case {case.name})")

    def measure(self, r: Runnable, case: Case, base: dict, inputs: dict, reference: dict | None,
                time_it: bool) -> Row:
        """Set up, poison, run once, verify, and (when ``time_it``) time one kernel or baseline."""
        row = Row(kind=r.kind, name=r.name, status="ok", **{**base, "timed": time_it},
                  device=r.device if r.kind == "baseline" else None)
        unmet = self.unavailable or self.missing(r.requires)
        if unmet:
            return _update(row, **unmet)
        ins, outs = self.case_arrays.arrays(r.library)
        self._last_launch = None
        try:
            go = r.make(case, ins, outs)
        except Unsupported as e:
            return _skipped(row, e, r.library)
        except Exception as e:
            self.check_context(f"{r.kind} {r.name}")
            return _update(row, status="failed", error=_describe_error(e, r.what))
        if self._last_launch is not None:
            row.launch = LaunchShape(tuple(int(g) for g in self._last_launch.grid),
                                     tuple(int(b) for b in self._last_launch.block), self._last_launch.shared_bytes)
        # Large outputs on the GPU are checked and digested there (not under a sanitizer, whose
        # report must hold our kernels alone, and not without torch).
        gpu_views = r.device == "gpu" and self.gpu_checks and module_installed("torch")
        try:
            def fetch(returned) -> Outputs:
                self._synchronize(r)
                outputs = self.case_arrays.fetch(r.device, returned, gpu_views)
                row.digest = self._digest(outputs)  # now: timing runs it again, over the same buffers
                return outputs
            measured = protocol.measure(lambda: self.case_arrays.poison(r.device), go, fetch,
                                        lambda outputs: self._verify(outputs, inputs, reference, r.tolerance, case),
                                        lambda: self._time(r, go), time_it)
        except Unsupported as e:
            return _skipped(row, e, r.library)
        except protocol.StepFailed as e:
            self.check_context(f"{r.kind} {r.name}" if e.step == "the first run" else f"timing {r.kind} {r.name}")
            return _update(row, status="failed", error=_describe_error(e.cause, e.step))
        except CaseError as e:
            return _update(row, status="failed", error=str(e))
        except (ValueError, KeyError) as e:  # outputs of the wrong shape, or missing
            return _update(row, status="failed", error=f"verification: {type(e).__name__}: {e}")
        row.check, row.status, row.error = measured.check, measured.status, measured.error
        row.verify_s, row.time = measured.verify_s, measured.time
        return row

    def _digest(self, outputs: Outputs) -> str | None:
        try:
            return outputs.digest()
        except Exception as e:  # a digest is a convenience for the page; the run stands without it
            self.log(f"  (no digest: {type(e).__name__}: {e})")
            return None

    def _time(self, r: Runnable, go: Callable[[], object]):
        with self.phase("baselines" if r.kind == "baseline" else "timing"):
            return self.timer.time(go) if r.device == "gpu" else time_cpu(go)

    def _synchronize(self, r: Runnable) -> None:
        if r.device == "gpu":
            self.context.synchronize()  # PyTorch shares this (primary) context and its default stream

    def transfer_rows(self, arrays: CaseArrays, base: dict) -> list[Row]:
        """The case's host<->device copies, as rows of their own."""
        times = self.timer.copies(arrays.inputs, {k: a.gpudata for k, a in arrays.dev_in.items()},
                                  arrays.host_out, {k: a.gpudata for k, a in arrays.dev_out.items()})
        moved = {"h2d": arrays.inputs, "d2h": arrays.host_out}
        return [Row(kind="transfer", name=name, status="ok", memory="pageable", time=t,
                    **{**base, "bytes": sum(a.nbytes for a in moved[name].values()), "intensity": None})
                for name, t in times.items()]

    # -- helpers -----------------------------------------------------------------------------
    def _launcher(self, k: Kernel, launch: Launch, buffers) -> Callable[[], None]:
        args = []
        for a in launch.args:
            if not isinstance(a, (str, TensorMap)):  # a value: np.int32(n), np.float32(x)
                args.append(a)
                continue
            name = a.buffer if isinstance(a, TensorMap) else a
            if name not in buffers:
                raise ExperimentError(f"kernel {k.name}: launch names buffer {name!r}; "
                                      f"the buffers are {sorted(buffers)}")
            if isinstance(a, TensorMap):  # to device memory now, outside the timed launches
                args.append(self.cuda.to_device(a.encode(int(buffers[name]))))
            else:
                args.append(buffers[name])
        grid, block = launch_dims(launch, self.max_shared)
        fn = self.functions[k.name]
        # Static and dynamic shared memory together get 48 KiB a block by default; opting in to
        # the dynamic part asked for lifts that, and costs nothing where it was not needed.
        if launch.shared_bytes > 0:
            fn.set_attribute(self.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, launch.shared_bytes)
        return lambda: fn(*args, grid=grid, block=block, shared=launch.shared_bytes)

    def _verify(self, outputs: Mapping[str, np.ndarray], inputs, reference, tolerance: Tolerances | None,
                case: Case) -> tuple[Check, str, str | None]:
        """The protocol's verification, with the tolerance declared for this case; outputs with
        a view on the GPU (``Outputs.on_gpu``) get the quick check there first."""
        tolerance = host_call(tolerance_at, "tolerance", case, tolerance or self.exp.tolerance, case)

        def reference_slice(**rows):  # a row-wise reference too big to keep, a slice at a time
            return host_call(self.exp.reference, "reference", None, **rows)

        def check_on_gpu(name: str, tol) -> Comparison | None:
            got = outputs.on_gpu(name)
            if got is None:
                return None
            try:
                want = self.case_arrays.reference_on_gpu(reference, name)
                return within_on_gpu(got, want, tol) if want is not None else None
            except Exception as e:  # no room, say: the CPU checks it all the same
                self.log(f"  (checking {name} on the CPU: {type(e).__name__}: {e})")
                return None
        use_gpu = isinstance(outputs, Outputs) and reference is not None
        # What the GPU leaves to the host: a row-wise reference computed on the GPU is copied there
        # whole only within the host's budget; past it, the host recomputes it a slice at a time.
        on_host = None if (isinstance(reference, DeviceReference) and self.exp.rowwise_reference
                           and reference.nbytes > reference_budget()) else reference
        return verify_outputs(outputs, list(self.exp.outputs), tolerance, on_host, inputs, reference_slice,
                              check_on_gpu if use_gpu else None)

    def check_context(self, where: str) -> None:
        """After an error, find out whether the context survived; if not, stop everything."""
        try:
            self.context.synchronize()
            self.cuda.mem_alloc(1).free()
        except self.cuda.Error as e:
            raise FatalCudaError(f"{where} left the CUDA context unusable: {e}")

    def log_row(self, i: int, r: Row) -> None:
        shown = f" {r.time.median_ms:.4f} ms" if r.time else ""
        checked = f"  (verified in {r.verify_s:.2f} s)" if r.verify_s and r.verify_s >= 0.5 else ""
        self.log(f"{r.case:>18}  {r.name:<24} {r.status:<8}{shown}{checked}"
                 + (f"  {r.error}" if r.error else ""))


def _update(row: Row, **fields) -> Row:
    for k, v in fields.items():
        setattr(row, k, v)
    return row


def _skipped(row: Row, e: Unsupported, library: str) -> Row:
    """A declared skip: a case the kernel does not take (Unsupported), or a machine that cannot run it."""
    return _update(row, status="skipped", error=f"unsupported: {e}" if library == "cuda" else str(e),
                   unavailable=isinstance(e, Unavailable))


def _describe_error(e: Exception, step: str) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if step == "the first run" else f"{step} raised {text}"


def run_experiment(exp: Experiment, folder: Path, root: Path, ceiling: Ceiling | None,
                   log: Callable[[str], None] = print, measure_ceiling: bool = True, cases: list[Case] | None = None,
                   edge_cases: list[Case] | None = None, large_cases: list[Case] | None = None,
                   with_baselines: bool = True, only: set[str] | None = None,
                   cubin_cache: Path | None = None, gpu_checks: bool = True) -> Record:
    """Run ``exp`` and return its results record, unjudged (``labnotebook.build.policy`` decides what
    the rows mean for the run). Without a ``ceiling`` (the build's, measured on this GPU) the
    copy bandwidth is measured here, unless ``measure_ceiling`` is False (a run that only
    verifies). ``cases``, ``edge_cases`` and ``large_cases`` default to the declaration's;
    ``only`` names the kernels and baselines to run (all when None); ``gpu_checks`` False keeps
    every check on the CPU (under a sanitizer, whose report must hold our kernels alone)."""
    runner = Runner(exp, folder, root, log, cubin_cache)
    runner.with_baselines = with_baselines
    runner.only = only
    runner.gpu_checks = gpu_checks
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
                runner.untimed_phase = phase
                rows += runner.run_case(case, is_timed)
        info = describe(runner.cuda, runner.device)
    finally:
        try:
            runner.close()
        except runner.cuda.Error:
            pass
    return Record(experiment=exp.name, title=exp.title, gpu=info["gpu"], provenance=Provenance(**info),
                  ceiling=ceiling, kernels=runner.kernel_info, rows=rows, status="ok",
                  phases_s=runner.clock.rounded())

