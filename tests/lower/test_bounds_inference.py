"""bounds_inference: every loop bound and allocation size from what consumers read.

The lets it defines are simplified, so their text follows the simplifier; these tests
evaluate them at chosen values of the loop variables and buffer fields instead.
"""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.ir import nodes as n

from .conftest import evaluate, lets_of, lower_until, nodes_of

y, x, yo, yi, xo, xi = halo.vars("y x yo yi xo xi")


def lowered(outputs) -> tuple[n.Stmt, object]:
    return lower_until(outputs, "bounds_inference")


def stencil_1d():
    """f[x] = g[x - 1] + g[x] + g[x + 1], g a pointwise Func of the input."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x] * 2
    f[x] = g[x - 1] + g[x] + g[x + 1]
    return inp, g, f


OUT_1D = {"f.min.0": 5, "f.extent.0": 10}  # f realized over [5, 14]


def test_output_loops_cover_the_output_buffer():
    """The output's loops run over [f.min.i, f.min.i + f.extent.i - 1]."""
    f = halo.Func("f")
    f[y, x] = y + x
    stmt, _ = lowered(f)
    lets = lets_of(stmt)
    values = {"f.min.0": 3, "f.extent.0": 4, "f.min.1": -2, "f.extent.1": 7}
    got = {nm: evaluate(lets[nm], values, lets)
           for nm in ("f.s0.y.min", "f.s0.y.max", "f.s0.x.min", "f.s0.x.max")}
    assert got == {"f.s0.y.min": 3, "f.s0.y.max": 6, "f.s0.x.min": -2, "f.s0.x.max": 4}


@pytest.mark.parametrize("at", [-3, 0, 17])
def test_stencil_computed_at_the_consumer_x_covers_three_points(at):
    """g.compute_at(f, x) for a 3-tap stencil: g.s0.x.min is f.s0.x - 1 and g.s0.x.max is
    f.s0.x + 1, and g's storage is those 3 points."""
    _, g, f = stencil_1d()
    g.compute_at(f, x)
    stmt, _ = lowered(f)
    lets = lets_of(stmt)
    values = {**OUT_1D, "f.s0.x": at}
    assert evaluate(lets["g.s0.x.min"], values, lets) == at - 1
    assert evaluate(lets["g.s0.x.max"], values, lets) == at + 1
    assert evaluate(lets["g.min.0"], values, lets) == at - 1
    assert evaluate(lets["g.extent.0"], values, lets) == 3


def test_compute_root_covers_the_union_of_all_reads():
    """g.compute_root(): g is computed over the output region widened by the stencil."""
    _, g, f = stencil_1d()
    g.compute_root()
    stmt, _ = lowered(f)
    lets = lets_of(stmt)
    assert evaluate(lets["g.s0.x.min"], OUT_1D, lets) == 4
    assert evaluate(lets["g.s0.x.max"], OUT_1D, lets) == 15
    assert evaluate(lets["g.min.0"], OUT_1D, lets) == 4
    assert evaluate(lets["g.extent.0"], OUT_1D, lets) == 12


def test_realize_bounds_are_the_storage_lets():
    """The Realize of g gets bounds (g.min.i, g.extent.i), defined by lets around it."""
    inp = halo.ImageParam(halo.int32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x]
    f[y, x] = g[y, x] + g[y + 1, x + 2]
    g.compute_root()
    stmt, _ = lowered(f)
    (realize,) = nodes_of(stmt, n.Realize, "g")
    assert realize.bounds == ((n.Var("g.min.0"), n.Var("g.extent.0")),
                              (n.Var("g.min.1"), n.Var("g.extent.1")))
    lets = lets_of(stmt)
    values = {"f.min.0": 0, "f.extent.0": 4, "f.min.1": 10, "f.extent.1": 6}
    assert [evaluate(lets[nm], values, lets)
            for nm in ("g.min.0", "g.extent.0", "g.min.1", "g.extent.1")] == [0, 5, 10, 8]


def test_two_dimensional_compute_at_inner_loop_is_a_point_in_y_and_a_window_in_x():
    """g computed at f's x loop, f reading g[y, x + 0..2]: one row, three columns."""
    inp = halo.ImageParam(halo.int32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x]
    f[y, x] = g[y, x] + g[y, x + 1] + g[y, x + 2]
    g.compute_at(f, x)
    stmt, _ = lowered(f)
    lets = lets_of(stmt)
    values = {"f.min.0": 0, "f.extent.0": 4, "f.min.1": 0, "f.extent.1": 6,
              "f.s0.y": 2, "f.s0.x": 3}
    assert [evaluate(lets[nm], values, lets)
            for nm in ("g.s0.y.min", "g.s0.y.max", "g.s0.x.min", "g.s0.x.max")] == [2, 2, 3, 5]


def test_bound_fixes_the_computed_region_and_records_a_check():
    """g.bound(x, 0, 16) makes g's loop run over exactly [0, 15] and records a run-time
    check that this covers what f reads."""
    _, g, f = stencil_1d()
    g.compute_root().bound(x, 0, 16)
    stmt, ctx = lowered(f)
    lets = lets_of(stmt)
    assert evaluate(lets["g.s0.x.min"], OUT_1D, lets) == 0
    assert evaluate(lets["g.s0.x.max"], OUT_1D, lets) == 15
    (check,) = [c for c in ctx.checks if c.name == "g"]
    assert check.what == "bound"
    assert [evaluate(e, OUT_1D) for e in (check.lo, check.hi, check.min, check.extent)] == \
        [4, 15, 0, 16]


def test_bound_smaller_than_the_reads_fails_at_run_time():
    """A bound that doesn't cover what consumers read raises BoundsError before running."""
    _, g, f = stencil_1d()
    g.compute_root().bound(x, 0, 4)
    image = np.zeros(16, np.int32)
    with pytest.raises(halo.BoundsError, match=r"g.bound\(...\) fixes dimension 0"):
        f.realize((8,), inputs={"inp": image}, origin=(1,))


def updated_and_read_one_ahead():
    """(g, f): g[x] = x; g[x] += inp[x + r.x] over r in [0, 3); f[x] = g[x + 1]."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    r = halo.RDom((0, 3), name="r")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = x
    g[x] += inp[x + r.x]
    f[x] = g[x + 1]
    return g, f


def test_update_stage_covers_the_consumer_reads_and_pure_stage_covers_the_updates():
    """g[x] = x; g[x + 0] += ... read by f at g[x + 1]: both stages cover [min+1, max+1]."""
    _, f = updated_and_read_one_ahead()
    stmt, _ = lowered(f)
    lets = lets_of(stmt)
    got = [evaluate(lets[nm], OUT_1D, lets)
           for nm in ("g.s1.x.min", "g.s1.x.max", "g.s0.x.min", "g.s0.x.max")]
    assert got == [6, 15, 6, 15]


def test_pure_stage_of_an_update_over_its_own_loops_is_the_required_region_itself():
    """g[x] += ... over g's own x: what the update touches is the region its pure loops
    run over, so the pure stage's bounds are the required region, not min(it, the
    update's bounds): written so, a register array's indices fold to constants."""
    g, f = updated_and_read_one_ahead()
    f.split(x, xo, xi, 4)
    g.compute_at(f, xo)
    stmt, _ = lowered(f)
    lets = lets_of(stmt)
    for end in ("min", "max"):
        value = lets[f"g.s0.x.{end}"]
        assert not any(isinstance(v, n.Var) and v.name.startswith("g.s1.")
                       for v in nodes_of(value, n.Var)), value
    # f's tiles of 4 over [5, 14], the last shifted inwards; g read at x + 1
    for tile, (lo, hi) in enumerate([(6, 9), (10, 13), (12, 15)]):
        at = {**OUT_1D, "f.s0.x.xo": tile}
        for k in (0, 1):
            assert [evaluate(lets[f"g.s{k}.x.{end}"], at, lets)
                    for end in ("min", "max")] == [lo, hi]


def test_pure_stage_of_a_scatter_also_covers_the_points_the_update_writes():
    """g[x] = 0; g[r.x + 20] += 1 for r in [0, 3): the pure stage covers the read region
    and [20, 22], so every point the update reads was initialized."""
    r = halo.RDom((0, 3), name="r")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = 0
    g[r.x + 20] += 1
    f[x] = g[x]
    stmt, _ = lowered(f)
    lets = lets_of(stmt)
    assert evaluate(lets["g.s0.x.min"], OUT_1D, lets) == 5
    assert evaluate(lets["g.s0.x.max"], OUT_1D, lets) == 22


def test_input_reads_are_recorded_as_region_checks():
    """A check per input dimension holds the range read: [min - 1, max + 1] here."""
    inp, g, f = stencil_1d()
    _, ctx = lowered(f)
    (check,) = [c for c in ctx.checks if c.name == "inp"]
    assert check.what == "input" and check.dim == 0
    assert (evaluate(check.lo, OUT_1D), evaluate(check.hi, OUT_1D)) == (4, 15)


def test_output_writes_past_the_end_are_recorded_for_round_up_splits():
    """A round_up split of the output writes up to the next multiple of the factor; the
    output check says so, and realizing raises BoundsError."""
    f = halo.Func("f")
    f[x] = x
    f.split(x, xo, xi, 4, tail="round_up")
    _, ctx = lowered(f)
    (check,) = [c for c in ctx.checks if c.name == "f" and c.what == "output"]
    values = {"f.min.0": 0, "f.extent.0": 10}
    assert (evaluate(check.lo, values), evaluate(check.hi, values)) == (0, 11)
    with pytest.raises(halo.BoundsError, match="output f is written at"):
        f.realize((10,))


def test_reads_of_an_output_by_another_output_are_checked():
    """Pipeline([f, g]) with g[x] = f[x + 1] reads f past the realized region: an error,
    not a read of garbage."""
    f, g = halo.Func("f"), halo.Func("g")
    f[x] = x * 2
    g[x] = f[x + 1]
    with pytest.raises(halo.BoundsError):
        halo.Pipeline([f, g]).realize((5,))


def test_a_data_dependent_read_of_a_func_is_a_bounds_error():
    """f[x] = g[inp[x]] can't be bounded: the error says to clamp the index."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = x * 2
    f[x] = g[inp[x]]
    g.compute_root()
    with pytest.raises(halo.BoundsError, match="can't bound the region of g"):
        lowered(f)


def test_compute_at_over_let_bound_loop_bounds_checks_the_exact_input_region():
    """f[y, x] = g[y + x] with g at f's y loop reads inp over [min0 + min1, max0 + max1];
    for a 3x4 output that is [0, 5], so a 6-element input is enough."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x]
    f[y, x] = g[y + x]
    g.compute_at(f, y)
    _, ctx = lowered(f)
    (check,) = [c for c in ctx.checks if c.name == "inp"]
    values = {"f.min.0": 0, "f.extent.0": 3, "f.min.1": 0, "f.extent.1": 4}
    assert (evaluate(check.lo, values), evaluate(check.hi, values)) == (0, 5)
    got = f.realize((3, 4), inputs={inp: np.arange(6, dtype=np.int32)})
    np.testing.assert_array_equal(got, np.add.outer(np.arange(3), np.arange(4)))


def test_store_at_outside_compute_at_allocates_the_union_over_the_inner_loop():
    """g stored at f's yo and computed at yi (split by 4), f reading rows y..y+2: the
    allocation holds the 4 + 2 = 6 rows the yi loop touches."""
    inp = halo.ImageParam(halo.int32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x]
    f[y, x] = g[y, x] + g[y + 1, x] + g[y + 2, x]
    f.split(y, yo, yi, 4, tail="round_up")
    g.store_at(f, yo).compute_at(f, yi)
    stmt, _ = lowered(f)
    lets = lets_of(stmt)
    values = {"f.min.0": 0, "f.extent.0": 8, "f.min.1": 0, "f.extent.1": 5, "f.s0.y.yo": 1}
    assert evaluate(lets["g.min.0"], values, lets) == 4
    assert evaluate(lets["g.extent.0"], values, lets) == 6
    assert evaluate(lets["g.extent.1"], values, lets) == 5


@pytest.mark.parametrize("tail,extent", [("round_up", 12), ("guard", 10),
                                         ("shift_inwards", 10)])
def test_round_up_split_grows_the_allocation_to_a_multiple_of_the_factor(tail, extent):
    """g split by 4 and read over 10 points: round_up computes 12 points and allocates
    room for them (plus up to 3 more: the slack past the last point read that a round_up
    split may write); guard and shift_inwards stay within the 10."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = inp[x]
    f[x] = g[x]
    g.compute_root().split(x, xo, xi, 4, tail=tail)
    stmt, _ = lowered(f)
    lets = lets_of(stmt)
    assert evaluate(lets["g.min.0"], OUT_1D, lets) == 5
    allocated = evaluate(lets["g.extent.0"], OUT_1D, lets)
    assert extent <= allocated <= (extent + 3 if tail == "round_up" else extent)


def test_a_producer_in_a_guarded_tail_covers_a_point_in_range():
    """out's loop split by 4 with a guard runs past out's last point; g, computed inside
    it, then covers the last point again (the promise of the split's variable clamps g's
    region), not one past the end: the region over the whole loop, which outer producers
    and the input checks are sized by, counts only points in range."""
    c, co, ci = halo.vars("c co ci")
    inp = halo.ImageParam(halo.int32, 1, "inp")
    g, out = halo.Func("g"), halo.Func("out")
    g[c] = inp[c] * 2
    out[c] = g[c * 3]
    out.split(c, co, ci, 4, tail="guard")
    g.compute_at(out, ci)
    stmt, _ = lowered([out])
    lets = lets_of(stmt)
    one_point = {"out.min.0": 5, "out.extent.0": 1, "out.s0.c.co": 0}
    for i in range(4):  # guarded off past i == 0
        at = {**one_point, "out.s0.c.ci": i}
        assert evaluate(lets["g.min.0"], at, lets) == 15
        assert evaluate(lets["g.extent.0"], at, lets) == 1
