"""vector_math: exp of 8 float32 lanes through libmvec, where the host has it."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.backends.llvm import vector_math

x, = halo.vars("x")


def vector_exp() -> tuple[halo.Func, halo.ImageParam]:
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = halo.exp(inp[x])
    f.vectorize(x, 8)
    return f, inp


def test_vector_exp_matches_numpy_and_keeps_special_values():
    """Within 2 ulp of NumPy on a wide range (prime length: the last vector is shifted),
    and inf, -inf, NaN, 0 and overflow give what expf gives."""
    f, inp = vector_exp()
    a = np.random.default_rng(0).standard_normal(1009).astype(np.float32) * 30
    a[:6] = [np.inf, -np.inf, np.nan, 0.0, 100.0, -1e-30]
    out = f.realize((1009,), inputs={inp: a})
    with np.errstate(over="ignore"):
        want = np.exp(a)
    np.testing.assert_array_equal(out[:6], want[:6])
    np.testing.assert_allclose(out, want, rtol=2.5e-7, atol=0)


@pytest.mark.skipif(not vector_math._available(), reason="the host has no AVX2 or libmvec")
def test_vector_exp_is_one_libmvec_call():
    """The 8-lane exp is glibc's AVX2 variant, not eight scalar calls."""
    f, _ = vector_exp()
    source = f.compile().source()
    assert "_ZGVdN8v_expf" in source
    assert "@expf(" not in source and "llvm.exp.v8f32" not in source
