"""``build_results.py --summary``: every stored result as one JSON object per line, no GPU needed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Iterator

from . import metrics
from .experiments import engine_hash, experiment_folders, source_hash
from .store import CEILINGS, Store


def current_hashes(root: Path) -> dict[str, str]:
    """What each experiment's results must have been made from to count as fresh."""
    hashes = {name: source_hash(folder) for name, folder in experiment_folders(root / "snippets").items()}
    hashes[CEILINGS] = engine_hash()
    return hashes


def summary_lines(root: Path, store: Store) -> Iterator[dict]:
    hashes = current_hashes(root)
    for record in store.records():
        stale = metrics.is_stale(record, hashes.get(record["experiment"]))
        for row in record["rows"]:
            value, unit = metrics.throughput(row)
            yield {
                "experiment": record["experiment"], "kernel": row["name"], "case": row["case"],
                "gpu": record["gpu"], "kind": row["kind"], "status": row["status"],
                "median_ms": metrics.median_ms(row), "value": value, "unit": unit,
                "pct_of_ceiling": metrics.pct_of_ceiling(row, record),
                "verified": metrics.verified(row), "stale": stale,
                "date": record["provenance"]["date"],
            }


def print_summary(root: Path, store: Store) -> None:
    try:
        for line in summary_lines(root, store):
            print(json.dumps(line))
    except BrokenPipeError:  # `--summary | head` closed the pipe: not an error
        sys.stderr.close()
