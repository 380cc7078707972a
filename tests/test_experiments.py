"""Discovery, declarations, references and source hashes, all on the CPU and in seconds: nothing
here draws a timed or a large case's inputs (edge cases are small by rule, and checked to be).

The per-experiment tests call small check functions that name the experiment, the kernel and
the case in every failure; the last tests feed them broken declarations to show they do."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import re
import shutil
from functools import cache

import numpy as np
import pytest

from labnotebook import Case, Experiment, Kernel, Launch, PythonKernel, Tolerance, Unavailable, Unsupported, cdiv
from labnotebook.errors import ExperimentError
from labnotebook.declare.discover import experiment_folders, global_functions, load
from labnotebook.declare.experiment import tolerance_at
from labnotebook.declare.typed_output import BF16, TypedOutputKernel
from labnotebook.run.launch import InvalidLaunch, launch_dims
from labnotebook.run.protocol.verify import compare
from labnotebook.run.tma import TensorMap

from conftest import FAULTS, ROOT

FOLDERS = experiment_folders(ROOT / "snippets")
NAMES = sorted(FOLDERS)

INT_MAX = 2**31 - 1
MAX_SHARED = 227 * 1024  # what one Hopper block can have
EDGE_MAX_ELEMENTS = 4 << 20  # edge cases run under compute-sanitizer too: a few million at most
LARGE_MIN_ELEMENTS = 2**31
LARGE_MAX_BYTES = 40 << 30  # the bytes the kernels move bound what a large case holds on the GPU
# Case parameters that are not sizes: a block shape, a stride.
NOT_SIZES = {"stride", "bx", "by", "bz"}
# Experiments whose kernels must be verified past 2^31 elements.
NEED_LARGE_CASES = {"vec_add", "matrix_add_2d", "block_reduce", "softmax"}
# Which non-finite and extreme inputs the edge cases must hold, beyond +inf and NaN. A matrix
# product gets no ±3.4e38 (float32 and float64 accumulations overflow at different points) and
# no -inf or subnormals either: one +inf and one NaN are what every order agrees on. Attention is
# two such products, on fp16 and bf16 inputs (fp16 holds no 3e38 and no float32 subnormal).
ONLY_INF_AND_NAN = {"matmul", "matmul_fp16", "attention"}

C_SCALARS = {"int": np.int32, "unsigned int": np.uint32, "unsigned": np.uint32, "long long": np.int64,
             "long long int": np.int64, "int64_t": np.int64, "size_t": np.uint64, "unsigned long long": np.uint64,
             "float": np.float32, "double": np.float64}


# -- helpers ----------------------------------------------------------------------------------

@cache
def experiment(name: str) -> Experiment:
    return load(FOLDERS[name])


def elements(case: Case) -> int:
    """The size of a case's largest array, from its parameters alone (nothing is drawn)."""
    p = {k: v for k, v in case.params.items() if isinstance(v, int) and not isinstance(v, bool)}
    if {"m", "n", "k"} <= set(p):  # a matrix product: the largest of A, B and C
        return max(p["m"] * p["k"], p["k"] * p["n"], p["m"] * p["n"])
    return math.prod(v for k, v in p.items() if k not in NOT_SIZES)


def smallest_edge_case(exp: Experiment) -> Case:
    return min(exp.edge_cases, key=elements)


def draw_inputs(exp: Experiment, case: Case) -> dict[str, np.ndarray]:
    assert case not in exp.large_cases, "never draw a large case's inputs here"
    assert elements(case) <= EDGE_MAX_ELEMENTS, f"{exp.name}: refusing to draw {case.name} in a CPU test"
    position = next(i for i, c in enumerate(exp.all_cases()) if c.name == case.name)
    x = exp.inputs(case, np.random.default_rng([exp.seed, position]))
    assert isinstance(x, dict) and x, f"{exp.name}: inputs({case.name}) must return a dict of arrays"
    for k, v in x.items():
        assert isinstance(v, np.ndarray), f"{exp.name}: inputs({case.name})[{k!r}] is a {type(v).__name__}"
    return x


@cache
def edge_data(name: str, case_name: str) -> tuple[dict, dict]:
    """One edge case's inputs and reference, drawn once per test session (read-only)."""
    exp = experiment(name)
    case = next(c for c in exp.edge_cases if c.name == case_name)
    x = draw_inputs(exp, case)
    return x, check_reference(exp, case, x)


def check_reference(exp: Experiment, case: Case, x: dict) -> dict[str, np.ndarray]:
    """``reference(**inputs)`` takes the inputs by name and returns one float64 array per output."""
    try:
        ref = exp.reference(**x)
    except TypeError as e:
        pytest.fail(f"snippets/{exp.name}/experiment.py: reference(**inputs) at case {case.name!r} raised "
                    f"TypeError: {e}. reference takes the inputs by name and nothing else: "
                    f"def reference({', '.join(sorted(x))})", pytrace=False)
    assert isinstance(ref, dict), f"{exp.name}: reference() must return a dict, got {type(ref).__name__}"
    missing = sorted(set(exp.outputs) - set(ref))
    assert not missing, f"{exp.name}: reference() at {case.name} returned no {missing} (outputs: {sorted(exp.outputs)})"
    for out in exp.outputs:
        got = np.asarray(ref[out])
        assert got.dtype == np.float64, f"{exp.name}: reference()[{out!r}] is {got.dtype}, not float64"
    return ref


def c_signature(path, function: str) -> list[tuple[str, str | None]]:
    """The parameters of ``extern "C" __global__ void function(...)`` in a .cu file, as
    ``(name, scalar type)`` pairs; the type is None for a pointer."""
    text = re.sub(r"//[^\n]*", "", path.read_text())
    match = re.search(r'extern\s+"C"\s+__global__\s+void\b[^;{]*?\b' + re.escape(function) + r"\s*\(([^)]*)\)", text)
    assert match, f"{path.name}: no extern \"C\" __global__ void {function}(...)"
    params = []
    for p in match.group(1).split(","):
        words = [w for w in p.replace("*", " * ").split() if w not in ("const", "__restrict__", "volatile")]
        params.append((words[-1], None if "*" in words else " ".join(words[:-1])))
    return params


def check_launch(exp: Experiment, k: Kernel, case: Case, buffers: set[str], folder=None) -> Launch | None:
    """``launch(case)`` returns a Launch the GPU accepts, whose arguments match the kernel's C
    signature, or raises Unsupported with a reason; None for Unsupported."""
    where = f"{exp.name}: kernel {k.name} at {case.name}"
    try:
        launch = k.launch(case)
    except Unsupported as e:
        assert str(e).strip(), f"{where}: Unsupported must say why"
        return None
    except Exception as e:  # noqa: BLE001 - anything but Unsupported is the mistake we look for
        pytest.fail(f"{where}: launch() raised {type(e).__name__}: {e} (only Unsupported is allowed)")
    assert isinstance(launch, Launch), f"{where}: launch() returned {type(launch).__name__}, not a Launch"
    for d in (*launch.grid, *launch.block):
        assert isinstance(d, (int, np.integer)), f"{where}: grid {launch.grid} and block {launch.block}: {d!r}"
    try:  # what the engine checks before it launches anything
        launch_dims(launch, MAX_SHARED)
    except Unsupported:  # an empty grid: nothing to launch, a declared skip
        return None
    except InvalidLaunch as e:
        pytest.fail(f"{where}: {e}")
    named = {a.buffer if isinstance(a, TensorMap) else a for a in launch.args if isinstance(a, (str, TensorMap))}
    assert named <= buffers, f"{where}: names buffers {sorted(named - buffers)}; there are {sorted(buffers)}"
    params = c_signature((folder or FOLDERS[exp.name]) / k.source, k.function)
    assert len(params) == len(launch.args), \
        f"{where}: {len(launch.args)} arguments for {k.function}'s {len(params)} parameters"
    sizes = {key.lower(): v for key, v in case.params.items() if isinstance(v, int)}
    for arg, (pname, ctype) in zip(launch.args, params):
        if isinstance(arg, TensorMap):
            assert ctype is None, f"{where}: {ctype} {pname} gets {arg!r}: a TensorMap goes to a const CUtensorMap*"
            continue
        if ctype is None:
            assert isinstance(arg, str), f"{where}: pointer parameter {pname} gets {arg!r}, not a buffer name"
            continue
        assert not isinstance(arg, str), f"{where}: {ctype} parameter {pname} gets the buffer name {arg!r}"
        assert isinstance(arg, np.generic), \
            f"{where}: {pname} is a {type(arg).__name__}; pass a NumPy scalar, so its C type is explicit"
        want = C_SCALARS.get(ctype)
        assert want is not None, f"{where}: unknown C type {ctype!r} of {pname}"
        assert arg.dtype == want, f"{where}: {ctype} {pname} gets a {arg.dtype} (wants {np.dtype(want)})"
        if pname.lower() in sizes:  # a size parameter passes the case's size, not a wrapped one
            assert int(arg) == sizes[pname.lower()], \
                f"{where}: {pname} = {arg} does not hold the case's {pname.lower()} = {sizes[pname.lower()]}"
    return launch


def buffer_names(exp: Experiment) -> set[str]:
    x, _ = edge_data(exp.name, smallest_edge_case(exp).name)
    return set(x) | set(exp.outputs)


def cuda_kernels(exp: Experiment) -> list[Kernel]:
    return [k for k in exp.kernels if isinstance(k, Kernel)]


def is_float(exp: Experiment) -> bool:
    return any(np.issubdtype(np.dtype(t), np.floating) for t in exp.outputs.values())


# -- the declarations ---------------------------------------------------------------------------

def test_discovers_the_notebook_experiments():
    assert {"vec_add", "vec_add_3d", "softmax", "matmul"} <= set(FOLDERS)


@pytest.mark.parametrize("name", NAMES)
def test_declaration_is_consistent(name):
    exp = experiment(name)
    assert exp.name == name and exp.kernels and exp.cases and exp.edge_cases, f"{name}: kernels, cases, edge cases"
    names = [c.name for c in exp.all_cases()]
    assert len(set(names)) == len(names), f"{name}: case names repeat across cases, edge and large cases: {names}"
    timed = {c.name for c in exp.cases}
    for r in [*exp.kernels, *exp.baselines]:
        unknown = set(r.timed_cases or ()) - timed
        assert not unknown, f"{name}: {r.name} is timed at {sorted(unknown)}, which are not timed cases"
    runnables = exp.runnable_names()
    assert len(set(runnables)) == len(runnables), f"{name}: kernel and baseline names repeat: {runnables}"
    for out, dtype in exp.outputs.items():
        np.dtype(dtype)  # a NumPy dtype, or this raises


@pytest.mark.parametrize("name", NAMES)
def test_headline_names_a_timed_case_and_something_to_compare_with(name):
    exp = experiment(name)
    assert exp.headline is not None, f"{name}: no headline=Headline(case=..., baseline=...)"
    assert exp.headline.case in {c.name for c in exp.cases}, \
        f"{name}: headline case {exp.headline.case!r} is not a timed case"
    assert exp.headline.baseline in exp.runnable_names(), \
        f"{name}: headline baseline {exp.headline.baseline!r} is not one of {exp.runnable_names()}"


@pytest.mark.parametrize("name", NAMES)
def test_inputs_and_reference_at_the_smallest_edge_case(name):
    exp = experiment(name)
    case = smallest_edge_case(exp)
    x = draw_inputs(exp, case)
    check_reference(exp, case, x)


@pytest.mark.parametrize("name", NAMES)
def test_every_launch_is_valid_or_unsupported(name):
    """Every CUDA kernel at every declared case, timed, edge and large: launch functions are
    pure and cheap, and no input is drawn."""
    exp = experiment(name)
    buffers = buffer_names(exp)
    for k in cuda_kernels(exp):
        for case in exp.all_cases():
            check_launch(exp, k, case, buffers)


@pytest.mark.parametrize("name", NAMES)
def test_tensor_maps_describe_their_buffers(name):
    """A TMA descriptor covers exactly the buffer it names, at every edge case a launch takes: as
    many elements, rows as long as the buffer's last dimension, elements of its size (a
    descriptor of the wrong shape reads the wrong elements, or past the end). It may flatten the
    leading dimensions (attention's (B H N) x D), and name another type of the same size: TMA
    moves the bytes without reading them (fp16's descriptor carries bf16's bits)."""
    exp = experiment(name)
    for case in exp.edge_cases:
        x, ref = edge_data(name, case.name)
        for k in cuda_kernels(exp):
            try:
                launch = k.launch(case)
            except Unsupported:
                continue
            for a in launch.args:
                if isinstance(a, TensorMap):
                    got = (a.rows * a.cols, a.cols, np.dtype(a.dtype).itemsize)
                    if a.buffer in x:
                        want = (x[a.buffer].size, x[a.buffer].shape[-1], x[a.buffer].dtype.itemsize)
                    else:  # an output: the reference's shape, in the type the kernel writes
                        dtype = np.dtype(getattr(k, "outputs", {}).get(a.buffer, exp.outputs[a.buffer]))
                        want = (ref[a.buffer].size, ref[a.buffer].shape[-1], dtype.itemsize)
                    assert got == want, f"{name}: kernel {k.name} at {case.name}: {a.buffer} is {want}, its map {got}"


@pytest.mark.parametrize("name", NAMES)
def test_launches_at_the_int_limits(name):
    """Each size of the smallest edge case pushed to 0, 2^31 - 1, 2^31 and past 2^32: every launch
    is still valid (grid within its limits, sizes held) or says Unsupported (an empty grid
    counts: the engine declares it); never an OverflowError from np.int32, never a grid the GPU
    refuses."""
    exp = experiment(name)
    base, buffers = smallest_edge_case(exp), buffer_names(exp)
    for p, v in base.params.items():
        if isinstance(v, int) and p not in NOT_SIZES:
            for big in (0, 2**31 - 1, 2**31, 2**32 + 1):
                case = Case(f"{base.name} with {p} = {big}", **{**base.params, p: big})
                for k in cuda_kernels(exp):
                    check_launch(exp, k, case, buffers)


@pytest.mark.parametrize("name", NAMES)
def test_runnables_take_case_inputs_outputs(name):
    """Baselines and Python-DSL kernels are ``prepare(case, inputs, outputs)``."""
    exp = experiment(name)
    for b in exp.baselines:
        params = [p for p in inspect.signature(b.prepare).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        assert len(params) == 3, f"{name}: baseline {b.name}'s prepare takes {[p.name for p in params]}, " \
                                 "not (case, inputs, outputs)"
        assert b.library in ("torch", "pycuda", "numpy"), f"{name}: baseline {b.name} has arrays={b.library!r}"
    for k in exp.kernels:
        if isinstance(k, PythonKernel):
            tree = ast.parse((FOLDERS[name] / k.source).read_text())
            fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == k.function), None)
            assert fn is not None, f"{name}: {k.source} has no function {k.function}"
            assert len(fn.args.args) == 3, f"{name}: {k.source}:{k.function} must take (case, inputs, outputs)"


@pytest.mark.parametrize("name", NAMES)
def test_python_kernels_name_their_dsl(name):
    """Triton and cuTile rungs need their DSL to import, which a CPU machine may lack; their
    source must still be valid Python, and they must name what they need."""
    exp = experiment(name)
    for k in exp.kernels:
        if isinstance(k, PythonKernel):
            ast.parse((FOLDERS[name] / k.source).read_text())
            assert "torch" in k.requires and len(k.requires) > 1, f"{name}: {k.name}: name the DSL in requires"


@pytest.mark.parametrize("name", NAMES)
def test_cpu_baselines_meet_the_tolerance_at_the_edge_cases(name):
    """NumPy baselines run here as the engine runs them: in place, into poisoned outputs."""
    exp = experiment(name)
    for b in (b for b in exp.baselines if b.device == "cpu"):
        for case in exp.edge_cases:
            x, ref = edge_data(name, case.name)
            outputs = {n: np.full(np.shape(ref[n]), np.nan, dtype) for n, dtype in exp.outputs.items()}
            try:
                with np.errstate(all="ignore"):  # inf - inf and overflow are the point of some cases
                    returned = b.prepare(case, x, outputs)()
            except Unsupported:
                continue
            # As the engine: a dict is the outputs; anything else (np.add's out=) is ignored.
            got = returned if isinstance(returned, dict) else outputs
            for n in exp.outputs:
                check = compare(np.asarray(got[n]), ref[n], tolerance_at(b.tolerance or exp.tolerance, case))
                assert check.ok, f"{name}: baseline {b.name} at {case.name}: {check.describe(n)}"


# -- sizes: awkward, small and large -------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_edge_cases_are_awkward_and_small(name):
    exp = experiment(name)
    sizes = {c.name: elements(c) for c in exp.edge_cases}
    assert 1 in sizes.values(), f"{name}: no edge case of size 1 ({sizes})"
    assert any(n > 1 and n % 256 for n in sizes.values()), f"{name}: no edge size that is not a multiple of 256"
    big = {c: n for c, n in sizes.items() if n > EDGE_MAX_ELEMENTS}
    assert not big, f"{name}: edge cases run under compute-sanitizer; these are too large: {big}"


def _declares_paths(exp) -> bool:
    return exp.paths is not None or any(getattr(k, "paths", None) for k in exp.kernels)


@pytest.mark.parametrize("name", [n for n in NAMES if _declares_paths(experiment(n))])
def test_the_sanitizer_runs_each_kernel_where_it_takes_every_path_it_takes_anywhere(name):
    """Where an experiment declares its code paths, the sanitizer tools run each CUDA kernel at
    a few edge cases it takes: together they take every path the kernel takes at any timed or
    edge case (so the edge cases must), and each takes a path no other one does."""
    exp = experiment(name)
    plan = exp.sanitizer_plan()
    for kernel in (k for k in exp.kernels if isinstance(k, Kernel)):
        chosen = exp.sanitizer_cases(kernel)
        assert chosen and all(c in exp.edge_cases and kernel.takes(c) for c in chosen), kernel.name
        assert {c.name for c in chosen} == {c for c, names in plan.items() if kernel.name in names}
        taken = {p for c in chosen for p in exp.paths_of(kernel, c)}
        for case in [*exp.cases, *exp.edge_cases]:
            missed = exp.paths_of(kernel, case) - taken if kernel.takes(case) else set()
            assert not missed, f"{name}: {kernel.name} takes {sorted(missed)} at {case.name}, " \
                               "and at no edge case the sanitizer runs it at"
        for case in chosen:
            others = {p for c in chosen if c is not case for p in exp.paths_of(kernel, c)}
            assert exp.paths_of(kernel, case) - others, f"{name}: {kernel.name} takes no path of its own at {case.name}"


@pytest.mark.parametrize("name", NAMES)
def test_large_cases_pass_2_to_the_31(name):
    exp = experiment(name)
    if name in NEED_LARGE_CASES:
        assert exp.large_cases, f"{name}: needs large cases (2^31 elements and more)"
    for case in exp.large_cases:
        assert elements(case) >= LARGE_MIN_ELEMENTS, f"{name}: large case {case.name} has {elements(case)} elements"
        if exp.bytes_moved:
            assert exp.bytes_moved(case) <= LARGE_MAX_BYTES, \
                f"{name}: {case.name} moves {exp.bytes_moved(case) / 2**30:.0f} GiB, past the ~40 GiB a case may hold"
        for b in (b for b in exp.baselines if b.device == "cpu"):
            try:  # before it touches an input: there are none here
                b.prepare(case, {}, {})
            except Unsupported as e:
                assert str(e).strip(), f"{name}: CPU baseline {b.name} must say why"
            except Exception as e:  # noqa: BLE001
                pytest.fail(f"{name}: CPU baseline {b.name} at {case.name} raised {type(e).__name__}: {e}; "
                            "it must raise Unsupported before touching the inputs")
            else:
                pytest.fail(f"{name}: CPU baseline {b.name} must raise Unsupported at {case.name}")


@pytest.mark.parametrize("name", NAMES)
def test_rowwise_reference_works_on_slices_of_rows(name):
    """Where the engine computes the reference slice by slice, slices of the inputs' rows must
    give those rows of the whole reference, bit for bit (NaN where NaN)."""
    exp = experiment(name)
    if not exp.rowwise_reference:
        pytest.skip("not rowwise_reference: the reference is computed over the whole input")
    small = [c for c in exp.edge_cases if elements(c) <= 1 << 20]
    case = max(small, key=lambda c: ("extremes" in c.name, elements(c)))
    x, whole = edge_data(name, case.name)
    rows = {v.shape[0] for v in x.values()}
    assert len(rows) == 1, f"{name}: the inputs' first axes differ ({rows}): not row-wise"
    n = rows.pop()
    assert n >= 3, f"{name}: pick an edge case with more rows than {case.name}"
    for lo, hi in ((0, 1), (0, n // 2), (n // 3, n - 1), (n - 1, n)):
        part = check_reference(exp, case, {k: v[lo:hi] for k, v in x.items()})
        for out in exp.outputs:
            np.testing.assert_array_equal(part[out], whole[out][lo:hi],
                                          err_msg=f"{name}: reference of rows {lo}:{hi} at {case.name}, {out}")


@pytest.mark.parametrize("name", NAMES)
def test_edge_cases_hold_non_finite_and_extreme_values(name):
    exp = experiment(name)
    if not is_float(exp):
        pytest.skip("no floating-point output")
    values = np.concatenate([v.astype(np.float64).ravel()
                             for c in exp.edge_cases for v in edge_data(name, c.name)[0].values()
                             if np.issubdtype(v.dtype, np.floating)])
    have = {"+inf": np.isposinf(values).any(), "NaN": np.isnan(values).any()}
    if name not in ONLY_INF_AND_NAN:
        finite = values[np.isfinite(values)]
        have |= {"-inf": np.isneginf(values).any(),
                 "±3e38": (np.abs(finite) >= 1e38).any(),
                 "subnormal": ((finite != 0) & (np.abs(finite) < np.finfo(np.float32).tiny)).any(),
                 "-0.0": ((values == 0) & np.signbit(values)).any()}
    missing = [k for k, ok in have.items() if not ok]
    assert not missing, f"{name}: no edge case holds {missing}"


# -- references and tolerances --------------------------------------------------------------------

@pytest.mark.parametrize("name", ["vec_add", "vec_add_3d", "matrix_add_2d", "cutile_add"])
def test_add_reference_is_float32_exact_and_one_ulp_off_fails(name):
    """The reference is right, and the declared tolerance is one a correct kernel can meet."""
    exp = experiment(name)
    for case in exp.edge_cases:
        x, ref = edge_data(name, case.name)
        with np.errstate(over="ignore", invalid="ignore"):
            got = x["a"] + x["b"]
        assert compare(got, ref["c"], exp.tolerance).ok, case.name
        # One ulp off is wrong: the reference is the correctly rounded float32 sum.
        wrong = got.copy().ravel()
        wrong[-1] = np.nextafter(wrong[-1], np.float32(np.inf))
        assert not compare(wrong.reshape(ref["c"].shape), ref["c"], exp.tolerance).ok, case.name


def test_vec_add_extremes_cover_overflow_nan_and_subnormals():
    exp = experiment("vec_add")
    case = next(c for c in exp.edge_cases if c.params.get("kind") == "extremes")
    x, ref = edge_data("vec_add", case.name)
    c = ref["c"]
    assert np.isnan(c).any() and np.isposinf(c).any() and np.isneginf(c).any()
    assert c[list(zip(x["a"], x["b"])).index((np.float32(3.4e38), np.float32(3.4e38)))] == np.inf
    assert (np.abs(c[np.isfinite(c) & (c != 0)]) < 1e-37).any()  # a subnormal sum survives


def test_broadcast_reference_and_tolerance():
    exp = experiment("add_broadcast")
    for case in exp.edge_cases:
        x, ref = edge_data("add_broadcast", case.name)
        with np.errstate(over="ignore", invalid="ignore"):
            got = (x["a"] + x["b"][:, :, None]) + x["c"][:, None, None]  # float32, the kernel's order
        assert compare(got, ref["out"], exp.tolerance).ok, case.name
        finite = np.flatnonzero(np.isfinite(got) & (np.abs(got) < 100))
        got.ravel()[finite[-1]] += np.float32(1e-3)
        assert not compare(got, ref["out"], exp.tolerance).ok, case.name
    case = next(c for c in exp.edge_cases if "extremes" in c.name)
    out = edge_data("add_broadcast", case.name)[1]["out"]
    assert np.isposinf(out).any() and np.isneginf(out).any() and np.isnan(out).any()


def test_warp_primitives_reference_lane_by_lane():
    """The NumPy reference against a plain loop over warps, partial last warps included."""
    exp = experiment("warp_primitives")
    for case in [c for c in exp.edge_cases if c.n <= 64]:
        x, ref = edge_data("warp_primitives", case.name)
        x = x["x"].astype(np.float64)
        starts = range(0, x.size, 32)
        assert list(ref["sums"]) == [x[s:s + 32].sum() for s in starts]
        assert list(ref["firsts"]) == [x[i // 32 * 32] for i in range(x.size)]
        assert list(ref["scans"]) == [x[i // 32 * 32:i + 1].sum() for i in range(x.size)]


def test_warp_primitives_extremes_are_exact_in_float32_in_any_order():
    """A float32 sum in another order (reversed lanes, pairwise) lands on the same reference."""
    exp = experiment("warp_primitives")
    case = next(c for c in exp.edge_cases if c.params.get("kind") == "extremes")
    x, ref = edge_data("warp_primitives", case.name)
    w = np.zeros(-(-x["x"].size // 32) * 32, np.float32)
    w[:x["x"].size] = x["x"]
    w = w.reshape(-1, 32)
    with np.errstate(over="ignore", invalid="ignore"):
        for sums in (w.sum(axis=1), w[:, ::-1].sum(axis=1), np.add.reduce(w.reshape(-1, 2, 16), axis=2).sum(axis=1)):
            assert compare(sums, ref["sums"], exp.tolerance).ok
        assert compare(np.cumsum(w, axis=1).ravel()[:x["x"].size], ref["scans"], exp.tolerance).ok
    assert np.isposinf(ref["sums"]).any() and np.isneginf(ref["sums"]).any() and np.isnan(ref["sums"]).any()


def test_memory_types_float32_horner_is_exact_at_the_edge_cases():
    exp = experiment("memory_types")
    for case in exp.edge_cases:
        x, ref = edge_data("memory_types", case.name)
        i = np.arange(x["x"].size)
        start = i // 256 * 256
        v = x["x"][start + np.minimum(start + 256, i.size) - 1 - i]
        with np.errstate(over="ignore", invalid="ignore"):
            y = np.float32(1) + v * (np.float32(0.5) + v * (np.float32(0.25) + v * np.float32(0.125)))
        assert compare(y, ref["y"], exp.tolerance).ok, case.name


def test_block_reduce_reference_rounds_like_a_float32_total():
    exp = experiment("block_reduce")
    totals = {c.params.get("kind"): edge_data("block_reduce", c.name)[1]["total"][0] for c in exp.edge_cases}
    assert totals["two 3.4e38"] == np.inf and totals["two -3.4e38"] == -np.inf  # 6.8e38 is past float32
    assert totals["+inf"] == np.inf and np.isnan(totals["NaN"]) and np.isnan(totals["+inf and -inf"])
    assert 0 < totals["subnormals"] < 2.0**-125
    for case in exp.edge_cases:  # a float32 sum, pairwise as NumPy's, meets the tolerance
        x, ref = edge_data("block_reduce", case.name)
        with np.errstate(over="ignore", invalid="ignore"):
            got = np.array([x["x"].sum(dtype=np.float32)])
        assert compare(got, ref["total"], exp.tolerance).ok, case.name


def test_softmax_reference_on_awkward_inputs():
    exp = experiment("softmax")
    cases = {c.name: c for c in exp.edge_cases}
    for name in ("64x2048 |x| ~ 1e4", "64x512 all negative", "1x1", "2x100003"):
        x, ref = edge_data("softmax", name)
        y = ref["y"]
        assert np.isfinite(y).all() and np.allclose(y.sum(axis=1), 1.0)
    assert (edge_data("softmax", "64x512 all negative")[0]["x"] < 0).all()
    x, ref = edge_data("softmax", "64x1000 with -inf")
    x, y = x["x"], ref["y"]
    assert np.isnan(y[0]).all(), "a row of only -inf is NaN, as in PyTorch"
    assert np.isfinite(y[1:]).all() and (y[1:][np.isneginf(x[1:])] == 0).all()
    for name in (c for c in cases if "extremes" in c):
        x, ref = edge_data("softmax", name)
        y = ref["y"]
        assert np.isnan(y[:5]).all(), "+inf or NaN in a row makes it NaN, as in PyTorch (inf - inf)"
        assert np.isfinite(y[5:]).all() and np.allclose(y[5:].sum(axis=1), 1.0)
        assert y[6, 0] == y[6, -1] == 0.5 and y[9, 0] == 1.0


def test_softmax_float32_numpy_meets_the_tolerance():
    exp = experiment("softmax")
    for case in exp.edge_cases:
        x, ref = edge_data("softmax", case.name)
        with np.errstate(invalid="ignore", over="ignore"):
            e = np.exp(x["x"] - x["x"].max(axis=1, keepdims=True))
            y32 = e / e.sum(axis=1, keepdims=True)
        assert compare(y32, ref["y"], exp.tolerance).ok, case.name


@pytest.mark.parametrize("name", ["matmul", "matmul_fp16"])
def test_matmul_non_finite_case(name):
    """One +inf in A and one NaN in B: a row of ±inf and a column of NaN, in float64 as in any
    float32 order; and the tiled rungs accept the case, so every rung is checked there."""
    exp = experiment(name)
    case = next(c for c in exp.edge_cases if c.params.get("kind"))
    x, ref = edge_data(name, case.name)
    c = ref["c"]
    assert np.isnan(c[:, 3]).all() and np.isinf(np.delete(c[1], 3)).all()
    assert np.isfinite(np.delete(np.delete(c, 1, axis=0), 3, axis=1)).all()
    with np.errstate(over="ignore", invalid="ignore"):
        c32 = x["a"].astype(np.float32) @ x["b"].astype(np.float32)
    assert compare(c32, c, exp.tolerance).ok
    assert all(check_launch(exp, k, case, buffer_names(exp)) for k in cuda_kernels(exp)), \
        f"{name}: every rung must run at {case.name}"


def test_matmul_tiled_rungs_declare_their_int_offsets():
    """K = 2^24: rungs whose offsets inside a tile are ints (for speed) must say Unsupported;
    the rungs with 64-bit offsets throughout must launch."""
    int_offsets = {"matmul": {"5_blocktile_2d"}, "matmul_fp16": {"1_wmma", "2_mma_pipelined", "3_mma_128x256"}}
    for name, limited in int_offsets.items():
        exp = experiment(name)
        case = Case("128×256×2^24", m=128, n=256, k=2**24)
        for k in cuda_kernels(exp):
            launch = check_launch(exp, k, case, buffer_names(exp))
            assert (launch is None) == (k.name in limited), f"{name}: {k.name} at {case.name}"


def test_matmul_fp16_awkward_sizes_are_for_the_any_shape_rung_and_the_libraries():
    """N or K no multiple of 8 (rows off 16-byte boundaries), or 1x1x1: only rung 8 launches."""
    exp = experiment("matmul_fp16")
    for name in ("1³", "17×33×65", "257×129×63", "4097×4095×4093"):
        case = next(c for c in exp.edge_cases + exp.cases if c.name == name)
        launched = {k.name for k in cuda_kernels(exp) if check_launch(exp, k, case, buffer_names(exp)) is not None}
        assert launched == {"8_any_shape"}, name


# -- inputs, hashes, discovery ---------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_inputs_are_random_and_seeded(name):
    exp = experiment(name)
    ordinary = [c for c in exp.edge_cases if c.params.get("kind") in (None, "gaussian") and elements(c) <= 1 << 20]
    case = max(ordinary, key=elements)
    x1 = exp.inputs(case, np.random.default_rng([exp.seed, 0]))
    x2 = exp.inputs(case, np.random.default_rng([exp.seed, 0]))
    x3 = exp.inputs(case, np.random.default_rng([exp.seed, 1]))
    # The data (the largest input) is random, never zeros; workspace buffers may start at zero.
    data = max(x1, key=lambda k: x1[k].size)
    assert np.count_nonzero(x1[data]) > 0.99 * x1[data].size, f"{name}: inputs must not be zeros"
    assert not np.array_equal(x1[data], x3[data]), f"{name}: inputs must follow the generator"
    for k, v in x1.items():
        assert np.array_equal(v, x2[k]), f"{name}: inputs[{k!r}] differ for one seed"


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


def test_a_misspelled_kernel_function_is_refused_naming_those_the_file_has(tmp_path):
    """At load time (so --check, the site build and the tests all see it), with no nvcc."""
    folder = shutil.copytree(FAULTS / "snippets" / "wrong_answer", tmp_path / "typo")
    declaration = folder / "experiment.py"
    declaration.write_text(declaration.read_text().replace('"add_skip_last"', '"add_skiplast"'))
    with pytest.raises(ExperimentError, match=r"^typo: 1_skips_last\.cu has no __global__ function named "
                                              r"'add_skiplast' \(Kernel's second argument\); the file's __global__ functions: add_skip_last$"):
        load(folder)


def test_global_functions_are_read_past_attributes_comments_and_templates():
    cuda = """
    // extern "C" __global__ void commented_out(float* x)
    /* __global__ void also_commented(float* x) */
    extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(128 * (1 + C), 1)
    clustered(const float* x) {}
    template <int N> __global__ void templated(float* x) {}
    __device__ float helper(float x) { return x; }
    extern "C" __global__ void plain (float* x) {}
    """
    assert global_functions(cuda) == ["clustered", "templated", "plain"]


# -- the checks catch authoring mistakes, by name ------------------------------------------------

def _toy(**changes) -> Experiment:
    exp = Experiment(title="toy", kernels=[Kernel("1_add.cu", "vec_add", lambda c: None)],
                     cases=[Case("8", n=8)], edge_cases=[Case("1", n=1)],
                     inputs=lambda case, rng: {"a": np.ones(case.n, np.float32), "b": np.ones(case.n, np.float32)},
                     reference=lambda a, b: {"c": a.astype(np.float64) + b},
                     outputs={"c": np.float32}, tolerance=Tolerance(0.0, 0.0), name="toy")
    return dataclasses.replace(exp, **changes)


@pytest.mark.parametrize("reference, message", [
    (lambda x, y: {"c": x + y}, r"snippets/toy/experiment.py: reference.*TypeError.*def reference\(a, b\)"),
    (lambda a, b: {"d": a + b}, r"toy: reference\(\) at 1 returned no \['c'\]"),
    (lambda a, b: {"c": a + b}, "toy: reference.*float32, not float64"),
])
def test_a_broken_reference_fails_by_name(reference, message):
    exp = _toy(reference=reference)
    case = exp.edge_cases[0]
    with pytest.raises((AssertionError, pytest.fail.Exception), match=message):
        check_reference(exp, case, exp.inputs(case, np.random.default_rng(0)))


@pytest.mark.parametrize("n, launch, message", [
    (2**31 - 1, lambda c: Launch((1,), (256,), ("a", "b", "c", np.int32(2**31 + 1 - 2**32))), "does not hold"),
    (2**31, lambda c: Launch((1,), (256,), ("a", "b", "c", np.int32(c.n))), "launch.. raised OverflowError"),
    (8, lambda c: Launch((1,), (256,), ("a", "b", "c", c.n)), "NumPy scalar"),
    (8, lambda c: Launch((1,), (256,), ("a", "b", "c", np.int64(c.n))), "int n gets a int64"),
    (8, lambda c: Launch((1,), (256,), ("a", "b", "x", np.int32(c.n))), r"names buffers \['x'\]"),
    (8, lambda c: Launch((1, 65536), (256,), ("a", "b", "c", np.int32(c.n))), r"grid \(1, 65536, 1\): gridDim.y must be 1 to 65535"),
    (8, lambda c: Launch((2**31,), (256,), ("a", "b", "c", np.int32(c.n))), "gridDim.x must be 1 to 2147483647"),
    (8, lambda c: Launch((1,), (2048,), ("a", "b", "c", np.int32(c.n))), "blockDim.x must be 1 to 1024"),
    (8, lambda c: Launch((1,), (256,), ("a", "b", "c")), "3 arguments for vec_add's 4"),
    (8, lambda c: 1 // 0, "toy: kernel 1_add at 8: launch.. raised ZeroDivisionError"),
])
def test_a_broken_launch_fails_naming_kernel_and_case(n, launch, message):
    k = Kernel("1_add.cu", "vec_add", launch)
    with pytest.raises((AssertionError, pytest.fail.Exception), match=message):
        check_launch(_toy(), k, Case(str(n), n=n), {"a", "b", "c"}, folder=FOLDERS["vec_add"])


def test_the_engine_checks_a_launch_before_it_runs():
    """What launch() returns is checked against CUDA's limits before anything runs: an empty grid
    (a size of 0) is a declared skip, anything past a limit an InvalidLaunch that names it."""
    assert launch_dims(Launch((5,), (256,), ())) == ((5, 1, 1), (256, 1, 1))
    assert launch_dims(Launch((2**31 - 1, 65535, 65535), (1, 16, 64), ()), 1024) == \
        ((2**31 - 1, 65535, 65535), (1, 16, 64))
    for grid in ((0,), (4, 0), (1, 1, 0)):
        with pytest.raises(Unsupported, match="has no blocks: nothing to launch"):
            launch_dims(Launch(grid, (256,), ()))
    for launch, message in [(Launch((1,), (0,), ()), r"blockDim.x must be 1 to 1024"),
                            (Launch((1,), (1, 1, 65), ()), r"blockDim.z must be 1 to 64"),
                            (Launch((1, 1, 65536), (32,), ()), r"gridDim.z must be 1 to 65535"),
                            (Launch((1,), (32, 64), ()), r"2048 threads, at most 1024"),
                            (Launch((1, 1, 1, 1), (32,), ()), "one to three dimensions"),
                            (Launch((1,), (32,), (), shared_bytes=232449), "no GPU gives a block more than 232448")]:
        with pytest.raises(InvalidLaunch, match=message):
            launch_dims(launch, 232448)
    # More shared memory than this GPU gives, but no more than a bigger one does: unavailable
    # here (an Ada GPU's 99 KiB, a kernel tiled for Hopper's 227), not a mistake.
    with pytest.raises(Unavailable, match="needs 101377 bytes of shared memory a block; this GPU gives a block at most 101376"):
        launch_dims(Launch((1,), (32,), (), shared_bytes=101377), 101376)
    assert launch_dims(Launch((1,), (32,), (), shared_bytes=101376), 101376) == ((1, 1, 1), (32, 1, 1))


@pytest.mark.parametrize("kernel", ["3_shared_tree", "4_atomicmax_walkthrough", "5_atomicmax_fixed", "6_warp_shuffle"])
def test_softmax_row_loops_never_step_past_int(kernel):
    """Rungs 3 to 6 stride along a row in an int: wherever the launch takes a row, the last step
    from its end (cols - 1 + blockDim.x) stays within 2^31 - 1."""
    k = experiment("softmax").kernel(kernel)
    accepted = 0
    for cols in (2**20, 2**31 - 1024, 2**31 - 256, 2**31 - 255, 2**31 - 2, 2**31 - 1):
        try:
            launch = k.launch(Case(f"1x{cols}", rows=1, cols=cols))
        except Unsupported as e:
            assert "strides along the row" in str(e)
            continue
        accepted += 1
        assert cols - 1 + launch.block[0] <= INT_MAX, (kernel, cols, launch.block)
    assert accepted >= 2


def test_softmax_bulk_copy_takes_an_eighth_of_the_row_into_shared_memory():
    """Rung 10's dynamic shared memory holds its block's chunk as the kernel cuts it (an eighth
    of the row, rounded up to whole float4s): the 8 chunks cover the row, and at most 64 KiB
    each, three blocks fit an SM."""
    k = experiment("softmax").kernel("10_bulk_copy")
    for cols in (2048, 4097, 100_003, 131072):
        launch = k.launch(Case(f"3x{cols}", rows=3, cols=cols))
        per_block = ((cols + 7) // 8 + 3) // 4 * 4
        assert launch.shared_bytes == 4 * per_block <= 65536
        assert 8 * per_block >= cols and launch.grid == (24,)
    for cols, why in ((2047, "long rows"), (131073, "cluster.s shared memory")):
        with pytest.raises(Unsupported, match=why):
            k.launch(Case(f"3x{cols}", rows=3, cols=cols))


def test_unsupported_must_say_why():
    def launch(case):
        raise Unsupported("")
    with pytest.raises(AssertionError, match="toy: kernel 1_add at 1: Unsupported must say why"):
        check_launch(_toy(), Kernel("1_add.cu", "vec_add", launch), Case("1", n=1), {"a", "b", "c"},
                     folder=FOLDERS["vec_add"])


def test_the_signature_parser_reads_attributes_and_qualifiers():
    params = c_signature(FOLDERS["softmax"] / "9_cluster.cu", "softmax_cluster")
    assert params == [("x", None), ("y", None), ("rows", "int"), ("cols", "int")]
    params = c_signature(FOLDERS["vec_add"] / "2_add_float4.cu", "vec_add_float4")
    assert params[-1] == ("n", "long long")


def test_a_tensor_map_says_what_tma_cannot_describe():
    TensorMap("a", 1, 8, box=(128, 64))  # one row of 16 bytes: fine, the box reaches past it
    with pytest.raises(Unsupported, match="multiple of 16 bytes"):
        TensorMap("b", 64, 4095, box=(64, 64))
    with pytest.raises(Unsupported, match="no empty matrix"):
        TensorMap("a", 0, 64, box=(128, 64))
    with pytest.raises(Unsupported, match="2\\^32"):
        TensorMap("a", 2**32 + 1, 64, box=(128, 64))
    with pytest.raises(ValueError, match="128 bytes"):
        TensorMap("a", 64, 64, box=(64, 32))  # a box row must be one 128-byte swizzle row
    rung = next(k for k in experiment("matmul_fp16").kernels if k.name == "5_warp_specialized")
    with pytest.raises(Unsupported, match="N and K multiples of 8"):
        rung.launch(Case("ragged", m=17, n=33, k=65))


@pytest.mark.parametrize("cols", [1, 3, 4, 5, 31, 32, 33, 64, 100, 128, 129, 255, 256])
def test_softmax_warp_per_row_launch_covers_every_element_once(cols):
    """Rung 8's launch against its kernel's map from thread to (row, float4), written out here:
    a group of ``lanes`` lanes (a power of two, so it never straddles a warp) takes
    ``2 // per_row`` rows, two float4 slots a lane; every float4 of every row belongs to exactly
    one thread of the grid."""
    k = experiment("softmax").kernel("8_warp_per_row")
    rows = 37
    launch = k.launch(Case(f"{rows}x{cols}", rows=rows, cols=cols))
    lanes = int(launch.args[-1])
    assert lanes in (1, 2, 4, 8, 16, 32) and launch.block == (128,)
    per_row = -(-cols // (4 * lanes))
    batch = 2 // per_row
    seen = np.zeros((rows, -(-cols // 4)), dtype=int)
    for t in range(launch.grid[0] * launch.block[0]):
        group, lane = divmod(t, lanes)
        for s in range(batch * per_row):
            row, f4 = group * batch + s // per_row, lane + lanes * (s % per_row)
            if row < rows and 4 * f4 < cols:
                seen[row, f4] += 1
    assert (seen == 1).all()
    with pytest.raises(Unsupported, match="at most 256 columns"):
        k.launch(Case("3x257", rows=3, cols=257))



@pytest.mark.parametrize("cols", [2048, 2052, 57344, 57348, 81920, 100_000, 131072, 262144])
def test_softmax_on_chip_launch_splits_every_row_into_its_kernel_s_three_parts(cols):
    """Rung 11's split of a row, written out from its kernel: the first float4s in shared
    memory (in PIECES bulk copies), the next VEC a thread in registers, the rest read twice.
    The parts cover the row once, shared memory is exactly the first part and fits beside the
    kernel's static shared memory, and every bulk copy is a whole number of 16-byte units."""
    k = experiment("softmax").kernel("11_on_chip")
    source = (FOLDERS["softmax"] / k.source).read_text()
    define = {name: int(re.search(rf"#define {name} (\d+)", source)[1]) for name in ("THREADS", "VEC", "SHARED_FLOATS", "PIECES")}
    launch = k.launch(Case(f"3x{cols}", rows=3, cols=cols))
    assert launch.grid == (3,) and launch.block == (define["THREADS"],)
    n4 = cols // 4
    n_shared = min(n4, define["SHARED_FLOATS"] // 4)
    n_regs = min(n4 - n_shared, define["THREADS"] * define["VEC"])
    assert launch.shared_bytes == 16 * n_shared <= 227 * 1024 - 1024  # room for the static part
    piece = -(-n_shared // define["PIECES"])
    seen = np.zeros(n4, dtype=int)
    for p in range(define["PIECES"]):
        lo = min(n_shared, p * piece)
        seen[lo:min(n_shared, lo + piece)] += 1
    seen[n_shared:n_shared + n_regs] += 1
    seen[n_shared + n_regs:] += 1
    assert (seen == 1).all()
    with pytest.raises(Unsupported, match="multiple of 4 columns"):
        k.launch(Case("3x4098", rows=3, cols=4098))
    with pytest.raises(Unsupported, match="long rows"):
        k.launch(Case("3x1024", rows=3, cols=1024))


@pytest.mark.parametrize("cols", [2048, 2052, 4100, 100_000, 131068, 131072])
def test_softmax_pipelined_launch_gives_every_block_three_chunks_it_can_hold(cols):
    """Rung 12's chunks, written out from its kernel: an eighth of the row each, rounded up to
    whole float4s, cover the row once; a chunk fits its block's threads (VEC float4s each), three
    of them fit shared memory beside the static part, and the grid is whole clusters, at most 16."""
    k = experiment("softmax").kernel("12_pipelined")
    source = (FOLDERS["softmax"] / k.source).read_text()
    define = {name: int(re.search(rf"#define {name} (\d+)", source)[1]) for name in ("CLUSTER", "THREADS", "VEC", "SLOTS")}
    for rows in (1, 3, 16, 17, 128):
        launch = k.launch(Case(f"{rows}x{cols}", rows=rows, cols=cols))
        assert launch.block == (define["THREADS"],)
        assert launch.grid[0] % define["CLUSTER"] == 0 and launch.grid[0] // define["CLUSTER"] == min(rows, 16)
    stride = ((cols + define["CLUSTER"] - 1) // define["CLUSTER"] + 3) // 4
    assert launch.shared_bytes == define["SLOTS"] * 16 * stride <= 227 * 1024 - 1024
    seen = np.zeros(cols // 4, dtype=int)
    for rank in range(define["CLUSTER"]):
        begin = min(cols // 4, rank * stride)
        n4 = min(cols // 4, begin + stride) - begin
        assert 0 <= n4 <= define["THREADS"] * define["VEC"]
        seen[begin:begin + n4] += 1
    assert (seen == 1).all()
    for bad, why in ((1024, "long rows"), (4098, "multiple of 4 columns"), (131076, "at most 131072 columns")):
        with pytest.raises(Unsupported, match=why):
            k.launch(Case(f"3x{bad}", rows=3, cols=bad))


@pytest.mark.parametrize("n", [1, 64, 100, 255, 256, 257, 4096, 4097])
@pytest.mark.parametrize("d", [64, 128])
def test_attention_mma_launches_match_their_kernels_tiles(n, d):
    """Rungs 4 and 5, written out from their kernels: a block of THREADS threads per BM queries
    (every query in exactly one block), shared memory for the block's queries and two stages of
    BN keys and BN values in rows of D + 8 halves, within what a block may hold; rung 4 takes
    whole tiles only."""
    exp = experiment("attention")
    for name in ("4_mma", "5_flash2"):
        k = exp.kernel(name)
        source = (FOLDERS["attention"] / k.source).read_text()
        define = {m: int(re.search(rf"#define {m} (\d+)", source)[1]) for m in ("BM", "BN", "THREADS")}
        case = Case(f"2×3×{n}×{d} fp16", b=2, h=3, n=n, d=d, dtype="fp16", mask="none")
        if name == "4_mma" and n % define["BN"]:
            with pytest.raises(Unsupported, match="multiple of 64"):
                k.launch(case)
            continue
        launch = k.launch(case)
        assert launch.block == (define["THREADS"],) and launch.grid[1:] == (3, 2)
        assert (launch.grid[0] - 1) * define["BM"] < n <= launch.grid[0] * define["BM"]
        rows = define["BM"] + 4 * define["BN"]
        assert launch.shared_bytes == 2 * (d + 8) * rows <= MAX_SHARED


@pytest.mark.parametrize("name", NAMES)
def test_a_kernels_own_outputs_replace_outputs_of_the_experiment(name):
    """TypedOutputKernel.outputs names outputs the experiment has (their shapes come from there), in a
    type of its own, and the kernel is verified with its own tolerance (rounding to a narrower
    type is an error of its own): a typo would leave the experiment's buffer unwritten."""
    exp = experiment(name)
    for k in cuda_kernels(exp):
        if not isinstance(k, TypedOutputKernel):
            continue
        for case in [*exp.cases, *exp.edge_cases, *exp.large_cases]:
            for output, dtype in k.outputs_at(case).items():
                assert output in exp.outputs, f"{name}: kernel {k.name} writes {output!r}; outputs are {list(exp.outputs)}"
                assert dtype == BF16 or np.dtype(dtype) != np.dtype(exp.outputs[output]), \
                    f"{name}: kernel {k.name}: {output} is already {dtype}"
                assert k.tolerance is not None, f"{name}: kernel {k.name} writes {output} as {dtype}: declare its tolerance"


def test_rung_9_of_matmul_fp16_takes_narrow_tiles_only_where_wide_ones_leave_most_clusters_idle():
    """Rung 9 launches rung 7's wide tiles unless they would keep fewer than half of the GPU's
    clusters of two busy (132 SMs here): then 128 x 64 tiles, and its last argument says so."""
    exp = experiment("matmul_fp16")
    rung9 = next(k for k in exp.kernels if k.name == "9_sized_tiles")

    def mnk(m, n, k):
        return Case(f"{m}×{n}×{k}", m=m, n=n, k=k)
    for (m, n, k), narrow in [((1024, 1024, 1024), 1), ((1000, 1000, 1000), 1), ((2048, 2048, 2048), 0),
                              ((4096, 1024, 2048), 0), ((2048, 1024, 64), 1), ((4096, 4096, 4096), 0)]:
        launch = rung9.launch(mnk(m, n, k))
        assert int(launch.args[-1]) == narrow, (m, n, k)
        wide_clusters = cdiv(m, 256) * cdiv(n, 256)
        assert launch.grid[0] == 2 * min(cdiv(m, 128) * cdiv(n, 128) if narrow else wide_clusters, 66)


def test_matmul_stream_k_workspace_fits_its_launch():
    """Rung 11 launches one block per SM (fewer where there are fewer steps along K), and the
    inputs hold its workspace: two NaN slots of 128 x 256 partial sums per block and a zero
    count per tile; nothing where the rung does not take the case."""
    exp = experiment("matmul")
    rung11 = exp.kernel("11_stream_k")
    rng = np.random.default_rng(0)
    for (m, n, k), blocks in [((128, 256, 16), 1), ((256, 512, 80), 20), ((128, 256, 0), 1), ((2048, 2048, 32), 132),
                              ((1024, 1024, 1024), 132)]:
        case = Case(f"{m}×{n}×{k}", m=m, n=n, k=k)
        launch, x = rung11.launch(case), exp.inputs(case, rng)
        assert launch.grid == (blocks,) and launch.args[-2:] == ("partials", "arrived"), case.name
        assert x["partials"].shape == (2 * blocks * 128 * 256,) and np.isnan(x["partials"]).all(), case.name
        assert x["arrived"].shape == (m // 128 * (n // 256),) and not x["arrived"].any(), case.name
    x = exp.inputs(Case("17×33×65", m=17, n=33, k=65), rng)
    assert x["partials"].size == 0 and x["arrived"].size == 0


@pytest.mark.parametrize("m,n,k", [(128, 256, 16), (256, 512, 80), (1024, 1024, 1024), (2048, 2048, 32),
                                   (4096, 4096, 4096), (4352, 4096, 64), (4224, 4096, 4096), (128, 256, 0)])
def test_matmul_stream_k_schedule_covers_every_step_once(m, n, k):
    """Rung 11's schedule, replayed with its kernel's integer arithmetic at its launch's grid:
    whole tiles a wave at a time, then runs of the rest's steps, never more runs than steps.
    Every step of every tile is taken once; the blocks a split tile's last arrival counts
    (block_of of its first and last steps, and all between) are exactly those holding part of
    it; and their slots differ and fit the workspace."""
    rung11 = experiment("matmul").kernel("11_stream_k")
    blocks = rung11.launch(Case(f"{m}×{n}×{k}", m=m, n=n, k=k)).grid[0]
    tiles, per_tile = m // 128 * (n // 256), max(k // 16, 1)
    whole = tiles - tiles % blocks
    steps = (tiles - whole) * per_tile
    runs = max(1, min(blocks, steps))

    def first(b):
        return steps * b // runs

    def block_of(step):
        return ((step + 1) * runs - 1) // steps
    taken = {(tile, s): 1 for tile in range(whole) for s in range(per_tile)}
    holders = {}
    for b in range(runs if steps else 0):
        for step in range(first(b), first(b + 1)):
            tile = step // per_tile
            assert (whole + tile, step % per_tile) not in taken
            taken[whole + tile, step % per_tile] = 1
            holders.setdefault(tile, set()).add(b)
    assert len(taken) == tiles * per_tile
    for tile, held in holders.items():
        counted = set(range(block_of(tile * per_tile), block_of((tile + 1) * per_tile - 1) + 1))
        assert counted == held, (tile, counted, held)
        slots = [2 * b + (tile != first(b) // per_tile) for b in held]
        assert len(set(slots)) == len(slots) and max(slots) < 2 * blocks
