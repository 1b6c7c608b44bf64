"""How well predictions rank measured times, per pipeline (a model only ever compares
schedules of one pipeline): the fraction of pairs ordered right (of all pairs, and of
those whose times are clearly apart, more than `CLEAR` times), Spearman's rho, and the
top-1 regret (the measured time of the schedule the model ranks first over the best
measured one)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CLEAR = 1.5  # a pair of times this far apart, or more, is not a near tie


@dataclass(frozen=True)
class Scores:
    pairwise_accuracy: float   # over every pair of one pipeline's schedules
    spearman: float            # mean over pipelines of 3 or more schedules
    median_regret: float       # top-1 regret, median over pipelines
    geomean_regret: float
    pipelines: int
    pairs: int
    clear_accuracy: float = float("nan")  # over the pairs more than CLEAR times apart

    def row(self, name: str) -> str:
        return (f"| {name} | {self.pairwise_accuracy:.3f} | {self.clear_accuracy:.3f} | "
                f"{self.spearman:.3f} | {self.median_regret:.3f} | {self.geomean_regret:.3f} "
                f"| {self.pipelines} | {self.pairs} |")


HEADER = (f"| model | pairwise accuracy | of pairs > {CLEAR}x apart | Spearman rho | "
          "median top-1 regret | geomean top-1 regret | pipelines | pairs |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- |")


def scores(predicted: np.ndarray, measured: np.ndarray, groups: np.ndarray) -> Scores:
    """Scores of `predicted` against `measured` times, rows grouped by pipeline."""
    right = total = clear_right = clear = 0
    rhos, regrets = [], []
    for g in np.unique(groups):
        p, m = predicted[groups == g], measured[groups == g]
        if len(m) < 2:
            continue
        dp = np.sign(p[:, None] - p[None, :])
        dm = np.sign(m[:, None] - m[None, :])
        upper = np.triu(np.ones_like(dm, dtype=bool), 1) & (dm != 0)
        right += int((dp[upper] == dm[upper]).sum())
        total += int(upper.sum())
        apart = upper & (np.maximum(m[:, None], m[None, :])
                         > CLEAR * np.minimum(m[:, None], m[None, :]))
        clear_right += int((dp[apart] == dm[apart]).sum())
        clear += int(apart.sum())
        if len(m) >= 3:
            rhos.append(spearman(p, m))
        regrets.append(float(m[int(np.argmin(p))] / m.min()))
    regrets_a = np.array(regrets or [np.nan])
    return Scores(right / total if total else float("nan"),
                  float(np.nanmean(rhos)) if rhos else float("nan"),
                  float(np.median(regrets_a)), float(np.exp(np.mean(np.log(regrets_a)))),
                  len(regrets), total, clear_right / clear if clear else float("nan"))


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (ties get their mean rank); 0 where a side is
    constant."""
    ra, rb = _ranks(a), _ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x))
    for v in np.unique(x):
        tied = x == v
        ranks[tied] = ranks[tied].mean()
    return ranks
