"""Inputs drawn on every core are the same on any machine, and work done a slice at a time on
every core gives what it gives done at once."""

import numpy as np

from labnotebook.run import draw


def test_the_values_drawn_do_not_depend_on_the_cores(monkeypatch):
    monkeypatch.setattr(draw, "SLICE", 1000)
    monkeypatch.setattr(draw, "threads", lambda: 1)
    one = draw.normal(np.random.default_rng(7), (3, 2501))
    monkeypatch.setattr(draw, "threads", lambda: 4)
    four = draw.normal(np.random.default_rng(7), (3, 2501))
    assert np.array_equal(one, four) and one.dtype == np.float32 and np.unique(one).size == one.size


def test_an_elementwise_function_over_slices_is_the_function_over_the_whole(monkeypatch):
    monkeypatch.setattr(draw, "SLICE", 1000)
    x = np.random.default_rng(1).standard_normal((5, 1001)).astype(np.float32)
    x[0, 3], x[4, 1000] = np.inf, np.nan
    out = draw.in_slices(lambda s: s.astype(np.float16), x, np.float16)
    assert out.shape == x.shape and out.dtype == np.float16
    assert np.array_equal(out, x.astype(np.float16), equal_nan=True)


def test_normal_values_narrowed_as_drawn_are_the_normal_values_narrowed(monkeypatch):
    monkeypatch.setattr(draw, "SLICE", 1000)
    for shape in ((3, 2501), (7,)):  # several slices, and one smaller than a slice
        whole = draw.normal(np.random.default_rng(9), shape).astype(np.float16)
        monkeypatch.setattr(draw, "threads", lambda: 3)
        narrowed = draw.normal_as(np.random.default_rng(9), shape, lambda s: s.astype(np.float16), np.float16)
        assert narrowed.dtype == np.float16 and narrowed.shape == whole.shape and np.array_equal(narrowed, whole)


def test_uniform_values_lie_in_their_range_whatever_the_type(monkeypatch):
    monkeypatch.setattr(draw, "SLICE", 1000)
    for dtype in (np.float32, np.float64, np.float16):
        x = draw.uniform(np.random.default_rng(3), 2500, -1, 1, dtype=dtype)
        assert x.dtype == dtype and x.min() >= -1 and x.max() <= 1 and x.min() < -0.9 and x.max() > 0.9
