"""Discovery, declarations, references and source hashes, all on the CPU."""

import ast
import shutil

import numpy as np
import pytest

from labnotebook import PythonKernel, Unsupported
from labnotebook.errors import ExperimentError
from labnotebook.experiments import engine_hash, experiment_folders, load, source_hash
from labnotebook.run.verify import compare

from conftest import FAULTS, ROOT

FOLDERS = experiment_folders(ROOT / "snippets")


def test_discovers_the_notebook_experiments():
    assert {"vec_add", "vec_add_3d"} <= set(FOLDERS)


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_declaration_is_consistent(name):
    exp = load(FOLDERS[name])
    assert exp.name == name and exp.kernels and exp.cases and exp.edge_cases
    buffers = set(exp.inputs(exp.edge_cases[0], np.random.default_rng(0))) | set(exp.outputs)
    for k in exp.kernels:
        if isinstance(k, PythonKernel):  # launched by its own host code; see test_python_kernels_parse
            continue
        for case in exp.cases + exp.edge_cases:
            try:
                launch = k.launch(case)
            except Unsupported as e:
                assert str(e), f"{k.name} must say why it does not support {case.name}"
                continue
            named = {a for a in launch.args if isinstance(a, str)}
            assert named <= buffers, f"{k.name} names unknown buffers"
            threads = np.prod(launch.block)
            assert 0 < threads <= 1024
            assert launch.shared_bytes <= 227 * 1024, "more shared memory than a Hopper block can have"
            for name in k.cases or ():
                assert name in {c.name for c in exp.cases + exp.edge_cases}, f"{k.name}: unknown case {name}"


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_python_kernels_parse(name):
    """Triton and cuTile rungs need their DSL to import, which a CPU machine may lack; their
    source must still be valid Python, and they must name what they need."""
    exp = load(FOLDERS[name])
    for k in exp.kernels:
        if isinstance(k, PythonKernel):
            source = (FOLDERS[name] / k.source).read_text()
            tree = ast.parse(source)
            assert any(isinstance(n, ast.FunctionDef) and n.name == k.function for n in tree.body)
            assert "torch" in k.requires and len(k.requires) > 1, "name the DSL in requires"


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_inputs_are_random_and_seeded(name):
    exp = load(FOLDERS[name])
    case = exp.cases[0]
    x1 = exp.inputs(case, np.random.default_rng([exp.seed, 0]))
    x2 = exp.inputs(case, np.random.default_rng([exp.seed, 0]))
    x3 = exp.inputs(case, np.random.default_rng([exp.seed, 1]))
    # The data (the largest input) is random, never zeros; workspace buffers may start at zero.
    data = max(x1, key=lambda k: x1[k].size)
    assert np.count_nonzero(x1[data]) > 0.99 * x1[data].size, "inputs must not be zeros"
    assert not np.array_equal(x1[data], x3[data])
    for k, v in x1.items():
        assert np.array_equal(v, x2[k])


@pytest.mark.parametrize("name", ["vec_add", "vec_add_3d", "matrix_add_2d"])
def test_reference_is_float64_and_float32_numpy_meets_the_tolerance(name):
    """The reference is right, and the declared tolerance is one a correct kernel can meet."""
    exp = load(FOLDERS[name])
    for case in exp.edge_cases:
        x = exp.inputs(case, np.random.default_rng(3))
        ref = exp.reference(**x)
        assert ref["c"].dtype == np.float64
        with np.errstate(over="ignore", invalid="ignore"):
            assert compare(x["a"] + x["b"], ref["c"], exp.tolerance).ok, case.name
            wrong = (x["a"] + x["b"]).ravel()
        # One ulp off is wrong: the reference is the correctly rounded float32 sum.
        wrong[-1] = np.nextafter(wrong[-1], np.float32(np.inf))
        assert not compare(wrong.reshape(ref["c"].shape), ref["c"], exp.tolerance).ok


def test_source_hash_follows_kernels_and_host_code(tmp_path):
    folder = shutil.copytree(FOLDERS["vec_add"], tmp_path / "vec_add")
    before = source_hash(folder)
    assert before == source_hash(FOLDERS["vec_add"])
    (folder / "1_add.cu").write_text((folder / "1_add.cu").read_text() + "\n// changed\n")
    assert source_hash(folder) != before
    (folder / "notes.md").write_text("prose is not a source")
    after_kernel = source_hash(folder)
    assert source_hash(folder) == after_kernel


def test_source_hash_includes_the_engine(monkeypatch, tmp_path):
    folder = FOLDERS["vec_add"]
    before = source_hash(folder)
    engine = shutil.copytree(ROOT / "labnotebook" / "run", tmp_path / "run")
    (engine / "timing.py").write_text((engine / "timing.py").read_text() + "\n# changed\n")
    monkeypatch.setattr("labnotebook.experiments.ENGINE_DIR", engine)
    assert engine_hash() != "" and source_hash(folder) != before


def test_fault_fixtures_load():
    faults = experiment_folders(FAULTS / "snippets")
    assert load(faults["wrong_answer"]).kernels[0].name == "1_skips_last"


def test_broken_declaration_is_reported_by_name(tmp_path):
    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / "experiment.py").write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ExperimentError, match="broken: experiment.py raised RuntimeError: boom"):
        load(bad)
    (bad / "experiment.py").write_text("x = 1\n")
    with pytest.raises(ExperimentError, match="must define"):
        load(bad)


def test_softmax_reference_on_awkward_inputs():
    exp = load(FOLDERS["softmax"])
    cases = {c.name: c for c in exp.edge_cases}
    rng = np.random.default_rng(0)
    for name in ("64x2048 |x| ~ 1e4", "64x512 all negative", "1x1", "2x100003"):
        x = exp.inputs(cases[name], rng)["x"]
        y = exp.reference(x)["y"]
        assert y.dtype == np.float64 and np.isfinite(y).all()
        assert np.allclose(y.sum(axis=1), 1.0)
    x = exp.inputs(cases["64x512 all negative"], rng)["x"]
    assert (x < 0).all()
    x = exp.inputs(cases["64x1000 with -inf"], rng)["x"]
    y = exp.reference(x)["y"]
    assert np.isnan(y[0]).all(), "a row of only -inf is NaN, as in PyTorch"
    assert np.isfinite(y[1:]).all() and (y[1:][np.isneginf(x[1:])] == 0).all()


def test_softmax_float32_numpy_meets_the_tolerance():
    exp = load(FOLDERS["softmax"])
    for case in exp.edge_cases:
        x = exp.inputs(case, np.random.default_rng(1))["x"]
        with np.errstate(invalid="ignore"):
            e = np.exp(x - x.max(axis=1, keepdims=True))
            y32 = e / e.sum(axis=1, keepdims=True)
        assert compare(y32, exp.reference(x)["y"], exp.tolerance).ok, case.name


def test_vec_add_extremes_cover_overflow_nan_and_subnormals():
    exp = load(FOLDERS["vec_add"])
    case = next(c for c in exp.edge_cases if c.params.get("kind") == "extremes")
    x = exp.inputs(case, np.random.default_rng(0))
    c = exp.reference(**x)["c"]
    assert np.isnan(c).any() and np.isposinf(c).any() and np.isneginf(c).any()
    assert c[list(zip(x["a"], x["b"])).index((np.float32(3.4e38), np.float32(3.4e38)))] == np.inf
    assert (np.abs(c[np.isfinite(c) & (c != 0)]) < 1e-37).any()  # a subnormal sum survives


def test_broadcast_reference_and_tolerance():
    exp = load(FOLDERS["add_broadcast"])
    for case in exp.edge_cases + exp.cases[:1]:
        x = exp.inputs(case, np.random.default_rng(2))
        want = exp.reference(**x)["out"]
        got = (x["a"] + x["b"][:, :, None]) + x["c"][:, None, None]  # float32, the kernel's order
        assert compare(got, want, exp.tolerance).ok, case.name
        got.ravel()[-1] += np.float32(1e-3)
        assert not compare(got, want, exp.tolerance).ok


def test_warp_primitives_reference_lane_by_lane():
    """The NumPy reference against a plain loop over warps, partial last warps included."""
    exp = load(FOLDERS["warp_primitives"])
    for case in exp.edge_cases[:4]:
        x = exp.inputs(case, np.random.default_rng(0))["x"].astype(np.float64)
        ref = exp.reference(x.astype(np.float32))
        starts = range(0, x.size, 32)
        assert list(ref["sums"]) == [x[s:s + 32].sum() for s in starts]
        assert list(ref["firsts"]) == [x[i // 32 * 32] for i in range(x.size)]
        assert list(ref["scans"]) == [x[i // 32 * 32:i + 1].sum() for i in range(x.size)]
