"""halo.schedule_source prints each loop verb as the user wrote it (tile, gpu_tile, fuse,
vectorize(x, n), ...), and the printed source and the JSON still rebuild the same
records and lower to the same IR: for every verb, and for random schedules."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

import halo
from halo.lang.environment import Environment
from halo.lang.schedule_files import apply_json, schedule_to_json
from halo.random_programs.random_pipeline import random_pipeline
from halo.random_programs.random_schedule import apply_schedule, random_schedule

y, x, c = halo.vars("y x c")
yo, xo, yi, xi, t, u = halo.vars("yo xo yi xi t u")
by, bx, ty, tx, v = halo.vars("by bx ty tx v")


def algorithm():
    """A producer and a consumer with three dimensions and an update over an RDom of 5."""
    inp = halo.ImageParam(halo.float32, 3, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[c, y, x] = halo.boundary.repeat_edge(inp)[c, y, x] * 2.0
    r = halo.RDom((0, 5), name="r")
    f[c, y, x] = g[c, y, x] + 1.0
    f[c, y, x] += halo.cast(halo.float32, r.x) * f[c, y, x]
    return f, g, r


# Each schedule: (what it calls on f, g, r, the lines its source must have).
HOST_CASES = {
    "split": (lambda f, g, r: f.split(x, xo, xi, 7),
              ["f.split(x, xo, xi, 7)"]),
    "split_tail_positional": (lambda f, g, r: f.split(x, xo, xi, 7, "guard"),
                              ["f.split(x, xo, xi, 7, tail='guard')"]),
    "fuse": (lambda f, g, r: f.fuse(y, x, t).parallel(t),
             ["f.fuse(y, x, t)", "f.parallel(t)"]),
    "reorder": (lambda f, g, r: f.reorder(x, y, c),
                ["f.reorder(x, y, c)"]),
    "tile": (lambda f, g, r: f.tile(y, x, yo, xo, yi, xi, 3, 5),
             ["f.tile(y, x, yo, xo, yi, xi, 3, 5)"]),
    "tile_tail": (lambda f, g, r: f.tile(y, x, yo, xo, yi, xi, 3, 5, tail="round_up"),
                  ["f.tile(y, x, yo, xo, yi, xi, 3, 5, tail='round_up')"]),
    "tile_reusing_names": (lambda f, g, r: f.tile(y, x, yo, xo, y, x, 4, 4).fuse(yo, xo, t),
                           ["f.tile(y, x, yo, xo, y, x, 4, 4)", "f.fuse(yo, xo, t)"]),
    "vectorize": (lambda f, g, r: f.bound(c, 0, 3).vectorize(c),
                  ["f.vectorize(c)", "f.bound(c, 0, 3)"]),
    "vectorize_n": (lambda f, g, r: f.vectorize(x, 8),
                    ["f.vectorize(x, 8)"]),
    "vectorize_n_keyword": (lambda f, g, r: f.vectorize(x, n=4),
                            ["f.vectorize(x, 4)"]),
    "unroll": (lambda f, g, r: f.bound(c, 0, 3).unroll(c),
               ["f.unroll(c)", "f.bound(c, 0, 3)"]),
    "unroll_n": (lambda f, g, r: f.unroll(y, 3),
                 ["f.unroll(y, 3)"]),
    "parallel": (lambda f, g, r: f.parallel(y),
                 ["f.parallel(y)"]),
    "parallel_task_size": (lambda f, g, r: f.parallel(y, 2),
                           ["f.parallel(y, 2)"]),
    "serial": (lambda f, g, r: f.vectorize(x, 4).serial(x),
               ["f.vectorize(x, 4)", "f.serial(x)"]),
    "update_rvar": (lambda f, g, r: f.update(0).split(r.x, xo, xi, 2).unroll(xi)
                    .vectorize(x, 4),
                    ["f.update(0).split(r.x, xo, xi, 2)", "f.update(0).unroll(xi)",
                     "f.update(0).vectorize(x, 4)"]),
    "update_1d_rdom": (lambda f, g, r: f.update(0).unroll(r),
                       ["f.update(0).unroll(r.x)"]),
    "producer_at_tile": (lambda f, g, r: (f.tile(y, x, yo, xo, yi, xi, 3, 5),
                                          g.compute_at(f, c).vectorize(x, 4)),
                         ["g.vectorize(x, 4)", "g.compute_at(f, c)",
                          "f.tile(y, x, yo, xo, yi, xi, 3, 5)"]),
    "specialized": (lambda f, g, r: (f.tile(y, x, yo, xo, yi, xi, 2, 2),
                                     f.specialize(_input(f).shape[2] % 8 == 0)
                                     .vectorize(xi, 8).parallel(yo, 2)),
                    ["f.tile(y, x, yo, xo, yi, xi, 2, 2)",
                     "f.specialize((inp.shape[2] % 8) == 0)",
                     "f.specialize((inp.shape[2] % 8) == 0).vectorize(xi, 8)",
                     "f.specialize((inp.shape[2] % 8) == 0).parallel(yo, 2)"]),
    "specializations_made_between_calls": (
        lambda f, g, r: (f.split(x, xo, xi, 4),
                         f.specialize(_input(f).shape[2] == 9).vectorize(xi),
                         f.parallel(y),
                         f.specialize(_input(f).shape[2] == 7).unroll(xi)),
        ["f.split(x, xo, xi, 4)", "f.specialize(inp.shape[2] == 9)",
         "f.specialize(inp.shape[2] == 9).vectorize(xi)", "f.parallel(y)",
         "f.specialize(inp.shape[2] == 7)", "f.specialize(inp.shape[2] == 7).unroll(xi)"]),
}

GPU_CASES = {
    "gpu_tile_2d": (lambda f, g, r: f.gpu_tile(y, x, by, bx, ty, tx, 8, 16),
                    ["f.gpu_tile(y, x, by, bx, ty, tx, 8, 16)"]),
    "gpu_tile_1d": (lambda f, g, r: f.gpu_tile(x, bx, tx, 32, tail="guard"),
                    ["f.gpu_tile(x, bx, tx, 32, tail='guard')"]),
    "gpu_blocks_threads_vthread": (
        lambda f, g, r: f.split(x, bx, tx, 16).split(bx, bx, v, 2).reorder(y, bx, v, tx, c)
        .gpu_blocks(y, bx).vthread(v).gpu_threads(tx),
        ["f.reorder(y, bx, v, tx, c)", "f.gpu_blocks(y, bx)", "f.vthread(v)",
         "f.gpu_threads(tx)"]),
}


def _input(f):
    return Environment.of([f]).inputs["inp"]


def _namespace(out) -> dict:
    """What a user's script has in scope: halo, the Funcs, inputs and RDoms by name."""
    env = Environment.of([out])
    ns = {"halo": halo, **env.funcs, **env.inputs}
    for f in env.funcs.values():
        ns.update({d.rdom.name: d.rdom for d in f.definitions if d.rdom is not None})
    return ns


def _scheduled(schedule):
    with halo.NameScope():
        f, g, r = algorithm()
    schedule(f, g, r)
    return f


def _fresh():
    with halo.NameScope():
        return algorithm()[0]


@pytest.mark.parametrize("name", HOST_CASES)
def test_each_verb_prints_as_written_and_lowers_the_same(name):
    schedule, lines = HOST_CASES[name]
    out = _scheduled(schedule)
    source = halo.schedule_source(out)
    assert [line for line in source.splitlines() if line in lines] == lines, source
    fresh = _fresh()
    exec(source, _namespace(fresh))
    assert str(fresh.lower()) == str(out.lower())
    assert schedule_to_json(fresh) == schedule_to_json(out)
    again = _fresh()
    apply_json(again, schedule_to_json(out))
    assert str(again.lower()) == str(out.lower())


@pytest.mark.parametrize("name", GPU_CASES)
def test_gpu_verbs_print_as_written_and_rebuild_the_records(name):
    """GPU bindings don't lower on the host; the records they rebuild are compared."""
    schedule, lines = GPU_CASES[name]
    out = _scheduled(schedule)
    source = halo.schedule_source(out)
    assert [line for line in source.splitlines() if line in lines] == lines, source
    fresh = _fresh()
    exec(source, _namespace(fresh))
    assert schedule_to_json(fresh) == schedule_to_json(out)
    again = _fresh()
    apply_json(again, schedule_to_json(out))
    assert schedule_to_json(again) == schedule_to_json(out)


def test_a_refused_verb_leaves_no_call():
    """A tile refused at its reorder (after both splits succeeded) prints nothing."""
    f, _, _ = algorithm()
    f.split(y, yo, yi, 2)
    with pytest.raises(halo.ScheduleError):
        f.tile(x, c, xo, t, xi, yi, 2, 2)
    with pytest.raises(halo.ScheduleError):
        f.vectorize(u, 4)
    assert halo.schedule_source(f).splitlines()[1:] == ["f.split(y, yo, yi, 2)"]


def test_json_saved_without_calls_still_applies():
    """A schedule saved before the calls were kept (only loops and transforms) is
    rebuilt from its records: same IR."""
    out = _scheduled(HOST_CASES["producer_at_tile"][0])
    data = json.loads(schedule_to_json(out))
    for sched in data.values():
        for stage in sched["stages"]:
            del stage["calls"]
    fresh = _fresh()
    apply_json(fresh, json.dumps(data))
    assert str(fresh.lower()) == str(out.lower())


def _loop_calls(calls) -> dict:
    """The loop verbs among `calls`, per stage, in order."""
    verbs = {"split", "fuse", "reorder", "tile", "vectorize", "unroll", "parallel", "serial"}
    per_stage: dict = {}
    for call in calls:
        if call.method in verbs:
            kwargs = tuple(kw for kw in call.kwargs if kw != ("tail", "auto"))  # the default
            per_stage.setdefault(call.target, []).append(replace(call, kwargs=kwargs).source())
    return per_stage


@pytest.mark.parametrize("seed", range(12))
def test_random_schedules_round_trip_as_written(seed):
    """A random schedule (every loop verb, caches, rfactor, specializations) prints its
    loop calls exactly as drawn, and its source and JSON both lower to the same IR."""
    p = random_pipeline(seed)
    calls = random_schedule(p, _build(p), seed)
    built = _build(p)
    apply_schedule(calls, built)
    source = halo.schedule_source(built.output)
    lines = source.splitlines()
    for stage, drawn in _loop_calls(calls).items():
        if isinstance(stage.condition, str):
            continue  # printed through the condition's IR: compared by the lowering below
        assert [line for line in lines if line in drawn] == drawn, (stage, source)
    expected = _lowered(built.output)

    fresh = _build(p)
    exec(source, {**_namespace(fresh.output), **fresh.params})
    assert _lowered(fresh.output) == expected
    assert halo.schedule_source(fresh.output) == source

    again = _build(p)
    apply_json(again.output, schedule_to_json(built.output))
    assert _lowered(again.output) == expected


def _build(p):
    """A fresh build of `p`, the names halo makes up numbered the same each time."""
    with halo.NameScope():
        return p.build()


def _lowered(out) -> str:
    try:
        return str(out.lower())
    except halo.HaloError as e:  # a refused schedule must be refused the same way
        return f"{type(e).__name__}: {e}"


def test_random_schedules_draw_tiles():
    """The random schedules exercise the verbs that print as one call."""
    methods = set()
    for seed in range(12):
        p = random_pipeline(seed)
        methods |= {c.method for c in random_schedule(p, p.build(), seed)}
    assert {"tile", "vectorize", "fuse", "parallel"} <= methods
