"""compute-sanitizer: the command for one tool, and what its output says, per kernel.

Each tool runs as its own job (see ``sanitizing.py``): a worker in ``--verify-only`` mode under the
tool, at the experiment's edge cases, verified but not timed, no baselines. Errors are
attributed to a kernel by the ``at <function>+0x...`` frames the sanitizer prints.
"""

from __future__ import annotations

import re

from typing import Iterable

from ..results.format import KernelInfo, LaunchShape, Verdict
from ..run.compile import cuda_tool

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# memcheck, synccheck and initcheck end with "ERROR SUMMARY: N errors"; racecheck with
# "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error")
_FRAME = re.compile(r"at (?:void )?(\w+)(?:\(.*?\))?\+0x")


# racecheck looks for hazards in shared memory and nowhere else.
NO_SHARED_MEMORY = Verdict(0, "no shared memory, static or dynamic: nothing for racecheck to check", checked=False)


def applies(tool: str, info: KernelInfo, launches: Iterable[LaunchShape]) -> bool:
    """Whether ``tool`` has anything to check in a kernel built as ``info`` and launched as
    ``launches``: racecheck only where it has shared memory (or where ptxas did not say)."""
    if tool != "racecheck":
        return True
    return info.resources is None or info.resources.smem_bytes > 0 or any(s.shared_bytes for s in launches)


def sanitizer_path() -> str | None:
    return cuda_tool("compute-sanitizer")


def command(tool: str, worker: list[str]) -> list[str]:
    """``worker`` (a worker's command line) under one tool."""
    return [sanitizer_path(), "--tool", tool, "--print-limit", "20", *worker]


def parse(output: str, functions: dict[str, str]) -> dict[str, Verdict]:
    """``{kernel: Verdict}`` from one tool's output; ``functions`` maps CUDA function names to
    kernel names. A kernel is clean only when every error the summary counts is accounted for:
    errors that no frame names (past ``--print-limit``, or in code no frame ties to a kernel)
    leave every kernel without one of its own unfinished (``errors`` None), never clean."""
    m = _SUMMARY.search(output)
    lines = [ln.removeprefix("=========").strip() for ln in output.splitlines() if ln.startswith("=========")]
    if m is None:
        why = "the sanitizer did not finish: " + (lines[-1] if lines else "no output")
        return {k: Verdict(None, why) for k in functions.values()}
    total = int(m.group(1) or m.group(2))
    errors = {k: 0 for k in functions.values()}
    first: dict[str, str | None] = {k: None for k in functions.values()}
    for i, line in enumerate(lines):
        f = _FRAME.search(line)
        if f and f.group(1) in functions:
            kernel = functions[f.group(1)]
            errors[kernel] += 1
            first[kernel] = first[kernel] or (lines[i - 1] if i else line)
    if total == 0:
        return {k: Verdict(0) for k in errors}
    if not any(errors.values()):  # no frame names a kernel: the errors count against every one
        message = next((ln for ln in lines if ln), "errors")
        return {k: Verdict(total, message) for k in errors}
    unaccounted = total - sum(errors.values())
    return {k: Verdict(n, first[k]) if n or unaccounted <= 0
            else Verdict(None, f"{unaccounted} errors the output ties to no kernel: this one may have some")
            for k, n in errors.items()}
