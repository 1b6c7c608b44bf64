"""Values a user hands halo (Params, their defaults, arrays, shapes, origins) are checked
in one place for each kind of value: a wrong one is an InputError (or, in a definition, a
DefinitionError) that names it and says what is accepted; never a raw TypeError, a
silently changed value or a wrong answer."""
from __future__ import annotations

import numpy as np
import pytest

import halo

x, y = halo.vars("x y")


def select_pipeline():
    """f[x] = fl if b else 0."""
    b, fl = halo.Param(halo.bool_, "b"), halo.Param(halo.float32, "fl")
    f = halo.Func("f")
    f[x] = halo.select(b, fl, 0.0)
    return b, fl, f


def both_runs(f, shape, inputs):
    """Compiled and reference realizations, each a thunk."""
    return [lambda: f.realize(shape, inputs=inputs),
            lambda: halo.reference(f, shape, inputs=inputs)]


@pytest.mark.parametrize("value", ["false", None, [0], 0.5, 1, np.float32(0)],
                         ids=["str", "None", "list", "float", "int", "float32"])
def test_a_bool_param_takes_only_bools(value):
    """`"false"` used to become True and None, [0] and 0.5 were taken; both the compiled
    pipeline and the reference refuse them, saying what a bool Param accepts."""
    b, fl, f = select_pipeline()
    for run in both_runs(f, (2,), {b: value, fl: 1.0}):
        with pytest.raises(halo.InputError, match=r"Param b \(bool\) must be a bool "
                           r"\(True or False\), got"):
            run()
    np.testing.assert_array_equal(f.realize((2,), inputs={b: np.bool_(False), fl: 1.0}),
                                  [0, 0])


@pytest.mark.parametrize("value", [10**400, 1 + 2j, np.complex64(1 + 1j), 1e300, True],
                         ids=["huge int", "complex", "numpy complex", "past float32",
                              "bool"])
def test_a_float_param_takes_real_numbers_that_fit(value):
    """10**400 raised a raw OverflowError, complex values lost their imaginary part and
    1e300 became inf in a float32 Param."""
    b, fl, f = select_pipeline()
    for run in both_runs(f, (2,), {b: True, fl: value}):
        with pytest.raises(halo.InputError, match=r"Param fl \(float32\) must be a real "
                           r"number \(float32\) of magnitude at most 3.40282\d*e\+38"):
            run()


def test_a_float_param_keeps_inf_and_nan():
    b, fl, f = select_pipeline()
    np.testing.assert_array_equal(f.realize((1,), inputs={b: True, fl: -np.inf}), [-np.inf])
    assert np.isnan(f.realize((1,), inputs={b: True, fl: float("nan")})).all()


def test_an_int_param_takes_integers_in_range():
    p = halo.Param(halo.uint8, "p")
    f = halo.Func("f")
    f[x] = p
    for bad in [256, -1, 2.0, True, "3"]:
        with pytest.raises(halo.InputError, match=r"Param p \(uint8\) must be an integer "
                           r"in \[0, 255\]"):
            f.realize((1,), inputs={p: bad})
    assert f.realize((1,), inputs={p: np.array(255)})[0] == 255


@pytest.mark.parametrize(("dtype", "default", "accepted"), [
    (halo.uint8, 300, r"an integer in \[0, 255\]"),
    (halo.bool_, "no", r"a bool \(True or False\)"),
    (halo.float32, 1 + 1j, "a real number"),
])
def test_a_param_default_is_checked_when_declared(dtype, default, accepted):
    """An out-of-range default used to be accepted until the pipeline ran."""
    with pytest.raises(halo.DefinitionError, match=rf"Param d \({dtype}\)'s default must "
                       rf"be {accepted}"):
        halo.Param(dtype, "d", default=default)


def test_a_masked_array_is_refused():
    """Its mask was silently ignored."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g = halo.Func("g")
    g[x] = inp[x]
    masked = np.ma.masked_array(np.arange(4, dtype=np.float32), mask=[0, 1, 0, 0])
    for run in both_runs(g, (4,), {inp: masked}):
        with pytest.raises(halo.InputError, match="input inp is a masked array.*filled"):
            run()
    with pytest.raises(halo.InputError, match="out= for g is a masked array"):
        g.realize(inputs={inp: np.zeros(4, np.float32)}, out=masked)
    with pytest.raises(halo.DefinitionError, match="is a masked array"):
        halo.Buffer(masked, "buf")


@pytest.mark.parametrize("shape", [(True, 8), (1.5, 8), (2, -1), (2, 2**31), "ab", (2,),
                                   None, {2: 3}],
                         ids=["bool", "float", "negative", "past int32", "str", "short",
                              "none", "dict"])
def test_a_bad_shape_says_what_a_shape_is(shape):
    """`realize((True, 8))` raised a raw TypeError (and the reference computed a 1x8
    array); every shape goes through one check, for realize and the reference."""
    h = halo.Func("h")
    h[y, x] = x + y
    for run in [lambda: h.realize(shape), lambda: halo.reference(h, shape)]:
        with pytest.raises(halo.InputError, match=r"h.*shape"):
            run()


def test_a_one_dimensional_shape_may_be_an_integer():
    """`halo.reference(f, 6)` raised a raw TypeError; realize took it already."""
    g = halo.Func("g")
    g[x] = x
    np.testing.assert_array_equal(halo.reference(g, 6), np.arange(6))
    np.testing.assert_array_equal(g.realize(np.int64(6)), np.arange(6))


def test_a_bad_origin_is_refused():
    g = halo.Func("g")
    g[x] = x
    for run in [lambda: g.realize((3,), origin=(0.5,)),
                lambda: halo.reference(g, (3,), origin=(1, 2))]:
        with pytest.raises(halo.InputError, match=r"g.*origin"):
            run()
    np.testing.assert_array_equal(halo.reference(g, (3,), origin=[np.int8(-2)]), [-2, -1, 0])


def misaligned(count: int) -> np.ndarray:
    """float32 elements at an odd address."""
    return np.frombuffer(bytearray(4 * count + 1), dtype=np.float32, offset=1, count=count)


def test_a_misaligned_input_is_copied():
    """It was refused with advice to call np.ascontiguousarray, which returns the same
    misaligned array; now it is copied, as non-contiguous inputs are."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g = halo.Func("g")
    g[x] = inp[x] * 2.0
    data = misaligned(37)
    assert not data.flags.aligned
    data[:] = np.arange(37)
    np.testing.assert_array_equal(g.realize((37,), inputs={inp: data}), np.arange(37) * 2)


def test_a_misaligned_output_is_refused_with_advice_that_works():
    inp = halo.ImageParam(halo.float32, 1, "inp")
    g = halo.Func("g")
    g[x] = inp[x]
    with pytest.raises(halo.InputError, match=r"out= for g must be aligned.*np\.empty"):
        g.realize(inputs={inp: np.zeros(8, np.float32)}, out=misaligned(8))


def test_a_stride_too_big_names_the_input_and_dimension():
    """It named the internal scalar 'i2.stride.0'."""
    i2 = halo.ImageParam(halo.uint8, 2, "i2")
    k = halo.Func("k")
    k[y, x] = i2[y, x]
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=(2, 2),
                                           strides=(2**33, 1))
    with pytest.raises(halo.InputError, match=r"the stride \(in elements\) of input i2 in "
                       r"dimension 0 .*must be an integer in .* \(int32\), "
                       r"got 8589934592") as info:
        k.realize((2, 2), inputs={i2: huge})
    assert "i2.stride" not in str(info.value)


def test_an_extent_too_big_names_the_input_and_dimension():
    """It named the internal scalar 'inp.extent.0'."""
    inp = halo.ImageParam(halo.uint8, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[inp.shape[0] - 1 - x]
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=(2**31 + 5,),
                                           strides=(0,))
    with pytest.raises(halo.InputError, match=r"the extent of input inp in dimension 0 "
                       r".*must be an integer in .* \(int32\), got 2147483653") as info:
        f.realize((4,), inputs={inp: huge})
    assert "inp.extent" not in str(info.value)


def test_the_shape_is_checked_against_each_output():
    f, g = halo.Func("f"), halo.Func("g")
    f[x] = x
    g[y, x] = x + y
    with pytest.raises(halo.InputError, match=r"g.realize\(...\): the shape \(3,\) has 1 "
                       "entries, but it must be 2 integer"):
        halo.Pipeline([f, g]).realize((3,))


def test_an_unbounded_func_index_is_refused_with_the_index_and_a_clamp() -> None:
    """A Func read at an index cast from a value in memory: no region to allocate, so a
    BoundsError that shows the index and the clamp (it allocated a wrong size before)."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g = halo.Func("g")
    g[y, x] = inp[y, x] * 2.0
    f = halo.Func("f")
    f[y, x] = g[halo.cast(halo.int32, inp[y, x]), x]
    g.compute_root()
    with pytest.raises(halo.BoundsError, match=r"region of g read by f in dimension 0: an "
                       r"index there \(int32\(inp\[f\.s0\.y, f\.s0\.x\]\)\) is data-dependent"
                       r".*halo\.clamp\(index, 0, n - 1\)"):
        f.realize((4, 4), inputs={inp: np.ones((4, 4), np.float32)})


def test_an_unbounded_input_index_is_refused_before_running() -> None:
    """An input read at an index cast from memory is refused at lowering with the clamp,
    not reported as accessed at [-2147483648, 2147483647]."""
    y, x = halo.vars("y x")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = inp[halo.cast(halo.int32, inp[y, x]), x]
    with pytest.raises(halo.BoundsError, match=r"where input inp is read in dimension 0: "
                       r"an index there .*int32\(inp\[f\.s0\.y, f\.s0\.x\]\).*"
                       r"halo\.clamp\(index, 0, inp\.shape\[0\] - 1\)"):
        f.realize((4, 4), inputs={inp: np.ones((4, 4), np.float32)})


def test_a_range_at_int32_limits_says_the_index_was_not_bounded() -> None:
    """The run-time message for a range reaching int32's limits says why and how."""
    error = halo.errors.input_bounds_error("inp", 0, -2**31, 2**31 - 1, 4)
    assert "halo couldn't bound an index there" in str(error)
    assert "halo.clamp(index, 0, 3)" in str(error)


def test_a_broadcast_view_too_wide_to_index_is_an_input_error() -> None:
    """A zero-stride view with 2**31 + 10 columns raised NumPy's MemoryError: halo copied
    it whole (it isn't dense) before checking its extents."""
    inp = halo.ImageParam(halo.float64, 2, "inp")
    g = halo.Func("g")
    g[y, x] = inp[y, x]
    wide = np.broadcast_to(np.ones(1), (2, 2**31 + 10))
    with pytest.raises(halo.InputError, match=r"the extent of input inp in dimension 1 "
                       r".*\(int32\), got 2147483658"):
        g.realize((2, 4), inputs={inp: wide})
