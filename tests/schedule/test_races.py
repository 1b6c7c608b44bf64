"""The facts behind the race check: which loop pairs a reorder swaps, and when a left
side tells a variable's values apart (which original variables a loop is made of:
tests/analysis/test_loops.py)."""
from __future__ import annotations

from halo.ir import nodes as n
from halo.schedule.races import (
    distinct_points_problem,
    order_change,
    self_read_problem,
)
from halo.schedule.records import Dim

rx, ry, y = n.Var("r.x"), n.Var("r.y"), n.Var("y")
RVARS = {"r.x", "r.y"}


def test_order_change_lists_swapped_reduction_loops_only():
    """Moving a pure loop past reduction loops swaps nothing; swapping two does."""
    old = [Dim("y"), Dim("a", pure=False), Dim("b", pure=False), Dim("c", pure=False)]
    assert order_change(old, [old[1], old[0], old[2], old[3]]) == []
    assert order_change(old, [old[0], old[3], old[1], old[2]]) == [("c", "a"), ("c", "b")]


def test_left_sides_that_tell_values_apart():
    """c * r + g with g free of the moving reduction variables."""
    def ok(args, var, moving):
        return distinct_points_problem("f", args, RVARS, frozenset({var}), moving) is None

    assert ok((rx, y), "r.x", RVARS)
    assert ok((n.Add(n.Mul(rx, n.const(3)), y),), "r.x", RVARS)
    assert ok((n.Sub(n.const(10), rx),), "r.x", RVARS)
    assert ok((n.Add(rx, ry),), "r.x", {"r.x"})          # r.y fixed while r.x moves
    assert not ok((n.Add(rx, ry),), "r.x", RVARS)         # both move: (0, 1) and (1, 0)
    assert not ok((n.Mul(rx, n.const(0)),), "r.x", RVARS)
    assert not ok((n.Mod(rx, n.const(8)),), "r.x", RVARS)
    assert not ok((y,), "r.x", RVARS)


def test_self_reads_other_than_the_written_point():
    """Reading f at the written point is fine; elsewhere, or in the left side, isn't."""
    t = n.Var("r.x").type
    own = n.Call(t, "f", (rx,), n.CallKind.FUNC)
    prev = n.Call(t, "f", (n.Sub(rx, n.const(1)),), n.CallKind.FUNC)
    assert self_read_problem("f", (rx,), n.Add(own, n.const(1)), None) is None
    assert "f[r.x - 1]" in self_read_problem("f", (rx,), n.Add(own, prev), None)
    assert self_read_problem("f", (own,), n.Add(own, n.const(1)), None) is not None
    assert self_read_problem("f", (rx,), own, n.LT(prev, n.const(0))) is not None
