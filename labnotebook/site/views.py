"""What the site knows about one experiment on one GPU: its rows, and whether they can be trusted.

A page asks for results through a ``View``, which wraps ``freshness.Stored`` (the one place
where staleness is decided). Anything less than a fresh, verified, timed row is a ``Problem``:
the macro that met it shows a marker where the number would be, and logs a warning, which makes
``mkdocs build --strict`` fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..results import noise
from ..errors import NotebookError
from ..declare.discover import experiment_folders, load
from ..results.freshness import CurrentKeys, Stored, run_command
from ..results.format import Record, Row
from ..declare.experiment import Experiment
from ..results.store import Store

# What a problem is about, and whether the number can still be shown beside its marker.
STATE_KINDS = ("stale", "failed", "missing", "corrupt")
ROW_KINDS = ("row failed", "skipped", "untimed", "unprofiled", "absent", "contradicted", "error")


class Problem(Exception):
    """A result a page needs cannot be trusted or does not exist. ``kind`` is one of
    STATE_KINDS (the experiment's results on a GPU) or ROW_KINDS (one row, or a claim)."""

    def __init__(self, kind: str, message: str, experiment: str | None = None, gpu: str | None = None,
                 part: str = "main"):
        assert kind in STATE_KINDS + ROW_KINDS, kind
        super().__init__(message)
        self.kind = kind
        self.experiment = experiment
        self.gpu = gpu  # the GPU whose results it is about, where one is
        self.part = part  # the pass whose results it is about (``format.PARTS``)


@dataclass
class View:
    """One experiment's stored results on one GPU, and the rows the page draws from: the main
    pass's, and the large pass's (``large``) for its untimed rows where it has one."""

    stored: Stored
    root: Path | None = None  # paths in messages are shown relative to it
    large: Stored | None = None  # the large pass, where the declaration has cases of 2^31 elements and more
    large_cases: tuple[str, ...] = ()  # their names, as declared
    declared: Experiment | None = None  # the declaration, where it loads: what a page may ask for

    @property
    def experiment(self) -> str:
        return self.stored.experiment

    @property
    def gpu(self) -> str:
        return self.stored.gpu

    @property
    def state(self) -> str:
        return self.stored.state

    @property
    def record(self) -> Record | None:
        """The record the tables draw from: a failed run's rows where it got that far, else the
        last good results (None when there are none, or the file is unreadable)."""
        return _shown(self.stored)

    def problem(self) -> Problem | None:
        """What a reader must be told about these results before trusting a number."""
        return self._problem(self.stored)

    def large_problem(self) -> Problem | None:
        """The same about the large pass's results, where there is one."""
        return self._problem(self.large) if self.large is not None else None

    def _problem(self, s: Stored) -> Problem | None:
        name, which = self.experiment, " (the large pass)" if s.part == "large" else ""
        if s.state == "fresh":
            return None
        if s.state == "corrupt":
            text = str(s.unreadable).replace(f"{self.root.as_posix()}/", "") if self.root else str(s.unreadable)
        elif s.state == "failed":
            text = (f"{name}{which} on {self.gpu}: the last run failed ({s.failure.failed_at}): {s.failure.error}; "
                    f"fix it and run `{s.command}`")
        elif s.state == "missing":
            text = f"{name} has no results{which} on {self.gpu}; on that GPU run `{s.command}`"
        else:
            date = s.record.provenance.date[:10] if s.record.provenance else "?"
            text = (f"{name}{which} on {self.gpu}: results of {date} are stale ({s.reason()}); "
                    f"on that GPU run `{s.command}`")
        return Problem(s.state, text, name, self.gpu, s.part)

    def require(self) -> Record:
        """The record to draw from, or the Problem that there is none."""
        if self.record is None:
            raise self.problem()
        return self.record

    def undeclared(self, name: str | None, case: str) -> Problem | None:
        """A name or case the declaration does not have: a misspelling, an error on any page,
        draft or not, with results or without."""
        exp = self.declared
        if exp is None:
            return None
        names = exp.runnable_names() + (["h2d", "d2h"] if exp.time_transfers else [])
        cases = [c.name for c in exp.all_cases()]
        if case not in cases:
            return Problem("absent", f"{self.experiment} declares no case {case!r} (cases: {', '.join(cases)})",
                           self.experiment)
        recorded = self.record is not None and any(r.name == name for r in self.record.rows)
        if name is not None and name not in names and not recorded and not exp.phases:  # phases are named as they run
            return Problem("absent", f"{self.experiment} declares no kernel or baseline {name!r} "
                                     f"(it has {', '.join(names)})", self.experiment)
        return None

    def row(self, name: str, case: str) -> Row:
        """The row for ``name`` at ``case``, whatever its status."""
        misspelt = self.undeclared(name, case)
        if misspelt is not None:
            raise misspelt
        row = self.require().row(name, case)
        if row is None:
            raise Problem("absent", f"{self.experiment} on {self.gpu} has no row {name!r} at case {case!r} "
                                    f"(rows: {', '.join(self.names())}; cases: {', '.join(self.cases())})",
                          self.experiment)
        return row

    def failure(self, row: Row) -> Problem:
        return Problem("row failed", f"{self.experiment}/{row.name} at {row.case} on {self.gpu} failed: {row.error}",
                       self.experiment)

    def timed(self, name: str, case: str) -> Row:
        """The row, verified and timed; a Problem saying why not otherwise."""
        row = self.row(name, case)
        where = f"{self.experiment}/{row.name} at {case} on {self.gpu}"
        if row.status == "failed":
            raise self.failure(row)
        if row.status == "skipped":
            raise Problem("skipped", f"{where} was skipped: {row.error}", self.experiment, self.gpu)
        if row.status == "xfail":
            raise Problem("row failed", f"{where} failed, as declared: {row.error}", self.experiment, self.gpu)
        if row.time is None:
            raise Problem("untimed", f"{where} was verified but never timed (not a timed case)", self.experiment, self.gpu)
        return row

    def pick(self, case: str, among: list[str] | str = "kernel", slowest: bool = False) -> Row:
        """The fastest (or slowest) verified, timed row at ``case`` among the names listed, or
        among every row of a kind ("kernel", "baseline", "phase"), by median."""
        return self.leaders(case, among, slowest)[0]

    def leaders(self, case: str, among: list[str] | str = "kernel", slowest: bool = False) -> list[Row]:
        """The rows that may be called the fastest (or slowest) at ``case`` by the noise rule:
        the first by median and every row tied with it, first first (``noise.leaders``)."""
        for name in [None] + (among if isinstance(among, list) else []):
            if (misspelt := self.undeclared(name, case)) is not None:
                raise misspelt
        rows = {r.name: r for r in self.require().rows if r.case == case and r.ok and r.time
                and (r.kind == among if isinstance(among, str) else r.name in among)}
        if not rows:
            raise Problem("absent", f"{self.experiment} on {self.gpu} has no verified, timed row "
                                    f"({among}) at {case!r}", self.experiment, self.gpu)
        costs = {name: noise.Spread.of(row.time) for name, row in rows.items()}
        return [rows[name] for name in noise.leaders(costs, slowest)]

    def rows(self, kind: str | None = None, timed: bool = True) -> list[Row]:
        """The main pass's rows; untimed ones include the large pass's, which take the place of
        any row at the same case in a main record that predates the large pass (format 5)."""
        record = self.record
        rows = record.rows if record else []
        large = _shown(self.large) if self.large is not None and not timed else None
        if large is not None:
            theirs = set(self.large_cases)
            rows = [r for r in rows if r.case not in theirs] + [r for r in large.rows if r.case in theirs]
        return [r for r in rows if (kind is None or r.kind == kind) and r.timed == timed]

    def phases(self, case: str) -> list[Row]:
        """A whole program's phases at ``case``, each verified and timed (a Problem otherwise)."""
        names = [r.name for r in self.rows("phase") if r.case == case]
        if not names:
            raise Problem("absent", f"{self.experiment} on {self.gpu} has no phase rows at {case!r}", self.experiment, self.gpu)
        return [self.timed(n, case) for n in names]

    def names(self) -> list[str]:
        """Row names in the order they ran: transfers, kernels, baselines (not a whole
        program's phases, which phase_chart shows)."""
        return list(dict.fromkeys(r.name for r in self.rows() if r.kind != "phase"))

    def cases(self, timed: bool = True) -> list[str]:
        return list(dict.fromkeys(r.case for r in self.rows(timed=timed)))


class Results:
    """Every experiment's declaration and stored results, read once per site build."""

    def __init__(self, root: Path):
        self.root = root
        self.store = Store(root / "results")
        self._views: dict[tuple[str, str], View] = {}
        self._declarations: dict[str, Experiment] = {}

    @cached_property
    def keys(self) -> CurrentKeys:
        """What every experiment's results are keyed on now (read once per site build)."""
        return CurrentKeys(self.root)

    @cached_property
    def folders(self) -> dict[str, Path]:
        return experiment_folders(self.root / "snippets")

    def folder(self, experiment: str) -> Path:
        if experiment not in self.folders:
            raise Problem("absent", f"no experiment named {experiment!r} in snippets/ "
                                    f"(have {', '.join(self.folders)})", experiment)
        return self.folders[experiment]

    def declaration(self, experiment: str) -> Experiment:
        folder = self.folder(experiment)
        if experiment not in self._declarations:
            try:
                self._declarations[experiment] = load(folder)
            except NotebookError as e:
                raise Problem("error", str(e), experiment) from e
        return self._declarations[experiment]

    def view(self, experiment: str, gpu: str) -> View:
        if experiment not in self.keys:
            raise Problem("absent", f"no experiment named {experiment!r} in snippets/ "
                                    f"(have {', '.join(sorted(self.keys.names()))})", experiment)
        key = (experiment, gpu)
        if key not in self._views:
            try:
                declared = self.declaration(experiment)
            except Problem:
                declared = None  # the key says why, wherever the results are shown
            view = View(Stored.read(self.store, experiment, gpu, self.keys), self.root, declared=declared)
            if "large" in self.keys[experiment].parts:
                view.large = Stored.read(self.store, experiment, gpu, self.keys, "large")
                view.large_cases = self.keys[experiment].large_cases
            self._views[key] = view
        return self._views[key]


def _shown(s: Stored) -> Record | None:
    """What a pass's tables draw from: a failed run's rows where it got that far, else the last
    good results (None when there are none, or the file is unreadable)."""
    if s.failed and s.failure.rows:
        return s.failure
    return s.record
