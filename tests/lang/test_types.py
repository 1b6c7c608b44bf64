"""The type rules of API.md: weak Python scalars, promotion of two typed operands, true
and floor division, casts, and the types of math functions."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.lang.expr import as_expr

x = halo.Var("x")


def of(dtype) -> halo.Expr:
    """An expression of type `dtype` (a read of a 1-D input of that type)."""
    return halo.ImageParam(dtype, 1)[x]


# ----------------------------------------------------------------- weak Python scalars


@pytest.mark.parametrize("make,expected", [
    (lambda: of(halo.float32) * 2.0, halo.float32),
    (lambda: 2.0 - of(halo.float32), halo.float32),
    (lambda: of(halo.int32) + 1, halo.int32),
    (lambda: of(halo.uint8) + 1, halo.uint8),
    (lambda: 255 - of(halo.uint8), halo.uint8),
    (lambda: of(halo.int8) * -128, halo.int8),
    (lambda: of(halo.uint16) % 7, halo.uint16),
    (lambda: of(halo.int64) + 2**40, halo.int64),
    (lambda: of(halo.float16) * 2.0, halo.float16),
    (lambda: of(halo.float64) + 1, halo.float64),
    (lambda: of(halo.float16) + 1, halo.float16),
    (lambda: of(halo.uint8) + True, halo.uint8),
    (lambda: halo.min(of(halo.uint8), 3), halo.uint8),
    (lambda: halo.select(x > 0, of(halo.int16), 0), halo.int16),
    (lambda: -of(halo.uint8), halo.uint8),
], ids=["f32*2.0", "2.0-f32", "i32+1", "u8+1", "255-u8", "i8*-128", "u16%7", "i64+2**40",
        "f16*2.0", "f64+1", "f16+1", "u8+True", "min(u8,3)", "select(i16,0)", "-u8"])
def test_python_scalars_take_the_type_of_the_other_operand(make, expected):
    """A Python number next to a typed expression takes that expression's type."""
    assert make().type == expected


def test_float_scalar_with_an_integer_expression_is_float32():
    """i32 * 2.5 is float32 (the integer operand is converted)."""
    e = of(halo.int32) * 2.5
    assert e.type == halo.float32


@pytest.mark.parametrize("make", [
    lambda: of(halo.uint8) + 300,
    lambda: of(halo.uint8) - -1,
    lambda: of(halo.int8) + 128,
    lambda: of(halo.int16) * 40000,
    lambda: x + 2**31,
], ids=["u8+300", "u8--1", "i8+128", "i16*40000", "i32+2**31"])
def test_python_int_that_does_not_fit_the_other_operand_is_an_error(make):
    """A literal out of the range of the other operand's type raises DefinitionError."""
    with pytest.raises(halo.DefinitionError, match="does not fit in"):
        make()


def test_lone_python_scalars_default_to_int32_float32_and_bool():
    """Without a typed partner: int -> int32, float -> float32, bool -> bool."""
    assert (as_expr(3).type, as_expr(0.5).type, as_expr(True).type) == \
        (halo.int32, halo.float32, halo.bool_)


# ---------------------------------------------------------------- two typed operands


@pytest.mark.parametrize("a,b,expected", [
    (halo.float16, halo.float32, halo.float32),
    (halo.float32, halo.float64, halo.float64),
    (halo.float16, halo.float64, halo.float64),
    (halo.int32, halo.float16, halo.float16),
    (halo.uint8, halo.float32, halo.float32),
    (halo.bool_, halo.int16, halo.int16),
    (halo.bool_, halo.float32, halo.float32),
], ids=str)
def test_promotion_of_two_typed_operands(a, b, expected):
    """Float beats integer, the wider float wins, bool converts to the other type."""
    assert (of(a) + of(b)).type == expected
    assert (of(b) + of(a)).type == expected


@pytest.mark.parametrize("a,b,expected", [
    (halo.int8, halo.int32, halo.int32),
    (halo.uint8, halo.uint16, halo.uint16),
    (halo.int32, halo.int64, halo.int64),
    (halo.int8, halo.uint16, halo.int16),
    (halo.uint32, halo.int16, halo.int32),
    (halo.uint8, halo.int8, halo.int8),
], ids=str)
def test_promotion_of_two_integer_types(a, b, expected):
    """The wider integer type wins; signed with unsigned gives signed of the wider width."""
    assert (of(a) + of(b)).type == expected
    assert (of(b) * of(a)).type == expected


def test_numpy_scalar_keeps_its_own_type():
    """A NumPy scalar is a typed operand, not a weak one: f32 * np.float64(2) is float64."""
    assert (of(halo.float32) * np.float64(2.0)).type == halo.float64


def test_comparisons_give_bool():
    """<, <=, >, >=, ==, != give bool, whatever the operand types."""
    u8 = of(halo.uint8)
    exprs = [u8 < 3, u8 <= 3, u8 > 3, u8 >= 3, u8 == 3, u8 != 3, of(halo.float32) < 0.5]
    assert {e.type for e in exprs} == {halo.bool_}


def test_arithmetic_on_bools_is_int32_and_logic_stays_bool():
    """b + b is int32, b & b is bool."""
    b = x < 3
    assert ((b + b).type, (b & b).type, (b | b).type, (~b).type) == \
        (halo.int32, halo.bool_, halo.bool_, halo.bool_)


def test_bitwise_operators_on_floats_are_errors():
    """&, | and ~ need bool or integer operands."""
    f = of(halo.float32)
    with pytest.raises(halo.DefinitionError, match="needs bool or integer operands"):
        _ = f & 1
    with pytest.raises(halo.DefinitionError, match="needs a bool or integer operand"):
        _ = ~f


# ------------------------------------------------------------------------- division


@pytest.mark.parametrize("dtype", [halo.int32, halo.uint8, halo.int64, halo.int16], ids=str)
def test_true_division_of_integers_is_float32(dtype):
    """int / int is true division in float32, even for 64-bit integers."""
    assert (of(dtype) / of(dtype)).type == halo.float32
    assert (of(dtype) / 2).type == halo.float32


def test_true_division_of_floats_keeps_the_float_type():
    """f64 / 2 stays float64."""
    assert (of(halo.float64) / 2).type == halo.float64


def test_floor_division_and_modulo_keep_integer_types():
    """// and % on integers keep the type; on floats, // is the floor of the quotient."""
    assert ((of(halo.int16) // 3).type, (of(halo.uint8) % 3).type) == (halo.int16, halo.uint8)
    e = of(halo.float32) // 2.0
    assert e.type == halo.float32 and "floor" in repr(e)


# ---------------------------------------------------------------------------- casts


@pytest.mark.parametrize("dtype,expected", [
    (halo.uint8, halo.uint8), (np.uint8, halo.uint8), (np.dtype("int16"), halo.int16),
    ("float64", halo.float64), ("uint16", halo.uint16), (np.float16, halo.float16),
    ("bool", halo.bool_),
], ids=["halo", "np-type", "np-dtype", "str-f64", "str-u16", "np-f16", "str-bool"])
def test_cast_accepts_halo_types_numpy_dtypes_and_strings(dtype, expected):
    """halo.cast and astype take any spelling of a dtype."""
    assert halo.cast(dtype, x).type == expected
    assert x.astype(dtype).type == expected


def test_cast_to_the_same_type_is_the_same_expression():
    """Casting to the type an Expr already has returns it unchanged."""
    assert halo.cast("int32", x) is x


def test_cast_to_an_unsupported_dtype_is_a_type_error():
    """complex64 or a made-up name is rejected with the supported list."""
    with pytest.raises(TypeError, match="not supported by halo"):
        halo.cast("complex64", x)
    with pytest.raises(TypeError, match="is not a dtype"):
        x.astype("notatype")


# --------------------------------------------------------------------- math functions


@pytest.mark.parametrize("fn", [halo.sqrt, halo.exp, halo.log, halo.sin, halo.cos, halo.tanh,
                                halo.floor, halo.ceil, halo.round])
@pytest.mark.parametrize("dtype", [halo.int32, halo.uint8, halo.int64], ids=str)
def test_math_functions_on_integers_promote_to_float32(fn, dtype):
    """sqrt(int), floor(int), ... are float32."""
    assert fn(of(dtype)).type == halo.float32


@pytest.mark.parametrize("dtype", [halo.float16, halo.float32, halo.float64], ids=str)
def test_math_functions_keep_float_types(dtype):
    """sqrt of a float64 is float64, of a float16 is float16."""
    assert halo.sqrt(of(dtype)).type == dtype
    assert halo.exp(of(dtype)).type == dtype


@pytest.mark.parametrize("dtype", [halo.int8, halo.int32, halo.uint8, halo.uint32,
                                   halo.float16, halo.float32, halo.float64], ids=str)
def test_abs_keeps_the_type(dtype):
    """abs keeps the operand's type, as NumPy does."""
    assert halo.abs(of(dtype)).type == dtype
    assert abs(of(dtype)).type == dtype


def test_pow_of_integers_is_float32():
    """x ** 2 and halo.pow(i32, i32) are float32."""
    assert (x ** 2).type == halo.float32
    assert halo.pow(of(halo.int32), of(halo.int32)).type == halo.float32


@pytest.mark.parametrize("dtype", [halo.float16, halo.float64], ids=str)
def test_pow_with_a_python_scalar_keeps_the_float_type(dtype):
    """f ** 2 and halo.pow(f, 2.0) follow the weak-scalar rule like f * 2.0."""
    assert (of(dtype) ** 2).type == dtype
    assert halo.pow(of(dtype), 2.0).type == dtype
    assert (2.0 ** of(dtype)).type == dtype
