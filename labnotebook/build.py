"""The ``build_results.py`` command: run the experiments whose sources changed, one process each,
verify and time them on this GPU, and freeze the results into ``results/``."""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .errors import NoGPUError, NotebookError
from .experiments import engine_hash, experiment_folders, load, source_hash
from .run.device import gpu_name_from_smi
from .sanitize import TOOLS, sanitizer_path
from .sanitize import sanitize as run_sanitizers
from .store import CEILINGS, Store
from .summary import print_summary

console = Console(highlight=False)


@dataclass
class Outcome:
    name: str
    state: str  # ran / unchanged / failed
    detail: str = ""
    seconds: float = 0.0


def main_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="build_results.py", description=__doc__)
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these experiments")
    p.add_argument("--force", action="store_true", help="run even where results are up to date")
    p.add_argument("--no-sanitize", action="store_true",
                   help="skip the compute-sanitizer pass (memcheck, racecheck, synccheck, initcheck)")
    p.add_argument("--list", action="store_true", help="list experiments and the state of their results")
    p.add_argument("--summary", action="store_true",
                   help="print every stored result as JSON lines (no GPU needed)")
    p.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                   help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = main_parser().parse_args(argv)
    root = args.root
    store = Store(root / "results")
    try:
        if args.summary:
            print_summary(root, store)
            return 0
        folders = experiment_folders(root / "snippets")
        if args.list:
            return list_experiments(folders, store)
        unknown = sorted(set(args.only or []) - set(folders))
        if unknown:
            raise NotebookError(f"no experiment named {', '.join(unknown)}; have {', '.join(folders)}")
        selected = {n: f for n, f in folders.items() if not args.only or n in args.only}
        return build(root, store, selected, force=args.force, sanitize=not args.no_sanitize)
    except NotebookError as e:
        print(f"error: {e}", file=sys.stderr)  # one plain line: no markup, no wrapping
        return 2


def require_gpu() -> str:
    if importlib.util.find_spec("pycuda") is None:
        raise NoGPUError("PyCUDA is not installed; on a GPU machine: pip install -e '.[gpu]' "
                         "(reading the notebook needs no GPU: mkdocs serve)")
    gpu = gpu_name_from_smi()
    if gpu is None:
        raise NoGPUError("no NVIDIA GPU found (nvidia-smi lists none); build_results.py runs on a GPU "
                         "machine, while the site renders the committed results anywhere")
    return gpu


def list_experiments(folders: dict[str, Path], store: Store) -> int:
    table = Table("experiment", "title", "GPU", "state")
    for name, folder in folders.items():
        try:
            title, gpus = load(folder).title, store.gpus(name)
        except NotebookError as e:
            table.add_row(name, "", "", f"[red]{escape(str(e))}[/]")
            continue
        h = source_hash(folder)
        for gpu in gpus or [""]:
            record = store.read(name, gpu) if gpu else None
            state = ("no results" if record is None else
                     "stale" if record.get("source_hash") != h else "up to date")
            table.add_row(name, title, gpu, state)
    console.print(table)
    return 0


def build(root: Path, store: Store, selected: dict[str, Path], force: bool, sanitize: bool = True) -> int:
    gpu = require_gpu()
    if sanitize and sanitizer_path() is None:
        console.print("[yellow]compute-sanitizer not found: results will record no sanitizer outcome[/]")
        sanitize = False
    outcomes, todo = [], []
    for name, folder in selected.items():
        h = source_hash(folder)
        record = store.read(name, gpu)
        if not force and record and record.get("source_hash") == h and record["status"] == "ok" \
                and not newly_installed(record):
            outcomes.append(Outcome(name, "unchanged", f"results from {record['provenance']['date']}"))
        else:
            todo.append((name, folder, h))
    if todo:
        console.print(f"[bold]{gpu}[/]: running {len(todo)} experiment(s), "
                      f"{len(outcomes)} unchanged")
        ceiling = run_ceiling(root, store, gpu)
        for name, folder, h in todo:
            outcomes.append(run_one(root, store, gpu, name, folder, h, ceiling, sanitize))
    print_outcomes(gpu, outcomes)
    return 1 if any(o.state == "failed" for o in outcomes) else 0


def newly_installed(record: dict) -> list[str]:
    """Modules that were missing when ``record`` was made and can be imported now."""
    from .run.execute import module_installed

    missing = {r["missing_module"] for r in record["rows"] if r.get("missing_module")}
    return sorted(m for m in missing if module_installed(m))


def run_ceiling(root: Path, store: Store, gpu: str) -> dict | None:
    with console.status("measuring the copy-bandwidth ceiling"):
        record, error = run_worker(root, CEILINGS, time_limit=300)
    if error:
        console.print(f"[red]ceiling measurement failed:[/] {escape(error)}")
        return None
    record["source_hash"] = engine_hash()
    store.write(record)
    console.print(f"copy ceiling: {record['ceiling']['gbs']:.0f} GB/s")
    return record["ceiling"]


def run_one(root, store, gpu, name, folder, h, ceiling, sanitize) -> Outcome:
    t0 = time.perf_counter()
    try:
        exp = load(folder)
    except NotebookError as e:
        return fail(store, gpu, name, h, str(e), t0)
    limit = exp.time_limit_s
    console.rule(f"[bold]{name}")
    record, error = run_worker(root, name, time_limit=limit, ceiling=ceiling)
    if error:
        return fail(store, gpu, name, h, error, t0)
    record["source_hash"] = h
    if record["status"] != "ok":
        problems = record["problems"]
        reason = problems[0] + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
        return fail(store, gpu, name, h, reason, t0, record)
    record["sanitizer"] = None
    if sanitize:
        with console.status(f"{name}: compute-sanitizer ({', '.join(TOOLS)})"):
            functions = {info["function"]: k for k, info in record["kernels"].items()}
            record["sanitizer"] = run_sanitizers(root, name, functions, limit, worker_env())
        expected = {k.name for k in exp.kernels if k.expected_failure}
        findings = [f"{kernel}: {tool}: {entry['errors']} errors: {entry['first']}"
                    for kernel, tools in record["sanitizer"].items() if kernel not in expected
                    for tool, entry in tools.items() if entry["errors"] != 0]
        if findings:
            record["problems"] = findings
            return fail(store, gpu, name, h, "compute-sanitizer: " + findings[0], t0, record)
        console.print(f"compute-sanitizer: {', '.join(TOOLS)} clean")
    store.write(record)
    return Outcome(name, "ran", f"{len(record['rows'])} results", time.perf_counter() - t0)


def fail(store, gpu, name, h, reason, t0, record=None) -> Outcome:
    """Record why a run failed without touching the last good results."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    store.write_failure(name, gpu, {**(record or {}), "error": reason, "source_hash": h,
                                    "failed_at": now, "status": "failed"})
    console.print(f"[bold red]✗ {name}:[/] {escape(reason)}")
    return Outcome(name, "failed", reason, time.perf_counter() - t0)


def worker_env() -> dict[str, str]:
    """Workers import this very package, wherever the project being built lives."""
    package_parent = str(Path(__file__).resolve().parent.parent)
    path = os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))
    return {"PYTHONUNBUFFERED": "1", "PYTHONPATH": path}


def run_worker(root: Path, name: str, time_limit: int, ceiling: dict | None = None):
    """Run one worker process, relaying its output; return ``(record, None)`` or ``(None, error)``."""
    with tempfile.TemporaryDirectory(prefix="notebook-run-") as tmp:
        out = Path(tmp) / "record.json"
        cmd = [sys.executable, "-m", "labnotebook.run.worker", name, "--root", str(root), "--out", str(out)]
        if ceiling:
            cmd += ["--ceiling", json.dumps(ceiling)]
        proc = subprocess.Popen(cmd, cwd=root, env={**os.environ, **worker_env()}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        tail: list[str] = []
        relay = threading.Thread(target=_relay, args=(proc.stdout, tail), daemon=True)
        relay.start()
        try:
            proc.wait(timeout=time_limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None, f"timed out after {time_limit} s (a hung kernel?) and was killed"
        relay.join(timeout=5)
        if out.exists():
            record = json.loads(out.read_text())
            if "error" in record:
                return None, record["error"]
            if proc.returncode == 0:
                return record, None
        last = next((ln for ln in reversed(tail) if ln.strip()), "no output")
        how = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
               else f"exited with status {proc.returncode}")
        return None, f"worker {how}: {last.strip()}"


def _relay(stream, tail: list[str]) -> None:
    for line in stream:
        console.print(line.rstrip("\n"), markup=False)
        tail.append(line)
        del tail[:-20]


def print_outcomes(gpu: str, outcomes: list[Outcome]) -> None:
    table = Table("experiment", "state", "detail", "seconds", title=f"build_results on {gpu}")
    style = {"ran": "green", "unchanged": "dim", "failed": "bold red"}
    for o in outcomes:
        table.add_row(o.name, f"[{style[o.state]}]{o.state}[/]", escape(o.detail), f"{o.seconds:.1f}")
    console.print(table)
    counts = {s: sum(o.state == s for o in outcomes) for s in ("ran", "unchanged", "failed")}
    console.print(", ".join(f"{n} {s}" for s, n in counts.items()))


if __name__ == "__main__":
    sys.exit(main())
