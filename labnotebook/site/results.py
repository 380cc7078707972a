"""What the site knows about one experiment on one GPU: its rows, and whether they can be trusted.

A page asks for results through a ``View``. Anything less than a fresh, verified result is a
``Problem``: the page shows it in place of the number, and the build logs a warning, which makes
``mkdocs build --strict`` fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..errors import ResultsError
from ..experiments import experiment_folders
from ..store import Store
from ..summary import current_hashes


class Problem(Exception):
    """A result a page needs is missing, failed, or stale. ``kind`` is one of those three words."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass
class View:
    """One experiment's results on one GPU, with its freshness and any later failed run."""

    experiment: str
    gpu: str
    record: dict | None
    failure: dict | None
    current_hash: str | None

    @property
    def stale(self) -> bool:
        return self.record is not None and self.record.get("source_hash") != self.current_hash

    @property
    def failed(self) -> bool:
        """A run of the current sources failed after these results were recorded."""
        return self.failure is not None and self.failure.get("source_hash") == self.current_hash

    def problems(self) -> list[Problem]:
        """Everything a reader must be told about this experiment before trusting a number."""
        out = []
        if self.failed:
            out.append(Problem("failed", f"{self.experiment} on {self.gpu}: the last run failed "
                                         f"({self.failure['failed_at']}): {self.failure['error']}"))
        if self.record is None and not self.failed:
            out.append(Problem("missing", f"{self.experiment} has no results on {self.gpu}; "
                                          "run build_results.py on that GPU"))
        elif self.stale:
            out.append(Problem("stale", f"{self.experiment} on {self.gpu}: results are stale "
                                        "(kernels, host code or engine changed since "
                                        f"{self.record['provenance']['date']}); re-run build_results.py"))
        return out

    @property
    def shown(self) -> dict | None:
        """The record the tables draw from: the failed run's rows when it got that far."""
        if self.failed and self.failure.get("rows"):
            return self.failure
        return self.record

    def best(self, case: str) -> str:
        """The fastest verified kernel (not baseline) at ``case``."""
        timed = [r for r in self.rows(kind="kernel") if r["case"] == case and r["status"] == "ok" and "time" in r]
        if not timed:
            raise Problem("missing", f"{self.experiment} has no verified, timed kernel at {case!r}")
        return min(timed, key=lambda r: r["time"]["median_ms"])["name"]

    def row(self, kernel: str, case: str) -> dict:
        """The row for ``kernel`` at ``case`` (``"best"``: the fastest kernel there); a Problem when
        it is missing or did not verify."""
        record = self.shown
        if record is None:
            raise self.problems()[0]
        if kernel == "best":
            kernel = self.best(case)
        for r in record["rows"]:
            if r["name"] == kernel and r["case"] == case:
                if r["status"] not in ("ok",):
                    raise Problem("failed", f"{self.experiment}/{kernel} at {case}: "
                                            f"{r['status']}: {r.get('error', '')}")
                return r
        raise Problem("missing", f"{self.experiment} on {self.gpu} has no result for "
                                 f"{kernel!r} at case {case!r}")

    def rows(self, kind: str | None = None, timed: bool = True) -> list[dict]:
        record = self.shown
        return [r for r in (record or {}).get("rows", [])
                if (kind is None or r["kind"] == kind) and r.get("timed", True) == timed]

    def names(self) -> list[str]:
        """Row names in the order they were run: transfers, kernels, baselines (not the phases
        of a whole-program run, which phase_chart shows)."""
        return list(dict.fromkeys(r["name"] for r in self.rows() if r["kind"] != "phase"))

    def cases(self, timed: bool = True) -> list[str]:
        return list(dict.fromkeys(r["case"] for r in self.rows(timed=timed)))


class Results:
    """All results under ``results/``, read once per site build."""

    def __init__(self, root: Path):
        self.root = root
        self.store = Store(root / "results")

    @cached_property
    def hashes(self) -> dict[str, str]:
        return current_hashes(self.root)

    def view(self, experiment: str, gpu: str) -> View:
        if experiment not in self.hashes:
            raise ResultsError(f"no experiment named {experiment!r} in snippets/ "
                               f"(have {', '.join(sorted(self.hashes))})")
        return View(experiment, gpu, self.store.read(experiment, gpu),
                    self.store.read_failure(experiment, gpu), self.hashes[experiment])

    @cached_property
    def experiments(self) -> dict[str, Path]:
        return experiment_folders(self.root / "snippets")
