"""Run an experiment's kernels under compute-sanitizer and say, per kernel and tool, what it found.

Each tool gets its own worker process in ``--verify-only`` mode: the experiment's edge cases,
verified but not timed, no baselines, no ceiling. Errors are attributed to a kernel by the
``at <function>+0x...`` frames the sanitizer prints.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# memcheck, synccheck and initcheck end with "ERROR SUMMARY: N errors"; racecheck with
# "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error")
_FRAME = re.compile(r"at (?:void )?(\w+)(?:\(.*?\))?\+0x")


def sanitizer_path() -> str | None:
    fallback = Path("/usr/local/cuda/bin/compute-sanitizer")
    return shutil.which("compute-sanitizer") or (str(fallback) if fallback.exists() else None)


def parse(output: str, functions: dict[str, str]) -> dict[str, dict]:
    """``{kernel: {"errors": n, "first": message}}`` from one tool's output; ``functions`` maps
    CUDA function names to kernel names. Errors no frame names go to every kernel."""
    found = {k: {"errors": 0, "first": None} for k in functions.values()}
    m = _SUMMARY.search(output)
    total = int(m.group(1) or m.group(2)) if m else None
    lines = [ln.removeprefix("=========").strip() for ln in output.splitlines() if ln.startswith("=========")]
    attributed = 0
    for i, line in enumerate(lines):
        f = _FRAME.search(line)
        if f and f.group(1) in functions:
            entry = found[functions[f.group(1)]]
            entry["errors"] += 1
            attributed += 1
            entry["first"] = entry["first"] or (lines[i - 1] if i else line)
    if total is None:
        for entry in found.values():
            entry.update(errors=None, first="the sanitizer did not finish: " + (lines[-1] if lines else "no output"))
    elif total and not attributed:
        for entry in found.values():
            entry.update(errors=total, first=next((ln for ln in lines if ln), "errors"))
    return found


def sanitize(root: Path, name: str, functions: dict[str, str], time_limit: int,
             package_env: dict[str, str]) -> dict[str, dict[str, dict]]:
    """``{kernel: {tool: {"errors": n, "first": message}}}`` for every tool in TOOLS."""
    tool_path = sanitizer_path()
    report: dict[str, dict[str, dict]] = {k: {} for k in functions.values()}
    for tool in TOOLS:
        with tempfile.TemporaryDirectory(prefix="notebook-sanitize-") as tmp:
            cmd = [tool_path, "--tool", tool, "--print-limit", "20", sys.executable, "-m",
                   "labnotebook.run.worker", name, "--root", str(root), "--out", str(Path(tmp) / "r.json"),
                   "--verify-only"]
            try:
                proc = subprocess.run(cmd, cwd=root, env={**os.environ, **package_env}, capture_output=True,
                                      text=True, timeout=time_limit)
                output = proc.stdout + proc.stderr
            except subprocess.TimeoutExpired:
                output = f"========= timed out after {time_limit} s"
        for kernel, entry in parse(output, functions).items():
            report[kernel][tool] = entry
    return report
