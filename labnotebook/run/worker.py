"""One experiment in one process: ``python -m labnotebook.run.worker --out FILE NAME``.

The build starts one of these per experiment (and one to measure the copy ceiling), with a time
limit, so a crash, a hang or a sticky CUDA error ends this process and nothing else. The record
goes to ``--out`` as JSON; on an engine error the file holds ``{"error": ...}`` and the exit
status is 2; on anything unforeseen Python's traceback reaches the build through stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import NotebookError


def measure_ceiling() -> dict:
    from .device import describe, open_context
    from .timing import GpuTimer

    cuda, device, context = open_context()
    try:
        ceiling = GpuTimer(cuda).copy_bandwidth()
        info = describe(cuda, device)
    finally:
        context.pop()
    row = {"kind": "ceiling", "name": "copy", "case": "1 GiB device-to-device", "params": {},
           "timed": True, "status": "ok", "bytes": ceiling["bytes"],
           "time": {k: v for k, v in ceiling.items() if k not in ("bytes", "gbs")}}
    return {"experiment": "ceilings", "title": "Measured ceilings", "gpu": info["gpu"],
            "provenance": info, "ceiling": {k: ceiling[k] for k in ("gbs", "median_ms", "bytes")},
            "rows": [row], "status": "ok", "problems": [], "kernels": {}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="labnotebook.run.worker")
    parser.add_argument("experiment", help="experiment folder name, or 'ceilings'")
    parser.add_argument("--root", type=Path, default=Path.cwd())
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ceiling", type=json.loads, default=None, help="the run's ceiling record")
    parser.add_argument("--verify-only", action="store_true",
                        help="only verify at the edge cases: no timing, no baselines (for sanitizers)")
    args = parser.parse_args(argv)
    try:
        if args.experiment == "ceilings":
            record = measure_ceiling()
        else:
            from ..experiments import load
            from .execute import run_experiment

            folder = args.root / "snippets" / args.experiment
            exp = load(folder)
            if args.verify_only:
                record = run_experiment(exp, folder, args.root, {"gbs": None, "median_ms": None, "bytes": None},
                                        cases=[], with_baselines=False, log=lambda line: None)
            else:
                record = run_experiment(exp, folder, args.root, args.ceiling,
                                        log=lambda line: print(line, flush=True))
    except NotebookError as e:
        args.out.write_text(json.dumps({"error": str(e), "detail": e.detail}))
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2
    args.out.write_text(json.dumps(record, allow_nan=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
