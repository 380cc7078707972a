"""Whether stored results still describe the code: the one place staleness is decided.

Results are *fresh* when the digest of the key they were measured from (``keys.py``: the files
that can change their numbers, hashed by the rule the record names) equals the digest of that
key now; or, where only CUDA files changed, when every kernel still compiles to the machine code
on record (``machine.py``: same nvcc build, same architecture). Such a record is fresh, and
``build_results.py --rekey`` brings its source hashes up to date without a GPU (``rekey.py``).
Where machine code cannot be compared (no nvcc here, another nvcc build, no machine code on
record), the source rule decides and the reason says so. The build skips fresh results,
``--check``, ``--list`` and ``--summary`` report the state, and the site marks anything else. A
profile is evidence beside its record, with its own key: the record's, plus the profiler pass's
files; a stale or missing one is marked where it is shown and fails nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

from . import keys, machine
from ..errors import ResultsError
from ..declare.discover import experiment_folders
from .format import PASSES, MachineKey, Part, Record
from .store import CEILINGS, Store

State = Literal["fresh", "stale", "failed", "missing", "corrupt"]
NAMED_FILES = 4  # changed files a reason names; the rest are counted
ProfileState = Literal["fresh", "stale", "missing", "skipped", "failed"]


class CurrentKeys:
    """The current key of every experiment and of the ceilings under one root, made once."""

    def __init__(self, root: Path):
        self.root = root
        self.sources = keys.Sources(root)
        self._machine: dict[tuple[str, str], MachineKey | str] = {}

    @cached_property
    def folders(self) -> dict[str, Path]:
        return experiment_folders(self.root / "snippets")

    @cached_property
    def _keys(self) -> dict[str, keys.Key]:
        found = {name: self.sources.experiment(folder) for name, folder in self.folders.items()}
        found[CEILINGS] = self.sources.ceilings()
        return found

    @cached_property
    def profiler(self) -> keys.Key:
        return self.sources.profiler()

    def names(self) -> list[str]:
        """Every experiment, and the ceilings."""
        return list(self._keys)

    def machine(self, name: str, arch: str) -> MachineKey | str:
        """What ``name``'s kernels compile to now for ``arch``, or why that cannot be said here.
        Compiled once per key and architecture (two GPUs of one architecture share it)."""
        if (name, arch) not in self._machine:
            try:
                self._machine[name, arch] = machine.machine_key(self.root, self[name], arch)
            except machine.Unjudged as e:
                self._machine[name, arch] = str(e)
        return self._machine[name, arch]

    def __contains__(self, name: str) -> bool:
        return name in self._keys

    def __getitem__(self, name: str) -> keys.Key:
        return self._keys[name]


def run_command(experiment: str, part: Part = "main") -> str:
    """What re-makes an experiment's results (of one pass) on a GPU (a run measures the ceilings
    where they are stale)."""
    if experiment == CEILINGS:
        return "python build_results.py"
    return " ".join(filter(None, ("python build_results.py", PASSES[part].option, f"--only {experiment}")))


def _holding(store: Store, experiment: str, gpu: str, cases: tuple[str, ...]) -> Record | None:
    """A main record made before the large pass existed (format 5 and older) that has rows at
    every large case: it stands for the large pass, with its own freshness."""
    try:
        main = store.read(experiment, gpu)
    except ResultsError:
        return None
    return main if main is not None and cases and set(cases) <= {r.case for r in main.rows} else None


def is_stale(record: Record, key: keys.Key | None) -> bool:
    """Whether ``record`` was measured from other files than its key holds now (by the rule it
    was keyed by; machine code aside)."""
    return key is None or record.source_hash != key.digest_by(record.key_rule)


def _named(files: list[str]) -> str:
    """The first changed files by name, the rest counted."""
    more = f" and {len(files) - NAMED_FILES} more" if len(files) > NAMED_FILES else ""
    return ", ".join(files[:NAMED_FILES]) + more


@dataclass
class Stored:
    """What is stored for one experiment on one GPU: the last good record, a later failure, or
    a file that could not be read; the key the sources make now; and the profiler's key."""

    experiment: str
    gpu: str
    record: Record | None
    failure: Record | None
    key: keys.Key | None
    unreadable: ResultsError | None = None  # a corrupt or foreign file, with the fix-it message
    profiler: keys.Key | None = None
    part: Part = "main"  # the pass (``format.PARTS``): both are keyed on the same files
    keys: CurrentKeys | None = None  # for compiling the kernels, where only CUDA files changed

    @classmethod
    def read(cls, store: Store, experiment: str, gpu: str, current: CurrentKeys, part: Part = "main") -> "Stored":
        record = failure = unreadable = None
        try:
            record = store.read(experiment, gpu, part)
            failure = store.read_failure(experiment, gpu, part)
        except ResultsError as e:
            unreadable = e
        key = current[experiment] if experiment in current else None
        if part == "large" and record is failure is unreadable is None and key is not None:
            record = _holding(store, experiment, gpu, key.large_cases)
        return cls(experiment, gpu, record, failure, key, unreadable, current.profiler, part, current)

    @classmethod
    def of(cls, record: Record, current: CurrentKeys) -> "Stored":
        """A record already read, judged as ``read`` would judge it."""
        key = current[record.experiment] if record.experiment in current else None
        return cls(record.experiment, record.gpu, record, None, key, None, current.profiler, record.part, current)

    @property
    def command(self) -> str:
        return run_command(self.experiment, self.part)

    @property
    def stale(self) -> bool:
        return self.record is not None and is_stale(self.record, self.key) and not self.same_machine_code

    @cached_property
    def _machine(self) -> tuple[bool, str]:
        """Where the record is stale by its sources and only CUDA files changed: whether every
        kernel still compiles to the machine code on record and, if not, why (the kernels whose
        code changed, or why it could not be compared here). (False, "") where it does not apply."""
        record, files = self.record, self.changed()
        if (record is None or not files or not is_stale(record, self.key)
                or any(not f.endswith(keys.CUDA) for f in files)):
            return False, ""
        if record.machine is None:
            return False, "it has no machine code on record, so its source text decides"
        build = machine.nvcc_build()
        if build is not None and build != record.machine.nvcc:
            return False, (f"the nvcc here ({build}) is not the one that compiled it ({record.machine.nvcc}), "
                           "so its source text decides")
        now = self.keys.machine(self.experiment, record.machine.arch) if self.keys else "not compiled"
        if isinstance(now, str):
            return False, f"{now}, so its source text decides (machine code not compared)"
        differ = machine.differs(record.machine, now)
        return not differ, f"the machine code of {', '.join(differ)} changed" if differ else ""

    @property
    def same_machine_code(self) -> bool:
        """Fresh by machine code: only CUDA files changed, and every kernel compiles as it did."""
        return self._machine[0]

    @property
    def rekey_due(self) -> bool:
        """Fresh, but its key is not written as a run would write it now (``rekey.py``): keyed
        by an older rule, or fresh only by its machine code."""
        return self.state == "fresh" and self.key is not None and (
            self.record.key_rule != keys.RULE or self.record.source_hash != self.key.digest)

    @property
    def failed(self) -> bool:
        """A run of the current sources failed (after the stored results, if any)."""
        return self.failure is not None and not is_stale(self.failure, self.key)

    @property
    def state(self) -> State:
        if self.unreadable is not None:
            return "corrupt"
        if self.failed:
            return "failed"
        if self.record is None:
            return "missing"
        return "stale" if self.stale else "fresh"

    def changed(self) -> list[str]:
        """The files that made the results stale: edited, added to or removed from the key since
        they were measured. Empty where the record predates per-file hashes (format 4)."""
        if self.record is None or self.key is None or not self.record.sources:
            return []
        return keys.changed(self.record.sources, self.key.files_by(self.record.key_rule))

    def reason(self) -> str:
        """Why the results are not fresh, in one clause (empty when they are)."""
        state = self.state
        if state == "corrupt":
            return str(self.unreadable)
        if state == "failed":
            return f"the last run ({self.failure.failed_at}) failed: {self.failure.error}"
        if state == "missing":
            return "no results on record"
        if state == "fresh":
            return ""
        if self.key is not None and self.key.error:
            return f"its declaration does not load: {self.key.error}"
        files = self.changed()
        if not files:
            return "measured from other sources (the file records no per-file hashes: format 3 or older)"
        why = "changed since they were measured: " + _named(files)
        return f"{why}; {self._machine[1]}" if self._machine[1] else why

    def rekey_reason(self) -> str:
        """Why a fresh record's key is due to be rewritten (empty when it is not)."""
        if not self.rekey_due:
            return ""
        if self.same_machine_code:
            return (f"fresh by its machine code, though {_named(self.changed())} changed: "
                    "its source hashes are not current")
        return f"keyed by the older rule ({self.record.key_rule}: every file's bytes)"

    @property
    def profile_state(self) -> ProfileState:
        """The profile's own state: stale with its record, or when the profiler pass changed."""
        profile = self.record.profile if self.record else None
        if profile is None:
            return "missing"
        if profile.status != "ok":
            return profile.status
        if (self.stale or self.profiler is None
                or keys.changed(profile.sources, self.profiler.files_by(self.record.key_rule))):
            return "stale"
        return "fresh"
