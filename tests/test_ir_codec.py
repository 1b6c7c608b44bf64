"""IR as text and back (`halo/ir/codec.py`): every value reads back equal, shared
subtrees are written once, and what isn't such a text is refused."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import halo
from halo.driver import lowered_from_text, lowered_text
from halo.fuzz.check import Case, case_program
from halo.ir import codec, types
from halo.ir import nodes as n
from halo.ir.deep_stack import run_deep
from halo.ir.types import float32, int8, int32, int64
from halo.lower import bounds_inference
from halo.random_programs.random_schedule import apply_schedule

CLASSES = codec.classes_of(n, types, bounds_inference)


def round_trip(value):
    return codec.decode(codec.encode(value, CLASSES), CLASSES)


def test_values_of_every_kind_read_back_equal():
    x = n.Var("x")
    loop = n.For("x", n.const(0), n.Var("extent"), n.ForKind.VECTORIZED,
                 n.Store("f", x, n.Cast(int8, n.Load(int32, "g", x, n.const(True, types.bool_))),
                         None))
    value = (loop, [n.const(-2**63, int64), n.const(3.5, float32)], "naïve", None, True, 7, 2.5)
    back = round_trip(value)
    assert back == value
    # (7 == 7.0 and (1,) == [1] aside: each value keeps its kind)
    assert [type(v) for v in back] == [type(v) for v in value]
    assert [type(v.value) for v in back[1]] == [int, float]


def test_float_constants_keep_their_bits():
    for v in (-0.0, math.inf, -math.inf, 1e-45, 3.4028234663852886e38):
        back = round_trip(n.Const(float32, v))
        assert back.value == v and math.copysign(1, back.value) == math.copysign(1, v)
    assert math.isnan(round_trip(n.Const(float32, math.nan)).value)


def test_a_shared_subtree_is_written_once_and_stays_shared():
    e = n.Var("x")
    for _ in range(60):  # 2**60 nodes printed as a tree
        e = n.Add(e, e)
    text = codec.encode(e, CLASSES)
    assert len(text) < 3000
    back = codec.decode(text, CLASSES)
    assert back.a is back.b and back.a.a is back.b.b


def test_an_object_with_no_text_form_is_a_type_error():
    with pytest.raises(TypeError, match="object values have no text form"):
        codec.encode(n.Block((n.Evaluate(n.const(0)), object())), CLASSES)


@pytest.mark.parametrize("text", ["", "[", "{}", '{"format": 99}',
                                  '{"format":1,"classes":["no.Such"],"rows":[[0]],"root":0}',
                                  '{"format":1,"classes":[],"rows":[],"root":5}'])
def test_what_is_not_an_encoded_value_is_a_value_error(text):
    with pytest.raises(ValueError, match="not an encoded IR value"):
        codec.decode(text, CLASSES)


def _lowered_random(seed: int, target: halo.Target):
    pipeline, calls, _ = case_program(Case(seed, seed, target=target.kind.value))
    built = pipeline.build()
    apply_schedule(calls, built)
    return built.output.lower(target)


@pytest.mark.parametrize("target", [halo.Target("host"), halo.Target("cuda", arch="sm_90")],
                         ids=["host", "cuda"])
def test_lowered_random_programs_read_back_as_themselves(target):
    checked = 0
    for seed in range(10):
        try:
            lowered = _lowered_random(1000 + seed, target)
        except halo.HaloError:  # a GPU schedule over a device limit
            continue
        text = lowered_text(lowered)
        back = run_deep("reading", lowered_from_text, text, lowered.env)
        assert (back.stmt, back.checks, back.counted) == \
            (lowered.stmt, lowered.checks, lowered.counted)
        checked += 1
    assert checked >= 6


def test_a_saved_form_that_is_not_a_lowered_pipeline_is_a_value_error():
    f = halo.Func("f")
    f[halo.Var("x")] = 1
    env = f.compile().lowered.env
    with pytest.raises(ValueError, match="not the saved form"):
        lowered_from_text(codec.encode((1, 2), CLASSES), env)


def test_count_stores_reads_back_with_its_counted_funcs():
    x = halo.Var("x")
    f, g = halo.Func("f"), halo.Func("g")
    f[x] = x
    g[x] = f[x] + f[x + 1]
    f.compute_root()
    lowered = g.compile(halo.Target("host", count_stores=True)).lowered
    back = lowered_from_text(lowered_text(lowered), lowered.env)
    assert lowered.counted and back.counted == lowered.counted
    np.testing.assert_array_equal(g.realize((4,)), [1, 3, 5, 7])


def test_the_fuzzer_reports_a_saved_form_that_reads_back_as_other_code(monkeypatch):
    from halo.fuzz import check
    f = halo.Func("f")
    f[halo.Var("x")] = 1
    lowered = f.compile().lowered
    assert check.saved_form_problem(lowered) == ""
    monkeypatch.setattr(check, "lowered_from_text", lambda text, env: replace(
        lowered, stmt=n.Evaluate(n.const(0))))
    assert "reads back as other code" in check.saved_form_problem(lowered)
