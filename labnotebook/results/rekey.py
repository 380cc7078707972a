"""``build_results.py --rekey``: bring the keys of fresh results up to date, without a GPU.

A record is rekeyed only when it is fresh (``freshness.py``): measured from the files its key
holds now by the rule it names, or, where only CUDA files changed, from kernels that compile to
the same machine code. Its source hashes are then written by the current rule (``keys.RULE``),
with the machine code its kernels compile to here (the same nvcc build as the record's, or, for
a record with none on record, the same nvcc version as its provenance names), and its profile's
hashes with them. Nothing else in the file changes: not a number, a date or a commit. A stale,
failed or unreadable record is left as it is: only a run on a GPU can renew it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from . import keys, machine
from .freshness import CurrentKeys, Stored
from .format import MachineKey, Record
from .store import Store, write_json


@dataclass(frozen=True)
class Rekeyed:
    experiment: str
    gpu: str
    part: str
    why: str  # why its key was due (Stored.rekey_reason)
    machine: str  # what it now holds of machine code, or why none


def rekey(root: Path, store: Store) -> list[Rekeyed]:
    """Rewrite the key of every fresh record whose key is due; what was rewritten, in order."""
    current, out = CurrentKeys(root), []
    for name in current.names():
        if current[name].error:
            continue
        for gpu in store.gpus(name):
            for part in current[name].parts:
                stored = Stored.read(store, name, gpu, current, part)
                if not stored.rekey_due or stored.record.part != part:
                    continue  # a main record the large pass reads as its own is rekeyed as the main one
                record, why = stored.record, stored.rekey_reason()
                code, said = _machine_code(current, name, record)
                write_json(store.path(name, gpu, part=part), rekeyed(record, current[name], code,
                                                                      current.profiler).to_json())
                out.append(Rekeyed(name, gpu, part, why, said))
    return out


def rekeyed(record: Record, key: keys.Key, code: MachineKey | None, profiler: keys.Key) -> Record:
    """``record`` keyed by ``key`` now, with ``code``; its profile's hashes too, where it is fresh."""
    profile = record.profile
    fresh = profile is not None and not keys.changed(profile.sources, profiler.files_by(record.key_rule))
    if fresh and profile.sources:
        profile = dataclasses.replace(profile, sources=dict(profiler.files))
    return dataclasses.replace(record, source_hash=key.digest, sources=dict(key.files), key_rule=keys.RULE,
                               machine=code, profile=profile)


def _machine_code(current: CurrentKeys, name: str, record: Record) -> tuple[MachineKey | None, str]:
    """The machine code to record, and a few words on it. A fresh record keeps its own (its
    kernels compile to exactly it); one with none gets what its kernels compile to here, where
    this nvcc is the version that compiled them."""
    if record.machine is not None:
        return record.machine, "its machine code kept"
    if not current[name].cubins:
        return None, "no CUDA kernels"
    arch = _arch(record)
    now = current.machine(name, arch) if arch else "no architecture on record"
    if isinstance(now, str):
        return None, f"no machine code recorded: {now}"
    built_with = record.provenance.nvcc if record.provenance else None
    if now.nvcc.split()[0] != built_with:
        return None, f"no machine code recorded: compiled by nvcc {built_with}, this is {now.nvcc.split()[0]}"
    return now, f"machine code recorded ({len(now.cubins)} kernel{'' if len(now.cubins) == 1 else 's'}, {arch})"


def _arch(record: Record) -> str | None:
    cc = record.provenance.compute_capability if record.provenance else None
    return machine.arch_of(cc) if cc else None
