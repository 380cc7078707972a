"""The element-wise check: what passes, what fails, and what a failure says."""

import numpy as np
import pytest

from labnotebook.declare.experiment import Case, Tolerance, tolerance_at
from labnotebook.run.protocol.verify import compare

EXACT = Tolerance(atol=0.0, rtol=2.0**-24)


def test_correctly_rounded_float32_sum_passes_exact_tolerance():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 100_000), dtype=np.float32)
    check = compare(a + b, a.astype(np.float64) + b, EXACT)
    assert check.ok and check.mismatches == 0 and check.elements == 100_000


def test_one_wrong_element_fails_and_is_located():
    want = np.arange(12, dtype=np.float64).reshape(3, 4)
    got = want.astype(np.float32)
    got[2, 3] = 0.0
    check = compare(got, want, EXACT)
    assert not check.ok and check.mismatches == 1
    assert check.worst_index == (2, 3) and check.worst_got == 0.0 and check.worst_want == 11.0
    assert "1 of 12 elements wrong" in check.describe("c") and "[2, 3]" in check.describe("c")


def test_nan_never_passes_even_with_huge_tolerance():
    got = np.array([1.0, np.nan], dtype=np.float32)
    check = compare(got, np.array([1.0, 2.0]), Tolerance(atol=1e30, rtol=1e30))
    assert not check.ok and check.worst_index == (1,)
    assert check.max_abs_err == np.inf
    # Nor where the reference is infinite: only a NaN reference is matched by NaN.
    infinite = compare(np.full(3, np.nan, np.float32), np.array([np.inf, -np.inf, np.nan]), Tolerance(1e30, 1e30))
    assert not infinite.ok and infinite.mismatches == 2


def test_poisoned_output_fails():
    poison = np.full(8, 0xFF, dtype=np.uint8).view(np.float32)
    assert np.isnan(poison).all()
    assert not compare(poison, np.zeros(2), EXACT).ok


def test_non_finite_reference_must_be_matched_exactly():
    want = np.array([np.nan, np.inf, -np.inf, 1.0])
    assert compare(want.astype(np.float32), want, EXACT).ok
    assert not compare(np.array([np.nan, np.inf, np.inf, 1.0], np.float32), want, EXACT).ok
    assert not compare(np.array([0.0, np.inf, -np.inf, 1.0], np.float32), want, EXACT).ok


def test_tolerance_bound_is_inclusive_and_relative():
    want = np.array([100.0])
    assert compare(np.array([100.5]), want, Tolerance(atol=0.0, rtol=0.005)).ok
    assert not compare(np.array([100.6]), want, Tolerance(atol=0.0, rtol=0.005)).ok


def test_shape_mismatch_is_an_error_not_a_broadcast():
    with pytest.raises(ValueError, match="shape"):
        compare(np.zeros(4), np.zeros((4, 1)), EXACT)


def test_bound_ratio_says_how_close_a_row_came_to_failing():
    want = np.array([1.0, 2.0, 4.0])
    tol = Tolerance(atol=0.5, rtol=0.0)
    assert compare(want.astype(np.float32), want, tol).bound_ratio == 0.0
    assert compare(np.array([1.25, 2.0, 4.0]), want, tol).bound_ratio == pytest.approx(0.5)
    failed = compare(np.array([1.0, 2.0, 5.0]), want, tol)
    assert not failed.ok and failed.bound_ratio == pytest.approx(2.0)
    assert compare(np.array([1.0, np.nan, 4.0]), want, tol).bound_ratio == np.inf
    assert compare(np.array([1.0, 2.5, 4.0]), want, Tolerance(0, 0)).bound_ratio == np.inf


def test_large_outputs_are_compared_in_slices_and_the_worst_found_anywhere(monkeypatch):
    monkeypatch.setattr("labnotebook.run.protocol.verify.SLICE", 1000)
    rng = np.random.default_rng(2)
    want = rng.standard_normal((70, 101))
    got = want.astype(np.float32)
    got[3, 4] += 1e-3  # wrong, but less wrong than ...
    got[66, 100] = np.nan  # ... a NaN in the last slice
    check = compare(got, want, EXACT)
    assert check.mismatches == 2 and check.elements == 70 * 101
    assert check.worst_index == (66, 100) and np.isnan(check.worst_got)


def test_a_rowwise_reference_is_computed_slice_by_slice(monkeypatch):
    from labnotebook.run.protocol.verify import compare_rowwise

    monkeypatch.setattr("labnotebook.run.protocol.verify.SLICE", 64)
    x = np.random.default_rng(3).standard_normal((50, 10)).astype(np.float32)
    calls = []

    def reference(x):
        calls.append(x.shape[0])
        return {"y": x.astype(np.float64) * 2}

    got = x * 2
    got[41, 7] = 0.0
    checks = compare_rowwise({"y": got}, {"x": x}, reference, EXACT)
    assert max(calls) <= 6 and sum(calls) == 50, "never the whole reference at once"
    assert checks["y"].mismatches == 1 and checks["y"].worst_index == (41, 7)


def test_a_rowwise_reference_kept_whole_equals_the_one_computed_at_once(monkeypatch):
    from labnotebook.run.protocol.verify import reference_in_slices

    monkeypatch.setattr("labnotebook.run.protocol.verify.SLICE", 64)
    x = np.random.default_rng(4).standard_normal((50, 10)).astype(np.float32)
    whole = reference_in_slices({"x": x}, lambda x: {"y": x.astype(np.float64) * 2}, {"y": (50, 10)})
    assert np.array_equal(whole["y"], x.astype(np.float64) * 2)


def test_a_tolerance_may_depend_on_the_case_and_must_be_one():
    fp16, bf16 = Tolerance(2e-3, 2e-3), Tolerance(1.6e-2, 1.6e-2)
    by_type = {"fp16": fp16, "bf16": bf16}
    assert tolerance_at(lambda case: by_type[case.dtype], Case("x", dtype="bf16")) == bf16
    assert tolerance_at(fp16, Case("x", dtype="bf16")) == fp16
    with pytest.raises(TypeError, match="must be a Tolerance"):
        tolerance_at(lambda case: None, Case("x"))


SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-300, 3.4e38, -3.4e38, 1.0])


@pytest.mark.parametrize("seed", range(40))
def test_the_quick_check_agrees_with_the_exact_one_or_defers_to_it(seed):
    """``_within`` may only say "passes" where ``_exact`` says so too, with the same numbers."""
    from labnotebook.run.protocol.verify import _exact, _within

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    want = rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30)
    got = (want * (1 + rng.standard_normal(n) * 10.0 ** rng.integers(-9, -3))).astype(np.float32)
    for _ in range(int(rng.integers(0, 3))):  # plant specials in either array, or a zero reference
        i = int(rng.integers(n))
        (got if rng.random() < 0.5 else want)[i] = rng.choice(SPECIALS)
    tol = Tolerance(atol=float(rng.choice([0.0, 1e-6, 1e-2])), rtol=float(rng.choice([0.0, 1e-6, 1e-4])))
    exact, quick = _exact(got, want, tol, 0), _within(got, want, tol)
    if quick is not None:
        assert exact.ok and exact.mismatches == 0
        assert (quick.max_abs_err, quick.max_rel_err, quick.bound_ratio, quick.elements) == \
            (exact.max_abs_err, exact.max_rel_err, exact.bound_ratio, exact.elements)
    if not exact.ok:
        assert quick is None


def test_the_quick_check_defers_on_anything_non_finite_or_at_its_bound():
    from labnotebook.run.protocol.verify import _within

    tol = Tolerance(atol=1e-3, rtol=0.0)
    ok = np.zeros(8)
    assert _within(ok.astype(np.float32), ok, tol) is not None
    for bad in (np.nan, np.inf, -np.inf):
        got = ok.copy()
        got[3] = bad
        assert _within(got, ok, tol) is None and _within(ok, got, tol) is None  # in the output or the reference
    at_bound = ok.copy()
    at_bound[5] = 1e-3
    assert _within(at_bound, ok, tol) is None  # err == bound: the exact check decides (it passes)
    assert compare(at_bound, ok, tol).ok


def test_a_mismatch_deep_in_a_large_output_is_counted_and_located():
    from labnotebook.run.protocol import verify

    n = 3 * verify.SLICE + 5 * verify.BLOCK + 7
    want = np.ones(n)
    got = want.astype(np.float32)
    got[[11, n - 3]] = [2.0, np.nan]
    check = compare(got.reshape(-1, 1), want.reshape(-1, 1), EXACT)
    assert check.mismatches == 2 and check.elements == n and check.worst_index == (n - 3, 0)


def test_a_reference_for_the_gpu_is_computed_where_its_inputs_are_a_slice_at_a_time():
    """``reference_in_gpu_slices`` runs on whatever arrays it is given (torch tensors on the GPU
    in a build, NumPy here): the same values as the whole at once, and never the whole at once."""
    from labnotebook.run.protocol.verify import reference_in_gpu_slices

    x = np.random.default_rng(5).standard_normal((50, 10)).astype(np.float32)
    calls = []

    def reference(x):
        calls.append(x.shape[0])
        return {"y": x.astype(np.float64) * 2, "s": x.astype(np.float64).sum(axis=1, keepdims=True)}
    out = reference_in_gpu_slices({"x": x}, reference, chunk=64)
    assert out["y"].dtype == np.float64 and np.array_equal(out["y"], x.astype(np.float64) * 2)
    assert np.array_equal(out["s"], x.astype(np.float64).sum(axis=1, keepdims=True))
    assert max(calls) <= 6 and sum(calls) == 1 + 50


def test_the_gpu_check_goes_first_and_an_output_it_proves_is_never_read_on_the_host():
    """Whether the host would take a whole reference or recompute it slice by slice (None), an
    output the GPU proves is not read; the others are checked on the host as before."""
    from labnotebook.run.protocol.verify import Comparison, verify_outputs

    x = np.arange(6, dtype=np.float32).reshape(3, 2)

    class Unread(dict):
        def __getitem__(self, name):
            if name == "proved":
                raise AssertionError("read on the host")
            return super().__getitem__(name)
    outputs = Unread(proved=None, other=x.copy())
    proof = Comparison(ok=True, max_abs_err=0.0, max_rel_err=0.0, mismatches=0, elements=6, bound_ratio=0.0)

    def on_gpu(name, tol):
        return proof if name == "proved" else None
    for reference in ({"proved": x.astype(np.float64), "other": x.astype(np.float64)}, None):
        check, status, error = verify_outputs(outputs, ["proved", "other"], EXACT, reference, {"x": x},
                                              lambda x: {"proved": x.astype(np.float64), "other": x.astype(np.float64)},
                                              on_gpu)
        assert status == "ok" and error is None and check.elements == 6
    outputs["other"][1, 1] = -1.0
    _, status, error = verify_outputs(outputs, ["proved", "other"], EXACT, None, {"x": x},
                                      lambda x: {"proved": x.astype(np.float64), "other": x.astype(np.float64)}, on_gpu)
    assert status == "failed" and "other: 1 of 6 elements wrong; worst at index [1, 1]" in error
