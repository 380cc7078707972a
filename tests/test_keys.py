"""Results go stale when, and only when, something that can change their numbers changed: the
rule of ``labnotebook/results/keys.py``, pinned by editing a copy of the project and seeing whose key moves."""

import re
import shutil
from pathlib import Path

import pytest

from labnotebook.declare.discover import experiment_folders
from labnotebook.results.freshness import CurrentKeys
from labnotebook.results.store import CEILINGS

from conftest import ROOT


def digests(root: Path) -> dict[str, str]:
    keys = CurrentKeys(root)
    return {name: keys[name].digest for name in keys.names()}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """The project's engine, experiments and settings, in a folder of their own (made once)."""
    root = tmp_path_factory.mktemp("pristine")
    for name in ("labnotebook", "snippets"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    return root


@pytest.fixture(scope="module")
def before(pristine) -> dict[str, str]:
    return digests(pristine)


@pytest.fixture
def copy(pristine, tmp_path) -> Path:
    """A copy of the pristine project, for one test to edit."""
    shutil.copytree(pristine, tmp_path / "p")
    return tmp_path / "p"


@pytest.fixture
def staled_by(copy, before):
    def run(edit) -> set[str]:
        """The results (experiments, and the ceilings) whose key an edit of the copy changes."""
        edit(copy)
        after = digests(copy)
        return {name for name in before if before[name] != after[name]}
    return run


def append(relative: str, text: str | None = None):
    """An edit that changes what a file means: a statement for Python (a comment would not), a
    line for CUDA (its source key is its text; its machine code is ``machine.py``'s)."""
    text = text or ("\n_an_edit = 1\n" if relative.endswith(".py") else "\n// an edit\n")

    def edit(root: Path):
        path = root / relative
        path.write_text(path.read_text() + text)
    return edit


def importers(module: str) -> set[str]:
    """The experiments whose declaration names an engine module (read independently of keys.py)."""
    return {p.parent.name for p in (ROOT / "snippets").glob("*/experiment.py")
            if re.search(rf"\b{module}\b", p.read_text())}


EVERYTHING = {*experiment_folders(ROOT / "snippets"), CEILINGS}  # every name a key is made for


def test_the_copy_keys_like_the_original(before):
    assert before == digests(ROOT)


CANNOT_CHANGE_A_NUMBER = [
    "labnotebook/site/tables.py", "labnotebook/site/macros.py",  # the site
    "labnotebook/run/worker.py", "labnotebook/build/orchestrate.py",  # the worker and its process handling
    "labnotebook/build/processes.py", "labnotebook/build/workers.py",
    "labnotebook/build/plan.py", "labnotebook/build/runs.py", "labnotebook/build/ceilings.py",  # the build's stages
    "labnotebook/build/sanitizing.py", "labnotebook/build/profiling.py",
    "labnotebook/build/records.py", "labnotebook/build/report.py",
    "labnotebook/build/schedule.py",  # the scheduler
    "labnotebook/results/store.py", "labnotebook/results/format.py",  # the store and its format
    "labnotebook/build/ncu.py", "labnotebook/run/ncu_target.py",  # the profiler pass
    "labnotebook/build/cli.py", "labnotebook/run/execute.py", "labnotebook/run/compile.py", "labnotebook/run/device.py",
]


def test_an_edit_that_cannot_change_a_number_stales_nothing(staled_by):
    """Each of these files at once: no key holds any of them (a key changes when one of its files does)."""
    def edit(root: Path):
        for relative in CANNOT_CHANGE_A_NUMBER:
            append(relative)(root)
    assert staled_by(edit) == set()


def test_editing_one_kernel_stales_its_experiment_alone(staled_by):
    assert staled_by(append("snippets/matmul/3_shared_tiled.cu")) == {"matmul"}


def test_editing_an_experiments_own_header_stales_it_alone(staled_by):
    assert staled_by(append("snippets/softmax/reduce.cuh")) == {"softmax"}


def test_editing_a_shared_header_stales_exactly_its_users(staled_by):
    # Its users include it directly or through another shared header (hopper.cuh does).
    via = {"tensor_core.cuh"} | {h.name for h in (ROOT / "labnotebook/run/include").glob("*.cuh")
                                 if '"tensor_core.cuh"' in h.read_text()}
    users = {p.parent.name for p in (ROOT / "snippets").glob("*/*.cu*")
             if any(f'"{header}"' in p.read_text() for header in via)}
    assert users >= {"matmul_fp16", "attention", "softmax"}
    assert staled_by(append("labnotebook/run/include/tensor_core.cuh")) == users


def test_editing_the_timing_method_stales_everything(staled_by):
    assert staled_by(append("labnotebook/run/protocol/timing.py")) == EVERYTHING


def test_editing_verification_stales_everything(staled_by):
    assert staled_by(append("labnotebook/run/protocol/verify.py")) == EVERYTHING


@pytest.mark.parametrize("module", ["elementwise", "cublas", "gemm"])
def test_editing_an_engine_module_stales_the_experiments_that_import_it(staled_by, module):
    users = importers(module)
    assert users
    assert staled_by(append(f"labnotebook/run/{module}.py")) == users


def test_the_phase_engine_stales_the_experiments_that_declare_a_phase_program(staled_by):
    assert staled_by(append("labnotebook/run/phases.py")) == importers("PhaseProgram")


def test_the_roofs_stale_the_ceilings_alone(staled_by):
    assert staled_by(append("labnotebook/run/fma_peak.cu")) == {CEILINGS}


def test_scratch_files_caches_and_line_endings_change_no_key(staled_by):
    def edit(root: Path):
        folder = root / "snippets" / "vec_add"
        (folder / "scratch.cu").write_text('extern "C" __global__ void k() {}\n')
        (folder / "notes.py").write_text("x = 1\n")
        (folder / "__pycache__").mkdir(exist_ok=True)
        (folder / "__pycache__" / "experiment.cpython-312.pyc").write_bytes(b"\0\1")
        kernel = folder / "1_add.cu"
        kernel.write_bytes(kernel.read_bytes().replace(b"\n", b"\r\n"))
    assert staled_by(edit) == set()


def test_a_declaration_that_does_not_load_has_no_key(copy):
    (copy / "snippets" / "vec_add" / "experiment.py").write_text("raise RuntimeError('half-edited')\n")
    key = CurrentKeys(copy)["vec_add"]
    assert key.digest is None and "half-edited" in key.error


def test_a_key_names_each_file_it_holds(pristine):
    files = CurrentKeys(pristine)["matmul_fp16"].files
    assert "snippets/matmul_fp16/experiment.py" in files and "snippets/matmul_fp16/mma_gemm.cuh" in files
    assert "labnotebook/run/include/tensor_core.cuh" in files and "labnotebook/run/protocol/timing.py" in files
    assert not any(p.startswith("labnotebook/site/") or p.endswith("worker.py") for p in files)
