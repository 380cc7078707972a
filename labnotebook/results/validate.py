"""``build_results.py --validate PATH``: whether a results file, or every one in a folder, may be
committed. No GPU: it reads the files and hashes this checkout's sources.

A results file that arrives from elsewhere (a reader's GPU, a machine of the fleet) is trusted
only once it passes, each check with its reason where it does not:

- **format**: a record this engine reads (any known format version), in the file its GPU and
  pass name (``<experiment>/<gpu-slug>[.large][.failure].json``);
- **provenance**: the GPU named, and what the run was made with (``PROVENANCE``), and the commit
  it was made at, which this repository has;
- **every row verified or declared**: a kernel or baseline row is verified (``ok``), a declared
  expected failure (``xfail``), or skipped with its reason; a failure record says why the run
  failed;
- **its key**: the record's own hashes add up to its digest, and it is fresh against the sources
  here, as ``--check`` judges it (machine code where only CUDA files changed);
- **nothing physically impossible**: no bandwidth above the run's own copy ceiling by more than
  ``CACHE_MARGIN`` (the L2 is flushed before every timed run: none of the committed results
  exceeds it by more than a few percent), and no rate above the GPU's dense tensor-core peak
  (``DENSE_FLOPS_PER_SM_CLOCK`` at its maximum clock). A figure past either is the mark of a run
  that did less work than it counted (one block launched for 1024 rows), whatever its rows say.

An architecture run (``architectures/<sm_XY>.json``) is checked for its format and that no kernel
failed.
"""

from __future__ import annotations

import functools
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import NotebookError
from . import architectures, keys, metrics
from .format import Record
from .freshness import CurrentKeys, Stored
from .rows import RunRow
from ..run import needs
from ..run.needs import BadNeeds
from .store import ARCHITECTURES, gpu_slug, parse_name, read_json, read_record

CACHE_MARGIN = 1.5
# What a record must say of the machine it was made on.
PROVENANCE = ("gpu", "date", "compute_capability", "sm_count", "max_sm_clock_mhz", "driver", "nvcc", "git_commit")
# Dense fp16 tensor-core flops an SM can do per clock, by compute capability (NVIDIA's
# architecture whitepapers; 2 flops a multiply-add): the most any kernel can do, whatever it is.
DENSE_FLOPS_PER_SM_CLOCK = {(7, 5): 1024, (8, 0): 2048, (8, 6): 1024, (8, 7): 2048, (8, 9): 1024,
                            (9, 0): 4096, (10, 0): 8192, (10, 3): 8192, (12, 0): 1024, (12, 1): 1024}


@dataclass(frozen=True)
class Refusal:
    path: str
    why: str


def validate(path: Path, root: Path) -> tuple[list[Path], list[Refusal]]:
    """The results files under ``path`` (a file or a folder) that pass, and why each other does not."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*.json") if not p.name.startswith("."))
    if not files:
        raise NotebookError(f"{path.as_posix()}: no results files there")
    current, passed, refused = CurrentKeys(root), [], []
    for f in files:
        reasons = _architecture_run(f) if f.parent.name == ARCHITECTURES else _record(f, current, root)
        refused += [Refusal(f.as_posix(), why) for why in reasons]
        if not reasons:
            passed.append(f)
    return passed, refused


def _architecture_run(path: Path) -> list[str]:
    try:
        run = architectures.ArchitectureRun.from_json(read_json(path), path.as_posix())
    except NotebookError as e:
        return [str(e)]
    return [f"a kernel failed as compute capability {run.capability}: {line}" for line in run.failed()]


def _record(path: Path, current: CurrentKeys, root: Path) -> list[str]:
    try:
        record = read_record(path)
    except NotebookError as e:
        return [str(e)]
    slug, part, failure = parse_name(path)
    out = _named_as(record, path, slug, part, failure) + _provenance(record, root)
    if record.status == "failed" or failure:
        return out + ([] if record.error else ["a failure record that does not say why the run failed"])
    out += [f"{r.name} @ {r.case}: {r.status}, neither verified nor declared" + (f" ({r.error})" if r.error else "")
            for r in record.rows if isinstance(r, RunRow) and not _declared(r)]
    return out + _key(record, current) + _impossible(record)


def _named_as(record: Record, path: Path, slug: str, part: str, failure: bool) -> list[str]:
    out = []
    if not (record.gpu or "").strip():
        return ["names no GPU"]
    if gpu_slug(record.gpu) != slug:
        out.append(f"holds results of an {record.gpu}, but its name says {slug}")
    if record.experiment != path.parent.name:
        out.append(f"holds {record.experiment}'s results, but lies in {path.parent.name}/")
    if record.part != part:
        out.append(f"holds the {record.part} pass, but its name says the {part} pass")
    return out


def _provenance(record: Record, root: Path) -> list[str]:
    p = record.provenance
    if p is None:
        return ["no provenance: where and with what it was made"]
    missing = [f for f in PROVENANCE if getattr(p, f, None) in (None, "")]
    out = [f"its provenance does not say {', '.join(missing)}"] if missing else []
    if p.gpu and p.gpu != record.gpu:
        out.append(f"made on an {p.gpu}, by its provenance, but filed as an {record.gpu}'s")
    if p.git_commit and not _known_commit(p.git_commit, root):
        out.append(f"made at commit {p.git_commit}, which this repository does not have: push it, or run at one of ours")
    return out


@functools.lru_cache(maxsize=64)  # most files of a tree name one of a few commits
def _known_commit(commit: str, root: Path) -> bool:
    """Whether git knows ``commit`` here; True where there is no git to ask (a copy of the tree)."""
    try:
        proc = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=root, capture_output=True,
                              timeout=30)
    except OSError:
        return True
    if proc.returncode == 0:
        return True
    inside = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=root, capture_output=True, timeout=30)
    return inside.returncode != 0


def _declared(row: RunRow) -> bool:
    return row.status in ("ok", "xfail") or (row.status == "skipped" and bool((row.error or "").strip()))


def _key(record: Record, current: CurrentKeys) -> list[str]:
    if record.sources and keys.digest(record.sources, record.key_rule) != record.source_hash:
        return ["its key does not add up: the hashes of its files do not make its digest (edited by hand?)"]
    if record.experiment not in current:
        return [f"no experiment {record.experiment} here"]
    stored = Stored.of(record, current)
    return [] if stored.state == "fresh" else [f"stale: {stored.reason()}; fix: `{stored.command}` on an {record.gpu}"]


def _impossible(record: Record) -> list[str]:
    out, p = [], record.provenance
    try:
        per_clock = DENSE_FLOPS_PER_SM_CLOCK[needs.parsed(p.compute_capability)]
    except (AttributeError, BadNeeds, KeyError):  # an architecture past the table: the most any has
        per_clock = max(DENSE_FLOPS_PER_SM_CLOCK.values())
    peak = p.sm_count * p.max_sm_clock_mhz * 1e6 * per_clock / 1e12 if p and p.sm_count and p.max_sm_clock_mhz else None
    for r in record.rows:
        value, unit = metrics.throughput(r)
        if value is None or r.kind == "transfer" or r.on_cpu:
            continue
        ceiling = metrics.ceiling_gbs(record, r)
        if unit == "GB/s" and ceiling and value > CACHE_MARGIN * ceiling:
            out.append(f"{r.name} @ {r.case}: {value:,.0f} GB/s, {value / ceiling:.1f}× the run's own copy ceiling "
                       f"({ceiling:,.0f} GB/s): more than a cache could explain")
        if unit == "TFLOP/s" and peak and value > peak:
            out.append(f"{r.name} @ {r.case}: {value:,.1f} TFLOP/s, above the {record.gpu}'s dense tensor-core "
                       f"peak ({peak:,.0f} TFLOP/s at its {p.max_sm_clock_mhz} MHz)")
    return out
