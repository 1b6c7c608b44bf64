"""Vars and reduction domains: names, bounds from ints, Exprs, Params and buffers,
dimension access, `where`, and a 1-D RDom used directly in arithmetic."""
from __future__ import annotations

import numpy as np
import pytest

import halo

x = halo.Var("x")


def total(value) -> halo.Func:
    """A 0-d Func summing `value` over the RDom it uses (starting from 0)."""
    s = halo.Func()
    s[()] = 0
    s[()] += value
    return s


def test_vars_makes_one_var_per_name():
    """halo.vars splits on spaces and commas; same-named Vars are the same variable."""
    a, b, c = halo.vars("a b,c")
    assert [v.name for v in (a, b, c)] == ["a", "b", "c"]
    assert halo.Var("a").node == a.node


def test_unnamed_vars_get_distinct_names():
    """Two halo.Var() are different variables."""
    assert halo.Var().name != halo.Var().name


def test_var_is_an_int32_expression():
    """A Var is usable in arithmetic and has type int32."""
    assert (x + 1).type == halo.int32 and x.type == halo.int32


def test_rdom_from_int_pairs_lists_dimensions_outermost_first():
    """RDom((1, 2), (0, 3)): r.x is (1, 2), r.y is (0, 3); r[i] is the same RVar."""
    r = halo.RDom((1, 2), (0, 3), name="r")
    assert len(r) == 2 and r[0] is r.x and r[1] is r.y
    assert [v.name for v in r.rvars] == ["r.x", "r.y"]
    assert repr(r.x.min) == "Expr(1: int32)" and repr(r.y.extent) == "Expr(3: int32)"


def test_rdom_dimension_names_after_w_are_numbered():
    """The fifth dimension of an RDom is r[4], named r.4."""
    r = halo.RDom(*[(0, 2)] * 5, name="r")
    assert [v.name for v in r.rvars] == ["r.x", "r.y", "r.z", "r.w", "r.4"]


def test_rdom_iterates_rows_in_the_outer_loop():
    """Appending the digit r.x * 3 + r.y + 1 at each visit of RDom((0, 2), (0, 3)) gives
    123456: r.x is the outer loop, r.y the inner one."""
    r = halo.RDom((0, 2), (0, 3))
    digits = halo.Func("digits")
    digits[()] = 0
    digits[()] = digits[()] * 10 + (r.x * 3 + r.y + 1)
    assert int(digits.realize(())) == 123456


def test_rdom_bounds_from_exprs_and_params():
    """RDom((lo, n)) with a Param extent and an Expr min sums lo .. lo + n - 1."""
    n = halo.Param(halo.int32, "n")
    lo = halo.Param(halo.int32, "lo")
    r = halo.RDom((lo * 2, n))
    s = total(r.x)
    assert int(s.realize((), inputs={n: 4, lo: 3})) == sum(range(6, 10))


def test_rdom_over_a_buffer_covers_its_shape():
    """RDom(buffer) has one dimension per axis, its extents the buffer's shape, as
    constants (the array has its shape now)."""
    data = np.arange(6, dtype=np.int32).reshape(2, 3)
    buf = halo.Buffer(data, "buf")
    r = halo.RDom(buf)
    assert len(r) == 2
    assert (repr(r.x.extent), repr(r.y.extent)) == ("Expr(2: int32)", "Expr(3: int32)")
    assert int(total(buf[r.x, r.y]).realize(())) == data.sum()


def test_rdom_over_an_image_param_uses_the_bound_array():
    """RDom(ImageParam) sums over whatever array is passed at run time."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    r = halo.RDom(inp)
    s = total(inp[r.x])
    assert int(s.realize((), inputs={inp: np.arange(7, dtype=np.int32)})) == 21


def test_where_restricts_the_domain():
    """r.where(r % 3 == 0) over [0, 10) visits 0, 3, 6, 9."""
    r = halo.RDom((0, 10))
    r.where(r % 3 == 0)
    assert int(total(r.x).realize(())) == 18


def test_where_twice_ands_the_conditions():
    """Two where() calls both apply."""
    r = halo.RDom((0, 10))
    r.where(r % 2 == 0).where(r > 4)
    assert int(total(r.x).realize(())) == 6 + 8


def test_where_needs_a_bool_condition():
    """r.where(r.x) with an int condition is a DefinitionError."""
    r = halo.RDom((0, 4))
    with pytest.raises(halo.DefinitionError, match="needs a bool condition"):
        r.where(r.x)


def test_one_dimensional_rdom_is_usable_in_arithmetic():
    """f[r] = f[r - 1] + f[r] with a 1-D RDom is a prefix sum."""
    r = halo.RDom((1, 5))
    f = halo.Func("f")
    f[x] = x
    f[r] = f[r - 1] + f[r]
    np.testing.assert_array_equal(f.realize((6,)), np.cumsum(np.arange(6)))


def test_multidimensional_rdom_in_arithmetic_is_an_error():
    """r + 1 on a 2-D RDom asks for r.x, r.y."""
    r = halo.RDom((0, 2), (0, 3))
    with pytest.raises(halo.DefinitionError, match="use r.x, r.y"):
        _ = r + 1


@pytest.mark.parametrize("ranges,message", [
    ((), "needs at least one"),
    ((5,), "each dimension is a \\(min, extent\\) pair"),
    (((0, 2.5),), "extent of dimension 0 has type float32"),
    (((0.5, 2),), "min of dimension 0 has type float32"),
], ids=["empty", "not-a-pair", "float-extent", "float-min"])
def test_malformed_rdoms_are_errors(ranges, message):
    """RDom needs (min, extent) pairs of integers."""
    with pytest.raises(halo.DefinitionError, match=message):
        halo.RDom(*ranges)


def test_missing_dimension_letter_is_an_error():
    """r.z of a 2-D RDom is a DefinitionError."""
    with pytest.raises(halo.DefinitionError, match="has 2 dimension"):
        _ = halo.RDom((0, 2), (0, 3)).z


def test_the_loops_of_an_rdom_over_a_buffer_unroll():
    """RDom(buffer)'s loops have constant extents, so they can be unrolled."""
    weights = halo.Buffer(np.arange(6, dtype=np.int32).reshape(2, 3), "weights")
    r = halo.RDom(weights)
    x = halo.Var("x")
    f = halo.Func("f")
    f[x] = 0
    f[x] += weights[r.x, r.y] * x
    f.update().unroll(r.y)
    np.testing.assert_array_equal(f.realize((4,)), np.arange(4) * 15)
