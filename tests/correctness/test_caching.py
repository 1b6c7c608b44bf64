"""cache_read, cache_write and store_in against the reference, on awkward sizes."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from tests.correctness.conftest import assert_matches_reference

y, x, yo, xo, yi, xi = halo.vars("y x yo xo yi xi")
i, j, io, jo, ii, ji = halo.vars("i j io jo ii ji")
SIZES = [(1, 1), (5, 7), (13, 17), (8, 16)]
rng = np.random.default_rng(7)


def blur():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    bx, by = halo.Func("blur_x"), halo.Func("blur_y")
    bx[y, x] = inp[y, x] + inp[y, x + 1] + inp[y, x + 2]
    by[y, x] = bx[y, x] + bx[y + 1, x] + bx[y + 2, x]
    return inp, bx, by


def _image(h, w, pad=2):
    return rng.random((h + pad, w + pad), dtype=np.float32)


def _cache_input_root(inp, bx, by):
    c = inp.cache_read("global")
    assert c.args[0].name == "inp_global_d0"
    return c


def _cache_input_at_tile(inp, bx, by):
    by.tile(y, x, yo, xo, yi, xi, 4, 3)
    bx.compute_at(by, xo)
    c = inp.cache_read("local", readers=[bx])
    c.compute_at(by, xo)


def _cache_input_at_row(inp, bx, by):
    by.split(y, yo, yi, 3, tail="guard")
    bx.compute_at(by, yo)
    inp.cache_read("global", readers=[bx]).compute_at(bx, y)


def _cache_input_inline(inp, bx, by):
    inp.cache_read("global").compute_inline()


def _cache_func_default_readers(inp, bx, by):
    c = bx.cache_read("global")
    c.split(c.args[1], xo, xi, 4).compute_at(by, y)


def _cache_func_compute_at_with_vector(inp, bx, by):
    bx.compute_root()
    by.split(x, xo, xi, 5)
    c = bx.cache_read("local", readers=[by])
    c.compute_at(by, xo).vectorize(x, 4)


def _cache_of_cache(inp, bx, by):
    a = inp.cache_read("global", readers=[bx])
    b = a.cache_read("stack", readers=[bx])
    by.tile(y, x, yo, xo, yi, xi, 2, 3)
    bx.compute_at(by, xo)
    b.compute_at(by, xo)


def _cache_write_pure(inp, bx, by):
    w = bx.cache_write("local")
    assert [v.name for v in w.args] == ["y", "x"]
    by.tile(y, x, yo, xo, yi, xi, 4, 5)
    bx.compute_at(by, xo)
    w.compute_at(by, xo).vectorize(x, 4)


def _cache_write_output(inp, bx, by):
    w = by.cache_write("global")
    by.tile(y, x, yo, xo, yi, xi, 2, 4)
    w.compute_at(by, xo)


CASES = [_cache_input_root, _cache_input_at_tile, _cache_input_at_row, _cache_input_inline,
         _cache_func_default_readers, _cache_func_compute_at_with_vector, _cache_of_cache,
         _cache_write_pure, _cache_write_output]


@pytest.mark.parametrize("schedule", CASES, ids=lambda c: c.__name__.strip("_"))
@pytest.mark.parametrize("shape", SIZES)
def test_cache_schedules_match_reference(schedule, shape):
    """Each cache schedule computes what the algorithm says."""
    inp, bx, by = blur()
    schedule(inp, bx, by)
    assert_matches_reference(by, shape, inputs={inp: _image(*shape)})


def test_cache_read_redirects_only_the_named_readers():
    """Readers not named keep reading the original; both paths give the same values."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    f, g, h = halo.Func("f"), halo.Func("g"), halo.Func("h")
    f[x] = inp[x] + 1
    g[x] = inp[x] * 3
    h[x] = f[x] + g[x]
    f.compute_root()
    g.compute_root()
    c = inp.cache_read("global", readers=[f])
    ir = str(h.lower())
    assert "f[f.s0.x - h.min.0] = inp_global[f.s0.x - h.min.0] + 1" in ir
    assert "g[g.s0.x - h.min.0] = inp[g.s0.x] * 3" in ir  # g still reads the input
    assert c in f.definitions[0].deps and inp not in f.definitions[0].deps
    assert inp in g.definitions[0].deps
    data = np.arange(11, dtype=np.int32) * 7 - 20
    assert_matches_reference(h, (11,), inputs={inp: data}, expected=(data + 1) + data * 3)


def test_cache_read_of_an_update_reader():
    """A reader whose update reads the source (a histogram's input) reads the copy."""
    inp = halo.ImageParam(halo.uint8, 1, "inp")
    r = halo.RDom(inp)
    hist = halo.Func("hist")
    hist[x] = 0
    hist[halo.cast(halo.int32, inp[r.x]) % 16] += 1
    c = inp.cache_read("global", readers=[hist])
    assert any(c in d.deps for d in hist.definitions)
    data = rng.integers(0, 255, size=37, dtype=np.uint8)
    assert_matches_reference(hist, (16,), inputs={inp: data},
                             expected=np.bincount(data % 16, minlength=16).astype(np.int32))


def test_cache_write_of_a_reduction_with_its_update_scheduled():
    """All definitions move to the cache stage; its update stage is scheduled there."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, inp.shape[1]), name="r")
    s = halo.Func("s")
    s[y] = 0.0
    s[y] += inp[y, r] * 2.0
    w = s.cache_write("local")
    assert len(w.definitions) == 2 and len(s.definitions) == 1
    s.split(y, yo, yi, 4)
    w.compute_at(s, yo)
    w.update(0).split(y, yo, yi, 2, tail="guard").reorder(r.x, yo)
    for h, wd in [(1, 1), (7, 3), (13, 5)]:
        a = rng.random((h, wd), dtype=np.float32)
        assert_matches_reference(s, (h,), inputs={inp: a}, expected=a.sum(1) * 2.0)


def test_matmul_with_local_tile_and_packed_panel():
    """C = A @ B with C's tile accumulated in a stack buffer (cache_write("local")) and
    a packed panel of B (cache_read) computed per column tile."""
    A = halo.ImageParam(halo.float32, 2, "A")
    B = halo.ImageParam(halo.float32, 2, "B")
    k = halo.RDom((0, A.shape[1]), name="k")
    C = halo.Func("C")
    C[i, j] = 0.0
    C[i, j] += A[i, k] * B[k, j]
    Bp = B.cache_read("global", readers=[C])
    CL = C.cache_write("local")
    C.tile(i, j, io, jo, ii, ji, 4, 8)
    CL.compute_at(C, jo)
    CL.update(0).reorder(k.x, i, j).vectorize(j, 8)
    Bp.compute_at(C, jo)
    lowered = str(C.lower())
    assert "allocate C_local[32] as float32 in stack" in lowered
    assert "allocate B_global[" in lowered and "in heap" in lowered
    for m, kk, nn in [(7, 5, 13), (1, 1, 1), (16, 3, 24), (9, 11, 8)]:
        a = rng.random((m, kk), dtype=np.float32)
        b = rng.random((kk, nn), dtype=np.float32)
        assert_matches_reference(C, (m, nn), inputs={A: a, B: b}, expected=a @ b, rtol=1e-4)


@pytest.mark.parametrize("depth", [1, 3, 29, 600])
def test_matmul_with_a_stack_panel_as_deep_as_the_reduction(depth):
    """A packed panel of B on the stack, computed per column tile of C: its region spans
    the whole reduction (a width known only at run time), so it takes its size when it
    runs, on the stack while small (up to 16 KiB: depth <= 512 at 8 float32 columns) and
    on the heap past that."""
    A = halo.ImageParam(halo.float32, 2, "A")
    B = halo.ImageParam(halo.float32, 2, "B")
    k = halo.RDom((0, A.shape[1]), name="k")
    C = halo.Func("C")
    C[i, j] = 0.0
    C[i, j] += A[i, k] * B[k, j]
    CL = C.cache_write("local")
    Bp = B.cache_read("stack", readers=[CL])
    C.tile(i, j, io, jo, ii, ji, 4, 8)
    CL.compute_at(C, jo)
    CL.update(0).reorder(k.x, i, j).vectorize(j, 8)
    Bp.compute_at(C, jo)
    assert "allocate B_stack[A.extent.1 * 8] as float32 in stack" in str(C.lower())
    for m, nn in [(7, 13), (1, 1), (9, 8)]:
        a = rng.random((m, depth), dtype=np.float32)
        b = rng.random((depth, nn), dtype=np.float32)
        assert_matches_reference(C, (m, nn), inputs={A: a, B: b}, expected=a @ b, rtol=1e-4)


@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (3, 4099), (2, 9001)])
def test_cache_read_on_the_stack_at_a_row_loop(shape):
    """g.cache_read("stack") computed per row of f: a row as wide as the image (on the
    stack up to 4096 float32 columns, on the heap past that), as Halide allows."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x] * 2.0 + 1.0
    f[y, x] = g[y, x - 1] + g[y, x] * 3.0
    g.compute_root()
    copy = g.cache_read("stack")
    copy.compute_at(f, y)
    assert "in stack" in str(f.lower())
    image = rng.random((shape[0], shape[1] + 1), dtype=np.float32)
    assert_matches_reference(f, shape, inputs={inp: image}, origin=(0, 1))  # reads x - 1


@pytest.mark.parametrize("scope", ["global", "stack", "local", "shared"])
def test_store_in_scopes(scope):
    """Every scope computes the same values; stack/local are stack buffers (sized by the
    tile, even where the image edge clips it), global and shared (on the CPU) heap."""
    inp, bx, by = blur()
    by.tile(y, x, yo, xo, yi, xi, 4, 8)
    bx.compute_at(by, xo).store_in(scope)
    lowered = str(by.lower())
    if scope in ("stack", "local"):
        assert "allocate blur_x[48] as float32 in stack" in lowered  # 6 rows x 8 columns
    else:
        assert "allocate blur_x[blur_x.extent.0 * blur_x.extent.1] as float32 in heap" in \
            lowered
    for shape in SIZES:
        assert_matches_reference(by, shape, inputs={inp: _image(*shape)})


def test_store_in_stack_of_a_whole_row_takes_its_size_at_run_time():
    """A strip as wide as the image has no constant size: its stack buffer is sized when
    it runs (6 rows by the width), until bound() gives it a constant one."""
    inp, bx, by = blur()
    by.split(y, yo, yi, 4)
    bx.compute_at(by, yo).store_in("stack")
    assert "allocate blur_x[blur_x.extent.1 * 6] as float32 in stack" in str(by.lower())
    for shape in SIZES:
        assert_matches_reference(by, shape, inputs={inp: _image(*shape)})
    bx.bound(x, 0, 7)
    assert "allocate blur_x[42] as float32 in stack" in str(by.lower())
    assert_matches_reference(by, (5, 7), inputs={inp: _image(5, 7)})


def test_cache_write_of_a_0d_reduction_and_cache_read_of_a_buffer():
    """A scalar reduction's cache stage, over a Buffer read through its copy."""
    data = rng.random(29, dtype=np.float32)
    buf = halo.Buffer(data, "buf")
    r = halo.RDom(buf)
    total = halo.Func("total")
    total[()] = 0.0
    total[()] += buf[r.x]
    copy = buf.cache_read("global")
    w = total.cache_write("stack")
    assert w.dimensions == 0 and copy.args[0].name == "buf_global_d0"
    assert "allocate total_stack[1] as float32 in stack" in str(total.lower())
    assert_matches_reference(total, (), expected=np.array(data.sum(), np.float32), rtol=1e-4)


def test_cache_write_of_an_implicitly_defined_func():
    """`h[idx] += 1` on an undefined Func: the identity and the update both move."""
    inp = halo.ImageParam(halo.int32, 1, "inp")
    r = halo.RDom(inp)
    h = halo.Func("h")
    h[halo.clamp(inp[r.x], 0, 9)] += 1
    w = h.cache_write("global")
    w.compute_root()
    data = rng.integers(-3, 14, size=41, dtype=np.int32)
    assert_matches_reference(h, (10,), inputs={inp: data},
                             expected=np.bincount(np.clip(data, 0, 9), minlength=10)
                             .astype(np.int32))


def test_cache_read_of_an_input_whose_shape_the_reader_uses():
    """The reader still uses inp.shape after its reads go to the copy."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = inp[y, x] * halo.cast(halo.float32, inp.shape[1])
    c = inp.cache_read("global")
    assert inp in f.definitions[0].deps and c in f.definitions[0].deps
    a = rng.random((3, 5), dtype=np.float32)
    assert_matches_reference(f, (3, 5), inputs={inp: a}, expected=a * 5)
