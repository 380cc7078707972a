"""Every kernel compiles with nvcc for sm_90, and for every other architecture its ``needs:`` line
claims (``pytest -m archs``, which .ci/run runs); a kernel that does not says where and why."""

import os
from pathlib import Path

import pytest

from labnotebook.errors import CompileError
from labnotebook.declare.discover import experiment_folders, load
from labnotebook.run import compile as compiler
from labnotebook.run.compile import compile_cubin, parse_ptxas, target
from labnotebook.declare.experiment import Kernel
from labnotebook.run.needs import ARCHITECTURES, Needs, capability, needs_of

from conftest import FAULTS, ROOT

KERNELS = sorted(ROOT.glob("snippets/*/*.cu"))


def declared_options() -> dict[Path, tuple[str, ...]]:
    """Each kernel's nvcc options as its experiment declares them (sm_90a for wgmma, say)."""
    out = {}
    for folder in experiment_folders(ROOT / "snippets").values():
        for k in load(folder).kernels:
            if isinstance(k, Kernel):
                out[folder / k.source] = k.nvcc_options
    return out


@pytest.fixture(scope="module")
def compile_kernel(tmp_path_factory, compile_once):
    """``compile_kernel(source)``: the kernel compiled (or the CompileError) when its test asks
    for it, into the run's cubin cache; pytest-xdist spreads the tests, and with them nvcc's
    processes (one per kernel), over the cores. Compiled as its machine-code key is, without
    line tables, which change no code (test_machine_keys.py: test_line_tables_change_no_code):
    the keys that test_machine_keys.py makes find these cubins in the cache."""
    from labnotebook.run.compile import nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    out = tmp_path_factory.mktemp("cubins")
    options = declared_options()

    def compile_kernel(source: Path):
        try:
            return compile_once(source, out / source.parent.name, "sm_90", options.get(source, ()),
                                line_info=False)
        except CompileError as e:
            return e
    return compile_kernel


# Spills a rung takes on purpose, in bytes stored, as ptxas reported them when it was measured:
# its header comment says why (attention's rung 5 holds a 32 x 128 tile of O and 32 x 64 of S a
# warp; tiles of 32 keys fit, but an earlier version ran slower with them). Any other figure,
# more or less, fails.
DECLARED_SPILLS = {"attention/5_flash2.cu": 16}


@pytest.mark.parametrize("source", KERNELS, ids=[k.relative_to(ROOT / "snippets").as_posix() for k in KERNELS])
def test_every_kernel_compiles_for_sm90(source: Path, compile_kernel):
    compiled = compile_kernel(source)
    assert not isinstance(compiled, CompileError), f"{compiled}\n{compiled.detail}"
    assert compiled.cubin.stat().st_size > 0
    # The resource report is read for every entry function: registers, shared memory, spills.
    assert compiled.resources, "ptxas -v reported no entry function"
    for report in compiled.resources.values():
        assert report["registers"] > 0
        assert report["spill_store_bytes"] == DECLARED_SPILLS.get(source.relative_to(ROOT / "snippets").as_posix(), 0)


def test_a_kernel_may_name_its_own_architecture():
    assert target("sm_90", ("-arch=sm_90a", "-DX=1")) == ("sm_90a", ("-DX=1",))
    assert target("sm_90", ("-DX=1",)) == ("sm_90", ("-DX=1",))
    assert declared_options()[ROOT / "snippets/matmul_fp16/5_warp_specialized.cu"] == ("-arch=sm_90a",)


def test_there_are_kernels():
    assert len(KERNELS) >= 4


def test_a_cubin_is_compiled_again_when_a_shared_header_changes(nvcc, tmp_path, monkeypatch):
    shared = tmp_path / "include"
    shared.mkdir()
    (shared / "twice.cuh").write_text("__device__ float twice(float x) { return 2 * x; }\n")
    source = tmp_path / "k.cu"
    source.write_text('#include "twice.cuh"\nextern "C" __global__ void k(float* x) { x[0] = twice(x[0]); }\n')
    monkeypatch.setattr(compiler, "INCLUDE_DIR", shared)
    cache = tmp_path / "cache"
    compile_cubin(source, tmp_path / "a", "sm_90", cache=cache)
    (shared / "twice.cuh").write_text("__device__ float twice(float x) { return x + x; }\n")
    compile_cubin(source, tmp_path / "b", "sm_90", cache=cache)
    assert len(list(cache.glob("*.cubin"))) == 2  # a second key: not the first cubin reused


def test_a_cubin_is_keyed_on_the_headers_it_includes_and_no_others(tmp_path):
    """A header that a header includes, beside the kernel or on the shared include path, is in
    the key; one added beside the kernel that nothing includes is not (so a new header in an
    experiment's folder leaves its other kernels' cubins in the cache)."""
    shared, folder = tmp_path / "include", tmp_path / "exp"
    shared.mkdir(), folder.mkdir()
    (shared / "deep.cuh").write_text("#define DEEP 2\n")
    (folder / "tile.cuh").write_text('#pragma once\n#include <deep.cuh>\n')
    source = folder / "k.cu"
    source.write_text('#include "tile.cuh"\n#include <cuda_fp16.h>\nextern "C" __global__ void k() {}\n')
    assert compiler.headers(source, [folder, shared]) == [folder / "tile.cuh", shared / "deep.cuh"]
    key = lambda: compiler._cache_key(source, "sm_90", (), str(source), shared)  # any file stands for nvcc
    first = key()
    (folder / "unused.cuh").write_text("#define UNUSED 1\n")
    assert key() == first
    (shared / "deep.cuh").write_text("#define DEEP 3\n")
    assert key() != first


def test_compile_error_names_file_and_line(nvcc, tmp_path):
    source = FAULTS / "snippets" / "no_compile" / "1_typo.cu"
    with pytest.raises(CompileError) as e:
        compile_cubin(source, tmp_path, "sm_90", root=ROOT)
    message = str(e.value)
    assert "1_typo.cu(5)" in message and "undeclared_value" in message
    assert str(ROOT) not in message and str(ROOT) not in e.value.detail  # no machine paths


def test_parse_ptxas_reads_resources():
    report = """ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]"""
    assert parse_ptxas(report) == {"k": {"stack_bytes": 16, "spill_store_bytes": 8,
                                          "spill_load_bytes": 4, "registers": 40, "smem_bytes": 4096}}


# -- every architecture a kernel claims -------------------------------------------------------------
# sm_90 (and a kernel's own sm_90a) is compiled above, in every run of the suite; the rest of the
# matrix, about 160 s of nvcc on two cores, only where asked for (.ci/run does).
CLAIMED = [(source, arch) for source in KERNELS for arch in needs_of(source).claims() if arch not in ("sm_90", "sm_90a")]
# Each kernel whose needs: line asks for more than the oldest architecture, with the one below it.
BELOW = {source: ARCHITECTURES[ARCHITECTURES.index(needs_of(source).arch) - 1]
         for source in KERNELS if not needs_of(source).exact and needs_of(source).arch != ARCHITECTURES[0]}


def named(source: Path) -> str:
    return source.relative_to(ROOT / "snippets").as_posix()


@pytest.fixture(scope="module")
def arch_cache(cubin_cache):
    """Where the matrix keeps its cubins: ``NOTEBOOK_CUBIN_CACHE`` where set (.ci/run keeps one
    between its runs, keyed as every cubin is on nvcc, the flags, the file and what it includes,
    so an edit compiles again), else the run's own."""
    shared = os.environ.get("NOTEBOOK_CUBIN_CACHE")
    return Path(shared) if shared else cubin_cache


@pytest.mark.archs
@pytest.mark.parametrize("source, arch", CLAIMED, ids=[f"{named(s)}-{a}" for s, a in CLAIMED])
def test_every_kernel_builds_for_every_architecture_it_claims(source: Path, arch: str, nvcc, arch_cache, tmp_path):
    needs = needs_of(source)
    try:
        compile_cubin(source, tmp_path, arch, declared_options().get(source, ()), ROOT, arch_cache, line_info=False)
    except CompileError as e:
        said = f"its needs: line says {needs.arch}" if needs != Needs() else \
            f"it has no needs: line, so it claims every architecture from {ARCHITECTURES[0]}"
        pytest.fail(f"{named(source)} does not build for {arch} ({said}): {e}")


@pytest.mark.archs
@pytest.mark.parametrize("source", sorted(BELOW), ids=[named(s) for s in sorted(BELOW)])
def test_a_kernel_needs_what_its_needs_line_says(source: Path, nvcc, arch_cache, tmp_path):
    """A needs: line is no guess: the kernel does not build one architecture below it (else readers
    with that GPU would be told it is unavailable for nothing)."""
    below = BELOW[source]
    with pytest.raises(CompileError):
        compile_cubin(source, tmp_path, below, declared_options().get(source, ()), ROOT, arch_cache, line_info=False)


def test_a_kernel_built_for_one_architecture_alone_says_so():
    """A kernel compiled for ``sm_90a`` (its own ``-arch=``) declares ``needs: sm_90a``, and one that
    declares it is compiled for it: the engine runs it on that architecture alone."""
    for source, options in declared_options().items():
        own, needs = target("sm_90", options)[0], needs_of(source)
        if needs.exact or own != "sm_90":  # the GPU's own architecture, unless either names another
            assert own == needs.arch, f"{named(source)} is compiled for {own} but its needs: line says {needs.arch}"
        assert capability(needs.arch) <= capability("sm_90"), f"{named(source)}: the notebook's GPUs cannot run it"


def test_the_ladders_claim_what_their_rungs_need():
    """What the pages and the architecture mode rely on: softmax's rungs from 9 need clusters or
    the TMA, the mma.sync rungs Ampere, wgmma Hopper alone; every other kernel runs from Turing on."""
    by_name = {named(s): needs_of(s).arch for s in KERNELS}
    assert by_name["softmax/9_cluster.cu"] == "sm_90" and by_name["attention/5_flash2.cu"] == "sm_80"
    assert by_name["matmul_fp16/5_warp_specialized.cu"] == by_name["attention/6_wgmma.cu"] == "sm_90a"
    assert sum(arch == ARCHITECTURES[0] for arch in by_name.values()) >= 25
