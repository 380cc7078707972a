"""Workers forked from a process that has already imported what they need.

A timed run's worker used to start Python and import NumPy, PyCUDA and torch afresh: about 6 s
of every experiment's wall time on an H100 (py-spy, 2026-11-23), torch's import alone 3.5 to
5 s. The build now starts one server per GPU (``python -m labnotebook.run.forkserver``, with that
GPU's environment), which imports them once, never touches CUDA, and forks a child per worker.
Each child is a process of its own, in a session of its own, that initialises CUDA afresh: a
crash, a hang or a sticky CUDA error still ends one experiment and nothing else.

The protocol, one JSON object a line: the build writes ``{"id", "argv", "log"}`` to the
server's stdin; the server answers ``{"id", "pid"}`` once the child runs and ``{"id", "status"}``
when it ends (a negative status: killed by that signal). The child's output goes to ``log``.
"""

from __future__ import annotations

import itertools
import json
import os
import selectors
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

PRELOAD = ("numpy", "pycuda.driver", "torch", "labnotebook.run.execute", "labnotebook.run.worker")


# -- the server --------------------------------------------------------------------------------
def serve() -> int:
    for module in PRELOAD:
        try:
            __import__(module)
        except ImportError:  # a machine without torch runs its experiments without it
            pass
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():  # a child could not use CUDA
        print(json.dumps({"error": "CUDA was initialised while preloading"}), flush=True)
        return 1
    children: dict[int, str] = {}  # pid -> request id
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ)
    buffered, open_ = b"", True  # requests read but not yet served; whether the build may send more
    while open_ or children:
        if open_ and selector.select(timeout=0.05):
            chunk = os.read(0, 1 << 16)
            open_ = bool(chunk)
            buffered += chunk
            *requests, buffered = buffered.split(b"\n")
            for line in requests:
                request = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    _child(request["argv"], request["log"])
                children[pid] = request["id"]
                _say(id=request["id"], pid=pid)
        elif not open_:
            time.sleep(0.05)
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            _say(id=children.pop(pid), status=os.waitstatus_to_exitcode(status))
    return 0


def _say(**message) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _child(argv: list[str], log: str) -> None:
    """The worker, in the forked child: its own session, its output to ``log``; never returns."""
    code = 1
    try:
        os.setsid()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        fd = os.open(os.devnull, os.O_RDONLY)  # not the server's requests (nvcc fails on a closed stdin)
        os.dup2(fd, 0)
        os.close(fd)
        from .worker import main

        code = main(argv)
    except SystemExit as e:  # argparse, or the worker's own exit
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# -- the build's side --------------------------------------------------------------------------
class Child:
    """A forked worker, as ``build.processes.Processes.stop`` sees it: a process group to kill."""

    def __init__(self, pid: int):
        self.pid = pid


class ForkServer:
    """One GPU's server: ``run`` forks a worker from it, relays its lines and waits for it.
    ``start`` starts the server's process (``Processes.start_server``, so that a stopping build kills it)."""

    def __init__(self, cwd: Path, env: dict[str, str], start: Callable):
        # --root: only so that the server and its children can be told apart by their command line
        self.proc = start([sys.executable, "-m", "labnotebook.run.forkserver", "--root", str(cwd)], cwd, env)
        self.lock = threading.Lock()
        self.states: dict[str, dict] = {}  # request id -> what the server said of it
        self.changed = threading.Condition()
        self.ids = itertools.count()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if not line.startswith("{"):  # something a preloaded module printed
                continue
            message = json.loads(line)
            with self.changed:
                self.states.setdefault(message.get("id"), {}).update(message)
                self.changed.notify_all()
        with self.changed:  # the server is gone, and with it word of its children
            for state in self.states.values():
                state.setdefault("gone", True)
            self.changed.notify_all()

    def run(self, argv: list[str], log: Path, time_limit: float, relay: Callable[[str], None],
            watch: Callable[[Child | None, bool], None]) -> int | None:
        """Fork ``python -m labnotebook.run.worker ARGV``, relay its lines (kept in ``log``) and
        return its exit status: None where it was killed at ``time_limit``, 1 where the server
        died under it. ``watch(child, True)`` once it runs, ``watch(child, False)`` once it ended."""
        log.write_bytes(b"")
        with self.lock:
            rid = str(next(self.ids))
            with self.changed:
                self.states[rid] = {}
            self.proc.stdin.write(json.dumps({"id": rid, "argv": argv, "log": str(log)}) + "\n")
            self.proc.stdin.flush()
        deadline, child, killed, pending = time.monotonic() + time_limit, None, False, b""
        with open(log, "rb") as out:
            while True:
                with self.changed:
                    self.changed.wait(timeout=0.1)
                    state = dict(self.states[rid])
                if child is None and "pid" in state:
                    child = Child(state["pid"])
                    watch(child, True)
                pending += out.read()
                *whole, pending = pending.split(b"\n")
                for line in whole:
                    relay(line.decode(errors="replace"))
                if "status" in state or "gone" in state:
                    break
                if child is not None and not killed and time.monotonic() > deadline:
                    _kill(child.pid)
                    killed = True
            pending += out.read()
        for line in pending.decode(errors="replace").splitlines():
            relay(line)
        if child is not None:
            watch(child, False)
        with self.changed:
            self.states.pop(rid)
        if "status" not in state:
            relay("the worker's fork server ended under it")
            return 1
        return None if killed else state["status"]

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # the server ends once its children have
        except OSError:
            pass


def _kill(pid: int) -> None:
    """The child's session, with whatever it started; the child alone if it has none yet."""
    for kill in (os.killpg, os.kill):
        try:
            return kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


if __name__ == "__main__":
    sys.exit(serve())
