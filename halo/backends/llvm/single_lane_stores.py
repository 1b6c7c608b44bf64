"""Single-lane masked stores become scalar stores before LLVM's code generator sees them.

LLVM 22's x86 code generator (on AVX-512 targets) turns a masked store whose constant mask
enables one lane into a scalar store, and when the stored vector is a truncation (an
`i32`/`i16` computation stored as `uint8`, say) it stores the lane at the *untruncated*
width: four bytes instead of one, so three bytes past the lane are overwritten
(llvm/llvm-project#179489, fixed after LLVM 22.1). Such masks appear whenever a vector
tail has one lane left and its extent is known: halo's guarded tails (`vectorize(x, 8)`
over 9 columns) and LLVM's own predicated loops, after unrolling.

`split_single_lane_stores` rewrites the optimized IR text: each `llvm.masked.store` whose
mask is a constant with one `true` lane becomes an `extractelement` and a plain store of
that element, which is what the code generator meant to emit. Other masked stores are
left alone.
"""
from __future__ import annotations

import re

_MASKED_STORE = re.compile(
    r"^(?P<indent>\s*)(?:tail )?call void @llvm\.masked\.store\.[\w.]+\("
    r"<(?P<lanes>\d+) x (?P<elem>\w+)> (?P<value>.+?), "
    r"ptr (?:align (?P<align>\d+) )?(?P<ptr>%[\w.\-]+), "
    r"<(?P=lanes) x i1> <(?P<mask>[^<>]*)>\)(?:, ![^\n]*)?$",
    re.MULTILINE)

_BYTES = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "half": 2, "bfloat": 2, "float": 4,
          "double": 8}


def split_single_lane_stores(llvm_ir: str) -> str:
    """`llvm_ir` with every masked store of one constant lane made a scalar store."""
    if "@llvm.masked.store" not in llvm_ir:
        return llvm_ir
    count = 0

    def scalar_store(m: re.Match) -> str:
        nonlocal count
        flags = [bit.strip() for bit in m["mask"].split(",")]
        elem = m["elem"]
        if flags.count("i1 true") != 1 or elem not in _BYTES or \
                any(f not in ("i1 true", "i1 false") for f in flags):
            return m[0]
        lane = flags.index("i1 true")
        # The vector's address is `align`-aligned, so the lane's is at least
        # min(align, element size)-aligned (both powers of two).
        align = min(int(m["align"] or 1), _BYTES[elem])
        count += 1
        value, address = f"%halo.lane.{count}", f"%halo.lane.{count}.addr"
        i = m["indent"]
        return (f"{i}{value} = extractelement <{m['lanes']} x {elem}> {m['value']}, i64 {lane}\n"
                f"{i}{address} = getelementptr {elem}, ptr {m['ptr']}, i64 {lane}\n"
                f"{i}store {elem} {value}, ptr {address}, align {align}")

    return _MASKED_STORE.sub(scalar_store, llvm_ir)
