"""hoist_guards: a guard's conjuncts move out of the serial, unrolled and vectorized loops
they don't depend on (with the lets they read), those that hold over the enclosing
loops' ranges are dropped, and those linear in a serial loop's variable become its
range. Each test builds the IR the pass meets and checks its shape; the app schedules'
results against halo.reference are the suites' (tests/correctness, tests/gpu) and the
fuzzer's."""
from __future__ import annotations

import halo
from apps import matmul
from halo.analysis.simplify import simplify
from halo.ir import nodes as n
from halo.ir.nodes import ForKind, const
from halo.ir.printer import stmt_to_str
from halo.ir.substitute import free_vars, substitute
from halo.lang.environment import Environment
from halo.lower.hoist_guards import hoist_guards
from halo.lower.pipeline import lower

from .conftest import nodes_of

V = n.Var


def loop(name: str, extent: int, body: n.Stmt, kind: ForKind = ForKind.UNROLLED) -> n.For:
    return n.For(name, const(0), const(extent), kind, body)


def store(index: n.Expr) -> n.Store:
    return n.Store("acc", index, n.Load(halo.float32, "a", index))


def hoisted(stmt: n.Stmt) -> str:
    return stmt_to_str(hoist_guards(stmt, None)).strip()


def test_a_guard_moves_out_of_the_loops_it_does_not_read_with_its_lets():
    """The short tile of a reduction: `k < e` reads `ki` only, so it moves above the
    register tile's loops (with the let `k`), and `j < 9` stays inside `jv`'s."""
    body = n.LetStmt("k", n.Add(n.Mul(V("ko"), const(16)), V("ki")),
                     n.LetStmt("j", n.Add(V("jv"), const(4)),
                               n.IfThenElse(n.And(n.LT(V("j"), const(9)), n.LT(V("k"), V("e"))),
                                            store(n.Add(V("j"), V("k"))))))
    nest = loop("ki", 16, loop("iv", 4, loop("jv", 8, body)))
    assert hoisted(nest) == "\n".join([
        "for ki in unrolled(16):",
        "  k = ko * 16 + ki",
        "  if k < e:",
        "    for iv in unrolled(4):",
        "      for jv in unrolled(8):",
        "        j = jv + 4",
        "        if j < 9:",
        "          acc[j + k] = a[j + k]"])


def test_a_guard_that_holds_over_the_loops_around_it_is_dropped():
    """`j < jm + 128` with `j = jm + tx * 8 + jv`, tx a thread loop of 16: it holds for
    every thread and lane once `jm` cancels (the lets are substituted first); with 17
    threads it doesn't."""
    def nest(threads: int) -> n.Stmt:
        body = n.LetStmt("j", n.Add(n.Add(V("jm"), n.Mul(V("tx"), const(8))), V("jv")),
                         n.IfThenElse(n.LT(V("j"), n.Add(V("jm"), const(128))),
                                      store(V("j"))))
        return n.LetStmt("jm", n.Mul(V("jo"), const(128)),
                         loop("tx", threads, loop("jv", 8, body), ForKind.GPU_THREAD))
    assert not nodes_of(hoist_guards(nest(16), None), n.IfThenElse)
    assert len(nodes_of(hoist_guards(nest(17), None), n.IfThenElse)) == 1


def test_a_proof_does_not_read_a_shadowed_let():
    """`k = j + 100` reads the outer `j` (tx * 100); inside, another `j` (the lane) would
    make `k < 200` look true: under a shadowing let no guard is dropped."""
    inner = n.LetStmt("j", V("v"), n.IfThenElse(n.LT(V("k"), const(200)), store(V("v"))))
    nest = loop("tx", 16, n.LetStmt("j", n.Mul(V("tx"), const(100)),
                                    n.LetStmt("k", n.Add(V("j"), const(100)),
                                              loop("v", 2, inner))), ForKind.GPU_THREAD)
    assert len(nodes_of(hoist_guards(nest, None), n.IfThenElse)) == 1


def test_what_reads_memory_or_depends_on_the_loop_stays_inside():
    """A condition that loads (its guard may keep the load in bounds), a let that loads,
    a guard on the variable of an unrolled loop, and a let that would rebind a name of
    the loop's bounds stay where they are: nothing moves."""
    reads = n.LT(n.Load(halo.int32, "lut", V("c")), const(3))
    cases = [
        n.IfThenElse(reads, store(V("x"))),
        n.LetStmt("v", n.Load(halo.int32, "lut", V("c")),
                  n.IfThenElse(n.LT(V("v"), const(3)), store(V("x")))),
        n.IfThenElse(n.LT(V("x"), V("e")), store(V("x"))),
    ]
    for body, kind in zip(cases, [ForKind.SERIAL, ForKind.SERIAL, ForKind.UNROLLED],
                          strict=True):
        nest = loop("x", 8, body, kind)
        assert hoist_guards(nest, None) == nest
    # A let of a name the loop's bounds read would rebind it above them.
    shadow = n.For("x", const(0), V("e"), ForKind.SERIAL,
                   n.LetStmt("e", const(4), n.IfThenElse(n.LT(V("e"), V("m")), store(V("x")))))
    assert hoist_guards(shadow, None) == shadow


def test_gpu_thread_and_parallel_loops_keep_their_guards():
    """A guard invariant in a thread loop stays inside it (thread loops are fused later,
    around barriers), and a parallel loop's body stays one task."""
    for kind in (ForKind.GPU_THREAD, ForKind.GPU_BLOCK, ForKind.PARALLEL):
        nest = loop("t", 32, n.IfThenElse(n.LT(V("k"), V("e")), store(V("t"))), kind)
        assert hoist_guards(nest, None) == nest


def test_matmul_short_tiles_guard_the_reduction_step_not_each_multiply_add():
    """The GPU matmul schedule's copies for short tiles: after the pass no guard is left
    inside its unrolled register-tile loops that reads only the reduction step (16 per
    step of 16 x 8 x 8 multiply-adds, not 1024)."""
    *_, funcs = matmul.algorithm()
    matmul.gpu_schedule(funcs)
    target = halo.Target("cuda", arch="sm_90")
    reduction = {"C_local.s1.k.x", "C_local.s1.k.x.ki"}

    def guards_of_the_step(skip: tuple[str, ...]) -> list[n.IfThenElse]:
        stmt = lower(Environment.of([funcs["C"]]), target, stop_after="hoist_guards",
                     skip=skip).stmt
        register_loops = [lp for lp in nodes_of(stmt, n.For)
                          if lp.kind is ForKind.UNROLLED and lp.name == "C_local.s1.i.iv"]
        assert len(register_loops) > 1  # (the steady state's and the short tiles')
        return [g for lp in register_loops for g in nodes_of(lp.body, n.IfThenElse)
                if free_vars(g.condition) & reduction]
    assert guards_of_the_step(("hoist_guards",))
    assert not guards_of_the_step(())


def _runs(stmt: n.For, **values: int) -> list[int]:
    """The values a loop's variable takes, with the names in its bounds set to `values`."""
    lo, extent = (simplify(substitute(e, {k: const(v) for k, v in values.items()}))
                  for e in (stmt.min, stmt.extent))
    return list(range(lo.value, lo.value + extent.value))


def test_a_guard_linear_in_a_serial_loop_becomes_its_range():
    """The last, short step of a reduction over input channels: `c + k < e` (through a
    let) cuts the loop over c to where it holds, so no iteration branches; a lower bound
    moves the loop's start; a conjunct that loads stays in the body."""
    body = n.LetStmt("r", n.Add(V("c"), V("k")),
                     n.IfThenElse(n.And(n.LE(V("s"), V("c")),
                                        n.And(n.LT(V("r"), V("e")), n.LT(
                                            n.Load(halo.int32, "lut", V("c")), const(3)))),
                                  store(V("r"))))
    trimmed = hoist_guards(loop("c", 8, body, ForKind.SERIAL), None)
    assert isinstance(trimmed, n.For)
    (guard,) = nodes_of(trimmed, n.IfThenElse)
    assert isinstance(guard.condition, n.LT) and isinstance(guard.condition.a, n.Load)
    for k, e, s in [(0, 64, 0), (56, 61, 0), (56, 60, 2), (8, 3, 0), (0, 8, 9), (4, 6, -3)]:
        assert _runs(trimmed, k=k, e=e, s=s) == [c for c in range(8) if s <= c and c + k < e]


def test_guards_on_the_variable_of_other_loops_stay():
    """Unrolled and vectorized loops keep their constant extents (their guards stay), and
    a guard that isn't linear in the loop variable (`c * c < e`) stays in a serial one."""
    for kind in (ForKind.UNROLLED, ForKind.VECTORIZED):
        nest = loop("c", 8, n.IfThenElse(n.LT(V("c"), V("e")), store(V("c"))), kind)
        assert hoist_guards(nest, None) == nest
    square = loop("c", 8, n.IfThenElse(n.LT(n.Mul(V("c"), V("c")), V("e")), store(V("c"))),
                  ForKind.SERIAL)
    assert hoist_guards(square, None) == square
