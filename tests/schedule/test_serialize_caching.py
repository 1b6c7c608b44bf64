"""Schedules with cache stages, specializations, GPU bindings and tensorize round-trip
through halo source and JSON: replayed on a freshly defined algorithm they give the same
lowered IR (or, for GPU bindings, which the host can't lower, the same records)."""
from __future__ import annotations

import pytest

import halo
from halo.lang.environment import Environment
from halo.lang.schedule_files import apply_json, schedule_to_json

i, j, io, jo, ii, ji = halo.vars("i j io jo ii ji")
y, x, yo, xo, yi, xi, by, bx, ty, tx = halo.vars("y x yo xo yi xi by bx ty tx")


def matmul():
    A = halo.ImageParam(halo.float32, 2, "A")
    B = halo.ImageParam(halo.float32, 2, "B")
    k = halo.RDom((0, A.shape[1]), name="k")
    C = halo.Func("C")
    C[i, j] = 0.0
    C[i, j] += A[i, k] * B[k, j]
    return C, {"A": A, "B": B, "C": C, "k": k}


def blur():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    p = halo.Param(halo.int32, "p", default=1)
    bx_, by_ = halo.Func("blur_x"), halo.Func("blur_y")
    bx_[y, x] = inp[y, x] + inp[y, x + 1] * p
    by_[y, x] = bx_[y, x] + bx_[y + 1, x]
    return by_, {"inp": inp, "p": p, "blur_x": bx_, "blur_y": by_}


def _matmul_tile_and_panel(ns):
    C, B, k = ns["C"], ns["B"], ns["k"]
    Bp = B.cache_read("global", readers=[C])
    CL = C.cache_write("local")
    C.tile(i, j, io, jo, ii, ji, 4, 8)
    CL.compute_at(C, jo)
    CL.update(0).reorder(k.x, i, j).vectorize(j, 8)
    Bp.compute_at(C, jo)


def _cache_write_then_read(ns):
    C, A = ns["C"], ns["A"]
    CL = C.cache_write("global")
    A.cache_read("stack", readers=[CL]).compute_inline()
    C.parallel(i)


def _default_readers_and_cache_of_cache(ns):
    inp, bx_, by_ = ns["inp"], ns["blur_x"], ns["blur_y"]
    c = inp.cache_read("global")
    c2 = c.cache_read("local", readers=[bx_])
    by_.tile(y, x, yo, xo, yi, xi, 4, 4)
    bx_.compute_at(by_, xo)
    c2.compute_at(by_, xo)
    c.compute_root()


def _one_specialization(ns):
    inp, by_ = ns["inp"], ns["blur_y"]
    by_.specialize(inp.shape[1] % 8 == 1).vectorize(x, 8)


def _two_specializations_and_update(ns):
    inp, p, bx_, by_ = ns["inp"], ns["p"], ns["blur_x"], ns["blur_y"]
    by_.split(y, yo, yi, 2)
    by_.specialize((inp.shape[0] > 10) & (p != 0)).parallel(yo)
    by_.specialize(halo.max(inp.shape[1], 3) // 2 == 4).unroll(yi)
    bx_.compute_at(by_, yo).specialize(p == 2).vectorize(x, 4)


CASES = [(matmul, _matmul_tile_and_panel), (matmul, _cache_write_then_read),
         (blur, _default_readers_and_cache_of_cache), (blur, _one_specialization),
         (blur, _two_specializations_and_update)]
IDS = [sched.__name__.strip("_") for _, sched in CASES]


@pytest.mark.parametrize("make,sched", CASES, ids=IDS)
def test_source_round_trip(make, sched):
    """schedule_source names the Funcs it makes; executed on a fresh algorithm (with its
    inputs, Params, Funcs and RDoms in scope by name) it reproduces the lowered IR."""
    out, ns = make()
    sched(ns)
    source = halo.schedule_source(out)
    fresh, fresh_ns = make()
    exec(source, {"halo": halo, **fresh_ns})
    assert str(fresh.lower()) == str(out.lower())


@pytest.mark.parametrize("make,sched", CASES, ids=IDS)
def test_json_round_trip(make, sched):
    """schedule_to_json then apply_json on a fresh algorithm reproduces the lowered IR and
    the records."""
    out, ns = make()
    sched(ns)
    text = schedule_to_json(out)
    fresh, _ = make()
    apply_json(fresh, text)
    assert str(fresh.lower()) == str(out.lower())
    assert _without_seq(schedule_to_json(fresh)) == _without_seq(text)


def _without_seq(text: str) -> str:
    """The creation counter of cache stages differs between two runs; the order doesn't."""
    import json
    data = json.loads(text)
    for d in data.values():
        if d["cache"]:
            d["cache"]["seq"] = None
    return json.dumps(data)


def test_source_names_cache_funcs_and_conditions():
    """The printed source reads like what a user would type."""
    out, ns = matmul()
    _matmul_tile_and_panel(ns)
    source = halo.schedule_source(out)
    assert source.splitlines()[1:3] == ["B_global = B.cache_read('global', readers=[C])",
                                        "C_local = C.cache_write('local')"]
    out, ns = blur()
    _two_specializations_and_update(ns)
    lines = halo.schedule_source(out).splitlines()
    assert "blur_y.specialize((inp.shape[0] > 10) & (p != 0)).parallel(yo)" not in lines
    assert "blur_y.specialize((10 < inp.shape[0]) & (p != 0)).parallel(yo)" in lines
    assert "blur_y.specialize((halo.max(inp.shape[1], 3) // 2) == 4).unroll(yi)" in lines
    assert "blur_x.specialize(p == 2).vectorize(x, 4)" in lines


def _intrinsic():
    r = halo.RDom((0, 4), name="r_t")
    a = halo.ImageParam(halo.float32, 1, "t_a")
    spec = halo.Func("t_spec")
    spec[x] = 0.0
    spec[x] += a[x + r]
    spec.bound(x, 0, 8)
    return halo.Intrinsic("sum8x4", spec, emit=lambda *args: None)


def _gpu_tile(ns):
    ns["blur_y"].gpu_tile(y, x, by, bx, ty, tx, 8, 16)
    ns["blur_x"].compute_at(ns["blur_y"], bx).gpu_threads(x)


def _gpu_vthread_and_specialized(ns):
    by_ = ns["blur_y"]
    by_.specialize(ns["p"] == 1).gpu_tile(x, bx, tx, 64)
    by_.split(y, yo, yi, 4).split(x, xo, xi, 32).reorder(yo, xo, yi, xi)
    by_.gpu_blocks(yo, xo).vthread(yi).gpu_threads(xi)


@pytest.mark.parametrize("sched", [_gpu_tile, _gpu_vthread_and_specialized],
                         ids=lambda c: c.__name__.strip("_"))
def test_gpu_records_round_trip(sched):
    """GPU bindings replay from source and JSON to the same records (lowering them needs
    the cuda target)."""
    out, ns = blur()
    sched(ns)
    text = schedule_to_json(out)
    fresh, fresh_ns = blur()
    exec(halo.schedule_source(out), {"halo": halo, **fresh_ns})
    assert schedule_to_json(fresh) == text
    fresh, _ = blur()
    apply_json(fresh, text)
    assert schedule_to_json(fresh) == text
    with pytest.raises(halo.ScheduleError, match="needs target 'cuda'"):
        out.lower()


def test_tensorize_round_trips():
    """A tensorize record replays, to the same intrinsic calls; JSON finds the Intrinsic
    among those passed in."""
    intrinsic = _intrinsic()
    r = halo.RDom((0, 4), name="r_in")

    def make():
        inp = halo.ImageParam(halo.float32, 1, "inp")
        s = halo.Func("s")
        s[x] = 0.0
        s[x] += inp[x + r]
        return s, {"inp": inp, "s": s, "r_in": r, "sum8x4": intrinsic}

    out, ns = make()
    out.update(0).split(x, xo, xi, 8, tail="guard").tensorize(xi, intrinsic)
    text = schedule_to_json(out)
    source = halo.schedule_source(out)
    assert source.splitlines()[-1] == "s.update(0).tensorize(xi, sum8x4)"
    assert "sum8x4.update(" in str(out.lower())
    for replay in ("source", "json"):
        fresh, fresh_ns = make()
        if replay == "source":
            exec(source, {"halo": halo, **fresh_ns})
        else:
            apply_json(fresh, text, intrinsics=[intrinsic])
        assert schedule_to_json(fresh) == text
        assert str(fresh.lower()) == str(out.lower())


def test_replaying_on_a_different_algorithm_is_refused():
    """A cache stage that comes out under another name means a different algorithm."""
    out, ns = matmul()
    _matmul_tile_and_panel(ns)
    text = schedule_to_json(out)
    fresh, fresh_ns = matmul()
    other = halo.Func("other")
    other[i, j] = fresh_ns["B"][i, j]
    fresh_ns["B"].cache_read("global", readers=[other])  # B_global is taken
    with pytest.raises(halo.ScheduleError, match="made B_global1, but the schedule expects "
                                                 "B_global"):
        apply_json(fresh, text)
    assert Environment.of([out]).funcs.keys() >= {"B_global", "C_local"}
