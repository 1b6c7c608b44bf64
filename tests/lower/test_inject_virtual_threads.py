"""inject_virtual_threads on hand-built loop nests: a buffer allocated inside a vthread
loop grows N-fold where the loop is pushed through its allocation, and copy k uses part
k; where the statement holding the allocation is written out N times instead, each copy
allocates the buffer whole and uses it from element 0."""
from halo.analysis.simplify import simplify
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.types import int32
from halo.ir.visitor import walk
from halo.lower.inject_virtual_threads import inject_virtual_threads

V = n.Var("v")


def _uses(size: int) -> n.Stmt:
    """allocate t[size] in stack: t[0] = v; out[v] = t[0]"""
    return n.Allocate("t", int32, const(size), n.block(
        n.Store("t", const(0), V),
        n.Store("out", V, n.Load(int32, "t", const(0)))), "stack")


def _indices(stmt: n.Stmt) -> list[int]:
    """The (constant) index of every access to t in `stmt`."""
    return sorted(int(simplify(x.index).value) for x in walk(stmt)
                  if isinstance(x, (n.Load, n.Store)) and x.name == "t")


def _inject(body: n.Stmt) -> n.Stmt:
    return inject_virtual_threads(n.For("v", const(0), const(2), n.ForKind.VTHREAD, body),
                                  None)


def test_a_buffer_the_copies_share_grows_and_each_copy_uses_its_part():
    stmt = _inject(_uses(1))
    allocations = [x for x in walk(stmt) if isinstance(x, n.Allocate)]
    assert [int(a.size.value) for a in allocations] == [2]
    assert _indices(stmt) == [0, 0, 1, 1]  # (a store and a load a copy)


def test_a_buffer_written_out_per_copy_is_not_moved_even_after_one_that_grew():
    """Two allocations of one name, the first grown (its branch doesn't depend on v), the
    second written out per copy (inside a loop that does): the second's accesses keep
    their indices (they were moved past its end: found by the fuzzer)."""
    written_out = n.For("i", const(0), n.Add(V, const(1)), n.ForKind.SERIAL, _uses(1))
    stmt = _inject(n.IfThenElse(n.LT(n.Var("c"), const(0)), _uses(1), written_out))
    grown, copies = stmt.then_case, stmt.else_case
    assert [int(a.size.value) for a in walk(grown) if isinstance(a, n.Allocate)] == [2]
    per_copy = [a for a in walk(copies) if isinstance(a, n.Allocate)]
    assert [int(a.size.value) for a in per_copy] == [1, 1]
    assert _indices(grown) == [0, 0, 1, 1]
    for allocation in per_copy:
        assert _indices(allocation.body) == [0, 0]
