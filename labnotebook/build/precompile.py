"""Every kernel a build runs, compiled at its start, before its first timed run.

Each experiment's kernels are compiled twice: by its timed run, with line tables, before it times
anything; and by the build, without them, for the machine-code key it stamps on the record
(``results/machine.py``), between the run and its sanitizer pass. On an H100 both together were
about 27 s of a 343 s refresh, each in the GPU's way. Here both go into the project's cubin cache
on every core of the host, while each GPU's fork server imports and each GPU measures its copy
ceiling (on the GPU alone: the host's load does not reach it). Timed runs wait until it is done,
for nvcc beside a timed run would crowd the host (CPU baselines, copies from pageable memory, the
phase programs' fresh processes), then find every cubin in the cache and every key made.

A kernel that does not compile is left to its run, which names it; nothing here fails a build.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..declare.experiment import Kernel
from ..errors import CompileError
from ..results import machine
from ..results.freshness import CurrentKeys
from ..results.store import CEILINGS
from ..run.compile import compile_cubin, nvcc_path
from .plan import Due


class Precompile:
    """The compiles for ``dues`` (in the order their runs will start) and their keys, for a GPU of
    compute ``capability``, with the ceilings' key first where ``ceilings``; nothing where the
    capability is unknown or there is no nvcc (each run compiles its own, as before)."""

    def __init__(self, root: Path, keys: CurrentKeys, cache: Path, dues: list[Due],
                 capability: tuple[int, int] | None, ceilings: bool = False, cores: int | None = None):
        self.seconds = 0.0  # how long it took, once done
        self._done = threading.Event()
        if capability is None or nvcc_path() is None or not (dues or ceilings):
            self._done.set()
            return
        arch = machine.arch_of("{}.{}".format(*capability))
        # Not an experiment this GPU cannot run: its run compiles nothing.
        dues = [d for d in dues if tuple(d.exp.min_compute_capability or (0, 0)) <= tuple(capability)]
        runs = [(keys.folders[d.name] / k.source, k.nvcc_options)
                for d in dues for k in d.exp.kernels if isinstance(k, Kernel)]
        named = ([CEILINGS] if ceilings else []) + [d.name for d in dues]
        cores = cores or os.cpu_count() or 1
        threading.Thread(target=self._compile, args=(root, keys, cache, arch, runs, named, cores),
                         name="precompile", daemon=True).start()

    def _compile(self, root: Path, keys: CurrentKeys, cache: Path, arch: str,
                 runs: list[tuple[Path, tuple[str, ...]]], named: list[str], cores: int) -> None:
        t0 = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory(prefix="notebook-precompile-") as tmp:
                def run_cubin(i: int) -> None:
                    source, options = runs[i]
                    try:  # as Runner.compile does it, into a folder of its own
                        compile_cubin(source, Path(tmp) / str(i), arch, options, root, cache)
                    except (CompileError, OSError):
                        pass  # its run compiles it again and names what failed

                # machine_key compiles an experiment's files on threads of its own (8 at most):
                # a few experiments at a time beside the runs' files keep every core busy.
                with ThreadPoolExecutor(cores) as files, ThreadPoolExecutor(max(1, cores // 8)) as experiments:
                    for name in named:  # one that raises is made again where the record is stamped
                        experiments.submit(keys.machine, name, arch)
                    list(files.map(run_cubin, range(len(runs))))
        finally:
            self.seconds = time.perf_counter() - t0
            self._done.set()

    def wait(self) -> float:
        """Block until every cubin is in the cache and every key made; the seconds it waited."""
        t0 = time.perf_counter()
        self._done.wait()
        return time.perf_counter() - t0
