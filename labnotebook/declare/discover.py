"""Find experiments under ``snippets/`` and load their declarations (what a result is keyed
on, found from the declaration, is ``keys.py``'s business)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from ..errors import ExperimentError
from .experiment import Experiment, Kernel

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


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
        if isinstance(k, Kernel):
            found = global_functions((folder / k.source).read_text(encoding="utf-8", errors="replace"))
            if k.function not in found:
                have = f"the file's __global__ functions: {', '.join(found)}" if found else "the file has none"
                raise ExperimentError(f"{folder.name}: {k.source} has no __global__ function named {k.function!r} "
                                      f"(Kernel's second argument); {have}")
    names = [c.name for c in exp.all_cases()]
    if len(set(names)) != len(names):
        raise ExperimentError(f"{folder.name}: case names must be unique, got {names}")
    return exp


def global_functions(cuda: str) -> list[str]:
    """The names of the ``__global__`` functions a CUDA source defines, in order: a read of the
    text, not a compile, so a misspelled name is caught with no nvcc."""
    text = _COMMENT.sub(" ", cuda)
    names = []
    for start in (m.end() for m in re.finditer(r"\b__global__\b", text)):
        # The name is the first call-like word after __global__ that is not an attribute such as
        # __launch_bounds__(256) or __cluster_dims__(2, 1, 1), whose arguments are skipped.
        while (m := _CALL.search(text, start)) and m.group(1).startswith("__"):
            start = _closing(text, m.end())
        if m:
            names.append(m.group(1))
    return names


def _closing(text: str, i: int) -> int:
    """The index just past the parenthesis that closes the one open before ``i``."""
    depth = 1
    while i < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return i
