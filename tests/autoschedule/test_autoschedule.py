"""`halo.autoschedule` end to end: the schedule it applies matches `halo.reference` at
awkward sizes, its source pasted back gives the same lowered IR, sizes come from
estimates or input arrays (a missing one names the dimension), the search is
deterministic for a seed, and a tiny budget still gives a schedule."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from apps import blur, histogram, matmul, softmax, unsharp
from halo.autoschedule import _algorithm
from halo.autoschedule.validate import Snapshot, Validator
from halo.lang.environment import Environment
from halo.random_programs.random_pipeline import random_pipeline
from halo.schedule.calls import Call, StageRef, calls_source
from tests.autoschedule.jobs import two_outputs_with_a_param


def _check(out, inputs, shapes):
    for shape in shapes:
        got = out.realize(shape, inputs=inputs)
        want = halo.reference(out, shape, inputs=inputs)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_blur_from_input_arrays():
    """The output's size is inferred from the input array; the schedule is right at
    sizes no tile divides."""
    inp, out, _ = blur.algorithm()
    image = np.random.default_rng(0).random((67, 131), dtype=np.float32)
    result = halo.autoschedule(out, inputs={inp: image}, budget_s=10)
    assert result.predicted_s > 0 and result.candidates
    assert result.candidates[0].predicted_s <= result.candidates[-1].predicted_s
    sources = [c.source for c in result.candidates]
    assert len(set(sources)) == len(sources) <= 10  # different schedules, the top few
    _check(out, {inp: image}, [(67, 131), (1, 1), (13, 7)])
    lowered = str(out.lower())
    result.apply()  # again: the same schedule, not a second copy of it
    assert str(out.lower()) == lowered


def test_source_pasted_back_lowers_the_same():
    with halo.NameScope():
        inp, out, _ = blur.algorithm()
    result = halo.autoschedule(out, estimates={out: (64, 96), inp: (64, 96)}, budget_s=10)
    lowered = str(out.lower())
    with halo.NameScope():
        inp2, out2, funcs = blur.algorithm()
    namespace = {"halo": halo, **funcs, "inp": inp2,
                 **{f.name: f for f in funcs.values()}}
    exec(result.source, namespace)  # noqa: S102 - the schedule halo printed
    assert str(out2.lower()) == lowered


def test_matmul_reduction():
    A, B, C, _ = matmul.algorithm()
    rng = np.random.default_rng(1)
    a, b = rng.random((37, 29), dtype=np.float32), rng.random((29, 45), dtype=np.float32)
    result = halo.autoschedule(C, estimates={C: (37, 45), A: (37, 29), B: (29, 45)},
                               budget_s=10)
    assert "C" in result.source
    got = C.realize((37, 45), inputs={A: a, B: b})
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


def test_unsharp_three_dimensions():
    image, out, _ = unsharp.algorithm()
    data = np.random.default_rng(2).uniform(0.25, 1, (3, 23, 41)).astype(np.float32)
    halo.autoschedule(out, inputs={image: data}, budget_s=10)
    _check(out, {image: data}, [(3, 23, 41), (1, 5, 3)])


def test_missing_size_names_the_dimension():
    A, B, C, _ = matmul.algorithm()
    with pytest.raises(halo.HaloError, match=r"Func C dimension 0 \(i\); Func C dimension 1"):
        halo.autoschedule(C)


def test_deterministic_for_a_seed():
    sources = []
    for _ in range(2):
        with halo.NameScope():
            inp, out, _ = blur.algorithm()
        sources.append(halo.autoschedule(out, estimates={out: (200, 300), inp: (200, 300)},
                                         seed=3, budget_s=1000).source)
    assert sources[0] == sources[1]


def test_tiny_budget_still_schedules():
    inp, out, _ = blur.algorithm()
    result = halo.autoschedule(out, estimates={out: (50, 60), inp: (50, 60)}, budget_s=0)
    image = np.random.default_rng(3).random((50, 60), dtype=np.float32)
    assert result.source
    _check(out, {inp: image}, [(50, 60), (1, 1)])


@pytest.mark.parametrize("seed", [5, 17])
def test_random_pipelines(seed):
    p = random_pipeline(seed, max_stages=5)
    built = p.build()
    arrays = p.make_inputs(specials=False)
    inputs = {built.params[k]: v for k, v in arrays.items()}
    box = [(o, s) for o, s in zip(p.output_origin, p.output_shape, strict=True)]
    halo.autoschedule(built.output, estimates={built.output: box}, inputs=inputs, budget_s=5)
    got = built.output.realize(p.output_shape, inputs=inputs, origin=p.output_origin)
    want = halo.reference(built.output, p.output_shape, inputs=inputs, origin=p.output_origin)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


def test_histogram_parallel_through_rfactor():
    """A scatter whose pure loops give no parallelism: the schedule rfactors it (partial
    histograms of blocks of rows, in parallel), and the counts stay exact. (The image
    is large enough that waking the threads pays: a few thousand points wouldn't.)"""
    image, hist, _ = histogram.algorithm()
    data = np.random.default_rng(4).integers(0, 256, (1024, 1024)).astype(np.uint8)
    result = halo.autoschedule(hist, estimates={hist: (256,)}, inputs={image: data},
                               budget_s=10)
    assert "rfactor" in result.source and "parallel" in result.source
    np.testing.assert_array_equal(hist.realize((256,), inputs={image: data}),
                                  np.bincount(data.ravel(), minlength=256))


def test_softmax():
    x, out, _ = softmax.algorithm()
    data = np.random.default_rng(5).standard_normal((19, 37)).astype(np.float32)
    halo.autoschedule(out, inputs={x: data}, budget_s=10)
    _check(out, {x: data}, [(19, 37), (1, 37), (5, 3)])


def test_a_failing_candidate_is_refused_and_undone():
    """The validator refuses a schedule halo rejects and leaves the Funcs as they were."""
    inp, out, _ = blur.algorithm()
    env = Environment.of([out])
    alg = _algorithm(env, {out: (20, 30), inp: (20, 30)}, None)
    before = halo.schedule_source(out)
    validator = Validator([out], env, alg, halo.Target("host"), None, [])
    bad = [Call(StageRef("blur_x"), "compute_at", (StageRef("blur_y"), "nowhere"))]
    assert not validator.check(bad)
    assert "nowhere" in validator.reason
    assert halo.schedule_source(out) == before
    assert validator.check([Call(StageRef("blur_x"), "compute_root")])


def test_an_undone_panel_leaves_its_name_free():
    """Undoing a candidate that packed B (`B.cache_read`) restores B's count of copies,
    so the next candidate's copy is `B_global` again, the name its calls use."""
    A, B, C, _ = matmul.algorithm()
    snapshot = Snapshot([C])
    for _ in range(2):
        assert B.cache_read("global", [C]).name == "B_global"
        snapshot.restore()


def test_pipeline_of_two_outputs():
    """Both outputs are scheduled (and in `.source`), the Func they share too, and a
    Param's default is the value planned for."""
    inp, b, c, image, pipeline = two_outputs_with_a_param()
    result = halo.autoschedule(pipeline, estimates={b: (39, 49), c: (39, 49)},
                               inputs={inp: image}, budget_s=5)
    assert "b." in result.source and "c." in result.source
    got = pipeline.realize((39, 49), inputs={inp: image})
    want = halo.reference([b, c], (39, 49), inputs={inp: image})
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_a_scheduled_algorithm_is_refused():
    inp, out, funcs = blur.algorithm()
    funcs["blur_x"].compute_root()
    with pytest.raises(halo.ScheduleError, match="Func blur_x already has a placement"):
        halo.autoschedule(out, estimates={out: (20, 30), inp: (20, 30)})


def test_candidates_are_checked_down_the_ranking_until_one_passes(monkeypatch):
    """Where the best candidates fail their check, the next ones are tried (each
    schedule once) while the budget lasts, before falling back to every Func at root."""
    inp, out, _ = blur.algorithm()
    image = np.random.default_rng(3).random((40, 50), dtype=np.float32)
    checked = []
    real_check = Validator.check

    def fails_four(self, calls):
        checked.append(calls_source(calls))
        return len(checked) > 4 and real_check(self, calls)
    monkeypatch.setattr(Validator, "check", fails_four)
    result = halo.autoschedule(out, inputs={inp: image}, budget_s=20)
    assert len(checked) == 5 and len(set(checked)) == 5
    assert "vectorize" in result.source  # a searched schedule, not the root fallback
    _check(out, {inp: image}, [(40, 50), (7, 11)])
