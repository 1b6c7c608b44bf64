"""Shared helpers: compile a pipeline, run it, and compare with the reference."""
from __future__ import annotations

import numpy as np

import halo


def assert_matches_reference(out: halo.Func, shape, inputs=None, expected=None,
                             rtol: float = 1e-5, atol: float = 1e-5, origin=None) -> np.ndarray:
    """Realize `out` with its schedule and compare with `halo.reference` (and with
    `expected`, an independent NumPy result, when given). Integers must match exactly."""
    got = out.realize(shape, inputs=inputs, origin=origin)
    ref = halo.reference(out, shape, inputs=inputs, origin=origin)
    for want in (ref, expected):
        if want is None:
            continue
        assert got.shape == want.shape and got.dtype == want.dtype
        if np.issubdtype(got.dtype, np.floating):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(got, want)
    return got
