"""The build's compiles at its start (labnotebook/build/precompile.py): every kernel a run loads and
every key its record is stamped with are made before the first timed run, which waits for them
and counts the wait as its compile; runs and stamps then compile nothing."""

import os
import time

import pytest

from labnotebook.build import precompile as precompiling
from labnotebook.build.plan import Due
from labnotebook.build.precompile import Precompile
from labnotebook.declare.discover import load
from labnotebook.declare.experiment import Kernel
from labnotebook.results import machine
from labnotebook.results.freshness import CurrentKeys
from labnotebook.run import compile as compiling

from conftest import FAULTS, copy_project, fake_bin
from test_split import GPU, StandInWorkers, build, due, experiment, record


@pytest.fixture
def project(tmp_path, monkeypatch):
    """Two of the fault suite's experiments (one whose kernel does not compile), with the pretend
    GPU's nvcc first on PATH."""
    monkeypatch.setenv("PATH", f"{fake_bin()}{os.pathsep}{os.environ['PATH']}")
    return copy_project(tmp_path / "p", [FAULTS / "snippets" / "wrong_answer", FAULTS / "snippets" / "no_compile"])


def dues(root, keys):
    return [Due(name, keys[name], load(folder), None) for name, folder in keys.folders.items()]


def test_every_kernel_and_key_is_compiled_before_the_runs_and_nothing_is_compiled_again(project, monkeypatch):
    keys, cache = CurrentKeys(project), project / ".cache" / "cubins"
    todo = dues(project, keys)
    done = Precompile(project, keys, cache, todo, (9, 0), ceilings=True)
    done.wait()
    assert done.seconds > 0

    def no_nvcc(*args, **kwargs):
        raise AssertionError(f"compiled again: {args[0]}")
    monkeypatch.setattr(compiling.subprocess, "run", no_nvcc)
    monkeypatch.setattr(machine, "machine_key", no_nvcc)
    for due in todo:
        keys.machine(due.name, "sm_90")  # the stamp's: made already
        for k in due.exp.kernels:
            if isinstance(k, Kernel) and due.name != "no_compile":  # the run's: in the cache
                compiling.compile_cubin(keys.folders[due.name] / k.source, project / "run", "sm_90",
                                        k.nvcc_options, project, cache)
    keys.machine("ceilings", "sm_90")
    # The kernel that does not compile is left to its run, which names it.
    with pytest.raises(AssertionError, match="compiled again"):
        k = load(keys.folders["no_compile"]).kernels[0]
        compiling.compile_cubin(keys.folders["no_compile"] / k.source, project / "run", "sm_90", (), project, cache)


def test_nothing_is_compiled_for_an_experiment_this_gpu_cannot_run_or_where_its_capability_is_unknown(project, monkeypatch):
    keys = CurrentKeys(project)
    todo = dues(project, keys)
    for due in todo:
        due.exp.min_compute_capability = (10, 0)
    compiled = []
    monkeypatch.setattr(precompiling, "compile_cubin", lambda source, *a, **k: compiled.append(source))
    monkeypatch.setattr(keys, "machine", lambda name, arch: compiled.append(name))
    Precompile(project, keys, project / "cache", todo, (9, 0)).wait()
    assert compiled == []
    Precompile(project, keys, project / "cache", todo, None, ceilings=True).wait()
    assert compiled == []


class SlowCompile(Precompile):
    """The build's compiles, done ``seconds`` from now."""

    def __init__(self, seconds: float):
        super().__init__(None, None, None, [], None)
        self.ended, self.seconds = time.perf_counter() + seconds, seconds

    def wait(self) -> float:
        left = max(0.0, self.ended - time.perf_counter())
        time.sleep(left)
        return left


def test_timed_runs_start_once_the_compiles_are_done_and_count_the_wait_as_their_compile(tmp_path):
    exp, other = experiment(), experiment("other")
    workers = StandInWorkers(exp, seconds=0.01)
    compiles = SlowCompile(0.3)
    short = record([], wall_s=1.0)  # each run too short to split: one on each GPU
    store, _, _, _ = build(tmp_path, workers, [due(exp, short), due(other, short)], compiles=compiles)
    assert sorted(gpu for _, gpu, _, _ in workers.spans) == [0, 1]
    assert all(start >= compiles.ended for _, _, start, _ in workers.spans)
    for name in ("exp", "other"):
        written = store.read(name, GPU)
        assert written.phases_s["compile"] >= 0.25 and written.wall_s >= 0.25
