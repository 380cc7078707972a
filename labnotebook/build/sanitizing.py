"""The compute-sanitizer pass over a verified run: one untimed job per tool (racecheck, one per
kernel), each a worker in ``--verify-only --paths-cover`` mode under the tool, which runs each
kernel at its own ``Experiment.sanitizer_cases`` (``sanitizer.py`` has the command and reads its
output); once the last is back, the tools' verdicts in the record, and the pass's seconds in its
phases and each job's in ``sanitizer_s``."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

from ..declare.experiment import Experiment
from ..results.format import Record, Verdict
from ..results.rows import KernelRow
from ..results.store import read_json
from .sanitizer import NO_SHARED_MEMORY, TOOLS, applies, command, parse
from .schedule import Job
from .workers import Workers

Report = dict[str, dict[str, Verdict]]  # {kernel: {tool: verdict}}


class Sanitizing:
    """The pass, for each verified run; ``enabled`` off (``--no-sanitize``, or no
    compute-sanitizer on this machine): no tool runs and the record has no sanitizer report."""

    def __init__(self, workers: Workers, enabled: bool):
        self.workers, self.enabled = workers, enabled

    def jobs(self, name: str, exp: Experiment, record: Record, run_estimate_s: float,
             then: Callable[[], list[Job]], previous: Record | None = None) -> list[Job]:
        """One job per tool over ``record``'s CUDA kernels, and one per kernel for racecheck (by far
        the slowest tool: its kernels then go side by side, over every GPU of a node, and the
        build says what each cost), each estimated at what it took in the ``previous`` record
        (``sanitizer_s``), else at a quarter of the timed run's ``run_estimate_s``, so that the
        longest start first; ``then()`` once the last is back (at once, where no tool has
        anything to check), its follow-ups theirs."""
        functions = {info.function: k for k, info in record.kernels.items() if info.language == "cuda"}
        # Python-DSL kernels only: no sanitizer frame would name them, so the tools could tell nothing.
        tools = TOOLS if self.enabled and functions else ()
        report: Report = {k: {} for k in functions.values()}
        # Each tool over the kernels it has something to check in (racecheck: shared memory);
        # the others get a verdict that says why not, and a tool with none left does not run.
        units: dict[str, tuple[str, dict[str, str]]] = {}  # {label: (tool, {function: kernel})}
        for tool in tools:
            scope = {f: k for f, k in functions.items()
                     if applies(tool, record.kernels[k], (r.launch for r in record.rows
                                                          if isinstance(r, KernelRow) and r.name == k and r.launch))}
            for k in set(functions.values()) - set(scope.values()):
                report[k][tool] = NO_SHARED_MEMORY
            if tool == "racecheck":
                units.update({f"{tool} {k}": (tool, {f: k}) for f, k in scope.items()})
            elif scope:
                units[tool] = (tool, scope)
        left = set(units)
        finished: dict[str, Job] = {}  # each unit's job, for when it ran (phases_s)

        def done(unit: str, job: Job | None = None) -> list[Job]:
            left.discard(unit)
            if job:
                finished[unit] = job
            if left:
                return []
            if finished:  # the jobs run side by side: the pass took from the first start to the last end
                jobs = finished.values()
                record.phases_s["sanitizer"] = round(max(j.ended for j in jobs) - min(j.started for j in jobs), 2)
                record.sanitizer_s = {u: round(j.ended - j.started, 2) for u, j in finished.items()}
                each = ", ".join(f"{u} {s:.1f} s" for u, s in record.sanitizer_s.items())
                self.workers.console.print(f"[dim]{name}: sanitizer {record.phases_s['sanitizer']:.1f} s ({each})[/]")
            if tools:
                record.sanitizer = {k: {t: report[k][t] for t in TOOLS} for k in report}
            return then()

        last = (previous.sanitizer_s if previous else None) or {}
        jobs = [self.job(name, exp, unit, tool, scope, len(functions), report, done, last.get(unit, run_estimate_s / 4))
                for unit, (tool, scope) in units.items()]
        return jobs or done("")

    def job(self, name: str, exp: Experiment, unit: str, tool: str, functions: dict[str, str], of: int,
            report: Report, done: Callable[[str, Job], list[Job]], estimate_s: float) -> Job:
        """``tool`` over the kernels ``functions`` names ({CUDA function: kernel}), ``of`` the
        experiment's CUDA kernels: the worker runs those alone where they are fewer. ``unit``
        names the job to ``done``."""
        only = [] if len(functions) == of else ["--kernel", *functions.values()]

        def run(g: int):
            with tempfile.TemporaryDirectory(prefix="notebook-sanitize-") as tmp:
                out = Path(tmp) / "r.json"
                # each kernel at the edge cases that together take every path it takes (all, where none are declared)
                worker = self.workers.command(name, ["--verify-only", "--paths-cover", "--out", str(out), *only])
                status, lines = self.workers.run_quietly(command(tool, worker), g, exp.time_limit_s)
                data = read_json(out) if status is not None and out.exists() else {}
            if status is None:
                return {k: Verdict(None, f"timed out after {exp.time_limit_s} s") for k in functions.values()}
            if "format" not in data:  # the worker itself failed under the tool: nothing it ran can be called clean
                last = next((ln for ln in reversed(lines) if ln.strip() and not ln.startswith("=")), "no output")
                return {k: Verdict(None, f"the worker did not finish under {tool}: {last}")
                        for k in functions.values()}
            verdicts = parse("\n".join(lines), functions)
            # A kernel that launched at none of its cases (Unsupported at each) had nothing checked.
            launched = {r["name"] for r in data["rows"] if r["status"] != "skipped"}
            return {k: v if k in launched or v.errors != 0 else
                    Verdict(0, "it launched at none of the edge cases the tool ran", checked=False)
                    for k, v in verdicts.items()}

        def then(result):
            verdicts = result if isinstance(result, dict) else \
                {k: Verdict(None, f"the sanitizer job failed: {result}") for k in functions.values()}
            for kernel, v in verdicts.items():
                report[kernel][tool] = v
            return done(unit, job)
        job = Job(f"{name}: {unit}", run, timed=False, estimate_s=estimate_s, then=then)
        return job
