"""The schedules a training pipeline is measured under, drawn by the search itself (as
Adams et al. 2019 do), so the model learns to rank what the search will ask it about:

- `beam`: the best states of a beam search priced by the current default model;
- `greedy`: greedy descents (a beam of one) that drop each child with probability
  `DROPOUT` before choosing the cheapest, so they wander near the model's choice;
- `walk`: random walks down the search tree (every step a uniformly drawn child): the
  bad schedules a model must also rank.

Each is a complete `search.State`; duplicates are drawn once.
"""
from __future__ import annotations

import random
import time

from halo.autoschedule.cost_model import CostModel
from halo.autoschedule.search import Search, State, children_of
from halo.autoschedule.train.pipelines import TrainingPipeline

DROPOUT = 0.5
BEAM_SIZE = 4
BEAM_KEPT = 3  # states of the beam's result measured
SEARCH_S = 5.0  # the beam search's budget per pipeline


def draw_states(tp: TrainingPipeline, model: CostModel, greedy: int, walks: int,
                seed: int) -> list[tuple[str, State]]:
    """(how it was drawn, state): the beam's best, `greedy` dropout descents and
    `walks` random walks, without duplicates."""
    rng = random.Random(seed)
    search = Search(model, tp.machine, BEAM_SIZE, seed, time.monotonic() + SEARCH_S)
    drawn = [("beam", p.state) for p in search.run(tp.starts)[:BEAM_KEPT]]
    for _ in range(greedy):
        drawn.append(("greedy", _greedy(search, rng.choice(tp.starts), rng)))
    for _ in range(walks):
        drawn.append(("walk", _walk(tp, rng.choice(tp.starts), rng)))
    seen, out = set(), []
    for how, s in drawn:
        key = (s.decisions, s.locals_, s.prefix)
        if key not in seen:
            seen.add(key)
            out.append((how, s))
    return out


def _greedy(search: Search, state: State, rng: random.Random) -> State:
    while not state.complete:
        children = children_of(state, search.machine, rng)
        kept = [c for c in children if rng.random() >= DROPOUT] or [rng.choice(children)]
        prices = search.price(kept)
        state = kept[min(range(len(kept)), key=lambda i: (prices[i], i))]
    return state


def _walk(tp: TrainingPipeline, state: State, rng: random.Random) -> State:
    while not state.complete:
        state = rng.choice(children_of(state, tp.machine, rng))
    return state
