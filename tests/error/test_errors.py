"""User mistakes raise a HaloError whose message names the Func and the call and says
what would be legal."""
from __future__ import annotations

import numpy as np
import pytest

import halo

y, x, yo, xo, yi, xi, z, t = halo.vars("y x yo xo yi xi z t")


def two_stage():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2.0
    f[y, x] = g[y, x] + 1.0
    return inp, g, f


def raises(exc, *fragments):
    """Context manager: the block raises `exc` whose message contains every fragment."""
    class _Check:
        def __enter__(self):
            self.ctx = pytest.raises(exc)
            self.info = self.ctx.__enter__()

        def __exit__(self, *a):
            handled = self.ctx.__exit__(*a)
            message = str(self.info.value)
            for frag in fragments:
                assert frag in message, f"{frag!r} not in: {message}"
            return handled
    return _Check()


def test_split_unknown_loop():
    """Splitting a loop that doesn't exist lists the loops that do."""
    _, _, f = two_stage()
    with raises(halo.ScheduleError, "f.split(z, zo, zi, 4)", "no loop named 'z'", "y, x"):
        f.split(z, *halo.vars("zo zi"), 4)


def test_split_reuses_a_name():
    """A new loop name may not be a loop the stage has now (other than the one split)."""
    _, _, f = two_stage()
    with raises(halo.ScheduleError, "f.split(x, xo, y, 4)", "'y' is already a loop of "
                "this stage"):
        f.split(x, xo, y, 4)
    f.split(x, xo, x, 4).fuse(xo, x, xo)  # names the split consumed come back, as Halide's
    with raises(halo.ScheduleError, "f.split(xo, xo, y, 2)", "'y' is already a loop"):
        f.split(xo, xo, y, 2)


def test_split_bad_factor_and_tail():
    """The factor must be a positive int and the tail a known strategy."""
    _, _, f = two_stage()
    with raises(halo.ScheduleError, "factor must be a positive int"):
        f.split(x, xo, xi, 0)
    with raises(halo.ScheduleError, "tail='sideways' is not one of"):
        f.split(x, xo, xi, 4, tail="sideways")


def test_fuse_non_adjacent():
    """Fusing loops that aren't adjacent says which must be immediately outside."""
    _, _, f = two_stage()
    f.split(x, xo, xi, 4)
    with raises(halo.ScheduleError, "f.fuse(y, xi, t)", "'y' must be the loop immediately "
                "outside 'xi'"):
        f.fuse(y, xi, t)


def test_reorder_twice_listed():
    """A loop listed twice in reorder is rejected."""
    _, _, f = two_stage()
    with raises(halo.ScheduleError, "f.reorder(x, x)", "listed twice"):
        f.reorder(x, x)


def test_compute_at_loop_that_does_not_exist():
    """compute_at a missing loop of the consumer lists the consumer's loops."""
    inp, g, f = two_stage()
    g.compute_at(f, z)
    with raises(halo.ScheduleError, "g.compute_at(f, z)", "f has no loop named 'z'", "y, x"):
        f.realize((4, 4), inputs={inp: np.zeros((4, 4), np.float32)})


def test_compute_at_a_func_that_is_not_a_consumer():
    """compute_at inside a Func that doesn't read the producer lists the legal levels."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g, h, f = halo.Func("g"), halo.Func("h"), halo.Func("f")
    g[x] = inp[x] + 1.0
    h[x] = inp[x] * 2.0
    f[x] = g[x] + h[x]
    h.compute_root()
    g.compute_at(h, x)
    with raises(halo.ScheduleError, "g.compute_at(h, x)", "does not enclose every use of g",
                "used by f", "Legal levels, outermost first: root; f loop x"):
        f.realize((4,), inputs={inp: np.zeros(4, np.float32)})


def test_compute_at_own_loops():
    """A Func can't be placed in its own loops."""
    _, g, _ = two_stage()
    with raises(halo.ScheduleError, "g.compute_at(g, x)", "can't be placed inside its own"):
        g.compute_at(g, x)


def test_compute_at_on_output():
    """An output is always at root."""
    inp, g, f = two_stage()
    f.compute_at(g, x)
    with raises(halo.ScheduleError, "f.compute_at(...)", "is an output of the pipeline"):
        f.realize((2, 2), inputs={inp: np.zeros((2, 2), np.float32)})


def test_store_at_inside_compute_at():
    """Storage must be at or outside the compute level."""
    inp, g, f = two_stage()
    g.compute_at(f, y).store_at(f, x)
    with raises(halo.ScheduleError, "g.store_at(f loop x) is inside g.compute_at(f loop y)"):
        f.realize((2, 2), inputs={inp: np.zeros((2, 2), np.float32)})


def test_schedule_on_inlined_func():
    """Loop scheduling of a Func that is inlined says how to give it loops."""
    inp, g, f = two_stage()
    g.split(x, xo, xi, 2)
    with raises(halo.ScheduleError, "g has a loop schedule", "computed inline",
                "g.compute_root()"):
        f.realize((2, 2), inputs={inp: np.zeros((2, 2), np.float32)})


def test_vectorize_non_constant_extent():
    """vectorize needs a constant extent and suggests a split or a bound, naming the call;
    the traceback ends at the user's call (it was 19-38 frames inside IR visitors)."""
    inp, g, f = two_stage()
    f.vectorize(x)
    with raises(halo.ScheduleError, "f.vectorize(x): loop x of f has extent", "not a constant",
                "f.vectorize(x, 8) splits it by 8 first", "f.bound(x, 0, 640)"):
        f.realize((2, 2), inputs={inp: np.zeros((2, 2), np.float32)})
    with pytest.raises(halo.ScheduleError) as info:
        f.realize((2, 2), inputs={inp: np.zeros((2, 2), np.float32)})
    frames = [str(entry.path) for entry in info.traceback]
    assert len(frames) <= 4 and frames[0] == __file__, frames


def test_unroll_non_constant_extent():
    """unroll needs a constant extent; an update's loop is named by its stage."""
    inp, g, f = two_stage()
    f.unroll(y)
    with raises(halo.ScheduleError, "f.unroll(y): loop y of f has extent", "not a constant"):
        f.realize((2, 2), inputs={inp: np.zeros((2, 2), np.float32)})
    h = halo.Func("h")
    h[x] = x
    r = halo.RDom((0, inp.shape[0]), name="r")
    h[x] += r.x
    h.update(0).unroll(r.x)
    with raises(halo.ScheduleError, "h.update(0).unroll(r.x): loop r.x of h.update(0) has "
                "extent", "h.update(0).unroll(r.x, 8)"):
        h.realize((2,), inputs={inp: np.zeros((2, 2), np.float32)})


def test_parallel_rvar_race():
    """Running reduction iterations in parallel is refused with the reason."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    r = halo.RDom((0, 8), name="r")
    f = halo.Func("f")
    f[x] = 0.0
    f[x] += inp[x + r]
    with raises(halo.ScheduleError, "f.update(0).parallel(r.x)", "reduction loop", "race"):
        f.update(0).parallel(r.x)


def test_shift_inwards_on_update():
    """shift_inwards would compute update points twice."""
    r = halo.RDom((0, 8), name="r")
    f = halo.Func("f")
    f[x] = 0
    f[x] += x + r
    with raises(halo.ScheduleError, "f.update(0).split(x, xo, xi, 4)", "tail='guard'"):
        f.update(0).split(x, xo, xi, 4, tail="shift_inwards")


def test_wrong_number_of_indices():
    """Calling a Func or input with the wrong number of indices."""
    inp, g, f = two_stage()
    with raises(halo.DefinitionError, "g has 2 dimension(s) but was indexed with 1: g[x]"):
        h = halo.Func("h")
        h[x] = g[x]
    with raises(halo.DefinitionError, "inp has 2 dimension(s) but was indexed with 3"):
        inp[x, y, z]


def test_shift_operators_say_what_to_write_instead():
    """halo has no << or >>; the error names the expression and the arithmetic that
    compiles to the shift, rather than Python's bare TypeError."""
    inp, g, f = two_stage()
    with raises(halo.DefinitionError, "g[x, y] >> 4: halo has no shift operators; for x >> k "
                "write x // 2**k"):
        g[x, y] >> 4
    with raises(halo.DefinitionError, "1 << x: halo has no shift operators; for x << k "
                "write x * 2**k"):
        1 << x


def test_update_type_mismatch():
    """An update of another type than the pure definition is refused."""
    f = halo.Func("f")
    f[x] = 0
    with raises(halo.DefinitionError, "the update has type float32 but f has type int32"):
        f[x] = f[x] * 1.5


def test_undefined_func_used():
    """Reading a Func that has no definition."""
    g, f = halo.Func("g"), halo.Func("f")
    with raises(halo.DefinitionError, "Func g is used before it has a definition"):
        f[x] = g[x] + 1


def test_free_var_not_on_left_side():
    """The right side of a pure definition may only use the left side's Vars."""
    f = halo.Func("f")
    with raises(halo.DefinitionError, "uses Var(s) y that are not on the left side"):
        f[x] = x + y


def test_pure_definition_with_rvar():
    """A pure definition can't reduce; the message points to updates and halo.sum."""
    r = halo.RDom((0, 3), name="r")
    f = halo.Func("f")
    with raises(halo.DefinitionError, "can't use the reduction variables of r",
                "halo.sum"):
        f[x] = x + r


def test_pure_var_misplaced_in_update():
    """A pure Var must index its own dimension in an update."""
    f = halo.Func("f")
    f[y, x] = 0
    with raises(halo.DefinitionError, "pure Var(s) x, y are used on the left side without "
                "indexing their own dimension", "f[x, x] = ..."):
        f[x, y] = f[y, x] + 1


def test_expr_used_as_bool():
    """Python control flow on an Expr explains the alternatives."""
    with raises(TypeError, "use `&` / `|` / `~`", "halo.select"):
        if x < 3:
            pass


def test_param_not_bound():
    """A Param without a default must be given."""
    p = halo.Param(halo.int32, "p")
    f = halo.Func("f")
    f[x] = x + p
    with raises(halo.InputError, "Param p (int32) is not bound"):
        f.realize((3,))


def test_missing_input_and_wrong_dtype_and_ndim():
    """Inputs are checked for presence, dtype and rank before running."""
    inp, g, f = two_stage()
    with raises(halo.InputError, "ImageParam inp (float32, 2-D) is not bound"):
        f.realize((2, 2))
    with raises(halo.InputError, "input inp has dtype float64 but the pipeline expects "
                "float32"):
        f.realize((2, 2), inputs={inp: np.zeros((2, 2))})
    with raises(halo.InputError, "input inp has 1 dimension(s)"):
        f.realize((2, 2), inputs={inp: np.zeros(2, np.float32)})


def test_input_too_small():
    """Reading past the end of an input names the input, dimension and ranges."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = inp[y, x + 1]
    with raises(halo.BoundsError, "input inp is accessed at [1, 5] in dimension 1",
                "only [0, 4] exists"):
        f.realize((3, 5), inputs={inp: np.zeros((3, 5), np.float32)})
    with raises(halo.BoundsError, "input inp is accessed at [0, 2] in dimension 0"):
        f.realize((3, 4), inputs={inp: np.zeros((2, 5), np.float32)})


def test_unbounded_gather():
    """A data-dependent index into an input that isn't clamped can't be bounded."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    idx = halo.ImageParam(halo.int32, 1, "idx")
    f = halo.Func("f")
    f[x] = inp[idx[x]]
    with raises(halo.BoundsError, "can't bound where input inp is read in dimension 0",
                "Clamp it"):
        f.realize((3,), inputs={inp: np.zeros(3, np.float32), idx: np.zeros(3, np.int32)})


def test_scatter_outside_output():
    """An update writing outside the output region is caught before running."""
    inp = halo.ImageParam(halo.uint8, 1, "inp")
    r = halo.RDom(inp, name="r")
    hist = halo.Func("hist")
    hist[x] = 0
    hist[halo.cast(halo.int32, inp[r])] += 1
    with raises(halo.BoundsError, "output hist is written at [0, 255] in dimension 0"):
        hist.realize((16,), inputs={inp: np.zeros(4, np.uint8)})


def test_loop_names_reserved_for_bounds():
    """min, max and extent name loop bounds in the IR, so loops can't be called that."""
    _, _, f = two_stage()
    with raises(halo.ScheduleError, "f.split(x, xo, extent, 4)", "'extent' is reserved"):
        f.split(x, xo, halo.Var("extent"), 4)


def test_bound_that_does_not_cover_what_is_read():
    """bound() narrower than what consumers read fails before running, with both ranges."""
    inp, g, f = two_stage()
    g.compute_root().bound(x, 0, 4)
    with raises(halo.BoundsError, "g.bound(...) fixes dimension 1 to [0, 3]",
                "but [0, 5] of it is used"):
        f.realize((2, 6), inputs={inp: np.zeros((2, 6), np.float32)})


def test_bound_of_a_dimension_the_func_does_not_have():
    """bound() names one of the Func's own dimensions."""
    _, g, _ = two_stage()
    with raises(halo.ScheduleError, "g.bound(z, ...)", "its dimensions are y, x"):
        g.bound(z, 0, 4)


def test_store_in_unknown_scope():
    """store_in lists the scopes that exist."""
    _, g, _ = two_stage()
    with raises(halo.ScheduleError, "g.store_in('registers')", "'global', 'stack'"):
        g.store_in("registers")


def test_compute_inline_of_a_func_with_updates():
    """A Func with update definitions has no single expression to substitute."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    r = halo.RDom((0, 3), name="r")
    g, f = halo.Func("g"), halo.Func("f")
    g[x] = 0.0
    g[x] += inp[x + r]
    f[x] = g[x]
    g.compute_inline()
    with raises(halo.ScheduleError, "g.compute_inline()", "has update definitions",
                "use compute_root() or compute_at(...)"):
        f.lower()


def test_set_estimates_needs_pairs():
    """Estimates are (min, extent) pairs, one per dimension."""
    _, _, f = two_stage()
    with raises(halo.ScheduleError, "f.set_estimates(...)", "one (min, extent) pair"):
        f.set_estimates([(0, 10, 3), (0, 5)])


@pytest.mark.parametrize(("call", "shown"), [
    (lambda f, x: f.vectorize(halo.Var("z"), 8), "f.vectorize(z, 8): there is no loop named 'z'"),
    (lambda f, x: f.unroll(x, 0), "f.unroll(x, 0): the factor must be a positive int"),
    (lambda f, x: f.parallel(halo.Var("w"), 4), "f.parallel(w, 4): there is no loop named 'w'"),
])
def test_a_verb_that_splits_names_the_call_the_user_made(call, shown):
    """vectorize/unroll/parallel with a factor split first; their errors name the user's
    call, not the split it makes."""
    x = halo.Var("x")
    f = halo.Func("f")
    f[x] = x
    with pytest.raises(halo.ScheduleError) as error:
        call(f, x)
    assert str(error.value).startswith(shown), str(error.value)


def test_compute_at_a_loop_of_an_update_names_the_stage():
    """A loop of an update stage, named at the Func, said only "f has no loop named
    'r.x'; its loops are: x" (Halide's users name the Func): say which stage has it."""
    f, g = halo.Func("f"), halo.Func("g")
    f[x] = x
    r = halo.RDom((0, 4), name="r2")
    f[r.x] += 1
    g[x] = x * 2
    f[r.x] += g[r.x]
    g.compute_at(f, r.x)
    with raises(halo.ScheduleError, "g.compute_at(f, r2.x): f has no loop named 'r2.x'",
                "loop 'r2.x' is in f.update(1): write g.compute_at(f.update(1), r2.x)"):
        f.realize((4,))
    g.compute_at(f.update(1), r.x)
    assert f.realize((4,)).tolist() == [1, 4, 7, 10]
