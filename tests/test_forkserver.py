"""Workers forked from a GPU's server: each its own process in its own session, its lines relayed,
its exit status returned, killed at its time limit; a stopped build leaves none behind."""

import os
import threading
import time
from pathlib import Path

from labnotebook.run.forkserver import ForkServer
from labnotebook.build.processes import Processes

from conftest import FAULTS, ROOT, copy_project
from test_build import fake_env


PROCESSES = Processes()


def serve(root: Path, env: dict | None = None) -> ForkServer:
    return ForkServer(root, {**os.environ, **(env or {})}, PROCESSES.start_server)


def test_each_worker_is_a_child_of_its_own_whose_lines_and_status_come_back(tmp_path):
    server = serve(ROOT, fake_env())
    results = {}

    def one(name):
        results[name] = PROCESSES.run_forked(server, [name, "--root", str(ROOT), "--out", str(tmp_path / f"{name}.json")],
                                   60, relay=None)
    threads = [threading.Thread(target=one, args=(n,)) for n in ("nope", "nada")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    server.close()
    for name in ("nope", "nada"):
        status, lines = results[name]
        assert status == 2 and any("no experiment" in ln or name in ln for ln in lines), lines
        assert "error" in (tmp_path / f"{name}.json").read_text()
    assert server.proc.wait(timeout=10) == 0  # it ends once its stdin closes and its children have


def test_a_worker_past_its_time_limit_is_killed_with_its_session_and_the_server_serves_on(tmp_path):
    project = copy_project(tmp_path, [FAULTS / "snippets" / "hang"])
    server = serve(project, fake_env())
    seen = []

    def watch(child, running):
        seen.append((child.pid, running))
    t0 = time.perf_counter()
    status = server.run(["hang", "--root", str(project), "--out", str(tmp_path / "r.json")], tmp_path / "log", 1.5,
                        relay=lambda line: None, watch=watch)
    assert status is None and 1.5 <= time.perf_counter() - t0 < 15
    (pid, running), (same, ended) = seen
    assert running and not ended and pid == same and os.getsid(server.proc.pid) != pid
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    status, lines = PROCESSES.run_forked(server, ["nope", "--root", str(project), "--out", str(tmp_path / "n.json")], 60, None)
    assert status == 2
    server.close()
