"""Autotuning (`halo.autoschedule(..., measure=True)`): the measured schedule matches
`halo.reference`; tuning records resume and apply by canonical algorithm, never across
machines; a candidate that crashes or hangs its worker is recorded as such and the run
goes on; the model refits on what was measured; mutations stay legal."""
from __future__ import annotations

import itertools
import json
import random
import time

import numpy as np
import pytest

import halo
from apps import blur, matmul
from halo.autoschedule import _algorithm, _calls
from halo.autoschedule.canonical import canonical, renamed_schedule
from halo.autoschedule.cost_model import TERMS, LinearTermsModel, analytical
from halo.autoschedule.measure import LocalExecutor, Measurement, SideBySide, algorithm_builder
from halo.autoschedule.proposals import greedy_probe, mutations, random_walk
from halo.autoschedule.search import Machine, Search, State, root_everything
from halo.autoschedule.tune import BATCH, EXPLORE, Problem, _Session
from halo.autoschedule.validate import apply_calls
from halo.lang import schedule_to_json
from halo.lang.environment import Environment
from tests.autoschedule.jobs import Sabotaged, two_outputs_with_a_param

BUDGET_S = 6.0


def _blur(shape=(41, 67)):
    inp, out, _ = blur.algorithm()
    image = np.random.default_rng(0).random(shape, dtype=np.float32)
    return inp, out, image


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_tuned_matmul_matches_the_reference(tmp_path):
    A, B, C, _ = matmul.algorithm()
    rng = np.random.default_rng(1)
    a, b = rng.random((37, 29), dtype=np.float32), rng.random((29, 45), dtype=np.float32)
    with LocalExecutor(workers=2) as executor:
        result = halo.autoschedule(C, estimates={C: (37, 45), A: (37, 29), B: (29, 45)},
                                   measure=True, budget_s=BUDGET_S, executor=executor)
    assert result.measured_s > 0 and result.measurements >= 2
    bests = [best for _, best in result.curve]
    assert bests == sorted(bests, reverse=True)
    for m, n, k in [(37, 45, 29), (1, 1, 29), (13, 7, 5)]:
        x, y = a[:m, :k].copy(), b[:k, :n].copy()
        got = C.realize((m, n), inputs={A: x, B: y})
        np.testing.assert_allclose(got, halo.reference(C, (m, n), inputs={A: x, B: y}),
                                   rtol=1e-4, atol=1e-4)


def test_records_resume_instantly_and_apply_best(tmp_path):
    """The second call, on a fresh copy of the algorithm whose made-up names differ,
    returns the recorded best at once; apply_best gives a third copy the same schedule."""
    path = tmp_path / "tuning.jsonl"
    inp, out, image = _blur()
    first = halo.autoschedule(out, inputs={inp: image}, measure=True, budget_s=BUDGET_S,
                              records=str(path))
    lines = _records(path)
    assert [r["kind"] for r in lines].count("best") == 1
    best, = (r for r in lines if r["kind"] == "best")
    if best["times_s"]:  # the runoff's times, where it ran: its (upper) median is the time
        assert best["seconds"] == sorted(best["times_s"])[len(best["times_s"]) // 2]
    assert sum(r["kind"] == "measurement" for r in lines) == first.measurements
    # each measurement carries the cost terms of its schedule (what train --records fits)
    assert all(tuple(r["terms"]) == TERMS and min(r["terms"].values()) >= 0
               for r in lines if r["kind"] == "measurement")

    inp2, out2, _ = _blur()
    assert canonical([out2]).names != canonical([out]).names  # made-up names differ
    start = time.monotonic()
    second = halo.autoschedule(out2, inputs={inp2: image}, measure=True, budget_s=BUDGET_S,
                               records=str(path))
    assert time.monotonic() - start < 1.0
    assert second.measured_s == first.measured_s
    assert _edges_renamed(out2) == _edges_renamed(out)

    inp3, out3, _ = _blur()
    record = halo.apply_best(out3, str(path))
    assert record.seconds == first.measured_s
    assert _edges_renamed(out3) == _edges_renamed(out)


def _edges_renamed(out) -> str:
    """The lowered code with the boundary Func's made-up number removed."""
    text = str(out.lower())
    for name in Environment.of([out]).funcs:
        if "repeat_edge" in name:
            text = text.replace(name, "edge")
    return text


def test_records_of_another_machine_are_never_used(tmp_path):
    path = tmp_path / "tuning.jsonl"
    inp, out, image = _blur()
    halo.autoschedule(out, inputs={inp: image}, measure=True, budget_s=BUDGET_S,
                      records=str(path))
    lines = _records(path)
    for r in lines:
        r["target"]["cpu"] = "some-other-cpu"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    inp2, out2, _ = _blur()
    with pytest.warns(UserWarning, match="only from other machines.*some-other-cpu"):
        result = halo.autoschedule(out2, inputs={inp2: image}, records=str(path))
    assert result.measured_s is None  # the model's schedule, not a recorded one
    inp3, out3, _ = _blur()
    with pytest.raises(halo.HaloError, match="measured on other machines"):
        halo.apply_best(out3, str(path))


def test_a_crash_and_a_hang_are_recorded_and_tuning_goes_on(tmp_path):
    path = tmp_path / "tuning.jsonl"
    inp, out, image = _blur()
    with LocalExecutor(workers=2, timeout_s=2.5) as local:
        result = halo.autoschedule(out, inputs={inp: image}, measure=True, budget_s=12.0,
                                   records=str(path), executor=Sabotaged(local))
    errors = [r["error"] for r in _records(path) if r["kind"] == "measurement"]
    assert len(errors) == result.measurements  # every measurement made is recorded
    assert any(e and e.startswith("crash: the worker died") for e in errors)
    assert any(e and e.startswith("hang: no result after 2.5 s") for e in errors)
    assert sum(e is None for e in errors) >= 2  # the root schedule's, and others'
    assert result.measured_s is not None
    got = out.realize(image.shape, inputs={inp: image})
    np.testing.assert_allclose(got, halo.reference(out, image.shape, inputs={inp: image}),
                               rtol=1e-5)


def test_canonical_digest_ignores_func_names():
    def algorithm(prefix: str, weight: float):
        y, x = halo.vars("y x")
        inp = halo.ImageParam(halo.float32, 2, f"{prefix}in")
        a, b = halo.Func(f"{prefix}a"), halo.Func(f"{prefix}b")
        a[y, x] = inp[y, x] * weight
        b[y, x] = a[y, x] + a[y + 1, x]
        return b, a

    b1, a1 = algorithm("first_", 2.0)
    b2, a2 = algorithm("other_", 2.0)
    b3, _ = algorithm("third_", 3.0)
    c1, c2 = canonical([b1]), canonical([b2])
    assert c1.digest == c2.digest and c1.names != c2.names
    assert canonical([b3]).digest != c1.digest
    a1.compute_at(b1, halo.Var("y"))
    moved = renamed_schedule(schedule_to_json(b1), c1.names, c2.names)
    halo.lang.apply_json(b2, moved)
    assert str(b2.lower()).replace("other_", "first_") == str(b1.lower())


def test_fit_recovers_scaled_weights():
    rng = np.random.default_rng(0)
    model = analytical()
    terms = rng.random((200, len(TERMS))) * 1e6
    truth = model.weights * np.where(np.arange(len(TERMS)) % 2, 2.0, 0.5)
    fitted = model.fit(terms, terms @ truth, prior=1e-6)
    assert isinstance(fitted, LinearTermsModel) and (fitted.weights >= 0).all()
    np.testing.assert_allclose(fitted.predict(terms), terms @ truth, rtol=1e-3)


@pytest.mark.parametrize("app", ["blur", "matmul"])
def test_probes_and_mutations_give_schedules_halo_accepts(app):
    if app == "blur":
        inp, out, image = _blur()
        estimates, inputs = None, {inp: image}
    else:
        A, B, out, _ = matmul.algorithm()
        estimates, inputs = {out: (24, 40), A: (24, 19), B: (19, 40)}, None
    build = algorithm_builder([out])
    alg = _algorithm(Environment.of([out]), estimates, inputs)
    search = Search(analytical(), Machine(2, 8), 4, 0, time.monotonic() + 5)
    rng = random.Random(1)
    probe = greedy_probe(search, State(alg), rng, 0.5)
    assert probe.complete
    children = mutations(probe, 8)
    assert children
    walks = [random_walk(search, State(alg), rng) for _ in range(4)]
    assert all(w.complete for w in walks)
    for state in [probe, *rng.sample(children, min(6, len(children))), *walks]:
        again = build()
        apply_calls(again, _calls(state))
        halo.Pipeline(again).lower()



def test_each_round_measures_random_walks_whatever_their_price():
    """A round's batch takes EXPLORE random walks beside the cheapest proposals, even
    when the model prices every walk above all of them; without walks, the cheapest."""
    inp, out, image = _blur((512, 640))  # large enough that every nest is parallel
    alg = _algorithm(Environment.of([out]), None, {inp: image})
    search = Search(analytical(), Machine(2, 8), 4, 0, time.monotonic() + 5)
    problem = Problem([out], alg, halo.Target("host"), {inp: image}, search, [State(alg)],
                      _calls, root_everything(alg))
    session = _Session(problem, None, budget_s=10.0)
    rng = random.Random(5)
    pick = greedy_probe(search, State(alg), rng, 0.0)
    near = [pick, *mutations(pick, 8)]
    walks = [random_walk(search, State(alg), rng) for _ in range(8)]
    near_prices, walk_prices = search.price(near), search.price(walks)
    cheap = sorted(near_prices)[BATCH - 1]
    far = [w for w, p in zip(walks, walk_prices, strict=True) if p > cheap]
    assert len(near) > BATCH and len(far) > EXPLORE
    batch = session._batch(near, far, rng)
    keys = {session._candidate(s).schedule for s in far}
    assert len(batch) == BATCH and sum(c.schedule in keys for c in batch) == EXPLORE
    plain = [c.predicted_s for c in session._batch(near)]
    assert len(plain) == BATCH and plain == sorted(plain) and plain[0] == min(near_prices)


class _Replay:
    """An executor whose measurements are given: `times[schedule]` lists the time of
    each measurement of that schedule in turn (None: an error); a side-by-side group's
    measurement of it takes a time for each of its rounds (an error if one is None)."""

    def __init__(self, machine: dict, times: dict[str, list[float | None]]):
        self.machine, self.times = machine, {k: list(v) for k, v in times.items()}

    def measure(self, jobs):
        for item in jobs:
            rounds = item.rounds if isinstance(item, SideBySide) else 1
            for job in item.jobs if isinstance(item, SideBySide) else (item,):
                times = [self.times[job.schedule].pop(0) for _ in range(rounds)]
                failed = None in times
                yield Measurement(job.key, None if failed else tuple(times),
                                  "failed" if failed else None, self.machine, 0.0)


def test_the_runoff_ranks_by_times_measured_again():
    """The fastest first time was luck: measured again side by side, the schedules rank
    by their runoff medians, ahead of those that didn't run and of one that failed."""
    inp, out, image = _blur((512, 640))
    alg = _algorithm(Environment.of([out]), None, {inp: image})
    search = Search(analytical(), Machine(2, 8), 4, 0, time.monotonic() + 5)
    problem = Problem([out], alg, halo.Target("host"), {inp: image}, search, [State(alg)],
                      _calls, root_everything(alg))
    session = _Session(problem, None, budget_s=10.0)
    pick = greedy_probe(search, State(alg), random.Random(5), 0.0)
    candidates = list({c.schedule: c for c in map(session._candidate,
                                                  [pick, *mutations(pick, 8)])}.values())
    lucky, steady, third, slow, fifth = candidates[:5]
    for c, seconds in zip((lucky, steady, third, slow, fifth), (1.0, 2.0, 2.2, 2.4, 3.0),
                          strict=True):
        c.seconds = seconds
        session.candidates[c.schedule] = c
    again = {lucky.schedule: [5.0, 0.9, 6.0], steady.schedule: [2.5, 2.6, 2.4],
             third.schedule: [2.3, 2.1, None], slow.schedule: [3.5, 3.4, 3.6]}
    session._runoff(_Replay(session.machine, {}), until=time.monotonic() + 1.0)
    assert all(c.runoff == [] for c in candidates)  # 4 compiles of a second: no time
    session._runoff(_Replay(session.machine, again), until=float("inf"))
    assert [c.runoff for c in (lucky, steady, slow)] == \
        [[5.0, 0.9, 6.0], [2.5, 2.6, 2.4], [3.5, 3.4, 3.6]]
    assert third.runoff == [] and fifth.runoff == []  # failed; not among the fastest
    assert session._ranked() == [steady, slow, lucky, third, fifth]
    assert (steady.time_s, lucky.time_s, third.time_s) == (2.5, 5.0, 2.2)


def test_a_larger_budget_resumes_without_measuring_again(tmp_path):
    """Each later session gets what the earlier ones left of a larger budget (`extra`, not
    the whole budget again: its clock, `session_s`, starts where theirs stopped), and
    measures only schedules they did not (the root schedule again, as the values'
    reference). `extra` leaves room for the root and one more schedule on a busy
    machine. The clocks are the sessions' own, which don't count the search before the
    first measurement: a loaded machine slows that part most."""
    path = tmp_path / "tuning.jsonl"
    extra = 8.0

    def session(budget_s: float) -> None:
        inp, out, image = _blur()
        halo.autoschedule(out, inputs={inp: image}, measure=True, budget_s=budget_s,
                          records=str(path))
    session(BUDGET_S)
    session(BUDGET_S + extra)
    session(max(r["session_s"] for r in _records(path)) + extra)  # still measures
    lines = [r for r in _records(path) if r["kind"] == "measurement"]
    sessions = list(dict.fromkeys(r["session"] for r in lines))
    assert len(sessions) == 3
    clocks = [[r["session_s"] for r in lines if r["session"] == s] for s in sessions]
    for before, after in itertools.pairwise(clocks):
        assert min(after) >= max(before)  # the clock goes on, and doesn't restart
        # the session stopped near its own deadline, not a whole budget later
        assert max(after) < max(before) + extra + BUDGET_S / 2
    names = lines[0]["names"]  # the later sessions' Funcs have other made-up names

    def key(r: dict) -> str:
        return json.dumps(json.loads(renamed_schedule(r["schedule"], r["names"], names)),
                          sort_keys=True)

    first, second, third = ([key(r) for r in lines if r["session"] == s] for s in sessions)
    for later, earlier in ((second, first), (third, first + second)):
        assert len(later) >= 2 and later[0] == first[0]  # the root schedule, measured first
        assert not set(later[1:]) & set(earlier)


def test_tuning_a_pipeline_of_two_outputs_with_a_param():
    """Both outputs are measured and compared; the Param's value travels with the jobs."""
    inp, b, c, image, pipeline = two_outputs_with_a_param()
    result = halo.autoschedule(pipeline, estimates={b: (39, 49), c: (39, 49)},
                               inputs={inp: image}, measure=True, budget_s=4.0)
    assert result.measured_s is not None
    got = pipeline.realize((39, 49), inputs={inp: image})
    want = halo.reference([b, c], (39, 49), inputs={inp: image})
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_record_file_errors_name_the_problem(tmp_path):
    inp, out, image = _blur()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a record\n")
    with pytest.raises(halo.HaloError, match="bad.jsonl line 1 is not a tuning record"):
        halo.autoschedule(out, inputs={inp: image}, records=str(bad))
    with pytest.raises(halo.HaloError, match="holds no tuning record of the algorithm of "
                                             "blur_y; run halo.autoschedule"):
        halo.apply_best(out, str(tmp_path / "none.jsonl"))
    with pytest.raises(halo.HaloError, match="executor=3"):
        halo.autoschedule(out, inputs={inp: image}, measure=True, budget_s=1, executor=3)


class _Recording:
    """An executor that keeps the jobs it is given and measures them locally."""

    def __init__(self, inner):
        self.inner, self.jobs = inner, []

    def measure(self, jobs):
        self.jobs += list(jobs)
        return self.inner.measure(jobs)


def test_candidates_are_timed_on_the_callers_arrays():
    """What a histogram or a lookup does depends on its data: with `inputs=`, every
    job carries the caller's arrays (not made-up ones of their shapes)."""
    inp, out, image = _blur()
    with LocalExecutor(workers=2) as local:
        executor = _Recording(local)
        result = halo.autoschedule(out, inputs={inp: image}, measure=True, budget_s=4.0,
                                   executor=executor)
    assert result.measured_s is not None and executor.jobs
    for job in executor.jobs:
        (name, array), = job.make_inputs().items()
        assert name == inp.name and array is image
    np.testing.assert_allclose(out.realize(image.shape, inputs={inp: image}),
                               halo.reference(out, image.shape, inputs={inp: image}),
                               rtol=1e-5)
