"""Random GPU schedules for random pipelines: what `python -m halo.fuzz --target cuda`
draws.

`random_gpu_schedule(pipeline, built, seed)` draws a legal schedule for `Target("cuda")`,
as a list of `halo.schedule.calls.Call`. Funcs are visited consumers first (as
`random_schedule` does, whose `Drawer` and `Placer` it shares); each gets a placement,
and the placement decides the level its stages run at and so what they may bind:

* a kernel (`compute_root`, or `compute_at` a loop on the host, outside every block
  loop): every stage binds blocks: `gpu_tile` in one or two dimensions with any tail
  strategy, `gpu_blocks` alone (the block's first thread does the work), or splits bound
  to blocks, a `vthread` and threads; an update whose left side has no pure loop (a
  histogram, a scatter) is made `atomic()` and binds its reduction loops; an associative
  update may instead be `rfactor`ed, its intermediate at root or in the merge's blocks;
* block level (`compute_at` a block loop, or a serial loop between the block and thread
  loops): shared memory (`store_in("shared")` or by default), its work shared by the
  block's threads through `gpu_threads` on its own loops (directly, or on the inner loops
  of a tile), or done by the block's first thread; atomic updates may bind reduction loops
  to the threads; at a serial loop, half of them `double_buffer`ed (2 or 3 stages, by the
  seed); an associative update may be `rfactor`ed too, its intermediate in the merge's
  threads or beside the merge, at the loop it is computed at;
* at kernel or block level, an associative update (an rfactor's merge too) may be a warp
  reduction: a reduction loop split by a power of two up to 32 and its inner loop bound
  to threads (a block whose x extent that doesn't divide is refused: unfit);
* thread level (`compute_at` a thread loop or one inside it): registers, no bindings.

A kernel's first stage is sometimes specialized on an input's extent (as
`random_schedule` draws conditions), its specialization bound apart: another tiling of
the same kernel for some sizes (not a stage that reads an inline reduction, which
lowering would then compute at root, unbound). Funcs are not computed inside a
specialized stage's loops (`Placer.sites`), whose branches may differ.

Loops inside a stage's thread loops (or every loop of a Func at thread level) may then be
split, unrolled and vectorized. Inline reductions are left where lowering puts them or
placed like any Func (always, where lowering would put them at root, which needs
blocks; a Func calling a reduction the schedule can't name is never inlined); inputs
and root Funcs may get a `cache_read` into shared memory at a reader's block loop (or a
root copy), and kernels a `cache_write` into registers or shared memory.

`unbound` names a kernel-level Func whose first stage is left without a GPU binding:
`illegal_gpu_schedule` ends such a schedule with the call that breaks a GPU rule.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from halo.ir.nodes import ForKind
from halo.lang.environment import Environment
from halo.random_programs.pipeline_spec import BuiltPipeline, RandomPipeline
from halo.random_programs.random_schedule import (
    ASSOCIATIVE_UPDATES,
    ATOMIC_RATE,
    SCATTER_UPDATES,
    SPECIALIZE_RATE,
    Drawer,
    Placer,
    StageState,
    _predicted_inner,
    _rdom_extents,
    draw_placement,
    draw_rfactor,
    draw_specialization,
    draw_storage_order,
    predicted_cache_name,
)
from halo.schedule.calls import Call, StageRef

# The levels a Func's stages run at (see the module docstring).
KERNEL, BLOCK, THREAD = "kernel", "block", "thread"
# Thread-tile sides (primes and 1 included: partial tiles in every direction).
THREAD_FACTORS = (1, 2, 3, 4, 5, 7, 8, 16, 32)
SERIAL_FACTORS = (2, 3, 4, 8)
CACHE_READ_RATE = 0.15
CACHE_WRITE_RATE = 0.1
STORE_IN_RATE = 0.25
# Of the Funcs in shared memory at a serial loop inside the blocks, those double-buffered.
DOUBLE_BUFFER_RATE = 0.5
# Warp reductions: how often an associative update binds a reduction loop to threads,
# and the lanes it reduces over.
WARP_RATE = 0.5
WARP_WIDTHS = (1, 2, 4, 8, 16, 32)
SCOPE_OF_LEVEL = {KERNEL: "global", BLOCK: "shared", THREAD: "local"}
# Loop kinds a compute_at site may sit inside (a vectorized or parallel loop is not a
# GPU schedule's).
_SITE_KINDS = (ForKind.SERIAL, ForKind.UNROLLED, ForKind.GPU_BLOCK, ForKind.GPU_THREAD,
               ForKind.VTHREAD)


@dataclass
class GpuDrawer(Drawer):
    """A `Drawer` that also knows the level each Func runs at."""
    levels: dict = field(default_factory=dict)   # name -> KERNEL | BLOCK | THREAD
    unbound: str | None = None
    stages: int = 2  # the copies of every double-buffered Func's buffer


def random_gpu_schedule(pipeline: RandomPipeline, built: BuiltPipeline, seed: int) -> list[Call]:
    """A legal GPU schedule for `built` (a fresh build of `pipeline`), applied to it and
    returned as calls; the same for the same seed."""
    return gpu_schedule_drawer(pipeline, built, seed).calls


def gpu_schedule_drawer(pipeline: RandomPipeline, built: BuiltPipeline, seed: int,
                        unbound: str | None = None) -> GpuDrawer:
    """The drawer after drawing `random_gpu_schedule`: its calls and each Func's level.
    With `unbound`, that Func's first stage binds nothing (what `illegal_gpu_schedule`
    builds on)."""
    rng = random.Random(seed)
    drawer = GpuDrawer(rng, pipeline, built, unbound=unbound, stages=2 + seed % 2)
    placer = Placer(drawer)
    for spec in reversed(pipeline.stages):
        if spec.name == pipeline.output.name:
            drawer.levels[spec.name] = KERNEL
        else:
            _place(drawer, placer, spec.name, rng)
        if spec.name in drawer.levels:
            _schedule_func(drawer, placer, spec.name, rng, cache_write=True)
        placer.env = Environment.of([built.output])
        for red in spec.reductions:
            # (left where lowering puts it unless that is at root, which needs blocks)
            if (rng.random() < 0.4 or placer.placement(red) == "root") and \
                    drawer.built.funcs[red].args:
                _place(drawer, placer, red, rng)
                _schedule_func(drawer, placer, red, rng)
    _cache_reads(drawer, placer, rng)
    return drawer


# ---------------------------------------------------------------------- placements


def site_level(placer: Placer, ref: StageRef, var: str) -> str | None:
    """The level of code at loop `var` of stage `ref` (and inside it), or None where no
    Func may be computed (inside a vectorized or parallel loop)."""
    dims = placer.d.built.funcs[ref.func].schedule.stages[ref.stage].dims
    names = [d.name for d in dims]
    kinds = [k for _, _, k in placer.enclosing(ref.func)] + \
        [d.kind for d in dims[:names.index(var) + 1]]
    if any(k not in _SITE_KINDS for k in kinds):
        return None
    if ForKind.GPU_THREAD in kinds:
        return THREAD
    if ForKind.GPU_BLOCK in kinds or ForKind.VTHREAD in kinds:
        return BLOCK
    return KERNEL


def _place(drawer: GpuDrawer, placer: Placer, name: str, rng: random.Random) -> None:
    f = drawer.built.funcs[name]
    ref = StageRef(name)
    sites = [(r, v, lv) for r, v, _ in placer.sites(name)
             if (lv := site_level(placer, r, v)) is not None
             and not (lv == BLOCK and _outside_a_block_loop(drawer, r, v))]
    inline = len(f.definitions) == 1 and not _calls_unnamed_reduction(drawer, f)
    placed = draw_placement(drawer, name, inline, sites, rng)
    if placed is None:
        return
    level = drawer.levels[name] = KERNEL if placed == "root" else placed[2]
    scope = SCOPE_OF_LEVEL[level]
    if rng.random() < STORE_IN_RATE:
        # at block level, sometimes registers: legal where each thread touches a part of
        # its own (block_registers), which the draw can't foresee: a refusal is unfit
        scope = "local" if level == BLOCK and rng.random() < 0.5 else scope
        drawer.emit(Call(ref, "store_in", (scope,)))
    if scope == "shared" and _at_serial_loop(drawer, *placed[:2]) and \
            rng.random() < DOUBLE_BUFFER_RATE:
        # (one count per pipeline: Funcs at one loop must agree; one that reads what its
        # loop writes can't be computed ahead, which the draw can't foresee: unfit)
        drawer.emit(Call(ref, "double_buffer", (drawer.stages,)))
    draw_storage_order(drawer, ref, rng)


def _at_serial_loop(drawer: GpuDrawer, ref: StageRef, var: str) -> bool:
    """Whether loop `var` of stage `ref` is a serial (or unrolled) loop."""
    dims = drawer.built.funcs[ref.func].schedule.stages[ref.stage].dims
    return any(d.name == var and d.kind in (ForKind.SERIAL, ForKind.UNROLLED) for d in dims)


def _outside_a_block_loop(drawer: GpuDrawer, ref: StageRef, var: str) -> bool:
    """Whether loop `var` of stage `ref` encloses one of its block loops: a Func computed
    there would cover a whole row of blocks, a region of run-time size that no shared
    buffer can hold (legal, but always refused)."""
    dims = drawer.built.funcs[ref.func].schedule.stages[ref.stage].dims
    names = [d.name for d in dims]
    return any(d.kind is ForKind.GPU_BLOCK for d in dims[names.index(var) + 1:])


def _inline_reductions(definitions) -> list:
    """The inline reductions `definitions` read."""
    return [g for d in definitions for g in d.deps
            if getattr(g, "schedule", None) is not None and g.schedule.inline_reduction]


def _reads_inline_reduction(f) -> bool:
    """Whether `f`'s first definition reads an inline reduction: under a specialized
    stage, lowering computes one left unplaced at root (its branches may nest the loops
    differently), where it would need block loops."""
    return bool(_inline_reductions(f.definitions[:1]))


def _calls_unnamed_reduction(drawer: GpuDrawer, f) -> bool:
    """Whether `f` calls an inline reduction the schedule can't name (`halo.sum(...)`
    without `name=`): inlined into several users, lowering would compute it at root,
    where on a GPU it would need block loops no call can give it."""
    return any(g.name not in drawer.built.funcs for g in _inline_reductions(f.definitions))


# ------------------------------------------------------------------ stages and loops


def _schedule_func(drawer: GpuDrawer, placer: Placer, name: str, rng: random.Random,
                   cache_write: bool = False) -> None:
    """Bind and transform every stage of `name` as its level allows (a kernel's Func may
    first get a cache_write, then computed inside its own blocks or threads)."""
    level = drawer.levels[name]
    if cache_write and level == KERNEL and name != drawer.unbound and \
            rng.random() < CACHE_WRITE_RATE:
        _cache_write(drawer, placer, name, rng)
        return
    f = drawer.built.funcs[name]
    is_output = f is drawer.built.output
    for k in range(len(f.definitions)):
        extents = _rdom_extents(f, k)
        st = StageState(f, k, is_output, extents)
        if k == 0 and name == drawer.unbound:
            continue
        intm = None
        if level in (KERNEL, BLOCK) and k > 0:
            intm = draw_rfactor(drawer, st, rng)
        if intm is None and _atomic_allowed(drawer, st) and \
                (rng.random() < ATOMIC_RATE or not _pure_dims(st)):
            drawer.emit(Call(st.ref(), "atomic"))
        warp = level != THREAD and k > 0 and not st.record.atomic and \
            rng.random() < WARP_RATE and _bind_warp(drawer, st, rng, level)
        if level == KERNEL and not warp:
            if k == 0 and drawer.pipeline.inputs and not _reads_inline_reduction(f) and \
                    rng.random() < SPECIALIZE_RATE:
                # (before the stage's own bindings: the specialization's copy of its
                # loops is bound apart, as another tiling for some sizes)
                spec = draw_specialization(drawer, st, rng)
                _bind_kernel(drawer, spec, rng)
                _inner_draws(drawer, spec, rng, rng.randint(0, 2), level)
            _bind_kernel(drawer, st, rng)
        elif level == BLOCK and not warp:
            _bind_block(drawer, st, rng)
        _inner_draws(drawer, st, rng, rng.randint(0, 2), level)
        if intm is not None:
            _place_intermediate(drawer, placer, st, intm, rng)
            _schedule_func(drawer, placer, intm, rng)
            placer.named.add(intm)


def _pure_dims(st: StageState) -> list:
    return [d for d in st.dims if d.pure]


def _atomic_allowed(drawer: GpuDrawer, st: StageState) -> bool:
    """Whether atomic() is legal on the stage: the first update of a sum or scatter
    (not yet made atomic, and not the merge of an rfactor)."""
    spec = next((s for s in drawer.pipeline.stages if s.name == st.func.name), None)
    return st.stage == 1 and spec is not None and \
        spec.kind in ASSOCIATIVE_UPDATES + SCATTER_UPDATES and not st.record.atomic and \
        st.record.rfactor is None


def _tail(st: StageState, rng: random.Random, pure: bool = True,
          round_up: bool = True) -> tuple:
    """A tail strategy for a split of the stage (`round_up`: whole tiles allowed, not
    for the output, nor a copy of an input, whose whole tiles would read past it)."""
    tails = ["auto", "guard"]
    if st.pure_stage and pure:
        tails.append("shift_inwards")
        if round_up and not st.is_output:
            tails.append("round_up")
    tail = rng.choice(tails)
    return () if tail == "auto" else (("tail", tail),)


def _split(drawer: GpuDrawer, st: StageState, name: str, factor: int, rng: random.Random,
           pure: bool = True, round_up: bool = True) -> tuple[str, str]:
    outer, inner = st.fresh(name, "o"), st.fresh(name, "i")
    drawer.emit(Call(st.ref(), "split", (name, outer, inner, factor),
                     _tail(st, rng, pure, round_up)))
    if name in st.extents:
        st.extents[outer] = -(-st.extents[name] // factor)
    st.extents[inner] = factor
    return outer, inner


def _bind_kernel(drawer: GpuDrawer, st: StageState, rng: random.Random,
                 round_up: bool = True) -> None:
    """Bind blocks (and usually threads) of a stage that is a kernel of its own."""
    pure = _pure_dims(st)
    names = st.record.dim_names()
    if st.record.atomic and (not pure or rng.random() < 0.4):
        _bind_reduction(drawer, st, rng, blocks=not pure)
        return
    if not pure:  # (no such stage is drawn: it would be refused, as a rejected case)
        return
    if st.pure_stage and len(pure) >= 2 and rng.random() < 0.2:
        drawer.emit(Call(st.ref(), "reorder", (pure[-1].name, pure[-2].name)))
        pure = _pure_dims(st)
        names = st.record.dim_names()
    x = pure[-1].name
    y = pure[-2].name if len(pure) >= 2 and \
        names.index(pure[-2].name) == names.index(x) - 1 else None
    shape = rng.choice(("tile2", "tile2", "tile1", "tile1", "vthread", "blocks", "split"))
    if shape == "tile2" and y is not None:
        ty, tx = rng.choice(THREAD_FACTORS[:7]), rng.choice(THREAD_FACTORS)
        new = [st.fresh(y, "o"), st.fresh(x, "o"), st.fresh(y, "i"), st.fresh(x, "i")]
        drawer.emit(Call(st.ref(), "gpu_tile", (y, x, *new, ty, tx),
                         _tail(st, rng, round_up=round_up)))
        st.extents.update({new[2]: ty, new[3]: tx})
    elif shape in ("tile1", "tile2"):
        t = rng.choice(THREAD_FACTORS + (64, 128))
        xo, xi = st.fresh(x, "o"), st.fresh(x, "i")
        drawer.emit(Call(st.ref(), "gpu_tile", (x, xo, xi, t), _tail(st, rng, round_up=round_up)))
        st.extents[xi] = t
    elif shape == "vthread":
        v, t = rng.choice((2, 3, 4)), rng.choice(THREAD_FACTORS[:8])
        xo, xi = _split(drawer, st, x, v * t, rng, round_up=round_up)
        xv, xt = st.fresh(x, "v"), st.fresh(x, "t")
        drawer.emit(Call(st.ref(), "split", (xi, xv, xt, t)))
        st.extents.update({xv: v, xt: t})
        drawer.emit(Call(st.ref(), "gpu_blocks", (xo,)))
        drawer.emit(Call(st.ref(), "vthread", (xv,)))
        drawer.emit(Call(st.ref(), "gpu_threads", (xt,)))
    elif shape == "blocks":
        drawer.emit(Call(st.ref(), "gpu_blocks", (x,)))
    else:  # blocks over tiles whose inside stays serial, run by the block's first thread
        xo, _ = _split(drawer, st, x, rng.choice(SERIAL_FACTORS), rng,
                       round_up=round_up)
        drawer.emit(Call(st.ref(), "gpu_blocks", (xo,)))
    _more_blocks(drawer, st, rng)


def _more_blocks(drawer: GpuDrawer, st: StageState, rng: random.Random) -> None:
    """Sometimes bind the pure loops just outside the block loops to blocks too."""
    dims = st.dims
    first = next(i for i, d in enumerate(dims) if d.kind is ForKind.GPU_BLOCK)
    room = 3 - sum(d.kind is ForKind.GPU_BLOCK for d in dims)
    outer = []
    for d in reversed(dims[:first]):
        if not d.pure or len(outer) == room:
            break
        outer.insert(0, d.name)
    if outer and rng.random() < 0.5:
        k = rng.randint(1, len(outer))
        drawer.emit(Call(st.ref(), "gpu_blocks", tuple(outer[-k:])))


def _bind_reduction(drawer: GpuDrawer, st: StageState, rng: random.Random,
                    blocks: bool) -> None:
    """Bind the reduction loops of an atomic update: its outermost reduction loop split
    into blocks and threads (`blocks`: it has no pure loop to give the blocks), or, when
    pure loops take the blocks, the reduction loop inside them bound to threads."""
    names = st.record.dim_names()
    impure = [d.name for d in st.dims if not d.pure]
    r = impure[0]
    if blocks:
        ro, ri = _split(drawer, st, r, rng.choice(THREAD_FACTORS), rng, pure=False)
        drawer.emit(Call(st.ref(), "gpu_blocks", (ro,)))
        if rng.random() < 0.8:
            drawer.emit(Call(st.ref(), "gpu_threads", (ri,)))
        return
    pure = [nm for nm in names[:names.index(r)] if nm in {d.name for d in _pure_dims(st)}]
    drawer.emit(Call(st.ref(), "gpu_blocks", tuple(pure[-rng.randint(1, min(3, len(pure))):])))
    drawer.emit(Call(st.ref(), "gpu_threads", (r,)))


def _bind_warp(drawer: GpuDrawer, st: StageState, rng: random.Random, level: str) -> bool:
    """A warp reduction: the outermost reduction loop with only reduction loops the left
    side doesn't use inside it (itself included) split by a power of two up to 32,
    its inner loop bound to threads (often moved outside the outer one, and at block
    level joined by the innermost pure loop as a second thread axis); a kernel binds
    pure loops to blocks first. False (and nothing bound) where the update isn't
    associative, its left side uses every reduction loop, or a kernel has no pure loop."""
    points = st.func.update(st.stage - 1)._warp_point_loops()
    pure = [d.name for d in _pure_dims(st)]
    if points is None:
        return False
    reducing = [d.name for k, d in enumerate(st.dims)
                if all(not x.pure and x.name not in points for x in st.dims[k:])]
    if not reducing or level == KERNEL and not pure:
        return False
    if level == KERNEL:
        drawer.emit(Call(st.ref(), "gpu_blocks", tuple(pure[-rng.randint(1, min(3, len(pure))):])))
    ro, ri = _split(drawer, st, reducing[0], rng.choice(WARP_WIDTHS), rng, pure=False)
    drawer.emit(Call(st.ref(), "gpu_threads", (ri,)))
    if rng.random() < 0.7:
        drawer.emit(Call(st.ref(), "reorder", (ri, ro)))
        if level == BLOCK and pure and rng.random() < 0.5:
            drawer.emit(Call(st.ref(), "gpu_threads", (pure[-1], ri)))
    return True


def _bind_block(drawer: GpuDrawer, st: StageState, rng: random.Random) -> None:
    """Share a block-level stage's work among the block's threads (or leave it to the
    first thread)."""
    pure = _pure_dims(st)
    names = st.record.dim_names()
    roll = rng.random()
    if not pure or roll < 0.2:
        if st.record.atomic and rng.random() < 0.7:
            impure = [d.name for d in st.dims if not d.pure]
            drawer.emit(Call(st.ref(), "gpu_threads", (impure[0],)))
        return
    x = pure[-1].name
    y = pure[-2].name if len(pure) >= 2 and \
        names.index(pure[-2].name) == names.index(x) - 1 else None
    if y is not None and roll < 0.5:
        if rng.random() < 0.5:
            drawer.emit(Call(st.ref(), "gpu_threads", (y, x)))
            return
        ty, tx = rng.choice(THREAD_FACTORS[:7]), rng.choice(THREAD_FACTORS[:7])
        new = [st.fresh(y, "o"), st.fresh(x, "o"), st.fresh(y, "i"), st.fresh(x, "i")]
        drawer.emit(Call(st.ref(), "tile", (y, x, *new, ty, tx),
                         _tail(st, rng, round_up=False)))
        st.extents.update({new[2]: ty, new[3]: tx})
        drawer.emit(Call(st.ref(), "gpu_threads", (new[2], new[3])))
    elif rng.random() < 0.5:
        drawer.emit(Call(st.ref(), "gpu_threads", (x,)))
    else:
        _, xi = _split(drawer, st, x, rng.choice(THREAD_FACTORS), rng, round_up=False)
        drawer.emit(Call(st.ref(), "gpu_threads", (xi,)))


def _inner_draws(drawer: GpuDrawer, st: StageState, rng: random.Random, count: int,
                 level: str) -> None:
    """Splits, unrolls and vectorizes of the loops a thread runs alone: those inside
    the stage's thread loops (every loop, at thread level)."""
    for _ in range(count):
        dims = st.dims
        bound = [i for i, d in enumerate(dims) if d.kind is not ForKind.SERIAL]
        if level == THREAD:
            free = [d for d in dims if d.kind is ForKind.SERIAL]
        elif any(d.kind is ForKind.GPU_THREAD for d in dims):
            free = [d for d in dims[bound[-1] + 1:] if d.kind is ForKind.SERIAL]
        else:
            return
        if not free:
            return
        d = rng.choice(free)
        what = rng.choice(("split", "unroll", "vectorize"))
        ext = st.extents.get(d.name, 0)
        if what == "split":
            _split(drawer, st, d.name, rng.choice(SERIAL_FACTORS), rng, pure=d.pure)
        elif what == "unroll" or not d.pure:
            if 1 <= ext <= 16:
                drawer.emit(Call(st.ref(), "unroll", (d.name,)))
            else:
                _kind_with_factor(drawer, st, d.name, "unroll", "unroll")
        elif 1 <= ext <= 16:
            drawer.emit(Call(st.ref(), "vectorize", (d.name,)))
        else:
            _kind_with_factor(drawer, st, d.name, "vectorize", "vec")


def _kind_with_factor(drawer: GpuDrawer, st: StageState, name: str, method: str,
                      suffix: str) -> None:
    factor = drawer.rng.choice((2, 3, 4))
    if name in st.extents:
        st.extents[name] = -(-st.extents[name] // factor)
    st.extents[_predicted_inner(st, name, suffix)] = factor
    drawer.emit(Call(st.ref(), method, (name, factor)))


def _place_intermediate(drawer: GpuDrawer, placer: Placer, st: StageState, name: str,
                        rng: random.Random) -> None:
    """An rfactor's intermediate: a kernel of its own, or computed in the merge's
    blocks (shared memory) or threads (registers), or, for a merge computed in a
    kernel's blocks, beside it at the same loop (conv_relu's `gpu_schedule_small_batch`:
    each thread's partials then meet in shared memory)."""
    sites = [(st.ref(), d.name, level) for d in st.dims
             if (level := site_level(placer, st.ref(), d.name)) in (BLOCK, THREAD)]
    if drawer.levels[st.func.name] == BLOCK:
        sites.append((*drawer.placements[st.func.name], BLOCK))
    if sites and rng.random() < 0.5:
        ref, var, level = rng.choice(sites)
        drawer.emit(Call(StageRef(name), "compute_at", (ref, var)))
        drawer.placements[name] = (ref, var)
    else:
        drawer.emit(Call(StageRef(name), "compute_root"))
        drawer.placements[name] = "root"
        level = KERNEL
    drawer.levels[name] = level


def _cache_write(drawer: GpuDrawer, placer: Placer, name: str, rng: random.Random) -> None:
    """cache_write of a kernel's Func: the copy-out binds blocks and threads, and the
    Func's stages move into a copy computed in the copy-out's threads (registers) or
    blocks (shared memory)."""
    f = drawer.built.funcs[name]
    scope = rng.choice(("local", "shared"))
    new = predicted_cache_name(f, scope)
    drawer.emit(Call(StageRef(name), "cache_write", (scope,), result=new))
    st = StageState(f, 0, f is drawer.built.output, {})
    _bind_kernel(drawer, st, rng)
    want = {"local": ForKind.GPU_THREAD, "shared": ForKind.GPU_BLOCK}[scope]
    sites = [d.name for d in st.dims if d.kind is want]
    if not sites:  # no thread loop: the copy goes in the blocks' shared memory
        drawer.emit(Call(StageRef(new), "store_in", ("shared",)))
        scope, sites = "shared", [d.name for d in st.dims if d.kind is ForKind.GPU_BLOCK]
    drawer.emit(Call(StageRef(new), "compute_at", (StageRef(name), sites[-1])))
    drawer.placements[new] = (StageRef(name), sites[-1])
    drawer.levels[new] = THREAD if scope == "local" else BLOCK
    placer.named.add(new)
    _schedule_func(drawer, placer, new, rng)


def _cache_reads(drawer: GpuDrawer, placer: Placer, rng: random.Random) -> None:
    """cache_read of inputs and root Funcs: into the shared memory of one reader's block
    (that reader a kernel reading the source in one stage), or a root copy for all."""
    sources = [s.name for s in drawer.pipeline.stages
               if placer.placement(s.name) == "root" and s.name != drawer.pipeline.output.name]
    sources += [i.name for i in drawer.pipeline.inputs]
    for src in sources:
        if rng.random() >= CACHE_READ_RATE:
            continue
        obj = drawer.built.funcs[src] if src in drawer.built.funcs else \
            drawer.built.params[src]
        users = [(g.name, k) for g in placer.env.funcs.values() if g is not obj
                 for k, d in enumerate(g.definitions) if obj in d.deps]
        readers = sorted({g for g, _ in users if drawer.levels.get(g) == KERNEL
                          and placer.placement(g) == "root"
                          and len({k for h, k in users if h == g}) == 1})
        if readers and rng.random() < 0.7:
            g = rng.choice(readers)
            (k,) = {k for h, k in users if h == g}
            record = drawer.built.funcs[g].schedule.stages[k]
            blocks = [d.name for d in record.dims if d.kind is ForKind.GPU_BLOCK]
            if blocks and not record.specializations:
                new = predicted_cache_name(obj, "shared")
                drawer.emit(Call(StageRef(src), "cache_read", ("shared",),
                                 (("readers", (StageRef(g),)),), result=new))
                drawer.emit(Call(StageRef(new), "compute_at", (StageRef(g, k), blocks[-1])))
                drawer.levels[new] = BLOCK
                _bind_block(drawer, StageState(drawer.built.funcs[new], 0, False, {}), rng)
                continue
        new = predicted_cache_name(obj, "global")
        drawer.emit(Call(StageRef(src), "cache_read", ("global",), result=new))
        drawer.emit(Call(StageRef(new), "compute_root"))
        drawer.levels[new] = KERNEL
        _bind_kernel(drawer, StageState(drawer.built.funcs[new], 0, False, {}), rng,
                     round_up=src in drawer.built.funcs)
