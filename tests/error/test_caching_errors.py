"""Misuse of cache_read, cache_write, store_in, specialize, GPU bindings and tensorize:
each raises a HaloError whose whole message names the Func and the call and says what
would be legal."""
from __future__ import annotations

import numpy as np
import pytest

import halo

y, x, yo, xo, yi, xi, by, bx, ty, tx = halo.vars("y x yo xo yi xi by bx ty tx")


def two_stage():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2.0
    f[y, x] = g[y, x] + 1.0
    return inp, g, f


def message(exc_type, fn) -> str:
    with pytest.raises(exc_type) as info:
        fn()
    return str(info.value)


# ------------------------------------------------------------------------- cache_read


def test_cache_read_names_a_reader_that_does_not_read_it():
    """A reader that doesn't read the source is refused; the real readers are listed."""
    inp, g, f = two_stage()
    assert message(halo.ScheduleError, lambda: inp.cache_read("global", readers=[f])) == (
        "inp.cache_read('global', readers=[f]): f does not read inp; the Funcs that read it "
        "are: g")


def test_cache_read_with_no_readers_at_all():
    """readers=None on a Func nothing reads yet."""
    lonely = halo.ImageParam(halo.float32, 1, "lonely")
    assert message(halo.ScheduleError, lambda: lonely.cache_read("global")) == (
        "lonely.cache_read('global', readers=None): no Func reads lonely yet, so there is "
        "nothing to read the copy; define its consumers first, or name them with "
        "readers=[...]")


def test_cache_read_readers_must_be_a_list_of_funcs():
    """A single Func (not a list) or an empty list is refused."""
    inp, g, f = two_stage()
    assert message(halo.ScheduleError, lambda: g.cache_read("global", readers=[])) == (
        "g.cache_read('global', readers=[]): readers must be a non-empty list of Funcs that "
        "read g (or None for all of them)")
    assert message(halo.ScheduleError, lambda: g.cache_read("global", readers=f)) == (
        "g.cache_read('global', readers=Func('f')): readers must be a non-empty list of "
        "Funcs that read g (or None for all of them)")
    assert message(halo.ScheduleError, lambda: g.cache_read("global", readers=[inp])) == (
        "g.cache_read('global', readers=[inp]): readers must be Funcs, not "
        "ImageParam(float32, 2, 'inp')")


def test_cache_read_of_itself():
    """A Func's updates can't read its own cache."""
    f = halo.Func("acc")
    f[x] = 0
    f[x] = f[x] + 1
    assert message(halo.ScheduleError, lambda: f.cache_read("global", readers=[f])) == (
        "acc.cache_read('global', readers=[acc]): acc can't read its own cache; its updates "
        "keep reading it. Use cache_write to compute it elsewhere")


def test_cache_read_bad_scope():
    """The scope is one of four names."""
    inp, g, f = two_stage()
    assert message(halo.ScheduleError, lambda: inp.cache_read("registers")) == (
        "inp.cache_read('registers'): the scope must be one of 'global', 'stack', 'shared', "
        "'local'")


def test_cache_read_of_an_undefined_func():
    """Caching a Func before it is defined."""
    h = halo.Func("undefined_h")
    assert message(halo.ScheduleError, lambda: h.cache_read("global")) == (
        "undefined_h.cache_read('global', readers=None): define undefined_h before caching it")


# ------------------------------------------------------------------------ cache_write


def test_cache_write_after_scheduling():
    """cache_write must come before the Func's loops are scheduled."""
    inp, g, f = two_stage()
    f.split(x, xo, xi, 4)
    assert message(halo.ScheduleError, lambda: f.cache_write("local")) == (
        "f.cache_write('local'): f already has a loop schedule, which would not carry over "
        "to the new Func; call cache_write first, then schedule the Func it returns")


def test_cache_write_after_scheduling_an_update():
    """... also when only an update stage is scheduled."""
    s = halo.Func("s")
    s[x] = 0
    s[x] += x
    s.update(0).vectorize(x, 4)
    assert message(halo.ScheduleError, lambda: s.cache_write("global")) == (
        "s.cache_write('global'): s.update(0) already has a loop schedule, which would not "
        "carry over to the new Func; call cache_write first, then schedule the Func it "
        "returns")


# --------------------------------------------------------------------------- store_in


def test_store_in_an_inlined_func():
    """An inlined Func has no storage."""
    inp, g, f = two_stage()
    g.store_in("local")
    assert message(halo.ScheduleError, f.lower) == (
        "g.store_in('local'): g is computed inline, so it has no storage; add "
        "g.compute_root() or g.compute_at(...)")


def test_store_in_an_output():
    """An output lives in the array realize() is given."""
    inp, g, f = two_stage()
    f.store_in("stack")
    assert message(halo.ScheduleError, f.lower) == (
        "f.store_in('stack'): f is an output of the pipeline, so it is stored in the array "
        "passed to realize(); store_in applies to the Funcs it reads")


def test_store_in_unknown_scope():
    inp, g, f = two_stage()
    assert message(halo.ScheduleError, lambda: g.store_in("texture")) == (
        "g.store_in('texture'): the scope must be one of 'global', 'stack', 'shared', "
        "'local'")


# ------------------------------------------------------------------------- specialize


def test_specialize_on_a_loop_variable():
    """Conditions are known before the pipeline runs: no pure Vars."""
    inp, g, f = two_stage()
    assert message(halo.ScheduleError, lambda: f.specialize(x > 3)) == (
        "f.specialize(3 < x): the condition uses the loop or reduction variable(s) x; it may "
        "only use Params and input extents (inp.shape[i]), which are known before the "
        "pipeline runs")


def test_specialize_on_data():
    """Conditions can't read Funcs or inputs."""
    inp, g, f = two_stage()
    assert message(halo.ScheduleError, lambda: f.specialize(inp[0, 0] > 0.5)) == (
        "f.specialize(0.5 < inp[0, 0]): the condition reads inp; it may only use Params and "
        "input extents (inp.shape[i]), which are known before the pipeline runs")


def test_specialize_on_a_non_boolean():
    inp, g, f = two_stage()
    assert message(halo.ScheduleError, lambda: f.specialize(inp.shape[0] + 1)) == (
        "f.specialize(inp.shape[0] + 1): the condition has type int32; it must be a "
        "boolean, e.g. a comparison")
    assert message(halo.ScheduleError, lambda: f.specialize(True)) == (
        "f.specialize(True): the condition must be a halo boolean Expr over Params and input "
        "extents, e.g. inp.shape[1] % 8 == 0")


def test_specialize_a_specialization():
    inp, g, f = two_stage()
    s = f.specialize(inp.shape[0] > 2)
    assert message(halo.ScheduleError, lambda: s.specialize(inp.shape[1] > 2)) == (
        "f.specialize(2 < inp.shape[0]).specialize(...): a specialization can't be "
        "specialized again; combine the conditions with & in one specialize call on the "
        "stage")


def test_specialization_errors_name_the_branch():
    """A loop call on a specialization names it and lists its loops."""
    inp, g, f = two_stage()
    s = f.specialize(inp.shape[0] > 2)
    assert message(halo.ScheduleError, lambda: s.split(xo, yo, yi, 2)) == (
        "f.specialize(2 < inp.shape[0]).split(xo, yo, yi, 2): there is no loop named 'xo'. "
        "The loops of f.specialize(2 < inp.shape[0]) are, outermost first: y, x")


def test_compute_at_a_loop_only_some_branches_have():
    """A producer must be placed at a loop that every specialization has."""
    inp, g, f = two_stage()
    f.specialize(inp.shape[0] > 2).split(y, yo, yi, 2)
    g.compute_at(f, yo)
    assert message(halo.ScheduleError, f.lower) == (
        "g.compute_at(f, yo): f is specialized, and not all of its schedules have loop 'yo' "
        "(from the same splits); g must be placed at a loop every branch has, or at root. "
        "The loops all of them share are: x")


def test_specialized_inline_func():
    """An inlined Func has no loops to specialize."""
    inp, g, f = two_stage()
    g.specialize(inp.shape[0] > 2)
    assert message(halo.ScheduleError, f.lower) == (
        "g has a loop schedule (split/reorder/vectorize/...), but it is computed inline (the "
        "default for a pure Func that is not an output), so it has no loops of its own; add "
        "g.compute_root() or g.compute_at(consumer, var)")


# ------------------------------------------------------------------- GPU bindings


def test_gpu_blocks_out_of_order():
    inp, g, f = two_stage()
    assert message(halo.ScheduleError, lambda: f.gpu_blocks(x, y)) == (
        "f.gpu_blocks(x, y): list the loops outermost first, in the order the loop nest has "
        "them. The loops of f are, outermost first: y, x")


def test_gpu_blocks_not_adjacent():
    inp, g, f = two_stage()
    f.split(y, yo, yi, 4)
    assert message(halo.ScheduleError, lambda: f.gpu_blocks(yo, x)) == (
        "f.gpu_blocks(yo, x): the loops bound to GPU blocks (yo, x) must be adjacent, but yi "
        "sits between them. The loops of f are, outermost first: yo, yi, x")


def test_gpu_too_many_loops():
    inp, g, f = two_stage()
    f.split(y, yo, yi, 4).split(x, xo, xi, 4)
    assert message(halo.ScheduleError, lambda: f.gpu_threads(yo, yi, xo, xi)) == (
        "f.gpu_threads(yo, yi, xo, xi): give 1 to 3 loops, outermost first. The loops of f "
        "are, outermost first: yo, yi, xo, xi")


def test_gpu_threads_outside_blocks():
    inp, g, f = two_stage()
    f.gpu_blocks(x)
    assert message(halo.ScheduleError, lambda: f.gpu_threads(y)) == (
        "f.gpu_threads(y): thread loop y is outside block loop x; block loops must enclose "
        "thread loops. The loops of f are, outermost first: y, x")


def test_vthread_inside_threads():
    inp, g, f = two_stage()
    f.split(x, xo, xi, 4).gpu_blocks(y).gpu_threads(xo)
    assert message(halo.ScheduleError, lambda: f.vthread(xi)) == (
        "f.vthread(xi): vthread loop xi is inside thread loop xo; vthreads go outside the "
        "thread loops. The loops of f are, outermost first: y, xo, xi")


def test_gpu_bound_reduction_loop():
    inp = halo.ImageParam(halo.float32, 1, "inp")
    r = halo.RDom((0, 8), name="r")
    s = halo.Func("s")
    s[x] = 0.0
    s[x] = s[x] * 0.5 + inp[x + r]  # (an associative update may: a warp reduction)
    assert message(halo.ScheduleError, lambda: s.update(0).gpu_threads(r.x)) == (
        "s.update(0).gpu_threads(r.x): r.x is a reduction loop bound to GPU threads; only "
        "pure loops can be bound, unless the update is an associative reduction (f = f + e, "
        "f * e, min, max, &, |, ^: bound to threads, it is a warp reduction). Use rfactor to "
        "make the reduction parallel, or call atomic() on the update first. The loops of "
        "s.update(0) are, outermost first: x, r.x")


def test_gpu_loop_twice_bound():
    inp, g, f = two_stage()
    f.gpu_blocks(y)
    assert message(halo.ScheduleError, lambda: f.gpu_threads(y)) == (
        "f.gpu_threads(y): loop y is already gpu_block; a loop can have one kind. The loops "
        "of f are, outermost first: y, x")


def test_gpu_tile_arguments():
    inp, g, f = two_stage()
    assert message(halo.ScheduleError, lambda: f.gpu_tile(y, x, by, bx, 8)) == (
        "f.gpu_tile(y, x, by, bx, 8): give (y, x, by, bx, ty, tx, sy, sx) or (x, bx, tx, "
        "size). The loops of f are, outermost first: y, x")


def test_reorder_after_binding_is_caught_at_lowering():
    """A reorder after binding can break the nesting; lowering says how."""
    inp, g, f = two_stage()
    f.gpu_tile(y, x, by, bx, ty, tx, 8, 8)
    f.reorder(ty, by)
    assert message(halo.ScheduleError, f.lower) == (
        "f: the loops bound to GPU threads (ty, tx) must be adjacent, but bx, by sit between "
        "them. The loops of f are, outermost first: ty, bx, by, tx")


def test_gpu_loops_on_the_host():
    """GPU bindings are records until a GPU target lowers them."""
    inp, g, f = two_stage()
    f.gpu_tile(y, x, by, bx, ty, tx, 8, 8)
    assert message(halo.ScheduleError, f.lower) == (
        "f binds loops to the GPU (by (gpu_block), bx (gpu_block), ty (gpu_thread), tx "
        "(gpu_thread)), which needs target 'cuda'; this pipeline is being lowered for "
        "'host'. Lower it for cuda, or remove the gpu_blocks/gpu_threads/gpu_tile/vthread "
        "calls")
    with pytest.raises(halo.ScheduleError):
        f.realize((4, 4), inputs={inp: np.zeros((4, 4), np.float32)})


# ------------------------------------------------------------------------- tensorize


def _dot4():
    i, r_ = halo.Var("i"), halo.RDom((0, 4), name="r_dot")
    a = halo.ImageParam(halo.float32, 2, "dot_a")
    spec = halo.Func("dot_spec")
    spec[i] = 0.0
    spec[i] += a[i, r_]
    spec.bound(i, 0, 4)
    return halo.Intrinsic("dot4", spec, emit=lambda *args: None)


def test_intrinsic_spec_needs_constant_shape():
    i = halo.Var("i")
    spec = halo.Func("free_spec")
    spec[i] = halo.cast(halo.float32, i)
    assert message(halo.DefinitionError, lambda: halo.Intrinsic("free", spec, print)) == (
        "Intrinsic free: dimension i of spec free_spec has no constant size; give it one "
        "with free_spec.bound(i, 0, extent)")


def test_tensorize_loop_nest_of_the_wrong_depth():
    """A pure stage stands for the spec's initialization, whose loops are its pure Vars."""
    intrinsic = _dot4()
    inp, g, f = two_stage()
    assert message(halo.ScheduleError, lambda: f.tensorize(y, intrinsic)) == (
        "f.tensorize(y, dot4): dot4's initialization computes a 1-deep loop nest (i), but the "
        "loops from y inward are 2 (y, x). The loops of f are, outermost first: y, x")


def test_tensorize_an_update_with_a_nest_of_the_wrong_depth():
    intrinsic = _dot4()
    r = halo.RDom((0, 4), name="r")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = 0.0
    f[y, x] += inp[y, x + r]
    assert message(halo.ScheduleError, lambda: f.update(0).tensorize(r.x, intrinsic)) == (
        "f.update(0).tensorize(r.x, dot4): dot4 computes a 2-deep loop nest (i, r_dot.x), but "
        "the loops from r.x inward are 1 (r.x). The loops of f.update(0) are, outermost "
        "first: y, x, r.x")


def test_func_level_call_on_a_specialization():
    """Placement belongs to the Func, not to one branch of its schedule."""
    inp, g, f = two_stage()
    s = g.specialize(inp.shape[0] > 2)
    assert message(halo.ScheduleError, lambda: s.compute_at(f, y)) == (
        "g.specialize(2 < inp.shape[0]).compute_at(...): a specialization schedules the loops "
        "of one stage; compute_at applies to the whole Func: call g.compute_at(...)")


def test_stage_handle_after_cache_write():
    """An update Stage taken before cache_write no longer exists on the copy-out."""
    s = halo.Func("acc")
    s[x] = 0
    s[x] += x
    stage = s.update(0)
    s.cache_write("global")
    assert message(halo.DefinitionError, lambda: stage.split(x, xo, xi, 2)) == (
        "acc.update(0): acc has 0 update definition(s) now (cache_write moved them to "
        "acc_global; schedule acc_global.update(0))")
