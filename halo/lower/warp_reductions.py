"""Warp reductions: an associative update with a reduction loop bound to GPU threads.

`f.update().gpu_threads(r)` on an update `f = f op e` (a form rfactor accepts) asks the
threads of loop `r` to reduce together, as TVM's cross-thread reductions do: each thread
combines its part (the reduction loops inside `r`) into a register, the `W` threads of
`r` combine their registers by warp shuffles (a butterfly: after log2(W) steps every lane
holds the whole), and the loop's first thread applies the result to `f`:

    for r_i in gpu_thread(32):            for r_i in gpu_thread(32):
      for r_o in range(8):                  realize partial[0:1] in local:
        f[p] = f[p] + e(r_o, r_i)    ->       partial[0] = 0
                                              for r_o in range(8):
                                                partial[0] = partial[0] + e(r_o, r_i)
                                              partial[0] = partial[0] + shuffle_xor(partial[0], 16)
                                              ...                   (offsets 8, 4, 2, 1)
                                              if r_i == 0:
                                                f[p] = f[p] + partial[0]

`schedule.gpu.warp_reduction_problem` checks the schedule's side (one reduction loop,
the stage's innermost thread loop, only reduction loops inside); this pass checks what
needs the lowered loops: a constant power-of-two extent up to 32 (one warp), and a point
`p` that no loop inside `r` changes. The group of `W` lanes must be an aligned part of a
warp, so the block's x extent must be a multiple of `W`: `fuse_gpu_thread_loops` checks
that once it knows the block. Like rfactor, it regroups the operations (float sums too).

It runs for GPU targets after `gpu_levels` (the partial is a thread's register) and
before storage flattening.
"""
from __future__ import annotations

from halo.errors import InternalError, ScheduleError
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.printer import expr_to_str
from halo.ir.substitute import var_names
from halo.ir.visitor import IRMutator, child_nodes, rewrite, walk
from halo.lower.context import LowerContext
from halo.lower.gpu_levels import loop_func
from halo.schedule.records import stage_label
from halo.schedule.rfactor import OPERATORS, recognize

GPU_SHUFFLE_XOR = "gpu_shuffle_xor"
WARP_LANES = 32


def shuffle_xor(value: n.Expr, offset: int, width: int) -> n.Expr:
    """`value` as the lane `offset` away (lane index xor `offset`) holds it, within the
    aligned group of `width` lanes of a warp; every lane of the group evaluates it."""
    return n.Call(value.type, GPU_SHUFFLE_XOR, (value, const(offset), const(width)),
                  n.CallKind.INTRINSIC)


def warp_reductions(stmt: n.Stmt, ctx: LowerContext) -> n.Stmt:
    """Each warp reduction of `stmt` as partials combined by shuffles (see the module)."""
    return _WarpReductions(ctx).mutate(stmt)


class _WarpReductions(IRMutator):
    def __init__(self, ctx: LowerContext):
        self.ctx = ctx

    def visit_For(self, loop: n.For) -> n.Stmt:
        loop = self.mutate_children(loop)
        update = self._update(loop) if loop.kind is n.ForKind.GPU_THREAD else None
        return loop if update is None else self._reduced(loop, update)

    def _update(self, loop: n.For) -> n.Provide | None:
        """The update a thread loop is a warp reduction's loop for, or None: a reduction
        loop of an update whose schedule neither allows races nor (this copy of the loop:
        a specialization may differ) makes it atomic."""
        found, owner = loop_func(loop.name), self.ctx.loop_owners.get(loop.name)
        if found is None or owner is None or found[1] == 0:
            return None
        stage = self.ctx.env.funcs[found[0]].schedule.stages[found[1]]
        variants = [stage, *(s.schedule for s in stage.specializations)]
        bound = [s for s in variants for d in s.dims
                 if d.name == owner[2] and not d.pure and d.kind is n.ForKind.GPU_THREAD]
        races = [s.allow_races for s in bound if not s.atomic]
        if any(races) and not all(races):  # (copies of the loop can't be told apart)
            raise ScheduleError(
                f"{stage_label(*found)}: its specializations bind reduction loop {owner[2]} "
                "to GPU threads both as a warp reduction and with races allowed; call "
                "allow_race_conditions() on all of them or on none")
        # (an update simplified away, e.g. by a predicate that never holds, leaves none)
        updates = [x for x in walk(loop.body) if isinstance(x, n.Provide) and x.name == found[0]]
        if not races or any(races) or not updates:
            return None
        if len(updates) > 1:  # (one update, one Provide: lowering made no copies yet)
            raise InternalError(f"{stage_label(*found)}: a warp reduction's loop {owner[2]} "
                                f"holds {len(updates)} updates of {found[0]}, not one")
        atomic = [x.body for x in walk(loop.body) if isinstance(x, n.Atomic)]
        return None if any(a is updates[0] for a in atomic) else updates[0]

    def _reduced(self, loop: n.For, update: n.Provide) -> n.Stmt:
        func, k = loop_func(loop.name)
        where = f"{stage_label(func, k)}: reduction loop {self.ctx.loop_owners[loop.name][2]}"
        width = loop.extent.value if isinstance(loop.extent, n.Const) else None
        if width is None or not 1 <= width <= WARP_LANES or width & (width - 1):
            raise ScheduleError(
                f"{where} is bound to GPU threads (a warp reduction), so its extent must be "
                f"a constant power of two up to {WARP_LANES} (the lanes of a warp), but it is "
                f"{expr_to_str(loop.extent)}; split it by such a factor and bind the inner "
                "loop, or rfactor the update to reduce over more threads")
        path = _path_to(loop.body, update)
        varying = _varying(loop.name, path)
        if any(var_names(a) & varying for a in update.args):
            raise ScheduleError(
                f"{where} is bound to GPU threads (a warp reduction), so every thread must "
                f"update the same point of {func}, but the point depends on the loops inside "
                "the reduction loop (or on it); bind a reduction loop that the left side of "
                "the update doesn't use")
        self_call = n.Call(update.value.type, func, update.args, n.CallKind.FUNC)
        if update.value == self_call:  # (simplified to storing its own value: a no-op)
            return rewrite(loop, lambda x: n.block() if x is update else None)
        form = recognize(func, self_call, update.value) or \
            recognize(func, self_call, _own_term_first(update.value, self_call))
        if form is None:  # (the schedule checked the definition; lowering keeps its form)
            raise InternalError(f"{where}: a warp reduction's update lost its associative "
                                f"form in lowering: {expr_to_str(update.value)}")
        accumulate, merge, identity = OPERATORS[form[0]]
        t = update.value.type
        name = f"{loop.name}.partial"
        partial = n.Call(t, name, (const(0),), n.CallKind.FUNC)

        def store(value: n.Expr) -> n.Stmt:
            return n.Provide(name, value, (const(0),))

        body = rewrite(loop.body, lambda x: store(accumulate(partial, form[1]))
                       if x is update else None)
        steps = []
        offset = width // 2
        while offset:
            steps.append(store(merge(partial, shuffle_xor(partial, offset, width))))
            offset //= 2
        first = _under_invariants(
            path, varying, n.IfThenElse(n.EQ(n.Var(loop.name), loop.min),
                                        n.Provide(func, merge(self_call, partial), update.args)))
        reduced = n.Realize(name, t, ((const(0), const(1)),),
                            n.block(store(const(identity(t), t)), body, *steps, first),
                            "local")
        return n.For(loop.name, loop.min, loop.extent, loop.kind, reduced)


def _own_term_first(value: n.Expr, own: n.Expr) -> n.Expr:
    """A sum that the simplifier regrouped after inlining (`(f + a) - b`) as
    `f + (a - b)`, when `own` (the update's read of its own point) is one of its terms,
    added, and in no other; else `value`. (A warp reduction regroups the sum anyway.)"""
    terms: list[tuple[bool, n.Expr]] = []  # (added, term)

    def flatten(e: n.Expr, added: bool) -> None:
        if isinstance(e, (n.Add, n.Sub)):
            flatten(e.a, added)
            flatten(e.b, added == isinstance(e, n.Add))
        else:
            terms.append((added, e))
    flatten(value, True)
    mine = [added for added, t in terms if t == own]
    rest = sorted(((added, t) for added, t in terms if t != own), key=lambda x: not x[0])
    if mine != [True] or not rest or any(x == own for _, t in rest for x in walk(t)):
        return value
    added, total = rest[0]
    if not added:  # (every term subtracted)
        total = n.Sub(const(0, total.type), total)
    for added, t in rest[1:]:
        total = n.Add(total, t) if added else n.Sub(total, t)
    return n.Add(own, total)


def _path_to(s: n.Stmt, target: n.Stmt) -> list[n.Stmt]:
    """The statements from `s` down to `target` (both included), or [] if absent."""
    if s is target:
        return [s]
    for child in child_nodes(s):
        if isinstance(child, n.Stmt) and (below := _path_to(child, target)):
            return [s, *below]
    return []


def _varying(loop: str, path: list[n.Stmt]) -> set[str]:
    """The names on `path` that change between the iterations a thread combines: the
    thread loop's, the loops' inside it, and the lets computed from them."""
    varying = {loop}
    for s in path:
        if isinstance(s, n.For) or isinstance(s, n.LetStmt) and var_names(s.value) & varying:
            varying.add(s.name)
    return varying


def _under_invariants(path: list[n.Stmt], varying: set[str], s: n.Stmt) -> n.Stmt:
    """`s` inside the lets and conditions of `path` that don't vary: the point the
    update writes is computed, and guarded, as the iterations computed and guarded it."""
    for x, below in reversed(list(zip(path, path[1:], strict=False))):
        if isinstance(x, n.LetStmt) and x.name not in varying:
            s = n.LetStmt(x.name, x.value, s)
        elif isinstance(x, n.IfThenElse) and not var_names(x.condition) & varying:
            s = n.IfThenElse(x.condition if below is x.then_case else n.Not(x.condition), s)
    return s
