"""GPU test pipelines: each builder returns (output Func, {input: array}, output shape).

Shared by tests/gpu (run on a GPU against halo.reference) and tests/backends/cuda (the
emitted CUDA C compiles with nvcc). Sizes are awkward: primes, 1, smaller than a tile.
"""
from __future__ import annotations

import numpy as np

import halo

RNG = np.random.default_rng(7)


def _image(shape, dtype=np.float32, lo=-4, hi=4):
    if np.dtype(dtype).kind == "f":
        return RNG.uniform(lo, hi, shape).astype(dtype)
    return RNG.integers(lo, hi, shape).astype(dtype)


def round_up_producer(n=1000):
    """A producer split with tail='round_up' computes whole tiles past what is read."""
    x, xo, xi = halo.vars("x xo xi")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f, out = halo.Func("f"), halo.Func("out")
    f[x] = inp[x] * 3
    out[x] = f[x] + f[x + 1]
    f.compute_root().gpu_tile(x, xo, xi, 128, tail="round_up")
    out.gpu_tile(x, xo, xi, 64)
    return out, {inp: _image(((n + 1 + 127) // 128 * 128,))}, (n,)


def pointwise_1d(n=997, tail="auto"):
    x, xo, xi = halo.vars("x xo xi")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    out = halo.Func("out")
    out[x] = halo.sqrt(halo.abs(inp[x])) * 2 + inp[x] * inp[x]
    out.gpu_tile(x, xo, xi, 128, tail=tail)
    return out, {inp: _image((n,))}, (n,)


def blur_shared(shape=(37, 53), tail="auto"):
    """Halide's classic blur: the horizontal pass in shared memory per block."""
    x, y, xo, yo, xi, yi = halo.vars("x y xo yo xi yi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    bh, out = halo.Func("bh"), halo.Func("out")
    bh[y, x] = inp[y, x] + inp[y, x + 1] + inp[y, x + 2]
    out[y, x] = (bh[y, x] + bh[y + 1, x] + bh[y + 2, x]) / 9
    out.gpu_tile(y, x, yo, xo, yi, xi, 8, 32, tail=tail)
    bh.compute_at(out, xo).store_in("shared").gpu_threads(y, x)
    h, w = shape
    return out, {inp: _image((h + 2, w + 2))}, shape


def two_kernels(shape=(29, 31)):
    """A Func computed at root is a kernel of its own, in device memory."""
    x, y, xo, yo, xi, yi = halo.vars("x y xo yo xi yi")
    inp = halo.ImageParam(halo.int32, 2, "inp")
    f, out = halo.Func("f"), halo.Func("out")
    f[y, x] = inp[y, x] * 3 - 7
    out[y, x] = (f[y, x] + f[y, x + 1]) // 4 + (f[y, x] % 5)
    f.compute_root().gpu_tile(y, x, yo, xo, yi, xi, 4, 16)
    out.gpu_tile(y, x, yo, xo, yi, xi, 16, 16)
    h, w = shape
    return out, {inp: _image((h, w + 1), np.int32, -1000, 1000)}, shape


def registers(shape=(23, 41)):
    """A reduction computed inside the thread loops lives in registers."""
    x, y, xo, yo, xi, yi = halo.vars("x y xo yo xi yi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 5), name="r")
    s, out = halo.Func("s"), halo.Func("out")
    s[y, x] = 0.0
    s[y, x] = s[y, x] + inp[y, x + r.x]
    out[y, x] = s[y, x] * 0.5
    out.gpu_tile(y, x, yo, xo, yi, xi, 8, 8)
    s.compute_at(out, xi)
    h, w = shape
    return out, {inp: _image((h, w + 4))}, shape


def updates(n=131):
    """Pure and update stages, each its own kernel."""
    x, xo, xi = halo.vars("x xo xi")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[x]
    f[x] = f[x] * 2 + 1
    f.gpu_tile(x, xo, xi, 32)
    f.update(0).gpu_tile(x, xo, xi, 64)
    return f, {inp: _image((n,))}, (n,)


def integers(n=211):
    """8- and 16-bit wraparound, floor division and modulo of negatives, select, min/max."""
    x, xo, xi = halo.vars("x xo xi")
    a = halo.ImageParam(halo.uint8, 1, "a")
    b = halo.ImageParam(halo.int16, 1, "b")
    out = halo.Func("out")
    wrapped = halo.cast(halo.int32, a[x] * a[x] + 200) + halo.cast(halo.int32, b[x] * 300)
    out[x] = halo.select(b[x] > 0, wrapped // halo.cast(halo.int32, b[x] - 3),
                         halo.max(wrapped % 7, halo.cast(halo.int32, b[x]) - 9))
    out.gpu_tile(x, xo, xi, 64)
    return out, {a: _image((n,), np.uint8, 0, 256), b: _image((n,), np.int16, -300, 300)}, (n,)


def matmul_shared(n=45, m=37, k=29):
    """A matmul: the product accumulated in registers, the B tile in shared memory."""
    i, j, io, jo, ii, ji = halo.vars("i j io jo ii ji")
    a = halo.ImageParam(halo.float32, 2, "a")
    b = halo.ImageParam(halo.float32, 2, "b")
    r = halo.RDom((0, k), name="r")
    acc, out = halo.Func("acc"), halo.Func("out")
    acc[i, j] = 0.0
    acc[i, j] += a[i, r.x] * b[r.x, j]
    out[i, j] = acc[i, j]
    out.gpu_tile(i, j, io, jo, ii, ji, 8, 16)
    acc.compute_at(out, ji)
    return out, {a: _image((n, k)), b: _image((k, m))}, (n, m)


def block_level(n=50):
    """gpu_blocks alone: each block's one thread computes its tile."""
    x, xo, xi = halo.vars("x xo xi")
    inp = halo.ImageParam(halo.float64, 1, "inp")
    out = halo.Func("out")
    out[x] = halo.exp(inp[x]) - halo.floor(inp[x])
    out.split(x, xo, xi, 7).gpu_blocks(xo)
    return out, {inp: _image((n,), np.float64)}, (n,)


def unrolled_vthread(shape=(19, 70)):
    """A vthread loop around the thread loops and an unrolled loop inside them."""
    x, y, xo, yo, xi, yi, v, xii = halo.vars("x y xo yo xi yi v xii")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    out = halo.Func("out")
    out[y, x] = inp[y, x] * inp[y, x] - 1
    out.tile(y, x, yo, xo, yi, xi, 4, 32).split(xi, v, xi, 16).split(xi, xi, xii, 4)
    out.reorder(yo, xo, v, yi, xi, xii)
    out.gpu_blocks(yo, xo).vthread(v).gpu_threads(yi, xi).unroll(xii)
    return out, {inp: _image(shape)}, shape


def params_and_halves(n=77):
    """Scalar arguments (Params) and float16 arithmetic, math and casts."""
    x, xo, xi = halo.vars("x xo xi")
    h = halo.ImageParam(halo.float16, 1, "h")
    gain = halo.Param(halo.float32, "gain", 1.5)
    shift = halo.Param(halo.int32, "shift", -3)
    out = halo.Func("out")
    wide = halo.cast(halo.float32, h[x])
    out[x] = halo.cast(halo.float16, halo.sqrt(halo.abs(wide)) * gain + halo.cast(
        halo.float32, x + shift)) + h[x] * h[x] - halo.min(h[x], halo.cast(halo.float16, 0.5))
    out.gpu_tile(x, xo, xi, 32)
    return out, {h: _image((n,), np.float16)}, (n,)


def specialized(n=300):
    """A specialization picks its own GPU tiling at run time (a branch in the host code)."""
    x, xo, xi = halo.vars("x xo xi")
    inp = halo.ImageParam(halo.float32, 1, "inp")
    out = halo.Func("out")
    out[x] = inp[x] * 3 - 1
    out.specialize(inp.shape[0] > 200).gpu_tile(x, xo, xi, 128)
    out.gpu_tile(x, xo, xi, 32)
    return out, {inp: _image((n,))}, (n,)


PIPELINES = {
    "pointwise_1d": pointwise_1d,
    "round_up_producer": round_up_producer,
    "pointwise_one": lambda: pointwise_1d(1),
    "blur_shared": blur_shared,
    "blur_shared_small": lambda: blur_shared((5, 3)),
    "blur_shared_guard": lambda: blur_shared((41, 67), "guard"),
    "two_kernels": two_kernels,
    "registers": registers,
    "updates": updates,
    "integers": integers,
    "matmul_shared": matmul_shared,
    "block_level": block_level,
    "unrolled_vthread": unrolled_vthread,
    "params_and_halves": params_and_halves,
    "specialized": specialized,
    "specialized_small": lambda: specialized(50),
}


def histogram(n=1009, bins=16):
    """Atomic updates from many threads: atomicAdd on int32."""
    b, bo, bi, ro, ri = halo.vars("b bo bi ro ri")
    inp = halo.ImageParam(halo.uint8, 1, "inp")
    r = halo.RDom((0, n), name="r")
    h = halo.Func("h")
    h[b] = 0
    h[halo.cast(halo.int32, inp[r.x]) % bins] += 1
    h.gpu_tile(b, bo, bi, 16)
    h.update(0).atomic().split(r.x, ro, ri, 128).gpu_blocks(ro).gpu_threads(ri)
    return h, {inp: _image((n,), np.uint8, 0, 256)}, (bins,)


def atomic_max_and_float_sum(n=523, bins=8):
    """Atomic updates without one instruction: max of floats (compare-and-swap loops), and
    float sums (atomicAdd), per bin."""
    b, bo, bi, ro, ri = halo.vars("b bo bi ro ri")
    key = halo.ImageParam(halo.int16, 1, "key")
    val = halo.ImageParam(halo.float32, 1, "val")
    r = halo.RDom((0, n), name="r")
    m = halo.Func("m")
    m[b] = -1e30
    m[halo.cast(halo.int32, key[r.x]) % bins] = halo.max(
        m[halo.cast(halo.int32, key[r.x]) % bins], val[r.x])
    m.gpu_tile(b, bo, bi, 8)
    m.update(0).atomic().split(r.x, ro, ri, 64).gpu_blocks(ro).gpu_threads(ri)
    return m, {key: _image((n,), np.int16, 0, 1000), val: _image((n,))}, (bins,)


def narrow_atomic(n=300, bins=5):
    """A 16-bit atomic update: compare-and-swap on the 32-bit word around it."""
    b, bo, bi, ro, ri = halo.vars("b bo bi ro ri")
    inp = halo.ImageParam(halo.int16, 1, "inp")
    r = halo.RDom((0, n), name="r")
    h = halo.Func("h")
    h[b] = halo.cast(halo.int16, 0)
    h[halo.cast(halo.int32, inp[r.x]) % bins] += inp[r.x]
    h.gpu_tile(b, bo, bi, 8)
    h.update(0).atomic().split(r.x, ro, ri, 32).gpu_blocks(ro).gpu_threads(ri)
    return h, {inp: _image((n,), np.int16, -500, 500)}, (bins,)


def rfactor_rows(shape=(13, 1000)):
    """Row sums made parallel by rfactor: the intermediate over (row, lane) is one kernel,
    the merge over the lanes another."""
    y, yo, yi, u, uo, ui = halo.vars("y yo yi u uo ui")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, shape[1]), name="r")
    total = halo.Func("total")
    total[y] = 0.0
    total[y] = total[y] + inp[y, r.x]
    ro, ri = halo.vars("ro ri")
    total.update(0).split(r.x, ro, ri, 32)
    partial = total.update(0).rfactor(ri, u)
    partial.compute_root().gpu_tile(y, u, yo, uo, yi, ui, 4, 32)
    partial.update(0).gpu_tile(y, u, yo, uo, yi, ui, 4, 32)
    total.gpu_tile(y, yo, yi, 8)
    total.update(0).gpu_tile(y, yo, yi, 8)
    return total, {inp: _image(shape).round()}, (shape[0],)


def rfactor_registers(shape=(37, 11, 50)):
    """Sums over r split among 4 groups of a block's threads (rfactor): each thread's
    partials in registers (the intermediate's `cache_write("local")`), merged through
    shared memory into totals each thread keeps in registers, then scaled. The totals'
    boxes are defined beside the intermediate, outside the totals' own storage."""
    y, x, yo, xo, yi, xi, g, ro, ri = halo.vars("y x yo xo yi xi g ro ri")
    inp = halo.ImageParam(halo.float32, 3, "inp")
    r = halo.RDom((0, shape[2]), name="r")
    total = halo.Func("total")
    total[y, x] = 0.0
    total[y, x] += inp[y, x, r.x]
    out = halo.Func("out")
    out[y, x] = total[y, x] * 2
    out.tile(y, x, yo, xo, yi, xi, 4, 8).gpu_blocks(yo, xo).gpu_threads(yi, xi)
    total.compute_at(out, xo).store_in("local").gpu_threads(y, x)
    total.update(0).split(r.x, ro, ri, 4)
    partial = total.update(0).rfactor(ri, g)
    total.update(0).reorder(y, x, ri).gpu_threads(y, x).unroll(ri)
    local = partial.cache_write("local")
    partial.compute_at(out, xo).gpu_threads(*partial.args)
    local.compute_at(out, xo).store_in("local").gpu_threads(*local.args)
    local.update(0).reorder(ro, *local.args).gpu_threads(*local.args)
    return out, {inp: _image(shape)}, shape[:2]


PIPELINES.update({
    "histogram": histogram,
    "atomic_max_and_float_sum": atomic_max_and_float_sum,
    "narrow_atomic": narrow_atomic,
    "rfactor_rows": rfactor_rows,
    "rfactor_registers": rfactor_registers,
})


def unrolled_registers(shape=(7, 11)):
    """A loop unrolled around a Func computed inside it (the innermost scalar loop, where
    the inline reduction goes): each unrolled copy declares its own register array, in a
    scope of its own (`python -m halo.fuzz --target cuda` found them sharing one)."""
    x, y, xo, xi = halo.vars("x y xo xi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((-2, 5), name="r")
    f, out = halo.Func("f"), halo.Func("out")
    f[y, x] = halo.maximum(inp[y, x + r.x + 2] * halo.cast(halo.float32, r.x))
    out[y, x] = f[y, x] * 2 + f[y, x + 1]
    out.gpu_tile(x, xo, xi, 4).gpu_blocks(y)
    f.compute_at(out, xi).unroll(x)
    h, w = shape
    return out, {inp: _image((h, w + 5))}, shape


def empty_region(n=9):
    """A Func computed per block over a region that is empty (an RDom whose `where`
    holds nowhere): its shared array still has one element, C having no empty arrays."""
    x, xo, xi, rxo, rxi = halo.vars("x xo xi rxo rxi")
    inp = halo.ImageParam(halo.int32, 1, "inp")
    r = halo.RDom((0, 1), (0, 4), name="r")
    r.where(r.y < r.x)
    g, out = halo.Func("g"), halo.Func("out")
    g[x] = inp[x] * 2
    out[x] = x
    out[r.y] += g[r.x + r.y]
    out.gpu_tile(x, xo, xi, 8)
    out.update(0).atomic().split(r.x, rxo, rxi, 4, tail="guard")
    out.update(0).gpu_blocks(rxo).gpu_threads(rxi)
    g.compute_at(out.update(0), rxo).gpu_threads(x)
    return out, {inp: _image((n,), np.int32, -50, 50)}, (n,)


def producer_at_outer_thread_loop(shape=(13, 29)):
    """A Func computed at the outer of two thread loops (between them): every thread of
    the inner loop computes it, and the two loops stay the block's y and x axes
    (`python -m halo.fuzz --target cuda` found the inner one on the same axis as the
    outer, so only the first thread of each row ran)."""
    x, y, xo, yo, xi, yi = halo.vars("x y xo yo xi yi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f, out = halo.Func("f"), halo.Func("out")
    f[y, x] = inp[y, x] * 3 + 1
    out[y, x] = f[y, x] + f[y, x + 1] * 2
    out.gpu_tile(y, x, yo, xo, yi, xi, 4, 8, tail="guard")
    f.compute_at(out, yi)
    h, w = shape
    return out, {inp: _image((h, w + 1))}, shape


def producer_in_vthread(shape=(5, 61)):
    """A Func in shared memory computed at a vthread loop, with thread loops of its own
    whose extent differs from copy to copy (the last tile is clipped): they run as long as
    the longest copy, each copy guarded, and stay the block's y and x axes."""
    x, y, xo, xi, xv, xt = halo.vars("x y xo xi xv xt")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f, out = halo.Func("f"), halo.Func("out")
    f[y, x] = inp[y, x + 1] * 2
    out[y, x] = f[y, x - 1] + f[y + 1, x] * 3 + f[y, x + 1]
    out.split(x, xo, xi, 28, tail="guard").split(xi, xv, xt, 7)
    out.gpu_blocks(y, xo).vthread(xv).gpu_threads(xt)
    f.compute_at(out, xv).gpu_threads(y, x)
    h, w = shape
    return out, {inp: _image((h + 1, w + 2))}, shape


def atomic_in_registers(shape=(7, 19)):
    """An atomic update of a Func computed inside the thread loops: its array is the
    thread's own (registers or local memory), updated without atomics, which CUDA has
    none of for local memory (`python -m halo.fuzz --target cuda` found the launch
    failing)."""
    x, y, xo, xi = halo.vars("x y xo xi")
    inp = halo.ImageParam(halo.int32, 2, "inp")
    r = halo.RDom((0, 5), name="r")
    g, out = halo.Func("g"), halo.Func("out")
    g[y, x] = 0
    g[y, r.x % 3] += inp[y, r.x] * (y + 1)
    out[y, x] = g[y, x % 3] - x
    out.gpu_tile(x, xo, xi, 8).gpu_blocks(y)
    g.compute_at(out, xi).update(0).atomic()
    return out, {inp: _image((shape[0], 5), np.int32, -50, 50)}, shape


PIPELINES.update({
    "atomic_in_registers": atomic_in_registers,
    "producer_in_vthread": producer_in_vthread,
    "producer_at_outer_thread_loop": producer_at_outer_thread_loop,
    "unrolled_registers": unrolled_registers,
    "empty_region": empty_region,
})


def vectorized(shape=(5, 37), lanes=4, tail="guard", dtype=np.float32):
    """Dense vector loads and stores in global memory (`lanes` a thread, a tail of lanes
    past the edge under a predicate); rows of a prime length, so most are misaligned."""
    x, y, xo, yo, xi, yi = halo.vars("x y xo yo xi yi")
    inp = halo.ImageParam(dtype, 2, "inp")
    out = halo.Func("out")
    out[y, x] = inp[y, x] * 3 + inp[y, x + 1] - halo.cast(dtype, y)
    out.gpu_tile(y, x, yo, xo, yi, xi, 2, 8 * lanes, tail=tail).vectorize(xi, lanes)
    h, w = shape
    return out, {inp: _image((h, w + 1), dtype)}, shape


def vectorized_shared(shape=(11, 70)):
    """A stage in shared memory read and written four floats at a time at indices proven
    aligned; the consumer also gathers every other input element (lane by lane)."""
    x, y, xo, yo, xi, yi, fo, fv = halo.vars("x y xo yo xi yi fo fv")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f, out = halo.Func("f"), halo.Func("out")
    f[y, x] = inp[y, x] * 2
    out[y, x] = f[y, x] + inp[y, 2 * x]
    out.gpu_tile(y, x, yo, xo, yi, xi, 4, 64).vectorize(xi, 4)
    f.compute_at(out, xo).store_in("shared").split(x, fo, fv, 4)
    f.gpu_threads(y, fo).vectorize(fv)
    h, w = shape
    return out, {inp: _image((h, 2 * w))}, shape


def vectorized_reduction(shape=(6, 45), k=7):
    """A reduction over r inside a vectorized loop: the loop runs once for all lanes,
    which accumulate in a vector of registers."""
    x, y, xo, yo, xi, yi = halo.vars("x y xo yo xi yi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, k), name="r")
    acc, out = halo.Func("acc"), halo.Func("out")
    acc[y, x] = 0.0
    acc[y, x] += inp[y + r.x, x] * (r.x + 1)
    out[y, x] = acc[y, x]
    out.gpu_tile(y, x, yo, xo, yi, xi, 2, 32).vectorize(xi, 8)
    acc.compute_at(out, xi).vectorize(x).update(0).vectorize(x)
    h, w = shape
    return out, {inp: _image((h + k, w))}, shape


PIPELINES.update({
    "vectorized": vectorized,
    "vectorized_shift_inwards": lambda: vectorized((3, 50), 4, "shift_inwards"),
    "vectorized_three_lanes": lambda: vectorized((4, 29), 3),
    "vectorized_doubles": lambda: vectorized((3, 23), 4, dtype=np.float64),
    "vectorized_halves": lambda: vectorized((2, 71), 8, dtype=np.float16),
    "vectorized_bytes": lambda: vectorized((3, 97), 16, dtype=np.uint8),
    "vectorized_shared": vectorized_shared,
    "vectorized_reduction": vectorized_reduction,
})


def warp_rows(shape=(13, 1000)):
    """A warp a row: each of 32 lanes sums every 32nd column (a guarded tail: 1000 is no
    multiple of 32), then the lanes add their sums by warp shuffles; 4 rows a block.
    The values are whole numbers, so every order of adding them gives the same sums."""
    y, yo, yi, ro, ri = halo.vars("y yo yi ro ri")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, shape[1]), name="r")
    total = halo.Func("total")
    total[y] = 0.0
    total[y] = total[y] + inp[y, r.x]
    total.gpu_tile(y, yo, yi, 4)
    total.update(0).split(r.x, ro, ri, 32).gpu_threads(ri).reorder(ri, ro) \
        .split(y, yo, yi, 4).gpu_blocks(yo).gpu_threads(yi, ri)
    return total, {inp: _image(shape).round()}, (shape[0],)


def warp_merge(shape=(7, 301)):
    """rfactor into 64 partials a row in shared memory, merged by 16 lanes (4 partials
    each, then shuffles of 16-bit integers): the max of each row."""
    y, u, ro, ri, mo, mi = halo.vars("y u ro ri mo mi")
    inp = halo.ImageParam(halo.int16, 2, "inp")
    r = halo.RDom((0, shape[1]), name="r")
    top = halo.Func("top")
    top[y] = halo.int16.min_value()
    top[y] = halo.max(top[y], inp[y, r.x])
    out = halo.Func("out")
    out[y] = top[y] * 2
    out.gpu_blocks(y)
    top.compute_at(out, y)
    top.update(0).split(r.x, ro, ri, 64)
    partial = top.update(0).rfactor(ri, u)
    partial.compute_at(out, y).gpu_threads(u)
    partial.update(0).reorder(u, ro).gpu_threads(u)
    top.update(0).split(ri, mo, mi, 16).gpu_threads(mi).reorder(mi, mo)
    return out, {inp: _image(shape, np.int16, -30000, 30000)}, (shape[0],)


def warp_groups(shape=(11, 8)):
    """Reductions over 8 lanes, 5 rows a block (groups of 8 lanes within a warp, the last
    block's rows guarded): a difference (f - e), and a select-maximum over bytes."""
    y, yo, yi = halo.vars("y yo yi")
    inp = halo.ImageParam(halo.uint8, 2, "inp")
    r = halo.RDom((0, shape[1]), name="r")
    d = halo.Func("d")
    d[y] = 1000
    d[y] = d[y] - halo.cast(halo.int32, inp[y, r.x])
    m = halo.Func("m")
    m[y] = halo.cast(halo.uint8, 0)
    m[y] = halo.select(m[y] < inp[y, r.x], inp[y, r.x], m[y])
    out = halo.Func("out")
    out[y] = d[y] + halo.cast(halo.int32, m[y])
    out.gpu_tile(y, yo, yi, 5)
    for f in (d, m):
        f.compute_at(out, yo).gpu_threads(y)
        f.update(0).gpu_threads(y, r.x)
    return out, {inp: _image(shape, np.uint8, 0, 256)}, (shape[0],)


PIPELINES.update({
    "warp_rows": warp_rows,
    "warp_rows_one": lambda: warp_rows((1, 1)),
    "warp_merge": warp_merge,
    "warp_groups": warp_groups,
})


def warp_over_an_atomic_producer(shape=(5, 23), bins=6):
    """A warp reduction whose threads each compute a producer with an atomic update of
    its own (a row's histogram, in registers): only the reduction's own update decides
    whether its loop is a warp reduction."""
    y, yo, yi, ro, ri = halo.vars("y yo yi ro ri")
    inp = halo.ImageParam(halo.int32, 2, "inp")
    r9 = halo.RDom((0, shape[1]), name="r9")
    hist = halo.Func("hist")
    hist[y, halo.Var("b")] = 0
    hist[y, inp[y, r9.x] % bins] += 1
    r = halo.RDom((0, bins), name="r")
    total = halo.Func("total")
    total[y] = 0
    total[y] += hist[y, r.x] * (r.x + 1)
    total.gpu_tile(y, yo, yi, 4)
    total.update(0).gpu_blocks(y).split(r.x, ro, ri, 2, tail="guard").gpu_threads(ri)
    hist.compute_at(total.update(0), ri)
    hist.update(0).atomic()
    return total, {inp: _image(shape, np.int32, 0, 100)}, (shape[0],)


PIPELINES["warp_over_an_atomic_producer"] = warp_over_an_atomic_producer


def double_buffered(shape=(13, 97), chunk=16, stages=2, dtype=np.float32, lanes=1, reach=1):
    """A block of rows walks its columns `chunk` at a time (a serial loop inside the
    block); each step's input, with the next column's overlap, is staged in shared
    memory `stages` steps ahead (`double_buffer`): asynchronous copies of 4, 8 or 16
    bytes (`lanes` elements a copy), copies at once otherwise (2-byte halves,
    misaligned rows). Each point reads its column and the one `reach` to the right."""
    y, x, yo, yi, xo, xi, v = halo.vars("y x yo yi xo xi v")
    t = {np.float32: halo.float32, np.float16: halo.float16, np.float64: halo.float64}[dtype]
    inp = halo.ImageParam(t, 2, "inp")
    out = halo.Func("out")
    out[y, x] = inp[y, x] + inp[y, x + reach] * 2
    out.split(y, yo, yi, 8).split(x, xo, xi, chunk, tail="guard")
    out.reorder(yo, xo, yi, xi).gpu_blocks(yo).gpu_threads(yi, xi)
    staged = inp.cache_read("shared", [out])
    sy, sx = staged.args
    staged.compute_at(out, xo).double_buffer(stages)
    if lanes > 1:
        staged.split(sx, sx, v, lanes, tail="guard").vectorize(v)
    staged.gpu_threads(sy, sx)
    h, w = shape
    return out, {inp: _image((h, w + reach), dtype)}, shape


def double_buffered_update(shape=(6, 41), chunk=8):
    """A double-buffered Func with an update (its stores stay synchronous: an update
    reads what the copies write)."""
    y, x, yo, yi, xo, xi = halo.vars("y x yo yi xo xi")
    inp = halo.ImageParam(halo.int32, 2, "inp")
    g, out = halo.Func("g"), halo.Func("out")
    g[y, x] = inp[y, x]
    g[y, x] += 3
    out[y, x] = g[y, x] * g[y, x + 2]
    out.split(y, yo, yi, 4).split(x, xo, xi, chunk, tail="guard")
    out.reorder(yo, xo, yi, xi).gpu_blocks(yo).gpu_threads(yi, xi)
    g.compute_at(out, xo).double_buffer(3).gpu_threads(y, x)
    g.update(0).gpu_threads(y, x)
    h, w = shape
    return out, {inp: _image((h, w + 2), np.int32, -50, 50)}, shape


PIPELINES.update({
    "double_buffered": double_buffered,
    "double_buffered_one": lambda: double_buffered((1, 1)),
    "double_buffered_three_stages": lambda: double_buffered((9, 70), 8, 3),
    "double_buffered_halves": lambda: double_buffered((5, 45), 16, 2, np.float16),
    "double_buffered_doubles": lambda: double_buffered((5, 33), 8, 4, np.float64),
    "double_buffered_vectors": lambda: double_buffered((7, 64), 16, 2, np.float32, 4, 0),
    "double_buffered_misaligned": lambda: double_buffered((7, 61), 16, 2, np.float32, 4),
    "double_buffered_update": double_buffered_update,
})


def warp_over_a_regrouped_sum(shape=(9, 13), weights=(2, 4)):
    """A warp reduction of an inline sum over a stencil through a constant exterior:
    inlined and simplified, its update reads `red[y, x] + a * 2 + b * 4`, which is still
    a sum of the Func's own value and a term (found by the GPU fuzzer, seed 20261205);
    with a negative weight, `red[y, x] + a * 2 - b * 4` (seed 20261411)."""
    y, x, xo, xi, ro, ri = halo.vars("y x xo xi ro ri")
    in0 = halo.ImageParam(halo.int16, 2, "in0")
    b9 = halo.boundary.constant_exterior(in0, -1)
    s10, out = halo.Func("s10"), halo.Func("out")
    s10[y, x] = (halo.cast(halo.int32, b9[y - 1, x]) * weights[0]
                 + halo.cast(halo.int32, b9[y + 1, x]) * weights[1])
    r = halo.RDom((0, 2), (0, 2), name="r")
    total = halo.sum(s10[y * 2 + r.x, x * 2 + r.y], name="total")
    out[y, x] = total // 4
    out.gpu_tile(x, xo, xi, 16, tail="guard")
    total.func.compute_root().gpu_tile(x, xo, xi, 7)
    total.func.update(0).gpu_blocks(x).split(r.x, ro, ri, 4, tail="guard").gpu_threads(ri) \
        .reorder(ri, ro).unroll(r.y)
    h, w = shape
    return out, {in0: _image((2 * h, 2 * w), np.int16, -100, 100)}, shape


PIPELINES["warp_over_a_regrouped_sum"] = warp_over_a_regrouped_sum
PIPELINES["warp_over_a_regrouped_difference"] = lambda: warp_over_a_regrouped_sum(
    (7, 11), (2, -4))


def warp_over_an_update_that_adds_nothing(shape=(5, 7)):
    """A warp reduction whose term simplifies to 0 (`(g - g) // g`), so its update stores
    the Func's own value: nothing to reduce (found by the GPU fuzzer, seed 20261301)."""
    y, x, xo, xi, ro, ri = halo.vars("y x xo xi ro ri")
    in0 = halo.ImageParam(halo.int32, 2, "in0")
    g = halo.Func("g")
    g[y, x] = in0[y, x]
    out = halo.Func("out")
    r = halo.RDom((0, 6), name="r")
    out[y, x] = y - x
    out[y, x] += (g[y, r.x] - g[y, r.x]) // g[y, r.x]
    out.gpu_tile(x, xo, xi, 4, tail="guard")
    out.update(0).gpu_blocks(x).split(r.x, ro, ri, 4, tail="guard").gpu_threads(ri)
    h, _ = shape
    return out, {in0: _image((h, 6), np.int32, 1, 100)}, shape


PIPELINES["warp_over_an_update_that_adds_nothing"] = warp_over_an_update_that_adds_nothing
