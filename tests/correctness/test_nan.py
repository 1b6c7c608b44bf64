"""NaN through min, max, clamp and the inline reductions maximum/minimum: NumPy's
np.minimum/np.maximum (NaN if either operand is NaN), in compiled code, scalar and
vectorized, and in the reference."""
import numpy as np
import pytest

import halo

x = halo.Var("x")
VALUES = np.array([np.nan, 0.5, 2.0, -1.0, np.inf, -np.inf, np.nan, 0.25] * 4, np.float32)
OTHER = np.roll(VALUES, -3)  # OTHER[i] == VALUES[(i + 3) % 32]


def _elementwise(inp):
    shifted = inp[(x + 3) % 32]
    return {
        "min(v, 0.5)": (halo.min(inp[x], 0.5), np.minimum(VALUES, 0.5)),
        "min(0.5, v)": (halo.min(0.5, inp[x]), np.minimum(0.5, VALUES)),
        "max(v, 0.5)": (halo.max(inp[x], 0.5), np.maximum(VALUES, 0.5)),
        "max(0.5, v)": (halo.max(0.5, inp[x]), np.maximum(0.5, VALUES)),
        "clamp(v, 0, 1)": (halo.clamp(inp[x], 0.0, 1.0), np.clip(VALUES, 0.0, 1.0)),
        "min(v, w)": (halo.min(inp[x], shifted), np.minimum(VALUES, OTHER)),
        "max(w, v)": (halo.max(shifted, inp[x]), np.maximum(OTHER, VALUES)),
    }


@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
def test_min_max_clamp_propagate_nan(vector):
    inp = halo.ImageParam(halo.float32, 1, "inp")
    for text, (value, expected) in _elementwise(inp).items():
        f = halo.Func("f")
        f[x] = value
        if vector:
            f.vectorize(x, 8)
        got = f.realize((32,), inputs={inp: VALUES})
        np.testing.assert_array_equal(got, expected, err_msg=text)
        np.testing.assert_array_equal(halo.reference(f, (32,), inputs={inp: VALUES}),
                                      expected, err_msg=text)


def test_constant_nan_folds_to_nan():
    f = halo.Func("f")
    nan = halo.cast(halo.float32, float("nan"))
    f[x] = halo.min(nan, 0.5) + halo.max(0.5, nan) + halo.clamp(nan, 0.0, 1.0)
    assert np.isnan(f.realize((4,))).all()


@pytest.mark.parametrize("reduction, numpy", [(halo.maximum, np.max), (halo.minimum, np.min)])
def test_inline_reductions_propagate_nan(reduction, numpy):
    inp = halo.ImageParam(halo.float32, 1, "inp")
    r = halo.RDom((0, 3))
    f = halo.Func("f")
    f[x] = reduction(inp[r.x])
    for data in ([1, np.nan, 3], [np.nan, 1, 3], [1, 3, np.nan], [1, 3, 2]):
        data = np.array(data, np.float32)
        np.testing.assert_array_equal(f.realize((1,), inputs={inp: data}), [numpy(data)])
        np.testing.assert_array_equal(halo.reference(f, (1,), inputs={inp: data}),
                                      [numpy(data)])
