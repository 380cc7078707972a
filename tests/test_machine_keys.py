"""Keyed on what runs: a CUDA edit that leaves the machine code as it was keeps a result fresh,
one that changes it stales it; a Python edit that changes no syntax stales nothing; and a fresh
result's key is brought up to date without a GPU (``--rekey``). Pinned by editing a copy of the
project, with its committed results, and compiling with this machine's nvcc."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labnotebook.results import machine
from labnotebook.build.cli import main
from labnotebook.results.freshness import CurrentKeys, Stored
from labnotebook.results.keys import meaning
from labnotebook.results.store import Store

from conftest import ROOT

needs_nvcc = pytest.mark.skipif(machine.nvcc_build() is None, reason="no nvcc on this machine")
GPU = "NVIDIA H100 80GB HBM3"
TILED = "snippets/matmul/3_shared_tiled.cu"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, cubin_cache) -> Path:
    """The engine, experiments, settings and results, in a folder of their own, and the run's
    cubin cache for every copy (its entries are keyed by content, so a copy compiles only what it
    edits)."""
    root = tmp_path_factory.mktemp("pristine")
    for name in ("labnotebook", "snippets", "results"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    (root / ".cache").mkdir()
    (root / ".cache" / "cubins").symlink_to(cubin_cache, target_is_directory=True)
    return root


@pytest.fixture
def copy(pristine, tmp_path) -> Path:
    shutil.copytree(pristine, tmp_path / "p", symlinks=True)
    return tmp_path / "p"


def stored(root: Path, experiment: str = "matmul", part: str = "main") -> Stored:
    return Stored.read(Store(root / "results"), experiment, GPU, CurrentKeys(root), part)


def edit(root: Path, relative: str, old: str, new: str, count: int = 1) -> None:
    """Replace the first ``count`` matches of ``old`` (every one with 0)."""
    path = root / relative
    text = path.read_text()
    assert re.search(old, text), f"{old!r} not in {relative}"
    path.write_text(re.sub(old, new, text, count=count))


# -- CUDA: machine code decides where only CUDA files changed ---------------------------------

def extract_helper(root: Path) -> None:
    """The tile's inner product moved into a __forceinline__ helper in a header of its own."""
    (root / "snippets/matmul/tile_dot.cuh").write_text(
        "#pragma once\n// The inner product of a row of one tile and a column of the other.\n"
        "template <int T>\n__device__ __forceinline__ float tile_dot(const float (&As)[T][T], "
        "const float (&Bs)[T][T], int ty, int tx, float sum)\n{\n"
        "    for (int k = 0; k < T; ++k) sum += As[ty][k] * Bs[k][tx];\n    return sum;\n}\n")
    edit(root, TILED, r"#define TILE 16", '#define TILE 16\n#include "tile_dot.cuh"')
    edit(root, TILED, r"for \(int k = 0; k < TILE; \+\+k\) sum \+= As\[ty\]\[k\] \* Bs\[k\]\[tx\];",
         "sum = tile_dot<TILE>(As, Bs, ty, tx, sum);")


SAME_CODE = {
    "a comment": lambda r: edit(r, TILED, r"// the tile is complete before anyone reads it", "// a reworded comment"),
    "lines of comment that move the code": lambda r: edit(r, TILED, r"\{\n", "{\n    // one\n    // two\n"),
    "a renamed local": lambda r: edit(r, TILED, r"\bsum\b", "acc", count=0),
    "a helper extracted into a header": extract_helper,
}
OTHER_CODE = {
    "a tile size": (TILED, r"#define TILE 16", "#define TILE 32"),
    "launch bounds": (TILED, r'extern "C" __global__ void', 'extern "C" __global__ void __launch_bounds__(256)'),
    "a static shared array's size": (TILED, r"__shared__ float Bs\[TILE\]\[TILE\];",
                                     "__shared__ float Bs[TILE][TILE + 1];"),
    "a __constant__ initialiser": ("snippets/memory_types/4_constant.cu", r"0\.125f", "0.0625f"),
}


@needs_nvcc
@pytest.mark.parametrize("what", SAME_CODE)
def test_an_edit_that_leaves_the_machine_code_keeps_the_result_fresh(copy, what):
    SAME_CODE[what](copy)
    result = stored(copy)
    assert result.changed() and result.state == "fresh" and result.same_machine_code
    assert result.rekey_due and "fresh by its machine code" in result.rekey_reason()


@needs_nvcc
@pytest.mark.parametrize("what", OTHER_CODE)
def test_an_edit_that_changes_the_machine_code_stales_the_result(copy, what):
    relative, old, new = OTHER_CODE[what]
    edit(copy, relative, old, new)
    experiment = relative.split("/")[1]
    result = stored(copy, experiment)
    assert result.state == "stale" and not result.same_machine_code
    assert f"the machine code of {relative} changed" in result.reason()
    assert stored(copy, experiment, "large").state == "stale" or experiment == "memory_types"


@needs_nvcc
def test_the_summary_judges_machine_code_as_check_does(copy):
    from labnotebook.results.store import Store
    from labnotebook.results.summary import summary_lines

    def stale(root):
        lines = summary_lines(root, Store(root / "results"))
        return {line["stale"] for line in lines if line["experiment"] == "matmul"}

    SAME_CODE["a comment"](copy)
    assert stale(copy) == {False}
    edit(copy, TILED, r"float sum = 0\.0f;", "float sum = 1.0f;")
    assert stale(copy) == {True}


@needs_nvcc
def test_a_kernel_that_no_longer_compiles_is_stale(copy):
    edit(copy, TILED, r"float sum = 0\.0f;", "float sum = ;")
    assert stored(copy).state == "stale"


@needs_nvcc
def test_rekey_rewrites_the_key_and_nothing_else(copy, capsys):
    SAME_CODE["a comment"](copy)
    path = copy / "results/matmul/nvidia-h100-80gb-hbm3.json"
    before = json.loads(path.read_text())
    assert main(["--root", str(copy), "--check"]) == 0
    assert "fresh, key not current" in capsys.readouterr().out
    assert main(["--root", str(copy), "--rekey"]) == 0
    out = capsys.readouterr().out
    assert "rekeyed matmul on NVIDIA H100 80GB HBM3:" in out and "rekeyed matmul on NVIDIA H100 80GB HBM3 (large" in out
    after = json.loads(path.read_text())
    assert after["source_hash"] != before["source_hash"] and after["machine"] == before["machine"]
    for data in (before, after):  # the key's fields, the profile's among them (its files' paths)
        del data["source_hash"], data["sources"], data["profile"]["sources"], data["format"]
    assert after == {**before, **{k: None for k in after.keys() - before.keys()}}  # later formats' fields: null
    result = stored(copy)
    assert result.state == "fresh" and not result.rekey_due and not result.changed()
    assert main(["--root", str(copy), "--check"]) == 0
    assert "key not current" not in capsys.readouterr().out


@needs_nvcc
def test_rekey_leaves_a_stale_result_for_a_gpu(copy, capsys):
    edit(copy, *OTHER_CODE["a tile size"])
    path = copy / "results/matmul/nvidia-h100-80gb-hbm3.json"
    before = path.read_bytes()
    assert main(["--root", str(copy), "--rekey"]) == 0
    assert "need a GPU run" in capsys.readouterr().out and path.read_bytes() == before


def test_without_nvcc_the_source_text_decides_and_says_so(copy, monkeypatch):
    monkeypatch.setattr(machine, "nvcc_path", lambda: None)
    monkeypatch.setattr(machine, "nvcc_build", lambda: None)
    SAME_CODE["a comment"](copy)
    result = stored(copy)
    assert result.state == "stale"
    assert "no nvcc here, so its source text decides" in result.reason()


def test_another_nvcc_build_leaves_the_source_text_to_decide(copy, monkeypatch):
    monkeypatch.setattr(machine, "nvcc_build", lambda: "13.2.51 cuda_13.2.r13.2/compiler.0_0")
    SAME_CODE["a comment"](copy)
    result = stored(copy)
    assert result.state == "stale" and "is not the one that compiled it" in result.reason()


def test_a_python_edit_is_never_judged_by_machine_code(copy):
    edit(copy, "snippets/matmul/experiment.py", r"\n$", "\n_an_edit = 1\n")
    result = stored(copy)
    assert result.state == "stale" and result.reason().startswith("changed since they were measured")


# -- Python: keyed on its syntax, the engine on its content -------------------------------------

def digests(root: Path) -> dict[str, str]:
    keys = CurrentKeys(root)
    return {name: keys[name].digest for name in keys.names()}


def test_docstrings_comments_and_layout_stale_nothing(copy):
    before = digests(copy)
    for relative in ("labnotebook/declare/experiment.py", "labnotebook/run/protocol/timing.py"):
        path = copy / relative
        text = re.sub(r'^"""', '"""A reworded docstring.\n\n', path.read_text(), count=1)
        text = re.sub(r"(\n    def \w+\(self[^)]*\)[^:]*:\n)", r'\1        """Another docstring."""\n', text, count=1)
        path.write_text(text.replace("\n\n\n", "\n\n\n# a comment\n\n") + "\n\n# the end\n")
    assert digests(copy) == before


def test_a_change_to_the_timing_logic_stales_everything(copy):
    before = digests(copy)
    edit(copy, "labnotebook/run/protocol/timing.py", r"WARMUP_MS = 25\.0", "WARMUP_MS = 50.0")
    after = digests(copy)
    assert all(before[name] != after[name] for name in before)


def digests_run_by(root: Path) -> dict[str, str]:
    """``digests``, by a Python that imports ``root``'s own engine (its declarations import it)."""
    code = ("import json, sys; from pathlib import Path; from labnotebook.results.freshness import CurrentKeys; "
            "k = CurrentKeys(Path(sys.argv[1])); print(json.dumps({n: k[n].digest for n in k.names()}))")
    out = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, cwd=root,
                         env={**os.environ, "PYTHONPATH": str(root)}, check=True)
    return json.loads(out.stdout)


def test_an_engine_module_that_moves_stales_nothing(copy):
    """``run/draw.py`` renamed ``run/drawing.py``, every import of it rewritten."""
    before = digests_run_by(copy)
    assert None not in before.values()
    (copy / "labnotebook/run/draw.py").rename(copy / "labnotebook/run/drawing.py")
    for path in [*copy.glob("labnotebook/**/*.py"), *copy.glob("snippets/*/*.py")]:
        text = path.read_text()
        text = re.sub(r"from (\.+|labnotebook\.run\.?)draw import", r"from \1drawing import", text)
        text = re.sub(r"from (\.+|labnotebook\.run) import draw\b", r"from \1 import drawing as draw", text)
        path.write_text(text)
    assert digests_run_by(copy) == before


def test_meaning_ignores_docstrings_and_comments_but_not_code():
    base = b'"""doc"""\nimport numpy as np\nfrom .draw import x\n\ndef f(a):\n    """doc"""\n    return a + 1\n'
    assert meaning(base) == meaning(base.replace(b'"""doc"""', b'"""other"""').replace(b"\n\n", b"\n\n# c\n"))
    assert meaning(base) == meaning(base.replace(b"from .draw", b"from ..run.draw"))
    assert meaning(base) != meaning(base.replace(b"a + 1", b"a + 2"))
    assert meaning(base) != meaning(base.replace(b"import numpy as np", b"import torch as np"))
    assert meaning(base) != meaning(base.replace(b"import x", b"import y"))


# -- the same keys everywhere -------------------------------------------------------------------

SYNTAX = '''"""doc"""
from __future__ import annotations
import numpy as np
from .draw import threads as t


class A:
    """doc"""
    x: int = 1

    def f(self, a: "np.ndarray", *args, k=2, **kw) -> float:
        match a:
            case [1, *rest] if rest:
                pass
        return float(f"{a!r:>4} {k=}" if a else [i async for i in b]) + (lambda q: q ** 2)(k)
'''


def test_meaning_is_the_same_on_every_python():
    """The GPU machines run another Python than CI: a key may not depend on it. This hash was
    the same under Python 3.10, 3.11, 3.12 and 3.13 (new fields left empty are left out)."""
    assert meaning(SYNTAX.encode()) == "0839b8367ce6db19"


@needs_nvcc
def test_machine_keys_are_the_same_from_two_checkout_paths_and_match_the_record(pristine, copy):
    """The committed record's machine code (written on the GPU machine, or by --rekey) is what
    this machine compiles, from the project's own path and from a copy's."""
    here, there = CurrentKeys(pristine), CurrentKeys(copy)
    for name in ("matmul", "block_reduce"):
        record = Store(ROOT / "results").read(name, GPU)
        assert record.machine is not None
        assert here.machine(name, record.machine.arch) == there.machine(name, record.machine.arch)
        assert here.machine(name, record.machine.arch).cubins == record.machine.cubins


@needs_nvcc
@pytest.mark.parametrize("source,arch", [("snippets/matmul/9_any_shape.cu", "sm_90"),
                                         ("snippets/softmax/12_pipelined.cu", "sm_90"),
                                         ("snippets/matmul_fp16/5_warp_specialized.cu", "sm_90a")])
def test_line_tables_change_no_code(tmp_path, compile_once, source, arch):
    """The key compiles without -lineinfo, the run with it: the code is the same."""
    from io import BytesIO

    from elftools.elf.elffile import ELFFile

    def code(line_info: bool) -> dict[str, bytes]:
        out = tmp_path / str(line_info)
        cubin = compile_once(ROOT / source, out, arch, line_info=line_info).cubin
        elf = ELFFile(BytesIO(cubin.read_bytes()))
        return {s.name: s.data() for s in elf.iter_sections() if s.name.startswith((".text", ".nv.constant", ".nv.shared"))}

    with_lines, without = code(True), code(False)
    assert with_lines and with_lines == without


@needs_nvcc
def test_a_project_without_its_own_engine_compiles_the_engine_s_kernels(tmp_path):
    """A project of experiments alone (a reader's, a test's) keys the ceilings on the installed
    engine's fma_peak.cu: its machine code is found there, as the run finds it."""
    shutil.copytree(ROOT / "snippets" / "vec_add", tmp_path / "snippets" / "vec_add")
    keys = CurrentKeys(tmp_path)
    code = keys.machine("ceilings", "sm_90")
    assert not isinstance(code, str)
    assert code.cubins == CurrentKeys(ROOT).machine("ceilings", "sm_90").cubins
    assert not any(h.startswith("no machine code") for h in keys.machine("vec_add", "sm_90").cubins.values())

