"""Func definitions: pure and update definitions, `+=`/`-=`/`*=` on defined and undefined
Funcs, scatter updates, 0-d Funcs, and the errors for misused pure Vars."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.ir import nodes as n

y, x = halo.vars("y x")


def test_pure_definition_records_args_type_and_dimensions():
    """f[y, x] = ... gives f.args (y, x), outermost first, and the value's type."""
    f = halo.Func("f")
    f[y, x] = (y * 10 + x).astype(halo.int16)
    assert [v.name for v in f.args] == ["y", "x"]
    assert (f.dimensions, f.type, f.defined) == (2, halo.int16, True)
    np.testing.assert_array_equal(f.realize((2, 3)), [[0, 1, 2], [10, 11, 12]])


@pytest.mark.parametrize("op,expected", [
    ("+=", [10, 11, 12, 13]), ("-=", [-10, -9, -8, -7]), ("*=", [0, 10, 20, 30])])
def test_augmented_update_of_a_defined_func(op, expected):
    """f[x] = x, then f[x] op 10."""
    f = halo.Func("f")
    f[x] = x
    if op == "+=":
        f[x] += 10
    elif op == "-=":
        f[x] -= 10
    else:
        f[x] *= 10
    assert len(f.definitions) == 2
    np.testing.assert_array_equal(f.realize((4,)), expected)


@pytest.mark.parametrize("op,identity,expected", [
    ("+=", 0, [0, 2, 4, 6]), ("-=", 0, [0, -2, -4, -6]), ("*=", 1, [0, 2, 4, 6])])
def test_augmented_update_of_an_undefined_func_starts_from_the_identity(op, identity,
                                                                         expected):
    """f[x] op x * 2 on an undefined f first defines f[x] = identity (0, or 1 for *=)."""
    f = halo.Func("f")
    if op == "+=":
        f[x] += x * 2
    elif op == "-=":
        f[x] -= x * 2
    else:
        f[x] *= x * 2
    pure = f.definitions[0]
    assert pure.value == n.const(identity) and [v.name for v in f.args] == ["x"]
    np.testing.assert_array_equal(f.realize((4,)), expected)


def test_identity_of_an_undefined_func_has_the_type_of_the_update():
    """f[x] += 0.5 makes f float32, g[x] += u8 makes g uint8."""
    f, g = halo.Func("f"), halo.Func("g")
    f[x] += 0.5
    g[x] += halo.cast(halo.uint8, x)
    assert (f.type, g.type) == (halo.float32, halo.uint8)


def test_explicit_update_form():
    """f[x] = f[x] * 2 + 1 after f[x] = x is an update: 2x + 1."""
    f = halo.Func("f")
    f[x] = x
    f[x] = f[x] * 2 + 1
    np.testing.assert_array_equal(f.realize((4,)), [1, 3, 5, 7])


def test_updates_apply_in_order():
    """f[x] = x; f[x] *= 2; f[x] += 1 gives 2x + 1, not 2(x + 1)."""
    f = halo.Func("f")
    f[x] = x
    f[x] *= 2
    f[x] += 1
    np.testing.assert_array_equal(f.realize((3,)), [1, 3, 5])


def test_scatter_update_is_a_histogram():
    """hist[clamp(v // 32, 0, 7)] += 1 over every input element matches np.bincount."""
    inp = halo.ImageParam(halo.uint8, 1, "inp")
    r = halo.RDom(inp)
    hist = halo.Func("hist")
    hist[x] = 0
    hist[halo.clamp(halo.cast(halo.int32, inp[r.x]) // 32, 0, 7)] += 1
    data = np.random.default_rng(3).integers(0, 256, 100).astype(np.uint8)
    got = hist.realize((8,), inputs={inp: data})
    np.testing.assert_array_equal(got, np.bincount(data // 32, minlength=8))


def test_scatter_update_of_an_undefined_func_gets_fresh_pure_args():
    """h[r.x % 3] += 1 on an undefined h: h is zero-initialized over a fresh Var."""
    r = halo.RDom((0, 10))
    h = halo.Func("h")
    h[r.x % 3] += 1
    assert [v.name for v in h.args] == ["h_d0"]
    np.testing.assert_array_equal(h.realize((3,)), [4, 3, 3])


def test_zero_dimensional_func():
    """f[()] = 42 is a 0-d Func with no args; it realizes to a 0-d array."""
    f = halo.Func("f")
    f[()] = 42
    got = f.realize(())
    assert f.args == () and got.shape == () and int(got) == 42


def test_zero_dimensional_reduction():
    """s[()] += r.x sums the domain."""
    r = halo.RDom((0, 5))
    s = halo.Func("s")
    s[()] += r.x
    assert int(s.realize(())) == 10


def test_update_returns_the_stage_and_rejects_out_of_range_indices():
    """f.update(0) is the first update's Stage; update(1) and update(-1) are errors."""
    f = halo.Func("f")
    f[x] = x
    f[x] += 1
    assert repr(f.update(0)) == "Stage(f.update(0))"
    for i in (1, -1):
        with pytest.raises(halo.DefinitionError, match=f"f.update\\({i}\\): f has 1 update"):
            f.update(i)


def test_update_of_a_pure_func_is_an_error():
    """A Func with only a pure definition has no update(0)."""
    f = halo.Func("f")
    f[x] = x
    with pytest.raises(halo.DefinitionError, match="has 0 update definition"):
        f.update()


def _repeated_var():
    f = halo.Func()
    f[x, x] = 1


def _expression_on_pure_left_side():
    f = halo.Func()
    f[x + 1] = 1


def _free_var_on_right_side():
    f = halo.Func()
    f[x] = y


def _pure_var_in_another_dimension():
    f = halo.Func()
    f[y, x] = 1
    f[x, y] = 2


def _pure_var_inside_an_index_expression():
    f = halo.Func()
    f[x] = x
    f[x % 2] = 3


def _update_reads_a_shifted_pure_var():
    f = halo.Func()
    f[x] = x
    f[x] = f[x + 1]


def _rdom_in_pure_definition():
    r = halo.RDom((0, 3))
    f = halo.Func()
    f[x] = r.x


def _self_reference_before_definition():
    f = halo.Func()
    f[x] = f[x]


@pytest.mark.parametrize("define,message", [
    (_repeated_var, "each Var may appear once"),
    (_expression_on_pure_left_side, "must be pure, indexed by distinct Vars"),
    (_free_var_on_right_side, "uses Var\\(s\\) y that are not on the left side"),
    (_pure_var_in_another_dimension, "x, y are used on the left side without indexing "
                                     "their own dimension"),
    (_pure_var_inside_an_index_expression, "without indexing their own dimension"),
    (_update_reads_a_shifted_pure_var, "must appear unchanged in dimension 0"),
    (_rdom_in_pure_definition, "can't use the reduction variables"),
    (_self_reference_before_definition, "in terms of itself"),
], ids=lambda v: v.__name__.strip("_") if callable(v) else "")
def test_pure_var_misuse_is_a_definition_error(define, message):
    """Each misuse of pure Vars raises DefinitionError naming the problem."""
    with pytest.raises(halo.DefinitionError, match=message):
        define()


def test_update_with_a_different_type_is_an_error():
    """f is int32; f[x] = 1.5 and f[x] += 1.5 are refused with a cast hint."""
    f = halo.Func("f")
    f[x] = x
    with pytest.raises(halo.DefinitionError, match="the update has type float32"):
        f[x] = 1.5
    with pytest.raises(halo.DefinitionError, match=r"astype\(int32\)"):
        f[x] += 1.5


def test_update_with_the_wrong_number_of_indices_is_an_error():
    """A 1-D Func updated at two indices is refused."""
    f = halo.Func("f")
    f[x] = x
    with pytest.raises(halo.DefinitionError, match="f has 1 dimension"):
        f[x, y] = 1


def test_call_with_the_wrong_number_of_indices_is_an_error():
    """Reading a 1-D Func at two indices is refused."""
    f = halo.Func("f")
    f[x] = x
    with pytest.raises(halo.DefinitionError, match="f has 1 dimension"):
        _ = f[x, y]


def test_use_before_definition_is_an_error():
    """f[x] + 1 on an undefined f says f has no definition yet."""
    f = halo.Func("f")
    with pytest.raises(halo.DefinitionError, match="used before it has a definition"):
        _ = f[x] + 1


def test_float_index_is_an_error():
    """Indices must be integers."""
    f = halo.Func("f")
    with pytest.raises(halo.DefinitionError, match="indices must be integers"):
        f[x * 0.5] = 1


def test_invalid_name_is_an_error():
    """Func names must be identifiers."""
    with pytest.raises(halo.DefinitionError, match="not a valid halo name"):
        halo.Func("1st")


def test_a_func_used_by_another_takes_no_more_definitions():
    """A second definition after g read f silently changed what g reads (Halide refuses
    it); before any use, a second f[x] = ... is an update, as in Halide."""
    f, g = halo.Func("f"), halo.Func("g")
    f[x] = x
    f[x] = x + 1  # before any use: an update over every point
    g[x] = f[x] * 2
    with pytest.raises(halo.DefinitionError, match=r"f\[x\] = \.\.\.: f is already used by "
                       r"g, which would read this definition too; give f all its "
                       r"definitions before using it"):
        f[x] = x + 5
    with pytest.raises(halo.DefinitionError, match="f is already used by g"):
        f[x] += 1
    assert g.realize((3,)).tolist() == [2, 4, 6]
