"""Environment: the Funcs, inputs and Params a pipeline reaches, in realization order,
with unique names; and the inputs' symbolic shapes."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo.lang.environment import Environment

y, x = halo.vars("y x")


def test_funcs_are_in_realization_order_producers_first():
    """a -> b -> c with c also reading a: a, b, c; consumers are listed per Func."""
    a, b, c = halo.Func("a"), halo.Func("b"), halo.Func("c")
    a[x] = x
    b[x] = a[x] + 1
    c[x] = b[x] + a[x]
    env = Environment.of([c])
    assert list(env.funcs) == ["a", "b", "c"]
    assert env.consumers("a") == ["b", "c"] and env.consumers("c") == []


def test_an_output_read_by_another_output_comes_first():
    """Environment.of([g, f]) with g reading f still lists f before g."""
    f, g = halo.Func("f"), halo.Func("g")
    f[x] = x * 2
    g[x] = f[x] + 1
    assert list(Environment.of([g, f]).funcs) == ["f", "g"]
    got_g, got_f = halo.Pipeline([g, f]).realize((4,))
    np.testing.assert_array_equal(got_g, [1, 3, 5, 7])
    np.testing.assert_array_equal(got_f, [0, 2, 4, 6])


def test_inputs_and_params_are_collected_by_name():
    """ImageParams, Buffers and Params reached from the outputs, also through RDom bounds
    and predicates."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    buf = halo.Buffer(np.zeros(3, np.float32), "buf")
    n, k = halo.Param(halo.int32, "n"), halo.Param(halo.int32, "k")
    r = halo.RDom((0, n))
    r.where(r.x < k)
    f = halo.Func("f")
    f[x] = inp[x] + buf[0]
    f[x] += 1.0 * r.x
    env = Environment.of([f])
    assert sorted(env.inputs) == ["buf", "inp"] and sorted(env.params) == ["k", "n"]


def test_two_funcs_with_one_name_are_an_error():
    """Two different Funcs named g in one pipeline raise DefinitionError."""
    g1, g2, f = halo.Func("g"), halo.Func("g"), halo.Func("f")
    g1[x] = x
    g2[x] = x + 1
    f[x] = g1[x] + g2[x]
    with pytest.raises(halo.DefinitionError, match="both named 'g'"):
        Environment.of([f])


def test_a_func_and_an_input_with_one_name_are_an_error():
    """A Func and an ImageParam both named q raise DefinitionError."""
    inp = halo.ImageParam(halo.int32, 1, "q")
    q = halo.Func("q")
    q[x] = inp[x]
    with pytest.raises(halo.DefinitionError, match="both named 'q'"):
        Environment.of([q])


def test_an_input_and_a_param_with_one_name_are_an_error():
    """An ImageParam and a Param both named p raise DefinitionError."""
    inp, p = halo.ImageParam(halo.int32, 1, "p"), halo.Param(halo.int32, "p")
    f = halo.Func("f")
    f[x] = inp[x] + p
    with pytest.raises(halo.DefinitionError, match="both named 'p'"):
        Environment.of([f])


def test_a_func_reading_another_func_of_the_same_name_is_reported_as_a_name_clash():
    """n2 named 'n' reads n1 also named 'n': the error is about the shared name, not a
    cycle."""
    n1, n2, top = halo.Func("n"), halo.Func("n"), halo.Func("top")
    n1[x] = x
    n2[x] = n1[x] + 1
    top[x] = n2[x]
    with pytest.raises(halo.DefinitionError, match="both named 'n'"):
        Environment.of([top])


def test_one_object_reached_twice_is_fine():
    """The same Func read by two consumers is one entry."""
    a, b, c = halo.Func("a"), halo.Func("b"), halo.Func("c")
    a[x] = x
    b[x] = a[x]
    c[x] = a[x] + b[x]
    assert list(Environment.of([c]).funcs) == ["a", "b", "c"]


def test_image_param_shape_is_usable_in_expressions():
    """inp[inp.shape[0] - 1 - x] reverses the input; shape entries are int32 Exprs."""
    inp = halo.ImageParam(halo.int32, 2, "inp")
    assert [e.type for e in inp.shape] == [halo.int32, halo.int32]
    rev = halo.Func("rev")
    rev[y, x] = inp[inp.shape[0] - 1 - y, inp.shape[1] - 1 - x]
    data = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(rev.realize((2, 3), inputs={inp: data}), data[::-1, ::-1])


def test_buffer_shape_is_usable_in_expressions():
    """A Buffer's shape gives the bound array's extents: f[x] = buf.shape[0] * x."""
    buf = halo.Buffer(np.zeros((5, 2), np.int32), "buf")
    f = halo.Func("f")
    f[x] = buf.shape[0] * x + buf.shape[1] + buf[0, 0]
    np.testing.assert_array_equal(f.realize((3,)), [2, 7, 12])
