"""Scalar and vector types of halo expressions.

A `Type` is a code (int, uint, float, bool), a bit width, and a lane count (1 for
scalars; vectors appear only after vectorization). The public dtype objects
`halo.float32`, `halo.int16`, ... are `Type` instances; anywhere a dtype is taken, a NumPy
dtype or its string works too (`as_type`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

INT, UINT, FLOAT, BOOL = "int", "uint", "float", "bool"


@dataclass(frozen=True, slots=True)
class Type:
    code: str
    bits: int
    lanes: int = 1

    def __str__(self) -> str:
        name = "bool" if self.code == BOOL else f"{self.code}{self.bits}"
        return name if self.lanes == 1 else f"{name}x{self.lanes}"

    __repr__ = __str__

    @property
    def is_int(self) -> bool:
        return self.code == INT

    @property
    def is_uint(self) -> bool:
        return self.code == UINT

    @property
    def is_float(self) -> bool:
        return self.code == FLOAT

    @property
    def is_bool(self) -> bool:
        return self.code == BOOL

    @property
    def is_integer(self) -> bool:
        """int or uint (not bool)."""
        return self.code in (INT, UINT)

    def with_lanes(self, lanes: int) -> Type:
        return Type(self.code, self.bits, lanes)

    def element_of(self) -> Type:
        return self.with_lanes(1)

    @property
    def numpy(self) -> np.dtype:
        return np.dtype("bool" if self.code == BOOL else f"{self.code}{self.bits}")

    @property
    def bytes(self) -> int:
        return 1 if self.code == BOOL else self.bits // 8

    def min_value(self) -> int | float:
        return _limits(self.code, self.bits)[0]

    def max_value(self) -> int | float:
        return _limits(self.code, self.bits)[1]


@cache
def _limits(code: str, bits: int) -> tuple[int | float, int | float]:
    """The least and greatest values of a type (every call of a compiled pipeline checks
    its scalar arguments against them, so they are computed once)."""
    if code == FLOAT:
        return -np.inf, np.inf
    if code == BOOL:
        return 0, 1
    info = np.iinfo(np.dtype(f"{code}{bits}"))
    return int(info.min), int(info.max)


bool_ = Type(BOOL, 1)
int8, int16, int32, int64 = (Type(INT, b) for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (Type(UINT, b) for b in (8, 16, 32, 64))
float16, float32, float64 = (Type(FLOAT, b) for b in (16, 32, 64))

ALL_TYPES = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
             float16, float32, float64)


def as_type(dtype: object) -> Type:
    """Accept a halo Type, a NumPy dtype (or scalar type), or a dtype string."""
    if isinstance(dtype, Type):
        return dtype
    try:
        nd = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{dtype!r} is not a dtype; use halo.float32, 'int16', np.uint8, "
                        "...") from None
    for t in ALL_TYPES:
        if t.numpy == nd:
            return t
    raise TypeError(f"dtype {nd} is not supported by halo; supported: "
                    + ", ".join(str(t) for t in ALL_TYPES))
