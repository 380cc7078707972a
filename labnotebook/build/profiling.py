"""The Nsight Compute pass, after the runs: one ncu session per GPU over its share of every
experiment just written (and every fresh one whose profile is stale or missing), each GPU to itself so that
no other work shows in its counters; each profile is added to its record as it comes back.
``ncu.py`` has ncu's command line and reads its report."""

from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ..declare.discover import load
from ..declare.experiment import Experiment
from ..results.format import ProfilePass, Record
from ..results.freshness import CurrentKeys
from ..results.store import read_json
from ..run.device import git_commit
from . import ncu
from .records import Recorder
from .schedule import Job
from .workers import Workers


@dataclass
class Unprofiled:
    """A record waiting for an ncu session: just written, or fresh with a stale profile."""
    record: Record
    exp: Experiment | None  # loaded when the profile's time limit is asked for, if not yet

    @property
    def estimate_s(self) -> float:
        return self.record.phases_s.get("profile", 10.0)


class Profiling:
    """The records waiting for a profile, and the jobs that profile them on ``gpus``; with no
    ``ncu_version`` (no ncu on this machine) each profile is recorded as skipped."""

    def __init__(self, workers: Workers, recorder: Recorder, keys: CurrentKeys, console: Console, gpus: list[int],
                 ncu_version: str | None):
        self.workers, self.recorder, self.keys, self.console = workers, recorder, keys, console
        self.gpus, self.ncu_version = gpus, ncu_version
        self.waiting: dict[str, Unprofiled] = {}

    def later(self, name: str, record: Record, exp: Experiment | None = None) -> None:
        """Queue ``record`` (written, or fresh with a stale profile) for an ncu session."""
        self.waiting[name] = Unprofiled(record, exp)

    def jobs(self) -> list[Job]:
        """One ncu session per GPU, the experiments dealt out longest first (by the last
        profile's seconds) to the GPU with the least so far, so that the sessions end together.
        The GPUs of a build are of one model; which of them timed a run does not matter here."""
        load = {g: 0.0 for g in self.gpus}
        chunks: dict[int, list[str]] = {g: [] for g in self.gpus}
        for name, waiting in sorted(self.waiting.items(), key=lambda kv: -kv[1].estimate_s):
            g = min(load, key=load.get)
            chunks[g].append(name)
            load[g] += waiting.estimate_s
        return [self.job(names, g) for g, names in chunks.items() if names]

    def job(self, names: list[str], gpu: int) -> Job:
        """ncu over a ``--profile`` worker for ``names``. A profile that fails is recorded as failed
        with the reason; it never fails the run: it explains the numbers, it does not make them."""
        def run(g: int) -> dict[str, tuple[ProfilePass, float]]:
            if self.ncu_version is None:
                skipped = ProfilePass("skipped", "Nsight Compute (ncu) was not found on the machine that ran this")
                return {name: (skipped, 0.0) for name in names}
            return self.session(names, g)

        def then(result):
            if isinstance(result, BaseException):
                failed = ProfilePass("failed", f"the profile job failed: {type(result).__name__}: {result}")
                result = {name: (failed, 0.0) for name in names}
            for name, (profile, seconds) in result.items():
                self.add(name, profile, seconds, gpu)
            return []
        # Timed, so that it has its GPU to itself: ncu's counters are the GPU's, not the process's.
        return Job(f"profile: {', '.join(names)}", run, timed=True, gpu=gpu,
                   estimate_s=sum(self.waiting[n].estimate_s for n in names), then=then)

    def session(self, names: list[str], gpu: int) -> dict[str, tuple[ProfilePass, float]]:
        """Profile ``names`` in one ncu session, and again in a new one from where a session
        died (the experiment it died in is failed, with its last words). Each experiment's
        seconds are its own part plus an equal share of its session's start-up."""
        results: dict[str, tuple[ProfilePass, float]] = {}
        left = list(names)
        while left:
            limit = sum(self.time_limit(n) for n in left)
            t0 = time.perf_counter()
            with tempfile.TemporaryDirectory(prefix="notebook-profile-") as tmp:
                report = Path(tmp) / "ncu.csv"
                worker = self.workers.command(left, ["--profile", "--out", tmp])
                # LC_ALL=C: ncu formats numbers by locale ("1.234,5" under de_DE); the parser reads "1,234.5".
                status, lines = self.workers.run_quietly(ncu.command(worker, report), gpu, limit, {"LC_ALL": "C"})
                text = report.read_text(errors="replace") if report.exists() else ""
                accounts = {n: read_json(Path(tmp) / f"{n}.json") for n in left if (Path(tmp) / f"{n}.json").exists()}
            wall = time.perf_counter() - t0
            by_range = ncu.launches(text)
            done = [n for n in left if n in accounts]
            died = len(done) < len(left)  # in left[len(done)], which bears its share too
            startup = max(0.0, wall - sum(a["seconds"] for a in accounts.values()))
            share = startup / max(1, len(done) + died)
            for n in done:
                results[n] = (ncu.parse(by_range, accounts[n]), round(accounts[n]["seconds"] + share, 2))
                costliest = sorted(accounts[n].get("seconds_by", {}).items(), key=lambda kv: -kv[1])[:4]
                self.console.print(f"[dim]{escape(n)}: profile {results[n][1]:.1f} s ("
                                   + escape(", ".join(f"{k} {v:.1f} s" for k, v in costliest)) + ")[/]")
            left = left[len(done):]
            if died:
                why = f"timed out after {limit:.0f} s under ncu" if status is None else \
                    "the worker did not finish under ncu: " + \
                    next((ln for ln in reversed(lines + text.splitlines()) if ln.strip()), "no output")
                results[left.pop(0)] = (ProfilePass("failed", why), round(share, 2))
        return results

    def add(self, name: str, result: ProfilePass, seconds: float, gpu: int) -> None:
        """Put the profile in its record, with its cost, and write the record again."""
        record = self.waiting[name].record
        taken = datetime.now(timezone.utc).isoformat(timespec="seconds")
        record.profile = dataclasses.replace(result, sources=self.keys.profiler.files_by(record.key_rule),
                                             date=taken, git_commit=git_commit(self.workers.root))
        if self.ncu_version and record.provenance:
            record.provenance = dataclasses.replace(record.provenance, ncu=self.ncu_version)
        if result.status != "ok":
            self.console.print(f"[yellow]{name}: profile {result.status}: {escape(result.reason)}[/]")
        for kernel, why in unprofiled(record).items():
            self.console.print(f"[yellow]{name}: {kernel} not profiled: {escape(why)}[/]")
        if record.wall_s is not None:
            record.wall_s = round(record.wall_s - record.phases_s.get("profile", 0.0) + seconds, 2)
        record.phases_s["profile"] = seconds
        self.recorder.profiled(name, record, result.status, seconds, gpu)

    def time_limit(self, name: str) -> float:
        waiting = self.waiting[name]
        waiting.exp = waiting.exp or load(self.keys.folders[name])  # fresh results: their declaration loads
        return waiting.exp.time_limit_s


def unprofiled(record: Record) -> dict[str, str]:
    """The GPU kernels and baselines of a profiled record that have no profile, and why: a pass
    that is "ok" may still have lost one (a module missing on this machine), which the build says."""
    on_cpu = {r.name for r in record.rows if r.on_cpu}
    profiles = record.profile.profiles if record.profile else {}
    return {n: p.error for n, p in profiles.items() if p.error and n not in on_cpu}
