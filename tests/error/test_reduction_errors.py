"""Refused reduction schedules: each message names the Func and the call, says why, and
what would be legal. The whole message is asserted: it is what the user reads."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.ir.nodes import ForKind

y, x, u, ro, ri = halo.vars("y x u ro ri")

WAYS_OUT = ("To allow it, use rfactor(...) (an associative update becomes a parallel "
            "intermediate plus a merge), .atomic() on this stage first (atomic updates), or "
            ".allow_race_conditions() on this stage first (at your own risk).")


def message_of(call) -> str:
    with pytest.raises(halo.ScheduleError) as info:
        call()
    return str(info.value)


def histogram():
    image = halo.ImageParam(halo.uint8, 2, "image")
    r = halo.RDom(image, name="r")
    h = halo.Func("h")
    h[x] = 0
    h[halo.cast(halo.int32, image[r.x, r.y])] += 1
    return h, r


def total():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom(inp, name="r")
    g = halo.Func("g")
    g[()] = 0.0
    g[()] += inp[r.x, r.y]
    return inp, g, r


def recurrence():
    inp = halo.ImageParam(halo.float32, 1, "inp")
    r = halo.RDom((1, 9), name="r")
    f = halo.Func("f")
    f[x] = inp[x]
    f[r] = f[r - 1] + f[r]
    return f, r


def test_parallel_scatter_race():
    """A histogram's row loop can't run in parallel: two pixels may hit one bin."""
    h, r = histogram()
    assert message_of(lambda: h.update(0).parallel(r.x)) == (
        "h.update(0).parallel(r.x): running reduction loop 'r.x' in parallel would race: "
        "the left side h[int32(image[r.x, r.y])] does not tell the values of r.x apart, so "
        f"two iterations may update the same point. {WAYS_OUT} The loops of h.update(0) "
        "are, outermost first: r.x, r.y")
    assert h.schedule.stages[1].dims[0].kind is ForKind.SERIAL


def test_refused_call_with_a_factor_leaves_the_schedule_unchanged():
    """vectorize(r.y, 8) splits first; when the vectorize is refused, so is the split,
    and the message shows the call as written."""
    h, r = histogram()
    before = (list(h.schedule.stages[1].dims), list(h.schedule.stages[1].transforms))
    assert message_of(lambda: h.update(0).vectorize(r.y, 8)) == (
        "h.update(0).vectorize(r.y, 8): running reduction loop 'r_y_vec' vectorized would "
        "race: the left side h[int32(image[r.x, r.y])] does not tell the values of r.y "
        f"apart, so two iterations may update the same point. {WAYS_OUT} The loops of "
        "h.update(0) are, outermost first: r.x, r.y")
    assert (h.schedule.stages[1].dims, h.schedule.stages[1].transforms) == before


def test_vectorized_recurrence_race():
    """A recurrence reads the previous iteration's result."""
    f, r = recurrence()
    assert message_of(lambda: f.update(0).vectorize(r.x)) == (
        "f.update(0).vectorize(r.x): running reduction loop 'r.x' vectorized would race: "
        "it reads f[r.x - 1] while writing f[r.x], so one iteration may need another's "
        f"result. {WAYS_OUT} The loops of f.update(0) are, outermost first: r.x")


def test_reorder_of_a_sum():
    """Swapping the loops of a total changes the order of the additions."""
    _, g, r = total()
    assert message_of(lambda: g.update(0).reorder(r.y, r.x)) == (
        "g.update(0).reorder(r.y, r.x): this swaps the reduction loops r.x and r.y, but the "
        "left side g[] does not tell the values of r.x apart, so two iterations may update "
        f"the same point. {WAYS_OUT} The loops of g.update(0) are, outermost first: r.x, r.y")


def test_reorder_of_split_reduction_loops():
    """Column sums: the halves of the row loop keep their order even when the column loop
    is vectorized."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom(inp, name="r")
    c = halo.Func("c")
    c[y] = 0.0
    c[r.y] += inp[r.x, r.y]
    c.update(0).vectorize(r.y).split(r.x, ro, ri, 4)
    assert message_of(lambda: c.update(0).reorder(ri, ro)) == (
        "c.update(0).reorder(ri, ro): this swaps the reduction loops ro and ri, but the "
        "left side c[r.y] does not tell the values of r.x apart, so two iterations may "
        f"update the same point. {WAYS_OUT} The loops of c.update(0) are, outermost first: "
        "ro, ri, r.y")


def test_refused_tile_leaves_the_schedule_unchanged():
    """Tiling the two loops of a float sum swaps them; the refused tile undoes its
    splits."""
    _, g, r = total()
    assert message_of(lambda: g.update(0).tile(r.x, r.y, ro, u, ri, x, 2, 2)) == (
        "g.update(0).reorder(ro, u, ri, x): this swaps the reduction loops ri and u, but "
        "the left side g[] does not tell the values of r.x apart, so two iterations may "
        f"update the same point. {WAYS_OUT} The loops of g.update(0) are, outermost first: "
        "ro, ri, u, x")
    assert g.schedule.stages[1].dims == [halo.schedule.Dim("r.x", pure=False),
                                         halo.schedule.Dim("r.y", pure=False)]
    assert g.schedule.stages[1].transforms == []


def test_atomic_update_reading_another_point():
    """An atomic operation covers one point; a recurrence reads two."""
    f, _ = recurrence()
    assert message_of(lambda: f.update(0).atomic()) == (
        "f.update(0).atomic(): it reads f[r.x - 1] while writing f[r.x], so one iteration "
        "may need another's result; an atomic update reads and writes one point. Legal: "
        "rfactor(...) if the update is an associative reduction, or "
        ".allow_race_conditions() at your own risk. The loops of f.update(0) are, "
        "outermost first: r.x")


def test_atomic_plain_overwrite():
    """An update that doesn't read its Func: the last write wins, atomics can't help."""
    image = halo.ImageParam(halo.uint8, 2, "image")
    r = halo.RDom(image, name="r")
    s = halo.Func("s")
    s[x] = 0
    s[halo.cast(halo.int32, image[r.x, r.y])] = r.x
    assert message_of(lambda: s.update(0).atomic()) == (
        "s.update(0).atomic(): the update doesn't read s, so which write lands last decides "
        "the result and no atomic operation makes that deterministic. Legal: keep the "
        "reduction loops serial, or .allow_race_conditions() at your own risk. The loops of "
        "s.update(0) are, outermost first: r.x, r.y")


def test_atomic_order_dependent_update():
    """f = f * 2 + e reads only its own point, but the order of the updates still
    decides the result: atomics can't make that deterministic."""
    image = halo.ImageParam(halo.uint8, 2, "image")
    r = halo.RDom(image, name="r")
    h = halo.Func("h")
    h[x] = 0
    i = halo.cast(halo.int32, image[r.x, r.y])
    h[i] = h[i] * 2 + r.y
    assert message_of(lambda: h.update(0).atomic()) == (
        "h.update(0).atomic(): the update h[int32(image[r.x, r.y])] = "
        "h[int32(image[r.x, r.y])] * 2 + r.y gives a result that depends on the order of "
        f"the updates, which atomics don't fix; atomic() needs {_legal_forms('h')}. Legal: "
        "keep the reduction loops serial, or .allow_race_conditions() at your own risk. "
        "The loops of h.update(0) are, outermost first: r.x, r.y")


def _legal_forms(name: str) -> str:
    return (f"{name} = {name} + e, e + {name}, {name} - e, {name} * e, e * {name}, "
            f"{name} & e, {name} | e, {name} ^ e, min({name}, e), max({name}, e) (either "
            f"order, or as a select on {name} < e that picks e where it holds, "
            f"select(e < {name}, e, {name})), with e free of {name}")


def _not_associative(name: str, lhs: str, value: str) -> str:
    return (f"{name}.update(0).rfactor(r.x, u): the update {lhs} = {value} is not an "
            "associative reduction halo can split: rfactor needs "
            f"{_legal_forms(name)} (and {name} read nowhere else), so that partial results "
            "can be combined in any order. Legal instead: keep the reduction loops serial, "
            f"or .atomic() for updates that read {name} only at the point they write. The "
            f"loops of {name}.update(0) are, outermost first: r.x, r.y")


def test_rfactor_non_associative():
    """f = f * 2 + e is not an associative reduction."""
    inp, _, r = total()
    m = halo.Func("m")
    m[()] = 0.0
    m[()] = m[()] * 2.0 + inp[r.x, r.y]
    assert message_of(lambda: m.update(0).rfactor(r.x, u)) == \
        _not_associative("m", "m[]", "m[] * 2.0 + inp[r.x, r.y]")


def test_rfactor_value_reads_the_func_twice():
    """f - f * e: e reads f, so it isn't f op e."""
    inp, _, r = total()
    m = halo.Func("m2")
    m[()] = 0.0
    m[()] = m[()] - m[()] * inp[r.x, r.y]
    assert message_of(lambda: m.update(0).rfactor(r.x, u)) == \
        _not_associative("m2", "m2[]", "m2[] - m2[] * inp[r.x, r.y]")


def test_rfactor_of_a_loop_that_is_not_a_reduction_loop():
    _, g, r = total()
    assert message_of(lambda: g.update(0).rfactor(u, x)) == (
        "g.update(0).rfactor(u, x): 'u' is not a reduction loop of this stage; its "
        "reduction loops are r.x, r.y. The loops of g.update(0) are, outermost first: r.x, "
        "r.y")


def test_rfactor_of_the_only_reduction_loop():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 5), name="r")
    k = halo.Func("k")
    k[y] = 0.0
    k[y] += inp[y, r]
    assert message_of(lambda: k.update(0).rfactor(r.x, u)) == (
        "k.update(0).rfactor(r.x, u): 'r.x' is the only reduction loop, which would leave "
        "the intermediate nothing to reduce; split it first (split(r.x, rxo, rxi, 16)) and "
        "rfactor one of the halves. The loops of k.update(0) are, outermost first: y, r.x")


def test_rfactor_with_a_used_name():
    _, g, r = total()
    g.update(0).split(r.y, ro, ri, 2)
    assert message_of(lambda: g.update(0).rfactor(r.x, ri)) == (
        "g.update(0).rfactor(r.x, ri): the name 'ri' is already used by g or this stage; "
        "pick a new Var for the intermediate's dimension. The loops of g.update(0) are, "
        "outermost first: r.x, ro, ri")


def test_rfactor_after_loop_kinds():
    _, g, r = total()
    g.update(0).unroll(r.y, 2)
    assert message_of(lambda: g.update(0).rfactor(r.x, u)) == (
        "g.update(0).rfactor(r.x, u): loop(s) r_y_unroll already have a loop kind; call "
        "rfactor first and schedule the intermediate and the merge after. The loops of "
        "g.update(0) are, outermost first: r.x, r.y, r_y_unroll")


def test_rfactor_after_splitting_a_pure_loop():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom(inp, name="r")
    g = halo.Func("g5")
    g[x] = 0.0
    g[x] += inp[r.x, r.y] + x
    g.update(0).split(x, ro, ri, 2)
    assert message_of(lambda: g.update(0).rfactor(r.x, u)) == (
        "g5.update(0).rfactor(r.x, u): split(x, ...) splits a pure loop; call rfactor "
        "before scheduling the pure loops of this stage. The loops of g5.update(0) are, "
        "outermost first: ro, ri, r.x, r.y")


def test_rfactor_without_rdom():
    g = halo.Func("g6")
    g[x] = 0.0
    g[x] = g[x] + 1.0
    assert message_of(lambda: g.update(0).rfactor(x, u)) == (
        "g6.update(0).rfactor(x, u): this update has no RDom, so there is no reduction to "
        "factor. The loops of g6.update(0) are, outermost first: x")


def test_rfactor_name_taken():
    _, g, r = total()
    assert message_of(lambda: g.update(0).rfactor(r.x, u, name="inp")) == (
        "g.update(0).rfactor(r.x, u): a Func or input named 'inp' is already part of this "
        "pipeline; pass another name=... to rfactor. The loops of g.update(0) are, "
        "outermost first: r.x, r.y")


def test_fusing_a_row_loop_into_a_scan_keeps_the_scan_in_order():
    """A scan along each row, rows and columns split: fusing the inner row loop with the
    inner column loop inside the outer column loop keeps every row's columns in order (it
    runs, as the reference does); the fused loop outside the outer column loop would run
    inner columns before outer ones, and is refused."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((1, 12), name="r")
    s = halo.Func("s")
    s[y, x] = inp[y, x]
    s[y, r.x] = s[y, r.x - 1] * 0.5 + inp[y, r.x]
    yo, yi, rxo, rxi, f = halo.vars("yo yi rxo rxi f")
    scan = s.update(0).split(y, yo, yi, 2).split(r.x, rxo, rxi, 5).reorder(yo, rxo, yi, rxi)
    scan.fuse(yi, rxi, f)
    data = np.random.default_rng(5).standard_normal((7, 13)).astype(np.float32)
    got = s.realize((7, 13), inputs={inp: data})
    np.testing.assert_allclose(got, halo.reference(s, (7, 13), inputs={inp: data}),
                               rtol=1e-5)
    assert message_of(lambda: scan.reorder(yo, f, rxo)).startswith(
        "s.update(0).reorder(yo, f, rxo): this swaps the reduction loops rxo and rxi, but "
        "it reads s[y, r.x - 1] while writing s[y, r.x]")
