"""The tensorize pass: which loop nests it accepts as computing an intrinsic's spec (and
what it puts in their place), and every kind of mismatch it refuses, with its message."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.ir import nodes as n
from halo.ir.visitor import walk
from halo.target import Target

from .conftest import lower_until

y, x, j, yo, yi, xo, xi = halo.vars("y x j yo yi xo xi")


def _dot_spec(a_type=halo.uint8, b_type=halo.int8, extent=8, depth=4):
    """spec[j] += int32(a[k]) * int32(b[j, k]): one row of a matrix product, j < extent."""
    a = halo.ImageParam(a_type, 1, "a")
    b = halo.ImageParam(b_type, 2, "b")
    k = halo.RDom((0, depth), name="k")
    spec = halo.Func("row_spec")
    spec[j] = 0
    spec[j] += halo.cast(halo.int32, a[k]) * halo.cast(halo.int32, b[j, k])
    spec.bound(j, 0, extent)
    return halo.Intrinsic("row8", spec, emit=lambda ctx: None)


def _matmul(value=None, depth=4, b_dims=2):
    """C[y, x] += int32(A[y, r]) * int32(B[x, r]) (B's last dimension is r), or `value`."""
    A = halo.ImageParam(halo.uint8, 2, "A")
    B = halo.ImageParam(halo.int8, b_dims, "B")
    r = halo.RDom((0, depth), name="r")
    C = halo.Func("C")
    C[y, x] = 0
    C[y, x] += value(A, B, r) if value else \
        halo.cast(halo.int32, A[y, r]) * halo.cast(halo.int32, B[x, r])
    return A, B, r, C


def _calls(stmt: n.Stmt) -> list[n.TensorCall]:
    return [s for s in walk(stmt) if isinstance(s, n.TensorCall)]


def _message(f: halo.Func) -> str:
    with pytest.raises(halo.ScheduleError) as info:
        f.lower()
    return str(info.value)


# ------------------------------------------------------------------------ accepted nests


def test_a_matching_nest_becomes_a_call_with_operand_origins():
    A, B, r, C = _matmul()
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    stmt, _ = lower_until(C, "tensorize")
    (call,) = _calls(stmt)
    assert call.part == "update"
    assert call.operand_names == ("row_spec", "a", "b")
    assert [o.name for o in call.operands] == ["C", "A", "B"]
    # B[x, r] against b[j, k]: translated by (xo * 8 + min, 0); A[y, r] by (y, 0)
    assert all(isinstance(o, n.Call) for o in call.operands)
    flat, _ = lower_until(C, "storage_flattening")
    (call,) = _calls(flat)
    assert [len(s) for s in call.strides] == [2, 2, 2]
    assert call.strides[2][1] == n.const(1)


def test_operands_in_the_other_order_of_a_commutative_operator_match():
    A, B, r, C = _matmul(lambda A, B, r: halo.cast(halo.int32, B[x, r]) *
                         halo.cast(halo.int32, A[y, r]))
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    assert len(_calls(lower_until(C, "tensorize")[0])) == 1


def test_extra_leading_dimensions_fixed_inside_the_nest_match():
    """The spec's 2-D b stands for the last two dimensions of a 3-D B."""
    A, B, r, C = _matmul(lambda A, B, r: halo.cast(halo.int32, A[y, r]) *
                         halo.cast(halo.int32, B[y % 2, x, r]), b_dims=3)
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    (call,) = _calls(lower_until(C, "tensorize")[0])
    assert len(call.operands[2].args) == 3


def test_a_guarded_tail_keeps_its_loops_for_partial_tiles():
    A, B, r, C = _matmul()
    C.update(0).split(x, xo, xi, 8, tail="guard").reorder(y, xo, xi, r.x) \
        .tensorize(xi, _dot_spec())
    stmt, _ = lower_until(C, "tensorize")
    choice = next(s for s in walk(stmt) if isinstance(s, n.IfThenElse)
                  and isinstance(s.then_case, n.TensorCall))
    assert isinstance(choice.else_case, n.For)  # the original loops, guard inside


def test_count_stores_proves_the_match_and_keeps_the_loops():
    A, B, r, C = _matmul()
    C.update(0).split(x, xo, xi, 8, tail="guard").reorder(y, xo, xi, r.x) \
        .tensorize(xi, _dot_spec())
    k = C.compile(Target("host", count_stores=True))
    a = np.ones((3, 4), np.uint8)
    b = np.ones((11, 4), np.int8)
    out = k(shape=(3, 11), A=a, B=b)
    assert (out == 4).all()
    assert k.store_counts == {"C": 3 * 11 * 5}


def test_a_specialization_tensorizes_its_own_nest():
    A, B, r, C = _matmul()
    s = C.update(0).specialize(A.shape[0] > 1)
    s.split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    assert len(_calls(lower_until(C, "tensorize")[0])) == 1


# --------------------------------------------------------------------- refused nests

_EXTENTS = "loop extents: xi 8 (spec j 8), r.x 4 (spec k.x 4)"


def test_a_different_operator_is_refused():
    A, B, r, C = _matmul(lambda A, B, r: halo.cast(halo.int32, A[y, r]) +
                         halo.cast(halo.int32, B[x, r]))
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    assert _message(C) == (
        "C.update(0).tensorize(xi, row8): the loops from xi inward don't compute what row8's "
        "spec row_spec computes: expected row_spec[j], found C[C.s1.y, C.min.1 + C.s1.x.xi + "
        "C.s1.x.xo * 8] + int32(A[C.s1.y, C.s1.r.x]) (a buffer access against something "
        f"else); {_EXTENTS}")


def test_a_different_type_is_refused():
    A, B, r, C = _matmul()
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x) \
        .tensorize(xi, _dot_spec(a_type=halo.int8))
    assert _message(C) == (
        "C.update(0).tensorize(xi, row8): the loops from xi inward don't compute what row8's "
        "spec row_spec computes: expected a[k.x], found A[C.s1.y, C.s1.r.x] (types int8 and "
        f"uint8); {_EXTENTS}")


def test_a_different_extent_is_refused():
    A, B, r, C = _matmul()
    C.update(0).split(x, xo, xi, 4).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    assert _message(C) == (
        "C.update(0).tensorize(xi, row8): loop xi has extent 4, but the spec's loop j has "
        "extent 8; split xi by 8 (a tail is guarded or shifted by the split's tail strategy)")


def test_a_reduction_of_another_length_is_refused():
    A, B, r, C = _matmul(depth=5)
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    assert _message(C) == (
        "C.update(0).tensorize(xi, row8): loop r.x has extent 5, but the spec's loop k.x has "
        "extent 4; split r.x by 4 (a tail is guarded or shifted by the split's tail strategy)")


def test_a_different_access_pattern_is_refused():
    """B[r, x] (transposed) where the spec reads b[j, k]."""
    A, B, r, C = _matmul(lambda A, B, r: halo.cast(halo.int32, A[y, r]) *
                         halo.cast(halo.int32, B[r, x]))
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    assert _message(C) == (
        "C.update(0).tensorize(xi, row8): the loops from xi inward don't compute what row8's "
        "spec row_spec computes: expected j, found C.s1.r.x (a coordinate of b against one of "
        f"B); {_EXTENTS}")


def test_a_buffer_at_two_offsets_is_refused():
    """The spec reads two buffers; the nest reads one buffer twice at different rows,
    which is fine, but a spec reading one buffer twice needs the same offset."""
    a = halo.ImageParam(halo.int32, 1, "a")
    spec = halo.Func("twice_spec")
    spec[j] = a[j] + a[j + 1]
    spec.bound(j, 0, 8)
    twice = halo.Intrinsic("twice", spec, emit=lambda ctx: None)
    inp = halo.ImageParam(halo.int32, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[x] + inp[x + 2]
    f.split(x, xo, xi, 8).tensorize(xi, twice)
    assert _message(f) == (
        "f.tensorize(xi, twice): the loops from xi inward don't compute what twice's spec "
        "twice_spec computes: expected a[j + 1], found inp[f.min.0 + f.s0.x.xi + "
        "min(f.s0.x.xo * 8, f.s0.x.max - f.min.0 - 7) + 2] (inp is read at another offset "
        "elsewhere); loop extents: xi 8 (spec j 8)")


def test_a_leading_dimension_varying_inside_the_nest_is_refused():
    A, B, r, C = _matmul(lambda A, B, r: halo.cast(halo.int32, A[y, r]) *
                         halo.cast(halo.int32, B[x % 2, x, r]), b_dims=3)
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    assert "(dimension 0 of B varies inside the loops, and the spec's b has no such " \
           "dimension)" in _message(C)


def test_an_update_against_a_spec_without_one_is_refused():
    a = halo.ImageParam(halo.int32, 1, "a")
    spec = halo.Func("copy_spec")
    spec[j] = a[j]
    spec.bound(j, 0, 4)
    copy = halo.Intrinsic("copy4", spec, emit=lambda ctx: None)
    g = halo.Func("g")
    g[x] = x
    g[x] = g[x] * 2
    g.update(0).split(x, xo, xi, 4).tensorize(xi, copy)
    assert _message(g) == (
        "g.update(0).tensorize(xi, copy4): g.update(0) is an update, but the spec copy_spec "
        "of copy4 has no update; tensorize a pure stage with it")


def test_a_vectorized_loop_inside_is_refused():
    A, B, r, C = _matmul()
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, r.x, xi)
    C.update(0).vectorize(xi).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    assert _message(C) == (
        "C.update(0).tensorize(xi, row8): loop xi is vectorized; the loops an intrinsic "
        "replaces must be serial (it decides how they run)")


def test_a_vectorized_loop_around_is_refused():
    A, B, r, C = _matmul()
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).vectorize(y, 4) \
        .tensorize(xi, _dot_spec())
    assert _message(C).startswith(
        "C.update(0).tensorize(xi, row8): the tensorized loops are inside vectorized loop "
        "C.update(0) loop y_vec; an intrinsic call can't be vectorized")


def test_a_producer_computed_inside_is_refused():
    A, B, r, C = _matmul()
    g = halo.Func("g")
    g[y, x] = A[y, x] + 1
    C = halo.Func("C")
    C[y, x] = 0
    C[y, x] += halo.cast(halo.int32, g[y, r.x]) * halo.cast(halo.int32, B[x, r.x])
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    g.compute_at(C.update(0), r.x)
    assert _message(C) == (
        "C.update(0).tensorize(xi, row8): the loops from xi inward hold the computation of "
        "g (computed inside them), not one definition of C.update(0); loop extents: xi 8 "
        "(spec j 8), r.x 4 (spec k.x 4)")


def test_an_atomic_update_is_refused():
    A, B, r, C = _matmul()
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).atomic() \
        .tensorize(xi, _dot_spec())
    assert "hold an atomic update (an intrinsic call can't be made atomic)" in _message(C)


def test_the_output_standing_for_an_input_is_refused():
    a = halo.ImageParam(halo.int32, 1, "a")
    spec = halo.Func("acc_spec")
    spec[j] = 0
    spec[j] = spec[j] * a[j]
    spec.bound(j, 0, 4)
    acc = halo.Intrinsic("acc4", spec, emit=lambda ctx: None)
    g = halo.Func("g")
    g[x] = x
    g[x] = g[x] * g[x]
    g.update(0).split(x, xo, xi, 4).tensorize(xi, acc)
    assert "(the spec's input a can't stand for the output g)" in _message(g)


def test_a_guard_that_is_not_linear_is_refused():
    A, B, r, C = _matmul()
    r.where(r.x * r.x < 5)
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    assert _message(C) == (
        "C.update(0).tensorize(xi, row8): the guard C.s1.r.x * C.s1.r.x < 5 inside the "
        "tensorized loops is not linear in them, so halo can't tell which tiles are whole; "
        "make the extents multiples of the intrinsic's or split with tail='shift_inwards'")


def test_a_linear_where_runs_the_call_on_tiles_where_it_holds_throughout():
    A, B, r, C = _matmul()
    r.where(r.x < y)
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    stmt, _ = lower_until(C, "tensorize")
    choice = next(s for s in walk(stmt) if isinstance(s, n.IfThenElse)
                  and isinstance(s.then_case, n.TensorCall))
    # the split's tail guard, and r.x < y for r.x up to 3
    assert n.LT(n.const(3), n.Var("C.s1.y")) in list(walk(choice.condition))


def test_a_split_after_tensorize_is_refused():
    A, B, r, C = _matmul()
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    C.update(0).split(r.x, yo, yi, 2)
    assert _message(C) == (
        "C.update(0).tensorize(xi, row8): the spec's loop nest is 2 deep (j, k.x), but the "
        "loops from xi inward are now 3 (xi, yo, yi): a split, fuse or reorder after "
        "tensorize changed them")


def test_splitting_the_tensorized_loop_away_is_refused():
    A, B, r, C = _matmul()
    C.update(0).split(x, xo, xi, 8).reorder(y, xo, xi, r.x).tensorize(xi, _dot_spec())
    C.update(0).split(xi, yo, yi, 2)
    assert _message(C) == (
        "C.update(0).tensorize(xi, row8): C.update(0) has no loop xi any more (a split or "
        "fuse after tensorize removed it); its loops are, outermost first: y, xo, yo, yi, r.x")
