"""Never a failing schedule: a candidate is applied to the user's Funcs, compiled, and run
at the estimated size and at small and awkward sizes (1, a prime, a third of the
estimate) that the pipeline accepts; it is kept only if every run passes halo's region
checks and gives the values of the root schedule. A refused candidate leaves the Funcs
as they were (`Snapshot`)."""
from __future__ import annotations

import copy
from math import prod

import numpy as np

from halo.autoschedule.algorithm import Algorithm, extent
from halo.driver import Pipeline
from halo.errors import HaloError, InternalError
from halo.lang.environment import Environment
from halo.lang.func import Func
from halo.schedule.calls import Call
from halo.schedule.serialize import execute
from halo.target import Target

FULL_RUN_POINTS = 1 << 24  # above this many output points, the estimate's run is a third
# Above this much work (points computed by all stages, a reduction's counted once per
# reduction step), the estimate's run is a third of it too, and again, until it isn't:
# the root schedule that checks it runs unscheduled (most of the 40-60 s that
# autoscheduling matmul 2048^3 took).
FULL_RUN_WORK = 1 << 27
PRIME = 7


class Snapshot:
    """The definitions and schedules of every Func feeding `outputs`, to restore."""

    def __init__(self, outputs: list[Func]):
        env = Environment.of(outputs)
        # `_cache_counts` numbers the Funcs cache_read/cache_write make: restored, a
        # schedule applied again makes them under the same names.
        self.saved = [(f, f._pure, list(f._updates), f._args, f._used_by,
                       copy.deepcopy(f.schedule)) for f in env.funcs.values()]
        # Inputs too: `B.cache_read` (a packed panel) numbers its copies on B.
        self.counts = [(x, dict(x.__dict__.get("_cache_counts", {})))
                       for x in (*env.funcs.values(), *env.inputs.values())]

    def restore(self) -> None:
        for f, pure, updates, args, used_by, schedule in self.saved:
            f._pure, f._updates, f._args, f._used_by = pure, list(updates), args, used_by
            f.schedule = copy.deepcopy(schedule)
        for x, counts in self.counts:
            x.__dict__["_cache_counts"] = dict(counts)


def apply_calls(outputs: list[Func], calls: list[Call]) -> None:
    """Run the schedule calls on the Funcs feeding `outputs`."""
    env = Environment.of(outputs)
    objects = {**env.inputs, **env.funcs}
    for c in calls:
        execute(c, objects, intrinsics={})


class Validator:
    """Checks candidates on the Funcs feeding `outputs` against `baseline`, the
    always-legal root schedule (halo's default nests, which the fuzzer checks against
    `halo.reference`), compiled once: at each size the pipeline accepts (those at which
    the baseline runs: a histogram can't be realized over fewer bins than it writes), a
    candidate's run must pass halo's region checks and give the baseline's values."""

    def __init__(self, outputs: list[Func], env: Environment, alg: Algorithm, target: Target,
                 arrays: dict | None, baseline: list[Call]):
        self.outputs, self.target = outputs, target
        self.snapshot = Snapshot(outputs)
        self.inputs = _inputs(env, alg, arrays)
        box = alg.outputs[outputs[0].name]
        self.origin = tuple(lo for lo, _ in box)
        self.expected: dict[tuple[int, ...], list[np.ndarray]] = {}
        self.reason = ""
        try:
            apply_calls(outputs, baseline)
            kernel = Pipeline(outputs).compile(target)
            for shape in _shapes(extent(box), _work_per_point(alg, box)):
                try:
                    self.expected[shape] = self._run(kernel, shape)
                except HaloError:
                    continue
        finally:
            self.snapshot.restore()

    def check(self, calls: list[Call]) -> bool:
        """Apply `calls` and run them; on failure restore the Funcs and say why
        (`reason`)."""
        self.snapshot.restore()
        try:
            apply_calls(self.outputs, calls)
            kernel = Pipeline(self.outputs).compile(self.target)
            for shape, want in self.expected.items():
                got = self._run(kernel, shape)
                if not all(_close(g, w) for g, w in zip(got, want, strict=True)):
                    raise InternalError(f"the schedule's values differ from the root "
                                        f"schedule's over {shape}")
        except (HaloError, InternalError) as error:
            self.reason = str(error)
            self.snapshot.restore()
            return False
        return True

    def _run(self, kernel, shape: tuple[int, ...]) -> list[np.ndarray]:
        return kernel.run(shape, None, self.origin, self.inputs, {})


def _shapes(estimate: tuple[int, ...], work_per_point: float) -> list[tuple[int, ...]]:
    full = estimate
    while prod(full) > 1 and (prod(full) > FULL_RUN_POINTS or
                              prod(full) * work_per_point > FULL_RUN_WORK):
        full = tuple(max(1, e // 3) for e in full)
    third = tuple(max(1, e // 3) for e in full)
    small = tuple(min(e, PRIME) for e in estimate)
    return list(dict.fromkeys([full, third, (1,) * len(estimate), small]))


def _work_per_point(alg: Algorithm, box) -> float:
    """Points every stage computes at the root schedule, per point of the output."""
    work = sum(prod(extent(alg.full_regions[f.name])) * prod(r[2] for r in s.rvars)
               for f in alg.funcs.values() for s in f.stages)
    return work / max(1, prod(extent(box)))


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
    """Equal; floats within what a reordered reduction (rfactor) may change."""
    if got.dtype.kind == "f":
        finite = np.abs(want[np.isfinite(want)])
        scale = float(finite.max()) if finite.size else 1.0
        return bool(np.allclose(got, want, rtol=1e-3, atol=1e-4 * max(1.0, scale),
                                equal_nan=True))
    return bool(np.array_equal(got, want))
