"""One build's workers: the environment and command line of a worker for a GPU, each GPU's fork
server, and a worker's run turned into its record or the reason it has none.

A worker is ``python -m labnotebook.run.worker``: forked from its GPU's server where that is
alive (the imports and the CUDA start-up are paid once per GPU), started afresh otherwise, and
started afresh, under the tool, for the compute-sanitizer and Nsight Compute passes.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console

from ..results.format import Record
from ..results.store import read_json
from ..run import draw
from ..run.forkserver import ForkServer
from .processes import Processes


def worker_env(gpu: int | None = None, cpus: list[int] | None = None, sharing: int = 1) -> dict[str, str]:
    """Workers import this very package, wherever the project being built lives, see only their
    own GPU (as device 0) while knowing its index on the machine, keep to ``cpus``, and know how
    many GPUs' workers share the machine's memory (``sharing``)."""
    package_parent = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}
    if gpu is not None:  # nvidia-smi's index; CUDA counts in the same order only by PCI bus
        env.update(CUDA_DEVICE_ORDER="PCI_BUS_ID", CUDA_VISIBLE_DEVICES=str(gpu), NOTEBOOK_DEVICE_INDEX=str(gpu))
    if cpus:
        env["NOTEBOOK_CPUS"] = ",".join(map(str, cpus))
    env["NOTEBOOK_GPUS_SHARING"] = str(sharing)
    return env


def share_cores(gpus: list[int]) -> dict[int, list[int]]:
    """Each GPU's share of this process's cores, so that work for one GPU (drawing inputs,
    verifying, timing CPU baselines and host copies) does not crowd out another's."""
    cores = draw.cores()
    per = max(1, len(cores) // len(gpus))
    return {g: cores[i * per:(i + 1) * per] or cores for i, g in enumerate(gpus)}


def worker_result(result: tuple[Record | None, str | None] | BaseException) -> tuple[Record | None, str | None]:
    """A worker job's result as ``(record, error)``: what ``Workers.run`` returned, or the
    exception the job raised instead."""
    if isinstance(result, BaseException):
        return None, f"{type(result).__name__}: {result}"
    return result


class Workers:
    """The workers of one build over ``gpus``: they share ``cubin_cache`` (each kernel compiled
    once, kept for later builds), and their lines go to ``console``, each prefixed with its experiment where
    several GPUs print at once."""

    def __init__(self, root: Path, processes: Processes, cubin_cache: Path, gpus: list[int], console: Console):
        self.root, self.processes, self.cubin_cache, self.gpus, self.console = root, processes, cubin_cache, gpus, console
        self.many = len(gpus) > 1
        self.cores = share_cores(gpus) if self.many else {}
        self.servers: dict[int, ForkServer] = {}  # each GPU's, started with its first worker
        self.servers_lock = threading.Lock()

    def env(self, gpu: int) -> dict[str, str]:
        return worker_env(gpu, self.cores.get(gpu), len(self.gpus))

    def args(self, names: str | list[str], args: list[str]) -> list[str]:
        """The worker's arguments, for a forked worker; ``command`` starts it afresh."""
        names = [names] if isinstance(names, str) else names
        return [*names, "--root", str(self.root), "--cubin-cache", str(self.cubin_cache), *args]

    def command(self, names: str | list[str], args: list[str]) -> list[str]:
        return [sys.executable, "-m", "labnotebook.run.worker", *self.args(names, args)]

    def run_quietly(self, cmd: list[str], gpu: int, time_limit: float,
                    env: dict[str, str] | None = None) -> tuple[int | None, list[str]]:
        """``cmd`` (a worker's command under a tool) on ``gpu``, its lines kept, not shown."""
        return self.processes.run(cmd, self.root, {**self.env(gpu), **(env or {})}, time_limit, relay=None)

    def server(self, gpu: int) -> ForkServer | None:
        """``gpu``'s fork server, started on first use; None where it has died (workers start afresh)."""
        with self.servers_lock:
            if gpu not in self.servers:
                self.servers[gpu] = ForkServer(self.root, self.env(gpu), self.processes.start_server)
            server = self.servers[gpu]
        return server if server.proc.poll() is None else None

    def start_servers(self) -> None:
        """Start every GPU's fork server now, so that they import while the build does other work."""
        for g in self.gpus:
            self.server(g)

    def close(self) -> None:
        for server in self.servers.values():
            server.close()

    def run(self, name: str, gpu: int, args: list[str], time_limit: float,
            label: str | None = None, forked: bool = True) -> tuple[Record | None, str | None]:
        """Run one worker on ``gpu``, forked from its server (afresh where not ``forked``),
        relaying its output (each line after ``label``, the experiment's name unless told, where
        several GPUs print at once); ``(record, None)`` or ``(None, error)``."""
        prefix = f"{label or name} │ " if self.many else ""
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="notebook-run-") as tmp:
            out = Path(tmp) / "record.json"
            args = [*args, "--out", str(out)]
            relay = lambda line: self.console.print(prefix + line, markup=False, highlight=False)
            server = self.server(gpu) if forked else None
            status, lines = self.processes.run_forked(server, self.args(name, args), time_limit, relay) if server \
                else self.processes.run(self.command(name, args), self.root, self.env(gpu), time_limit, relay)
            if status is None:
                return None, f"timed out after {time_limit:.0f} s (a hung kernel?) and was killed"
            if out.exists():
                data = read_json(out)
                if "format" not in data:  # the worker's own {"error": ...}: an engine error, named
                    return None, data["error"]
                if status == 0:
                    record = Record.from_json(data, f"{name}'s worker output")
                    # Its wall time (an experiment's whole is set when its passes are done), and
                    # the part its own clock did not see: Python's start, imports, the context.
                    record.wall_s = round(time.perf_counter() - t0, 2)
                    unseen = max(0.0, record.wall_s - sum(record.phases_s.values()))
                    record.phases_s = {"start-up": round(unseen, 2), **record.phases_s}
                    return record, None
        last = next((ln for ln in reversed(lines) if ln.strip()), "no output")
        how = f"killed by signal {-status}" if status < 0 else f"exited with status {status}"
        return None, f"worker {how}: {last.strip()}"
