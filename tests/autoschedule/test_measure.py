"""Measuring schedules in worker processes: times and output samples come back with the
host's fingerprint; a job that crashes or hangs its worker is an error measurement and
the other jobs are still measured; a schedule halo refuses is an error, not a crash;
a group's schedules are timed in turns, round after round."""
from __future__ import annotations

import importlib
import threading
import time

import numpy as np

import halo
from apps import blur
from halo.autoschedule.measure import (
    LocalExecutor,
    MeasureJob,
    SideBySide,
    Sizes,
    algorithm_builder,
    compiling,
    default_inputs,
    fingerprint,
    run_job,
    run_side_by_side,
    same_machine,
    samples_agree,
    timing_turn,
)
from halo.lang import schedule_to_json
from halo.lang.environment import Environment
from tests.autoschedule.jobs import blur_outputs, crashing_outputs, hanging_outputs

SIZES = Sizes.of((37, 53), {"inp": (37, 53)})


def _hand_schedule() -> str:
    with halo.NameScope():  # the names the worker's build makes
        _, out, funcs = blur.algorithm()
    blur.schedule(funcs)
    return schedule_to_json(out)


def test_run_job_times_and_samples_the_output():
    """In this process: the sample is the output's values, as halo.reference gives them."""
    m = run_job(MeasureJob(blur_outputs, _hand_schedule(), SIZES, repeats=2, key="hand"))
    assert m.error is None and m.key == "hand"
    assert len(m.times_s) == 2 and m.seconds > 0 and m.compile_s > 0
    assert same_machine(m.fingerprint, fingerprint())
    inp, out, _ = blur.algorithm()
    arrays = default_inputs(Environment.of([out]), SIZES)
    want = halo.reference(out, (37, 53), inputs={inp: arrays["inp"]})
    assert samples_agree(m.sample, [want.reshape(-1)])
    assert not samples_agree(m.sample, [want.reshape(-1) + 1])


def test_timed_calls_write_into_the_first_calls_output(monkeypatch):
    """Only the first call makes its outputs; the timed ones write into them (out=), so
    the times don't include a new array's page faults. An offset region keeps its
    origin."""
    from halo.runtime.kernel import Kernel
    calls = []
    run = Kernel.run

    def recording(self, shape, out, origin, inputs, named):
        result = run(self, shape, out, origin, inputs, named)
        calls.append((shape, out, origin, result))
        return result
    monkeypatch.setattr(Kernel, "run", recording)
    sizes = Sizes.of([(2, 30), (1, 40)], {"inp": (40, 50)})
    m = run_job(MeasureJob(blur_outputs, _hand_schedule(), sizes, repeats=3))
    assert m.error is None and len(calls) >= 4
    (shape, out, origin, first), *timed = calls
    assert shape == (30, 40) and out is None and origin == (2, 1)
    assert all(o is first and r[0] is first[0] and org == (2, 1)
               for _, o, org, r in timed)


def test_refused_schedule_is_an_error_measurement():
    bad = _hand_schedule().replace('"blur_x"', '"no_such_func"')
    m = run_job(MeasureJob(blur_outputs, bad, SIZES, key="bad"))
    assert m.times_s is None and "no_such_func" in m.error
    assert not m.unmeasured  # the host measured it: halo refused it there


def test_sizes_of_an_offset_region():
    sizes = Sizes.of([(2, 30), 40], {"inp": [50, 60]}, {"k": 3})
    assert sizes.shape == (30, 40) and sizes.origin == (2, 0)
    assert sizes.inputs == (("inp", (50, 60)),) and sizes.params == (("k", 3),)


def test_crash_and_hang_lose_no_other_measurement():
    """Two workers; one job segfaults its worker, one sleeps past the timeout: both come
    back as errors, the workers are replaced, and every other job is measured."""
    hand = _hand_schedule()
    jobs = [MeasureJob(blur_outputs, hand, SIZES, repeats=1, key="first"),
            MeasureJob(crashing_outputs, hand, SIZES, key="crash"),
            MeasureJob(hanging_outputs, hand, SIZES, key="hang"),
            MeasureJob(blur_outputs, "{}", SIZES, repeats=1, key="root"),
            MeasureJob(blur_outputs, hand, SIZES, repeats=1, key="last")]
    with LocalExecutor(workers=2, timeout_s=4.0) as executor:
        results = {m.key: m for m in executor.measure(jobs)}
        assert sorted(results) == sorted(j.key for j in jobs)
        assert results["crash"].error.startswith("crash: the worker died")
        assert results["hang"].error.startswith("hang: no result after 4 s")
        for key in ("first", "root", "last"):
            assert results[key].error is None and results[key].seconds > 0
        assert samples_agree(results["root"].sample, results["first"].sample)
        again = list(executor.measure(jobs[:1]))  # the pool still works
    assert again[0].error is None
    assert np.array_equal(again[0].sample[0], results["first"].sample[0])


def test_algorithm_builder_copies_the_funcs_by_name():
    """The user's own Funcs (names made up outside any NameScope included) travel to a
    worker; the schedule applies to the copies by the same names."""
    inp, out, funcs = blur.algorithm()
    build = algorithm_builder([out])
    blur.schedule(funcs)
    hand = schedule_to_json(out)
    copies = build()
    assert [f.name for f in copies] == [out.name] and copies[0] is not out
    m = run_job(MeasureJob(build, hand, SIZES, repeats=1))
    assert m.error is None
    arrays = default_inputs(Environment.of([out]), SIZES)
    want = halo.reference(out, (37, 53), inputs={inp: arrays["inp"]})
    assert samples_agree(m.sample, [want.reshape(-1)])


def test_a_candidate_past_the_cutoff_is_timed_once():
    m = run_job(MeasureJob(blur_outputs, "{}", SIZES, repeats=3, cutoff_s=0.0))
    assert m.error is None and len(m.times_s) == 1
    m = run_job(MeasureJob(blur_outputs, "{}", SIZES, repeats=3, cutoff_s=60.0))
    assert len(m.times_s) == 3


def test_no_job_times_while_another_compiles():
    """Compiles share the host's timing lock; a timing waits until none holds it (and
    a compile until the timing is done)."""
    held = threading.Event()
    order: list[str] = []

    def compile_for(seconds: float) -> None:
        with compiling():
            held.set()
            time.sleep(seconds)
            order.append("compiled")

    worker = threading.Thread(target=compile_for, args=(0.5,))
    worker.start()
    held.wait()
    start = time.monotonic()
    with compiling():  # another compile goes at once
        assert time.monotonic() - start < 0.25
    with timing_turn():
        order.append("timed")
    worker.join()
    assert order == ["compiled", "timed"]


def test_a_group_is_timed_in_turns_round_after_round(monkeypatch):
    """Three schedules of blur side by side, the middle one refused: the other two are
    warmed up and timed in turns (a, b, a, b, a, b), each `repeats` calls a round, and
    agree; the refused one is its own error, in its place."""
    measure = importlib.import_module("halo.autoschedule.measure")
    turns = []
    warm = measure.warm_up

    def recording(call):
        turns.append(id(call.args[1]))  # the output arrays the call writes into
        warm(call)
    monkeypatch.setattr(measure, "warm_up", recording)
    hand = _hand_schedule()
    bad = hand.replace('"blur_x"', '"no_such_func"')
    group = SideBySide((MeasureJob(blur_outputs, hand, SIZES, repeats=2, key="hand"),
                        MeasureJob(blur_outputs, bad, SIZES, key="bad"),
                        MeasureJob(blur_outputs, "{}", SIZES, repeats=2, key="root")),
                       rounds=3)
    hand_m, bad_m, root_m = run_side_by_side(group)
    assert [m.key for m in (hand_m, bad_m, root_m)] == ["hand", "bad", "root"]
    assert bad_m.times_s is None and "no_such_func" in bad_m.error
    assert len(hand_m.times_s) == len(root_m.times_s) == 6
    assert samples_agree(hand_m.sample, root_m.sample)
    a, b = turns[:2]
    assert a != b and turns == [a, b] * 3


def test_a_crash_in_a_group_is_every_ones_error():
    """A group runs in one worker: its crash fails each of its jobs; a job beside it
    is measured."""
    group = SideBySide((MeasureJob(blur_outputs, "{}", SIZES, repeats=1, key="a"),
                        MeasureJob(crashing_outputs, "{}", SIZES, key="crash")), rounds=2)
    alone = MeasureJob(blur_outputs, "{}", SIZES, repeats=1, key="alone")
    with LocalExecutor(workers=2, timeout_s=30.0) as executor:
        results = {m.key: m for m in executor.measure([group, alone])}
    assert sorted(results) == ["a", "alone", "crash"]
    assert results["a"].error.startswith("crash: the worker died")
    assert results["crash"].error.startswith("crash: the worker died")
    assert results["a"].unmeasured and results["crash"].unmeasured
    assert results["alone"].error is None and len(results["alone"].times_s) == 1
