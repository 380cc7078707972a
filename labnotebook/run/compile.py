"""Compile a kernel file with nvcc into a cubin, keeping the compiler's resource report.

We call nvcc ourselves (rather than PyCUDA's SourceModule) so that error messages name the real
file and line, and so that the CPU-only tests compile exactly what the GPU run compiles.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import CompileError

NVCC_FLAGS = ("-std=c++17", "-O3", "-lineinfo", "-Xptxas=-v")

_FUNCTION = re.compile(r"Compiling entry function '(\w+)'")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


@dataclass
class Compiled:
    cubin: Path
    # Per entry function: registers, static shared memory, stack frame and spill bytes.
    resources: dict[str, dict[str, int]]


def nvcc_path() -> str | None:
    return shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)


def parse_ptxas(report: str) -> dict[str, dict[str, int]]:
    """Read ``ptxas -v`` output into ``{function: {registers, smem_bytes, stack_bytes, spill_*}}``."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in report.splitlines():
        if m := _FUNCTION.search(line):
            current = out.setdefault(m.group(1), {})
        elif current is not None:
            if m := _STACK.search(line):
                current.update(stack_bytes=int(m[1]), spill_store_bytes=int(m[2]),
                               spill_load_bytes=int(m[3]))
            if m := _USED.search(line):
                current["registers"] = int(m[1])
                s = _SMEM.search(line)
                current["smem_bytes"] = int(s[1]) if s else 0
    return out


def compile_cubin(source: Path, out_dir: Path, arch: str = "sm_90",
                  options: tuple[str, ...] = (), root: Path | None = None) -> Compiled:
    """Compile ``source`` to ``out_dir/<stem>.cubin``. Raises CompileError with nvcc's message,
    paths shown relative to ``root`` so that no machine path reaches a user or a results file."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise CompileError(f"{source.name}: nvcc not found (install the CUDA toolkit or put nvcc on PATH)")
    out_dir.mkdir(parents=True, exist_ok=True)
    cubin = out_dir / f"{source.stem}.cubin"
    cmd = [nvcc, "-cubin", f"-arch={arch}", *NVCC_FLAGS, *options,
           "-I", str(source.parent), "-o", str(cubin), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    report = proc.stdout + proc.stderr
    if root is not None:
        report = report.replace(str(root.resolve()) + "/", "").replace(str(root) + "/", "")
    if proc.returncode != 0:
        errors = [ln for ln in report.splitlines() if "error" in ln] or report.splitlines()[-3:]
        raise CompileError(f"nvcc failed: {errors[0].strip()}", detail=report.strip())
    return Compiled(cubin=cubin, resources=parse_ptxas(report))
