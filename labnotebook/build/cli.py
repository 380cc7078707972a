"""The ``build_results.py`` command line: parse, choose the GPUs, hand over to ``orchestrate``,
and turn the notebook's own errors into one ``error: ...`` line (exit status 2).

    build_results.py [--only NAME ...] [--gpus all|0,1] [--force] [--no-sanitize] [--no-profile]
    build_results.py --large [--only NAME ...]                   # the cases of 2^31 elements and more
    build_results.py --only NAME --kernel K ... --case C ...   # print, write nothing
    build_results.py --check | --list | --summary                # no GPU needed
    build_results.py --rekey                                   # fresh results' keys brought up to date, no GPU
    build_results.py --accept NAME                             # a held-back run kept after all, no GPU
    build_results.py new NAME                                  # scaffold an entry
"""

from __future__ import annotations

import argparse
import importlib.util
import signal
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import NoGPUError, NotebookError
from ..declare.discover import experiment_folders, load
from .. import settings
from ..results.audit import findings, load_error
from ..results.rekey import rekey
from .accept import accept
from ..results.freshness import CurrentKeys, Stored
from .orchestrate import Build
from .plan import LARGE, MAIN, Options, Part
from .report import print_outcomes
from ..run.device import gpus_from_smi
from ..results.store import CEILINGS, Store
from ..results.rows import RunRow
from ..results.summary import print_summary

# Lines whole and tables wide: a log (not a terminal) is read later, and grepped.
console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 200)
DESCRIPTION = """Run the notebook's experiments on this machine's GPUs, verify and time them, and freeze the
results into results/. With every result up to date it does nothing and needs no GPU.

  build_results.py                        run what changed since its results were recorded
  build_results.py --gpus all             the same, spread over every GPU of this machine
  build_results.py --large                the large pass: the cases of 2^31 elements and more, where they changed
  build_results.py --only NAME --kernel K --case C   one kernel at one case: printed, nothing written
  build_results.py --check               what is stale, failed or missing, why, and the fix (no GPU)
  build_results.py --rekey               rewrite the keys of fresh results whose machine code is unchanged (no GPU)
  build_results.py --accept NAME         keep a run held back only for what its machine lacked, as --force would (no GPU)
  build_results.py --list | --summary     the state of every result; every result as JSON lines
  build_results.py new NAME               scaffold an entry (see docs/authoring.md)
"""
ROOT = Path(__file__).resolve().parents[2]


def main_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="build_results.py", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these experiments")
    p.add_argument("--force", action="store_true", help="run even where results are up to date")
    p.add_argument("--gpus", default="0", metavar="all|I,J",
                   help="the GPUs to run on, all of one model: 'all' or indices such as 0,1 (default: 0)")
    p.add_argument("--no-sanitize", action="store_true",
                   help="skip the compute-sanitizer pass (memcheck, racecheck, synccheck, initcheck)")
    p.add_argument("--no-profile", action="store_true",
                   help="skip the Nsight Compute pass (each kernel and GPU baseline profiled at its headline case)")
    p.add_argument("--kernel", nargs="+", metavar="NAME",
                   help="run only these kernels and baselines (implies --dry-run: a record is always whole)")
    p.add_argument("--case", nargs="+", metavar="NAME", help="run only these cases (implies --dry-run)")
    p.add_argument("--large", action="store_true",
                   help="run the large pass instead: each experiment's cases of 2^31 elements and more, verified, not "
                        "timed, into results/NAME/<gpu>.large.json (up to 24 GiB of GPU memory; a default "
                        "refresh leaves them out)")
    p.add_argument("--arch", nargs="+", metavar="X.Y",
                   help="run every kernel at its edge cases as a GPU of these compute capabilities would (its PTX, "
                        "compiled for this GPU; that architecture's shared memory and features), verified, not "
                        "timed, into results/architectures/ (never a GPU's results)")
    p.add_argument("--dry-run", action="store_true", help="run, verify, time and print; write no results")
    p.add_argument("--check", action="store_true",
                   help="list every result that is stale, failed or missing, with the file that changed and the "
                        "command that fixes it; exit 1 if one is on the reference GPU (no GPU needed)")
    p.add_argument("--validate", nargs="+", type=Path, metavar="PATH",
                   help="check results files (or every one in these folders) before they are committed: their "
                        "format, every row verified or declared, their key against the sources here, complete "
                        "provenance, no physically impossible figure; exit 1 if one is refused (no GPU)")
    p.add_argument("--rekey", action="store_true",
                   help="bring the keys of fresh results up to date (a CUDA edit that left the machine code as it "
                        "was, or an older keying rule); writes nothing else, needs nvcc but no GPU")
    p.add_argument("--accept", nargs="+", metavar="NAME",
                   help="keep the last run of these experiments where it was held back only for what it could "
                        "not run on its machine (a missing module or toolchain), as --force would have, without "
                        "running it again (no GPU)")
    p.add_argument("--list", action="store_true", help="list experiments and the state of their results")
    p.add_argument("--summary", action="store_true",
                   help="print every stored result as JSON lines (no GPU needed)")
    p.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    return p


def new_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="build_results.py new",
                                description="Scaffold an entry: a kernel, its experiment.py, a page and a nav line.")
    p.add_argument("name", help="the entry's name: lower case, digits and underscores (e.g. scale)")
    p.add_argument("--title", help="the page's title (default: from the name)")
    p.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        rest = argv[2:] if argv[:1] == ["--root"] else argv  # tests name the project first
        if rest[:1] == ["new"]:
            from ..declare.scaffold import scaffold

            args = new_parser().parse_args(argv[:len(argv) - len(rest)] + rest[1:])
            for path in scaffold(args.root, args.name, args.title):
                console.print(f"wrote {path.relative_to(args.root).as_posix()}")
            console.print(f"next (docs/authoring.md has the whole loop): edit the kernel, experiment.py and the page; "
                          f"without a GPU: pytest tests/test_experiments.py and mkdocs serve; "
                          f"on a GPU: python build_results.py --only {args.name}")
            return 0
        args = main_parser().parse_args(argv)
        root, store = args.root, Store(args.root / "results")
        if args.summary:
            print_summary(root, store)
            return 0
        if args.check:
            return check(root, store)
        if args.validate:
            return validate_results(root, args.validate)
        if args.rekey:
            return rekey_results(root, store)
        folders = experiment_folders(root / "snippets")
        if args.accept:
            return accept_runs(root, store, folders, args.accept)
        if args.list:
            return list_experiments(root, folders, store)
        unknown = sorted(set(args.only or []) - set(folders))
        if unknown:
            raise NotebookError(f"no experiment named {', '.join(unknown)}; have {', '.join(folders)}")
        selected = {n: f for n, f in folders.items() if not args.only or n in args.only}
        # Drafts too, and before any GPU is looked for: a declaration that does not load is a
        # mistake to fix in seconds, not a failure to find after a run (or a silent "nothing to
        # run"). It is named, the rest still runs, and the command fails.
        keys = CurrentKeys(root)
        broken = [load_error(n, keys[n].error) for n in selected if keys[n].error]
        for f in broken:
            print(f"error: {f.text}", file=sys.stderr)
        selected = {n: f for n, f in selected.items() if not keys[n].error}
        if broken and not selected:
            return 2
        # A draft entry runs when it is named: a whole build (or --force) would pay for kernels
        # that are still being written.
        left_out = sorted(set(selected) & settings.drafts(root) - set(args.only or []))
        if left_out:
            console.print(f"drafts left out (name one with --only to run it): {', '.join(left_out)}")
            selected = {n: f for n, f in selected.items() if n not in left_out}
        if args.arch:
            from .architectures import run as run_architectures

            name, gpus = require_gpus(args.gpus)
            return run_architectures(root, console, args.arch, selected, gpus[0], name)
        if (args.kernel or args.case) and len(selected) != 1:
            raise NotebookError("--kernel and --case need one experiment: add --only NAME")
        dry_run, part = bool(args.dry_run or args.kernel or args.case), LARGE if args.large else MAIN
        try:
            gpu, gpus = require_gpus(args.gpus)
        except NoGPUError:
            if not (args.force or dry_run) and all_fresh(root, store, selected, part):
                names = ", ".join(selected) if args.only else "every experiment"
                console.print(f"{names}: up to date on {', '.join(sorted({g for n in selected for g in store.gpus(n)}))}"
                              "; nothing to run (no GPU needed)")
                return 2 if broken else 0
            raise
        options = Options(gpus=gpus, force=args.force, sanitize=not args.no_sanitize, profile=not args.no_profile,
                          kernels=args.kernel, cases=args.case, dry_run=dry_run, part=part)
        build = Build(root, store, console, options)
        signal.signal(signal.SIGTERM, _interrupted)
        try:
            outcomes, wall_s = build.run(gpu, selected)
        except KeyboardInterrupt:
            print("error: interrupted; the experiments that finished kept their results, the rest "
                  "are untouched", file=sys.stderr)
            return 130
        finally:
            build.processes.stop()  # whatever ended the build, no worker outlives it
        print_outcomes(console, gpu + part.title, outcomes, wall_s)
        return 1 if broken or any(o.state == "failed" for o in outcomes) else 0
    except NotebookError as e:
        print(f"error: {e}", file=sys.stderr)  # one plain line: no markup, no wrapping
        return 2


def _interrupted(signum, frame):
    raise KeyboardInterrupt  # SIGTERM (a `timeout`, a closed session): stop as Ctrl-C does


def require_gpus(spec: str) -> tuple[str, list[int]]:
    """The GPU model and the indices to run on; refuses a mix of models in one run."""
    if importlib.util.find_spec("pycuda") is None:
        raise NoGPUError("PyCUDA is not installed; on a GPU machine: pip install -e '.[gpu]' "
                         "(reading the notebook needs no GPU: mkdocs serve)")
    found = dict(gpus_from_smi())
    if not found:
        raise NoGPUError("no NVIDIA GPU found (nvidia-smi lists none); build_results.py runs on a GPU "
                         "machine, while the site renders the committed results anywhere")
    if spec == "all":
        indices = sorted(found)
    else:
        try:
            indices = sorted({int(i) for i in spec.split(",")})
        except ValueError:
            raise NotebookError(f"--gpus takes 'all' or indices such as 0,1; got {spec!r}") from None
    absent = [i for i in indices if i not in found]
    if absent:
        raise NotebookError(f"no GPU {', '.join(map(str, absent))}; this machine has "
                            + ", ".join(f"{i}: {n}" for i, n in sorted(found.items())))
    models = sorted({found[i] for i in indices})
    if len(models) > 1:
        raise NotebookError(f"GPUs {spec} are of different models ({', '.join(models)}); results are kept "
                            "per model, so run each model separately with --gpus")
    return models[0], indices


def all_fresh(root: Path, store: Store, selected: dict[str, Path], part: Part = MAIN) -> bool:
    """Whether every selected experiment has results of the pass, all fresh, on every GPU it has
    any for, and (for a pass that times) those GPUs' ceilings are fresh too (a run would measure
    them again otherwise)."""
    keys = CurrentKeys(root)
    for name in selected:
        if part.name not in keys[name].parts:
            continue
        gpus = store.gpus(name)
        wanted = [(name, part.name)] + ([(CEILINGS, MAIN.name)] if part.timed else [])
        if not gpus or any(Stored.read(store, n, g, keys, p).state != "fresh" for g in gpus for n, p in wanted):
            return False
    return True


def check(root: Path, store: Store) -> int:
    """``--check``: every finding, one line each, errors first; 1 if there is an error."""
    found = sorted(findings(root, store), key=lambda f: (f.level != "error", f.experiment, f.gpu))
    for f in found:
        console.print(f.line(), markup=False, highlight=False)
    errors, notes = (sum(f.level == level for f in found) for level in ("error", "note"))
    console.print(f"{errors} error(s), {len(found) - errors - notes} warning(s)"
                  + (f", {notes} draft result(s) not yet made" if notes else "")
                  + ("" if errors else ": every result on the reference GPU is fresh"), markup=False)
    return 1 if errors else 0


def validate_results(root: Path, paths: list[Path]) -> int:
    from ..results.validate import validate

    refused = passed = 0
    for path in paths:
        ok, refusals = validate(path, root)
        passed += len(ok)
        for r in refusals:
            console.print(f"✗ {escape(r.path)}: {escape(r.why)}")
        refused += len({r.path for r in refusals})
    console.print(f"{passed} file(s) pass, {refused} refused")
    return 1 if refused else 0


def rekey_results(root: Path, store: Store) -> int:
    """``--rekey``: one line per record rewritten, then what is left for a GPU."""
    done = rekey(root, store)
    for r in done:
        where = f"{r.experiment} on {r.gpu}" + ("" if r.part == "main" else f" ({r.part} pass)")
        console.print(f"rekeyed {where}: {r.why}; {r.machine}", markup=False, highlight=False)
    left = [f for f in findings(root, store) if f.level == "error" or f.what.endswith(("stale", "failed", "missing"))]
    console.print(f"{len(done)} record(s) rekeyed" + (f"; {len(left)} result(s) need a GPU run "
                                                       "(build_results.py --check says which)" if left else ""),
                  markup=False)
    return 0


def accept_runs(root: Path, store: Store, folders: dict[str, Path], names: list[str]) -> int:
    """``--accept``: one line per held-back run, kept or not and why; 1 when none was kept."""
    unknown = sorted(set(names) - set(folders))
    if unknown:
        raise NotebookError(f"no experiment named {', '.join(unknown)}; have {', '.join(folders)}")
    done = accept(root, store, names)
    for a in done:
        where = f"{a.experiment} on {a.gpu}" + ("" if a.part == "main" else f" ({a.part} pass)")
        console.print(f"{'accepted' if a.done else 'not accepted'} {where}: {a.what}", markup=False, highlight=False)
    if not done:
        console.print(f"no held-back run of {', '.join(names)} to accept", markup=False)
    return 0 if any(a.done for a in done) else 1


def list_experiments(root: Path, folders: dict[str, Path], store: Store) -> int:
    """Every experiment and the state of its results on each GPU. An experiment that cannot be
    loaded is named below the table, with its file, and the exit status is 2."""
    table = Table("experiment", "title", "GPU", "state")
    keys, broken = CurrentKeys(root), []
    for name, folder in folders.items():
        try:
            title = load(folder).title
        except NotebookError as e:
            table.add_row(name, "", "", "[red]cannot load[/]")
            broken.append(f"error: snippets/{name}/experiment.py: {e}")
            continue
        for gpu in store.gpus(name, failures=True) or [None]:
            stored = Stored.read(store, name, gpu, keys) if gpu else None
            if stored and stored.unreadable:
                broken.append(f"error: {stored.unreadable}")
            table.add_row(name, title, gpu or "", state_text(stored) if stored else "no results")
    console.print(table)
    for line in broken:
        print(line, file=sys.stderr)
    return 2 if broken else 0


def state_text(stored: Stored) -> str:
    """The state, and what a reader would miss in fresh results: kernels this machine could not run."""
    record = stored.record if stored.state in ("fresh", "stale") else None
    unavailable = {r.name: r.error for r in record.rows if isinstance(r, RunRow) and r.unavailable} if record else {}
    if not unavailable:
        return stored.state
    name, why = next(iter(unavailable.items()))
    return f"{stored.state}; {name} unavailable: {why}"
