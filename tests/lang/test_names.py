"""Default names: distinct within one algorithm, and the same on every rebuild of it in
its own `halo.NameScope`, whatever was built before in the process."""
from __future__ import annotations

import halo
from halo.lang.schedule_files import schedule_to_json

x = halo.Var("x")


def _algorithm() -> halo.Func:
    """An algorithm whose Funcs, RDom, input and inline reduction all go unnamed."""
    inp = halo.ImageParam(halo.float32, 1)
    r = halo.RDom((0, 3))
    edge = halo.boundary.repeat_edge(inp)
    blurred = halo.Func()
    blurred[x] = halo.sum(edge[x + r])
    out = halo.Func()
    out[x] = blurred[x] * 2.0
    out.split(x, halo.Var("xo"), halo.Var("xi"), 4)
    return out


def test_unnamed_funcs_get_distinct_names():
    """Two unnamed Funcs in one scope never share a name."""
    with halo.NameScope():
        f, g = halo.Func(), halo.Func()
    assert (f.name, g.name) == ("f0", "f1")


def test_default_names_repeat_on_a_rebuild_in_a_fresh_scope():
    """The same algorithm built twice, each in its own scope, names everything the same,
    so its loop nest and saved schedule are the same text."""
    _algorithm()  # names handed out before do not matter
    with halo.NameScope():
        first = _algorithm()
    with halo.NameScope():
        second = _algorithm()
    assert first.name == second.name == "f1"
    assert str(first.lower().stmt) == str(second.lower().stmt)
    assert schedule_to_json(first) == schedule_to_json(second)
    assert halo.schedule_source(first) == halo.schedule_source(second)


def test_an_inner_scope_leaves_the_outer_numbering_alone():
    """Leaving a `with` block goes back to the enclosing scope's numbering."""
    with halo.NameScope():
        before = halo.Func()
        with halo.NameScope():
            inner = halo.Func()
        after = halo.Func()
    assert (before.name, inner.name, after.name) == ("f0", "f0", "f1")
