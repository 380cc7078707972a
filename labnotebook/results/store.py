"""The committed results: one JSON file per experiment and GPU, written atomically.

Layout under ``results/``::

    <experiment>/<gpu-slug>.json           the last successful-or-verified run (rows, provenance)
    <experiment>/<gpu-slug>.failure.json   the last run that could not finish, if it came later
    <experiment>/<gpu-slug>.large.json     the large pass (``Record.part``): cases of 2^31 elements and more
    <experiment>/<gpu-slug>.large.failure.json   and its last failure, the same way
    ceilings/<gpu-slug>.json               the copy bandwidth measured at the start of the last run
    architectures/<sm_XY>.json             every kernel run as another architecture would (not a GPU's
                                           results: ``architectures.py``)

What a file holds is defined in ``format.py``: a ``Record`` in sorted, indented JSON with a
format version. Older versions are migrated on load; a file that is corrupt or not ours is
refused with a message that says how to fix it. Writing goes to a temporary file in
the same folder that is fsynced and then renamed over the old one, so a run killed at any point
leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Iterator

from ..errors import ResultsError
from .format import PASSES, VERSION, Part, Record
from .migrations import version_of

CEILINGS = "ceilings"
ARCHITECTURES = "architectures"  # not an experiment's: architectures.py


def gpu_slug(gpu: str) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``nvidia-h100-80gb-hbm3``."""
    return re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")


def jsonable(value):
    """JSON has no NaN or infinity: store them as strings, which the loader turns back."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


_NONFINITE = {repr(v): v for v in (math.inf, -math.inf, math.nan)}


def _restore(value):
    """The inverse of jsonable()."""
    kind = type(value)
    if kind is dict:
        return {k: _restore(v) for k, v in value.items()}
    if kind is list:
        return [_restore(v) for v in value]
    return _NONFINITE.get(value, value) if kind is str else value


def write_json(path: Path, record: dict) -> None:
    """Atomically replace ``path`` with ``record`` as sorted JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(jsonable(record), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are committed and read by others
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_json(path: Path) -> dict:
    """A JSON file's contents, non-finite numbers restored; a ResultsError if it is corrupt."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
        # Walking every value costs as much as the parse: only where one could be "nan" or "inf".
        return _restore(data) if '"nan"' in text or 'inf"' in text else data
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        where = f" at line {e.lineno}" if isinstance(e, json.JSONDecodeError) else ""
        raise ResultsError(f"{path.as_posix()} is corrupt ({getattr(e, 'msg', e)}{where}); restore it "
                           f"with `git checkout -- {path.as_posix()}` or re-run build_results.py")


def read_record(path: Path) -> Record:
    """Load a results file of any known format version as a Record."""
    return Record.from_json(read_json(path), path.as_posix())


def _gpu_of(path: Path) -> str:
    """The GPU a results file names (no migration changes it: its rows need not be read); a
    file that cannot be read is named by its GPU slug."""
    try:
        data = read_json(path)
        if isinstance(data, dict) and 1 <= (version_of(data) or 0) <= VERSION and isinstance(data.get("gpu"), str):
            return data["gpu"]
        return Record.from_json(data, path.as_posix()).gpu  # not ours: refused, with why
    except ResultsError:
        return parse_name(path)[0]


def _suffix(part: Part, failure: bool) -> str:
    return PASSES[part].suffix + (".failure" if failure else "") + ".json"


def parse_name(path: Path) -> tuple[str, Part, bool]:
    """What a results file's name says: its GPU's slug, its pass, and whether it is a failure record."""
    stem = path.name.removesuffix(".json")
    failure = stem.endswith(".failure")
    stem = stem.removesuffix(".failure")
    part = next((p for p in PASSES.values() if p.suffix and stem.endswith(p.suffix)), PASSES["main"])
    return stem.removesuffix(part.suffix), part.name, failure


class Store:
    """Results of every experiment on every GPU, under one folder."""

    def __init__(self, folder: Path):
        self.folder = folder

    def path(self, experiment: str, gpu: str, failure: bool = False, part: Part = "main") -> Path:
        return self.folder / experiment / (gpu_slug(gpu) + _suffix(part, failure))

    def read(self, experiment: str, gpu: str, part: Part = "main") -> Record | None:
        return self._read(self.path(experiment, gpu, part=part), part)

    def read_failure(self, experiment: str, gpu: str, part: Part = "main") -> Record | None:
        return self._read(self.path(experiment, gpu, failure=True, part=part), part)

    @staticmethod
    def _read(p: Path, part: Part) -> Record | None:
        if not p.exists():
            return None
        record = read_record(p)
        if record.part != part:
            raise ResultsError(f"{p.as_posix()} holds the {record.part} pass's results, not the {part} pass's; "
                               f"restore it with `git checkout -- {p.as_posix()}` or re-run build_results.py")
        return record

    def write(self, record: Record) -> Path:
        """Store a finished run; it supersedes any earlier failure record of its pass on its GPU."""
        p = self.path(record.experiment, record.gpu, part=record.part)
        write_json(p, record.to_json())
        self.path(record.experiment, record.gpu, failure=True, part=record.part).unlink(missing_ok=True)
        return p

    def write_failure(self, record: Record) -> Path:
        """Record a run that could not finish (``record.error`` says why), leaving the last good
        results untouched."""
        p = self.path(record.experiment, record.gpu, failure=True, part=record.part)
        write_json(p, record.to_json())
        return p

    def gpus(self, experiment: str, failures: bool = False) -> list[str]:
        """The GPUs that have main-pass results for ``experiment`` (or, with ``failures``, only a
        failure record), by their full names; a file that cannot be read is named by its GPU slug."""
        d = self.folder / experiment
        failed = [p for p in d.glob("*.json") if parse_name(p)[1:] == ("main", True)] if failures and d.exists() else []
        return sorted({_gpu_of(p) for p in self._files(experiment) + sorted(failed)})

    def experiments(self) -> list[str]:
        return sorted(p.name for p in self.folder.iterdir() if p.is_dir() and p.name != ARCHITECTURES) \
            if self.folder.exists() else []

    def records(self, experiment: str | None = None, part: Part = "main") -> Iterator[Record]:
        for name in [experiment] if experiment else self.experiments():
            for p in self._files(name, part):
                yield read_record(p)

    def _files(self, experiment: str, part: Part = "main") -> list[Path]:
        """The results files of one pass: ``<gpu>.json`` (main) or ``<gpu>.large.json``."""
        d = self.folder / experiment
        if not d.exists():
            return []
        return sorted(p for p in d.glob("*.json") if parse_name(p)[1:] == (part, False))
