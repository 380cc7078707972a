"""Compile a kernel file with nvcc into a cubin, keeping the compiler's resource report.

We call nvcc ourselves (rather than PyCUDA's SourceModule) so that error messages name the real
file and line, and so that the CPU-only tests compile exactly what the GPU run compiles.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import CompileError
from .protocol import INCLUDE_DIR, NVCC_FLAGS


_FUNCTION = re.compile(r"Compiling entry function '(\w+)'")
_INCLUDE = re.compile(rb'^\s*#\s*include\s*([<"])([^">]+)[">]', re.MULTILINE)
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


@dataclass
class Compiled:
    cubin: Path
    # Per entry function: registers, static shared memory, stack frame and spill bytes.
    resources: dict[str, dict[str, int]]


def cuda_tool(name: str) -> str | None:
    """A CUDA toolkit command (nvcc, compute-sanitizer, ncu): on PATH, else the toolkit's bin/."""
    fallback = Path("/usr/local/cuda/bin") / name
    return shutil.which(name) or (str(fallback) if fallback.exists() else None)


def nvcc_path() -> str | None:
    return cuda_tool("nvcc")


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


def target(arch: str, options: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The architecture to compile for and the other options: a kernel's own ``-arch=`` (sm_90a
    for Hopper-only instructions such as wgmma) replaces the GPU's."""
    own = [o for o in options if o.startswith("-arch=")]
    return (own[-1].split("=", 1)[1] if own else arch), tuple(o for o in options if not o.startswith("-arch="))


def included(path: Path, folders: list[Path]) -> list[Path]:
    """The files ``path`` includes that nvcc finds in ``folders`` (its ``-I`` folders, after
    ``path``'s own for a quoted name), in order; system headers are not found there."""
    out = []
    for quote, name in _INCLUDE.findall(path.read_bytes()):
        where = ([path.parent] if quote == b'"' else []) + folders
        hit = next((d / name.decode() for d in where if (d / name.decode()).is_file()), None)
        if hit:
            out.append(hit)
    return out


def headers(source: Path, folders: list[Path]) -> list[Path]:
    """Every file of ``folders`` that ``source`` includes, transitively, once each, in order."""
    seen: list[Path] = []
    todo = included(source, folders)
    while todo:
        path = todo.pop(0)
        if path not in seen:
            seen.append(path)
            todo += included(path, folders)
    return seen


def _cache_key(source: Path, arch: str, flags: tuple[str, ...], nvcc: str, include: Path) -> str:
    """Everything that decides the cubin: nvcc itself, the flags, the file and the headers it
    includes (only those: a header added beside a kernel that does not include it leaves the
    kernel's cubin where it is)."""
    h = hashlib.sha256("\0".join([nvcc, str(Path(nvcc).stat().st_mtime_ns), arch, *flags]).encode())
    for p in [source, *headers(source, [source.parent, include])]:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:24]


def compile_cubin(source: Path, out_dir: Path, arch: str = "sm_90", options: tuple[str, ...] = (),
                  root: Path | None = None, cache: Path | None = None, include: Path | None = None,
                  line_info: bool = True) -> Compiled:
    """Compile ``source`` to ``out_dir/<stem>.cubin`` (to ``<stem>.ptx`` for a virtual ``arch``,
    ``compute_86``: what the driver compiles for the GPU at load time, as it does for a program
    built for an older GPU). Raises CompileError with nvcc's message,
    paths shown relative to ``root`` so that no machine path reaches a user or a results file.
    With ``root``, nvcc runs there on relative paths, so that the code (``__FILE__`` in an assert,
    say) is the same from any checkout. With ``cache`` (a folder shared by builds and their workers),
    a file compiled once with the same nvcc, flags and headers is not compiled again. Without
    ``line_info`` the cubin has no debug sections (the same code: machine.py keys on it)."""
    arch, options = target(arch, options)
    nvcc = nvcc_path()
    if nvcc is None:
        raise CompileError(f"{source.name}: nvcc not found (install the CUDA toolkit or put nvcc on PATH)")
    out_dir.mkdir(parents=True, exist_ok=True)
    ptx = arch.startswith("compute_")
    cubin = out_dir / f"{source.stem}.{'ptx' if ptx else 'cubin'}"
    include = include or INCLUDE_DIR
    # PTX passes no ptxas: there is no resource report to ask for.
    flags = tuple(f for f in NVCC_FLAGS if (line_info or f != "-lineinfo") and not (ptx and f.startswith("-Xptxas"))) \
        + options
    key = _cache_key(source, arch, flags, nvcc, include) if cache else None
    if key and (cache / f"{key}.json").exists():
        shutil.copyfile(cache / f"{key}.cubin", cubin)
        return Compiled(cubin=cubin, resources=json.loads((cache / f"{key}.json").read_text()))
    where = (lambda p: os.path.relpath(p, root)) if root is not None else str
    cmd = [nvcc, "-ptx" if ptx else "-cubin", f"-arch={arch}", *flags, "-I", where(source.parent),
           "-I", where(include), "-o", str(cubin.absolute()), where(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
    report = proc.stdout + proc.stderr
    if root is not None:
        report = report.replace(str(root.resolve()) + "/", "").replace(str(root) + "/", "")
    if proc.returncode != 0:
        errors = ([ln for ln in report.splitlines() if "error" in ln] or report.splitlines()[-3:]
                  or [f"{source.name}: exit status {proc.returncode}, no output (killed?)"])
        raise CompileError(f"nvcc failed: {errors[0].strip()}", detail=report.strip())
    compiled = Compiled(cubin=cubin, resources=parse_ptxas(report))
    if key:  # the cubin first, the report last: a reader that sees the report finds the cubin
        cache.mkdir(parents=True, exist_ok=True)
        tmp = cache / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        shutil.copyfile(cubin, tmp)
        tmp.replace(cache / f"{key}.cubin")
        tmp.write_text(json.dumps(compiled.resources))
        tmp.replace(cache / f"{key}.json")
    return compiled
