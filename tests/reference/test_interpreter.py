"""The reference interpreter against independent NumPy code."""
from __future__ import annotations

import time

import numpy as np
import pytest

from halo.errors import BoundsError, InputError
from halo.ir.types import ALL_TYPES, bool_, float32, int8, int16, int32, uint8
from halo.lang import (
    Func,
    ImageParam,
    Param,
    RDom,
    boundary,
    cast,
    clamp,
    maximum,
    minimum,
    pow,
    product,
    select,
    sqrt,
)
from halo.lang import abs as habs
from halo.lang import floor as hfloor
from halo.lang import max as hmax
from halo.lang import min as hmin
from halo.lang import round as hround
from halo.lang import sum as hsum
from halo.lang.var import vars
from halo.reference import interpreter as interp
from halo.reference import reference

y, x, i, j = vars("y x i j")


def wrap32(values) -> np.ndarray:
    """Python ints wrapped to int32, as two's complement hardware does."""
    return np.array([(v + 2**31) % 2**32 - 2**31 for v in values], dtype=np.int32)


def record_calls(monkeypatch, name: str, log: list[str]) -> None:
    """Append `name` to `log` whenever the interpreter calls its function `name`."""
    original = getattr(interp, name)

    def recorded(*args):
        log.append(name)
        return original(*args)

    monkeypatch.setattr(interp, name, recorded)


# ----------------------------------------------------------------------- stencils


def blur_pipeline():
    """API.md's separable 3x3 box blur: (input, output Func)."""
    inp = ImageParam(float32, 2)  # unnamed: see the note on boundary names
    clamped = boundary.repeat_edge(inp)
    blur_x, blur_y = Func("blur_x"), Func("blur_y")
    blur_x[y, x] = (clamped[y, x - 1] + clamped[y, x] + clamped[y, x + 1]) / 3
    blur_y[y, x] = (blur_x[y - 1, x] + blur_x[y, x] + blur_x[y + 1, x]) / 3
    return inp, blur_y


def numpy_blur(image: np.ndarray) -> np.ndarray:
    """The same blur in NumPy, in the same float32 operation order."""
    p = np.pad(image, 1, mode="edge")
    bx = (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) / np.float32(3)
    return (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)


def test_box_blur_1000x1000_matches_numpy_in_under_a_second():
    """A separable 3x3 box blur with repeat_edge matches NumPy exactly and runs fast."""
    inp, blur_y = blur_pipeline()
    image = np.random.default_rng(0).random((1000, 1000), dtype=np.float32)
    start = time.perf_counter()
    out = reference(blur_y, (1000, 1000), inputs={inp: image})
    elapsed = time.perf_counter() - start
    assert out.dtype == np.float32 and out.shape == (1000, 1000)
    np.testing.assert_array_equal(out, numpy_blur(image))
    assert elapsed < 1.0, f"reference blur took {elapsed:.2f} s"


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (7, 1), (13, 17), (31, 2)])
def test_blur_on_size_one_and_prime_sizes(shape):
    """Extents of 1 and prime extents need no special casing."""
    inp, blur_y = blur_pipeline()
    image = np.random.default_rng(1).random(shape, dtype=np.float32)
    np.testing.assert_array_equal(reference(blur_y, shape, inputs={inp: image}),
                                  numpy_blur(image))


@pytest.mark.parametrize("make, mode", [
    (boundary.repeat_edge, "edge"),
    (lambda s: boundary.constant_exterior(s, 7.5), "constant"),
    (boundary.mirror_interior, "reflect"),
    (boundary.mirror_image, "symmetric"),
    (boundary.repeat_image, "wrap"),
], ids=["repeat_edge", "constant_exterior", "mirror_interior", "mirror_image",
        "repeat_image"])
def test_boundary_conditions_match_np_pad(make, mode):
    """Each boundary condition, realized around the image, equals np.pad's mode."""
    inp = ImageParam(float32, 2)
    f = make(inp)
    image = np.random.default_rng(2).random((5, 7), dtype=np.float32)
    out = reference(f, (5 + 2 * 3, 7 + 2 * 4), inputs={inp: image}, origin=(-3, -4))
    kwargs = {"constant_values": 7.5} if mode == "constant" else {}
    np.testing.assert_array_equal(out, np.pad(image, ((3, 3), (4, 4)), mode=mode, **kwargs))


def test_origin_shifts_the_realized_region():
    """`origin` moves the box: the result holds f at origin..origin+shape."""
    inp = ImageParam(int32, 1, "inp")
    f = Func("f")
    f[y, x] = y * 100 + x + inp[x + 3]
    data = np.arange(20, dtype=np.int32) * 7
    out = reference(f, (4, 6), inputs={inp: data}, origin=(5, -3))
    ys, xs = np.meshgrid(np.arange(5, 9), np.arange(-3, 3), indexing="ij")
    np.testing.assert_array_equal(out, ys * 100 + xs + data[xs + 3])


def test_several_outputs_of_the_same_shape():
    """A list of Funcs gives a list of arrays; one output may read the other."""
    f, g = Func("f"), Func("g")
    f[x] = x * 2
    g[x] = f[x + 1] + f[x - 1]
    out_f, out_g = reference([f, g], (5,))
    np.testing.assert_array_equal(out_f, np.arange(5) * 2)
    np.testing.assert_array_equal(out_g, np.arange(5) * 4)


def test_zero_dimensional_func():
    """`f[()] = ...` realizes to a 0-d array, with or without a reduction."""
    inp = ImageParam(int32, 1, "inp")
    r = RDom((0, inp.shape[0]))
    total, third = Func("total"), Func("third")
    total[()] = 0
    total[()] += inp[r]
    third[()] = inp[2] * 3 + total[()]
    data = np.arange(10, dtype=np.int32) ** 2
    out = reference(third, (), inputs={inp: data})
    assert out.shape == () and out.dtype == np.int32
    assert out == data[2] * 3 + data.sum()


def test_empty_output_computes_nothing():
    """An output with a zero extent reads nothing, so even a too-small input is fine."""
    inp = ImageParam(int32, 1, "inp")
    r = RDom((0, 100))
    total, out = Func("total"), Func("out")
    total[()] = 0
    total[()] += inp[r.x]
    out[y, x] = total[()] + inp[x + 50]
    result = reference(out, (0, 4), inputs={inp: np.zeros(3, np.int32)})
    assert result.shape == (0, 4) and result.dtype == np.int32


# -------------------------------------------------------------------- reductions


def test_matmul_update_definition_float32_and_int32():
    """`C[i, j] += A[i, k] * B[k, j]` equals `a @ b` (int32 bit-exact, wrapping)."""
    for dtype, halo_type in ((np.float32, float32), (np.int32, int32)):
        A, B = ImageParam(halo_type, 2, "A"), ImageParam(halo_type, 2, "B")
        k = RDom((0, A.shape[1]))
        C = Func("C")
        C[i, j] = cast(halo_type, 0)
        C[i, j] += A[i, k] * B[k, j]
        rng = np.random.default_rng(3)
        a = (rng.random((19, 23)) * 2**20).astype(dtype)
        b = (rng.random((23, 11)) * 2**20).astype(dtype)
        out = reference(C, (19, 11), inputs={A: a, B: b})
        if dtype == np.int32:
            want = (a.astype(object) @ b.astype(object)).ravel()
            np.testing.assert_array_equal(out, wrap32(want).reshape(19, 11))
        else:
            np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5)


def test_matmul_256_with_inline_sum():
    """`halo.sum` over an RDom gives a 256^3 matmul in well under a second."""
    A, B = ImageParam(float32, 2, "A"), ImageParam(float32, 2, "B")
    k = RDom((0, 256))
    C = Func("C")
    C[i, j] = hsum(A[i, k] * B[k, j])
    rng = np.random.default_rng(4)
    a, b = rng.random((256, 256), dtype=np.float32), rng.random((256, 256), dtype=np.float32)
    start = time.perf_counter()
    out = reference(C, (256, 256), inputs={A: a, B: b})
    assert time.perf_counter() - start < 2.0
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5)


def test_histogram_scatter_on_uint8():
    """`h[inp[r.x, r.y]] += 1` counts like np.bincount; a uint8 count wraps at 256."""
    inp = ImageParam(uint8, 2, "inp")
    r = RDom((0, inp.shape[0]), (0, inp.shape[1]))
    hist, wrapped = Func("hist"), Func("wrapped")
    hist[x] = 0
    hist[inp[r.x, r.y]] += 1
    wrapped[x] = cast(uint8, 0)
    wrapped[inp[r.x, r.y]] += 1
    image = np.random.default_rng(5).integers(0, 40, (300, 200), dtype=np.uint8)
    counts = np.bincount(image.ravel(), minlength=256)
    np.testing.assert_array_equal(reference(hist, (256,), inputs={inp: image}), counts)
    np.testing.assert_array_equal(reference(wrapped, (50,), inputs={inp: image}),
                                  (counts[:50] % 256).astype(np.uint8))


def test_scatter_with_max_and_minus():
    """Scatter updates with `max` and `-=` apply every RDom point, repeats included."""
    keys = ImageParam(uint8, 1, "keys")
    r = RDom((0, keys.shape[0]))
    last, debt = Func("last"), Func("debt")
    last[x] = -1
    last[keys[r]] = hmax(last[keys[r]], r)
    debt[x] = 100
    debt[keys[r]] -= r
    data = np.array([3, 1, 3, 0, 1, 3], dtype=np.uint8)
    want_last, want_debt = np.full(5, -1), np.full(5, 100)
    for pos, key in enumerate(data):
        want_last[key] = max(want_last[key], pos)
        want_debt[key] -= pos
    np.testing.assert_array_equal(reference(last, (5,), inputs={keys: data}), want_last)
    np.testing.assert_array_equal(reference(debt, (5,), inputs={keys: data}), want_debt)


def test_two_dimensional_rdom_in_small_chunks(monkeypatch):
    """A 2-D convolution and a histogram give the same result when every chunk of RDom
    points is tiny (chunks split the flattened RDom anywhere)."""
    inp, weights = ImageParam(int32, 2, "inp"), ImageParam(int32, 2, "weights")
    r = RDom((0, 3), (0, 4))
    conv, hist = Func("conv"), Func("hist")
    conv[y, x] = 0
    conv[y, x] += weights[r.x, r.y] * inp[y + r.x, x + r.y]
    hist[x] = 0
    hist[clamp(inp[r.x, r.y] + weights[r.x, r.y], 0, 9)] += 1
    rng = np.random.default_rng(9)
    image, w = rng.integers(0, 5, (8, 9), dtype=np.int32), rng.integers(0, 5, (3, 4), np.int32)
    want = np.zeros((6, 6), np.int32)
    for dy in range(3):
        for dx in range(4):
            want += w[dy, dx] * image[dy:dy + 6, dx:dx + 6]
    counts = np.bincount(np.clip(image[:3, :4] + w, 0, 9).ravel(), minlength=10)
    for chunk in (1 << 22, 7, 1):
        monkeypatch.setattr(interp, "_CHUNK_ELEMENTS", chunk)
        np.testing.assert_array_equal(
            reference(conv, (6, 6), inputs={inp: image, weights: w}), want)
        np.testing.assert_array_equal(
            reference(hist, (10,), inputs={inp: image, weights: w}), counts)


def test_reduce_and_scatter_agree_with_one_step_at_a_time(monkeypatch):
    """The reduce and scatter strategies give exactly what the general step-by-step
    strategy gives, predicates and every combining operator included."""
    inp = ImageParam(int32, 2, "inp")
    r = RDom((0, inp.shape[0]), (0, inp.shape[1]))
    r.where((inp[r.x, r.y] + r.y) % 3 != 0)
    funcs = [Func(name) for name in ("add", "sub", "mul", "low", "high")]
    add, sub, mul, low, high = funcs
    for f in funcs:
        f[x] = x
    add[x] += inp[r.x, r.y] * (x + 1)
    sub[clamp(inp[r.x, r.y], 0, 7)] -= r.y
    mul[x] *= inp[r.x, r.y] + x
    low[x] = hmin(low[x], inp[r.x, r.y] - x * r.y)
    high[clamp(inp[r.x, r.y] + r.x, 0, 7)] = hmax(high[clamp(inp[r.x, r.y] + r.x, 0, 7)], r.y)
    data = np.random.default_rng(10).integers(-3, 9, (7, 6), dtype=np.int32)
    used: list[str] = []
    for strategy in ("_update_by_reduction", "_update_by_scatter"):
        record_calls(monkeypatch, strategy, used)
    fast = [reference(f, (8,), inputs={inp: data}) for f in funcs]
    assert used == ["_update_by_reduction", "_update_by_scatter", "_update_by_reduction",
                    "_update_by_reduction", "_update_by_scatter"]
    monkeypatch.setattr(interp, "_reduction_form", lambda u: None)
    for f, want in zip(funcs, fast, strict=True):
        np.testing.assert_array_equal(reference(f, (8,), inputs={inp: data}), want)


def test_prefix_sum_recurrence():
    """`f[r.x] = f[r.x - 1] + inp[r.x]` is a cumulative sum; reading f[-1] gives the pure value."""
    inp = ImageParam(int32, 1, "inp")
    r = RDom((0, inp.shape[0]))
    f = Func("f")
    f[x] = 0
    f[r.x] = f[r.x - 1] + inp[r.x]
    data = np.random.default_rng(6).integers(-1000, 1000, 57, dtype=np.int32)
    np.testing.assert_array_equal(reference(f, (57,), inputs={inp: data}), np.cumsum(data))


def test_row_recurrence_is_vectorized_over_pure_vars():
    """A recurrence along x for every row y matches np.cumsum along axis 1."""
    inp = ImageParam(float32, 2, "inp")
    r = RDom((1, inp.shape[1] - 1))
    f = Func("f")
    f[y, x] = inp[y, x]
    f[y, r.x] = f[y, r.x - 1] + f[y, r.x]
    image = np.random.default_rng(7).random((40, 300), dtype=np.float32)
    np.testing.assert_allclose(reference(f, (40, 300), inputs={inp: image}),
                               np.cumsum(image, axis=1, dtype=np.float32), rtol=1e-5)


def test_rdom_where_in_reductions_scatters_and_recurrences():
    """`RDom.where` masks the reduce, scatter and step strategies alike."""
    inp = ImageParam(int32, 1, "inp")
    n = inp.shape[0]
    r1 = RDom((0, n))
    r1.where(r1.x <= i)
    upto = Func("upto")  # sum of inp[0..i]: a predicate on a pure Var
    upto[i] = 0
    upto[i] += inp[r1.x]
    r2 = RDom((0, n))
    r2.where(inp[r2.x] % 2 == 0)
    evens = Func("evens")  # histogram of the even values only
    evens[x] = 0
    evens[clamp(inp[r2.x], 0, 9)] += 1
    r3 = RDom((1, n - 1))
    r3.where(r3.x % 3 != 0)
    skip = Func("skip")  # a recurrence that skips every third step
    skip[x] = inp[x]
    skip[r3.x] = skip[r3.x - 1] * 2 + skip[r3.x]
    data = np.array([4, 7, 2, 2, 9, 0, 5, 8], dtype=np.int32)
    np.testing.assert_array_equal(reference(upto, (8,), inputs={inp: data}), np.cumsum(data))
    np.testing.assert_array_equal(reference(evens, (10,), inputs={inp: data}),
                                  np.bincount(data[data % 2 == 0], minlength=10))
    want = data.copy()
    for k in range(1, 8):
        if k % 3 != 0:
            want[k] = want[k - 1] * 2 + want[k]
    np.testing.assert_array_equal(reference(skip, (8,), inputs={inp: data}), want)


def test_two_dimensional_where_iterates_first_dimension_outermost():
    """An order-dependent update sees RDom points with r.x outer and r.y inner."""
    r = RDom((0, 3), (0, 4))
    r.where(r.x != r.y)
    log = Func("log")
    log[x] = 0
    log[0] = log[0] * 10 + r.x + 1  # the digits record the sequence of r.x
    log[1] = log[1] * 5 + r.y
    out = reference(log, (2,))
    digits = [(a, b) for a in range(3) for b in range(4) if a != b]
    want0, want1 = 0, 0
    for a, b in digits:
        want0 = (want0 * 10 + a + 1) % 2**32
        want1 = want1 * 5 + b
    assert out[0] == wrap32([want0])[0] and out[1] == wrap32([want1])[0]


def test_inline_maximum_minimum_product():
    """halo.maximum/minimum/product over a row match NumPy (the product wraps)."""
    inp = ImageParam(int32, 2, "inp")
    r = RDom((0, inp.shape[1]))
    mx, mn, pr = Func("mx"), Func("mn"), Func("pr")
    mx[y] = maximum(inp[y, r])
    mn[y] = minimum(inp[y, r])
    pr[y] = product(inp[y, r])
    data = np.random.default_rng(8).integers(-50, 50, (6, 9), dtype=np.int32)
    np.testing.assert_array_equal(reference(mx, (6,), inputs={inp: data}), data.max(axis=1))
    np.testing.assert_array_equal(reference(mn, (6,), inputs={inp: data}), data.min(axis=1))
    want = [int(np.prod(row.astype(object))) for row in data]
    np.testing.assert_array_equal(reference(pr, (6,), inputs={inp: data}), wrap32(want))


def test_updates_without_an_rdom():
    """Updates without an RDom run once over the pure Vars; constant left sides too."""
    f = Func("f")
    f[x] = x
    f[x] = f[x] * 3
    f[2] = 100
    f[x] = f[x] + 1
    np.testing.assert_array_equal(reference(f, (5,)), [1, 4, 101, 10, 13])


# ------------------------------------------------------------------ arithmetic


def test_integer_floor_division_and_modulo():
    """`//` and `%` floor toward -inf, x // 0 == x % 0 == 0, and min // -1 wraps."""
    a_in, b_in = ImageParam(int32, 1, "a"), ImageParam(int32, 1, "b")
    q, m = Func("q"), Func("m")
    q[x] = a_in[x] // b_in[x]
    m[x] = a_in[x] % b_in[x]
    a = [7, -7, 7, -7, 5, -5, 0, -2**31, -2**31, 2**31 - 1]
    b = [2, 2, -2, -2, 0, 0, 3, -1, 0, -1]
    inputs = {a_in: np.array(a, np.int32), b_in: np.array(b, np.int32)}
    want_q = wrap32([u // v if v else 0 for u, v in zip(a, b, strict=True)])
    want_m = wrap32([u % v if v else 0 for u, v in zip(a, b, strict=True)])
    np.testing.assert_array_equal(reference(q, (10,), inputs=inputs), want_q)
    np.testing.assert_array_equal(reference(m, (10,), inputs=inputs), want_m)


def test_uint8_arithmetic_wraps():
    """uint8 +, -, * wrap modulo 256 and stay uint8."""
    a_in, b_in = ImageParam(uint8, 1, "a"), ImageParam(uint8, 1, "b")
    f = Func("f")
    f[y, x] = select(y == 0, a_in[x] + b_in[x], select(y == 1, a_in[x] - b_in[x],
                                                       a_in[x] * b_in[x]))
    a = np.array([0, 1, 200, 255, 17], np.uint8)
    b = np.array([0, 255, 100, 255, 15], np.uint8)
    out = reference(f, (3, 5), inputs={a_in: a, b_in: b})
    assert out.dtype == np.uint8
    ai, bi = a.astype(int), b.astype(int)
    np.testing.assert_array_equal(out, np.array([ai + bi, ai - bi, ai * bi]) % 256)


def test_casts():
    """float->int truncates toward zero, int narrowing wraps, ->bool is != 0."""
    fl, it = ImageParam(float32, 1, "fl"), ImageParam(int32, 1, "it")
    to_int, to_u8, to_bool, back, widen = (Func(s) for s in ("to_int", "to_u8", "to_bool",
                                                             "back", "widen"))
    to_int[x] = cast(int32, fl[x])
    to_u8[x] = cast(uint8, it[x])
    to_bool[x] = cast(bool_, it[x])
    back[x] = cast(int32, cast(bool_, fl[x])) * 10
    widen[x] = cast(int16, cast(int8, it[x]))
    floats = np.array([2.7, -2.7, 0.0, -0.4, 1e6], np.float32)
    ints = np.array([300, -1, 0, 255, 128], np.int32)
    np.testing.assert_array_equal(reference(to_int, (5,), {fl: floats}),
                                  [2, -2, 0, 0, 1000000])
    np.testing.assert_array_equal(reference(to_u8, (5,), {it: ints}), [44, 255, 0, 255, 128])
    np.testing.assert_array_equal(reference(to_bool, (5,), {it: ints}),
                                  [True, True, False, True, True])
    np.testing.assert_array_equal(reference(back, (5,), {fl: floats}), [10, 10, 0, 10, 10])
    out = reference(widen, (5,), {it: ints})
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out, [44, -1, 0, -1, -128])


def test_float_ops_keep_float32():
    """float32 stays float32; float % is a - b*floor(a/b); round is half to even."""
    fl = ImageParam(float32, 1, "fl")
    scaled, modded, rounded, floored, quotient = (Func(s) for s in (
        "scaled", "modded", "rounded", "floored", "quotient"))
    scaled[x] = fl[x] * 0.1 + 1
    modded[x] = fl[x] % 2.0
    rounded[x] = hround(fl[x])
    floored[x] = hfloor(fl[x])
    quotient[x] = (x + 1) / 2  # int / int is float32 division
    v = np.array([2.5, -0.5, -5.5, 3.5, 7.25], np.float32)
    inputs = {fl: v}
    for f in (scaled, modded, rounded, floored):
        assert reference(f, (5,), inputs).dtype == np.float32
    np.testing.assert_array_equal(reference(scaled, (5,), inputs),
                                  v * np.float32(0.1) + np.float32(1))
    np.testing.assert_array_equal(reference(modded, (5,), inputs),
                                  v - np.float32(2) * np.floor(v / np.float32(2)))
    np.testing.assert_array_equal(reference(rounded, (5,), inputs), [2, -0.0, -6, 4, 7])
    np.testing.assert_array_equal(reference(floored, (5,), inputs), [2, -1, -6, 3, 7])
    out = reference(quotient, (5,))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, (np.arange(1, 6) / 2).astype(np.float32))


def test_bitwise_and_logical_ops():
    """& | ^ ~ are bitwise on integers and logical on bool."""
    it = ImageParam(int32, 1, "it")
    bits, logic = Func("bits"), Func("logic")
    bits[y, x] = select(y == 0, it[x] & 6, select(y == 1, it[x] | 6,
                                                  select(y == 2, it[x] ^ 6, ~it[x])))
    logic[x] = ((it[x] > 0) & (it[x] < 5)) | ~(it[x] != -3) ^ (it[x] == 7)
    data = np.array([-3, 0, 3, 5, 7, 12], np.int32)
    np.testing.assert_array_equal(reference(bits, (4, 6), {it: data}),
                                  [data & 6, data | 6, data ^ 6, ~data])
    want = ((data > 0) & (data < 5)) | (~(data != -3) ^ (data == 7))
    np.testing.assert_array_equal(reference(logic, (6,), {it: data}), want)


def test_params_in_values_indices_and_rdoms():
    """Params are bound by object or name, fall back to defaults, and size RDoms."""
    inp = ImageParam(float32, 1, "inp")
    scale = Param(float32, "scale", default=2.0)
    shift = Param(int32, "shift")
    count = Param(int32, "count")
    r = RDom((0, count))
    f, g = Func("f"), Func("g")
    f[x] = inp[x + shift] * scale
    g[x] = 0.0
    g[x] += f[x + r]
    data = np.arange(12, dtype=np.float32)
    out = reference(g, (6,), inputs={inp: data, shift: 2, "count": 3})
    want = np.array([sum(data[k + s + 2] * 2 for s in range(3)) for k in range(6)])
    np.testing.assert_array_equal(out, want)
    out = reference(f, (4,), inputs={inp: data, shift: 1, scale: 0.5})
    np.testing.assert_array_equal(out, data[1:5] * np.float32(0.5))


# ---------------------------------------------------------------------- errors


def test_input_too_small_names_input_dimension_and_ranges():
    """Reading past an input's end is a BoundsError with the ranges in it."""
    inp = ImageParam(float32, 2, "small")
    f = Func("f")
    f[y, x] = inp[y, x + 1]
    with pytest.raises(BoundsError) as err:
        reference(f, (4, 10), inputs={inp: np.zeros((4, 10), np.float32)})
    message = str(err.value)
    assert "small" in message and "dimension 1" in message
    assert "[1, 10]" in message and "[0, 9]" in message


def test_missing_input_is_an_input_error():
    """An unbound ImageParam raises InputError naming it."""
    inp = ImageParam(float32, 1, "needed")
    f = Func("f")
    f[x] = inp[x]
    with pytest.raises(InputError, match="needed"):
        reference(f, (3,))


def test_unbounded_data_dependent_index_is_a_bounds_error():
    """An int32 data-dependent index into a Func must be clamped; the error says so."""
    idx = ImageParam(int32, 1, "idx")
    table, out = Func("table"), Func("out")
    table[x] = x * x
    out[x] = table[idx[x]]
    with pytest.raises(BoundsError) as err:
        reference(out, (3,), inputs={idx: np.array([0, 1, 2], np.int32)})
    message = str(err.value)
    assert "table" in message and "out" in message and "idx[x]" in message
    assert "clamp" in message
    clamped = Func("clamped")
    clamped[x] = table[clamp(idx[x], 0, 9)]
    np.testing.assert_array_equal(
        reference(clamped, (3,), inputs={idx: np.array([4, -2, 30], np.int32)}), [16, 0, 81])


@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_every_operator_keeps_its_operand_type(t):
    """Each operator's result has the type the IR gives it (the interpreter also checks
    every result it computes)."""
    a = ImageParam(t, 1)
    u, v = a[x], a[4 - x]
    exprs = [u + v, u - v, u * v, u / v, u // v, u % v, hmin(u, v), hmax(u, v), u < v,
             u == v, select(u < v, u, v), habs(u), sqrt(u), pow(u, v), hround(u),
             cast(int16, u), cast(float32, u), cast(bool_, u), cast(uint8, u)]
    if not t.is_float:
        exprs += [u & v, u | v, u ^ v, ~u]
    data = (np.arange(5) % 2 == 0) if t.is_bool else np.array([3, -2, 0, 7, 1])
    for e in exprs:
        f = Func()
        f[x] = e
        out = reference(f, (5,), inputs={a: data.astype(t.numpy)})
        assert out.dtype == e.type.numpy
