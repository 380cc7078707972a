"""``build_results.py --summary``: every stored result as one JSON object per line, no GPU needed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Iterator

from . import metrics
from .freshness import CurrentKeys, Stored
from .format import PARTS
from .rows import CHECKED
from .store import Store


def summary_lines(root: Path, store: Store) -> Iterator[dict]:
    current = CurrentKeys(root)
    for record in (r for part in PARTS for r in store.records(part=part)):
        stale = Stored.of(record, current).stale  # machine code judged as --check judges it
        for row in record.rows:
            value, unit = metrics.throughput(row)
            yield {
                "experiment": record.experiment, "kernel": row.name, "case": row.case,
                "gpu": record.gpu, "kind": row.kind, "status": row.status,
                "median_ms": metrics.median_ms(row), "value": value, "unit": unit,
                "pct_of_ceiling": metrics.pct_of_ceiling(row, record),
                "verified": metrics.verified(row), "stale": stale,
                "bound_ratio": row.check.bound_ratio if isinstance(row, CHECKED) and row.check else None,
                "date": record.provenance.date, "pass": record.part,
            }


def print_summary(root: Path, store: Store) -> None:
    try:
        for line in summary_lines(root, store):
            print(json.dumps(line))
    except BrokenPipeError:  # `--summary | head` closed the pipe: not an error
        sys.stderr.close()
