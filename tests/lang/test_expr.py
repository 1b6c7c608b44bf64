"""What expressions mean: Python-style floor division, wrap-around, select on non-bool
conditions, math functions, and the TypeError for using an Expr as a Python bool. Values
are checked by realizing small pipelines and comparing with NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import halo

x = halo.Var("x")


def realize_all(funcs: list[halo.Func], size: int, inputs: dict) -> list[np.ndarray]:
    """Realize `funcs` over [0, size) in one pipeline."""
    return halo.Pipeline(funcs).realize((size,), inputs=inputs)


@pytest.mark.parametrize("use", [
    lambda e: bool(e),
    lambda e: 1 if e else 0,
    lambda e: e and True,
    lambda e: e or False,
    lambda e: not e,
], ids=["bool", "if", "and", "or", "not"])
def test_expr_as_a_python_bool_is_a_type_error(use):
    """if/and/or/not on an Expr raise TypeError pointing at &, | and halo.select."""
    with pytest.raises(TypeError, match=r"halo.select\(cond, a, b\)") as info:
        use(x < 3)
    assert "&" in str(info.value) and "|" in str(info.value)


def test_integer_floor_division_and_modulo_follow_python():
    """// and % round toward negative infinity, like Python and NumPy; x // 0 and x % 0
    are 0."""
    a = halo.ImageParam(halo.int32, 1, "a")
    b = halo.ImageParam(halo.int32, 1, "b")
    q, r = halo.Func("q"), halo.Func("r")
    q[x] = a[x] // b[x]
    r[x] = a[x] % b[x]
    av = np.array([7, -7, 7, -7, 0, -1, 9, 5], np.int32)
    bv = np.array([2, 2, -2, -2, 3, 4, 3, 0], np.int32)
    got_q, got_r = realize_all([q, r], 8, {a: av, b: bv})
    nonzero = bv != 0
    np.testing.assert_array_equal(got_q[nonzero], av[nonzero] // bv[nonzero])
    np.testing.assert_array_equal(got_r[nonzero], av[nonzero] % bv[nonzero])
    assert (got_q[~nonzero], got_r[~nonzero]) == (0, 0)


def test_float_floor_division_and_modulo_follow_python():
    """For floats, a // b is floor(a / b) and a % b has the sign of b."""
    a = halo.ImageParam(halo.float32, 1, "a")
    q, r = halo.Func("q"), halo.Func("r")
    q[x] = a[x] // 2.0
    r[x] = a[x] % -2.0
    av = np.array([-7.0, 7.0, 7.5, -0.5], np.float32)
    got_q, got_r = realize_all([q, r], 4, {a: av})
    np.testing.assert_array_equal(got_q, av // np.float32(2.0))
    np.testing.assert_allclose(got_r, np.mod(av, np.float32(-2.0)))


def test_true_division_of_integers_gives_fractions():
    """7 / 2 is 3.5 in float32."""
    a = halo.ImageParam(halo.int32, 1, "a")
    f = halo.Func("f")
    f[x] = a[x] / 2
    got = f.realize((3,), inputs={a: np.array([7, -3, 4], np.int32)})
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [3.5, -1.5, 2.0])


def test_uint8_arithmetic_wraps_around():
    """u8 + 10 and u8 - 10 wrap modulo 256, as NumPy uint8 does."""
    a = halo.ImageParam(halo.uint8, 1, "a")
    up, down = halo.Func("up"), halo.Func("down")
    up[x] = a[x] + 10
    down[x] = a[x] - 10
    av = np.array([0, 5, 250, 255], np.uint8)
    got_up, got_down = realize_all([up, down], 4, {a: av})
    np.testing.assert_array_equal(got_up, av + np.uint8(10))
    np.testing.assert_array_equal(got_down, av - np.uint8(10))


def test_select_with_an_integer_condition_tests_for_nonzero():
    """select(i, a, b) takes a where i != 0, like np.where on an integer array."""
    a = halo.ImageParam(halo.int32, 1, "a")
    f = halo.Func("f")
    f[x] = halo.select(a[x], 1.5, -1.0)
    av = np.array([0, 3, -2, 0], np.int32)
    got = f.realize((4,), inputs={a: av})
    np.testing.assert_array_equal(got, np.where(av != 0, 1.5, -1.0).astype(np.float32))


def test_select_with_a_float_condition_tests_for_nonzero():
    """select(f, 1, 0) is 1 where f != 0.0."""
    a = halo.ImageParam(halo.float32, 1, "a")
    f = halo.Func("f")
    f[x] = halo.select(a[x], 1, 0)
    av = np.array([0.0, 0.25, -3.0], np.float32)
    np.testing.assert_array_equal(f.realize((3,), inputs={a: av}), [0, 1, 1])


def test_math_functions_on_integers_compute_in_float32():
    """sqrt(i32) and floor(i32 / 3) are float32 results of the integer values."""
    a = halo.ImageParam(halo.int32, 1, "a")
    s, fl = halo.Func("s"), halo.Func("fl")
    s[x] = halo.sqrt(a[x])
    fl[x] = halo.floor(a[x] / 3)
    av = np.array([0, 1, 2, 9, 10], np.int32)
    got_s, got_fl = realize_all([s, fl], 5, {a: av})
    assert got_s.dtype == got_fl.dtype == np.float32
    np.testing.assert_allclose(got_s, np.sqrt(av.astype(np.float32)), rtol=1e-6)
    np.testing.assert_array_equal(got_fl, np.floor(av / np.float32(3)))


def test_abs_keeps_integer_type_and_values():
    """abs of int8 stays int8 (abs(-128) wraps to -128, as in NumPy)."""
    a = halo.ImageParam(halo.int8, 1, "a")
    f = halo.Func("f")
    f[x] = halo.abs(a[x])
    av = np.array([-128, -5, 0, 7], np.int8)
    got = f.realize((4,), inputs={a: av})
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np.abs(av))


def test_min_max_clamp_on_mixed_scalars():
    """clamp(a, 0, 10) with Python bounds stays int16 and clips like np.clip."""
    a = halo.ImageParam(halo.int16, 1, "a")
    f = halo.Func("f")
    f[x] = halo.clamp(a[x], 0, 10)
    av = np.array([-4, 3, 10, 300], np.int16)
    got = f.realize((4,), inputs={a: av})
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, np.clip(av, 0, 10))


def test_signed_and_unsigned_operands_compute_in_the_wider_signed_type():
    """u8 - i16 computes in int16, so 0 - 1 is -1 rather than wrapping at 8 bits."""
    a = halo.ImageParam(halo.uint8, 1, "a")
    b = halo.ImageParam(halo.int16, 1, "b")
    f = halo.Func("f")
    f[x] = a[x] - b[x]
    got = f.realize((3,), inputs={a: np.array([0, 200, 255], np.uint8),
                                  b: np.array([1, -100, 300], np.int16)})
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, [-1, 300, -45])
