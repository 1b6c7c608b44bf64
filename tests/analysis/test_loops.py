"""The meaning of splits and fuses: the ranges of the loops they make, the original
dimensions each loop comes from, the names they use, and the values they rebuild."""
from __future__ import annotations

from halo.analysis.loops import (
    Fuse,
    LoopRange,
    Reorder,
    Split,
    TailStrategy,
    divides,
    fused_values,
    loop_sources,
    ranges_after,
    sources_after,
    split_value,
    transformed_names,
)
from halo.analysis.simplify import simplify
from halo.ir import nodes as n
from halo.ir.nodes import const
from halo.ir.printer import expr_to_str

lo, e = n.Var("lo"), n.Var("e")


def _text(r: LoopRange) -> tuple[str, str]:
    return expr_to_str(simplify(r.min)), expr_to_str(simplify(r.extent))


def test_split_makes_an_outer_loop_over_the_tiles_and_an_inner_one_over_a_tile():
    """x over [lo, lo + e) split by 4: xo over [0, (e + 3) // 4), xi over [0, 4)."""
    before = {"x": LoopRange(lo, e), "y": LoopRange(const(0), const(8))}
    ranges = ranges_after(Split("x", "xo", "xi", 4), before)
    assert set(ranges) == {"y", "xo", "xi"}
    assert _text(ranges["xo"]) == ("0", "(e + 3) // 4")
    assert _text(ranges["xi"]) == ("0", "4")


def test_split_of_a_constant_extent_rounds_the_tile_count_up():
    """10 split by 4 is 3 tiles (the last one partial), 12 by 4 is 3 whole ones."""
    for extent, whole in ((10, False), (12, True)):
        old = LoopRange(const(0), const(extent))
        assert _text(ranges_after(Split("x", "xo", "xi", 4), {"x": old})["xo"]) == ("0", "3")
        assert divides(old, 4) is whole
    assert not divides(LoopRange(const(0), e), 4)  # unknown until run time


def test_an_extent_rounded_up_to_a_multiple_of_the_factor_divides_whatever_its_values():
    """(e + 31) // 32 * 32 is a multiple of 32, 16 and 8 for every e; not of 64; and
    32 * e + 8 of 8 only."""
    rounded = n.Mul(n.Div(n.Add(e, const(31)), const(32)), const(32))
    for factor, whole in ((32, True), (16, True), (8, True), (64, False), (3, False)):
        assert divides(LoopRange(const(0), rounded), factor) is whole
    offset = n.Add(n.Mul(e, const(32)), const(8))
    assert divides(LoopRange(const(5), offset), 8)
    assert not divides(LoopRange(const(0), offset), 16)


def test_split_may_reuse_the_name_of_the_loop_it_splits():
    """split(x, x, xi, 4): the outer loop keeps the name x."""
    ranges = ranges_after(Split("x", "x", "xi", 4), {"x": LoopRange(const(0), const(8))})
    assert _text(ranges["x"]) == ("0", "2")


def test_fuse_makes_one_loop_over_both_ranges_and_none_over_empty_ones():
    """y over [0, 3) and x over [2, 6) fuse into t over [0, 12); two negative extents
    make no iterations, not a positive product."""
    ranges = ranges_after(Fuse("y", "x", "t"), {"y": LoopRange(const(0), const(3)),
                                                "x": LoopRange(const(2), const(4))})
    assert list(ranges) == ["t"] and _text(ranges["t"]) == ("0", "12")
    empty = ranges_after(Fuse("y", "x", "t"), {"y": LoopRange(const(0), const(-2)),
                                               "x": LoopRange(const(0), const(-3))})
    assert _text(empty["t"]) == ("0", "0")


def test_reorder_changes_no_range():
    ranges = {"y": LoopRange(const(0), const(3)), "x": LoopRange(const(0), const(4))}
    assert ranges_after(Reorder(("x", "y")), ranges) == ranges


def test_sources_follow_splits_and_fuses():
    """Split halves come from the split variable; a fused loop from both of its loops."""
    transforms = [Split("r.x", "ro", "ri", 4), Fuse("ri", "r.y", "t"),
                  Reorder(("t", "ro"))]
    assert loop_sources(["y", "r.x", "r.y"], transforms) == {
        "y": {"y"}, "ro": {"r.x"}, "t": {"r.x", "r.y"}}


def test_sources_after_one_step():
    """A split of a fused loop comes from both dimensions, in both halves."""
    sources = sources_after(Split("t", "to", "ti", 2), {"t": frozenset({"y", "x"})})
    assert sources == {"to": {"y", "x"}, "ti": {"y", "x"}}


def test_transformed_names_are_every_name_split_fused_or_made():
    transforms = [Split("x", "xo", "xi", 4), Fuse("y", "xo", "t"), Reorder(("xi", "t"))]
    assert transformed_names(transforms) == {"x", "xo", "xi", "y", "t"}


def test_split_value_rebuilds_the_split_variable():
    """lo + xo * 4 + xi; shifted inwards, the last tile ends at the range's end."""
    old = LoopRange(lo, e)
    xo, xi = n.Var("xo"), n.Var("xi")
    assert expr_to_str(split_value(old, xo, xi, 4, TailStrategy.GUARD)) == \
        "lo + xo * 4 + xi"
    assert expr_to_str(split_value(old, xo, xi, 4, TailStrategy.ROUND_UP)) == \
        "lo + xo * 4 + xi"
    assert expr_to_str(split_value(old, xo, xi, 4, TailStrategy.SHIFT_INWARDS)) == \
        "lo + min(xo * 4, e - 4) + xi"


def test_fused_values_rebuild_both_variables():
    """t over y in [1, ..) and x in [2, 2 + 5): y = 1 + t // 5, x = 2 + t % 5."""
    outer, inner = fused_values(n.Var("t"), LoopRange(const(1), e),
                                LoopRange(const(2), const(5)))
    assert expr_to_str(outer) == "1 + t // 5"
    assert expr_to_str(inner) == "2 + t % 5"


def test_auto_tail_is_shift_inwards_on_a_pure_stage_and_guard_on_an_update():
    split = Split("x", "xo", "xi", 4)
    assert split.tail_in(pure_stage=True) is TailStrategy.SHIFT_INWARDS
    assert split.tail_in(pure_stage=False) is TailStrategy.GUARD
    explicit = Split("x", "xo", "xi", 4, TailStrategy.ROUND_UP)
    assert explicit.tail_in(pure_stage=True) is TailStrategy.ROUND_UP


def test_a_range_knows_its_end_and_last_value():
    r = LoopRange(lo, e)
    assert expr_to_str(r.end) == "lo + e"
    assert expr_to_str(r.max) == "lo + e - 1"
