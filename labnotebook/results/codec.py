"""The results format as JSON: a file's contents read into ``format``'s types (of any known
version, migrated first), refusing a field its type does not have; and the types written back,
with every row's optional fields left at their default left out."""

from __future__ import annotations

import dataclasses
import functools

from ..errors import ResultsError
from .format import (FORMAT, PARTS, Ceiling, KernelInfo, KernelProfile, MachineKey, Profile, ProfilePass, Provenance,
                     Record, Resources, SplitPart, Verdict)
from .migrations import migrate
from .rows import ROW_KINDS, STATUSES, Check, LaunchShape, Row, Timing


def record_from_json(data: dict, where: str = "a results file") -> Record:
    """Build a Record from a file's contents of any known format version."""
    try:
        return _record(migrate(data, where))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ResultsError(f"{where} does not hold a valid results record ({type(e).__name__}: {e}); "
                           f"restore it with `git checkout` or re-run build_results.py --force") from e


def record_to_json(record: Record) -> dict:
    return {**_plain(record), "format": FORMAT}


# -- reading --------------------------------------------------------------------------------

@functools.cache  # a file holds hundreds of rows, each built this way
def _field_names(cls) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def _build(cls, data: dict, **nested):
    """``cls(**data)``, refusing keys the class does not define (a typo is an error, not a
    silently ignored field); ``nested`` converts named fields first."""
    unknown = data.keys() - _field_names(cls)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    values = {k: (nested[k](v) if k in nested and v is not None else v) for k, v in data.items()}
    return cls(**values)


def row_from_json(data: dict) -> Row:
    """The row of the kind ``data`` names; a field that kind does not have is an error."""
    kind = data.get("kind")
    if kind not in ROW_KINDS or data.get("status") not in STATUSES:
        raise ValueError(f"row {data.get('name')!r} at {data.get('case')!r} has kind {kind!r}, "
                         f"status {data.get('status')!r}")
    fields = {k: v for k, v in data.items() if k != "kind"}
    return _build(ROW_KINDS[kind], fields, time=lambda t: _build(Timing, t), check=lambda c: _build(Check, c),
                  launch=lambda s: LaunchShape(tuple(s["grid"]), tuple(s["block"]), s.get("shared_bytes", 0)))


def _record(data: dict) -> Record:
    data = {k: v for k, v in data.items() if k != "format"}
    if data.get("part", "main") not in PARTS:
        raise ValueError(f"part {data['part']!r} is none of {', '.join(PARTS)}")
    return _build(
        Record, data,
        provenance=lambda p: _build(Provenance, p),
        rows=lambda rows: [row_from_json(r) for r in rows],
        ceiling=lambda c: _build(Ceiling, c),
        kernels=lambda ks: {n: _build(KernelInfo, k, resources=lambda r: _build(Resources, r))
                            for n, k in ks.items()},
        sanitizer=lambda s: {k: {t: _build(Verdict, v) for t, v in tools.items()} for k, tools in s.items()},
        profile=profile_from_json,
        machine=lambda m: _build(MachineKey, m),
        split=lambda parts: [_build(SplitPart, p, ceiling=lambda c: _build(Ceiling, c)) for p in parts],
    )


def profile_from_json(data: dict) -> ProfilePass:
    def one(p: dict) -> Profile:
        return _build(Profile, p, launches=lambda ls: [_build(KernelProfile, k) for k in ls])
    return _build(ProfilePass, data, profiles=lambda ps: {n: one(p) for n, p in ps.items()})


# -- writing ----------------------------------------------------------------------------------

def _plain(value):
    """Dataclasses as dictionaries, tuples as lists; optional fields left at their default
    (None, False) are left out of rows, so files stay small and diffs readable."""
    if dataclasses.is_dataclass(value):
        out = {"kind": value.kind} if isinstance(value, Row) else {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if isinstance(value, Row) and f.default is not dataclasses.MISSING and v == f.default:
                continue
            out[f.name] = _plain(v)
        return out
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
