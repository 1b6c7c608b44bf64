"""The search space: a schedule as one `Decision` per Func (where it is computed and
stored, and the loop nest of its stages), and the loop nests those decisions make.

A Func's stages share one `Nest`: per dimension a tile factor (`OUTER`: the whole
dimension is an outer loop, `WHOLE`: an inner loop, f > 1: split into `do` outside and
`di` inside), the lanes of the vectorized dimension (the stride-1, last one, or the
lanes an rfactor made), parallel outer tiles (the outermost loop, or the two outermost
fused), the vectorized dimension's tiles outermost or in dimension order (a
register-tiled reduction's tasks as column panels, each reading one strip of its input:
`apps/matmul.py`), unrolled small inner loops, and for updates whether the reduction
loops run outside the inner pure loops (a register tile: the accumulators of a tile stay
in registers while the reduction runs, as in `apps/matmul.py`). Loops, outermost first:
the outer loops in dimension order (or the vectorized dimension's first), then (with
`reduction_outer`) the reduction loops, then the inner loops, then the reduction loops.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

OUTER, WHOLE = 1, 0
INLINE, ROOT, AT = "inline", "root", "at"


@dataclass(frozen=True)
class Nest:
    tiles: tuple[int, ...]
    vector: int = 0
    vector_dim: int = -1  # the dimension vectorized (its inner loop moves innermost)
    parallel: bool = False
    fuse_outer: bool = False
    unroll: bool = False
    reduction_outer: bool = False
    vector_tiles_first: bool = False  # the vectorized dimension's outer loop outermost


@dataclass(frozen=True)
class Placement:
    """Inline, root, or computed at loop `loop` (an index into the loops of `consumer`'s
    stage `stage`), stored at loop `store_loop` (outside it: a sliding window) or with
    the computation (None)."""
    kind: str
    consumer: str = ""
    stage: int = 0
    loop: int = 0
    store_loop: int | None = None


@dataclass(frozen=True)
class Decision:
    placement: Placement
    nest: Nest | None = None


@dataclass(frozen=True)
class Loop:
    """One loop of a stage: its name, the loop variable it iterates (`var`), its trip
    count, how many values of `var` one iteration covers (`inside`), and its kind
    (`tile`: an outer loop of a tiled nest, whose iterations are its tiles)."""
    name: str
    var: str
    trips: int
    inside: int
    vector: bool = False
    parallel: bool = False
    unrolled: bool = False
    fused_with: tuple[str, int] | None = None  # the inner loop fused in: (var, inside)
    fused: tuple[str, str] | None = None       # the names of the two loops fused
    tile: bool = False


def stage_loops(dims: tuple[str, ...], pure: tuple[str, ...],
                rvars: tuple[tuple[str, int, int], ...], extents: dict[str, int],
                nest: Nest | None, update: bool, constant: bool = False) -> list[Loop]:
    """The loops of a stage whose pure Vars `pure` (of the Func's `dims`) range over
    `extents`, under `nest` (None: halo's default nest, pure loops then reduction loops,
    serial). `constant`: the extents are constants halo knows (a Func computed per
    whole tile of a pure consumer), so its unsplit loops can be unrolled too."""
    reductions = [Loop(name, name, ext, 1) for name, _, ext in rvars]
    if nest is None:
        return [Loop(d, d, extents[d], 1) for d in dims if d in pure] + reductions
    outer, inner = [], []
    for d, t in zip(dims, nest.tiles, strict=True):
        if d not in pure:
            continue
        e = extents[d]
        if t == OUTER:
            outer.append(Loop(d, d, e, 1))
        elif t == WHOLE:
            inner.append(Loop(d, d, e, 1))
        else:
            outer.append(Loop(f"{d}o", d, -(-e // t), t))
            inner.append(Loop(f"{d}i", d, t, 1))
    last = dims[nest.vector_dim] if dims else None
    inner = [lp for lp in inner if lp.var != last] + [lp for lp in inner if lp.var == last]
    if nest.vector_tiles_first:
        outer = [lp for lp in outer if lp.var == last] + [lp for lp in outer if lp.var != last]
    vector_innermost = not (update and rvars and not nest.reduction_outer)
    if nest.vector and vector_innermost and inner and inner[-1].var == last and \
            inner[-1].trips >= nest.vector:
        v = inner[-1]
        lanes = nest.vector
        if v.trips == lanes:
            inner[-1] = Loop(v.name, v.var, lanes, 1, vector=True)
        else:
            inner[-1] = Loop(v.name, v.var, -(-v.trips // lanes), lanes)
            inner.append(Loop(f"{v.name}_vec", v.var, lanes, 1, vector=True))
    if nest.unroll:
        # Split loops have a constant trip count halo can unroll; the others only where
        # the extents are constants.
        def unrollable(loop: Loop) -> bool:
            return not loop.vector and loop.trips <= 8 and (
                loop.name == f"{loop.var}i" or constant and loop.name == loop.var) and \
                not (update and not nest.reduction_outer)
        inner = [Loop(loop.name, loop.var, loop.trips, loop.inside, unrolled=True)
                 if unrollable(loop) else loop for loop in inner]
    if nest.parallel and outer:
        if nest.fuse_outer and len(outer) >= 2:
            a, b = outer[0], outer[1]
            outer[:2] = [Loop(f"{a.name}_{b.name}", a.var, a.trips * b.trips, a.inside,
                              parallel=True, fused_with=(b.var, b.inside),
                              fused=(a.name, b.name))]
        else:
            outer[0] = Loop(outer[0].name, outer[0].var, outer[0].trips, outer[0].inside,
                            parallel=True)
    outer = [replace(lp, tile=True) for lp in outer]
    if nest.reduction_outer:
        return outer + reductions + inner
    return outer + inner + reductions

