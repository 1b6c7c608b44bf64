"""Atomic updates: `Atomic(Store(buf, i, value))`, where `value` reads `buf` only at `i`,
as one indivisible read-modify-write of element `i`.

When `value` is `buf[i] op e` (or `e op buf[i]` for commutative ops) with an operator
LLVM has an `atomicrmw` for, that one instruction does it; otherwise a compare-and-swap
loop reads the element, computes `value` from what it read, and retries until no other
thread changed the element in between. Monotonic ordering is enough: the updates only
need to be indivisible; the end of a parallel loop orders them before any reader.
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from halo.errors import InternalError
from halo.ir import nodes as n
from halo.ir.printer import stmt_to_str
from halo.ir.types import Type
from halo.ir.visitor import rewrite, walk

_ORDER = "monotonic"
_OLD = "atomic.old"  # the element's value the compare-and-swap loop read

# (operator, element kind) -> atomicrmw operation; kind is "int", "uint" or "float"
_RMW = {
    (n.Add, "int"): "add", (n.Add, "uint"): "add", (n.Add, "float"): "fadd",
    (n.Sub, "int"): "sub", (n.Sub, "uint"): "sub", (n.Sub, "float"): "fsub",
    (n.Min, "int"): "min", (n.Min, "uint"): "umin",
    (n.Max, "int"): "max", (n.Max, "uint"): "umax",
}
_COMMUTATIVE = (n.Add, n.Min, n.Max)


def _kind(t: Type) -> str | None:
    if t.is_float:
        return "float" if t.bits in (32, 64) else None
    if t.is_bool:
        return None
    return "int" if t.is_int else "uint"


def _read_modify_write(value: n.Expr, old: n.Load) -> tuple[str, n.Expr] | None:
    """(atomicrmw operation, operand) when `value` is `old op operand`."""
    def free(e: n.Expr) -> bool:
        return not any(isinstance(x, n.Load) and x.name == old.name for x in walk(e))

    kind = _kind(value.type)
    for op in (n.Add, n.Sub, n.Min, n.Max):
        if type(value) is op and (op, kind) in _RMW:
            if value.a == old and free(value.b):
                return _RMW[op, kind], value.b
            if op in _COMMUTATIVE and value.b == old and free(value.a):
                return _RMW[op, kind], value.a
    return None


def emit_atomic_store(builder: ir.IRBuilder, store: n.Store, address: ir.Value,
                      memory: ir.Type, emit_value: Callable[[n.Expr, str, ir.Value], ir.Value]
                      ) -> None:
    """Emit `store` as an atomic update of `address` (an element of type `memory`).
    `emit_value(e, name, v)` emits expression `e` with the scalar `name` bound to `v`."""
    t = store.value.type
    if t.lanes != 1 or store.predicate is not None:
        raise InternalError("an atomic store must be scalar (vectorized atomic updates run "
                            f"lane by lane):\n{stmt_to_str(store)}")
    old = n.Load(t, store.name, store.index)
    for x in walk(store.value):
        if isinstance(x, n.Load) and x.name == store.name and x != old:
            raise InternalError(f"an atomic update reads {store.name} at another "
                                f"element than it writes:\n{stmt_to_str(store)}")
    rmw = _read_modify_write(store.value, old)
    if rmw is not None:
        operation, operand = rmw
        builder.atomic_rmw(operation, address, emit_value(operand, _OLD, None), _ORDER)
        return
    _compare_and_swap_loop(builder, store, old, address, memory, emit_value)


def _compare_and_swap_loop(builder: ir.IRBuilder, store: n.Store, old: n.Load,
                           address: ir.Value, memory: ir.Type, emit_value) -> None:
    """do { seen = *address; new = value(seen) } while (!cmpxchg(address, seen, new))"""
    t = store.value.type
    bits = ir.IntType(t.bytes * 8)
    value = rewrite(store.value, lambda e: n.Var(_OLD, t) if e == old else None)
    first = builder.load_atomic(address, _ORDER, t.bytes, typ=bits)
    preheader = builder.block
    function = builder.function
    loop = function.append_basic_block("atomic.retry")
    done = function.append_basic_block("atomic.done")
    builder.branch(loop)
    builder.position_at_end(loop)
    seen = builder.phi(bits)
    seen.add_incoming(first, preheader)
    seen_value = _from_bits(builder, seen, t, memory)
    new_bits = _to_bits(builder, emit_value(value, _OLD, seen_value), t, bits)
    pair = builder.cmpxchg(address, seen, new_bits, _ORDER, _ORDER)
    seen.add_incoming(builder.extract_value(pair, 0), builder.block)
    builder.cbranch(builder.extract_value(pair, 1), done, loop)
    builder.position_at_end(done)


def _from_bits(builder: ir.IRBuilder, bits: ir.Value, t: Type, memory: ir.Type) -> ir.Value:
    if t.is_bool:
        return builder.trunc(bits, ir.IntType(1))
    return bits if memory == bits.type else builder.bitcast(bits, memory)


def _to_bits(builder: ir.IRBuilder, v: ir.Value, t: Type, bits: ir.IntType) -> ir.Value:
    if t.is_bool:
        return builder.zext(v, bits)
    return v if v.type == bits else builder.bitcast(v, bits)
