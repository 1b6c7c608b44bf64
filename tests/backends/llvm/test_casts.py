"""Casts compiled by the LLVM backend: truncation toward zero, wraparound, bool rules,
and float conversions rounded once, as NumPy does them."""
from __future__ import annotations

import numpy as np
import pytest

from halo.ir.nodes import Cast
from halo.ir.types import (
    Type,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)


def cast_to(t: Type):
    return lambda value: Cast(t, value)


@pytest.mark.parametrize("source", [float16, float32, float64], ids=str)
@pytest.mark.parametrize("target", [int8, int16, int32, int64], ids=str)
def test_float_to_signed_int_truncates_toward_zero(elementwise, source, target):
    """Float to signed int drops the fraction: -3.7 -> -3, 2.9 -> 2."""
    values = np.array([-3.7, -0.5, -0.0, 0.5, 2.9, 100.99, -100.99], dtype=source.numpy)
    expected = np.trunc(values.astype(np.float64)).astype(target.numpy)
    np.testing.assert_array_equal(elementwise(cast_to(target), values), expected)


@pytest.mark.parametrize("target", [uint8, uint16, uint32, uint64], ids=str)
def test_float_to_unsigned_int_truncates(elementwise, target):
    """Float to unsigned int drops the fraction of in-range values."""
    values = np.array([0.0, 0.9, 1.5, 200.7, 254.99], dtype=np.float32)
    expected = np.trunc(values).astype(target.numpy)
    np.testing.assert_array_equal(elementwise(cast_to(target), values), expected)


@pytest.mark.parametrize("target", [int8, uint8, int16, uint16], ids=str)
def test_narrowing_int_cast_wraps(elementwise, target):
    """Int to a narrower int keeps the low bits: 300 -> int8 44, -1 -> uint8 255."""
    values = np.array([300, -1, 128, -129, 65535, 65536, -32769, 7], dtype=np.int32)
    expected = [v & (1 << target.bits) - 1 for v in values.tolist()]
    if target.is_int:
        expected = [v - (1 << target.bits) if v >> (target.bits - 1) else v for v in expected]
    np.testing.assert_array_equal(elementwise(cast_to(target), values), expected)


@pytest.mark.parametrize(("source", "target"), [
    (int8, int32), (int8, uint32), (uint8, int32), (int16, int64), (uint32, int64),
    (int32, uint32), (uint32, int32), (int64, uint64), (uint64, int8)], ids=str)
def test_int_to_int_follows_source_signedness(elementwise, source, target):
    """Widening sign-extends signed sources and zero-extends unsigned ones, as NumPy."""
    low, high = source.min_value(), source.max_value()
    values = np.array([low, low + 1, -1 if low else 0, 0, 1, high - 1, high], dtype=source.numpy)
    expected = values.astype(target.numpy)
    np.testing.assert_array_equal(elementwise(cast_to(target), values), expected)


@pytest.mark.parametrize("source", [int8, uint8, int32, uint32, int64, uint64], ids=str)
@pytest.mark.parametrize("target", [float16, float32, float64], ids=str)
def test_int_to_float_rounds_to_nearest(elementwise, source, target):
    """Int to float rounds to nearest, even for values a float can't hold exactly."""
    low, high = source.min_value(), source.max_value()
    candidates = [low, -1, 0, 1, 100, 1000, 2049, 16777217, 2**53 + 1, high - 1, high]
    values = np.array([v for v in candidates if low <= v <= high], dtype=source.numpy)
    with np.errstate(over="ignore"):
        expected = values.astype(target.numpy)
    np.testing.assert_array_equal(elementwise(cast_to(target), values), expected)


@pytest.mark.parametrize(("source", "target"), [
    (float64, float32), (float64, float16), (float32, float16), (float16, float64),
    (float32, float64), (float16, float32)], ids=str)
def test_float_to_float_rounds_once(elementwise, source, target):
    """Float conversions round once to nearest-even (no double rounding through float32)."""
    # 1 + 2**-11 + 2**-40 rounds up to float16; through float32 it would tie and round down.
    edges = [1 + 2**-11 + 2**-40, 0.1, -2.5e-3, 65519.0, 65520.0, 1e10, -1e-10, 3e-8, 6e-8,
             np.inf, -0.0, np.nan]
    rng = np.random.default_rng(2)
    random = rng.standard_normal(5000) * 2.0 ** rng.integers(-30, 20, 5000)
    with np.errstate(over="ignore"):
        values = np.concatenate([edges, random]).astype(source.numpy)
        expected = values.astype(target.numpy)
    np.testing.assert_array_equal(elementwise(cast_to(target), values), expected)


@pytest.mark.parametrize("source", [int8, uint32, int64, float16, float32, float64], ids=str)
def test_number_to_bool_is_nonzero(elementwise, source):
    """Number to bool is `!= 0`: negative and NaN are True, zero and -0.0 are False."""
    values = [0, 1, 5, 127] + ([-1, -0.0, 0.25, np.nan] if source.is_float else [])
    values = np.array(values, dtype=source.numpy)
    np.testing.assert_array_equal(elementwise(cast_to(bool_), values), values.astype(bool))


@pytest.mark.parametrize("target", [int8, uint16, int64, float16, float32, float64], ids=str)
def test_bool_to_number_is_zero_or_one(elementwise, target):
    """Bool to a number gives 0 or 1."""
    values = np.array([False, True, True, False])
    np.testing.assert_array_equal(elementwise(cast_to(target), values), [0, 1, 1, 0])
