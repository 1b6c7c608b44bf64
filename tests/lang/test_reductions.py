"""Inline reductions: `halo.sum`, `product`, `maximum`, `minimum` make a Func over the pure
Vars their expression uses, reduced over the RDom it uses."""
from __future__ import annotations

import numpy as np
import pytest

import halo

y, x = halo.vars("y x")


def test_sum_captures_the_pure_vars_it_uses_in_order_of_appearance():
    """halo.sum(inp[y, x + r.x]) is a call of a Func over (y, x) at (y, x)."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 3))
    total = halo.sum(inp[y, x + r.x])
    assert [v.name for v in total.func.args] == ["y", "x"]
    assert [a.name for a in total.args] == ["y", "x"]
    swapped = halo.sum(inp[x, y + r.x])
    assert [v.name for v in swapped.func.args] == ["x", "y"]


def test_sum_is_a_pure_zero_then_one_update():
    """The reduction Func starts at 0 and has one update over the RDom."""
    r = halo.RDom((0, 4))
    total = halo.sum(r.x * x)
    pure, update = total.func.definitions
    assert repr(total.func[x]) == f"Expr({total.func.name}[x]: int32)"
    assert pure.value.value == 0 and update.rdom is r


def test_sum_of_a_sliding_window_matches_numpy():
    """out[y, x] = sum of inp[y, x + 0..2]."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 3))
    out = halo.Func("out")
    out[y, x] = halo.sum(inp[y, x + r.x])
    image = np.random.default_rng(0).random((3, 7), dtype=np.float32)
    want = image[:, 0:5] + image[:, 1:6] + image[:, 2:7]
    np.testing.assert_allclose(out.realize((3, 5), inputs={inp: image}), want, rtol=1e-6)


@pytest.mark.parametrize("reduce,numpy", [
    (halo.sum, np.sum), (halo.product, np.prod), (halo.maximum, np.max),
    (halo.minimum, np.min)], ids=["sum", "product", "maximum", "minimum"])
def test_each_reduction_matches_numpy_over_rows(reduce, numpy):
    """Reducing each row of a small int32 image matches the NumPy reduction."""
    inp = halo.ImageParam(halo.int32, 2, "inp")
    r = halo.RDom((0, inp.shape[1]))
    out = halo.Func("out")
    out[y] = reduce(inp[y, r.x])
    image = np.array([[3, -1, 4], [1, 5, -9], [2, 6, 5]], np.int32)
    np.testing.assert_array_equal(out.realize((3,), inputs={inp: image}),
                                  numpy(image, axis=1))


@pytest.mark.parametrize("reduce,init", [
    (halo.maximum, 0), (halo.minimum, 255), (halo.sum, 0), (halo.product, 1)],
    ids=["maximum", "minimum", "sum", "product"])
def test_reduction_keeps_the_type_and_starts_from_its_identity(reduce, init):
    """Over uint8 the result is uint8, starting from the identity of the operation."""
    inp = halo.ImageParam(halo.uint8, 1, "inp")
    r = halo.RDom((0, 3))
    result = reduce(inp[r.x])
    pure = result.func.definitions[0]
    assert result.type == halo.uint8 and pure.value.value == init


def test_float_maximum_starts_from_minus_infinity():
    """maximum over negative floats is the largest of them, not 0."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    r = halo.RDom((0, 3))
    out = halo.Func("out")
    out[()] = halo.maximum(inp[r.x])
    assert float(out.realize((), inputs={inp: np.array([-3, -1.5, -2], np.float32)})) == -1.5


def test_reduction_without_an_rdom_is_an_error():
    """halo.sum(x + 1) uses no RVar."""
    with pytest.raises(halo.DefinitionError, match="uses an RDom"):
        halo.sum(x + 1)


def test_sum_captures_pure_vars_used_only_in_the_rdom_predicate():
    """A triangular sum: r.where(r.x <= x) uses x only in the predicate, and
    out[x] = sum(inp[r.x]) is the prefix sum."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    r = halo.RDom((0, 6))
    r.where(r.x <= x)
    out = halo.Func("out")
    out[x] = halo.sum(inp[r.x])
    data = np.arange(1, 7, dtype=np.int32)
    np.testing.assert_array_equal(out.realize((6,), inputs={inp: data}), np.cumsum(data))
