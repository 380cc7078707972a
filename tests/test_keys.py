"""Results go stale when, and only when, something that can change their numbers changed: the
rule of ``labnotebook/keys.py``, pinned by editing a copy of the project and seeing whose key moves."""

import re
import shutil
from pathlib import Path

import pytest

from labnotebook.freshness import Keys
from labnotebook.store import CEILINGS

from conftest import ROOT


@pytest.fixture
def copy(tmp_path) -> Path:
    """The project's engine, experiments and settings, in a folder of their own."""
    for name in ("labnotebook", "snippets"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    return tmp_path


def digests(root: Path) -> dict[str, str]:
    keys = Keys(root)
    return {name: keys[name].digest for name in keys.names()}


def staled_by(root: Path, edit) -> set[str]:
    """The results (experiments, and the ceilings) whose key an edit changes."""
    before = digests(root)
    edit(root)
    after = digests(root)
    return {name for name in before if before[name] != after[name]}


def append(relative: str, text: str = "\n// an edit\n"):
    def edit(root: Path):
        path = root / relative
        path.write_text(path.read_text() + text)
    return edit


def importers(module: str) -> set[str]:
    """The experiments whose declaration names an engine module (read independently of keys.py)."""
    return {p.parent.name for p in (ROOT / "snippets").glob("*/experiment.py")
            if re.search(rf"\b{module}\b", p.read_text())}


EVERYTHING = set(digests(ROOT))


def test_the_copy_keys_like_the_original(copy):
    assert digests(copy) == digests(ROOT)


@pytest.mark.parametrize("relative", [
    "labnotebook/site/tables.py", "labnotebook/site/macros.py",  # the site
    "labnotebook/run/worker.py", "labnotebook/orchestrate.py",  # the worker and its process handling
    "labnotebook/schedule.py",  # the scheduler
    "labnotebook/store.py", "labnotebook/records.py",  # the store and its format
    "labnotebook/profile.py", "labnotebook/run/profiled.py",  # the profiler pass
    "labnotebook/cli.py", "labnotebook/run/execute.py", "labnotebook/run/compile.py", "labnotebook/run/device.py",
])
def test_an_edit_that_cannot_change_a_number_stales_nothing(copy, relative):
    assert staled_by(copy, append(relative, "\n# an edit\n")) == set()


def test_editing_one_kernel_stales_its_experiment_alone(copy):
    assert staled_by(copy, append("snippets/matmul/3_shared_tiled.cu")) == {"matmul"}


def test_editing_an_experiments_own_header_stales_it_alone(copy):
    assert staled_by(copy, append("snippets/softmax/reduce.cuh")) == {"softmax"}


def test_editing_a_shared_header_stales_exactly_its_users(copy):
    users = {p.parent.name for p in (ROOT / "snippets").glob("*/*.cu*") if "tensor_core.cuh" in p.read_text()}
    assert users >= {"matmul_fp16", "attention"}
    assert staled_by(copy, append("labnotebook/run/include/tensor_core.cuh")) == users


def test_editing_the_timing_method_stales_everything(copy):
    assert staled_by(copy, append("labnotebook/run/protocol/timing.py", "\n# an edit\n")) == EVERYTHING


def test_editing_verification_stales_everything(copy):
    assert staled_by(copy, append("labnotebook/run/protocol/verify.py", "\n# an edit\n")) == EVERYTHING


@pytest.mark.parametrize("module", ["elementwise", "cublas", "gemm"])
def test_editing_an_engine_module_stales_the_experiments_that_import_it(copy, module):
    users = importers(module)
    assert users
    assert staled_by(copy, append(f"labnotebook/run/{module}.py", "\n# an edit\n")) == users


def test_the_phase_engine_stales_the_experiments_that_declare_a_phase_program(copy):
    assert staled_by(copy, append("labnotebook/run/phases.py", "\n# an edit\n")) == importers("PhaseProgram")


def test_the_roofs_stale_the_ceilings_alone(copy):
    assert staled_by(copy, append("labnotebook/run/fma_peak.cu")) == {CEILINGS}


def test_scratch_files_caches_and_line_endings_change_no_key(copy):
    def edit(root: Path):
        folder = root / "snippets" / "vec_add"
        (folder / "scratch.cu").write_text('extern "C" __global__ void k() {}\n')
        (folder / "notes.py").write_text("x = 1\n")
        (folder / "__pycache__").mkdir(exist_ok=True)
        (folder / "__pycache__" / "experiment.cpython-312.pyc").write_bytes(b"\0\1")
        kernel = folder / "1_add.cu"
        kernel.write_bytes(kernel.read_bytes().replace(b"\n", b"\r\n"))
    assert staled_by(copy, edit) == set()


def test_a_declaration_that_does_not_load_has_no_key(copy):
    (copy / "snippets" / "vec_add" / "experiment.py").write_text("raise RuntimeError('half-edited')\n")
    key = Keys(copy)["vec_add"]
    assert key.digest is None and "half-edited" in key.error


def test_a_key_names_each_file_it_holds(copy):
    files = Keys(copy)["matmul_fp16"].files
    assert "snippets/matmul_fp16/experiment.py" in files and "snippets/matmul_fp16/mma_gemm.cuh" in files
    assert "labnotebook/run/include/tensor_core.cuh" in files and "labnotebook/run/protocol/timing.py" in files
    assert not any(p.startswith("labnotebook/site/") or p.endswith("worker.py") for p in files)
