"""Schedule calls (`halo.schedule.calls`): how they print as halo source, and their JSON
round trip."""
from __future__ import annotations

import json

import pytest

import halo
from halo.errors import ScheduleError
from halo.schedule.calls import Call, IntrinsicRef, StageRef, calls_source, loop_names

CALLS = [
    Call(StageRef("blur"), "split", ("x", "xo", "xi", 8), (("tail", "guard"),)),
    Call(StageRef("blur", 1), "reorder", ("r.x", "xi", "xo")),
    Call(StageRef("blur", 0, "inp.shape[1] % 8 == 0"), "vectorize", ("xi", 4)),
    Call(StageRef("inp"), "cache_read", ("shared",), (("readers", (StageRef("blur"),)),),
         result="inp_shared"),
    Call(StageRef("inp_shared"), "compute_at", (StageRef("blur", 1), "xo")),
    Call(StageRef("blur", 1), "rfactor", ("r.x", "u"), (("name", "blur_rf"),),
         result="blur_rf"),
    Call(StageRef("blur"), "tensorize", ("xi", IntrinsicRef("dot4"))),
    Call(StageRef("blur"), "bound", ("x", -1, 2.5)),
    Call(StageRef("blur"), "compute_root"),
]


def test_calls_print_as_halo_source():
    """Loop names print bare after one declaration of the loop Vars; memory scopes and
    keyword strings print quoted; a stage prints as `update(k - 1)` and a
    specialization as `.specialize(condition)`."""
    assert calls_source(CALLS) == """\
x, xo, xi, u = halo.vars("x xo xi u")
blur.split(x, xo, xi, 8, tail='guard')
blur.update(0).reorder(r.x, xi, xo)
blur.specialize(inp.shape[1] % 8 == 0).vectorize(xi, 4)
inp_shared = inp.cache_read('shared', readers=[blur])
inp_shared.compute_at(blur.update(0), xo)
blur_rf = blur.update(0).rfactor(r.x, u, name='blur_rf')
blur.tensorize(xi, dot4)
blur.bound(x, -1, 2.5)
blur.compute_root()
"""


def test_one_loop_name_declares_a_one_element_tuple():
    calls = [Call(StageRef("f"), "parallel", ("y",))]
    assert calls_source(calls) == 'y, = halo.vars("y")\nf.parallel(y)\n'
    assert loop_names([Call(StageRef("f"), "store_in", ("global",))]) == []


def test_calls_round_trip_through_json():
    """What a tuner's database stores: every call, through json.dumps and back, is the
    same call."""
    text = json.dumps([c.to_json() for c in CALLS])
    assert [Call.from_json(d) for d in json.loads(text)] == CALLS


def test_an_expression_argument_has_no_json_form():
    """A bound given as an Expr prints as source, but JSON wants it as text."""
    n = halo.Param(halo.int32, "n")
    call = Call(StageRef("f"), "bound", ("x", 0, n + 1))
    assert call.source() == "f.bound(x, 0, n + 1)"
    with pytest.raises(ScheduleError, match="no JSON form"):
        call.to_json()
