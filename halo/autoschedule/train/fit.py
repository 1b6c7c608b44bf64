"""Features recomputed from raw samples, the weights fitted to them, and the learning
curve.

`featurize` rebuilds each sample's pipeline and search state (`pipelines`) and computes
its cost terms (`features.TERMS`) for the machine that measured it (its threads, vector
width and caches), so samples stay usable when the features change. `fit_weights`
solves for non-negative weights (seconds per unit of each term: the structure of Adams
et al. 2019, learned coefficients on hand-designed per-stage terms summed over the
stages) minimizing the squared relative error of the predicted times: the analytical
weights scaled by non-negative factors, with the fixed time of a call fitted beside
them. Held out are the pipelines whose seed is a multiple of `HELD_OUT_EVERY`.

`records_dataset` adds the measurements of tuning records (`halo.autoschedule(...,
measure=True, records=...)`), whose lines carry the terms the tuner computed, so a
model can be fitted to the user's own machine and problems (each problem a group).
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import random
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from halo.autoschedule.cost_model import (
    CostModel,
    LinearTermsModel,
    analytical,
    non_negative_least_squares,
)
from halo.autoschedule.features import TERMS
from halo.autoschedule.measure import same_machine
from halo.autoschedule.records import MEASUREMENT, Records
from halo.autoschedule.train.metrics import Scores, scores
from halo.autoschedule.train.pipelines import (
    schedule_json,
    state_from_json,
    terms_of,
    training_pipeline,
)
from halo.random_programs.random_pipeline import GENERATOR_VERSION
from halo.random_programs.size_profile import PROFILES

HELD_OUT_EVERY = 5
FIXED_UNIT_S = 1e-4  # the scale of a call's fixed seconds, for the solver


@dataclass
class Dataset:
    terms: np.ndarray     # samples x TERMS
    seconds: np.ndarray   # the median measured time of each sample
    groups: np.ndarray    # the pipeline (seed) of each sample
    stale: int = 0        # samples whose pipeline or schedule is no longer what was measured

    def where(self, mask: np.ndarray) -> Dataset:
        return Dataset(self.terms[mask], self.seconds[mask], self.groups[mask])

    def split(self) -> tuple[Dataset, Dataset]:
        """(training, held-out) samples."""
        held = self.groups % HELD_OUT_EVERY == 0
        return self.where(~held), self.where(held)

    def pipelines(self) -> list[int]:
        return sorted({int(g) for g in self.groups})

    def __add__(self, other: Dataset) -> Dataset:
        return Dataset(np.vstack([self.terms, other.terms]),
                       np.concatenate([self.seconds, other.seconds]),
                       np.concatenate([self.groups, other.groups]), self.stale + other.stale)


@dataclass
class RecordsRead:
    """What `records_dataset` took from tuning records, and what it left out."""
    dataset: Dataset
    problems: int
    other_machines: int   # measurements of another machine (by fingerprint)
    stale: int            # measurements without terms, or with other terms than TERMS


def records_dataset(paths: Iterable[str | Path], machine: dict) -> RecordsRead:
    """The measurements of tuning records files (`halo.autoschedule(..., records=...)`)
    made on a machine like `machine` (a fingerprint), as samples: the terms the tuner
    computed for each schedule and its median time, grouped by problem (algorithm and
    sizes), so that a problem is either trained on or held out."""
    terms, seconds, groups = [], [], []
    problems, other, stale = set(), 0, 0
    for path in paths:
        for r in Records(path):
            if r.kind != MEASUREMENT or r.seconds is None:
                continue
            if not same_machine(r.target, machine):
                other += 1
            elif r.terms is None or tuple(r.terms) != TERMS:
                stale += 1
            else:
                problem = json.dumps([r.algorithm, r.sizes], sort_keys=True)
                problems.add(problem)
                terms.append([r.terms[t] for t in TERMS])
                seconds.append(r.seconds)  # (the median of its timed calls)
                groups.append(int(hashlib.sha256(problem.encode()).hexdigest()[:12], 16))
    ds = Dataset(np.array(terms, dtype=float).reshape(-1, len(TERMS)), np.array(seconds),
                 np.array(groups, dtype=np.int64))
    return RecordsRead(ds, len(problems), other, stale)


def featurize(records: Iterable[dict], jobs: int = 1, progress: bool = True) -> Dataset:
    """The dataset of the measured `records` of the current generator version."""
    by_pipeline: dict[tuple, list[dict]] = {}
    for r in records:
        if r.get("times_s") and r["generator"] == GENERATOR_VERSION:
            m = r["machine"]
            key = (r["seed"], r["profile"], r["pipeline"], m["threads"], m["vector_bytes"],
                   tuple(m["cache_bytes"]))
            by_pipeline.setdefault(key, []).append(r)
    tasks = [(key, [(r["state"], r["schedule"], float(np.median(r["times_s"])))
                    for r in rs]) for key, rs in sorted(by_pipeline.items())]
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as pool:
            results = list(tqdm(pool.map(_pipeline_rows, tasks, chunksize=2),
                                total=len(tasks), disable=not progress, desc="features"))
    else:
        results = [_pipeline_rows(t) for t in tqdm(tasks, disable=not progress,
                                                   desc="features")]
    terms, seconds, groups, stale = [], [], [], 0
    for (key, rows), result in zip(tasks, results, strict=True):
        for (_, _, s), row in zip(rows, result, strict=True):
            if row is None:
                stale += 1
            else:
                terms.append(row)
                seconds.append(s)
                groups.append(key[0])
    return Dataset(np.array(terms).reshape(-1, len(TERMS)), np.array(seconds),
                   np.array(groups, dtype=np.int64), stale)


def _pipeline_rows(task) -> list[np.ndarray | None]:
    """Each sample's terms, or None where it is stale: its pipeline no longer draws the
    same, or its state no longer makes the schedule that was measured."""
    (seed, profile, fingerprint, threads, vector_bytes, cache), rows = task
    tp = training_pipeline(seed, PROFILES[profile], threads, vector_bytes, cache)
    if tp.fingerprint != fingerprint:
        return [None] * len(rows)
    out = []
    for state_data, measured, _ in rows:
        state = state_from_json(tp, state_data)
        same = _comparable(schedule_json(tp, state)) == _comparable(measured)
        out.append(terms_of(state, tp.machine) if same else None)
    return out


def _comparable(schedule: str) -> object:
    """A schedule's JSON without the cache stages' `seq` (the order the process made
    cache stages in, which differs between processes making the same schedule)."""
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k != "seq"}
        return [strip(v) for v in x] if isinstance(x, list) else x
    return strip(json.loads(schedule))


def fit_weights(ds: Dataset) -> tuple[dict[str, float], float]:
    """(non-negative weights per term, the fixed seconds of a call) minimizing
    sum(((terms @ w + fixed) - t) / t)^2: the analytical weights scaled by non-negative
    factors. `fixed` is what a call costs whatever its schedule (binding the arrays,
    checking the regions); fitted so that the weights need not explain it, and then
    left out of the model, since it ranks no schedule above another."""
    base = analytical().weights
    a = np.hstack([ds.terms * base, np.full((len(ds.seconds), 1), FIXED_UNIT_S)])
    factors = non_negative_least_squares(a / ds.seconds[:, None], np.ones(len(a)))
    weights = dict(zip(TERMS, (base * factors[:-1]).tolist(), strict=True))
    return weights, float(factors[-1] * FIXED_UNIT_S)


def fit(ds: Dataset, name: str = "learned") -> LinearTermsModel:
    return LinearTermsModel(fit_weights(ds)[0], name)


def evaluate(model: CostModel, ds: Dataset) -> Scores:
    return scores(model.predict(ds.terms), ds.seconds, ds.groups)


def learning_curve(train: Dataset, held_out: Dataset, repeats: int = 3, seed: int = 0
                   ) -> list[tuple[int, Scores]]:
    """(training pipelines, held-out scores) as the training set grows: fits on random
    subsets of 1/16, 1/8, ... all of the training pipelines, the scores averaged over
    `repeats` draws (one draw for all of them)."""
    names = train.pipelines()
    rng = random.Random(seed)
    sizes = sorted({max(2, len(names) >> k) for k in range(5)})
    curve = []
    for n in sizes:
        runs = []
        for _ in range(1 if n == len(names) else repeats):
            chosen = np.array(rng.sample(names, n))
            runs.append(evaluate(fit(train.where(np.isin(train.groups, chosen))), held_out))
        curve.append((n, _mean(runs)))
    return curve


def _mean(runs: list[Scores]) -> Scores:
    def mean(field: str) -> float:
        return float(np.mean([getattr(r, field) for r in runs]))
    return Scores(mean("pairwise_accuracy"), mean("spearman"), mean("median_regret"),
                  mean("geomean_regret"), runs[0].pipelines, runs[0].pairs,
                  mean("clear_accuracy"))


