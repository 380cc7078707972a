"""What ran, as another architecture would run it: ``results/architectures/<arch>.json``.

``build_results.py --arch 8.6`` runs every experiment's kernels at its edge cases as a GPU of
compute capability 8.6 would (each kernel's PTX for ``compute_86``, compiled by the driver for
the GPU at hand, within 8.6's shared memory a block: ``Runner(emulate=...)``), and keeps, per
kernel, whether it verified, and if not, why. These are never a GPU's results: no timing, no
baseline, kept apart from ``results/<experiment>/`` and never read as a GPU's. One file per
architecture, replaced whole by its next run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import ResultsError
from ..run import needs
from .format import Record
from .rows import RunRow
from .store import ARCHITECTURES as FOLDER, read_json, write_json

FORMAT = 1

Status = Literal["verified", "xfail", "unavailable", "failed"]


@dataclass(frozen=True)
class Outcome:
    """One kernel at every edge case it takes: ``verified`` where each of those passed (``cases``
    of them; ``why`` names the cases the architecture could not take, if any), ``xfail`` where it failed as its declaration says it does (``why``: the first
    such case), ``unavailable`` where the architecture cannot run it (``why``), ``failed`` where
    any case failed, or the experiment's run did (``why``: the first error)."""

    status: Status
    cases: int = 0
    why: str = ""


@dataclass(frozen=True)
class EntryRun:
    """One experiment's kernels as the architecture ran them: when, at which commit, and each
    kernel's outcome (a later run of some experiments keeps the others' as they were)."""

    date: str
    commit: str | None
    kernels: dict[str, Outcome]


@dataclass
class ArchitectureRun:
    """Every experiment's kernels, run as compute capability ``capability`` on ``gpu``."""

    capability: str  # "8.6"
    gpu: str  # the GPU it ran on
    experiments: dict[str, EntryRun] = field(default_factory=dict)

    @property
    def arch(self) -> str:
        return needs.arch_of(needs.parsed(self.capability))

    def failed(self) -> list[str]:
        return [f"{e}: {k}: {o.why}" for e, run in self.experiments.items() for k, o in run.kernels.items()
                if o.status == "failed"]

    def to_json(self) -> dict:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, data: dict, where: str) -> ArchitectureRun:
        if data.get("format") != FORMAT:
            raise ResultsError(f"{where}: architecture run of format {data.get('format')!r}; this engine reads {FORMAT}")
        try:
            experiments = {e: EntryRun(run["date"], run.get("commit"),
                                       {k: Outcome(**o) for k, o in run["kernels"].items()})
                           for e, run in data["experiments"].items()}
            return cls(data["capability"], data["gpu"], experiments)
        except (KeyError, TypeError, AttributeError) as e:
            raise ResultsError(f"{where}: not an architecture run ({type(e).__name__}: {e})") from None


def outcomes(record: Record) -> dict[str, Outcome]:
    """Each kernel's outcome from its rows in an architecture run's record, judged (expected
    failures marked ``xfail``: ``policy.judge``)."""
    out = {}
    for name in record.kernels:
        rows = [r for r in record.rows if isinstance(r, RunRow) and r.kind == "kernel" and r.name == name]
        failed = [r for r in rows if r.status == "failed"]
        ok = [r for r in rows if r.status == "ok"]
        xfail = [r for r in rows if r.status == "xfail"]
        unavailable = [r for r in rows if r.unavailable]
        if failed:
            out[name] = Outcome("failed", len(ok), f"{failed[0].case}: {failed[0].error}")
        elif xfail:
            out[name] = Outcome("xfail", len(ok), f"{xfail[0].case}: {xfail[0].error}")
        elif unavailable and not ok:
            out[name] = Outcome("unavailable", 0, unavailable[0].error or "")
        elif ok:  # where some cases were beyond the architecture (its shared memory), which and why
            out[name] = Outcome("verified", len(ok), f"unavailable at {len(unavailable)} of {len(rows)} cases: "
                                f"{unavailable[0].error}" if unavailable else "")
        else:  # it took none of the cases: nothing was checked
            out[name] = Outcome("failed", 0, "no case ran it: " + "; ".join(sorted({r.error or "" for r in rows})))
    return out


def path(results: Path, capability: str) -> Path:
    return results / FOLDER / f"{needs.arch_of(needs.parsed(capability))}.json"


def write(results: Path, run: ArchitectureRun) -> Path:
    p = path(results, run.capability)
    write_json(p, run.to_json())
    return p


def read_all(results: Path) -> list[ArchitectureRun]:
    """Every architecture run in ``results``, oldest architecture first."""
    runs = [ArchitectureRun.from_json(read_json(p), p.as_posix()) for p in sorted((results / FOLDER).glob("*.json"))]
    return sorted(runs, key=lambda r: needs.parsed(r.capability))
