"""Splitting an experiment's timed run by cases over several GPUs of a node, and merging the
parts' records into the experiment's one.

Which runs are split (``count``): only on a node of several GPUs. A node that takes its jobs
longest first ends by its share of the work (the build's total estimate over its GPUs) plus at
most the longest job (Graham's bound for list scheduling); to keep that within half a share
more, a run whose estimate (its last refresh's ``wall_s``, as the scheduler's, which counts its
sanitizer and profile passes too, though only the timed run is split) is more than half a share
is split into parts of about half a share each: ``ceil(estimate / half a share)`` of them, at
most one per GPU and one per timed case, and none under ``PART_MIN_S`` (each part pays a
worker's start-up and compilation again). A small experiment, or a build of one GPU, keeps its
run whole, as does a filtered run (``--kernel``, ``--case``) and the large pass (``runs.py``).

How its cases are divided (``divide``): the main and edge cases are weighed by what they cost
last time (``weights``), dealt heaviest first to the lightest part, and each part runs its
cases in the declaration's order; the parts are in the order of their first cases.

Merging (``merge``): one record, its rows in the declaration's order; its ``phases_s`` and
``wall_s`` the parts' added up (the GPU-seconds the run cost, so that a build's sum of wall
times stays comparable with one on a single GPU); its peak host memory the largest part's; its
``provenance`` and ``ceiling`` the first part's; and ``Record.split`` says which GPU ran which
cases, with that GPU's ceiling, which its rows' "% of copy ceiling" is of.
"""

from __future__ import annotations

import dataclasses
import math

from ..declare.experiment import Experiment, size
from ..results.format import Record, SplitPart
from ..results.rows import Row, RunRow

PART_MIN_S = 10.0  # the least estimate a part is given: a worker's start-up and compilation are seconds
FLUSH_MS = 0.1  # what the timer's L2 flush adds to a repetition (256 MiB cleared: ~0.1 ms on an H100)


def count(estimate_s: float, total_s: float, gpus: int, timed_cases: int) -> int:
    """How many parts a run estimated at ``estimate_s`` is split into, in a build estimated at
    ``total_s`` over ``gpus`` GPUs, where it has ``timed_cases`` main cases; 1: it stays whole."""
    half_share = total_s / gpus / 2
    return max(1, min(gpus, timed_cases, math.ceil(estimate_s / half_share), int(estimate_s // PART_MIN_S)))


def weights(exp: Experiment, previous: Record | None) -> dict[str, float]:
    """Each main and edge case's weight, in the declaration's order: the seconds its rows took in
    ``previous`` (each row's repetitions of its median and a flush, and its verification) where
    that record has rows at every case, else its size (the product of its parameters)."""
    cases = exp.cases + exp.edge_cases
    if previous is None or {c.name for c in cases} - {r.case for r in previous.rows}:
        return {c.name: float(size(c)) for c in cases}
    seconds = dict.fromkeys((c.name for c in cases), 0.0)
    for row in previous.rows:
        if row.case in seconds:
            seconds[row.case] += _seconds(row)
    return seconds


def _seconds(row: Row) -> float:
    timing = row.time.reps * (row.time.median_ms + FLUSH_MS) / 1e3 if row.time else 0.0
    verifying = row.verify_s or 0.0 if isinstance(row, RunRow) else 0.0
    return timing + verifying


def divide(exp: Experiment, previous: Record | None, parts: int) -> list[list[str]]:
    """``exp``'s main and edge cases dealt into ``parts`` parts of about equal weight (at most
    as many as it has cases): the heaviest first, each to the part with the least weight yet
    (the fewest cases among equals, so that none is left empty)."""
    weight = weights(exp, previous)
    rank = {name: i for i, name in enumerate(weight)}
    dealt: list[list[str]] = [[] for _ in range(parts)]
    load = [0.0] * parts
    for name in sorted(weight, key=lambda n: -weight[n]):
        i = min(range(parts), key=lambda i: (load[i], len(dealt[i])))
        dealt[i].append(name)
        load[i] += weight[name]
    ordered = [sorted(d, key=rank.get) for d in dealt]
    return sorted(ordered, key=lambda d: rank[d[0]])


def merge(exp: Experiment, parts: list[tuple[list[str], Record]]) -> Record:
    """The run's one record from its parts' (each with the cases it was given), in their order."""
    rank = {c.name: i for i, c in enumerate(exp.all_cases())}
    records = [record for _, record in parts]
    phases: dict[str, float] = {}
    for record in records:
        for phase, seconds in record.phases_s.items():
            phases[phase] = phases.get(phase, 0.0) + seconds
    peaks = [r.peak_host_bytes for r in records if r.peak_host_bytes is not None]
    return dataclasses.replace(
        records[0],
        rows=sorted((row for r in records for row in r.rows), key=lambda row: rank[row.case]),
        status="ok" if all(r.status == "ok" for r in records) else "failed",
        problems=[p for r in records for p in r.problems],
        phases_s={phase: round(seconds, 2) for phase, seconds in phases.items()},
        wall_s=round(sum(r.wall_s for r in records), 2),
        peak_host_bytes=max(peaks, default=None),
        split=[SplitPart(r.provenance.device_index, cases, r.ceiling, r.wall_s) for cases, r in parts])
