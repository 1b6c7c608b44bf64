"""Rewrites of the PTX nvcc makes from halo's CUDA C, before ptxas assembles it, around
ptxas defects that give wrong answers silently.

**Negations feeding integer min/max.** ptxas (seen in CUDA 12.8 through 13.3, on sm_90 and
sm_100) fuses `neg.s32` into the three-input min/max it makes of a chain of `max.s32` /
`min.s32` (SASS `VIMNMX3`) and drops the negation: `max(max(a, -b), c)` becomes
`max(max(a, b), c)`. Only its optimizer does it (`-O0` is right) and the PTX is right.
`max(..., x * w)` over an unrolled window with a weight of -1 is enough
(`tests/gpu/test_ptxas_negated_max.py`). Each `neg.s32 d, s` becomes `d = z - s` where `z`
is `%dynamic_smem_size` less the dynamic shared memory halo launches that kernel with:
zero, but ptxas can't know it, so it keeps the subtraction as an instruction of its own.
"""
from __future__ import annotations

import re

_NEG_S32 = re.compile(r"^(?P<indent>[ \t]*)(?P<guard>@!?%\w+\s+)?neg\.s32\s+(?P<dst>%\w+),"
                      r"\s*(?P<src>%\w+);", re.MULTILINE)


_ENTRY = re.compile(r"\.entry\s+(\w+)")


def opaque_negations(ptx: str, dynamic_shared: dict[str, int] | None = None) -> str:
    """`ptx` with each register negation (`neg.s32`) a subtraction from an opaque zero;
    `dynamic_shared`: the bytes each kernel (by name) is launched with, 0 if left out."""
    sizes = dynamic_shared or {}
    entries = list(_ENTRY.finditer(ptx))
    bounds = [m.start() for m in entries] + [len(ptx)]  # each kernel's text ends a bound
    out = [_rewritten(ptx[:bounds[0]], 0)]
    for m, end in zip(entries, bounds[1:], strict=True):
        out.append(_rewritten(ptx[m.start():end], sizes.get(m.group(1), 0)))
    return "".join(out)


def _rewritten(ptx: str, dynamic_shared: int) -> str:
    less = f" sub.u32 %halo_zero, %halo_zero, {dynamic_shared};" if dynamic_shared else ""
    return _NEG_S32.sub(
        lambda m: (f"{m['indent']}{{ .reg .b32 %halo_zero; "
                   f"mov.u32 %halo_zero, %dynamic_smem_size;{less} "
                   f"{m['guard'] or ''}sub.s32 {m['dst']}, %halo_zero, {m['src']}; }}"), ptx)
