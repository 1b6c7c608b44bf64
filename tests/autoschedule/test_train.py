"""The cost model's training harness (`halo.autoschedule.train`): collect -> train ->
evaluate end to end on a tiny set, tuning records as training samples, the weights' JSON,
the shipped weights, the metrics and the fit on cases whose answer is known, the
realistic size profile."""
from __future__ import annotations

import gzip
import json
import random

import numpy as np
import pytest

from halo.autoschedule.cost_model import (
    ANALYTICAL_WEIGHTS,
    LEARNED_WEIGHTS,
    LinearTermsModel,
    RandomModel,
    analytical,
    default_model,
)
from halo.autoschedule.features import TERMS
from halo.autoschedule.measure import Measurement, SideBySide, fingerprint, measure_here
from halo.autoschedule.records import MEASUREMENT, Record, Records
from halo.autoschedule.search import children_of
from halo.autoschedule.train import samples
from halo.autoschedule.train.__main__ import main
from halo.autoschedule.train.collect import CollectOptions, collect
from halo.autoschedule.train.fit import (
    Dataset,
    featurize,
    fit_weights,
    learning_curve,
    records_dataset,
)
from halo.autoschedule.train.metrics import scores, spearman
from halo.autoschedule.train.pipelines import (
    state_from_json,
    state_json,
    terms_of,
    training_pipeline,
)
from halo.random_programs.random_pipeline import random_pipeline
from halo.random_programs.size_profile import FUZZ, REALISTIC
from halo.target import DEFAULT_CACHE_BYTES, Target


class InProcess:
    """An executor measuring in this process (the tests' own: no worker start-up)."""

    def measure(self, jobs):
        return (m for j in jobs for m in measure_here(j))


def test_collect_train_evaluate_end_to_end(tmp_path, capsys):
    data = tmp_path / "samples.jsonl.gz"
    # Seed 5 is held out (a multiple of 5), 1 and 2 train.
    options = CollectOptions(data, (1, 2, 5), threads=2, profile=FUZZ.name, greedy=0,
                             walks=1, repeats=1, rounds=2, chunk=2, draw_workers=1)
    summary = collect(options, InProcess(), progress=False)
    assert summary.pipelines == 3 and summary.samples >= 6, summary.line()
    records = list(samples.read([data]))
    assert {r["seed"] for r in records} == {1, 2, 5}
    assert {r["how"] for r in records} >= {"beam", "walk"}
    assert all(len(r["times_s"]) == 2 and r["rounds"] == 2 and r["schedule"] and
               r["machine"]["threads"] == 2 for r in records)
    assert collect(options, InProcess(), progress=False).pipelines == 0  # resumed: done
    ds = featurize(records, progress=False)
    assert ds.stale == 0 and len(ds.seconds) == len(records)
    # A sample whose state no longer makes the schedule measured is stale.
    tampered = [dict(r) for r in records]
    other = next(r for r in tampered[1:] if r["seed"] == tampered[0]["seed"]
                 and r["schedule"] != tampered[0]["schedule"])
    tampered[0]["schedule"] = other["schedule"]
    assert featurize(tampered, progress=False).stale == 1
    weights = tmp_path / "w.json"
    assert main(["train", str(data), "--out", str(weights), "--jobs", "1"]) == 0
    model = LinearTermsModel.load(weights)
    assert (model.weights >= 0).all() and model.weights.any()
    about = json.loads(weights.read_text())["about"]
    assert about["pipelines"] == 2 and about["held_out"]["learned"]["pipelines"] == 1
    assert main(["evaluate", str(data), "--model", str(weights), "--no-plots",
                 "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "| analytical |" in out and "| random |" in out and "learning curve" in out
    assert "all pipelines, by the models fitted on none of them" in out


class GroupsFail(InProcess):
    """Every group of more than one job fails as a hung worker's would; single jobs are
    measured here."""

    def measure(self, jobs):
        for item in jobs:
            if isinstance(item, SideBySide) and len(item.jobs) > 1:
                yield from (Measurement(j.key, None, "hang: no result after 120 s", {}, 0.0)
                            for j in item.jobs)
            else:
                yield from measure_here(item)


def test_a_failed_group_is_measured_again_job_by_job(tmp_path):
    """A pipeline's group whose worker hung (one of its schedules ran for minutes) is
    measured again one schedule at a time, so only a failing schedule fails."""
    data = tmp_path / "samples.jsonl.gz"
    options = CollectOptions(data, (1,), threads=2, profile=FUZZ.name, greedy=0, walks=1,
                             repeats=1, rounds=2, chunk=1, draw_workers=1)
    summary = collect(options, GroupsFail(), progress=False)
    records = list(samples.read([data]))
    assert summary.pipelines == 1 and summary.errors == 0 and len(records) >= 2
    assert all(len(r["times_s"]) == 1 and r["rounds"] == 1 for r in records)


def test_plots(tmp_path):
    pytest.importorskip("matplotlib")  # the train extra
    from halo.autoschedule.train.plots import draw
    rng = np.random.default_rng(1)
    terms = rng.random((12, len(TERMS)))
    ds = Dataset(terms, terms @ analytical().weights * rng.uniform(0.5, 2, 12),
                 np.arange(12) // 4)
    curve = learning_curve(ds, ds, repeats=1)
    paths = draw([analytical(), RandomModel(0)], ds, curve, tmp_path)
    assert [p.name for p in paths] == ["predicted_vs_measured.png", "learning_curve.png"]
    assert all(p.stat().st_size > 0 for p in paths)


def test_train_refuses_too_few_samples(tmp_path, capsys):
    missing = tmp_path / "none.jsonl.gz"
    assert main(["train", str(missing), "--out", str(tmp_path / "w.json"), "--jobs", "1"]) == 2
    assert "0 training and 0 held-out samples; collect more pipelines" in \
        capsys.readouterr().err
    assert not (tmp_path / "w.json").exists()


def test_weights_json_round_trip_by_term_name(tmp_path):
    weights = {t: (k + 1) * 1e-9 for k, t in enumerate(TERMS)}
    path = tmp_path / "w.json"
    LinearTermsModel(weights, "mine").save(path, {"note": 1})
    back = LinearTermsModel.load(path)
    assert back.name == "mine" and np.array_equal(back.weights, [weights[t] for t in TERMS])
    # A file from another version: a term it has that the features lost is dropped, a
    # term it lacks gets its analytical weight.
    data = json.loads(path.read_text())
    del data["weights"]["gathers"]
    data["weights"]["retired_term"] = 7.0
    path.write_text(json.dumps(data))
    other = LinearTermsModel.load(path)
    got = dict(zip(TERMS, other.weights, strict=True))
    assert got["gathers"] == ANALYTICAL_WEIGHTS["gathers"]
    assert got["compute"] == weights["compute"]
    # The first format: parallel lists of terms and weights.
    path.write_text(json.dumps({"name": "old", "terms": ["compute", "loads"],
                                "weights": [1e-9, 2e-9]}))
    old = dict(zip(TERMS, LinearTermsModel.load(path).weights, strict=True))
    assert (old["compute"], old["loads"]) == (1e-9, 2e-9)
    assert old["gathers"] == ANALYTICAL_WEIGHTS["gathers"]


def _walk_states(seed: int, count: int):
    tp = training_pipeline(seed, FUZZ, 2, 32, DEFAULT_CACHE_BYTES)
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        state = rng.choice(tp.starts)
        while not state.complete:
            state = rng.choice(children_of(state, tp.machine, rng))
        out.append(state)
    return tp, out


def test_shipped_weights_load_and_predict():
    assert LEARNED_WEIGHTS.exists()
    model = LinearTermsModel.load(LEARNED_WEIGHTS)
    assert (model.weights >= 0).all() and model.weights.any()
    tp, states = _walk_states(7, 4)
    predicted = model.predict(np.stack([terms_of(s, tp.machine) for s in states]))
    assert predicted.shape == (4,) and np.isfinite(predicted).all() and (predicted > 0).all()
    shipped_is_default = json.loads(LEARNED_WEIGHTS.read_text())["about"]["default"]
    assert default_model().name == ("learned" if shipped_is_default else "analytical")


def test_state_json_round_trip():
    for seed in (3, 11, 40):
        tp, states = _walk_states(seed, 3)
        for s in states:
            back = state_from_json(tp, json.loads(json.dumps(state_json(tp, s))))
            assert back.decisions == s.decisions and back.locals_ == s.locals_
            assert back.prefix == s.prefix
            assert np.array_equal(terms_of(back, tp.machine), terms_of(s, tp.machine))


def test_metrics_on_known_cases():
    measured = np.array([1.0, 2.0, 4.0, 8.0, 3.0, 1.0])
    groups = np.array([0, 0, 0, 0, 1, 1])
    perfect = scores(measured * 10, measured, groups)
    assert perfect.pairwise_accuracy == 1.0 and perfect.median_regret == 1.0
    assert perfect.spearman == 1.0 and perfect.pairs == 6 + 1
    reverse = scores(1 / measured, measured, groups)
    assert reverse.pairwise_accuracy == 0.0 and reverse.spearman == -1.0
    # regrets: group 0 picks 8 (8x the best), group 1 picks 3 (3x): median 5.5
    assert reverse.median_regret == 5.5
    assert reverse.geomean_regret == pytest.approx(np.sqrt(24))
    # one swapped pair (the two slowest of group 0) of 7
    swapped = scores(np.array([1.0, 2.0, 8.0, 4.0, 3.0, 1.0]), measured, groups)
    assert swapped.pairwise_accuracy == pytest.approx(6 / 7)
    # every pair here is at least 2x apart: the swapped one counts among the clear too
    assert swapped.clear_accuracy == pytest.approx(6 / 7)
    close = np.array([1.0, 1.2, 4.0, 8.0, 3.0, 1.0])
    tie_swapped = scores(np.array([2.0, 1.0, 4.0, 8.0, 3.0, 1.0]), close, groups)
    assert tie_swapped.pairwise_accuracy == pytest.approx(6 / 7)
    assert tie_swapped.clear_accuracy == 1.0  # 1.0 vs 1.2 is no clear pair
    assert spearman(np.array([1.0, 1.0, 2.0]), np.array([3.0, 3.0, 5.0])) == pytest.approx(1.0)


def test_fit_recovers_known_non_negative_weights():
    rng = np.random.default_rng(0)
    terms = rng.random((60, len(TERMS))) * np.array([10.0 ** (k % 5) for k in
                                                       range(len(TERMS))])
    truth = np.array([ANALYTICAL_WEIGHTS[t] * f for t, f in
                      zip(TERMS, rng.choice([0.0, 0.5, 3.0], len(TERMS)), strict=True)])
    truth[0] = ANALYTICAL_WEIGHTS[TERMS[0]]  # at least one term explains the times
    fixed = 2e-4  # seconds every call takes
    ds = Dataset(terms, terms @ truth + fixed, np.arange(60) // 6)
    weights, got_fixed = fit_weights(ds)
    np.testing.assert_allclose([weights[t] for t in TERMS], truth, rtol=1e-6, atol=1e-15)
    assert got_fixed == pytest.approx(fixed)


def test_realistic_profile_sizes():
    for seed in range(30):
        p = random_pipeline(seed, profile=REALISTIC)
        h, w = p.height, p.width
        assert min(REALISTIC.sides) <= min(h, w) and max(h, w) <= max(REALISTIC.sides)
        assert p.channels * h * w <= REALISTIC.max_points
        for i in p.inputs:
            if i.name.startswith("in"):  # images share the pipeline's size (w*: weights)
                assert i.shape[-2:] == (h, w)
        small = random_pipeline(seed)
        assert max(small.height, small.width) <= max(FUZZ.sides)


def test_read_stops_at_a_truncated_append(tmp_path):
    path = tmp_path / "s.jsonl.gz"
    samples.append(path, [{"a": 1}, {"a": 2}])
    whole = gzip.compress(b'{"a": 3}\n' * 50)
    with open(path, "ab") as f:
        f.write(whole[:len(whole) // 2])
    assert [r["a"] for r in samples.read([path])][:2] == [1, 2]


def _tuning_records(path, machine, problems=20, per_problem=6, seed=0) -> np.ndarray:
    """A records file as tuning writes it: measurements of `problems` problems whose times
    are the analytical weights x known factors applied to random terms; the factors."""
    rng = np.random.default_rng(seed)
    factors = rng.uniform(0.5, 2.0, len(TERMS))
    weights = analytical().weights * factors
    records = Records(path)
    for p in range(problems):
        for _ in range(per_problem):
            terms = rng.uniform(0, 1e6, len(TERMS))
            seconds = float(terms @ weights)
            records.append(Record(MEASUREMENT, f"algorithm{p}", {"outputs": {}}, machine,
                                  {}, "{}", seconds, [seconds], terms=dict(
                                      zip(TERMS, terms.tolist(), strict=True))))
    return factors


def test_tuning_records_join_the_training_samples(tmp_path, capsys):
    machine = fingerprint(Target())
    path = tmp_path / "tuning.jsonl"
    factors = _tuning_records(path, machine)
    records = Records(path)
    records.append(Record(MEASUREMENT, "old", {}, machine, {}, "{}", 1e-3))  # no terms
    records.append(Record(MEASUREMENT, "elsewhere", {}, {**machine, "cpu": "other"}, {},
                          "{}", 1e-3, terms=dict.fromkeys(TERMS, 1.0)))
    read = records_dataset([path], machine)
    assert read.problems == 20 and len(read.dataset.seconds) == 120
    assert read.stale == 1 and read.other_machines == 1
    training, held_out = read.dataset.split()
    assert len(training.seconds) and len(held_out.seconds)  # problems, not lines, split
    assert not set(training.groups) & set(held_out.groups)
    weights, _ = fit_weights(read.dataset)
    np.testing.assert_allclose([weights[t] for t in TERMS], analytical().weights * factors,
                               rtol=1e-6)
    out_weights = tmp_path / "w.json"
    empty = tmp_path / "no_samples"
    empty.mkdir()
    assert main(["train", str(empty), "--records", str(path), "--out", str(out_weights),
                 "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "120 measurements of 20 problems from tuning records; left out: 1 of other " \
           "machines" in out and "1 without the current cost terms" in out
    assert LinearTermsModel.load(out_weights).weights.any()
