"""Reductions the pure loops can't spread over the cores or vectors: the same pipeline
after `rfactor`, as more starting points of the search.

For each update whose pure loops have fewer than `PARALLEL_POINTS` points (a histogram
has none), two rewrites of its outermost reduction loop `r`, and the second also for an
update that reads along the stride-1 dimension as `r` moves (a row sum, whose pure
loops run across rows):

- parallel: `split(r, ro, ri, F)` and `rfactor(ro, u)`: partial reductions over blocks
  of F iterations, one per value of u, in parallel (apps/histogram.py);
- vector: `split(r, ro, ri, lanes)` and `rfactor(ri, u)`: `lanes` partial reductions,
  one per lane of a vector over u (apps/softmax.py).

Each rewrite is applied to the user's Funcs, modelled (`build`), and undone; the search
starts from the plain pipeline and from each rewrite (applied to every such update at
once), and the chosen rewrite's calls open the schedule.
"""
from __future__ import annotations

from collections.abc import Callable

from halo.autoschedule.algorithm import Algorithm, extent
from halo.autoschedule.validate import Snapshot, apply_calls
from halo.errors import HaloError
from halo.schedule.calls import Call, StageRef

PARALLEL_POINTS = 64
BLOCKS_PER_CORE = 8


def rfactor_variants(alg: Algorithm, outputs: list, cores: int, lanes: int,
                     build: Callable[[], Algorithm]) -> list[tuple[tuple[Call, ...], Algorithm]]:
    """(calls, the algorithm after them) for each rewrite that applies."""
    targets = []
    for f in alg.funcs.values():
        region = extent(alg.full_regions[f.name])
        for s in f.stages[1:]:
            pure_points = 1
            for d, e in zip(f.dims, region, strict=True):
                pure_points *= e if d in s.pure else 1
            if s.rvars:
                targets.append((f, s, pure_points < PARALLEL_POINTS))
    variants = []
    for kind in ("parallel", "vector"):
        calls: list[Call] = []
        lane_dims = []
        for f, s, few_points in targets:
            if not (few_points or kind == "vector" and _dense_along(s, s.rvars[0][0])):
                continue
            name, lo, e = s.rvars[0]
            base = name.replace(".", "")
            outer, inner, u = f"{base}o", f"{base}i", _fresh("u", f.dims)
            factor = max(2, e // (BLOCKS_PER_CORE * cores)) if kind == "parallel" else lanes
            if e < 2 * factor:
                continue
            at = StageRef(f.name, s.index)
            intermediate = f"{f.name}_intm" if s.index == 1 else f"{f.name}_intm{s.index - 1}"
            calls += [Call(at, "split", (name, outer, inner, factor)),
                      Call(at, "rfactor", (outer if kind == "parallel" else inner, u),
                           (("name", intermediate),), intermediate)]
            if kind == "vector":
                lane_dims.append(intermediate)
        if not calls:
            continue
        snapshot = Snapshot(outputs)
        try:
            apply_calls(outputs, calls)
            variant = build()
        except HaloError:
            continue
        finally:
            snapshot.restore()
        for name in lane_dims:
            variant.funcs[name].lane_dim = 0
        variants.append((tuple(calls), variant))
    return variants


def _dense_along(s, rvar: str) -> bool:
    """Whether the stage reads a buffer along its last dimension as `rvar` moves (a row
    sum): its pure loops can't vectorize that read, lanes of partial sums can."""
    k = s.loop_vars.index(rvar)
    return any(a.callee != s.func and a.affine and a.affine[-1] is not None
               and a.affine[-1][0][k] == 1 for a in s.accesses)


def _fresh(base: str, taken: tuple[str, ...]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}{k}"
    return name
