"""``build_results.py --accept NAME``: keep a run that was held back, without running it again.

A run that could only skip, for want of a module or toolchain on its machine, what the last
results verified is written as a failure beside them (``policy.lost``), so that no verified
number is traded for "not run" unnoticed. Where that trade is the one wanted (no machine at hand
has the toolchain), ``--force`` runs the experiment again and makes it; ``--accept`` makes it
with the run already recorded, on each GPU and pass that has one. Only a run that failed for
nothing else (its rows judged again by the policy), that was measured from the files its key
holds now, and that has nothing a sanitizer pass would have checked (no CUDA kernel verified in
it: a failed run never reaches that pass) is accepted. Not a number, a date or a commit changes;
the profile a failed run never took is left to the next build, which takes the profiles of fresh
results that lack one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ..declare.discover import load
from ..results.format import PASSES, Record
from ..results.freshness import CurrentKeys, is_stale
from ..results.rows import KernelRow
from ..results.store import Store
from . import policy


@dataclass(frozen=True)
class Accepted:
    experiment: str
    gpu: str
    part: str
    what: str  # the run and what it gave up, or why it was not accepted
    done: bool


def accept(root: Path, store: Store, names: list[str]) -> list[Accepted]:
    """Accept the held-back run of each of ``names`` on every GPU and pass that has one."""
    current, out = CurrentKeys(root), []
    for name in names:
        exp = load(current.folders[name])
        for gpu in store.gpus(name, failures=True):
            for part in PASSES:
                failure = store.read_failure(name, gpu, part)
                if failure is None:
                    continue
                record, why = judged_again(exp, failure, store.read(name, gpu, part), current, name)
                if record is not None:
                    store.write(record)
                out.append(Accepted(name, gpu, part, why, record is not None))
    return out


def judged_again(exp, failure: Record, previous: Record | None, current: CurrentKeys,
                 name: str) -> tuple[Record | None, str]:
    """``failure`` as the record ``--force`` would have written, and what it gave up; or None and
    why it cannot stand for a run."""
    when = f"the run of {failure.provenance.date[:19] if failure.provenance else '?'}"
    if is_stale(failure, current[name]):
        return None, f"{when} was measured from other files than the experiment's now: run it again"
    record = policy.judge(exp, dataclasses.replace(failure, status="ok", problems=[], error=None, failed_at=None))
    if record.status != "ok":
        return None, f"{when} failed for more than what it could not run here: {policy.summary_reason(record.problems)}"
    given_up = policy.lost(previous, record)
    if not given_up or len(given_up) != len(failure.problems):
        return None, f"{when} was not held back for what it could not run here: {policy.summary_reason(failure.problems)}"
    cuda = {name for name, info in record.kernels.items() if info.language == "cuda"}
    if any(isinstance(r, KernelRow) and r.status == "ok" and r.name in cuda for r in record.rows):
        return None, f"{when} verified CUDA kernels that no sanitizer pass checked: run it again with --force"
    return record, f"{when}, in place of the results it held back: {'; '.join(given_up)}"
