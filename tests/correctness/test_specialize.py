"""specialize: a stage's schedule chosen at run time by a condition. Each test runs sizes
on both sides of the condition against the reference, and checks that the lowered
condition picks the branch it should for those sizes."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.analysis.simplify import simplify
from halo.ir import nodes as n
from halo.ir.substitute import substitute
from halo.ir.visitor import walk
from tests.correctness.conftest import assert_matches_reference

y, x, yo, yi, xo, xi = halo.vars("y x yo yi xo xi")
rng = np.random.default_rng(3)


def two_stage():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2.0
    f[y, x] = g[y, x] + g[y, x + 1]
    return inp, g, f


def branch_taken(out: halo.Func, values: dict[str, int]) -> list[bool]:
    """For each specialization condition in the lowered IR (outermost first): whether it
    holds for these run-time values."""
    stmt = out.lower().stmt
    conditions = [s.condition for s in walk(stmt) if isinstance(s, n.IfThenElse)
                  and not ({v.name for v in walk(s.condition) if isinstance(v, n.Var)}
                           - set(values))]
    replaced = {k: n.const(v) for k, v in values.items()}
    results = [simplify(substitute(c, replaced)) for c in conditions]
    assert all(isinstance(r, n.Const) for r in results)
    return [bool(r.value) for r in results]


def branches(out: halo.Func, condition: str) -> tuple[str, str]:
    """The lowered code of the two sides of the specialization on `condition` (its
    printed form): later passes may add branches of their own inside each side."""
    from halo.ir.printer import expr_to_str, stmt_to_str
    stmt = out.lower().stmt
    ifs = [s for s in walk(stmt) if isinstance(s, n.IfThenElse)
           and expr_to_str(s.condition) == condition]
    assert len(ifs) == 1, f"expected one branch on {condition}, found {len(ifs)}"
    return stmt_to_str(ifs[0].then_case), stmt_to_str(ifs[0].else_case)


@pytest.mark.parametrize("width", [16, 24, 1, 7, 13])
def test_one_condition(width):
    """vectorize when the width is a multiple of 8; the default schedule otherwise."""
    inp, g, f = two_stage()
    g.compute_at(f, y)
    f.specialize(inp.shape[1] % 8 == 1).vectorize(x, 8)  # inp is one column wider than f
    then, otherwise = branches(f, "inp.extent.1 % 8 == 1")
    assert "ramp(" in then and "ramp(" not in otherwise
    taken = branch_taken(f, {"inp.extent.1": width + 1})
    assert taken == [width % 8 == 0]
    a = rng.random((5, width + 1), dtype=np.float32)
    assert_matches_reference(f, (5, width), inputs={inp: a})


@pytest.mark.parametrize("width,p", [(9, 0), (9, 3), (6, 3), (6, 0), (1, 3)])
def test_two_conditions_tried_in_order(width, p):
    """The first condition that holds wins; the default runs when none does."""
    inp, g, f = two_stage()
    param = halo.Param(halo.int32, "p", default=0)
    g.compute_root()
    f.specialize(inp.shape[1] % 3 == 1).split(x, xo, xi, 3, tail="guard").unroll(xi)
    f.specialize(param == 3).split(y, yo, yi, 2).parallel(yo)
    first, second = branch_taken(f, {"inp.extent.1": width + 1, "p": p})
    assert first == (width % 3 == 0) and second == (p == 3)
    a = rng.random((5, width + 1), dtype=np.float32)
    assert_matches_reference(f, (5, width), inputs={inp: a, param: p})


def test_specialized_update_stage():
    """An update stage specializes on its own; the pure stage keeps one nest."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, inp.shape[1]), name="r")
    s = halo.Func("s")
    s[y] = 0.0
    s[y] += inp[y, r]
    s.update(0).specialize(inp.shape[0] >= 8).split(y, yo, yi, 4, tail="guard")
    assert str(s.lower()).count("if 8 <= inp.extent.0:") == 1
    for h, w in [(9, 3), (2, 5), (8, 1)]:
        assert branch_taken(s, {"inp.extent.0": h}) == [h >= 8]
        a = rng.random((h, w), dtype=np.float32)
        assert_matches_reference(s, (h,), inputs={inp: a}, expected=a.sum(1))


def test_specialization_copies_the_schedule_at_the_call():
    """Calls before specialize apply to both; calls after it only to their side."""
    inp, g, f = two_stage()
    f.split(y, yo, yi, 2)
    special = f.specialize(inp.shape[0] > 4)
    f.parallel(yo)
    special.unroll(yi)
    then, otherwise = branches(f, "4 < inp.extent.0")
    assert "for f.s0.y.yo in range(" in then and "unrolled" not in otherwise
    assert "for f.s0.y.yo in parallel(" in otherwise
    assert f.specialize(inp.shape[0] > 4)._stage() is special._stage()  # same condition
    for h in (3, 7):
        a = rng.random((h, 6), dtype=np.float32)
        assert_matches_reference(f, (h, 5), inputs={inp: a})


def test_producer_computed_inside_every_branch():
    """A producer computed at a loop that every branch has runs in each branch."""
    inp, g, f = two_stage()
    f.split(x, xo, xi, 4)
    f.specialize(inp.shape[1] > 20).vectorize(xi)
    g.compute_at(f, xo)
    assert all("produce g:" in side for side in branches(f, "20 < inp.extent.1"))
    for w in (3, 25):
        a = rng.random((4, w + 1), dtype=np.float32)
        assert_matches_reference(f, (4, w), inputs={inp: a})


def test_producer_specialized_like_its_consumer_keeps_one_branch_in_each():
    """A producer computed inside its consumer's branches, specialized on the same
    condition, runs in each branch only the schedule that condition takes there."""
    inp, g, f = two_stage()
    wide = inp.shape[1] > 20
    f.split(x, xo, xi, 4)
    f.specialize(wide).vectorize(xi)
    g.compute_at(f, xo)
    g.specialize(wide).vectorize(x, 4)
    # one branch on the condition: g's own, inside each side of f's, is decided there
    then_case, else_case = branches(f, "20 < inp.extent.1")
    assert "ramp(" in then_case and "ramp(" not in else_case  # g vectorized on one side
    for w in (3, 25, 20, 21):
        a = rng.random((4, w + 1), dtype=np.float32)
        assert_matches_reference(f, (4, w), inputs={inp: a})


def test_specialized_cache_stage():
    """A cache stage can be specialized like any Func."""
    inp, g, f = two_stage()
    c = inp.cache_read("global", readers=[g])
    c.specialize(inp.shape[1] % 4 == 0).vectorize(c.args[1], 4)
    for w in (7, 8):
        a = rng.random((3, w), dtype=np.float32)
        assert_matches_reference(f, (3, w - 1), inputs={inp: a})


def test_parallel_loops_and_stack_buffers_in_both_branches():
    """Both branches outline a parallel loop of the same name and allocate the same
    producer on the stack."""
    inp, g, f = two_stage()
    f.parallel(y)
    f.specialize(inp.shape[0] > 3).vectorize(x, 4)
    g.compute_at(f, y).store_in("stack").bound(x, 0, 40)
    for side in branches(f, "3 < inp.extent.0"):
        assert "in parallel(" in side and "as float32 in stack" in side
    for h, w in ((2, 5), (6, 20), (6, 39)):
        assert branch_taken(f, {"inp.extent.0": h}) == [h > 3]
        a = rng.random((h, 40), dtype=np.float32)
        assert_matches_reference(f, (h, w), inputs={inp: a})


def test_print_loop_nest_shows_the_branches(capsys):
    """The loop-structure view keeps the run-time choice visible."""
    inp, g, f = two_stage()
    f.specialize(inp.shape[1] > 8).split(x, xo, xi, 4)
    f.print_loop_nest()
    text = capsys.readouterr().out
    assert text.startswith("produce f:\n  if 8 < inp.extent.1:\n")
    special, default = text.split("\n  else:\n")  # the outermost branch, at depth 1
    assert "for f.s0.x.xi in range(4):" in special and "xi" not in default
    assert default == ("    for f.s0.y in range(f.min.0, f.s0.y.max + 1):\n"
                       "      for f.s0.x in range(f.min.1, f.s0.x.max + 1):\n"
                       "        f[...] = ...\n")


def test_producer_at_a_loop_nested_differently_in_each_branch():
    """Loop xo sits under y in the specialization and under yo by default; a producer
    computed at xo is produced inside each."""
    inp, g, f = two_stage()
    f.specialize(inp.shape[1] % 2 == 0).split(x, xo, xi, 2, tail="guard")
    f.tile(y, x, yo, xo, yi, xi, 2, 4)
    g.compute_at(f, xo)
    assert all("produce g:" in side for side in branches(f, "inp.extent.1 % 2 == 0"))
    for h, w in ((1, 1), (5, 9), (4, 7)):
        assert branch_taken(f, {"inp.extent.1": w + 1}) == [(w + 1) % 2 == 0]
        a = rng.random((h, w + 1), dtype=np.float32)
        assert_matches_reference(f, (h, w), inputs={inp: a})


def test_pinned_extent_makes_the_reduction_loop_constant():
    """Under `inp.shape[1] == 3` the reduction loop has 3 iterations, so it unrolls;
    the default keeps the symbolic loop."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, inp.shape[1]), name="r")
    s = halo.Func("s")
    s[y] = 0.0
    s[y] += inp[y, r]
    s.update(0).specialize(inp.shape[1] == 3).unroll(r.x)
    then, otherwise = str(s.lower()).split("else:")
    assert "r.x" not in then and "inp.extent.1" not in then.split("if", 1)[1].split("\n", 1)[1]
    assert "for s.s1.r.x in range(inp.extent.1):" in otherwise
    for w in (3, 4, 1):
        assert branch_taken(s, {"inp.extent.1": w}) == [w == 3]
        a = rng.random((5, w), dtype=np.float32)
        assert_matches_reference(s, (5,), inputs={inp: a}, expected=a.sum(1))


def test_round_up_only_where_the_condition_makes_it_exact():
    """A branch that reads past the input's end unless its condition holds is checked
    only when taken: round_up by 4 is exact when the width is a multiple of 4."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] + 1.0
    f[y, x] = g[y, x] * 3.0
    g.compute_root()
    g.specialize(inp.shape[1] % 4 == 0).split(x, xo, xi, 4, tail="round_up").vectorize(xi)
    for w in (8, 7, 1, 4):
        assert branch_taken(f, {"inp.extent.1": w}) == [w % 4 == 0]
        a = rng.random((3, w), dtype=np.float32)
        assert_matches_reference(f, (3, w), inputs={inp: a}, expected=(a + 1.0) * 3.0)
    with pytest.raises(halo.BoundsError, match="input inp is accessed at"):
        f.realize((3, 6), inputs={inp: rng.random((3, 5), dtype=np.float32)})


def test_bool_param_condition():
    """A bool Param selects the branch; inside it the Param is known to be True."""
    inp, g, f = two_stage()
    fast = halo.Param(halo.bool_, "fast", default=False)
    f.specialize(fast).vectorize(x, 4)
    text = str(f.lower())
    assert text.count("if fast:") == 1
    for flag in (True, False):
        a = rng.random((3, 10), dtype=np.float32)
        assert_matches_reference(f, (3, 9), inputs={inp: a, fast: flag})
    assert "f.specialize(fast).vectorize(x, 4)" in halo.schedule_source(f)
