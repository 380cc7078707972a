"""What a build runs: its options, the pass it makes (main or large), and for each selected
experiment whether it runs, stands as it is, stands with its profile to redo, or fails before
running because its declaration does not load."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..declare.discover import load
from ..declare.experiment import Experiment
from ..errors import NotebookError
from ..results.format import PASSES, Pass, Record
from ..results.freshness import CurrentKeys, Stored
from ..results.keys import Key
from ..results.rows import RunRow
from ..results.store import Store


@dataclass(frozen=True)
class Part:
    """A pass over the experiments as the build makes it: its records' pass (``format.PASSES``:
    their files, whether they are profiled), and what else it does."""
    records: Pass
    worker_args: tuple[str, ...]  # how a worker is told to run this pass's cases
    timed: bool  # times its cases, against each GPU's copy ceiling (measured first, where stale)
    heading: str  # what the build's first line says of it, after the GPU
    title: str  # what the report's title says of it, after the GPU

    @property
    def name(self) -> str:
        return self.records.name

    @property
    def follow_ups(self) -> bool:
        """A verified run is sanitized, then profiled."""
        return self.records.profiled


MAIN = Part(PASSES["main"], (), timed=True, heading="", title="")
# Each experiment's cases of 2^31 elements and more, verified, not timed.
LARGE = Part(PASSES["large"], ("--large",), timed=False,
             heading=" (the large pass: cases of 2^31 elements and more)", title=" (the large pass)")


@dataclass(frozen=True)
class Options:
    gpus: list[int] = field(default_factory=lambda: [0])
    force: bool = False
    sanitize: bool = True
    profile: bool = True  # the Nsight Compute pass
    kernels: list[str] | None = None  # run only these kernels and baselines
    cases: list[str] | None = None  # run only these cases
    dry_run: bool = False  # print the table, write nothing
    # Sanitizer jobs that may share one GPU (racecheck alone has one per kernel). Most of a small
    # one is its process starting on the host: ten at once fill an H100 with racecheck's work.
    shared_slots: int = 10
    part: Part = MAIN


@dataclass
class Due:
    """An experiment to run: the key its record will carry, and its last good record, if any."""
    name: str
    key: Key
    exp: Experiment
    previous: Record | None


@dataclass
class Standing:
    """Fresh results that stand; ``reprofile``: their profile is stale or missing, and redone."""
    name: str
    record: Record
    reprofile: bool


@dataclass
class Unloadable:
    """An experiment whose results are due but whose declaration does not load."""
    name: str
    key: Key
    error: str


def plan(options: Options, keys: CurrentKeys, store: Store, gpu_name: str, selected: dict[str, Path],
         ncu: bool) -> list[Due | Standing | Unloadable]:
    """What becomes of each of ``selected`` in this pass, in their order; ``ncu``: whether
    Nsight Compute is here to redo a profile."""
    filtered = options.kernels or options.cases or options.dry_run
    part = options.part
    steps: list[Due | Standing | Unloadable] = []
    for name, folder in selected.items():
        if part.name not in keys[name].parts and not keys[name].error:
            continue  # no case of this pass (no case of 2^31 elements or more)
        stored = Stored.read(store, name, gpu_name, keys, part.name)
        key, record = stored.key, stored.record
        if not (options.force or filtered) and stored.state == "fresh" and record.status == "ok" \
                and not newly_installed(record):
            reprofile = part.follow_ups and options.profile and ncu and stored.profile_state != "fresh"
            steps.append(Standing(name, record, reprofile))
            continue
        try:
            steps.append(Due(name, key, load(folder), record))
        except NotebookError as e:
            steps.append(Unloadable(name, key, str(e)))
    return steps


def newly_installed(record: Record) -> list[str]:
    """Modules that were missing when ``record`` was made and can be imported now."""
    from ..run.host_code import module_installed

    missing = {r.missing_module for r in record.rows if isinstance(r, RunRow) and r.missing_module}
    return sorted(m for m in missing if module_installed(m))
