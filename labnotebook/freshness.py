"""Whether stored results still describe the code: the one place staleness is decided.

Results are *fresh* when the hash of the sources that produced them (``experiments.source_hash``:
the experiment's folder plus the engine) equals the hash of the sources now. The build skips
fresh results, ``--list`` and ``--summary`` report the state, and the site marks anything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .errors import ResultsError
from .experiments import engine_hash, experiment_folders, source_hash
from .records import Record
from .store import CEILINGS, Store

State = Literal["fresh", "stale", "failed", "missing", "corrupt"]


def current_hashes(root: Path) -> dict[str, str]:
    """What each experiment's results must have been made from to count as fresh."""
    hashes = {name: source_hash(folder) for name, folder in experiment_folders(root / "snippets").items()}
    hashes[CEILINGS] = engine_hash()
    return hashes


def is_stale(record: Record, current_hash: str | None) -> bool:
    """Whether ``record`` was made from other sources than the ones there are now."""
    return record.source_hash != current_hash


@dataclass
class Stored:
    """What is stored for one experiment on one GPU: the last good record, a later failure, or
    a file that could not be read; and the hash the sources have now."""

    experiment: str
    gpu: str
    record: Record | None
    failure: Record | None
    current_hash: str | None
    unreadable: ResultsError | None = None  # a corrupt or foreign file, with the fix-it message

    @classmethod
    def read(cls, store: Store, experiment: str, gpu: str, current_hash: str | None) -> "Stored":
        record = failure = unreadable = None
        try:
            record = store.read(experiment, gpu)
            failure = store.read_failure(experiment, gpu)
        except ResultsError as e:
            unreadable = e
        return cls(experiment, gpu, record, failure, current_hash, unreadable)

    @property
    def stale(self) -> bool:
        return self.record is not None and is_stale(self.record, self.current_hash)

    @property
    def failed(self) -> bool:
        """A run of the current sources failed (after the stored results, if any)."""
        return self.failure is not None and not is_stale(self.failure, self.current_hash)

    @property
    def state(self) -> State:
        if self.unreadable is not None:
            return "corrupt"
        if self.failed:
            return "failed"
        if self.record is None:
            return "missing"
        return "stale" if self.stale else "fresh"
