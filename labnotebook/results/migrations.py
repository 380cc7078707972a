"""Bringing a results file of any older format up to the current one (``format.VERSION``) on
load, as asv's ``update_to_N`` do, so that a format change never needs a GPU run.

Format history:

1. The first format (rows as plain dictionaries).
2. ``Check.bound_ratio`` (how close a row came to failing), ``RunRow.verify_s`` (the cost of
   verification), ``Provenance.device_index`` (which GPU of a node ran it),
   ``Record.peak_host_bytes`` and ``KernelInfo.language`` for every kernel.
3. ``Record.profile``: the Nsight Compute pass (``ProfilePass``), ``Provenance.ncu`` and
   ``WorkRow.intensity`` (where the roofline places a row); the ceilings add an ``fp32 fma`` row.
4. Keys by what was measured (``labnotebook/results/keys.py``): ``Record.sources`` and
   ``ProfilePass.sources``, the hash of each file of the key; ``source_hash`` is now their digest.
5. What the refresh cost: ``Record.wall_s`` (the whole of it, the sanitizer and profile passes
   included) and ``Record.phases_s`` (by ``REFRESH_PHASES``), in place of ``duration_s`` (the timed
   worker's time alone, which a migrated file keeps as ``phases_s["timed run"]``).
6. ``Record.part``: which pass made the record. The cases of 2^31 elements and more (``large_cases``)
   run in a pass of their own, ``build_results.py --large``, into ``<gpu>.large.json``; a
   file of format 5 or older is of the main pass (it may hold large cases' rows as well).
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


def _v2_to_v3(data: dict) -> dict:
    """Format 3 only added fields (the profile pass, the ncu version), absent meaning none."""
    return data


def _v3_to_v4(data: dict) -> dict:
    """Format 4 only added the per-file hashes of a key (absent: not recorded). Its digest is
    computed otherwise than format 3's source hash, so a file of format 3 reads as stale."""
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


MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5, 5: _v5_to_v6, 6: _v6_to_v7}


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
        data = MIGRATIONS[version](data)
        version += 1
    return data
