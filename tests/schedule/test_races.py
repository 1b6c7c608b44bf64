"""The facts behind the race check: which loop pairs a reorder swaps, and when a left
side tells a variable's values apart (which original variables a loop is made of:
tests/analysis/test_loops.py)."""
from __future__ import annotations

from halo.analysis.loops import Fuse, Split
from halo.ir import nodes as n
from halo.schedule.races import (
    distinct_points_problem,
    regroupings,
    self_read_problem,
)
from halo.schedule.records import Dim

rx, ry, y = n.Var("r.x"), n.Var("r.y"), n.Var("y")
RVARS = {"r.x", "r.y"}


def _swaps(initial, transforms, order):
    swaps, _ = regroupings(initial, {"r"}, transforms, [Dim(name) for name in order])
    return swaps


def test_reorders_swap_reduction_loops_only():
    """Moving a pure loop past reduction loops swaps nothing; swapping two does."""
    split = [Split("r", "ro", "ri", 4), Split("ri", "a", "b", 2)]
    assert _swaps(["y", "r"], split, ["ro", "y", "a", "b"]) == []
    assert _swaps(["y", "r"], split, ["y", "b", "ro", "a"]) == [("b", "ro"), ("b", "a")]


def test_a_fused_loop_swaps_only_what_its_reduction_leaves_pass():
    """yo, ro, yi, ri with yi and ri fused: ri stays inside ro, whatever yi does; a fused
    loop outside ro takes ri past it; fusing ri outside ro swaps them."""
    splits = [Split("y", "yo", "yi", 4), Split("r", "ro", "ri", 4)]
    fused = [*splits, Fuse("yi", "ri", "f")]
    assert _swaps(["y", "r"], fused, ["yo", "ro", "f"]) == []
    assert _swaps(["y", "r"], fused, ["yo", "f", "ro"]) == [("ri", "ro")]
    assert _swaps(["y", "r"], [*splits, Fuse("ri", "ro", "f")], ["yo", "yi", "f"]) == \
        [("ri", "ro")]


def test_splitting_a_fused_loop_keeps_the_swaps_of_its_fuse():
    """The halves of a fused loop are leaves; the swap the fuse made is not forgotten."""
    fused = [Split("r", "ro", "ri", 4), Fuse("ri", "ro", "f"), Split("f", "fo", "fi", 8)]
    assert _swaps(["r"], fused, ["fo", "fi"]) == [("ri", "ro")]
    in_order = [Split("r", "ro", "ri", 4), Fuse("ro", "ri", "f"), Split("f", "fo", "fi", 8)]
    assert _swaps(["r"], in_order, ["fo", "fi"]) == []
    assert _swaps(["r"], in_order, ["fi", "fo"]) == [("fi", "fo")]


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
