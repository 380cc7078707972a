"""Whether stored results still describe the code: the one place staleness is decided.

Results are *fresh* when the digest of the key they were measured from (``keys.py``: the files
that can change their numbers) equals the digest of that key now. The build skips fresh
results, ``--check``, ``--list`` and ``--summary`` report the state, and the site marks anything
else. A profile is evidence beside its record, with its own key: the record's, plus the
profiler pass's files; a stale or missing one is marked where it is shown and fails nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

from . import keys
from .errors import ResultsError
from .experiments import experiment_folders
from .records import Part, Record
from .store import CEILINGS, Store

State = Literal["fresh", "stale", "failed", "missing", "corrupt"]
NAMED_FILES = 4  # changed files a reason names; the rest are counted
ProfileState = Literal["fresh", "stale", "missing", "skipped", "failed"]


class Keys:
    """The current key of every experiment and of the ceilings under one root, made once."""

    def __init__(self, root: Path):
        self.root = root
        self.sources = keys.Sources(root)

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

    def __contains__(self, name: str) -> bool:
        return name in self._keys

    def __getitem__(self, name: str) -> keys.Key:
        return self._keys[name]


def run_command(experiment: str, part: Part = "main") -> str:
    """What re-makes an experiment's results (of one pass) on a GPU (a run measures the ceilings
    where they are stale)."""
    if experiment == CEILINGS:
        return "python build_results.py"
    return f"python build_results.py {'--large ' if part == 'large' else ''}--only {experiment}"


def _holding(store: Store, experiment: str, gpu: str, cases: tuple[str, ...]) -> Record | None:
    """A main record made before the large pass existed (format 5 and older) that has rows at
    every large case: it stands for the large pass, with its own freshness."""
    try:
        main = store.read(experiment, gpu)
    except ResultsError:
        return None
    return main if main is not None and cases and set(cases) <= {r.case for r in main.rows} else None


def is_stale(record: Record, key: keys.Key | None) -> bool:
    """Whether ``record`` was measured from other files than its key holds now."""
    return key is None or record.source_hash != key.digest


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
    part: Part = "main"  # the pass (``records.PARTS``): both are keyed on the same files

    @classmethod
    def read(cls, store: Store, experiment: str, gpu: str, current: Keys, part: Part = "main") -> "Stored":
        record = failure = unreadable = None
        try:
            record = store.read(experiment, gpu, part)
            failure = store.read_failure(experiment, gpu, part)
        except ResultsError as e:
            unreadable = e
        key = current[experiment] if experiment in current else None
        if part == "large" and record is failure is unreadable is None and key is not None:
            record = _holding(store, experiment, gpu, key.large_cases)
        return cls(experiment, gpu, record, failure, key, unreadable, current.profiler, part)

    @property
    def command(self) -> str:
        return run_command(self.experiment, self.part)

    @property
    def stale(self) -> bool:
        return self.record is not None and is_stale(self.record, self.key)

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
        return keys.changed(self.record.sources, self.key.files)

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
        more = f" and {len(files) - NAMED_FILES} more" if len(files) > NAMED_FILES else ""
        return "changed since they were measured: " + ", ".join(files[:NAMED_FILES]) + more

    @property
    def profile_state(self) -> ProfileState:
        """The profile's own state: stale with its record, or when the profiler pass changed."""
        profile = self.record.profile if self.record else None
        if profile is None:
            return "missing"
        if profile.status != "ok":
            return profile.status
        if self.stale or self.profiler is None or keys.changed(profile.sources, self.profiler.files):
            return "stale"
        return "fresh"
