"""Inline reductions (`halo.sum`, `maximum`, ...) are computed at the innermost loop of
the stage that uses them (as in Halide), so their producers can be computed at the
consumer's loops; `name=` names one and `.func` schedules it; a name halo made up is
always shown with where it came from."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import halo
from halo.lang.environment import Environment

from .conftest import assert_matches_reference

b, c, y, x, xo, xi = halo.vars("b c y x xo xi")
rng = np.random.default_rng(12)


def layernorm(cols: int, named: bool = False):
    """mean and variance of each row by inline sums, then the normalized rows."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, cols), name="r")
    mean, var, norm = halo.Func("mean"), halo.Func("var"), halo.Func("norm")
    mean[b] = halo.sum(inp[b, r.x], name="rowsum" if named else None) / float(cols)
    d = inp[b, r.x] - mean[b]
    var[b] = halo.sum(d * d, name="sqsum" if named else None) / float(cols)
    norm[b, c] = (inp[b, c] - mean[b]) / halo.sqrt(var[b] + 1e-5)
    return inp, mean, var, norm


def _sums(norm):
    env = Environment.of([norm])
    return [f for f in env.funcs.values() if f.schedule.inline_reduction]


def _default(inp, mean, var, norm):
    pass


def _producers_at_rows(inp, mean, var, norm):
    """The schedule that failed before ("used by sum1, norm. Legal levels: root")."""
    mean.compute_at(norm, b)
    var.compute_at(norm, b)


def _producers_at_rows_vectorized(inp, mean, var, norm):
    mean.compute_at(norm, b)
    var.compute_at(norm, b)
    norm.vectorize(c, 4).parallel(b)


def _rows_in_tiles(inp, mean, var, norm):
    norm.split(b, xo, xi, 3)
    mean.compute_at(norm, xo)
    var.compute_at(norm, xi).store_at(norm, xo)


SCHEDULES = [_default, _producers_at_rows, _producers_at_rows_vectorized, _rows_in_tiles]


@pytest.mark.parametrize("rows,cols", [(1, 1), (5, 7), (13, 17)])
@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda s: s.__name__.strip("_"))
def test_layernorm_matches_reference(rows, cols, schedule):
    inp, mean, var, norm = layernorm(cols)
    schedule(inp, mean, var, norm)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    centered = a - a.mean(axis=1, keepdims=True)
    want = centered / np.sqrt((centered * centered).mean(axis=1, keepdims=True) + 1e-5)
    assert_matches_reference(norm, (rows, cols), inputs={inp: a}, expected=want,
                             rtol=1e-4, atol=1e-4)


def test_producers_at_the_consumers_loop_compute_each_row_once():
    """mean and var at norm's rows, their sums inside them: each sum is one value on the
    stack per row, computed once per row (1 + 7 stores), not per point of norm."""
    inp, mean, var, norm = layernorm(7)
    _producers_at_rows(inp, mean, var, norm)
    text = _loop_nest(norm)
    sums = [f.name for f in _sums(norm)]
    for name in ("mean", "var", *sums):
        assert text.index("for norm.s0.b") < text.index(f"produce {name}:")
    for name in sums:
        assert f"allocate {name} in stack" in text
    kernel = norm.compile(halo.Target("host", count_stores=True))
    kernel((5, 7), inp=rng.random((5, 7), dtype=np.float32))
    assert [kernel.store_counts[name] for name in sums] == [5 * (1 + 7)] * 2
    assert kernel.store_counts["mean"] == kernel.store_counts["var"] == 5


def test_default_places_a_sum_at_the_innermost_loop_of_its_user():
    """Unscheduled, the sum in var (inlined into norm) is computed per point of norm;
    the sum in mean, which var's sum and norm both read, at root."""
    inp, mean, var, norm = layernorm(5)
    text = _loop_nest(norm)
    in_mean, in_var = (f.name for f in _sums(norm))
    assert text.index(f"produce {in_mean}:") < text.index("for norm.s0.b")
    assert text.index("for norm.s0.c") < text.index(f"produce {in_var}:")


def test_named_reductions_are_scheduled_through_func():
    """name= names the Func; .func of what the reduction returns schedules it."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 6), name="r")
    rowsum = halo.sum(inp[y, r.x], name="rowsum")
    peak = halo.maximum(inp[y, r.x], name="peak")
    out = halo.Func("out")
    out[y, x] = (inp[y, x] - rowsum) / (peak + 10.0)
    assert rowsum.func.name == "rowsum" and peak.func.name == "peak"
    rowsum.func.compute_root().parallel(y)
    peak.func.compute_at(out, y)
    out.vectorize(x, 4)
    a = rng.random((9, 6), dtype=np.float32)
    want = (a - a.sum(axis=1, keepdims=True)) / (a.max(axis=1, keepdims=True) + 10.0)
    assert_matches_reference(out, (9, 6), inputs={inp: a}, expected=want, rtol=1e-4)
    source = halo.schedule_source(out)
    assert "rowsum.compute_root()" in source and "peak.compute_at(out, y)" in source
    assert "#" not in source  # names the user wrote need no comment


@pytest.mark.parametrize("verb,np_verb", [(halo.product, np.prod), (halo.minimum, np.min),
                                           (halo.maximum, np.max), (halo.sum, np.sum)])
def test_each_verb_in_an_update_and_a_vectorized_consumer(verb, np_verb):
    """An inline reduction used by an update stage, and one under a vectorized loop with
    a non-dividing split, on a prime size."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 3), name="r")
    out = halo.Func("out")
    out[y, x] = verb(inp[y, x + r.x])
    out[y, x] += verb(inp[y, x + r.x] * 0.5)
    out.vectorize(x, 4)
    out.update(0).vectorize(x, 4)
    a = rng.random((3, 13), dtype=np.float32) + 0.5
    windows = np.stack([a[:, k:k + 11] for k in range(3)])
    want = np_verb(windows, axis=0) + np_verb(windows * 0.5, axis=0)
    assert_matches_reference(out, (3, 11), inputs={inp: a}, expected=want, rtol=1e-5)


def test_nested_reductions():
    """A maximum over r of terms that use a sum over s: the sum is computed inside the
    maximum's update loop."""
    inp = halo.ImageParam(halo.int32, 2, "inp")
    r = halo.RDom((0, 4), name="r")
    s = halo.RDom((0, 3), name="s")
    out = halo.Func("out")
    out[x] = halo.maximum(inp[0, x + r.x] * (r.x - 1) + halo.sum(inp[s.x, x]))
    a = rng.integers(-50, 50, (3, 12)).astype(np.int32)
    want = np.max(np.stack([a[0, k:k + 9] * (k - 1) for k in range(4)]), axis=0) + \
        a[:, :9].sum(axis=0)
    assert_matches_reference(out, (9,), inputs={inp: a}, expected=want.astype(np.int32))
    text = _loop_nest(out)
    inner = next(f.name for f in _sums(out) if f.schedule.inline_reduction.verb == "sum")
    assert text.index("for maximum") < text.index(f"produce {inner}:")


def _loop_nest(f) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        f.print_loop_nest()
    return buffer.getvalue()


# ------------------------------------------------------------ names halo made up


def _made_up():
    """norm over a Func g that both a default-named sum and norm read."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 4), name="r")
    g, mean, norm = halo.Func("g"), halo.Func("mean"), halo.Func("norm")
    g[b, c] = inp[b, c] * 2.0
    with halo.NameScope():
        total = halo.sum(g[b, r.x])
    mean[b] = total / 4.0
    norm[b, c] = g[b, c] - mean[b]
    return inp, g, total.func, norm


def test_errors_say_where_a_made_up_name_came_from():
    _, g, total, norm = _made_up()
    total.compute_root()
    g.compute_at(norm, c)
    with pytest.raises(halo.ScheduleError) as error:
        norm.realize((3, 4), inputs={"inp": np.ones((3, 4), np.float32)})
    assert "sum0 (the halo.sum in mean's definition)" in str(error.value)
    assert str(error.value).count("the halo.sum in mean's definition") == 1


def test_loop_nests_and_schedules_say_where_a_made_up_name_came_from():
    _, g, total, norm = _made_up()
    text = _loop_nest(norm)
    assert text.startswith("# sum0: the halo.sum in mean's definition\n")
    total.compute_root()
    source = halo.schedule_source(norm)
    assert source.startswith("# sum0: the halo.sum in mean's definition\n")
    assert "sum0.compute_root()" in source


def test_a_reduction_used_twice_is_computed_at_root_and_says_by_whom():
    inp = halo.ImageParam(halo.float32, 1, "inp")
    r = halo.RDom((0, 3), name="r")
    with halo.NameScope():
        total = halo.sum(inp[x + r.x])
    a, out = halo.Func("a"), halo.Func("out")
    a[x] = total * 2.0
    a.compute_root()
    out[x] = a[x] + total
    text = _loop_nest(out)
    assert text.startswith("# sum0: the halo.sum used by a, out\n")
    assert text.index("produce sum0:") < text.index("produce a:")
    values = rng.random(9, dtype=np.float32)
    assert_matches_reference(out, (7,), inputs={inp: values})


def test_a_bad_reduction_name_is_refused():
    inp = halo.ImageParam(halo.float32, 1, "inp")
    r = halo.RDom((0, 3), name="r")
    with pytest.raises(halo.DefinitionError, match="not a valid halo name"):
        halo.sum(inp[x + r.x], name="row sum")
    f, out = halo.Func("clash"), halo.Func("out")
    f[x] = inp[x]
    out[x] = f[x] + halo.sum(inp[x + r.x], name="clash")
    with pytest.raises(halo.HaloError, match="clash"):
        out.realize((4,), inputs={inp: np.ones(6, np.float32)})
