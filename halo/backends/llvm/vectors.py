"""LLVM vector code for what halo's vector IR has beyond its scalar operators: splats,
ramps, lane-by-lane fallbacks, and memory accesses of one element per lane.

The operators need nothing from here: LLVM's arithmetic, comparison, select and cast
instructions are lane-wise, so the emitters of `arithmetic.py` serve `<8 x float>` as they
serve `float`.

Memory. A vector index that is a ramp of constant stride 1 or -1 addresses consecutive
elements: it compiles to one vector load or store at the lowest of them (element alignment
only; lanes reversed for stride -1), or with a predicate to `llvm.masked.load` /
`llvm.masked.store`, which leave the disabled lanes' memory untouched, so a tail vector may
run past the end of its buffer.

A load at a ramp of constant stride 2 to 4 (or -2 to -4) reads the whole span between
its first and last lane's elements (one vector load: they are inside their buffer; with a
predicate, a masked load of the enabled lanes' elements) and keeps every stride-th element
(one shuffle): on an AVX-512 Xeon, 1.6-2.2x faster than lane by lane for a row downsampled
by 2, 3 or 4.

Any other index is a gather or a scatter. When every lane is enabled (no predicate, or a
predicate found all-true at run time), it is compiled lane by lane, one scalar load or store
per lane in lane order; otherwise it is `llvm.masked.gather` / `llvm.masked.scatter`,
which LLVM turns into vgatherdps / vscatterdps on AVX-512. Measured on the Zen 4 host
(8 lanes of float32 per access; time relative to always using the intrinsic):

                                   in L2 (64K elements)    from memory (2M elements)
                                   lane by lane / chosen   lane by lane / chosen
    gather, stride 2                   1.06 / 1.05             0.31 / 0.31
    gather, clamp(ramp), tail mask     0.95 / 0.94             0.59 / 0.57
    gather, uint8 lookup table         1.00 / 0.99             0.95 / 0.92
    gather, stride 2, random mask      1.42 / 1.15             2.33 / 1.07
    scatter, stride 2                  1.01 / 1.00             0.37 / 0.36
    scatter, permutation, tail mask    1.06 / 1.06             0.80 / 0.70
    scatter, stride 2, random mask     1.84 / 1.04             3.99 / 1.11

("lane by lane" branches around each disabled lane, as LLVM's own scalarization does.)
Lanes are stored in order, so a scatter whose lanes share an address leaves the value of
the last such lane, as the serial loop would. Disabled lanes of a masked load or gather
read as zero.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from halo.backends.llvm.llvm_types import POINTER, declare_intrinsic, value_type
from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.types import Type

_LANE_INDEX = ir.IntType(32)  # the type of lane numbers in insert/extract/shuffle
# The masked memory intrinsics' alignment operand, as LLVM <= 21 declares them; LLVM 22
# moved it to an `align` attribute and upgrades this form when it parses it.
_ALIGNMENT = ir.IntType(32)

# ------------------------------------------------------------------------- building vectors


def broadcast(b: ir.IRBuilder, value: ir.Value, lanes: int) -> ir.Value:
    """The vector of `lanes` copies of scalar `value` (a constant splat for a constant)."""
    vector_type = ir.VectorType(value.type, lanes)
    if isinstance(value, ir.Constant):
        return ir.Constant(vector_type, value)
    first = b.insert_element(ir.Constant(vector_type, ir.Undefined), value,
                             ir.Constant(_LANE_INDEX, 0))
    return b.shuffle_vector(first, ir.Constant(vector_type, ir.Undefined),
                            ir.Constant(ir.VectorType(_LANE_INDEX, lanes), None))


def lane_numbers(t: Type) -> ir.Constant:
    """<0, 1, ..., lanes - 1> in the vector type `t`."""
    return constant_ramp(t, 0, 1)


def constant_ramp(t: Type, base: int | float, stride: int | float) -> ir.Constant:
    """The ramp `base + stride * <0, 1, ...>` of vector type `t`, computed as the emitted
    code would: in the element type, wrapping integers and rounding floats at each step."""
    element = t.element_of()
    with np.errstate(over="ignore"):
        numbers = np.arange(t.lanes, dtype=np.uint64).astype(element.numpy)
        values = element.numpy.type(base) + element.numpy.type(stride) * numbers
    return ir.Constant(_llvm_vector(t), [_python_value(element, v) for v in values.tolist()])


def reverse(b: ir.IRBuilder, vector: ir.Value) -> ir.Value:
    """`vector` with its lanes in the opposite order."""
    lanes = vector.type.count
    order = ir.Constant(ir.VectorType(_LANE_INDEX, lanes), list(range(lanes - 1, -1, -1)))
    return b.shuffle_vector(vector, ir.Constant(vector.type, ir.Undefined), order)


def lanes_of(b: ir.IRBuilder, vector: ir.Value, first: int, count: int) -> ir.Value:
    """The `count` lanes of `vector` from lane `first` on, as a vector."""
    order = ir.Constant(ir.VectorType(_LANE_INDEX, count), list(range(first, first + count)))
    return b.shuffle_vector(vector, ir.Constant(vector.type, ir.Undefined), order)


def concatenate(b: ir.IRBuilder, parts: Sequence[ir.Value]) -> ir.Value:
    """One vector of the lanes of `parts` in order; they have one type. An odd part out
    of a pairing is paired with an undefined part, whose lanes are dropped at the end."""
    total = sum(p.type.count for p in parts)
    parts = list(parts)
    while len(parts) > 1:
        if len(parts) % 2:
            parts.append(ir.Constant(parts[0].type, ir.Undefined))
        lanes = parts[0].type.count
        order = ir.Constant(ir.VectorType(_LANE_INDEX, 2 * lanes), list(range(2 * lanes)))
        pairs = zip(parts[::2], parts[1::2], strict=True)
        parts = [b.shuffle_vector(low, high, order) for low, high in pairs]
    joined = parts[0]
    return joined if joined.type.count == total else lanes_of(b, joined, 0, total)


def interleave(b: ir.IRBuilder, parts: Sequence[ir.Value]) -> ir.Value:
    """One vector of the lanes of `parts` (one type, any number) taken in turn: lane
    `i * len(parts) + c` is lane i of `parts[c]`."""
    count, lanes = len(parts), parts[0].type.count
    joined = concatenate(b, parts)
    order = [(p % count) * lanes + p // count for p in range(count * lanes)]
    return b.shuffle_vector(joined, ir.Constant(joined.type, ir.Undefined),
                            ir.Constant(ir.VectorType(_LANE_INDEX, count * lanes), order))


def map_lanes(b: ir.IRBuilder, function: Callable[..., ir.Value],
              args: Sequence[ir.Value], result_type: ir.VectorType) -> ir.Value:
    """`function` applied to each lane of `args` in turn, for operations that have no
    vector form (a libm call): `result[i] = function(args[0][i], args[1][i], ...)`."""
    result = ir.Constant(result_type, ir.Undefined)
    for lane in range(result_type.count):
        index = ir.Constant(_LANE_INDEX, lane)
        value = function(*(b.extract_element(arg, index) for arg in args))
        result = b.insert_element(result, value, index)
    return result


# ----------------------------------------------------------------------------------- memory


@dataclass(frozen=True)
class DenseSpan:
    """The elements a vector index addresses when they are consecutive: `lanes` elements
    starting at `first`, the scalar index of the lowest, in lane order or reversed."""
    first: n.Expr
    reversed: bool


def dense_span(index: n.Expr) -> DenseSpan | None:
    """The consecutive elements `index` addresses, when it is a ramp of constant stride 1
    or -1; None for any other index (a gather or scatter)."""
    match index:
        case n.Ramp(base=base, stride=n.Const(value=1)):
            return DenseSpan(base, reversed=False)
        case n.Ramp(base=base, stride=n.Const(value=-1), lanes=lanes):
            return DenseSpan(n.Sub(base, n.const(lanes - 1, base.type)), reversed=True)
    return None


# The largest stride whose loads read the whole span between the first and last lane
# (one dense load) and keep every stride-th element (one shuffle), rather than one scalar
# load per lane: up to 4, a quarter of the elements read are used.
MAX_DENSE_STRIDE = 4


@dataclass(frozen=True)
class StridedSpan:
    """The elements a vector index addresses when they are evenly spaced, `stride`
    (2..MAX_DENSE_STRIDE in size) apart: `count` consecutive elements from `first`, the
    scalar index of the lowest, hold them at every `stride`-th position (from the last
    one when `stride` is negative: lane 0 is the highest element)."""
    first: n.Expr
    stride: int
    count: int


def strided_span(index: n.Expr) -> StridedSpan | None:
    """The span a ramp of constant stride 2..MAX_DENSE_STRIDE (or its negation) reads."""
    match index:
        case n.Ramp(base=base, stride=n.Const(value=int() as stride), lanes=lanes) \
                if 2 <= abs(stride) <= MAX_DENSE_STRIDE:
            count = abs(stride) * (lanes - 1) + 1
            first = base if stride > 0 else n.Sub(base, n.const(count - 1, base.type))
            return StridedSpan(first, stride, count)
    return None


def strided_load(b: ir.IRBuilder, memory_type: ir.VectorType, address: ir.Value,
                 span: StridedSpan, mask: ir.Value | None, alignment: int) -> ir.Value:
    """The elements of `span`, read as one load of the span's `count` elements at
    `address` and a shuffle. With every lane enabled, the span lies between the first and
    last lane's elements, so it is inside their buffer; with `mask`, only the elements of
    enabled lanes are read (a masked load), and disabled lanes are zero."""
    lanes, step = memory_type.count, abs(span.stride)
    order = [i * step for i in range(lanes)]
    if span.stride < 0:
        order.reverse()
    dense_type = ir.VectorType(memory_type.element, span.count)
    if mask is not None:  # element order[i] is read iff lane i is enabled
        lane_of = {element: lane for lane, element in enumerate(order)}
        picks = [lane_of.get(element, lanes) for element in range(span.count)]
        mask = b.shuffle_vector(mask, ir.Constant(mask.type, None),
                                ir.Constant(ir.VectorType(_LANE_INDEX, span.count), picks))
    dense = load(b, dense_type, address, mask, alignment)
    return b.shuffle_vector(dense, ir.Constant(dense_type, ir.Undefined),
                            ir.Constant(ir.VectorType(_LANE_INDEX, lanes), order))


def _as_pointer_to(b: ir.IRBuilder, address: ir.Value, target: ir.Type) -> ir.Value:
    """`address` as a pointer of type `target` (a vector's pointer, or the opaque pointer
    the masked intrinsics take): a stack buffer's address is a typed `float*`."""
    return address if address.type == target else b.bitcast(address, target)


def load(b: ir.IRBuilder, memory_type: ir.VectorType, address: ir.Value,
         mask: ir.Value | None, alignment: int, reversed: bool = False) -> ir.Value:
    """The `memory_type.count` consecutive elements at `address`, only those of the enabled
    lanes of `mask` when it is given; `reversed`: lane 0 is the last element."""
    if mask is None:
        address = _as_pointer_to(b, address, address.type if address.type.is_opaque
                                 else memory_type.as_pointer())
        value = b.load(address, typ=memory_type, align=alignment)
    else:
        address = _as_pointer_to(b, address, POINTER)
        intrinsic = declare_intrinsic(
            b.module, "llvm.masked.load", [memory_type, POINTER],
            ir.FunctionType(memory_type, [POINTER, _ALIGNMENT, mask.type, memory_type]))
        value = b.call(intrinsic, [address, ir.Constant(_ALIGNMENT, alignment),
                                   reverse(b, mask) if reversed else mask,
                                   ir.Constant(memory_type, None)])
    return reverse(b, value) if reversed else value


def store(b: ir.IRBuilder, value: ir.Value, address: ir.Value, mask: ir.Value | None,
          alignment: int, reversed: bool = False) -> None:
    """Write the lanes of `value` to consecutive elements at `address`, only the enabled
    lanes of `mask` when it is given; `reversed`: lane 0 goes to the last element."""
    if reversed:
        value = reverse(b, value)
        mask = None if mask is None else reverse(b, mask)
    if mask is None:
        address = _as_pointer_to(b, address, address.type if address.type.is_opaque
                                 else value.type.as_pointer())
        b.store(value, address, align=alignment)
        return
    address = _as_pointer_to(b, address, POINTER)
    intrinsic = declare_intrinsic(
        b.module, "llvm.masked.store", [value.type, POINTER],
        ir.FunctionType(ir.VoidType(), [value.type, POINTER, _ALIGNMENT, mask.type]))
    b.call(intrinsic, [value, address, ir.Constant(_ALIGNMENT, alignment), mask])


def gather(b: ir.IRBuilder, memory_type: ir.VectorType, addresses: ir.Value,
           mask: ir.Value | None, alignment: int) -> ir.Value:
    """The element at each lane's address in `addresses`, for the enabled lanes of `mask`
    (every lane when it is None); disabled lanes are zero."""
    if mask is None:
        return _gather_lane_by_lane(b, memory_type, addresses, alignment)
    with b.if_else(_every_lane(b, mask), likely=True) as (every_lane, some_lanes):
        with every_lane:
            whole = _gather_lane_by_lane(b, memory_type, addresses, alignment)
            whole_block = b.block
        with some_lanes:
            intrinsic = declare_intrinsic(
                b.module, "llvm.masked.gather", [memory_type, addresses.type],
                ir.FunctionType(memory_type,
                                [addresses.type, _ALIGNMENT, mask.type, memory_type]))
            partial = b.call(intrinsic, [addresses, ir.Constant(_ALIGNMENT, alignment), mask,
                                         ir.Constant(memory_type, None)])
            partial_block = b.block
    result = b.phi(memory_type)
    result.add_incoming(whole, whole_block)
    result.add_incoming(partial, partial_block)
    return result


def scatter(b: ir.IRBuilder, value: ir.Value, addresses: ir.Value, mask: ir.Value | None,
            alignment: int) -> None:
    """Write each lane of `value` to that lane's address in `addresses`, in lane order, for
    the enabled lanes of `mask` (every lane when it is None)."""
    if mask is None:
        _scatter_lane_by_lane(b, value, addresses, alignment)
        return
    with b.if_else(_every_lane(b, mask), likely=True) as (every_lane, some_lanes):
        with every_lane:
            _scatter_lane_by_lane(b, value, addresses, alignment)
        with some_lanes:
            intrinsic = declare_intrinsic(
                b.module, "llvm.masked.scatter", [value.type, addresses.type],
                ir.FunctionType(ir.VoidType(),
                                [value.type, addresses.type, _ALIGNMENT, mask.type]))
            b.call(intrinsic, [value, addresses, ir.Constant(_ALIGNMENT, alignment), mask])


def _every_lane(b: ir.IRBuilder, mask: ir.Value) -> ir.Value:
    """Whether `mask` enables all of its lanes (one scalar compare of its bits)."""
    bits = b.bitcast(mask, ir.IntType(mask.type.count))
    return b.icmp_unsigned("==", bits, ir.Constant(bits.type, -1))


def _gather_lane_by_lane(b: ir.IRBuilder, memory_type: ir.VectorType, addresses: ir.Value,
                         alignment: int) -> ir.Value:
    result = ir.Constant(memory_type, None)
    for lane in range(memory_type.count):
        index = ir.Constant(_LANE_INDEX, lane)
        element = b.load(b.extract_element(addresses, index), typ=memory_type.element,
                         align=alignment)
        result = b.insert_element(result, element, index)
    return result


def _scatter_lane_by_lane(b: ir.IRBuilder, value: ir.Value, addresses: ir.Value,
                          alignment: int) -> None:
    for lane in range(value.type.count):
        index = ir.Constant(_LANE_INDEX, lane)
        b.store(b.extract_element(value, index), b.extract_element(addresses, index),
                align=alignment)


# ---------------------------------------------------------------------------------- helpers


def _llvm_vector(t: Type) -> ir.VectorType:
    vector = value_type(t)
    if not isinstance(vector, ir.VectorType):
        raise InternalError(f"expected a vector type, got {t}")
    return vector


def _python_value(t: Type, value: object) -> int | float:
    return float(value) if t.is_float else int(value)
