"""Registers for a Func stored at a GPU block level: each thread keeps its own part.

A Func computed at a GPU block loop lives in the block's shared memory by default. With
`store_in("local")` (or `cache_write("local")`) it lives in registers instead, when every
thread only ever touches a part of it that no other thread touches: the accumulators of a
matrix multiply, initialized, updated across a serial k loop that stages operands in
shared memory, and copied out, each stage with the same thread tiling (Halide's
`MemoryType::Register` at block level):

    realize acc[m:m+64, n:n+64] in local           realize acc[0:4, 0:4] in local
      for ty: for tx: for iv, jv:                     for ty: for tx: for iv, jv:
        acc[m + 4*ty + iv, ..] = 0               ->      acc[iv, jv] = 0
      for ko: (A, B to shared); for ty: for tx: ...      for ko: ...; acc[iv, jv] += ..
      for ty: for tx: ... C[..] = acc[m + 4*ty + iv, ..]   ... C[..] = acc[iv, jv]

For each access (stores of every stage, loads by its consumers) the pass bounds the
indices it touches per thread: every thread loop of the access's nest stands for its
thread index along its axis (the innermost is x, as the block's threads are fused), and
every other loop inside the Func's storage varies over its range. The Func is private to
threads when

* every access runs in thread loops of the same axes and extents (so the threads that
  read a point are those that wrote it),
* the box starts at the same place for every access (`m + 4*ty` above), a linear function
  of the thread indices plus what doesn't depend on them, and has a constant size,
* the boxes of different threads don't overlap: along some dimension, each thread axis
  steps the box by at least its size (times the extent of the axes that step it less).

Then the buffer shrinks to one box (the largest of the accesses') and every index is
taken relative to the box's start: after unrolling, constants, which keep it in
registers. Otherwise it's a ScheduleError that says which condition fails.

Warp arrays: where every access is a warp-scoped tensor call (`halo.intrinsics`'
tensor-core accumulators), a "thread" of the schedule is a warp, and an access is the
box of the operand the call's spec touches. The warp's box becomes a "warp" array:
spread over its 32 lanes, each lane holding the part the intrinsics' layout gives it
(`backends/cuda/tensor_calls.py`), so a matrix multiply's accumulators stay in the
lanes' registers across its k loop. Mixing tensor calls and element-by-element access
(a consumer left untensorized, a tail's loops) is refused. Runs after
gpu_levels (which allows "local" at block level and leaves the proof here), before
storage flattening, for GPU targets only.
"""
from __future__ import annotations

from dataclasses import dataclass

from halo.analysis.interval import Interval, bounds_of_expr
from halo.analysis.simplify import simplify
from halo.analysis.upper_bound import constant_upper_bound
from halo.errors import InternalError, ScheduleError
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.printer import expr_to_str
from halo.ir.substitute import expand_lets, substitute
from halo.ir.types import int32
from halo.ir.visitor import FuncAccessMutator, ScopedMutator, child_nodes, walk
from halo.lower.bounds_inference import RegionCheck
from halo.lower.context import LowerContext

_AXES = "xyz"


def block_registers(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    """Each block-level Func stored in "local" memory as per-thread registers."""
    return _Find(ctx).mutate(stmt)


def _thread(axis: int) -> n.Var:
    """The thread index along `axis` (0 is x), as boxes are written."""
    return n.Var(f"thread.{_AXES[axis]}", int32)


@dataclass(frozen=True)
class _Access:
    """One access of the buffer: its indices, with the lets inside the storage expanded,
    and the loops inside the storage around it, outermost first. A warp-scoped tensor
    call's operand: `extents` it touches from there along each dimension."""
    args: tuple[n.Expr, ...]
    loops: tuple[n.For, ...]
    lets: dict[str, n.Expr]
    write: bool
    extents: tuple[int, ...] | None = None

    def threads(self) -> list[n.For]:
        """Its thread loops, x first."""
        return [loop for loop in reversed(self.loops) if loop.kind is n.ForKind.GPU_THREAD]


class _Find(ScopedMutator):
    """Finds Realizes in "local" memory at block level (inside block loops, outside
    thread loops) and makes each private to threads."""

    def __init__(self, ctx: LowerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.in_block = False
        self.in_threads = False

    def visit_For(self, loop: n.For) -> n.Stmt:
        outer = self.in_block, self.in_threads
        self.in_block |= loop.kind is n.ForKind.GPU_BLOCK
        self.in_threads |= loop.kind is n.ForKind.GPU_THREAD
        try:
            return super().visit_For(loop)
        finally:
            self.in_block, self.in_threads = outer

    def visit_Realize(self, r: n.Realize) -> n.Stmt:
        r = self.mutate_children(r)
        if r.scope != "local" or not self.in_block or self.in_threads:
            return r
        tails = _WarpTails(r.name, self.lets, self.loops)
        r = n.Realize(r.name, r.type, r.bounds, tails.mutate(r.body), r.scope)
        out = _Privatize(r, self.lets).realize()
        if tails.checks:
            if out.scope != "warp":
                raise InternalError(f"{r.name}: tails dropped for a warp array it isn't")
            self.ctx.checks.extend(tails.checks)
        return out

    def visit_IfThenElse(self, s: n.IfThenElse) -> n.Stmt:
        """The copy of a nest for regions smaller than its shift_inwards tiles can't keep
        a warp array (its tails' loops touch it element by element) where the copy with
        whole tiles does: those small regions are refused before running."""
        if not n.is_whole_tiles(s.condition) or s.else_case is None:
            return self.mutate_children(s)
        then_case = self.mutate(s.then_case)
        try:
            else_case = self.mutate(s.else_case)
        except ScheduleError:
            warp = [x.name for x in walk(then_case) if isinstance(x, n.Realize)
                    and x.scope == "warp"]
            if not warp:
                raise
            checks = _checks(
                simplify(expand_lets(s.condition.args[0], self.lets)), {}, warp[0],
                "every shift_inwards tile around it whole, so the region realized must be "
                "at least a tile along each such dimension", "realize a larger output")
            if checks is None:
                raise
            self.ctx.checks.extend(checks)
            else_case = None
        return n.IfThenElse(s.condition, then_case, else_case)


class _Privatize:
    def __init__(self, r: n.Realize, lets: dict[str, n.Expr]):
        """`lets`: those around the Realize, as written (an rfactor intermediate computed
        beside the Func has them define the Func's stages' boxes there)."""
        self.r, self.outer_lets = r, lets
        self.accesses: list[_Access] = []
        expanded: dict[str, n.Expr] = {}
        for name, value in lets.items():  # (outermost first)
            expanded[name] = expand_lets(value, expanded)
        self._collect(r.body, (), expanded)

    def _refuse(self, why: str) -> ScheduleError:
        return ScheduleError(
            f"{self.r.name}.store_in('local'): {self.r.name} is computed at a GPU block loop, "
            f"where registers hold it only if each thread reads and writes a part of its own; "
            f"{why}. Give its stages and its consumers the same thread tiling (the same "
            f"gpu_threads splits, tail='guard' where a split doesn't divide its extent), or "
            f"store it in shared memory (leave out store_in)")

    # ----------------------------------------------------------------------- the accesses

    def _collect(self, s: n.Stmt, loops: tuple[n.For, ...], lets: dict[str, n.Expr]) -> None:
        name = self.r.name
        kids = child_nodes(s)
        for e in (k for k in kids if isinstance(k, n.Expr) and  # its own expressions
                  not isinstance(s, n.TensorCall)):  # (whose operands are boxes: below)
            for c in walk(e):
                if isinstance(c, n.Call) and c.name == name and c.kind is n.CallKind.FUNC:
                    self._add(c.args, loops, lets, write=False)
        match s:
            case n.Provide(name=p, args=args) if p == name:
                self._add(args, loops, lets, write=True)
            case n.TensorCall() if any(o.name == name for o in s.operands):
                if getattr(s.intrinsic, "scope", "thread") != "warp":
                    raise self._refuse(f"tensor intrinsic {s.name} reads or writes it")
                for o, operand in zip(s.operands, s.operand_names, strict=True):
                    if o.name == name:
                        extents = _operand_extents(s.intrinsic, operand, len(o.args))
                        self.accesses.append(_Access(
                            tuple(expand_lets(a, lets) for a in o.args), loops, lets,
                            write=operand == s.operand_names[0], extents=extents))
            case n.For(body=body):
                self._collect(body, (*loops, s), lets)
            case n.LetStmt(name=let, value=value, body=body):
                self._collect(body, loops, {**lets, let: expand_lets(value, lets)})
            case _:
                for child in kids:
                    if isinstance(child, n.Stmt):
                        self._collect(child, loops, lets)

    def _add(self, args, loops, lets, write: bool) -> None:
        self.accesses.append(_Access(tuple(expand_lets(a, lets) for a in args), loops,
                                     lets, write))

    # ------------------------------------------------------------------------- the proof

    def realize(self) -> n.Stmt:
        if not self.accesses:
            return self.r
        warp = [a.extents is not None for a in self.accesses]
        if any(warp) and not all(warp):
            raise ScheduleError(
                f"{self.r.name}.store_in('local'): {self.r.name} is computed at a GPU block "
                "loop and read or written by warp-scoped tensor intrinsics, which keep it "
                "spread over a warp's lanes (a warp array), and by code element by element "
                "too (a consumer that isn't tensorized, or the loops a tail guard keeps for "
                "tiles the intrinsic can't take); tensorize every access (the copy out with "
                "halo.intrinsics.mma_f32_store), with tiles that divide the extents or shift "
                "inwards, or store it in shared memory (leave out store_in)")
        shape = self._thread_shape(self.accesses[0])
        for a in self.accesses[1:]:
            if self._thread_shape(a) != shape:
                raise self._refuse(
                    f"one access runs in threads {_shown(self._thread_shape(a))} and another "
                    f"in threads {_shown(shape)}")
        ranges = {_thread(axis).name: Interval(const(0), const(extent - 1))
                  for axis, extent in shape.items()}
        boxes = [self._box(a, ranges) for a in self.accesses]
        starts = boxes[0][0]
        for (other, _), a in zip(boxes[1:], self.accesses[1:], strict=True):
            for d, (x, y) in enumerate(zip(starts, other, strict=True)):
                if _simplified(n.Sub(x, y), ranges) != const(0):
                    raise self._refuse(
                        f"along dimension {d}, a thread's part starts at "
                        f"{expr_to_str(x)} for one access and at {expr_to_str(y)} for "
                        f"{'a store' if a.write else 'a load'}")
        sizes = [max(box[1][d] for box in boxes) for d in range(len(starts))]
        self._check_disjoint(starts, sizes, shape)
        body = _Rewrite(self.r.name, starts, self.outer_lets).mutate(self.r.body)
        bounds = tuple((const(0), const(size)) for size in sizes)
        return n.Realize(self.r.name, self.r.type, bounds, body,
                         "warp" if all(warp) else self.r.scope)

    def _thread_shape(self, a: _Access) -> dict[int, int]:
        """Axis -> the thread loop's constant extent bound, for axes of more than one."""
        shape: dict[int, int] = {}
        for axis, loop in enumerate(a.threads()):
            bound = constant_upper_bound(simplify(expand_lets(loop.extent, a.lets)))
            if bound is None:
                raise self._refuse(f"thread loop {loop.name} has no constant extent")
            if bound > 1:
                shape[axis] = bound
        return shape

    def _box(self, a: _Access, ranges: dict[str, Interval]) -> tuple[list[n.Expr], list[int]]:
        """Where the part of the buffer a thread touches in access `a` starts, and its
        constant size, per dimension."""
        threads = {loop.name: n.Add(simplify(expand_lets(loop.min, a.lets)), _thread(axis))
                   for axis, loop in enumerate(a.threads())}
        others = {}
        for loop in a.loops:
            if loop.name in threads:
                continue
            lo = substitute(expand_lets(loop.min, a.lets), threads)
            extent = substitute(expand_lets(loop.extent, a.lets), threads)
            others[loop.name] = Interval(lo, simplify(n.Sub(n.Add(lo, extent), const(1))))
        starts, sizes = [], []
        for d, arg in enumerate(a.args):
            box = bounds_of_expr(substitute(arg, threads), others)
            if box.min is None or box.max is None:
                raise self._refuse(f"halo can't bound a thread's indices along dimension {d} "
                                   f"({expr_to_str(arg)})")
            start = _simplified(box.min, ranges)
            size = constant_upper_bound(_simplified(n.Sub(box.max, box.min), ranges))
            if size is not None and a.extents is not None:
                size += a.extents[d] - 1
            if size is None:
                raise self._refuse(f"a thread's part along dimension {d} has no constant "
                                   f"size ({expr_to_str(arg)})")
            starts.append(start)
            sizes.append(size + 1)
        return starts, sizes

    def _check_disjoint(self, starts: list[n.Expr], sizes: list[int],
                        shape: dict[int, int]) -> None:
        """Different threads' boxes don't overlap: in some dimension, each thread axis
        moves the start by at least the box's size times the extents of the axes that
        move it by less (a dimension may be shared by several axes, 4 * tx + 64 * ty)."""
        stepped: set[int] = set()
        for d, start in enumerate(starts):
            steps = []
            for axis, extent in shape.items():
                step = _linear_step(start, axis, shape)
                if step is None:
                    raise self._refuse(f"along dimension {d}, a thread's part starts at "
                                       f"{expr_to_str(start)}, not a linear function of "
                                       "the thread indices")
                if step:
                    steps.append((abs(step), extent, axis))
            covered = sizes[d]
            for step, extent, axis in sorted(steps):
                if step < covered:
                    raise self._refuse(
                        f"the parts of neighbouring threads along {_AXES[axis]} overlap: "
                        f"along dimension {d} a part starts at {expr_to_str(start)} and "
                        f"holds {sizes[d]}")
                covered = step * extent
                stepped.add(axis)
        for axis in shape:
            if axis not in stepped:
                raise self._refuse(f"every thread along {_AXES[axis]} touches the same part")


class _WarpTails(ScopedMutator):
    """In the Realize of a block-level "local" Func `name`: a warp-scoped tensor call on
    it under a tile guard, `if whole: call else: loops`, keeps the call only (the loops
    would touch it element by element, which a warp array can't take), and `checks`
    gets a check before running that the guard holds for every tile."""

    def __init__(self, name: str, lets: dict[str, n.Expr], loops: list[n.For]):
        super().__init__(loops, lets)
        self.name = name
        self.checks: list[RegionCheck] = []

    def visit_IfThenElse(self, s: n.IfThenElse) -> n.Stmt:
        call = s.then_case
        if not (isinstance(call, n.TensorCall) and call.intrinsic.scope == "warp"
                and any(o.name == self.name for o in call.operands)
                and s.else_case is not None and self._elementwise(s.else_case)):
            return self.mutate_children(s)
        ranges = {}
        for loop in self.loops:
            lo = expand_lets(loop.min, self.lets)
            ranges[loop.name] = Interval(
                lo, simplify(n.Sub(n.Add(lo, expand_lets(loop.extent, self.lets)), const(1))))
        checks = _checks(simplify(expand_lets(s.condition, self.lets)), ranges, self.name,
                         f"every call of {call.name} on a whole tile", "make the extents "
                         "multiples of the tiles (a reduction's too: pad it)")
        if checks is None:
            return s  # element by element after all: _Privatize refuses it
        self.checks += checks
        return call

    def _elementwise(self, s: n.Stmt) -> bool:
        return any(isinstance(x, (n.Provide, n.Call)) and x.name == self.name
                   for x in walk(s))


def _checks(condition: n.Expr, ranges: dict[str, Interval], name: str, needs: str,
            instead: str) -> list[RegionCheck] | None:
    """Checks before running that `condition` (comparisons `a <= b` or `a < b`, joined
    by and) holds for every value of the loop variables in `ranges`: that the largest
    `a - b` is at most 0 (less than 0), as a range [d, d] that must lie in [d - 1, 0].
    None where halo can't bound it."""
    if isinstance(condition, n.And):
        a, b = (_checks(c, ranges, name, needs, instead) for c in (condition.a, condition.b))
        return None if a is None or b is None else [*a, *b]
    if not isinstance(condition, (n.LE, n.LT)):
        return None
    slack = const(1 if isinstance(condition, n.LT) else 0)
    largest = bounds_of_expr(n.Add(n.Sub(condition.a, condition.b), slack), ranges).max
    if largest is None:
        return None
    largest = simplify(largest)
    if isinstance(largest, n.Const) and largest.value <= 0:
        return []  # it always holds
    why = (f"the schedule keeps {name} in the registers of its warps (a warp array), which "
           f"needs {needs}: {expr_to_str(condition)} fails for these sizes; {instead}, or "
           f"store {name} in shared memory (leave out store_in('local'))")
    return [RegionCheck(name, 0, largest, largest, simplify(n.Sub(largest, const(1))),
                        simplify(n.Sub(const(2), largest)), "whole tiles", why=why)]


def _operand_extents(intrinsic, operand: str, rank: int) -> tuple[int, ...]:
    """How far from its element at the spec's coordinates zero a tensor call touches its
    operand `operand`, along each of the buffer's `rank` dimensions (the spec's are the
    last ones): the spec's shape for its output, the range its definitions read else."""
    spec = intrinsic.spec
    if operand == spec.name:
        shape = intrinsic.shape
    else:
        ranges = {v.name: Interval(const(0), const(e - 1))
                  for v, e in zip(spec.args, intrinsic.shape, strict=True)}
        for d in spec.definitions:
            if d.rdom is not None:
                ranges.update({r.name: Interval(r.min.node, const(r.min.node.value +
                                                                  r.extent.node.value - 1))
                               for r in d.rdom.rvars})
        reads = [x for d in spec.definitions for x in walk(d.value)
                 if isinstance(x, n.Call) and x.name == operand]
        shape = tuple(1 + max(constant_upper_bound(simplify(bounds_of_expr(arg, ranges).max))
                              for arg in args)
                      for args in zip(*(c.args for c in reads), strict=True))
    return (1,) * (rank - len(shape)) + tuple(shape)


def _linear_step(start: n.Expr, axis: int, shape: dict[int, int]) -> int | None:
    """The constant by which `start` grows per thread along `axis` (0 if it doesn't
    depend on it), or None if it isn't linear in it."""
    ranges = {_thread(a).name: Interval(const(0), const(e - 1)) for a, e in shape.items()}
    t = _thread(axis).name
    at0 = substitute(start, {t: const(0)})
    step = _simplified(n.Sub(substitute(start, {t: const(1)}), at0), ranges)
    if not isinstance(step, n.Const):
        return None
    rest = _simplified(n.Sub(n.Sub(start, at0), n.Mul(step, _thread(axis))), ranges)
    return int(step.value) if rest == const(0) else None


class _Rewrite(FuncAccessMutator, ScopedMutator):
    """Every access of the buffer relative to its thread's part (the proof's starts,
    with the thread indices of the access's own loops)."""

    def __init__(self, name: str, starts: list[n.Expr], lets: dict[str, n.Expr]):
        super().__init__(lets=lets)
        self.name, self.starts = name, starts

    def coordinates(self, args: tuple[n.Expr, ...]) -> tuple[n.Expr, ...]:
        threads = [loop for loop in reversed(self.loops) if loop.kind is n.ForKind.GPU_THREAD]
        index = {_thread(axis).name: n.Sub(n.Var(loop.name, int32),
                                           expand_lets(loop.min, self.lets))
                 for axis, loop in enumerate(threads)}
        ranges = {}
        for loop in self.loops:
            lo = simplify(expand_lets(loop.min, self.lets))
            hi = simplify(n.Sub(n.Add(lo, expand_lets(loop.extent, self.lets)), const(1)))
            ranges[loop.name] = Interval(lo, hi)
        return tuple(_simplified(n.Sub(expand_lets(a, self.lets), substitute(s, index)),
                                 ranges)
                     for a, s in zip(args, self.starts, strict=True))




def _simplified(e: n.Expr, ranges: dict[str, Interval]) -> n.Expr:
    """`e` simplified where each variable of `ranges` lies in its (constant-bounded)
    interval: the simplifier learns ranges from the loops around what it simplifies."""
    probe: n.Stmt = n.Store("block_registers.probe", const(0), e)
    for name, r in ranges.items():
        lo = simplify(r.min) if r.min is not None else None
        hi = simplify(r.max) if r.max is not None else None
        if isinstance(lo, n.Const) and isinstance(hi, n.Const):
            probe = n.For(name, lo, const(int(hi.value) - int(lo.value) + 1),
                          n.ForKind.SERIAL, probe)
    out = simplify(probe)
    while isinstance(out, (n.For, n.LetStmt)):
        out = out.body if isinstance(out, n.For) else substitute(out.body, {out.name: out.value})
    return out.value if isinstance(out, n.Store) else simplify(e)


def _shown(shape: dict[int, int]) -> str:
    return "(" + ", ".join(f"{_AXES[a]}: {e}" for a, e in sorted(shape.items())) + ")"
