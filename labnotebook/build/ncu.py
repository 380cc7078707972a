"""Nsight Compute: the command for the profile pass, and what its report says, per kernel.

The pass is one ncu session per GPU over every experiment to profile (see ``profiling.py``),
on a GPU of its own: a worker in ``--profile`` mode (``run/profiled.py``) under ``ncu``, which
launches every kernel and GPU baseline once at its profile case, each inside a numbered NVTX
range. ncu prints one CSV row per kernel launch (``--page raw``, base units) with the range it
ran in (``--nvtx``); the numbers give each kernel and baseline its launches.
"""

from __future__ import annotations

import csv
import math
import re
import subprocess
from pathlib import Path

from ..results.format import KernelProfile, Profile, ProfilePass
from ..run.compile import cuda_tool
from ..run.ncu_target import RANGE

# The metrics each field is read from, and every stall reason (``STALLS``): the pass collects
# these and no others. Whole sections (SpeedOfLight, MemoryWorkloadAnalysis, ...) collect dozens
# more and run their rules on every launch: 7 s more per experiment on an H100, 2026-11-23.
METRICS = {
    "duration_ns": "gpu__time_duration.sum",
    "dram_gbs": "dram__bytes.sum.per_second",
    "dram_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    # Two of the units memory_pct is the busiest of (DRAM is dram_pct): which one limits.
    "l1_pct": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l2_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_hit_pct": "l1tex__t_sector_hit_rate.pct",
    "l2_hit_pct": "lts__t_sector_hit_rate.pct",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "registers": "launch__registers_per_thread",
}
STALLS = r"smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
_STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
NOT_A_STALL = {"selected"}  # the cycles a warp issued: what the stalls are counted against
# ncu >= 2023 prints abbreviated units ("ns", "us", "byte/s", "Gbyte/s"); older ones spelled them
# out ("nsecond", "usecond", "byte/second"). --csv implies --print-units base: ns and byte/s.
_TIME_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
            "s": 1e9, "second": 1e9}
_RATE = re.compile(r"^([KMGT]?)byte/s(?:econd)?$")
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_RANGE = re.compile(re.escape(RANGE) + r"(\d+)")


def ncu_path() -> str | None:
    return cuda_tool("ncu")


def version() -> str | None:
    """ncu's version ("2025.3.1.0"), or None if it cannot say."""
    try:
        out = subprocess.run([ncu_path(), "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError, TypeError):
        return None
    m = re.search(r"Version (\S+)", out)
    return m.group(1) if m else None


def command(worker: list[str], report: Path) -> list[str]:
    """``worker`` (a ``--profile`` worker's command line) under ncu, its report going to ``report``."""
    metrics = ",".join([*METRICS.values(), f"regex:{STALLS}"])
    # --config-file off: no config.ncu-cfg in the project root or ~/.config may add options.
    # --clock-control none: the GPU keeps the clocks it runs at in the timed runs (locking them
    # needs rights the lent machines' tools were seen to work without; the default changed in 2026.1).
    return [ncu_path(), "--config-file", "off", "--target-processes", "all", "--profile-from-start", "off",
            "--clock-control", "none", "--nvtx", "--metrics", metrics,
            "--csv", "--page", "raw", "--print-units", "base", "--log-file", str(report), *worker]


def launches(report: str) -> dict[int, list[KernelProfile]]:
    """The kernels of ncu's CSV report by the number of the range they ran in, in launch order."""
    by_range: dict[int, list[KernelProfile]] = {}
    for row in _rows(report):
        if row["range"] is not None:
            by_range.setdefault(row["range"], []).append(row["profile"])
    return by_range


def parse(report: str | dict[int, list[KernelProfile]], launched: dict) -> ProfilePass:
    """One experiment's result from ncu's CSV report (or its ``launches``) and the worker's
    account of what it launched (``ranges``, ``cases``, ``skipped``: see ``run/profiled.py``)."""
    if "error" in launched:
        return ProfilePass("failed", launched["error"])
    by_range = launches(report) if isinstance(report, str) else report
    ranges = launched["ranges"]
    if ranges and not any(n in by_range for n in ranges.values()):
        words = _last_words(report) if isinstance(report, str) else "no kernel ran in its ranges"
        return ProfilePass("failed", f"ncu reported no kernel for any of {len(ranges)} profiled launches: {words}")
    profiles = {name: Profile(launched["cases"][name], launches=by_range[n]) if by_range.get(n)
                else Profile(launched["cases"][name], error="ncu saw no GPU kernel in its launch")
                for name, n in ranges.items()}
    for name, why in launched["skipped"].items():
        profiles[name] = Profile(launched["cases"].get(name, ""), error=why)
    return ProfilePass("ok", profiles=profiles)


def _rows(report: str) -> list[dict]:
    """ncu's CSV rows, in launch order: {"function": ..., "range": its number or None,
    "profile": KernelProfile}."""
    lines = [ln for ln in report.splitlines() if not ln.startswith("==")]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    table = list(csv.reader(lines[start:]))
    header, body = table[0], table[1:]
    units = body.pop(0) if body and body[0] and body[0][0] == "" else [""] * len(header)
    # --nvtx adds a column per thread and domain ("thread Domain:Push/Pop_Range:..."): each
    # value lists the ranges the launch ran in.
    nvtx = [h for h in header if "Range" in h or "NVTX" in h.upper()]
    out = []
    for values in body:
        if len(values) != len(header):
            continue
        cell = dict(zip(header, values))
        unit = dict(zip(header, units))
        number = next((int(m.group(1)) for h in nvtx if (m := _RANGE.search(cell[h]))), None)
        out.append({"key": (_int(cell.get("Process ID")), _int(cell.get("ID"))), "range": number,
                    "function": short_name(cell.get("Kernel Name", "")),
                    "profile": _profile(cell, unit)})
    out.sort(key=lambda r: r["key"])
    return out


def _profile(cell: dict, unit: dict) -> KernelProfile:
    fields, units = {}, {}
    for field, name in METRICS.items():
        if _number(cell.get(name)) is not None:
            fields[field], units[field] = _number(cell[name]), unit.get(name, "").strip()
    if "duration_ns" in fields:  # a unit we do not know leaves the field out rather than wrong
        scale = _TIME_NS.get(units["duration_ns"] or "ns")
        fields["duration_ns"] = fields["duration_ns"] * scale if scale else None
    if "dram_gbs" in fields:
        m = _RATE.match(units["dram_gbs"] or "byte/s")
        fields["dram_gbs"] = fields["dram_gbs"] * _PREFIX[m.group(1)] / 1e9 if m else None
    if "registers" in fields:
        fields["registers"] = int(fields["registers"])
    fields = {k: v for k, v in fields.items() if v is not None}
    stalls = {}
    for name, value in cell.items():
        m = _STALL.match(name)
        v = _number(value)
        if m and v is not None and m.group(1) not in NOT_A_STALL:
            stalls[m.group(1)] = v
    total = sum(stalls.values())
    shares = {k: round(v / total, 4) for k, v in sorted(stalls.items(), key=lambda kv: -kv[1]) if v > 0} if total else {}
    return KernelProfile(function=short_name(cell.get("Kernel Name", "")), grid=cell.get("Grid Size") or None,
                         block=cell.get("Block Size") or None, stalls=shares,
                         **{k: round(v, 4) if isinstance(v, float) else v for k, v in fields.items()})


def _number(text) -> float | None:
    """ncu's printed number ("1,234.5"); None for "n/a", "nan" and anything else not a number."""
    try:
        value = float(str(text).replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _int(text) -> int:
    n = _number(text)
    return int(n) if n is not None else 0


def short_name(name: str) -> str:
    """A demangled kernel name without its return type, arguments or template arguments:
    ``void at::native::f<float, 4>(int, float*)`` -> ``at::native::f<…>``."""
    name = name.strip().removeprefix("void ")
    depth, out = 0, []
    for ch in name:
        if ch == "(" and depth == 0:
            break
        if ch == "<":
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip()


def _last_words(report: str) -> str:
    errors = [ln for ln in report.splitlines() if ln.startswith("==ERROR==") or ln.startswith("==WARNING==")]
    return (errors[-1] if errors else (report.strip().splitlines() or ["no output"])[-1])[:300]
