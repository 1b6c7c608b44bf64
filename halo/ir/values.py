"""Which Python values halo accepts where a user hands it a number: a scalar of a halo
type (a Param's default, a bound Param, a compiled function's scalar argument) and a shape
or origin (one integer per dimension, outermost first).

Every such value passes through here, so each is accepted or refused the same way
everywhere, with a message that says what would be accepted:

    bool        True or False (Python's or NumPy's bool), nothing else: not "false", 0.5, [0]
    int, uint   an integer (Python's or NumPy's, not a bool) within the type's range
    float       a real number (not a bool, not complex) whose magnitude fits the type;
                inf and nan stay inf and nan
    extents     integers (not bools) in [0, 2**31 - 1]: halo's extents are int32
    regions     an origin and a shape whose last point is at most 2**31 - 1 (`checked_region`)

A NumPy array of zero dimensions counts as the scalar it holds.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from halo.errors import BoundsError, HaloError, InputError
from halo.ir.types import Type, int32

MAX_EXTENT = int32.max_value()
"""The largest extent halo can index (extents, strides and loop bounds are int32)."""


def checked_scalar(t: Type, value: object, what: str,
                   error: type[HaloError] = InputError) -> bool | int | float:
    """`value` as the Python bool, int or float it stands for in type `t`; `error`
    naming `what` (e.g. "Param p (int32)") and what `t` accepts if it can't be one."""
    if type(value) is int and t.is_integer and t.min_value() <= value <= t.max_value():
        return value  # (the common case, e.g. an extent: no other test needed)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if t.is_bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise _refusal(what, "a bool (True or False)", value, error)
    is_bool = isinstance(value, (bool, np.bool_))
    if t.is_integer:
        low, high = t.min_value(), t.max_value()
        if isinstance(value, numbers.Integral) and not is_bool and low <= value <= high:
            return int(value)
        raise _refusal(what, f"an integer in [{low}, {high}] ({t})", value, error)
    if isinstance(value, numbers.Real) and not is_bool:
        number = _as_float(value)
        if number is not None and _fits(t, number):
            return number
    high = float(np.finfo(t.numpy).max)
    raise _refusal(what, f"a real number ({t}) of magnitude at most {high:.8g}, or inf or "
                   "nan", value, error)


def checked_shape(shape: object, ndim: int, what: str) -> tuple[int, ...]:
    """The extents of `shape` (a sequence of `ndim` integers, outermost first, or one
    integer when `ndim` is 1), each in [0, MAX_EXTENT]; else InputError naming `what`
    (e.g. "f.realize(...)")."""
    return _checked_ints(shape, ndim, what, "shape", 0)


def checked_origin(origin: object, ndim: int, what: str) -> tuple[int, ...]:
    """The minimum coordinates of `origin` (`ndim` integers, outermost first); None means
    zeros. InputError naming `what` otherwise."""
    if origin is None:
        return (0,) * ndim
    return _checked_ints(origin, ndim, what, "origin", -MAX_EXTENT - 1)


def checked_region(origin: tuple[int, ...], shape: tuple[int, ...], what: str) -> None:
    """Refuse a region (from `origin`, of `shape`) whose last point doesn't fit in int32,
    which halo's coordinates are: BoundsError naming `what` (e.g. "f.realize(...)")."""
    for i, (lo, extent) in enumerate(zip(origin, shape, strict=True)):
        if lo + extent - 1 > MAX_EXTENT:
            raise BoundsError(
                f"{what}: the region [{lo}, {lo + extent - 1}] of dimension {i} (outermost "
                f"is 0) ends past {MAX_EXTENT}, the largest coordinate halo can index "
                f"(int32); start it at {MAX_EXTENT - extent + 1} or lower")


def _checked_ints(values: object, ndim: int, what: str, role: str,
                  low: int) -> tuple[int, ...]:
    example = ", ".join(["480", "640", "3"][:ndim]) + ("," if ndim == 1 else "")
    accepted = (f"{ndim} integer(s) in [{low}, {MAX_EXTENT}], one per dimension, outermost "
                f"first, e.g. ({example})")
    if isinstance(values, (numbers.Integral, np.ndarray)) and not isinstance(
            values, (bool, np.bool_)) and np.ndim(values) == 0:
        values = (values,)
    if not isinstance(values, (tuple, list, np.ndarray)) or np.ndim(values) != 1:
        raise InputError(f"{what}: the {role} must be {accepted}; got {values!r}")
    items = tuple(values)
    for item in items:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Integral) \
                or not low <= item <= MAX_EXTENT:
            raise InputError(f"{what}: the {role} {items!r} must be {accepted}; "
                             f"{item!r} ({type(item).__name__}) isn't")
    if len(items) != ndim:
        raise InputError(f"{what}: the {role} {items!r} has {len(items)} entries, but it "
                         f"must be {accepted}")
    return tuple(int(item) for item in items)


def _as_float(value: numbers.Real) -> float | None:
    try:
        return float(value)
    except OverflowError:
        return None


def _fits(t: Type, number: float) -> bool:
    """Whether a finite `number` stays finite in `t` (inf and nan always do)."""
    if not math.isfinite(number):
        return True
    with np.errstate(over="ignore"):
        return bool(np.isfinite(t.numpy.type(number)))


def _refusal(what: str, accepted: str, value: object,
             error: type[HaloError]) -> HaloError:
    shown = f"an array of {value.dtype} with shape {value.shape}" \
        if isinstance(value, np.ndarray) else f"{_short_repr(value)} ({type(value).__name__})"
    return error(f"{what} must be {accepted}, got {shown}")


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}...{text[-12:]}"
