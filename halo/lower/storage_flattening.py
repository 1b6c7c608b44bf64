"""Storage flattening: multi-dimensional Funcs and inputs become flat buffers.

Input: Realize/Provide/Call(FUNC or INPUT) with coordinates, outermost first. Output:
Allocate/Store/Load with a flat element index  sum((c_i - min_i) * stride_i).
  * inputs: min 0, strides `inp.stride.{i}` (arguments), 1 in the last dimension;
  * outputs: mins `out.min.{i}`, strides `out.stride.{i}` (arguments), 1 in the last
    dimension;
  * Funcs with storage of their own: dense row-major (the last dimension is contiguous;
    `reorder_storage` picks another order of the dimensions, outermost first, and the
    one it names last is contiguous), mins `f.min.{i}` from bounds inference, and each
    stride written out in the index as the product of the later stored extents, where
    the backend computes it in 64 bits as it does every index (a let would hold it in an
    int32, which a buffer of more than 2**31 elements overflows). They go on the stack
    when `store_in` says "stack"/"local" or, by default, when the size is a small
    constant or has a small constant upper bound (then sized by it: a tile clipped at
    the image's edge); "global" and "shared" (on the CPU) mean the heap. A stack buffer
    is sized by a constant upper bound of each extent where one exists (a tile's region
    is at most the tile), else by the extent itself: an
    `Allocate` in "stack" of a size known only when it runs, which the backend puts on
    the stack when it is small and on the heap when it isn't (as Halide does); a bound
    past a megabyte, looser than what runs, is dropped for the same run-time size, and a
    constant size past it goes on the heap (a thread's stack is a few megabytes). On a GPU
    target, "stack" means a thread's registers and "shared" (a GPU block's shared memory,
    which `gpu_levels` chose) keeps its scope, and so does a warp array ("warp", which
    `block_registers` made); they need a constant upper bound. A shared
    buffer's rows of a multiple of 32 bytes are padded by 16 bytes (`_padded_rows`:
    no bank conflicts down a column or in a tensor-core tile).
"""
from __future__ import annotations

from halo.analysis.interval import Interval, bounds_of_expr
from halo.analysis.simplify import simplify
from halo.analysis.upper_bound import constant_upper_bound
from halo.errors import ScheduleError
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.printer import expr_to_str
from halo.ir.substitute import expand_lets
from halo.ir.visitor import IRMutator
from halo.lower.context import LowerContext
from halo.target import TargetKind

_STACK_BYTES = 16 * 1024  # small constant-size buffers live on the stack, in registers if tiny
# A host stack buffer whose constant bound is larger than this is sized at run time
# instead, and one whose constant size is larger goes on the heap (a thread's stack is a
# few megabytes).
_LARGE_STACK_BYTES = 1024 * 1024


def storage_flattening(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    return _Flatten(ctx).mutate(stmt)


_INT32_MAX = 2**31 - 1
# 32 banks of 4 bytes: rows a multiple of 32 bytes apart start on one of only 4 banks
_BANK_ROW_BYTES = 32
_ROW_PAD_BYTES = 16


def _index(name: str, args: tuple[n.Expr, ...], mins: tuple[n.Expr, ...] | None,
           strides: tuple[n.Expr, ...] | None) -> n.Expr:
    index: n.Expr | None = None
    for i, a in enumerate(args):
        offset = n.Sub(a, mins[i]) if mins is not None else a
        # Inputs and outputs are contiguous in their last dimension (the Kernel makes
        # sure), so neighbouring x are neighbouring elements and vector accesses are
        # dense; a Func's own buffer has its strides (1 in the dimension stored last).
        last = i == len(args) - 1 if strides is None else strides[i] == const(1)
        stride = strides[i] if strides is not None else n.Var(f"{name}.stride.{i}")
        term = offset if last else n.Mul(offset, stride)
        index = term if index is None else n.Add(index, term)
    return index if index is not None else const(0)



class _Flatten(IRMutator):
    def __init__(self, ctx: LowerContext):
        self.ctx = ctx
        self.mins: dict[str, tuple[n.Expr, ...]] = {}  # Func -> mins of its storage
        self.strides: dict[str, tuple[n.Expr, ...]] = {}  # Func -> strides of its storage
        self.loops: dict[str, Interval] = {}  # enclosing loops of constant range
        self.lets: dict[str, n.Expr] = {}  # the enclosing lets, to see through extents

    def visit_For(self, loop: n.For) -> n.Stmt:
        lo, extent = (simplify(expand_lets(e, self.lets)) for e in (loop.min, loop.extent))
        if not (isinstance(lo, n.Const) and isinstance(extent, n.Const)):
            return self.mutate_children(loop)
        outer = self.loops.get(loop.name)
        self.loops[loop.name] = Interval(lo, const(lo.value + extent.value - 1))
        out = self.mutate_children(loop)
        if outer is None:
            del self.loops[loop.name]
        else:
            self.loops[loop.name] = outer
        return out

    def visit_LetStmt(self, let: n.LetStmt) -> n.Stmt:
        outer = self.lets.get(let.name)
        self.lets[let.name] = let.value
        out = self.mutate_children(let)
        if outer is None:  # the same name may be bound again in another branch
            del self.lets[let.name]
        else:
            self.lets[let.name] = outer
        return out

    def _mins(self, name: str) -> tuple[n.Expr, ...] | None:
        if name in self.mins:
            return self.mins[name]
        if name in self.ctx.outputs:
            dims = self.ctx.env.funcs[name].dimensions
            return tuple(n.Var(f"{name}.min.{i}") for i in range(dims))
        return None  # an input: starts at 0

    def visit_Provide(self, p: n.Provide) -> n.Stmt:
        p = self.mutate_children(p)
        return n.Store(p.name, _index(p.name, p.args, self._mins(p.name),
                                      self.strides.get(p.name)), p.value)

    def visit_Call(self, c: n.Call) -> n.Expr:
        c = self.mutate_children(c)
        if c.kind in (n.CallKind.MATH, n.CallKind.INTRINSIC):
            return c
        return n.Load(c.type, c.name, _index(c.name, c.args, self._mins(c.name),
                                             self.strides.get(c.name)))

    def visit_TensorCall(self, t: n.TensorCall) -> n.Stmt:
        """Each operand's element becomes a Load of its flat index (an address), and its
        strides along every dimension of its buffer are recorded, outermost first."""
        operands = tuple(self.mutate(o) for o in t.operands)
        strides = []
        for o in t.operands:
            known = self.strides.get(o.name)
            last = len(o.args) - 1
            if known is not None and known[last] != const(1):
                raise ScheduleError(
                    f"{o.name}.reorder_storage(...): {o.name} is an operand of intrinsic "
                    f"{t.intrinsic.name}, which reads its last dimension contiguously, but "
                    f"{o.name} is stored with another dimension last; leave out "
                    "reorder_storage, or tensorize a copy stored as defined")
            strides.append(tuple(const(1) if i == last else known[i] if known is not None
                                 else n.Var(f"{o.name}.stride.{i}") for i in range(last + 1)))
        return n.TensorCall(t.name, t.intrinsic, t.part, t.operand_names, operands,
                            tuple(strides))

    def visit_Realize(self, r: n.Realize) -> n.Stmt:
        extents = [simplify(ext) for _, ext in r.bounds]
        host = self.ctx.target.kind is not TargetKind.CUDA
        shared = r.scope == "shared" and not host
        on_stack = r.scope in ("stack", "local", "warp")
        if on_stack or shared:
            bounded = [self._stack_extent(r, i, ext) for i, ext in enumerate(extents)]
            # A constant bound far above what runs (a clamp the bound can't see through)
            # would put megabytes on the stack: on the host, size it when it runs instead.
            if not host or _bytes(bounded, r.type) <= _LARGE_STACK_BYTES:
                extents = bounded
        elif r.scope == "auto" and host:
            # A small buffer whose size changes (a tile clipped at the image's edge) is
            # sized by its constant bound, as Halide does, and so lives on the stack: in
            # an inner loop, a heap allocation each iteration costs more than its work.
            bounded = [self._stack_extent(r, i, ext) for i, ext in enumerate(extents)]
            if 0 < _bytes(bounded, r.type) <= _STACK_BYTES:
                extents = bounded
        # The dimensions as stored, outermost first (`reorder_storage`; else as defined).
        order = self._storage_order(r)
        extents = [extents[d] for d in order]
        if shared:
            extents = _padded_rows(extents, r.type.bytes)
        # stored[k] is the product of the stored extents after k; stored[-1] is the size.
        stored: list[n.Expr] = [const(1)]
        for k in reversed(range(len(order))):
            self._check_constant_factors(r, extents[k:])
            stored.insert(0, simplify(n.Mul(extents[k], stored[0])))
        size = stored.pop(0)
        strides = [const(1)] * len(order)
        for k, d in enumerate(order):
            strides[d] = stored[k]
        self.mins[r.name] = tuple(lo for lo, _ in r.bounds)
        self.strides[r.name] = tuple(strides)
        body = self.mutate(r.body)
        if shared or r.scope == "warp":  # a warp array: block_registers.py
            scope = r.scope
        elif on_stack:
            huge = host and _bytes([size], r.type) > _LARGE_STACK_BYTES
            scope = "heap" if huge else "stack"
        else:
            small = isinstance(size, n.Const) and size.value * r.type.bytes <= _STACK_BYTES
            scope = "stack" if r.scope == "auto" and small else "heap"
        return n.Allocate(r.name, r.type, size, body, scope)

    def _storage_order(self, r: n.Realize) -> list[int]:
        f = self.ctx.env.funcs.get(r.name)
        order = f.schedule.storage_order if f is not None else None
        if order is None:
            return list(range(len(r.bounds)))
        args = [a.name for a in f.args]
        return [args.index(d) for d in order]

    def _check_constant_factors(self, r: n.Realize, extents: list[n.Expr]) -> None:
        """The constant extents among `extents` multiply to an int32 (the simplifier folds
        their product into one constant, which would wrap)."""
        product = 1
        for e in extents:
            if isinstance(e, n.Const):
                product *= max(int(e.value), 0)
        if product > _INT32_MAX:
            f = self.ctx.env.funcs[r.name]
            raise ScheduleError(
                f"{r.name}: its storage of constant extents "
                f"{[expr_to_str(e) for e in extents]} (dimensions {len(r.bounds) - len(extents)}"
                f" to {f.dimensions - 1}) holds {product} elements, more than 2**31 - 1, the "
                f"most halo allocates with constant sizes; compute {r.name} at an inner loop "
                f"level (compute_at) so it stores a smaller region")

    def _stack_extent(self, r: n.Realize, i: int, extent: n.Expr) -> n.Expr:
        """A stack buffer is sized by a constant upper bound of each extent (a tile's
        region is at most the tile, even where the edge of the image clips it), else on
        the host by the extent itself (its size is then known only when it runs); GPU
        registers and shared memory need the constant."""
        if isinstance(extent, n.Const):
            return extent
        expanded = simplify(expand_lets(extent, self.lets))
        bound = constant_upper_bound(expanded)
        if bound is None and self.loops:
            # over the enclosing loops of constant range (an unrolled or vectorized
            # loop's index, e.g. the extent x_i - 1 of a region clipped by a shifted tail)
            upper = bounds_of_expr(expanded, self.loops).max
            bound = None if upper is None else constant_upper_bound(upper)
        if bound is not None:
            return const(max(bound, 0))
        if self.ctx.target.kind is not TargetKind.CUDA:
            return extent
        f = self.ctx.env.funcs[r.name]
        dim = f.args[i].name if i < len(f.args) else str(i)
        raise ScheduleError(
            f"{r.name}.store_in({r.scope!r}): a {r.scope} buffer on the GPU needs a constant "
            f"size, but dimension {i} ({dim}) has extent {expr_to_str(expanded)}, which halo "
            f"can't bound by a constant; give it one with {r.name}.bound({dim}, min, "
            f"extent), or compute {r.name} at a loop level where that dimension's "
            "region is a constant-size tile (compute_at inside a split loop)")


def _bytes(extents: list[n.Expr], type_: n.Type) -> int:
    """The bytes of a buffer of these extents; 0 unless every extent is a constant."""
    if not all(isinstance(e, n.Const) for e in extents):
        return 0
    size = type_.bytes
    for e in extents:
        size *= max(int(e.value), 0)
    return size


def _padded_rows(extents: list[n.Expr], element_bytes: int) -> list[n.Expr]:
    """A shared buffer of two or more dimensions whose rows are a multiple of 32 bytes
    gets 16 bytes more a row (the stride, not the extent), so that the rows of a column,
    or of a 16 x 16 tile that tensor-core loads read, fall on different banks (the
    lanes of a warp then don't wait on one bank in turn); 16 bytes keep every tile as
    aligned as tensor-core loads want it."""
    last = extents[-1] if extents else None
    if len(extents) < 2 or not isinstance(last, n.Const) or element_bytes > _ROW_PAD_BYTES:
        return extents
    if (int(last.value) * element_bytes) % _BANK_ROW_BYTES:
        return extents
    return [*extents[:-1], const(int(last.value) + _ROW_PAD_BYTES // element_bytes)]
