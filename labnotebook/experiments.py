"""Find experiments under ``snippets/``, load their declarations, and hash their sources.

The source hash covers everything that can change a measurement: the experiment's folder
(kernels and host code) and the engine code that runs it (``labnotebook/run/``). Rendering code
is left out on purpose, so a change to a table's layout does not make every result stale.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

from .errors import ExperimentError
from .run.declare import Experiment

ENGINE_DIR = Path(__file__).parent / "run"
HASHED_SUFFIXES = {".cu", ".cuh", ".h", ".py"}


def source_files(folder: Path) -> list[Path]:
    """The files that ran: what the source hash covers and what the site links."""
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and p.suffix in HASHED_SUFFIXES and "__pycache__" not in p.parts)


def _hash_files(h, folder: Path) -> None:
    for p in source_files(folder):
        h.update(p.relative_to(folder).as_posix().encode() + b"\0")
        h.update(p.read_bytes().replace(b"\r\n", b"\n") + b"\0")


def engine_hash() -> str:
    h = hashlib.sha256()
    _hash_files(h, ENGINE_DIR)
    return h.hexdigest()[:16]


def source_hash(folder: Path) -> str:
    """Hash of an experiment's folder plus the engine that runs it."""
    h = hashlib.sha256()
    _hash_files(h, folder)
    h.update(engine_hash().encode())
    return h.hexdigest()[:16]


def experiment_folders(snippets: Path) -> dict[str, Path]:
    """Every folder of ``snippets/`` with an ``experiment.py``, by name."""
    return {p.parent.name: p.parent for p in sorted(snippets.glob("*/experiment.py"))}


def load(folder: Path) -> Experiment:
    """Import ``folder/experiment.py`` and return its ``experiment``, named after the folder."""
    path = folder / "experiment.py"
    module_name = f"notebook_experiments.{folder.name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise ExperimentError(f"{folder.name}: experiment.py raised {type(e).__name__}: {e}") from e
    exp = getattr(module, "experiment", None)
    if not isinstance(exp, Experiment):
        raise ExperimentError(f"{folder.name}: experiment.py must define `experiment = Experiment(...)`")
    exp.name = folder.name
    for k in exp.kernels:
        if not (folder / k.source).is_file():
            raise ExperimentError(f"{folder.name}: kernel file {k.source} does not exist")
    names = [c.name for c in exp.all_cases()]
    if len(set(names)) != len(names):
        raise ExperimentError(f"{folder.name}: case names must be unique, got {names}")
    return exp
