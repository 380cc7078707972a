"""Bringing a results file of any older format up to the current one (``format.VERSION``) on
load, as asv's ``update_to_N`` do, so that a format change never needs a GPU run. A version
that only adds optional fields (absent meaning: not recorded) needs no function here; the
format's history is in ``format.py``, beside ``VERSION``.
"""

from __future__ import annotations

from ..errors import ResultsError
from .format import FORMAT, NAME, VERSION


def _v1_to_v2(data: dict) -> dict:
    """Format 1 recorded no bound ratio, device index, verification time or peak memory, and
    named a kernel's language only for Python-DSL kernels."""
    for row in data.get("rows") or []:
        check = row.get("check")
        if check is not None:
            # Recoverable where the bound does not depend on the reference: exact rows, and
            # absolute-only tolerances. Elsewhere unknown, and the site shows the raw errors.
            if check["max_abs_err"] == 0:
                check["bound_ratio"] = 0.0
            elif check.get("rtol") == 0 and check.get("atol", 0) > 0:
                check["bound_ratio"] = check["max_abs_err"] / check["atol"]
            else:
                check["bound_ratio"] = None
    for info in (data.get("kernels") or {}).values():
        info.setdefault("language", "cuda")
    if data.get("provenance") is not None:
        data["provenance"].setdefault("device_index", None)
    return data


def _v4_to_v5(data: dict) -> dict:
    """Format 5 records the whole refresh's wall time and its phases. Before it, only the timed
    worker's time was kept; it stays, as that one phase, and the whole is unknown."""
    duration = data.pop("duration_s", None)
    data["wall_s"] = None
    data["phases_s"] = {"timed run": duration} if duration is not None else {}
    return data


def _v5_to_v6(data: dict) -> dict:
    """Format 6 names the pass that made a record; every earlier one was the only pass."""
    data["part"] = "main"
    return data


def _v6_to_v7(data: dict) -> dict:
    """Format 7 hashes a key's files by their meaning and records machine code; an older file's
    hashes are of every file's bytes, and it has no machine code on record."""
    data["key_rule"] = "text"
    return data


# The versions whose files need a change to read as the next one; any other only added fields.
MIGRATIONS = {1: _v1_to_v2, 4: _v4_to_v5, 5: _v5_to_v6, 6: _v6_to_v7}


def version_of(data: dict) -> int | None:
    fmt = data.get("format") if isinstance(data, dict) else None
    name, _, number = str(fmt).partition("/")
    return int(number) if name == NAME and number.isdigit() else None


def migrate(data: dict, where: str = "a results file") -> dict:
    """Bring a file's contents of any known format up to ``VERSION``."""
    version = version_of(data)
    if version is None or version > VERSION:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        newer = " (newer than this notebook: update your checkout)" if version else ""
        raise ResultsError(f"{where} has format {found!r}{newer}; this notebook reads {NAME}/1 to {FORMAT}; "
                           "re-run build_results.py --force to rewrite it")
    while version < VERSION:
        if version in MIGRATIONS:
            data = MIGRATIONS[version](data)
        version += 1
    return data
