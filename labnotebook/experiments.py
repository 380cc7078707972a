"""Find experiments under ``snippets/`` and load their declarations (what a result is keyed
on, found from the declaration, is ``keys.py``'s business)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from .errors import ExperimentError
from .run.declare import Experiment


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
