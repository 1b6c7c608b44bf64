"""Never a failing schedule: a candidate is applied to the user's Funcs, compiled, and run
at the estimated size and at small and awkward sizes (1, a prime, a third of the
estimate); it is kept only if every run passes halo's region checks and the small runs
match `halo.reference`. A refused candidate leaves the Funcs as they were
(`Snapshot`)."""
from __future__ import annotations

import copy
from math import prod

import numpy as np

from halo.autoschedule.algorithm import Algorithm, extent
from halo.driver import Pipeline
from halo.errors import HaloError, InternalError
from halo.lang.environment import Environment
from halo.lang.func import Func
from halo.reference import reference
from halo.schedule.calls import Call
from halo.schedule.serialize import execute
from halo.target import Target

FULL_RUN_POINTS = 1 << 24  # above this many output points, the estimate's run is a third
REFERENCE_POINTS = 1 << 12  # runs this small are also compared with halo.reference
PRIME = 7


class Snapshot:
    """The definitions and schedules of every Func feeding `outputs`, to restore."""

    def __init__(self, outputs: list[Func]):
        env = Environment.of(outputs)
        self.saved = [(f, f._pure, list(f._updates), f._args, f._used_by,
                       copy.deepcopy(f.schedule)) for f in env.funcs.values()]

    def restore(self) -> None:
        for f, pure, updates, args, used_by, schedule in self.saved:
            f._pure, f._updates, f._args, f._used_by = pure, list(updates), args, used_by
            f.schedule = copy.deepcopy(schedule)


def apply_calls(outputs: list[Func], calls: list[Call]) -> None:
    """Run the schedule calls on the Funcs feeding `outputs`."""
    env = Environment.of(outputs)
    objects = {**env.inputs, **env.funcs}
    for c in calls:
        execute(c, objects, intrinsics={})


def validated(outputs: list[Func], calls: list[Call], snapshot: Snapshot, env: Environment,
              alg: Algorithm, target: Target, arrays: dict | None = None) -> bool:
    """Apply `calls` and check them; on failure restore the snapshot and say so."""
    snapshot.restore()
    try:
        apply_calls(outputs, calls)
        kernel = Pipeline(outputs).compile(target)
        inputs = _inputs(env, alg, arrays)
        box = alg.outputs[outputs[0].name]
        origin = tuple(lo for lo, _ in box)
        estimate = extent(box)
        for shape in _shapes(estimate):
            got = kernel.run(shape, None, origin, inputs, {})
            if prod(shape) <= REFERENCE_POINTS:
                want = reference(outputs, shape, inputs=inputs, origin=origin)
                want = want if isinstance(want, list) else [want]
                if not all(_close(g, w) for g, w in zip(got, want, strict=True)):
                    raise InternalError("an autoscheduled pipeline differs from the reference")
    except (HaloError, InternalError):
        snapshot.restore()
        return False
    return True


def _shapes(estimate: tuple[int, ...]) -> list[tuple[int, ...]]:
    third = tuple(max(1, e // 3) for e in estimate)
    full = estimate if prod(estimate) <= FULL_RUN_POINTS else third
    small = tuple(min(e, PRIME) for e in estimate)
    return [full, third, (1,) * len(estimate), small]


def _inputs(env: Environment, alg: Algorithm, arrays: dict | None) -> dict:
    """The user's arrays, or random ones at the estimated sizes (small values: indices
    read from an input stay small)."""
    given = {getattr(k, "name", k): v for k, v in (arrays or {}).items()}
    rng = np.random.default_rng(0)
    out = {}
    for name, inp in env.inputs.items():
        if name in given or hasattr(inp, "array"):
            out[inp] = given.get(name, getattr(inp, "array", None))
            continue
        shape = extent(alg.inputs[name][0])
        values = rng.integers(0, 4, shape) if inp.dtype.is_integer or inp.dtype.is_bool \
            else rng.random(shape)
        out[inp] = values.astype(inp.dtype.numpy)
    return out


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    if got.dtype.kind == "f":
        return bool(np.allclose(got, want, rtol=1e-4, atol=1e-4, equal_nan=True))
    return bool(np.array_equal(got, want))
