"""What the schedule verbs record: enums for the strings users pass, bounds as IR, and
the one way a stage is named."""
from __future__ import annotations

import json

import pytest

import halo
from halo.analysis.loops import TailStrategy
from halo.ir import nodes as n
from halo.lang.schedule_files import schedule_to_json
from halo.schedule.records import (
    CacheKind,
    MemoryScope,
    PlacementKind,
    stage_label,
)

y, x, xo, xi = halo.vars("y x xo xi")


def _pair():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2.0
    f[y, x] = g[y, x] + 1.0
    return inp, g, f


def test_stage_label_is_the_func_or_its_update():
    assert stage_label("f", 0) == "f"
    assert stage_label("f", 1) == "f.update(0)"
    assert stage_label("f", 3) == "f.update(2)"


def test_verbs_record_enums_for_the_strings_users_pass():
    inp, g, f = _pair()
    g.compute_at(f, y).store_in("stack")
    f.split(x, xo, xi, 4, tail="guard")
    copy = inp.cache_read("global", readers=[g])
    assert g.schedule.compute_level.kind is PlacementKind.AT
    assert g.schedule.memory_scope is MemoryScope.STACK
    assert f.schedule.stages[0].transforms[0].tail is TailStrategy.GUARD
    assert copy.schedule.cache.kind is CacheKind.READ
    assert copy.schedule.cache.scope is MemoryScope.GLOBAL


def test_json_keeps_writing_the_strings():
    """The JSON form is unchanged: tails, placement kinds and scopes as strings."""
    inp, g, f = _pair()
    g.compute_at(f, y).store_in("stack")
    f.split(x, xo, xi, 4, tail="guard")
    data = json.loads(schedule_to_json(f))
    assert data["f"]["stages"][0]["transforms"] == [{"split": ["x", "xo", "xi", 4, "guard"]}]
    assert data["g"]["compute_level"]["kind"] == "at"
    assert data["g"]["memory_scope"] == "stack"


def test_bound_records_ir():
    """Ints become int32 constants; an Expr is recorded as its IR."""
    w = halo.Param(halo.int32, "w")
    _, g, _ = _pair()
    g.bound(x, 0, w + 1).bound(y, -1, 40)
    assert g.schedule.bounds["y"] == (n.const(-1), n.const(40))
    lo, extent = g.schedule.bounds["x"]
    assert lo == n.const(0) and extent == (w + 1).node


def test_bound_with_an_expression_prints_as_source():
    w = halo.Param(halo.int32, "w")
    _, g, f = _pair()
    g.compute_root().bound(x, 0, w)
    assert "g.bound(x, 0, w)" in halo.schedule_source(f)


def test_bound_refuses_what_is_not_an_int_or_expr():
    _, g, _ = _pair()
    with pytest.raises(halo.ScheduleError, match=r"g\.bound\(x, \.\.\.\): the min and extent "
                                                 "must be ints or halo Exprs"):
        g.bound(x, 0, "8")
