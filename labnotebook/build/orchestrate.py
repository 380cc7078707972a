"""Run experiments on this machine's GPUs and freeze what they produce.

For each GPU, first its copy ceiling; for each experiment, one timed run (a worker process with
the experiment's time limit, on a GPU of its own), then, if it verified, one untimed job per
compute-sanitizer tool. When an experiment's last job is back, ``policy`` judges it and its
record, or a failure record beside the last good one, is written. Then the Nsight Compute pass:
one ncu session per GPU over every experiment just written (and every fresh one whose profile is
stale or missing), each GPU to itself so that no other work shows in its counters; each profile
is added to its record as it comes back. The large pass (``Options.large``) is the timed run
alone, at each experiment's cases of 2^31 elements and more, verified, not timed: no ceiling,
sanitizer or profile, into a record of its own. ``schedule.py`` decides what runs where; each worker is
its own process, so a crash, a hang or a sticky CUDA error ends one experiment and nothing else.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..results import machine, metrics
from . import ncu, policy
from ..errors import NotebookError
from ..declare.discover import load
from ..run.forkserver import Child, ForkServer
from ..results.freshness import CurrentKeys, Stored
from ..results.keys import Key
from ..results.format import ProfilePass, Record, Verdict
from ..results.rows import CHECKED, KernelRow, RunRow
from ..run import draw
from ..declare.experiment import Experiment
from .sanitizer import NO_SHARED_MEMORY, TOOLS, applies, command, parse, sanitizer_path
from .schedule import Job, Scheduler
from ..results.store import CEILINGS, Store, read_json

DEFAULT_ESTIMATE_S = 60.0


@dataclass
class Outcome:
    name: str
    state: str  # ran / profiled (the profile alone) / unchanged / failed / dry run
    detail: str = ""
    seconds: float = 0.0
    gpu: int | None = None
    phases: dict[str, float] = field(default_factory=dict)  # where its seconds went (format.REFRESH_PHASES)


@dataclass
class Unprofiled:
    """A record waiting for its GPU's ncu session: just written, or fresh with a stale profile."""
    record: Record
    exp: Experiment | None  # loaded when the profile's time limit is asked for, if not yet
    gpu: int | None  # the GPU that ran it; None: any

    @property
    def estimate_s(self) -> float:
        return self.record.phases_s.get("profile", 10.0)


@dataclass
class Options:
    gpus: list[int] = field(default_factory=lambda: [0])
    force: bool = False
    sanitize: bool = True
    profile: bool = True  # the Nsight Compute pass
    kernels: list[str] | None = None  # run only these kernels and baselines
    cases: list[str] | None = None  # run only these cases
    dry_run: bool = False  # print the table, write nothing
    shared_slots: int = 4  # sanitizer jobs that may share one GPU
    large: bool = False  # the large pass: each experiment's cases of 2^31 elements and more alone

    @property
    def part(self) -> str:
        return "large" if self.large else "main"


def worker_env(gpu: int | None = None, cpus: list[int] | None = None, sharing: int = 1) -> dict[str, str]:
    """Workers import this very package, wherever the project being built lives, see only their
    own GPU (as device 0) while knowing its index on the machine, keep to ``cpus``, and know how
    many GPUs' workers share the machine's memory (``sharing``)."""
    package_parent = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
    if gpu is not None:  # nvidia-smi's index; CUDA counts in the same order only by PCI bus
        env.update(CUDA_DEVICE_ORDER="PCI_BUS_ID", CUDA_VISIBLE_DEVICES=str(gpu), NOTEBOOK_DEVICE_INDEX=str(gpu))
    if cpus:
        env["NOTEBOOK_CPUS"] = ",".join(map(str, cpus))
    env["NOTEBOOK_GPUS_SHARING"] = str(sharing)
    return env


def share_cores(gpus: list[int]) -> dict[int, list[int]]:
    """Each GPU's share of this process's cores, so that work for one GPU (drawing inputs,
    verifying, timing CPU baselines and host copies) does not crowd out another's."""
    cores = draw.cores()
    per = max(1, len(cores) // len(gpus))
    return {g: cores[i * per:(i + 1) * per] or cores for i, g in enumerate(gpus)}


_LIVE: set[subprocess.Popen] = set()
_LOCK = threading.Lock()
_STOPPING = threading.Event()


class Stopped(Exception):
    """The build is stopping: no worker may start any more."""


def kill_workers() -> None:
    """Kill every worker still running, with its children, and let no new one start: a build
    that stops must not leave processes on a GPU (each worker has its own session, so it would
    outlive the build)."""
    with _LOCK:
        _STOPPING.set()
        for proc in list(_LIVE):
            _kill(proc)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended on its own meanwhile
        pass


def run_process(cmd: list[str], cwd: Path, env: dict, time_limit: float,
                relay: Callable[[str], None] | None) -> tuple[int | None, list[str]]:
    """Run ``cmd`` in its own session; relay its lines (or only keep them); kill the whole
    process group past ``time_limit``. Returns ``(exit status or None if killed, lines)``."""
    with _LOCK:
        if _STOPPING.is_set():
            raise Stopped("the build is stopping")
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        _LIVE.add(proc)
    try:
        return _wait(proc, time_limit, relay)
    finally:
        _LIVE.discard(proc)


def start_server(cmd: list[str], cwd: Path, env: dict) -> subprocess.Popen:
    """A process that outlives one job (a GPU's fork server), killed with the workers."""
    with _LOCK:
        if _STOPPING.is_set():
            raise Stopped("the build is stopping")
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                start_new_session=True)
        _LIVE.add(proc)
    return proc


def run_forked(server: ForkServer, argv: list[str], time_limit: float,
               relay: Callable[[str], None] | None) -> tuple[int | None, list[str]]:
    """``run_process`` for a worker forked from ``server``: ``argv`` are the worker's arguments."""
    lines: list[str] = []

    def keep(line: str) -> None:
        lines.append(line)
        if relay:
            relay(line)

    def watch(child: Child, running: bool) -> None:
        with _LOCK:
            if not running:
                _LIVE.discard(child)
            elif _STOPPING.is_set():
                _kill(child)
            else:
                _LIVE.add(child)
    with tempfile.TemporaryDirectory(prefix="notebook-log-") as tmp:
        return server.run(argv, Path(tmp) / "worker.log", time_limit, keep, watch), lines


def _wait(proc: subprocess.Popen, time_limit: float, relay) -> tuple[int | None, list[str]]:
    lines: list[str] = []

    def pump():
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if relay:
                relay(line.rstrip("\n"))
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=time_limit)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.wait()
        reader.join(timeout=5)
        return None, lines
    reader.join(timeout=5)
    return proc.returncode, lines


class Build:
    """One invocation of ``build_results.py``: the experiments to run and where their results go."""

    def __init__(self, root: Path, store: Store, console: Console, options: Options):
        self.root, self.store, self.console, self.options = root, store, console, options
        self.ceiling_records: dict[int, Record] = {}
        self.outcomes: list[Outcome] = []
        self.many = len(options.gpus) > 1
        self.cores = share_cores(options.gpus) if self.many else {}
        self.keys = CurrentKeys(root)  # what each result is keyed on, read once, before anything runs
        self.to_profile: dict[str, Unprofiled] = {}
        self.servers: dict[int, ForkServer] = {}  # each GPU's, started with its first worker
        self.servers_lock = threading.Lock()

    # -- planning ------------------------------------------------------------------------------
    def plan(self, gpu_name: str, selected: dict[str, Path]) -> list[tuple[str, Path, Key, Experiment, Record | None]]:
        """The experiments to run; the rest are recorded as unchanged."""
        filtered = self.options.kernels or self.options.cases or self.options.dry_run
        part = self.options.part
        todo = []
        for name, folder in selected.items():
            if part not in self.keys[name].parts and not self.keys[name].error:
                continue  # no case of this pass (no case of 2^31 elements or more)
            stored = Stored.read(self.store, name, gpu_name, self.keys, part)
            key, record = stored.key, stored.record
            if not (self.options.force or filtered) and stored.state == "fresh" and record.status == "ok" \
                    and not newly_installed(record):
                if part == "main" and self.options.profile and self.ncu and stored.profile_state != "fresh":
                    self.profile_later(name, record, None)  # the results stand; their profile is redone
                else:
                    self.outcomes.append(Outcome(name, "unchanged", f"results from {record.provenance.date}"))
                continue
            try:
                exp = load(folder)
            except NotebookError as e:
                self.finish(name, gpu_name, key, None, str(e), time.perf_counter())
                continue
            todo.append((name, folder, key, exp, record))
        return todo

    def run(self, gpu_name: str, selected: dict[str, Path]) -> list[Outcome]:
        t0 = time.perf_counter()
        self.gpu_name = gpu_name
        if self.options.sanitize and sanitizer_path() is None:
            self.console.print("[yellow]compute-sanitizer not found: results will record no sanitizer outcome[/]")
            self.options.sanitize = False
        self.ncu = ncu.version() if self.options.profile and ncu.ncu_path() else None
        if self.options.profile and self.ncu is None:
            self.console.print("[yellow]Nsight Compute (ncu) not found: results will record the profile as skipped[/]")
        todo = self.plan(gpu_name, selected)
        # The ceilings are measured whenever anything is timed, and on their own when they are
        # stale; the large pass times nothing.
        timing = not (self.options.dry_run or self.options.large)
        ceilings_due = timing and Stored.read(self.store, CEILINGS, gpu_name, self.keys).state != "fresh"
        if todo or ceilings_due or self.to_profile:
            gpus = ", ".join(map(str, self.options.gpus))
            unchanged = sum(o.state == "unchanged" for o in self.outcomes)
            which = " (the large pass: cases of 2^31 elements and more)" if self.options.large else ""
            self.console.print(f"[bold]{gpu_name}[/] (GPU {gpus}){which}: running {len(todo)} experiment(s), "
                               f"{unchanged} unchanged" + (f", {len(self.to_profile)} to profile" if self.to_profile
                                                           and not todo else ""))
            self.cubin_cache = Path(tempfile.mkdtemp(prefix="notebook-cubins-"))
            # A dry run stores no ceiling: its worker measures the copy bandwidth it compares with itself.
            ceilings = [] if not timing or not (todo or ceilings_due) else \
                [self.ceiling_job(g) for g in self.options.gpus]
            events = lambda e: self.console.print(f"[dim]{escape(e)}[/]")
            try:
                Scheduler(self.options.gpus, self.options.shared_slots, on_event=events).run(
                    ceilings + [self.run_job(*t) for t in todo])
                if self.to_profile:
                    Scheduler(self.options.gpus, self.options.shared_slots, on_event=events).run(self.profile_jobs())
            finally:
                for server in self.servers.values():
                    server.close()
                shutil.rmtree(self.cubin_cache, ignore_errors=True)
        self.wall_s = time.perf_counter() - t0
        return self.outcomes

    # -- the ceiling ----------------------------------------------------------------------------
    def ceiling_job(self, gpu: int) -> Job:
        def run(g: int):
            return self.worker(CEILINGS, g, [], time_limit=300)

        def then(result):
            record, error = _result(result)
            if error:
                self.console.print(f"[red]GPU {gpu}: ceiling measurement failed:[/] {escape(error)}")
                return []
            self.ceiling_records[gpu] = record
            self.console.print(f"GPU {gpu}: copy ceiling {record.ceiling.gbs:,.0f} GB/s")
            if len(self.ceiling_records) == len(self.options.gpus) and not self.options.dry_run:
                self.store_ceilings()
            return []
        return Job("copy ceiling", run, timed=True, estimate_s=5, gpu=gpu, then=then)

    def store_ceilings(self) -> None:
        """One file per GPU model: the first GPU's record, with every GPU's measurement as a row."""
        records = [self.ceiling_records[g] for g in sorted(self.ceiling_records)]
        first = records[0]
        first.rows = [r for rec in records for r in rec.rows]
        self.stamp(first, self.keys[CEILINGS], CEILINGS)
        self.store.write(first)

    # -- one experiment ---------------------------------------------------------------------------
    def run_job(self, name: str, folder: Path, key: Key, exp: Experiment, previous: Record | None) -> Job:
        t0 = 0.0
        estimate = (previous.wall_s or previous.phases_s.get("timed run")) if previous else None
        estimate = estimate or DEFAULT_ESTIMATE_S
        extra = []
        if self.options.kernels:
            extra += ["--kernel", *self.options.kernels]
        if self.options.cases:
            extra += ["--case", *self.options.cases]
        if self.options.large:
            extra += ["--large"]

        def run(g: int):
            nonlocal t0
            t0 = time.perf_counter()
            ceiling = self.ceiling_records.get(g)
            args = extra + (["--ceiling", json.dumps(dataclasses.asdict(ceiling.ceiling))] if ceiling else [])
            return self.worker(name, g, args, time_limit=exp.time_limit_s)

        def then(result):
            record, error = _result(result)
            if error:
                return self.finish(name, None, key, None, error, t0, job.ran_on)
            self.stamp(record, key, name)
            policy.judge(exp, record)
            lost = [] if self.options.force else policy.lost(previous, record)
            if lost:
                record.status, record.problems = "failed", [f"{p}; keeping those results (--force replaces them)"
                                                            for p in lost]
            if record.status != "ok" or self.options.dry_run or record.part != "main":
                return self.finish(name, record.gpu, key, record, None, t0, job.ran_on)
            return self.followup_jobs(name, key, exp, record, t0, job.ran_on, estimate)

        job = Job(f"{name}: timed run", run, timed=True, estimate_s=estimate, then=then)
        return job

    def followup_jobs(self, name, key: Key, exp, record: Record, t0: float, gpu: int, estimate: float) -> list[Job]:
        """The passes over a verified run: one job per compute-sanitizer tool. The record is
        judged and written when the last of them is back, and then waits for its profile."""
        functions = {info.function: k for k, info in record.kernels.items() if info.language == "cuda"}
        # Python-DSL kernels only: no sanitizer frame would name them, so the tools could tell nothing.
        tools = TOOLS if self.options.sanitize and functions else ()
        report: dict[str, dict[str, Verdict]] = {k: {} for k in functions.values()}
        # Each tool over the kernels it has something to check in (racecheck: shared memory);
        # the others get a verdict that says why not, and a tool with none left does not run.
        scopes: dict[str, dict[str, str]] = {}
        for tool in tools:
            scopes[tool] = {f: k for f, k in functions.items()
                            if applies(tool, record.kernels[k], (r.launch for r in record.rows
                                                                   if isinstance(r, KernelRow) and r.name == k and r.launch))}
            for k in set(functions.values()) - set(scopes[tool].values()):
                report[k][tool] = NO_SHARED_MEMORY
        left = {t for t in tools if scopes[t]}
        finished: dict[str, Job] = {}  # each pass's job, for when it ran (phases_s)

        def done(part: str, job: Job | None = None) -> list[Job]:
            left.discard(part)
            if job:
                finished[part] = job
            if left:
                return []
            sanitizer = [finished[t] for t in tools if t in finished]
            if sanitizer:  # the tools run side by side: the pass took from the first start to the last end
                record.phases_s["sanitizer"] = round(max(j.ended for j in sanitizer) - min(j.started for j in sanitizer), 2)
            if tools:
                record.sanitizer = {k: {t: report[k][t] for t in TOOLS} for k in report}
                findings = policy.sanitizer_findings(exp, record.sanitizer)
                if findings:
                    record.problems = findings
                    record.status = "failed"
                    return self.finish(name, record.gpu, key, record, "compute-sanitizer: " + findings[0], t0, gpu)
                self.console.print(f"{name}: compute-sanitizer {', '.join(TOOLS)} clean")
            written = self.finish(name, record.gpu, key, record, None, t0, gpu)
            if self.options.profile:
                self.profile_later(name, record, gpu, exp)
            return written

        jobs = [self.sanitizer_job(name, exp, tool, scopes[tool], len(functions), report, done, estimate / 4)
                for tool in tools if scopes[tool]]
        return jobs or done("")

    def sanitizer_job(self, name, exp, tool: str, functions: dict[str, str], of: int,
                      report: dict[str, dict[str, Verdict]], done, estimate_s: float) -> Job:
        """``tool`` over the kernels ``functions`` names ({CUDA function: kernel}), ``of`` the
        experiment's CUDA kernels: the worker runs those alone where they are fewer."""
        only = [] if len(functions) == of else ["--kernel", *functions.values()]

        def run(g: int):
            with tempfile.TemporaryDirectory(prefix="notebook-sanitize-") as tmp:
                out = Path(tmp) / "r.json"
                worker = self.worker_command(name, ["--verify-only", "--out", str(out), *only])
                status, lines = run_process(command(tool, worker), self.root, self.env(g),
                                            exp.time_limit_s, relay=None)
                finished = status is not None and out.exists() and "format" in read_json(out)
            if status is None:
                return {k: Verdict(None, f"timed out after {exp.time_limit_s} s") for k in functions.values()}
            if not finished:  # the worker itself failed under the tool: nothing it ran can be called clean
                last = next((ln for ln in reversed(lines) if ln.strip() and not ln.startswith("=")), "no output")
                return {k: Verdict(None, f"the worker did not finish under {tool}: {last}")
                        for k in functions.values()}
            return parse("\n".join(lines), functions)

        def then(result):
            verdicts = result if isinstance(result, dict) else \
                {k: Verdict(None, f"the sanitizer job failed: {result}") for k in functions.values()}
            for kernel, v in verdicts.items():
                report[kernel][tool] = v
            return done(tool, job)
        job = Job(f"{name}: {tool}", run, timed=False, estimate_s=estimate_s, then=then)
        return job

    # -- the profile pass -------------------------------------------------------------------------
    def profile_later(self, name: str, record: Record, gpu: int | None, exp: Experiment | None = None) -> None:
        """Queue ``record`` (written, or fresh with a stale profile) for its GPU's ncu session."""
        self.to_profile[name] = Unprofiled(record, exp, gpu)

    def profile_jobs(self) -> list[Job]:
        """One ncu session per GPU: each experiment on the GPU that ran it, the rest (profiles
        of results that stand) where the load is least, by the last profile's seconds."""
        load = {g: 0.0 for g in self.options.gpus}
        chunks: dict[int, list[str]] = {g: [] for g in self.options.gpus}
        for name, waiting in sorted(self.to_profile.items(), key=lambda kv: (kv[1].gpu is None, -kv[1].estimate_s)):
            g = waiting.gpu if waiting.gpu in load else min(load, key=load.get)
            chunks[g].append(name)
            load[g] += waiting.estimate_s
        return [self.profile_job(names, g) for g, names in chunks.items() if names]

    def profile_job(self, names: list[str], gpu: int) -> Job:
        """ncu over a ``--profile`` worker for ``names``. A profile that fails is recorded as failed
        with the reason; it never fails the run: it explains the numbers, it does not make them."""
        def run(g: int) -> dict[str, tuple[ProfilePass, float]]:
            if self.ncu is None:
                skipped = ProfilePass("skipped", "Nsight Compute (ncu) was not found on the machine that ran this")
                return {name: (skipped, 0.0) for name in names}
            return self.profile_session(names, g)

        def then(result):
            if isinstance(result, BaseException):
                failed = ProfilePass("failed", f"the profile job failed: {type(result).__name__}: {result}")
                result = {name: (failed, 0.0) for name in names}
            for name, (profile, seconds) in result.items():
                self.add_profile(name, profile, seconds, gpu)
            return []
        # Timed, so that it has its GPU to itself: ncu's counters are the GPU's, not the process's.
        return Job(f"profile: {', '.join(names)}", run, timed=True, gpu=gpu,
                   estimate_s=sum(self.to_profile[n].estimate_s for n in names), then=then)

    def profile_session(self, names: list[str], gpu: int) -> dict[str, tuple[ProfilePass, float]]:
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
                worker = self.worker_command(left, ["--profile", "--out", tmp])
                # LC_ALL=C: ncu formats numbers by locale ("1.234,5" under de_DE); the parser reads "1,234.5".
                status, lines = run_process(ncu.command(worker, report), self.root,
                                            {**self.env(gpu), "LC_ALL": "C"}, limit, relay=None)
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
            left = left[len(done):]
            if died:
                why = f"timed out after {limit:.0f} s under ncu" if status is None else \
                    "the worker did not finish under ncu: " + \
                    next((ln for ln in reversed(lines + text.splitlines()) if ln.strip()), "no output")
                results[left.pop(0)] = (ProfilePass("failed", why), round(share, 2))
        return results

    def add_profile(self, name: str, result: ProfilePass, seconds: float, gpu: int) -> None:
        """Put the profile in its record, with its cost, and write the record again."""
        record = self.to_profile[name].record
        record.profile = dataclasses.replace(result, sources=self.keys.profiler.files)
        if self.ncu and record.provenance:
            record.provenance = dataclasses.replace(record.provenance, ncu=self.ncu)
        if result.status != "ok":
            self.console.print(f"[yellow]{name}: profile {result.status}: {escape(result.reason)}[/]")
        if record.wall_s is not None:
            record.wall_s = round(record.wall_s - record.phases_s.get("profile", 0.0) + seconds, 2)
        record.phases_s["profile"] = seconds
        self.store.write(record)
        outcome = next((o for o in self.outcomes if o.name == name and o.state == "ran"), None)
        if outcome is None:
            self.outcomes.append(Outcome(name, "profiled", f"profile {result.status}", seconds, gpu, {"profile": seconds}))
        else:
            outcome.seconds += seconds
            outcome.phases = record.phases_s

    def time_limit(self, name: str) -> float:
        waiting = self.to_profile[name]
        waiting.exp = waiting.exp or load(self.keys.folders[name])  # fresh results: their declaration loads
        return waiting.exp.time_limit_s

    def finish(self, name, gpu_name, key: Key | None, record: Record | None, error: str | None, t0: float,
               gpu: int | None = None) -> list[Job]:
        """Write the record, or a failure record beside the last good one; note the outcome."""
        seconds = time.perf_counter() - t0
        if record is not None and record.status != "ok" and error is None:
            error = policy.summary_reason(record.problems)
        if self.options.dry_run:
            if record is not None:
                print_rows(self.console, record)
            self.outcomes.append(Outcome(name, "failed" if error else "dry run", error or "nothing written",
                                         seconds, gpu, record.phases_s if record else {}))
            return []
        if error is None:
            record.wall_s = round(seconds, 2)
            self.store.write(record)
            self.outcomes.append(Outcome(name, "ran", f"{len(record.rows)} results", seconds, gpu, record.phases_s))
            return []
        failure = record or Record(experiment=name, title=name, gpu=gpu_name or self.gpu_name,
                                   provenance=None, rows=[], status="failed", part=self.options.part)
        failure.status, failure.error, failure.wall_s = "failed", error, round(seconds, 2)
        self.stamp(failure, key)
        failure.failed_at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
        self.store.write_failure(failure)
        self.console.print(f"[bold red]✗ {name}:[/] {escape(error)}")
        self.outcomes.append(Outcome(name, "failed", error, seconds, gpu, failure.phases_s))
        return []

    def stamp(self, record: Record, key: Key | None, name: str | None = None) -> None:
        """Key ``record`` on the files it was measured from (read before the run started) and,
        for the record of a run (``name``), on the machine code its CUDA kernels compile to here
        (None where this machine has no nvcc to say)."""
        record.source_hash = key.digest if key else None
        record.sources = dict(key.files) if key else {}
        cc = record.provenance.compute_capability if record.provenance else None
        if name and key and key.cubins and cc:
            code = self.keys.machine(name, machine.arch_of(cc))
            record.machine = None if isinstance(code, str) else code

    # -- workers --------------------------------------------------------------------------------
    def env(self, gpu: int) -> dict[str, str]:
        return worker_env(gpu, self.cores.get(gpu), len(self.options.gpus))

    def worker_args(self, names: str | list[str], args: list[str]) -> list[str]:
        """The worker's arguments, for a forked worker; ``worker_command`` starts it afresh."""
        names = [names] if isinstance(names, str) else names
        return [*names, "--root", str(self.root), "--cubin-cache", str(self.cubin_cache), *args]

    def worker_command(self, names: str | list[str], args: list[str]) -> list[str]:
        return [sys.executable, "-m", "labnotebook.run.worker", *self.worker_args(names, args)]

    def server(self, gpu: int) -> ForkServer | None:
        """``gpu``'s fork server, started on first use; None where it has died (workers start afresh)."""
        with self.servers_lock:
            if gpu not in self.servers:
                self.servers[gpu] = ForkServer(self.root, self.env(gpu), start_server)
            server = self.servers[gpu]
        return server if server.proc.poll() is None else None

    def worker(self, name: str, gpu: int, args: list[str], time_limit: float) -> tuple[Record | None, str | None]:
        """Run one worker on ``gpu``, forked from its server, relaying its output;
        ``(record, None)`` or ``(None, error)``."""
        prefix = f"{name} │ " if self.many else ""
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="notebook-run-") as tmp:
            out = Path(tmp) / "record.json"
            args = [*args, "--out", str(out)]
            relay = lambda line: self.console.print(prefix + line, markup=False, highlight=False)
            server = self.server(gpu)
            status, lines = run_forked(server, self.worker_args(name, args), time_limit, relay) if server else \
                run_process(self.worker_command(name, args), self.root, self.env(gpu), time_limit, relay)
            if status is None:
                return None, f"timed out after {time_limit:.0f} s (a hung kernel?) and was killed"
            if out.exists():
                data = read_json(out)
                if "format" not in data:  # the worker's own {"error": ...}: an engine error, named
                    return None, data["error"]
                if status == 0:
                    record = Record.from_json(data, f"{name}'s worker output")
                    # Its wall time (an experiment's whole is set when its passes are done), and
                    # the part its own clock did not see: Python's start, imports, the context.
                    record.wall_s = round(time.perf_counter() - t0, 2)
                    unseen = max(0.0, record.wall_s - sum(record.phases_s.values()))
                    record.phases_s = {"start-up": round(unseen, 2), **record.phases_s}
                    return record, None
        last = next((ln for ln in reversed(lines) if ln.strip()), "no output")
        how = f"killed by signal {-status}" if status < 0 else f"exited with status {status}"
        return None, f"worker {how}: {last.strip()}"


def _result(result) -> tuple[Record | None, str | None]:
    if isinstance(result, BaseException):
        return None, f"{type(result).__name__}: {result}"
    return result


def newly_installed(record: Record) -> list[str]:
    """Modules that were missing when ``record`` was made and can be imported now."""
    from ..run.host_code import module_installed

    missing = {r.missing_module for r in record.rows if isinstance(r, RunRow) and r.missing_module}
    return sorted(m for m in missing if module_installed(m))


def print_rows(console: Console, record: Record) -> None:
    """A run's rows as a table (what ``--dry-run`` and the filters show instead of writing)."""
    table = Table("case", "kernel", "status", "median", "throughput", "% of copy", "worst / bound", "verified in",
                  title=f"{record.experiment} on {record.gpu} (GPU {record.provenance.device_index})")
    for r in record.rows:
        value, unit = metrics.throughput(r)
        pct = metrics.pct_of_ceiling(r, record)
        table.add_row(escape(r.case), escape(r.name), r.status if not r.error else f"{r.status}: {escape(r.error)}",
                      f"{r.time.median_ms:.4f} ms" if r.time else "", f"{value:,.1f} {unit}" if value else "",
                      f"{pct:.1f}%" if pct else "", f"{r.check.bound_ratio:.2g}" if isinstance(r, CHECKED) and r.check else "",
                      f"{r.verify_s:.2f} s" if isinstance(r, RunRow) and r.verify_s is not None else "")
    console.print(table)


def print_outcomes(console: Console, gpu: str, outcomes: list[Outcome], wall_s: float) -> None:
    table = Table("experiment", "GPU", "state", "detail", "seconds", "where they went",
                  title=f"build_results on {gpu}")
    style = {"ran": "green", "profiled": "green", "unchanged": "dim", "failed": "bold red", "dry run": "cyan"}
    for o in outcomes:
        biggest = sorted(o.phases.items(), key=lambda kv: -kv[1])[:3]
        table.add_row(o.name, "" if o.gpu is None else str(o.gpu), f"[{style[o.state]}]{o.state}[/]",
                      escape(o.detail), f"{o.seconds:.1f}", " · ".join(f"{p} {s:.1f}" for p, s in biggest))
    console.print(table)
    counts = {s: sum(o.state == s for o in outcomes) for s in ("ran", "profiled", "unchanged", "failed", "dry run")}
    ran = [o for o in outcomes if o.state != "unchanged"]
    console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n or s not in ("dry run", "profiled"))
                  + f" in {wall_s:.1f} s" + (f"; sum of wall times {sum(o.seconds for o in ran):.1f} s" if ran else ""))
