"""Halide twins of the halo apps: the same algorithm and the same loop nest, in Halide.

Each app of `apps/` has here its algorithm written with Halide's Python bindings and its
hand schedule translated call by call. Two rules make a twin the *same* loop nest:

- **Axes reversed.** Halide lists dimensions innermost first (`f[x, y]`, `reorder(xi,
  yi, ...)`, `tile(x, y, ...)`, `RDom` with `r.x` innermost); halo lists them outermost
  first, in NumPy order. So `f[y, x]` becomes `f[x, y]`, a halo
  `reorder(yo, xo, yi, xi)` becomes `reorder(xi, yi, xo, yo)`, and a halo
  `RDom((0, C), (0, 3), (0, 3))` (ci outermost) becomes `RDom([(0, 3), (0, 3), (0, C)])`
  whose `r.z` is ci. NumPy arrays are handed over as `hl.Buffer(array)`, which reverses
  the axes too, so the same arrays serve both.
- **Tails spelled out.** halo's default tail is shift_inwards for pure stages and guard
  for updates; Halide's `Auto` rounds up the pure loops of updates. Every split below
  names its tail (`SHIFT` or `GUARD`), as halo's `"auto"` would choose it.

The Python-level math (luma, Gaussian taps, Sobel, box sums, the Harris response) comes
from the apps' own helpers, which take any expression type, so both sides compute the
same expressions with the same float32 constants.

`compile_hand_scheduled` returns a `HalideRun`: a function that runs the compiled
pipeline on NumPy arrays without copying them; `compile_autoscheduled` returns one inside
an `Autoscheduled`, with the schedule the autoscheduler wrote and the time it took.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import halide as hl
import numpy as np

from apps import blur, conv_relu, harris, histogram, matmul, softmax, unsharp

# The apps' helpers multiply by Python floats; Halide takes them as float32 (as halo
# and NumPy do) but warns about the lost float64 precision each time.
warnings.filterwarnings("ignore", message="The floating-point value", category=RuntimeWarning)

SHIFT = hl.TailStrategy.ShiftInwards
GUARD = hl.TailStrategy.GuardWithIf
F32 = hl.Float(32)


@dataclass
class HalideApp:
    """A Halide pipeline: its output, its ImageParams (named like the halo app's, in the
    order the compiled function takes them), and its stages by name for scheduling."""
    output: hl.Func
    params: list[hl.ImageParam]
    funcs: dict[str, hl.Func | hl.RDom]


def named_vars(names: str) -> list[hl.Var]:
    """Vars by name, like `halo.vars("y x")`: Halide identifies loops by their names."""
    return [hl.Var(name) for name in names.split()]


# ------------------------------------------------------------------------------- blur

def blur_algorithm() -> HalideApp:
    x, y = named_vars("x y")
    inp = hl.ImageParam(F32, 2, "inp")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    blur_x, blur_y = hl.Func("blur_x"), hl.Func("blur_y")
    third = float(blur.ONE_THIRD)
    blur_x[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) * third
    blur_y[x, y] = (blur_x[x, y - 1] + blur_x[x, y] + blur_x[x, y + 1]) * third
    return HalideApp(blur_y, [inp], {"blur_x": blur_x, "blur_y": blur_y})


def blur_schedule(app: HalideApp) -> None:
    # halo: blur_y.tile(y, x, yo, xo, yi, xi, 32, 256).parallel(yo).vectorize(xi, 8)
    #       blur_x.compute_at(blur_y, xo).vectorize(x, 8)
    x, y, xo, yo, xi, yi = named_vars("x y xo yo xi yi")
    blur_y, blur_x = app.funcs["blur_y"], app.funcs["blur_x"]
    blur_y.tile(x, y, xo, yo, xi, yi, 256, 32, SHIFT).parallel(yo).vectorize(xi, 8, SHIFT)
    blur_x.compute_at(blur_y, xo).vectorize(x, 8, SHIFT)


# ----------------------------------------------------------------------------- matmul

def matmul_algorithm() -> HalideApp:
    # halo's C.cache_write("local") is this C_local (the reduction) and C its copy-out.
    i, j = named_vars("i j")
    a = hl.ImageParam(F32, 2, "A")  # NumPy A[i, k] is Halide A[k, i]
    b = hl.ImageParam(F32, 2, "B")
    k = hl.RDom([(0, a.dim(0).extent())], "k")
    local, c = hl.Func("C_local"), hl.Func("C")
    local[j, i] = hl.f32(0)
    local[j, i] += a[k.x, i] * b[j, k.x]
    c[j, i] = local[j, i]
    return HalideApp(c, [a, b], {"C": c, "C_local": local, "k": k})


def matmul_schedule(app: HalideApp) -> None:
    # halo (rows, columns, blocks = matmul.blocking(); lanes = columns // 3):
    #       C_local = C.cache_write("local")
    #       B_panel = B.cache_read("global", [C_local])
    #       C.split(j, jo, ji, columns).split(i, ib, iii, rows)
    #       C.split(ib, io, ii, blocks, tail="guard")
    #       C.reorder(jo, io, ii, iii, ji).fuse(jo, io, t).parallel(t)
    #       C.vectorize(ji, lanes).unroll(ji).unroll(iii)
    #       C_local.compute_at(C, ii).vectorize(j, lanes).unroll(i)
    #       C_local.update(0).reorder(k.x, i, j).vectorize(j, lanes).unroll(j).unroll(i)
    #       B_panel.compute_at(C, t).vectorize(B_panel.args[1], lanes)
    i, j, io, jo, ib, ii, ji, iii, t = named_vars("i j io jo ib ii ji iii t")
    c, local, k = app.funcs["C"], app.funcs["C_local"], app.funcs["k"]
    rows, columns, blocks = matmul.blocking()
    lanes = columns // 3
    panel = app.params[1].in_(local)
    c.split(j, jo, ji, columns, SHIFT).split(i, ib, iii, rows, SHIFT)
    c.split(ib, io, ii, blocks, GUARD)
    c.reorder(ji, iii, ii, io, jo).fuse(io, jo, t).parallel(t)
    c.vectorize(ji, lanes).unroll(ji).unroll(iii)
    local.compute_at(c, ii).vectorize(j, lanes, SHIFT).unroll(i)
    local.update().reorder(j, i, k.x).vectorize(j, lanes, GUARD).unroll(j).unroll(i)
    panel.compute_at(c, t).vectorize(panel.args()[0], lanes, GUARD)


# -------------------------------------------------------------------------- conv_relu

def conv_relu_algorithm() -> HalideApp:
    n, co, y, x = named_vars("n co y x")
    image = hl.ImageParam(F32, 4, "image")  # [x, y, ci, n]
    weights = hl.ImageParam(F32, 4, "weights")  # [kx, ky, ci, co]
    bias = hl.ImageParam(F32, 1, "bias")
    padded = hl.BoundaryConditions.constant_exterior(image, 0.0)
    r = hl.RDom([(0, 3), (0, 3), (0, image.dim(2).extent())], "r")  # kx, ky, ci
    kx, ky, ci = r.x, r.y, r.z
    conv = hl.Func("conv")
    conv[x, y, co, n] = bias[co]
    conv[x, y, co, n] += weights[kx, ky, ci, co] * \
        padded[x + kx - 1, y + ky - 1, ci, n]
    relu = hl.Func("relu")
    relu[x, y, co, n] = hl.max(conv[x, y, co, n], 0.0)
    return HalideApp(relu, [image, weights, bias],
                     {"relu": relu, "conv": conv, "padded": padded, "r": r})


def conv_relu_schedule(app: HalideApp) -> None:
    # halo (vector = conv_relu.vector()):
    #       relu.split(co, coo, coi, 4).split(y, yo, yi, 2).split(x, xo, xi, vector)
    #           .reorder(n, coo, yo, xo, coi, yi, xi)
    #           .vectorize(xi).unroll(yi).unroll(coi).parallel(coo)
    #       conv.compute_at(relu, xo).vectorize(x).unroll(y).unroll(co)
    #       conv.update(0).reorder(n, r.x, r.y, r.z, co, y, x)   # n, ci, ky, kx, ...
    #           .vectorize(x).unroll(y).unroll(co)
    #       padded.compute_root().parallel(ci).vectorize(x, vector)
    n, co, y, x, coo, coi, yo, yi, xo, xi = named_vars("n co y x coo coi yo yi xo xi")
    relu, conv, padded, r = (app.funcs[k] for k in ("relu", "conv", "padded", "r"))
    channels, rows, vector = conv_relu.CHANNEL_BLOCK, conv_relu.ROW_BLOCK, conv_relu.vector()
    relu.split(co, coo, coi, channels, SHIFT).split(y, yo, yi, rows, SHIFT) \
        .split(x, xo, xi, vector, SHIFT).reorder(xi, yi, coi, xo, yo, coo, n) \
        .vectorize(xi).unroll(yi).unroll(coi).parallel(coo)
    conv.compute_at(relu, xo).vectorize(x).unroll(y).unroll(co)
    conv.update(0).reorder(x, y, co, r.x, r.y, r.z, n).vectorize(x).unroll(y).unroll(co)
    px, _, pci, _ = padded.args()
    padded.compute_root().parallel(pci).vectorize(px, vector, SHIFT)


# ---------------------------------------------------------------------------- unsharp

def unsharp_algorithm() -> HalideApp:
    c, y, x = named_vars("c y x")
    image = hl.ImageParam(F32, 3, "image")  # [x, y, c]
    clamped = hl.BoundaryConditions.repeat_edge(image)
    gray, blur_y, blur_x = hl.Func("gray"), hl.Func("blur_y"), hl.Func("blur_x")
    gray[x, y] = unsharp.luma(lambda i: clamped[x, y, i])
    blur_y[x, y] = unsharp.gaussian(lambda k: gray[x, y + k])
    blur_x[x, y] = unsharp.gaussian(lambda k: blur_y[x + k, y])
    sharpen, ratio, output = hl.Func("sharpen"), hl.Func("ratio"), hl.Func("output")
    sharpen[x, y] = 2 * gray[x, y] - blur_x[x, y]
    ratio[x, y] = sharpen[x, y] / gray[x, y]
    output[x, y, c] = ratio[x, y] * image[x, y, c]
    return HalideApp(output, [image], {"output": output, "ratio": ratio, "blur_y": blur_y,
                                       "gray": gray})


def unsharp_schedule(app: HalideApp) -> None:
    # halo: output.split(y, yo, yi, 32).split(x, xo, xi, 256)
    #           .reorder(yo, xo, yi, c, xi).parallel(yo).vectorize(xi, 8)
    #       gray, blur_y, ratio: .compute_at(output, xo).vectorize(x, 8)
    c, y, x, yo, xo, yi, xi = named_vars("c y x yo xo yi xi")
    output = app.funcs["output"]
    output.split(y, yo, yi, unsharp.TILE_ROWS, SHIFT) \
        .split(x, xo, xi, unsharp.TILE_COLUMNS, SHIFT) \
        .reorder(xi, c, yi, xo, yo).parallel(yo).vectorize(xi, unsharp.VECTOR, SHIFT)
    for name in ("gray", "blur_y", "ratio"):
        app.funcs[name].compute_at(output, xo).vectorize(x, unsharp.VECTOR, SHIFT)


# ----------------------------------------------------------------------------- harris

def harris_algorithm() -> HalideApp:
    y, x = named_vars("y x")
    image = hl.ImageParam(F32, 3, "image")  # [x, y, c]
    clamped = hl.BoundaryConditions.repeat_edge(image)  # as in the halo app
    gray, ix, iy = hl.Func("gray"), hl.Func("Ix"), hl.Func("Iy")
    gray[x, y] = harris.luma(lambda c: clamped[x, y, c])
    ix[x, y] = harris.sobel_x(lambda dy, dx: gray[x + dx, y + dy])
    iy[x, y] = harris.sobel_y(lambda dy, dx: gray[x + dx, y + dy])
    sxx, syy, sxy = hl.Func("Sxx"), hl.Func("Syy"), hl.Func("Sxy")
    sxx[x, y] = harris.box3x3(lambda dy, dx: ix[x + dx, y + dy] * ix[x + dx, y + dy])
    syy[x, y] = harris.box3x3(lambda dy, dx: iy[x + dx, y + dy] * iy[x + dx, y + dy])
    sxy[x, y] = harris.box3x3(lambda dy, dx: ix[x + dx, y + dy] * iy[x + dx, y + dy])
    response = hl.Func("harris")
    response[x, y] = harris.response(sxx[x, y], syy[x, y], sxy[x, y])
    output = hl.Func("output")
    output[x, y] = response[x + 2, y + 2]
    return HalideApp(output, [image], {"output": output, "gray": gray, "Ix": ix, "Iy": iy})


def harris_schedule(app: HalideApp) -> None:
    # halo (lanes = harris.vector()):
    #   output.split(y, yo, yi, 32).parallel(yo).vectorize(x, lanes)
    #   gray, Iy, Ix: .store_at(output, yo).compute_at(output, yi).vectorize(x, lanes)
    y, x, yo, yi = named_vars("y x yo yi")
    lanes = harris.vector()
    output = app.funcs["output"]
    output.split(y, yo, yi, harris.STRIP_ROWS, SHIFT).parallel(yo).vectorize(x, lanes, SHIFT)
    for name in ("gray", "Iy", "Ix"):
        app.funcs[name].store_at(output, yo).compute_at(output, yi).vectorize(x, lanes, SHIFT)


# ---------------------------------------------------------------------------- softmax

def softmax_algorithm() -> HalideApp:
    i, j = named_vars("i j")
    x = hl.ImageParam(F32, 2, "x")  # [j, i]
    r = hl.RDom([(0, x.dim(0).extent())], "r")
    row_max = hl.Func("row_max")
    row_max[i] = F32.min()
    row_max[i] = hl.max(row_max[i], x[r.x, i])
    e = hl.Func("e")
    e[j, i] = hl.exp(x[j, i] - row_max[i])
    row_sum = hl.Func("row_sum")
    row_sum[i] = hl.f32(0)
    row_sum[i] += e[r.x, i]
    inverse = hl.Func("inverse")
    inverse[i] = 1 / row_sum[i]
    out = hl.Func("softmax")
    out[j, i] = e[j, i] * inverse[i]
    return HalideApp(out, [x], {"softmax": out, "inverse": inverse, "row_sum": row_sum,
                                "e": e, "row_max": row_max, "r": r})


def softmax_schedule(app: HalideApp) -> None:
    # halo (lanes = softmax.vector()):
    #   softmax.parallel(i).vectorize(j, lanes); e.compute_at(softmax, i).vectorize(j, lanes)
    #   inverse.compute_at(softmax, i)
    #   row_max, row_sum: .compute_at(softmax, i); .update(0).split(r.x, ro, ri, lanes)
    #     partial = .update(0).rfactor(ri, u)
    #     partial.compute_at(softmax, i).vectorize(u).update(0).reorder(ro, u).vectorize(u)
    i, j, u = named_vars("i j u")
    lanes = softmax.vector()
    out = app.funcs["softmax"]
    out.parallel(i).vectorize(j, lanes, SHIFT)
    app.funcs["e"].compute_at(out, i).vectorize(j, lanes, SHIFT)
    app.funcs["inverse"].compute_at(out, i)
    r = app.funcs["r"]
    for name in ("row_max", "row_sum"):
        reduction = app.funcs[name]
        reduction.compute_at(out, i)
        rvo, rvi = hl.RVar("ro"), hl.RVar("ri")
        partial = reduction.update(0).split(r.x, rvo, rvi, lanes, GUARD).rfactor(rvi, u)
        partial.compute_at(out, i).vectorize(u)
        partial.update(0).reorder(u, rvo).vectorize(u)


# -------------------------------------------------------------------------- histogram

def histogram_algorithm() -> HalideApp:
    (b,) = named_vars("b")
    image = hl.ImageParam(hl.UInt(8), 2, "image")  # [x, y]
    r = hl.RDom([(0, image.dim(0).extent()), (0, image.dim(1).extent())], "r")  # x, y
    hist = hl.Func("hist")
    hist[b] = hl.i32(0)
    hist[hl.cast(hl.Int(32), image[r.x, r.y])] += 1
    return HalideApp(hist, [image], {"hist": hist, "r": r})


def histogram_schedule(app: HalideApp) -> None:
    # halo: hist.vectorize(b, 8)
    #       hist.update(0).split(r.x, ro, ri, ROWS)      (halo's r.x is the rows: r.y here)
    #       intm = hist.update(0).rfactor(ro, u)
    #       intm.compute_root().vectorize(b, 8).update(0).parallel(u)
    #       hist.update(0).reorder(ro, b).vectorize(b, 8)
    b, u = named_vars("b u")
    ro, ri = hl.RVar("ro"), hl.RVar("ri")
    hist, r = app.funcs["hist"], app.funcs["r"]
    hist.vectorize(b, 8, SHIFT)
    hist.update(0).split(r.y, ro, ri, histogram.ROWS, GUARD)
    intm = hist.update(0).rfactor(ro, u)
    intm.compute_root().vectorize(b, 8, SHIFT)
    intm.update(0).parallel(u)
    hist.update(0).reorder(b, ro).vectorize(b, 8, GUARD)


TWINS: dict[str, tuple[Callable[[], HalideApp], Callable[[HalideApp], None]]] = {
    "blur": (blur_algorithm, blur_schedule),
    "matmul": (matmul_algorithm, matmul_schedule),
    "conv_relu": (conv_relu_algorithm, conv_relu_schedule),
    "unsharp": (unsharp_algorithm, unsharp_schedule),
    "harris": (harris_algorithm, harris_schedule),
    "softmax": (softmax_algorithm, softmax_schedule),
    "histogram": (histogram_algorithm, histogram_schedule),
}


# -------------------------------------------------------------------------- compiling

class HalideRun:
    """A compiled pipeline bound to its input arrays: `run(out)` fills `out`.

    The inputs are wrapped once, without copying, so a call costs what calling a
    compiled Halide function from Python costs."""

    def __init__(self, app: HalideApp, inputs: dict[str, np.ndarray]):
        self.function = app.output.compile_to_callable(app.params, jit_target())
        self.inputs = [hl.Buffer(inputs[p.name()]) for p in app.params]
        self._out: tuple[np.ndarray, hl.Buffer] | None = None

    def __call__(self, out: np.ndarray) -> None:
        if self._out is None or self._out[0] is not out:
            self._out = (out, hl.Buffer(out))
        self.function(*self.inputs, self._out[1])


def jit_target() -> hl.Target:
    """The host with all its SIMD features, as halo's "host" target."""
    return hl.get_jit_target_from_environment()


def compile_hand_scheduled(app_name: str, inputs: dict[str, np.ndarray]) -> HalideRun:
    algorithm, schedule = TWINS[app_name]
    app = algorithm()
    schedule(app)
    return HalideRun(app, inputs)


@dataclass
class Autoscheduled:
    """A pipeline a Halide autoscheduler scheduled: the run, the schedule it wrote (as
    Halide C++), and the seconds it took to choose the schedule and to compile it."""
    run: HalideRun
    source: str
    search_s: float
    compile_s: float


def compile_autoscheduled(app_name: str, inputs: dict[str, np.ndarray],
                          output_shape: tuple[int, ...], threads: int,
                          autoscheduler: str,
                          options: dict[str, str] | None = None) -> Autoscheduled:
    """The algorithm scheduled by `autoscheduler` (Adams2019, Mullapudi2016 or Li2018:
    the plugins the wheel ships) for these input and output sizes; `options` are more of
    its parameters (Adams2019's `beam_size`, `random_dropout`, `random_dropout_seed`)."""
    load_autoscheduler(autoscheduler)
    app = TWINS[app_name][0]()
    for param in app.params:
        param.set_estimates([(0, extent) for extent in reversed(inputs[param.name()].shape)])
    app.output.set_estimates([(0, extent) for extent in reversed(output_shape)])
    params = hl.AutoschedulerParams(autoscheduler,
                                    {"parallelism": str(threads), **(options or {})})
    start = time.perf_counter()
    result = hl.Pipeline(app.output).apply_autoscheduler(jit_target(), params)
    searched = time.perf_counter()
    run = HalideRun(app, inputs)
    return Autoscheduled(run, result.schedule_source, searched - start,
                         time.perf_counter() - searched)


_loaded: set[str] = set()


def load_autoscheduler(name: str) -> None:
    """Load the plugin of autoscheduler `name` that ships in the halide wheel (once per
    process)."""
    if name in _loaded:
        return
    library = os.path.join(hl.install_dir(), "lib64", f"libautoschedule_{name.lower()}.so")
    if not os.path.exists(library):
        raise FileNotFoundError(f"the halide package has no {library}")
    hl.load_plugin(library)
    _loaded.add(name)


def loop_nest(app_name: str) -> str:
    """The hand-scheduled twin's loop nest as Halide prints it (innermost loops last),
    to read side by side with halo's. Halide writes it from C++ to the process's standard
    error, so it is captured at the file descriptor."""
    algorithm, schedule = TWINS[app_name]
    app = algorithm()
    schedule(app)
    with tempfile.TemporaryFile(mode="w+") as capture:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            app.output.print_loop_nest()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        return capture.read()
