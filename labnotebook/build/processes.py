"""The build's processes: starting a worker, waiting for it at its time limit, and killing every
one still running when the build stops.

A worker runs in a session of its own, so that killing its process group kills whatever it
started too; for the same reason it would outlive the build, which is why every process a build
starts is registered with its ``Processes`` until it ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Callable

from ..run.forkserver import Child, ForkServer

Relay = Callable[[str], None]


class Stopped(Exception):
    """The build is stopping: no worker may start any more."""


class Processes:
    """Every process one build has running (workers, fork servers, forked workers), and whether
    the build is stopping. Threads start and end workers side by side, hence the lock."""

    def __init__(self):
        self.live: set[subprocess.Popen | Child] = set()
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def stop(self) -> None:
        """Kill every worker still running, with its children, and let no new one start: a build
        that stops must not leave processes on a GPU (each worker has its own session, so it would
        outlive the build)."""
        with self.lock:
            self.stopping.set()
            for proc in list(self.live):
                _kill(proc)

    def _start(self, cmd: list[str], cwd: Path, env: dict, **pipes) -> subprocess.Popen:
        with self.lock:
            if self.stopping.is_set():
                raise Stopped("the build is stopping")
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True,
                                    **pipes)
            self.live.add(proc)
        return proc

    def run(self, cmd: list[str], cwd: Path, env: dict, time_limit: float,
            relay: Relay | None) -> tuple[int | None, list[str]]:
        """Run ``cmd`` in its own session; relay its lines (or only keep them); kill the whole
        process group past ``time_limit``. Returns ``(exit status or None if killed, lines)``."""
        proc = self._start(cmd, cwd, env, stderr=subprocess.STDOUT)
        try:
            return _wait(proc, time_limit, relay)
        finally:
            self.live.discard(proc)

    def start_server(self, cmd: list[str], cwd: Path, env: dict) -> subprocess.Popen:
        """A process that outlives one job (a GPU's fork server), killed with the workers."""
        return self._start(cmd, cwd, env, stdin=subprocess.PIPE)

    def run_forked(self, server: ForkServer, argv: list[str], time_limit: float,
                   relay: Relay | None) -> tuple[int | None, list[str]]:
        """``run`` for a worker forked from ``server``: ``argv`` are the worker's arguments."""
        lines: list[str] = []

        def keep(line: str) -> None:
            lines.append(line)
            if relay:
                relay(line)

        def watch(child: Child, running: bool) -> None:
            with self.lock:
                if not running:
                    self.live.discard(child)
                elif self.stopping.is_set():
                    _kill(child)
                else:
                    self.live.add(child)
        with tempfile.TemporaryDirectory(prefix="notebook-log-") as tmp:
            return server.run(argv, Path(tmp) / "worker.log", time_limit, keep, watch), lines


def _kill(proc: subprocess.Popen | Child) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended on its own meanwhile
        pass


def _wait(proc: subprocess.Popen, time_limit: float, relay: Relay | None) -> tuple[int | None, list[str]]:
    lines: list[str] = []

    def pump():
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if relay:
                relay(line.rstrip("\n"))
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=time_limit)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.wait()
        reader.join(timeout=5)
        return None, lines
    reader.join(timeout=5)
    return proc.returncode, lines
