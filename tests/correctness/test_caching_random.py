"""Random schedules mixing cache stages, memory scopes and specializations on a
two-stage blur, checked against the reference on sizes around the tile sizes. Each seed
is one schedule; a failure names the seed and prints the schedule source."""
from __future__ import annotations

import random

import numpy as np
import pytest

import halo
from tests.correctness.conftest import assert_matches_reference

y, x, yo, xo, yi, xi = halo.vars("y x yo xo yi xi")


def _algorithm():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    bx, by = halo.Func("blur_x"), halo.Func("blur_y")
    bx[y, x] = inp[y, x] + inp[y, x + 1] * 2.0 + inp[y, x + 2]
    by[y, x] = bx[y, x] - bx[y + 1, x] + bx[y + 2, x] * 0.5
    return inp, bx, by


def _random_schedule(rng: random.Random):
    inp, bx, by = _algorithm()
    ty, tx = rng.choice([1, 2, 3, 4]), rng.choice([1, 3, 4, 8])
    tiled = rng.random() < 0.7
    if rng.random() < 0.4:  # a specialization of the output, before its own schedule
        cond = rng.choice([inp.shape[1] % 2 == 0, inp.shape[0] > 5, inp.shape[1] < 9])
        special = by.specialize(cond)
        special.split(x, xo, xi, rng.choice([2, 5]), tail=rng.choice(["guard", "auto"]))
        if rng.random() < 0.5:
            special.vectorize(xi)
    if tiled:
        by.tile(y, x, yo, xo, yi, xi, ty, tx)
    levels = [("root", None)] + ([("at", yo), ("at", xo)] if tiled else [("at", y)])
    if by.schedule.stages[0].specializations and tiled:
        levels = [("root", None), ("at", xo)]  # yo is not in the specialization
    if by.schedule.stages[0].specializations and not tiled:
        levels = [("root", None), ("at", y)]
    kind, var = rng.choice(levels)
    if kind == "root":
        bx.compute_root()
    else:
        bx.compute_at(by, var)
    reader = bx  # the Func that reads inp: bx, or the stage cache_write moves it to
    if rng.random() < 0.5:
        reader = bx.cache_write(rng.choice(["global", "shared", "stack"]))
        if kind == "at":
            reader.compute_at(by, var)
    readers = rng.choice([None, [reader]])
    scope = "local" if kind == "at" and var is xo else rng.choice(["global", "shared", "stack"])
    c = inp.cache_read(scope, readers=readers)
    where = "reader" if scope == "local" else rng.choice(["root", "reader", "inline"])
    if where == "inline":
        c.compute_inline()
    elif where == "reader" and kind == "at":
        c.compute_at(by, var)
    if rng.random() < 0.5 and where != "inline":
        c.split(c.args[1], "cx", "cxi", rng.choice([2, 4]))
    return inp, by


@pytest.mark.parametrize("seed", range(12))
def test_random_cache_schedules(seed):
    rng = random.Random(seed)
    inp, by = _random_schedule(rng)
    data = np.random.default_rng(seed)
    for h, w in [(1, 1), (5, 9), (8, 8), (11, 6)]:
        image = data.random((h + 2, w + 2), dtype=np.float32)
        try:
            assert_matches_reference(by, (h, w), inputs={inp: image})
        except Exception as e:
            raise AssertionError(f"seed {seed}, size {(h, w)}:\n"
                                 f"{halo.schedule_source(by)}") from e
