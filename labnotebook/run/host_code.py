"""The experiment's own code as the engine calls it: its host functions (``inputs``,
``reference``, ``tolerance``), with the failing function and case named, its Python-DSL kernel
modules, and the optional modules it needs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ..declare.experiment import Case
from ..errors import ExperimentError


class CaseError(Exception):
    """The experiment's own host code (``inputs``, ``reference``) failed at one case."""


def host_call(fn, what: str, case: Case | None, *args, **kwargs):
    """Call the experiment's own host code; if it raises, say which function and which case."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        where = f" (case {case.name})" if case else ""
        raise CaseError(f"host code {what}() raised {type(e).__name__}: {e}{where}") from e


def module_installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def load_module(path: Path, name: str):
    """Import the file at ``path`` as ``name``; what it raises is the experiment's error."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise ExperimentError(f"{path.name} raised {type(e).__name__} on import: {e}") from e
    return module
