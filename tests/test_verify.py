"""The element-wise check: what passes, what fails, and what a failure says."""

import numpy as np
import pytest

from labnotebook.run.declare import Tolerance
from labnotebook.run.verify import compare

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
