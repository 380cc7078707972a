"""What a run's rows mean for the run: the failure policy, in one place.

The worker measures and this module judges. A run fails when any row failed (a wrong answer, an
error in a launch, a library call or the experiment's own host code), when a kernel declared as
an expected failure passed everywhere (sphinx-gallery's rule: it must fail), or when the
compute-sanitizer found anything in a kernel that is not an expected failure. A failed run never
replaces the last good results (``build/records.py`` writes ``<gpu>.failure.json`` instead), and
neither does a run that could only skip, for want of a module or toolchain on this machine, what
the last results verified (unless forced).
"""

from __future__ import annotations

from dataclasses import replace

from ..results.format import Record, Verdict
from ..results.rows import RunRow
from ..declare.experiment import Experiment


def judge(exp: Experiment, record: Record) -> Record:
    """Mark expected failures ``xfail`` and set the record's status and problems. That an
    expected failure must fail somewhere is the main pass's rule: the large pass's few cases of
    random inputs need not be the ones it fails at."""
    problems = []
    for k in exp.kernels:
        if not k.expected_failure:
            continue
        record.rows = [replace(r, status="xfail") if r.kind == "kernel" and r.name == k.name and r.status == "failed"
                       else r for r in record.rows]
        mine = [r for r in record.rows if r.kind == "kernel" and r.name == k.name]
        if mine and record.part == "main" and not any(r.status == "xfail" for r in mine):
            problems.append(f"kernel {k.name} is declared to fail ({k.expected_failure}) but passed every case")
    problems += [f"{r.name} @ {r.case}: {r.error}" for r in record.rows if r.status == "failed"]
    record.problems = problems
    record.status = "failed" if problems else "ok"
    return record


def lost(previous: Record | None, record: Record) -> list[str]:
    """What the last results verified that this run could only skip as unavailable here (a
    missing module or toolchain): replacing them would trade numbers for "not run"."""
    if previous is None:
        return []
    verified = {(r.name, r.case) for r in previous.rows if r.status in ("ok", "xfail")}
    return sorted({f"{r.name} is unavailable on this machine ({r.error}) but was verified in the last results"
                   for r in record.rows if isinstance(r, RunRow) and r.unavailable and (r.name, r.case) in verified})


def sanitizer_findings(exp: Experiment, report: dict[str, dict[str, Verdict]]) -> list[str]:
    """One line per kernel and tool that found errors (or did not finish), expected failures
    aside: their wrong answers are the point, and may well read memory they should not."""
    expected = {k.name for k in exp.kernels if k.expected_failure}
    return [f"{kernel}: {tool}: {v.errors if v.errors is not None else 'unfinished'} errors: {v.first}"
            for kernel, tools in report.items() if kernel not in expected
            for tool, v in tools.items() if v.errors != 0]


def summary_reason(problems: list[str]) -> str:
    """The first problem, and how many more there were."""
    return problems[0] + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
