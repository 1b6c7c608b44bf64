"""Random schedules for random pipelines: legal ones, and illegal ones that halo must
reject with a `HaloError`.

A schedule is a list of `halo.schedule.calls.Call`s (one schedule method call each),
applied in order to the Funcs of a built pipeline. `random_schedule(pipeline, built,
seed)` draws a legal one: Funcs are visited consumers first; each gets a placement
(inline, root, or compute_at / store_at a loop that encloses every use; sometimes its
dimensions stored in another order, `reorder_storage`) and then, per stage, a few loop
transformations drawn from `LOOP_PRIMITIVES`: a table with one entry per schedule
primitive, each a function that draws a legal use of it for the stage's current loops,
or None where it doesn't apply. A new primitive is one more function and
one more table entry.
`illegal_schedule` draws a legal prefix and then one call from `ILLEGAL_CALLS`.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from halo.ir import nodes as n
from halo.ir.nodes import ForKind
from halo.lang.environment import Environment
from halo.lang.var import Var
from halo.lower.realization import innermost_scalar_loop
from halo.random_programs.pipeline_spec import DIMS, BuiltPipeline, RandomPipeline
from halo.schedule.calls import Call, StageRef
from halo.schedule.serialize import execute

FACTORS = (1, 2, 3, 4, 5, 7, 8, 16)


def apply_schedule(calls: list[Call], built: BuiltPipeline) -> None:
    """Run the calls, in order, on a fresh build of their pipeline."""
    for c in calls:
        apply_call(c, built)


def apply_call(call: Call, built: BuiltPipeline) -> None:
    """Run `call` on the built Funcs and inputs; a Func it makes joins `built.funcs`."""
    objects = {**built.params, **built.funcs}
    condition = call.target.condition
    if isinstance(condition, str):
        call = replace(call, target=replace(call.target,
                                            condition=_condition(condition, built.params)))
    execute(call, objects, intrinsics={})
    if call.result is not None:
        built.funcs[call.result] = objects[call.result]


def _condition(text: str, params: dict) -> object:
    """A condition drawn as halo source over the inputs (`in0.shape[1] % 8 == 0`, or,
    for an illegal one, over the pure Vars), as an expression."""
    namespace = {**{name: Var(name) for name in DIMS[3]}, **params}
    return eval(text, namespace)  # noqa: S307 - text drawn by this package


@dataclass
class StageState:
    """One stage being scheduled: its Func, index, the known constant loop extents."""
    func: object
    stage: int
    is_output: bool
    extents: dict[str, int]
    counter: int = 0

    @property
    def record(self):
        return self.func.schedule.stages[self.stage]

    @property
    def dims(self):
        return self.record.dims

    @property
    def pure_stage(self) -> bool:
        return self.stage == 0

    def ref(self) -> StageRef:
        return StageRef(self.func.name, self.stage)

    def fresh(self, base: str, suffix: str) -> str:
        used = self.record.names_used()
        base = base.replace(".", "")
        while True:
            self.counter += 1
            name = f"{base}{suffix}{self.counter}"
            if name not in used:
                return name


@dataclass
class Drawer:
    """Draws calls and applies each at once to the built Funcs, so the next draw sees
    the loops as they are now."""
    rng: random.Random
    pipeline: RandomPipeline
    built: BuiltPipeline
    calls: list[Call] = field(default_factory=list)
    placements: dict = field(default_factory=dict)  # name -> "inline" | "root" | (ref, var)
    conditions: list[str] = field(default_factory=list)  # specializations' drawn so far

    def emit(self, call: Call) -> None:
        apply_call(call, self.built)
        self.calls.append(call)


# ------------------------------------------------------------------ loop primitives


def _pick(st: StageState, rng: random.Random, pure_only: bool = False):
    dims = [d for d in st.dims if d.pure or not pure_only]
    return rng.choice(dims) if dims else None


def draw_split(st: StageState, rng: random.Random) -> Call | None:
    d = _pick(st, rng)
    factor = rng.choice(FACTORS)
    tails = ["auto", "guard"]
    if st.pure_stage and d.pure:
        tails.append("shift_inwards")
        if not st.is_output:
            tails.append("round_up")
    tail = rng.choice(tails)
    outer = d.name if rng.random() < 0.3 else st.fresh(d.name, "o")
    inner = st.fresh(d.name, "i")
    if d.name in st.extents:
        st.extents[outer] = -(-st.extents[d.name] // factor)
    st.extents[inner] = factor
    kwargs = () if tail == "auto" and rng.random() < 0.5 else (("tail", tail),)
    return Call(st.ref(), "split", (d.name, outer, inner, factor), kwargs)


def draw_fuse(st: StageState, rng: random.Random) -> Call | None:
    if len(st.dims) < 2:
        return None
    k = rng.randrange(len(st.dims) - 1)
    o, i = st.dims[k], st.dims[k + 1]
    fused = st.fresh(o.name + i.name, "f")
    if o.name in st.extents and i.name in st.extents:
        st.extents[fused] = st.extents[o.name] * st.extents[i.name]
    return Call(st.ref(), "fuse", (o.name, i.name, fused))


def _reordered(names: list[str], order: list[str]) -> list[str]:
    """`names` after `reorder(*order)`: the named loops take their slots in this order."""
    slots = sorted(names.index(nm) for nm in order)
    new = list(names)
    for slot, nm in zip(slots, order, strict=True):
        new[slot] = nm
    return new


def _keeps_rvar_order(names: list[str], order: list[str], impure: set[str]) -> bool:
    return [nm for nm in _reordered(names, order) if nm in impure] == \
        [nm for nm in names if nm in impure]


def draw_reorder(st: StageState, rng: random.Random) -> Call | None:
    if len(st.dims) < 2:
        return None
    names = rng.sample(st.record.dim_names(), rng.randint(2, len(st.dims)))
    if not _keeps_rvar_order(st.record.dim_names(), names,
                             {d.name for d in st.dims if not d.pure}):
        return None
    return Call(st.ref(), "reorder", tuple(names))


def draw_tile(st: StageState, rng: random.Random) -> Call | None:
    if len(st.dims) < 2:
        return None
    a, b = sorted(rng.sample(range(len(st.dims)), 2))
    y, x = st.dims[a], st.dims[b]
    ty, tx = rng.choice(FACTORS), rng.choice(FACTORS)
    names = [st.fresh(y.name, "o"), st.fresh(x.name, "o"), st.fresh(y.name, "i"),
             st.fresh(x.name, "i")]
    split = st.record.dim_names()
    split[b:b + 1] = [names[1], names[3]]
    split[a:a + 1] = [names[0], names[2]]
    impure = {nm for d, pair in ((y, names[0::2]), (x, names[1::2])) if not d.pure
              for nm in pair} | {d.name for d in st.dims if not d.pure}
    if not _keeps_rvar_order(split, names, impure):
        return None
    for (old, f), outer, inner in zip(((y.name, ty), (x.name, tx)), names[:2], names[2:],
                                      strict=True):
        if old in st.extents:
            st.extents[outer] = -(-st.extents[old] // f)
        st.extents[inner] = f
    tails = ["auto", "guard"] + (["shift_inwards"] if st.pure_stage and y.pure and x.pure
                                 else [])
    tail = rng.choice(tails)
    kwargs = () if tail == "auto" else (("tail", tail),)
    return Call(st.ref(), "tile", (y.name, x.name, *names, ty, tx), kwargs)


def _kind_with_factor(st: StageState, rng: random.Random, method: str, factors,
                      suffix: str, pure_only: bool) -> Call | None:
    d = _pick(st, rng, pure_only)
    if d is None:
        return None
    n = rng.choice(factors)
    if d.name in st.extents:
        st.extents[d.name] = -(-st.extents[d.name] // n)
    inner = _predicted_inner(st, d.name, suffix)
    st.extents[inner] = n
    return Call(st.ref(), method, (d.name, n))


def _predicted_inner(st: StageState, base: str, suffix: str) -> str:
    """The name `Schedulable._fresh_suffix` will give the inner loop."""
    used = st.record.names_used()
    name, i = f"{base}_{suffix}", 1
    while name in used:
        name, i = f"{base}_{suffix}{i}", i + 1
    return name


def draw_vectorize(st: StageState, rng: random.Random) -> Call | None:
    const = [d for d in st.dims if d.pure and 1 <= st.extents.get(d.name, 0) <= 32]
    if const and rng.random() < 0.6:
        return Call(st.ref(), "vectorize", (rng.choice(const).name,))
    return _kind_with_factor(st, rng, "vectorize", (2, 3, 4, 8, 16), "vec", pure_only=True)


def draw_unroll(st: StageState, rng: random.Random) -> Call | None:
    const = [d for d in st.dims if 1 <= st.extents.get(d.name, 0) <= 16]
    if const and rng.random() < 0.6:
        return Call(st.ref(), "unroll", (rng.choice(const).name,))
    return _kind_with_factor(st, rng, "unroll", (2, 3, 4), "unroll", pure_only=False)


def draw_parallel(st: StageState, rng: random.Random) -> Call | None:
    d = _pick(st, rng, pure_only=True)
    if d is None:
        return None
    if rng.random() < 0.6:
        return Call(st.ref(), "parallel", (d.name,))
    task = rng.choice((1, 2, 3, 5))
    if d.name in st.extents:
        st.extents[d.name] = -(-st.extents[d.name] // task)
    st.extents[_predicted_inner(st, d.name, "task")] = task
    return Call(st.ref(), "parallel", (d.name, task))


def draw_serial(st: StageState, rng: random.Random) -> Call | None:
    d = _pick(st, rng)
    return Call(st.ref(), "serial", (d.name,))


# name -> (weight, draw(stage, rng) -> Call | None). Each draw returns a call that is
# legal for the stage's current loops.
LOOP_PRIMITIVES: dict[str, tuple[float, Callable]] = {
    "split": (3.0, draw_split),
    "fuse": (1.0, draw_fuse),
    "reorder": (1.5, draw_reorder),
    "tile": (1.5, draw_tile),
    "vectorize": (2.0, draw_vectorize),
    "unroll": (1.0, draw_unroll),
    "parallel": (1.5, draw_parallel),
    "serial": (0.2, draw_serial),
}


# ---------------------------------------------------------------------- placements


def uses(env: Environment, name: str) -> list[tuple[str, int]]:
    """(consumer, stage) pairs whose definitions call `name` directly."""
    f = env.funcs[name]
    out = []
    for g in env.funcs.values():
        for k, d in enumerate(g.definitions):
            if g is not f and f in d.deps:
                out.append((g.name, k))
    return out


def _rdom_extents(func, stage: int) -> dict[str, int]:
    rdom = func.definitions[stage].rdom
    if rdom is None:
        return {}
    return {rv.name: ext.node.value for rv, (_, ext) in zip(rdom.rvars, rdom.bounds,
                                                            strict=True)
            if isinstance(ext.node, n.Const)}


class Placer:
    """Where each Func may be computed: the loops that enclose every use of it."""

    def __init__(self, drawer: Drawer):
        self.d = drawer
        self.env = Environment.of([drawer.built.output])
        self.named = {s.name for s in drawer.pipeline.stages}

    def placement(self, name: str):
        if name in self.d.placements:
            return self.d.placements[name]
        if name == self.d.pipeline.output.name:
            return "root"
        f = self.env.funcs[name]
        if f.schedule.inline_reduction:
            return self.reduction_level(name)
        return "root" if len(f.definitions) > 1 else "inline"

    def reduction_level(self, name: str):
        """Where lowering computes an unplaced inline reduction: the innermost scalar
        loop of the one stage that uses it (`lower.realization`). Under a specialized
        stage, whose branches may nest the loops outside it differently, "root": the
        Funcs it reads are then computed at root or inline, which is legal anywhere; so
        too under a Func the schedule can't name (another unnamed reduction)."""
        users = self.effective_uses(name)
        if len(users) != 1:
            return "root"
        g, k = users[0]
        stage = self.env.funcs[g].schedule.stages[k]
        if stage.specializations or g not in self.d.built.funcs:  # (a schedule can't name g)
            return "root"
        level = innermost_scalar_loop(g, k, stage)
        return (StageRef(g, k), level.var) if level.var is not None else "root"

    def effective_uses(self, name: str) -> list[tuple[str, int]]:
        out = []
        for g, k in uses(self.env, name):
            out += self.effective_uses(g) if self.placement(g) == "inline" else [(g, k)]
        return out

    def enclosing(self, name: str) -> list[tuple[StageRef, str, ForKind]]:
        """The loops around where `name` is computed, outermost first."""
        where = self.placement(name)
        if not isinstance(where, tuple):
            return []
        ref, var = where
        dims = self.env.funcs[ref.func].schedule.stages[ref.stage].dims
        names = [d.name for d in dims]
        inside = [(ref, d.name, d.kind) for d in dims[:names.index(var) + 1]]
        return self.enclosing(ref.func) + inside

    def sites(self, name: str) -> list[tuple[StageRef, str, ForKind]]:
        """compute_at sites that enclose every use of `name`."""
        common = None
        for g, k in self.effective_uses(name):
            own = []
            stage = self.env.funcs[g].schedule.stages[k]
            if g in self.named and not stage.specializations:  # (branches split apart)
                ref = StageRef(g, k)
                own = [(ref, d.name, d.kind) for d in stage.dims]
            options = self.enclosing(g) + own
            common = options if common is None else [o for o in common if o in options]
        return common or []


def draw_placement(drawer: Drawer, name: str, inline: bool, sites: list,
                   rng: random.Random) -> tuple | str | None:
    """Inline (None), compute at root ("root") or compute at one of `sites` (the site):
    the call emitted and the placement recorded."""
    ref = StageRef(name)
    choice = rng.choice(["root"] + (["inline"] if inline else []) + (["at", "at"] if sites
                                                                     else []))
    if choice == "inline":
        if rng.random() < 0.3:
            drawer.emit(Call(ref, "compute_inline"))
        drawer.placements[name] = "inline"
        return None
    if choice == "root":
        drawer.emit(Call(ref, "compute_root"))
        drawer.placements[name] = "root"
        return "root"
    site = rng.choice(sites)
    drawer.emit(Call(ref, "compute_at", site[:2]))
    drawer.placements[name] = site[:2]
    return site


def _place(drawer: Drawer, placer: Placer, name: str, rng: random.Random) -> None:
    f = drawer.built.funcs[name]
    ref = StageRef(name)
    placed = draw_placement(drawer, name, len(f.definitions) == 1, placer.sites(name), rng)
    if placed is None:
        return
    chain = [] if placed == "root" else placer.enclosing(name)
    if rng.random() < 0.3:
        _store(drawer, ref, chain, rng)
    if rng.random() < 0.1:
        # (a stack buffer whose region has no constant bound takes its size at run time)
        drawer.emit(Call(ref, "store_in", (rng.choice(("global", "stack")),)))
    draw_storage_order(drawer, ref, rng)


def draw_storage_order(drawer: Drawer, ref: StageRef, rng: random.Random) -> None:
    """Sometimes, a Func of two or more dimensions stored in another order."""
    dims = [a.name for a in drawer.built.funcs[ref.func].args]
    if len(dims) >= 2 and rng.random() < REORDER_STORAGE_RATE:
        order = dims[:]
        while order == dims:
            rng.shuffle(order)
        drawer.emit(Call(ref, "reorder_storage", tuple(order)))


def _store(drawer: Drawer, ref: StageRef, chain, rng: random.Random) -> None:
    """store_root or store_at a loop outside the compute level, with no parallel or
    vector loop between the two (their iterations would share the storage)."""
    options = []
    for k in range(len(chain) + 1):
        if all(kind in (ForKind.SERIAL, ForKind.UNROLLED) for _, _, kind in chain[k:]):
            options.append(k)
    if not options:
        return
    k = rng.choice(options)
    if k == 0:
        drawer.emit(Call(ref, "store_root"))
    else:
        site_ref, var, _ = chain[k - 1]
        drawer.emit(Call(ref, "store_at", (site_ref, var)))


def _schedule_loops(drawer: Drawer, name: str, rng: random.Random, count: int,
                    placer: Placer | None = None, specialize: bool = True) -> None:
    f = drawer.built.funcs[name]
    is_output = f is drawer.built.output
    for k in range(len(f.definitions)):
        extents = _rdom_extents(f, k)
        if is_output and k == 0 and rng.random() < 0.3:
            for var, lo, size in zip(f.args, drawer.pipeline.output_origin,
                                     drawer.pipeline.output_shape, strict=True):
                drawer.emit(Call(StageRef(name), "bound", (var.name, lo, size)))
        if is_output:
            bound = f.schedule.bounds
            extents.update({v: e.value for v, (_, e) in bound.items() if isinstance(e, n.Const)})
        st = StageState(f, k, is_output, extents)
        intm = None
        if k > 0 and placer is not None:
            intm = draw_rfactor(drawer, st, rng)
            if intm is None:
                for call in draw_update_permission(drawer, st, rng):
                    drawer.emit(call)
        _draw_loops(drawer, st, rng, rng.randint(0, count), LOOP_PRIMITIVES)
        if specialize and drawer.pipeline.inputs and rng.random() < SPECIALIZE_RATE:
            spec = draw_specialization(drawer, st, rng)
            _draw_loops(drawer, spec, rng, rng.randint(1, 2), LOOP_PRIMITIVES)
        if intm is not None:
            place_rfactor(drawer, st, intm, rng)
            _schedule_loops(drawer, intm, rng, count, placer)
            placer.named.add(intm)


def _place_reductions(drawer: Drawer, placer: Placer, name: str, rng: random.Random,
                      count: int) -> None:
    """The inline reductions stage `name` names: left where lowering puts them (the
    innermost loop of their user) a third of the time, else placed at root or at a loop
    around their use, and given loop transformations."""
    for red in drawer.pipeline.stage(name).reductions:
        if rng.random() < 0.3:
            continue
        _place(drawer, placer, red, rng)
        _schedule_loops(drawer, red, rng, count, specialize=False)


def _draw_loops(drawer: Drawer, st: StageState, rng: random.Random, count: int,
                table: dict[str, tuple[float, Callable]]) -> None:
    names, weights = list(table), [w for w, _ in table.values()]
    for _ in range(count):
        call = table[rng.choices(names, weights)[0]][1](st, rng)
        if call is not None:
            drawer.emit(call)


def random_schedule(pipeline: RandomPipeline, built: BuiltPipeline, seed: int,
                    max_calls_per_stage: int = 2) -> list[Call]:
    """A legal schedule for `built` (a fresh build of `pipeline`), applied to it, and
    returned as calls; the same for the same seed."""
    rng = random.Random(seed)
    drawer = Drawer(rng, pipeline, built)
    placer = Placer(drawer)
    for spec in reversed(pipeline.stages):
        if spec.name != pipeline.output.name:
            _place(drawer, placer, spec.name, rng)
        if placer.placement(spec.name) != "inline":
            new = draw_cache_write(drawer, spec.name, rng)
            _schedule_loops(drawer, spec.name, rng, max_calls_per_stage, placer,
                            specialize=new is None)
            if new is not None:
                place_cache_write(drawer, spec.name, new, rng)
                _schedule_loops(drawer, new, rng, max_calls_per_stage, placer)
                placer.named.add(new)
        placer.env = Environment.of([built.output])
        _place_reductions(drawer, placer, spec.name, rng, max_calls_per_stage)
    draw_cache_reads(drawer, placer, rng)
    return drawer.calls


# -------------------------------------------- specializations, new Funcs, permissions

SPECIALIZE_RATE = 0.12
REORDER_STORAGE_RATE = 0.15
CACHE_WRITE_RATE = 0.1
CACHE_READ_RATE = 0.1
RFACTOR_RATE = 0.3
ATOMIC_RATE = 0.3
# Stage kinds whose update is `f[..] += e` with e free of f: rfactor and atomic apply
# (scatters: at points the reduction variables index).
ASSOCIATIVE_UPDATES = ("stencil_rdom", "conv", "matmul")
SCATTER_UPDATES = ("histogram", "scatter")


@dataclass
class SpecState(StageState):
    """The specialization of a stage under `cond`: draws schedule its copy of the loops."""
    cond: str = ""

    @property
    def record(self):
        parent = self.func.schedule.stages[self.stage]
        return parent.specializations[-1].schedule if parent.specializations else parent

    def ref(self) -> StageRef:
        return StageRef(self.func.name, self.stage, self.cond)


def draw_specialization(drawer: Drawer, st: StageState, rng: random.Random) -> SpecState:
    """A specialization of stage `st` to draw loops for (made by the first call on it,
    with a copy of the stage's loops then): its condition, half the time, one another
    stage specialized on (a producer computed inside a consumer's branches then has its
    branch decided there)."""
    cond = rng.choice(drawer.conditions) if drawer.conditions and rng.random() < 0.5 \
        else draw_condition(drawer.pipeline, rng)
    drawer.conditions.append(cond)
    return SpecState(st.func, st.stage, st.is_output, dict(st.extents), cond=cond)


def draw_condition(pipeline: RandomPipeline, rng: random.Random) -> str:
    """A condition over an input's extent: true or false for the inputs drawn."""
    inp = rng.choice(pipeline.inputs)
    i = rng.randrange(len(inp.shape))
    e = f"{inp.name}.shape[{i}]"
    return rng.choice((f"{e} % {rng.choice((2, 4, 8))} == 0", f"{e} > {rng.randint(1, 24)}",
                       f"{e} == {inp.shape[i]}", f"{e} == {inp.shape[i] + 1}",
                       f"({e} >= 4) & ({e} % 2 == 1)"))


def draw_parallel_rvar(st: StageState, rng: random.Random) -> Call | None:
    """parallel / vectorize of a reduction loop of an atomic update."""
    impure = [d for d in st.dims if not d.pure]
    if not st.record.atomic or not impure:
        return None
    d = rng.choice(impure)
    ext = st.extents.get(d.name, 0)
    if 1 <= ext <= 32 and rng.random() < 0.3:
        return Call(st.ref(), "vectorize", (d.name,))
    if rng.random() < 0.3:
        return _kind_with_factor_on(st, d.name, rng.choice((2, 4, 8)), "vectorize", "vec")
    return Call(st.ref(), "parallel", (d.name,))


def _kind_with_factor_on(st: StageState, name: str, factor: int, method: str,
                         suffix: str) -> Call:
    if name in st.extents:
        st.extents[name] = -(-st.extents[name] // factor)
    st.extents[_predicted_inner(st, name, suffix)] = factor
    return Call(st.ref(), method, (name, factor))


LOOP_PRIMITIVES["parallel_rvar"] = (1.5, draw_parallel_rvar)

def _kind(drawer: Drawer, name: str) -> str | None:
    return next((s.kind for s in drawer.pipeline.stages if s.name == name), None)


def draw_update_permission(drawer: Drawer, st: StageState, rng: random.Random) -> list[Call]:
    """atomic() on an update that reads its Func only at the point it writes with an
    order-free operator (sums and histograms), so its reduction loops may run in
    parallel or vectorized."""
    if st.stage == 1 and _kind(drawer, st.func.name) in ASSOCIATIVE_UPDATES + \
            SCATTER_UPDATES and rng.random() < ATOMIC_RATE:
        return [Call(st.ref(), "atomic")]
    return []


def draw_rfactor(drawer: Drawer, st: StageState, rng: random.Random) -> str | None:
    """rfactor of an associative update (splitting a lone reduction loop first); returns
    the intermediate's name (placed by `place_rfactor` once the merge is scheduled)."""
    if st.stage != 1 or _kind(drawer, st.func.name) not in ASSOCIATIVE_UPDATES + \
            SCATTER_UPDATES or rng.random() >= RFACTOR_RATE:
        return None
    impure = [d for d in st.dims if not d.pure]
    if len(impure) == 1:
        d = impure[0]
        factor = rng.choice((2, 3, 4))
        inner = st.fresh(d.name, "i")
        if d.name in st.extents:
            st.extents[d.name] = -(-st.extents[d.name] // factor)
        st.extents[inner] = factor
        drawer.emit(Call(st.ref(), "split", (d.name, d.name, inner, factor),
                         (("tail", rng.choice(("auto", "guard"))),)))
        impure = [d for d in st.dims if not d.pure]
    loop = rng.choice(impure).name
    name = f"{st.func.name}_rf"
    drawer.emit(Call(st.ref(), "rfactor", (loop, st.fresh("u", "")), (("name", name),),
                     result=name))
    return name


def place_rfactor(drawer: Drawer, st: StageState, name: str, rng: random.Random) -> None:
    """The intermediate of an rfactor, at root or at a loop of the merge (unless the
    merge has specializations, whose loops may differ)."""
    merge = [d.name for d in st.dims]
    if merge and not st.record.specializations and rng.random() < 0.5:
        where: object = (st.ref(), rng.choice(merge))
        drawer.emit(Call(StageRef(name), "compute_at", where))
    else:
        where = "root"
        drawer.emit(Call(StageRef(name), "compute_root"))
    drawer.placements[name] = where


def draw_cache_write(drawer: Drawer, name: str, rng: random.Random) -> str | None:
    """cache_write of a Func with no loop schedule yet; returns the new Func's name. It
    is placed (and scheduled) by `place_cache_write` once the Func's loops are drawn."""
    if rng.random() >= CACHE_WRITE_RATE:
        return None
    f = drawer.built.funcs[name]
    scope = rng.choice(("global", "local"))
    new = predicted_cache_name(f, scope)
    drawer.emit(Call(StageRef(name), "cache_write", (scope,), result=new))
    return new


def predicted_cache_name(source, scope: str) -> str:
    """The name `cache_read` / `cache_write` will give the new Func."""
    k = source.__dict__.get("_cache_counts", {}).get(scope, 0)
    return f"{source.name}_{scope}" if k == 0 else f"{source.name}_{scope}{k}"


def place_cache_write(drawer: Drawer, name: str, new: str, rng: random.Random) -> None:
    """Compute the stage `cache_write` made at root or at a loop of the copy-out."""
    dims = drawer.built.funcs[name].schedule.stages[0].dims
    if rng.random() < 0.6:
        var = rng.choice(dims).name
        drawer.emit(Call(StageRef(new), "compute_at", (StageRef(name), var)))
        drawer.placements[new] = (StageRef(name), var)
    else:
        drawer.emit(Call(StageRef(new), "compute_root"))
        drawer.placements[new] = "root"


def draw_cache_reads(drawer: Drawer, placer: Placer, rng: random.Random) -> None:
    """cache_read of root Funcs and of inputs: for every reader (the copy at root), or
    for one reader computed somewhere (the copy at root, or at one of its loops or of
    the loops around it, when the reader reads the source in one stage)."""
    sources = [s.name for s in drawer.pipeline.stages
               if placer.placement(s.name) == "root" and s.name != drawer.pipeline.output.name]
    sources += [i.name for i in drawer.pipeline.inputs]
    for src in sources:
        if rng.random() >= CACHE_READ_RATE:
            continue
        obj = drawer.built.funcs[src] if src in drawer.built.funcs else drawer.built.params[src]
        uses_now = _direct_uses(placer.env, obj)
        readers = sorted({g for g, _ in uses_now
                          if g in drawer.built.funcs and placer.placement(g) != "inline"})
        scope = rng.choice(("global", "global", "shared", "stack"))
        new = predicted_cache_name(obj, scope)
        if readers and rng.random() < 0.7:
            g = rng.choice(readers)
            drawer.emit(Call(StageRef(src), "cache_read", (scope,),
                             (("readers", (StageRef(g),)),), result=new))
            stages = {k for h, k in uses_now if h == g}
            record = drawer.built.funcs[g].schedule.stages[min(stages)]
            if len(stages) == 1 and not record.specializations and rng.random() < 0.6:
                ref = StageRef(g, stages.pop())
                # At a loop of the reader, or of a Func around where the reader is
                # computed (a packed panel: apps/matmul.py's B at C's task loop).
                sites = [(ref, d.name) for d in record.dims]
                sites += [site[:2] for site in placer.enclosing(g)]
                drawer.emit(Call(StageRef(new), "compute_at", rng.choice(sites)))
                continue
        else:
            drawer.emit(Call(StageRef(src), "cache_read", (scope,), result=new))
        drawer.emit(Call(StageRef(new), "compute_root"))


def _direct_uses(env: Environment, obj) -> list[tuple[str, int]]:
    return [(g.name, k) for g in env.funcs.values() if g is not obj
            for k, d in enumerate(g.definitions) if obj in d.deps]
