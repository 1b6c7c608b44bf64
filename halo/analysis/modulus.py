"""What an integer expression is modulo a constant, whatever its variables' values."""
from __future__ import annotations

import math

from halo.ir import nodes as n


def modulus(e: n.Expr) -> tuple[int, int]:
    """(m, r) with `e` = r (mod m) for every value of its variables (m == 0: `e` is r),
    from the structure of integer expression `e` (its variables: any value)."""
    match e:
        case n.Const(value=v) if not e.type.is_float:
            return 0, int(v)
        case n.Add(a=a, b=b) | n.Sub(a=a, b=b):
            (ma, ra), (mb, rb) = modulus(a), modulus(b)
            return _reduced(math.gcd(ma, mb), ra + rb if isinstance(e, n.Add) else ra - rb)
        case n.Mul(a=a, b=b):
            (ma, ra), (mb, rb) = modulus(a), modulus(b)
            return _reduced(math.gcd(ma * mb, ma * rb, mb * ra), ra * rb)
        case n.Min(a=a, b=b) | n.Max(a=a, b=b) | n.Select(true_value=a, false_value=b):
            # one of the two: what both share
            (ma, ra), (mb, rb) = modulus(a), modulus(b)
            return _reduced(math.gcd(ma, mb, ra - rb), ra)
    return 1, 0


def _reduced(m: int, r: int) -> tuple[int, int]:
    return (m, r % m) if m else (0, r)
