"""One experiment in one process: ``python -m labnotebook.run.worker --out FILE NAME``.

The build runs one of these per experiment (forked from its GPU's ``forkserver``; with
``--large``, for its cases of 2^31 elements and more alone), one per GPU to measure the copy ceiling,
one per compute-sanitizer tool, and one per GPU under Nsight Compute for every experiment to
profile (``--profile A B ...``), each with a time limit, so a crash, a hang or a sticky CUDA
error ends this process and nothing else. The record goes to ``--out`` as JSON (``format.Record``);
on an engine error the file holds ``{"error": ...}`` and the exit status is 2; on anything
unforeseen Python's traceback reaches the build through stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from pathlib import Path

from ..errors import NotebookError
from ..results.format import Ceiling


def _names(values: list[str] | None) -> set[str] | None:
    return set(values) if values else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="labnotebook.run.worker")
    parser.add_argument("experiment", nargs="+", help="experiment folder name, or 'ceilings' (several with --profile)")
    parser.add_argument("--root", type=Path, default=Path.cwd())
    parser.add_argument("--out", type=Path, required=True, help="the record (a folder of accounts with --profile)")
    parser.add_argument("--ceiling", type=json.loads, default=None, help="the run's ceiling, as JSON")
    parser.add_argument("--verify-only", action="store_true",
                        help="only verify at the edge cases: no timing, no baselines (for sanitizers)")
    parser.add_argument("--paths-cover", action="store_true",
                        help="with --verify-only: only the edge cases that together take every declared path "
                             "(the sanitizer pass's, Experiment.sanitizer_cases)")
    parser.add_argument("--emulate", metavar="X.Y",
                        help="run as a GPU of this compute capability would (its PTX, its limits): the edge "
                             "cases alone, verified, kernels alone (build/architectures.py)")
    parser.add_argument("--large", action="store_true",
                        help="the large pass: only the cases of 2^31 elements and more, verified, not timed")
    parser.add_argument("--profile", action="store_true",
                        help="launch each kernel and GPU baseline of each experiment once at its profile case, "
                             "for ncu (no record)")
    parser.add_argument("--kernel", nargs="+", help="run only these kernels and baselines")
    parser.add_argument("--case", nargs="+", help="run only these cases")
    parser.add_argument("--cubin-cache", type=Path, default=None,
                        help="the cubin cache the build's workers share (the project's .cache/cubins)")
    args = parser.parse_args(argv)
    cpus = os.environ.get("NOTEBOOK_CPUS")
    if cpus and hasattr(os, "sched_setaffinity"):  # this GPU's share of the host's cores
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
    if args.profile:  # several experiments, one account each (run/profiled.py)
        from .ncu_target import profile_session

        return profile_session(args.experiment, args.root, args.cubin_cache, args.out, _names(args.kernel))
    if len(args.experiment) > 1:
        parser.error("one experiment at a time, but with --profile")
    args.experiment = args.experiment[0]
    try:
        if args.experiment == "ceilings":
            from .clock import Clock
            from .roofs import measure_ceiling

            clock = Clock()
            with clock("timing"):
                record = measure_ceiling()
            record.phases_s = clock.rounded()
        else:
            from ..declare.discover import load
            from ..declare.experiment import Kernel
            from .execute import run_experiment
            from .needs import parsed

            folder = args.root / "snippets" / args.experiment
            exp = load(folder)
            chosen = _names(args.case)
            unknown = sorted((chosen or set()) - {c.name for c in exp.all_cases()})
            if unknown:
                raise NotebookError(f"{exp.name} has no case {', '.join(unknown)}; "
                                    f"have {', '.join(c.name for c in exp.all_cases())}")
            unknown = sorted((_names(args.kernel) or set()) - set(exp.runnable_names()))
            if unknown:
                raise NotebookError(f"{exp.name} has no kernel or baseline {', '.join(unknown)}; "
                                    f"have {', '.join(exp.runnable_names())}")

            def pick(cases):
                return [c for c in cases if chosen is None or c.name in chosen]

            # --verify-only (a sanitizer pass): the edge cases alone, verified, no baselines, no
            # timing, CUDA kernels only (no sanitizer frame names a Python-DSL kernel's code, and
            # leaving them out spares the tools loading torch and its libraries).
            # --large: the large cases alone. The main pass runs them only where --case names one.
            check, large = args.verify_only, args.large
            emulate = parsed(args.emulate) if args.emulate else None
            only = _names(args.kernel)
            if check:
                only = {k.name for k in exp.kernels if isinstance(k, Kernel)} & (only or set(exp.runnable_names()))
            # --paths-cover: each kernel at its own sanitizer_cases alone.
            at = exp.sanitizer_plan(only) if args.paths_cover else None
            record = run_experiment(exp, folder, args.root, Ceiling(**args.ceiling) if args.ceiling else None,
                                    log=(lambda line: None) if check else (lambda line: print(line, flush=True)),
                                    measure_ceiling=not (check or large or emulate),
                                    cases=[] if check or large or emulate else pick(exp.cases),
                                    edge_cases=[] if large else
                                    pick([c for c in exp.edge_cases if at is None or c.name in at]),
                                    large_cases=pick(exp.large_cases) if large or (chosen and not check) else [],
                                    with_baselines=not (check or emulate), only=only, only_at=at,
                                    cubin_cache=args.cubin_cache, gpu_checks=not check, emulate=emulate)
            record.part = "large" if large else "main"
        record.peak_host_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    except NotebookError as e:
        args.out.write_text(json.dumps({"error": str(e), "detail": e.detail}))
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2
    from ..results.store import jsonable

    args.out.write_text(json.dumps(jsonable(record.to_json())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
