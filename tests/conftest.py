"""Shared fixtures: the repository root, the fault fixtures, one strict build of the real site,
the pretend GPU in the test's own process, and the rules that skip GPU tests cleanly where
there is no GPU."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import importlib.util
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from labnotebook.run.device import gpu_name_from_smi

ROOT = Path(__file__).resolve().parent.parent
FAULTS = ROOT / "tests" / "fixtures" / "faults"
FAKEGPU = ROOT / "tests" / "fakegpu"
# PYTHONDONTWRITEBYTECODE as the run was started with (the processes tests start go without it).
NO_BYTECODE = os.environ.get("PYTHONDONTWRITEBYTECODE")


def _gpu_reason() -> str | None:
    if importlib.util.find_spec("pycuda") is None:
        return "PyCUDA is not installed"
    if gpu_name_from_smi() is None:
        return "no NVIDIA GPU"
    return None


# Under pytest-xdist (pyproject's addopts), the tests of these modules run on one worker, one
# after the other: they share module fixtures or caches that cost seconds (a fake-GPU build, the
# fault and flipped sites, the perturbed project with its parsed records, the browser with the
# links its pages gathered, the copied project, the edge cases' inputs and references). Every
# other test is handed out on its own.
TOGETHER = ("test_browser.py", "test_build.py", "test_machine_keys.py", "test_site_builds.py",
            "test_claims_perturbed.py", "test_experiments.py")
# Modules that run on one worker as one: the site builds after the browser's, in the process
# that has drawn the real site's charts (plots.drawn_once) and compiled its templates.
WITH = {"test_site_builds.py": "test_browser.py"}
# The order the work is handed out in: the longest first, so that no worker is left with a long
# one at the end; the browser first of all, as it builds the real site the others read.
FIRST = ("test_browser.py", "test_build.py", "test_machine_keys.py", "test_compile.py", "test_site_builds.py",
         "test_claims_perturbed.py", "test_experiments.py")


def pytest_collection_modifyitems(config, items):
    reason = _gpu_reason()
    if reason:
        skip = pytest.mark.skip(reason=f"GPU test: {reason}")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))  # stable: each module in its order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """For pytest-xdist's default ``--dist load``: its scope scheduling, a scope being a module of
    TOGETHER or a single test (xdist's own ``--dist loadgroup`` cannot do it: under pytest 9 its
    group marks are lost), handed out in the order collected."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduler(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::")[0]
            folder, _, name = module.rpartition("/")
            return f"{folder}/{WITH.get(name, name)}" if name in TOGETHER else nodeid

    config.option.loadscopereorder = False
    return Scheduler(config, log)



def run_cli(*args: str, root: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run build_results.py as a user would, from ``root``."""
    return subprocess.run([sys.executable, str(ROOT / "build_results.py"), "--root", str(root), *args],
                          capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=900)


def run_cli_here(*args: str, root: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    """``run_cli`` in this process: build_results.py's ``main`` with the same arguments and
    environment, its exit status and what it printed, without an interpreter start and the
    engine's imports (a third of a second of CPU each). For runs that end before a build starts
    (--list, --summary, --check, --accept, the errors, no GPU): a build's workers, signals and clean-up
    are tested through ``run_cli``."""
    from unittest import mock

    from labnotebook.build.cli import main

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, env or {}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--root", str(root), *args])
    return subprocess.CompletedProcess(["build_results.py", *args], code, out.getvalue(), err.getvalue())


def run_folder(tmp_path_factory) -> Path | None:
    """Under pytest-xdist, the folder of this run that all its workers share; None without it."""
    return tmp_path_factory.getbasetemp().parent if os.environ.get("PYTEST_XDIST_WORKER") else None


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """The real notebook's pages and committed results, as they are, built once with --strict for
    the tests that read or browse it (tests/site_support.py): once per run, under pytest-xdist
    too, where the first worker to need it builds it (others wait for it) in the run's folder."""
    from site_support import Built, build_real_site

    shared = run_folder(tmp_path_factory)
    if shared is None:
        return build_real_site(tmp_path_factory.mktemp("real"))
    with open(shared / "real.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        outcome = shared / "real.json"
        if not outcome.exists():
            built = build_real_site(shared / "real")
            outcome.write_text(json.dumps({"ok": built.ok, "warnings": built.warnings, "error": built.error}))
        seen = json.loads(outcome.read_text())
    return Built(seen["ok"], seen["warnings"], seen["error"], shared / "real" / "site")


@pytest.fixture(scope="session", autouse=True)
def subprocess_bytecode():
    """The processes tests start (the CLI, its workers and fork servers, a Jupyter kernel) write
    and read bytecode, as Python does by default, where the environment turned that off
    (PYTHONDONTWRITEBYTECODE): each of them compiled the engine and the declarations from source
    again, some 10 s of a run's CPU. They write it beside what they import, in the checkout or a
    test's copy of it (git ignores __pycache__/, and the keys leave it out: test_keys.py); the
    pytest processes themselves still write none."""
    if NO_BYTECODE is None:
        yield
        return
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    yield
    os.environ["PYTHONDONTWRITEBYTECODE"] = NO_BYTECODE


@pytest.fixture(scope="session")
def cubin_cache(tmp_path_factory) -> Path:
    """One cubin cache for the run, every worker's: its entries are keyed by all that decides a
    cubin (nvcc, the flags, the file and the headers it may include: run/compile.py), so a
    kernel that several tests compile the same way (test_compile's every kernel, the machine-code
    keys) is compiled once a run."""
    shared = run_folder(tmp_path_factory)
    if shared is None:
        return tmp_path_factory.mktemp("cubins")
    (shared / "cubins").mkdir(exist_ok=True)
    return shared / "cubins"


@pytest.fixture(scope="session")
def compile_once(cubin_cache):
    """``compile_once(source, out_dir, arch, options, line_info=True)``: ``compile_cubin`` of a
    file under ROOT into the run's cubin cache, one process at a time per file. Two workers that
    want the same cubin at once (test_compile's and the line tables of test_machine_keys) compiled
    it twice; now the second waits for the first, then finds it in the cache."""
    from labnotebook.run.compile import compile_cubin

    def compile_once(source: Path, out_dir: Path, arch: str = "sm_90", options: tuple[str, ...] = (),
                     line_info: bool = True):
        lock_name = source.relative_to(ROOT).as_posix().replace("/", "+")
        with open(cubin_cache / f".{lock_name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return compile_cubin(source, out_dir, arch, options, ROOT, cubin_cache, line_info=line_info)
    return compile_once


@functools.cache
def fake_bin() -> Path:
    """The pretend GPU's commands (tests/fakegpu/bin), as tests put them first on PATH: each a
    line of shell that runs its script with this Python, isolated and without site-packages
    (``-I -S``: they need the standard library alone). Started by their ``#!/usr/bin/env python3``,
    through whatever ``python3`` is first on PATH (a pyenv shim, itself a shell script, say) and
    every .pth file of its site-packages, each of the few hundred that a run starts cost 0.1 to
    0.15 s of CPU; this way, about 15 ms."""
    folder = Path(tempfile.mkdtemp(prefix="notebook-fakegpu-bin-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for script in sorted((FAKEGPU / "bin").iterdir()):
        command = folder / script.name
        command.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -I -S {shlex.quote(str(script))} "$@"\n')
        command.chmod(0o755)
    return folder


@pytest.fixture
def fake_gpu(monkeypatch):
    """The pretend GPU (tests/fakegpu) in this process: its ``pycuda.driver``, imported afresh
    (a device of its own) and forgotten afterwards, and its commands first on PATH."""
    monkeypatch.syspath_prepend(str(FAKEGPU))
    monkeypatch.setenv("PATH", f"{fake_bin()}{os.pathsep}{os.environ['PATH']}")
    modules = ("pycuda", "pycuda.driver", "pycuda.gpuarray", "kernels", "nvtx")
    for name in modules:
        monkeypatch.delitem(sys.modules, name, raising=False)
    import pycuda.driver

    yield pycuda.driver
    for name in modules:
        sys.modules.pop(name, None)


@pytest.fixture
def nvcc() -> str:
    from labnotebook.run.compile import nvcc_path

    path = nvcc_path()
    if path is None:
        pytest.skip("nvcc is not installed")
    return path


def copy_project(dst: Path, experiments: list[Path]) -> Path:
    """A miniature project: the real mkdocs.yml and docs styles, the given experiment folders."""
    (dst / "snippets").mkdir(parents=True)
    for folder in experiments:
        shutil.copytree(folder, dst / "snippets" / folder.name)
    return dst
