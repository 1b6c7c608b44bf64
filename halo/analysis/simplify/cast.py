"""Rules for Cast.

A cast of a constant folds (fold.py). Otherwise a cast to the operand's own type goes, and
an inner cast that loses nothing goes: int32(int16(x)) with x an int8 is int32(x), since
int16 holds every int8 value exactly and the outer cast then sees the same number.
"""
from __future__ import annotations

from halo.analysis.simplify.pattern import ANY, Rule, cast, x
from halo.ir import nodes as n
from halo.ir.types import Type

# Bits of integer precision of each float width (the significand, with the hidden bit).
_SIGNIFICAND_BITS = {16: 11, 32: 24, 64: 53}


def represents(wide: Type, narrow: Type) -> bool:
    """Whether every value of `narrow` converts to `wide` exactly."""
    if narrow.is_bool:
        return True
    if wide.is_bool:
        return False
    if wide.is_float:
        if narrow.is_float:
            return wide.bits >= narrow.bits
        return _SIGNIFICAND_BITS[wide.bits] >= narrow.bits - narrow.is_int
    if narrow.is_float:
        return False
    if wide.is_int == narrow.is_int:
        return wide.bits >= narrow.bits
    return wide.is_int and wide.bits > narrow.bits


def _drop_lossless_inner(e: n.Cast, x: n.Expr) -> n.Expr | None:
    """t(s(x)) -> t(x) when s represents every value of x's type."""
    if represents(e.value.type, x.type):
        return n.Cast(e.type, x)
    return None


RULES = [
    Rule(cast(x), x, ANY, when=lambda e, x: x.type == e.type),  # int32(x: int32) -> x
    Rule(cast(cast(x)), _drop_lossless_inner, ANY),             # int32(int16(x: int8)) -> int32(x)
]
