"""Cost models: what predicts a candidate's run time from its features.

One interface, `CostModel.predict(batch)`: a batch of candidates' per-pipeline cost
terms (`features.TERMS`, one row per candidate) in, predicted seconds out, the whole
batch at once (the search predicts all children of a step together). Models:

- `LinearTermsModel`: a weight per term (seconds per unit: per cycle, per byte read
  from each cache level, per allocation, per parallel task...), the structure of
  Adams et al. 2019 (coefficients on hand-designed per-stage terms, summed over the
  stages). `analytical()` is it with hand-set weights for a ~3 GHz core, the default; a
  learned model is the same class with fitted weights, saved and loaded as JSON
  (`save`, `load`), never pickle. Weights are stored by term name: a file's term that
  the features no longer make is ignored, and a term it doesn't know (one added since)
  gets its analytical weight.
- `RandomModel`: a seeded random prediction, the baseline any model must beat.

`default_model()` is what `halo.autoschedule` uses: the weights fitted on random
programs that ship with halo (`LEARNED_WEIGHTS`, written by `python -m
halo.autoschedule.train train`) where they beat `analytical()` on held-out pipelines
(the file's `about.default`), else `analytical()`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

import numpy as np

from halo.autoschedule.features import TERMS

LEARNED_WEIGHTS = Path(__file__).with_name("learned_weights.json")
CYCLE_S = 1 / 3.0e9
# Seconds per unit of each term, hand-set.
ANALYTICAL_WEIGHTS = {
    "compute": CYCLE_S, "loads": CYCLE_S, "gathers": 2 * CYCLE_S,
    "l1_bytes": 0.02e-9, "l2_bytes": 0.05e-9, "l3_bytes": 0.1e-9, "dram_bytes": 0.25e-9,
    "store_bytes": 0.05e-9, "heap_allocations": 0.5e-6, "stack_allocations": 5e-9,
    # Entering a parallel loop wakes the pool's threads: tens of microseconds on a
    # virtual machine (random pipelines measured at 4 threads: 30-60 us a launch; a
    # 2-core Zen 3 host: 90 us for a call's first, little for the next). Threads claim
    # chunks of tasks, so a task costs little more than its own set-up; charged 0.5 us,
    # it keeps harris's search on strips of 64 rows (without it the beam drifted to
    # 2.5x slower schedules whose only modelled gain was more, smaller tasks).
    "parallel_launches": 20e-6, "parallel_tasks": 0.5e-6,
    # An entry of an innermost loop is more than its branch: its bounds, a sliding
    # window's test, a boundary's partition and a vector tail (harris with tiles 640
    # wide against 128: about 100 cycles an entry saved; 15 moves the choice without
    # making short rows of plain nests look dear).
    "innermost_loops": 15 * CYCLE_S,
}


class CostModel(Protocol):
    name: str

    def predict(self, terms: np.ndarray) -> np.ndarray:
        """Predicted seconds for each row of `terms` (candidates x `TERMS`)."""


class LinearTermsModel:
    """Predicted seconds = terms @ weights."""

    def __init__(self, weights: dict[str, float], name: str = "linear"):
        unknown = set(weights) - set(TERMS)
        if unknown:
            raise ValueError(f"unknown cost terms {sorted(unknown)}; the terms are {TERMS}")
        self.name = name
        self.weights = np.array([weights.get(t, 0.0) for t in TERMS])

    def predict(self, terms: np.ndarray) -> np.ndarray:
        return np.atleast_2d(terms) @ self.weights

    def fit(self, terms: np.ndarray, seconds: np.ndarray, prior: float = 1.0
            ) -> LinearTermsModel:
        """A copy refitted to measured `seconds`: each weight this one's times a
        non-negative factor, chosen by least squares on relative error, with `prior`
        pulling every factor toward 1 (a few measurements move the weights they explain,
        and leave the others)."""
        x = np.atleast_2d(terms) * self.weights  # this model's seconds, per term
        y = np.asarray(seconds, dtype=float)
        k = len(self.weights)
        a = np.vstack([x / y[:, None], np.sqrt(prior) * np.eye(k)])
        b = np.concatenate([np.ones(len(y)), np.sqrt(prior) * np.ones(k)])
        factors = non_negative_least_squares(a, b)
        return LinearTermsModel(dict(zip(TERMS, self.weights * factors, strict=True)),
                                f"{self.name}+fit")

    def save(self, path: str | Path, about: dict | None = None) -> None:
        """Write the weights by term name as JSON, with `about` (how they were made)."""
        data = {"name": self.name, "weights": dict(zip(TERMS, self.weights.tolist(),
                                                       strict=True)),
                "about": about or {}}
        Path(path).write_text(json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> LinearTermsModel:
        """The model `save` wrote; terms the file lacks get their analytical weight,
        terms the features no longer have are dropped."""
        data = json.loads(Path(path).read_text())
        named = data["weights"] if isinstance(data["weights"], dict) else \
            dict(zip(data["terms"], data["weights"], strict=True))  # the first format
        weights = {t: float(w) for t, w in named.items() if t in TERMS}
        return cls({**{t: ANALYTICAL_WEIGHTS.get(t, 0.0) for t in TERMS if t not in weights},
                    **weights}, data["name"])


def non_negative_least_squares(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """argmin |a x - b| with x >= 0, by dropping negative unknowns and solving again (an
    active set that only shrinks: enough for the well-conditioned systems `fit` makes)."""
    free = np.ones(a.shape[1], dtype=bool)
    while True:
        x = np.zeros(a.shape[1])
        x[free] = np.linalg.lstsq(a[:, free], b, rcond=None)[0]
        if (x >= 0).all():
            return x
        free &= x > 0


def analytical() -> LinearTermsModel:
    return LinearTermsModel(ANALYTICAL_WEIGHTS, "analytical")


def default_model() -> LinearTermsModel:
    """The shipped learned model where it beat the analytical one on held-out pipelines
    when it was trained, else the analytical one."""
    if LEARNED_WEIGHTS.exists() and \
            json.loads(LEARNED_WEIGHTS.read_text()).get("about", {}).get("default"):
        return LinearTermsModel.load(LEARNED_WEIGHTS)
    return analytical()


class RandomModel:
    """Random predictions, the same for the same seed and batch."""

    name = "random"

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def predict(self, terms: np.ndarray) -> np.ndarray:
        return self.rng.random(len(np.atleast_2d(terms)))
