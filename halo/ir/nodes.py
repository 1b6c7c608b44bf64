"""The halo loop IR: frozen, slotted dataclasses; `==` is structural.

Semantics (what every backend and the reference interpreter agree on):

* Integers of 8 and 16 bits, and unsigned integers, wrap around on overflow (two's
  complement), at the width of their type. Signed 32- and 64-bit arithmetic must not
  overflow: as in Halide, the simplifier assumes it doesn't (so `(x * 4) // 4 == x` and
  `x + 1 < x + 3`), and its result is unspecified if it does.
* `Div` on integers is floor division and `Mod` is floor modulo (Python: the result of
  `Mod` has the sign of the divisor). Integer division or modulo by zero gives 0.
  `Div` on floats is IEEE division; `Mod` on floats is `a - b * floor(a / b)`.
* Float arithmetic is IEEE and never reassociated, but a product feeding an `Add` or
  `Sub` may be rounded once with it (a fused multiply-add), as in Halide and C compilers
  by default; `Target(strict_float=True)` rounds every operation as NumPy does.
* Comparisons give `bool`. `And`, `Or`, `Xor`, `Not` are logical on `bool` and bitwise
  on integers.
* `Cast` float -> int truncates toward zero and gives 0 for NaN (other out-of-range
  values, infinities included, are undefined);
  int -> narrower int wraps; bool -> number gives 0 or 1; number -> bool is `!= 0`.
* `Select` evaluates both branches (they must be free of side effects and safe to
  evaluate).
* `Min`/`Max` on floats are `np.minimum`/`np.maximum`: NaN if either operand is NaN
  (so `clamp(nan, lo, hi)` and the reductions `maximum`/`minimum` over a NaN are NaN);
  which zero `min(-0.0, 0.0)` gives is unspecified.
* Math `Call`s (`sqrt`, `exp`, `log`, `pow`, `sin`, `cos`, `tanh`, `floor`, `ceil`,
  `round` (half to even), `abs`) take and give floats, except `abs` which is also
  defined on integers.
* `For(name, min, extent, kind, body)` runs `body` for `name` = min, min+1, ...,
  min+extent-1; `min` and `extent` are evaluated once, before the first iteration. An
  extent <= 0 runs nothing. `kind` says how iterations may be executed (serial,
  parallel, vectorized, unrolled); the result must not depend on it.
* `Provide`/`Realize` address a Func by multi-dimensional coordinates (outermost first);
  after storage flattening they become `Store`/`Load`/`Allocate` on flat buffers.
* `Atomic(body)` makes its one update of a Func element indivisible; it doesn't order
  the updates of different iterations (the update must not depend on that order).
* Evaluation order in a `Block` is left to right; `LetStmt` and `Let` evaluate their
  value once.
* `TensorCall` does what the loop nest it replaced did (its intrinsic's spec, proved by
  the tensorize pass), through the intrinsic's own code.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from halo.ir.types import Type, bool_, int32

# ---------------------------------------------------------------------------- expressions


class Expr:
    """Base of expression nodes; every expression has a `.type`."""

    __slots__ = ()
    type: Type


@dataclass(frozen=True, slots=True)
class Const(Expr):
    """A constant of any type: `value` is a Python int (also for bool) or float."""
    type: Type
    value: int | float


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """A named scalar: a loop variable, a let-bound name, a Param, or a buffer field
    such as `inp.extent.0`."""
    name: str
    type: Type = int32


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    type: Type
    value: Expr


class BinaryOp(Expr):
    """Two operands of the same type; the result has that type (`Compare`: bool)."""

    __slots__ = ()
    a: Expr
    b: Expr

    @property
    def type(self) -> Type:
        # Down the chain of first operands in a loop: a sum of thousands of terms nests
        # that deep, and recursing would cost a frame per term.
        a = self.a
        while isinstance(a, BinaryOp) and not isinstance(a, Compare):
            a = a.a
        return a.type


def _binary(name: str, doc: str, base: type = BinaryOp) -> type:
    cls = dataclass(frozen=True, slots=True)(
        type(name, (base,), {"__annotations__": {"a": Expr, "b": Expr}, "__doc__": doc}))
    cls.__module__ = __name__
    return cls


class Compare(BinaryOp):
    __slots__ = ()

    @property
    def type(self) -> Type:
        return bool_.with_lanes(self.a.type.lanes)


Add = _binary("Add", "a + b")
Sub = _binary("Sub", "a - b")
Mul = _binary("Mul", "a * b")
Div = _binary("Div", "a / b (floats) or a // b (integers, floor; x // 0 == 0)")
Mod = _binary("Mod", "a % b (floor modulo; x % 0 == 0)")
Min = _binary("Min", "min(a, b)")
Max = _binary("Max", "max(a, b)")
And = _binary("And", "logical and (bool) or bitwise and (integers)")
Or = _binary("Or", "logical or (bool) or bitwise or (integers)")
Xor = _binary("Xor", "logical xor (bool) or bitwise xor (integers)")
EQ = _binary("EQ", "a == b", Compare)
NE = _binary("NE", "a != b", Compare)
LT = _binary("LT", "a < b (a > b is built as LT(b, a))", Compare)
LE = _binary("LE", "a <= b (a >= b is built as LE(b, a))", Compare)


@dataclass(frozen=True, slots=True)
class Not(Expr):
    a: Expr

    @property
    def type(self) -> Type:
        return self.a.type


@dataclass(frozen=True, slots=True)
class Select(Expr):
    condition: Expr
    true_value: Expr
    false_value: Expr

    @property
    def type(self) -> Type:
        return self.true_value.type


class CallKind(Enum):
    FUNC = "func"    # a halo Func, addressed by coordinates
    INPUT = "input"  # an input buffer (ImageParam or Buffer), addressed by coordinates
    MATH = "math"    # a pure math function: sqrt, exp, ...
    INTRINSIC = "intrinsic"  # a fact for the compiler, e.g. promise_clamped (see below)


@dataclass(frozen=True, slots=True)
class Call(Expr):
    type: Type
    name: str
    args: tuple[Expr, ...]
    kind: CallKind


@dataclass(frozen=True, slots=True)
class Load(Expr):
    """Read element `index` of the flat buffer `name`. With a vector index, one element
    per lane; `predicate` (a bool vector, or None for all lanes) says which lanes read:
    the others are not accessed and their value is unspecified."""
    type: Type
    name: str
    index: Expr
    predicate: Expr | None = None


@dataclass(frozen=True, slots=True)
class Ramp(Expr):
    """The vector base, base + stride, ..., base + (lanes - 1) * stride."""
    base: Expr
    stride: Expr
    lanes: int

    @property
    def type(self) -> Type:
        return self.base.type.with_lanes(self.lanes)


@dataclass(frozen=True, slots=True)
class Broadcast(Expr):
    """The vector with `value` in every one of its `lanes`."""
    value: Expr
    lanes: int

    @property
    def type(self) -> Type:
        return self.value.type.with_lanes(self.lanes)


@dataclass(frozen=True, slots=True)
class Let(Expr):
    name: str
    value: Expr
    body: Expr

    @property
    def type(self) -> Type:
        return self.body.type


# ----------------------------------------------------------------------------- statements


class Stmt:
    __slots__ = ()


class ForKind(Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    # Bound to the GPU grid, block and virtual threads (schedule records; only a GPU
    # target lowers them).
    GPU_BLOCK = "gpu_block"
    GPU_THREAD = "gpu_thread"
    VTHREAD = "vthread"


@dataclass(frozen=True, slots=True)
class For(Stmt):
    name: str
    min: Expr
    extent: Expr
    kind: ForKind
    body: Stmt


@dataclass(frozen=True, slots=True)
class LetStmt(Stmt):
    name: str
    value: Expr
    body: Stmt


@dataclass(frozen=True, slots=True)
class Block(Stmt):
    """Statements run in order. Build with `block(...)`, which flattens and drops empties."""
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class IfThenElse(Stmt):
    condition: Expr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(frozen=True, slots=True)
class Evaluate(Stmt):
    value: Expr


@dataclass(frozen=True, slots=True)
class Provide(Stmt):
    """Store `value` into Func `name` at coordinates `args` (outermost first)."""
    name: str
    value: Expr
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Atomic(Stmt):
    """`body`, one `Provide` (later `Store`) whose value reads its target only at the
    point it writes, runs as one indivisible read-modify-write of that point, so
    iterations running at once never lose each other's updates."""
    body: Stmt


@dataclass(frozen=True, slots=True)
class Realize(Stmt):
    """Storage for Func `name` covering `bounds` ((min, extent) per dimension,
    outermost first) while `body` runs."""
    name: str
    type: Type
    bounds: tuple[tuple[Expr, Expr], ...]
    body: Stmt
    scope: str = "auto"


@dataclass(frozen=True, slots=True)
class ProducerConsumer(Stmt):
    """`produce` computes Func `name`; `consume` is the code that reads it."""
    name: str
    produce: Stmt
    consume: Stmt


@dataclass(frozen=True, slots=True)
class Store(Stmt):
    """Write `value` to element `index` of the flat buffer `name` (one element per lane
    for vectors; only the lanes where `predicate` holds, when it is given)."""
    name: str
    index: Expr
    value: Expr
    predicate: Expr | None = None


@dataclass(frozen=True, slots=True)
class Allocate(Stmt):
    """A flat buffer of `size` elements of `type`, live while `body` runs.
    `scope` is "heap" or "stack" (on a GPU: device memory outside the kernels, a thread's
    registers inside them), or "shared" (the shared memory of a GPU block). On the host, a
    "stack" buffer whose size is not a constant is known only when it runs, and the backend
    may put it on the heap when it is large."""
    name: str
    type: Type
    size: Expr
    body: Stmt
    scope: str = "heap"


@dataclass(frozen=True, slots=True)
class TensorCall(Stmt):
    """Tensor intrinsic `name` (the `halo.Intrinsic` `intrinsic`, whose emitter the backend
    calls) in place of a loop nest that `tensorize` proved computes what its spec does.
    `part` is the spec's definition it runs: "init" (the pure definition of a reduction
    spec), "update" (its reduction) or "emit" (a spec without reduction).
    `operand_names` are the spec's buffers (its output first); `operands` the elements
    of the pipeline's buffers that stand for them at the spec's all-zero coordinates: a
    Call with coordinates before storage flattening, a Load of the flat index after it
    (an address: it is never loaded). `strides` holds, per operand after flattening, its
    strides in elements along each dimension of its buffer, outermost first (the spec's
    dimensions are the last ones; empty before flattening).
    A GPU call that is the last phase of a serial loop may be pipelined with the loop
    (`lower/pipeline_tensor_calls.py`): `ahead` holds its operands at the loop's next
    iteration, `first` is true in the loop's first iteration, `overlap` is the rest of
    the loop's body, to run after the call's first step, and `handoff` what must run
    before the call reads `ahead` (the barrier that used to open the next iteration)."""
    name: str
    intrinsic: object
    part: str
    operand_names: tuple[str, ...]
    operands: tuple[Expr, ...]
    strides: tuple[tuple[Expr, ...], ...] = ()
    ahead: tuple[Expr, ...] = ()
    first: Expr | None = None
    overlap: Stmt | None = None
    handoff: Stmt | None = None


NO_OP = Block(())


def promise_clamped(value: Expr, lo: Expr, hi: Expr, guarded: bool = False) -> Call:
    """`value`, which the compiler promises lies in [lo, hi] wherever it is used (bounds
    inference relies on it; it is removed before code generation). Loop variables rebuilt
    from split loops are wrapped in it: relaxing the loops separately loses the link
    between a range's start and its extent, which the promise restores. guarded: the
    promise holds only where a guard lets the stage's body run (a guarded tail's loop runs
    past it); a copy of it in a region is then a clamp (bounds_inference.py)."""
    args = (value, lo, hi, *([const(True, bool_)] if guarded else []))
    return Call(value.type, "promise_clamped", args, CallKind.INTRINSIC)


def is_promise(e: Expr) -> bool:
    """Whether `e` is a `promise_clamped` call (guarded or not)."""
    return isinstance(e, Call) and e.name == "promise_clamped"


def is_guarded_promise(e: Expr) -> bool:
    """Whether `e` is a `promise_clamped(..., guarded=True)` call."""
    return is_promise(e) and len(e.args) == 4


def whole_tiles(condition: Expr) -> Call:
    """`condition`, marking an IfThenElse whose then branch is its else branch with every
    tile whole (the clamps of shift_inwards splits dropped, which `condition` makes
    no-ops). Both touch the same points whenever the then branch runs, so region
    analysis outside the IfThenElse looks at the else branch only; partition_loops
    leaves the else branch (for small extents only) as it is and removes the mark."""
    return Call(condition.type, "whole_tiles", (condition,), CallKind.INTRINSIC)


def is_whole_tiles(condition: Expr) -> bool:
    return isinstance(condition, Call) and condition.name == "whole_tiles"


def block(*stmts: Stmt | None) -> Stmt:
    """A Block of `stmts`, flattening nested Blocks and dropping None and empty Blocks."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, Block):
            flat.extend(s.stmts)
        else:
            flat.append(s)
    return flat[0] if len(flat) == 1 else Block(tuple(flat))


def const(value: int | float | bool, type: Type = int32) -> Const:
    """A constant of `type`, with the value normalized to the type (bool -> 0/1,
    integers wrapped to the width)."""
    if type.is_float:
        return Const(type, float(value))
    v = int(value)
    if type.is_bool:
        return Const(type, 1 if v else 0)
    bits = type.bits
    v &= (1 << bits) - 1
    if type.is_int and v >= 1 << (bits - 1):
        v -= 1 << bits
    return Const(type, v)
