"""The stage kinds random pipelines are drawn from: one function per kind.

A `Drawing` is the state of one pipeline being drawn. Each kind reads one or more
earlier stages through `Drawing.producer` (which may put a new input behind a boundary
condition: the `boundary_input` kind), defines one Func and returns its `StageSpec`, or
returns None when it doesn't apply (the drawing then tries another kind). Values are
built with `random_values`, which keeps them in the ranges halo defines. `STAGE_KINDS`
at the bottom is the table of kinds and their weights.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace

from halo.random_programs import random_values as rv
from halo.random_programs.pipeline_spec import DIMS, InputSpec, StageSpec
from halo.random_programs.random_values import DTYPES, INT32_LIMIT, Value
from halo.random_programs.size_profile import FUZZ, SizeProfile

COORD_LIMIT = 4096  # |coordinate| of any point a random pipeline computes
BOUNDARIES = ("repeat_edge", "constant_exterior", "mirror_image", "mirror_interior",
              "repeat_image")
INT_DTYPES = ("uint8", "int16", "int32")


@dataclass
class Drawing:
    """The state of one pipeline being drawn; stage kinds call its methods."""
    rng: random.Random
    channels: int
    inputs: list[InputSpec] = field(default_factory=list)
    stages: list[StageSpec] = field(default_factory=list)
    counter: int = 0
    resamples: int = 0
    reductions: list[str] = field(default_factory=list)  # named, for the next stage
    profile: SizeProfile = FUZZ
    image: tuple[int, int] | None = None  # the shared (height, width), once drawn

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def choice(self, seq):
        return self.rng.choice(list(seq))

    def side(self) -> int:
        """An image's height or width."""
        return self.choice(self.profile.sides)

    def extent(self) -> int:
        """A reduction's extent, or a side of the region a histogram or scatter reads."""
        return self.choice(self.profile.extents)

    def image_shape(self) -> tuple[int, int]:
        """(height, width) of an input or of the output: drawn each time, or (a profile
        with `shared_image`) once, halved until `max_points` holds."""
        if not self.profile.shared_image:
            return self.side(), self.side()
        if self.image is None:
            h, w = self.side(), self.side()
            while self.channels * h * w > self.profile.max_points:
                h, w = (h // 2, w) if h >= w else (h, w // 2)
            self.image = (h, w)
        return self.image

    def new_input(self, ndim: int) -> InputSpec:
        dtype = self.choice(("uint8", "int16", "int32", "float32"))
        lo, hi, frac = {"uint8": (0, 255, 0), "int16": (-300, 300, 0),
                        "int32": (-1000, 1000, 0), "float32": (-8.0, 8.0, 2)}[dtype]
        shape = ((self.channels,) if ndim == 3 else ()) + self.image_shape()
        spec = InputSpec(f"in{len(self.inputs)}", dtype, shape, lo, hi, frac)
        self.inputs.append(spec)
        return spec

    def new_weights(self, shape: tuple[int, ...]) -> InputSpec:
        dtype = self.choice(("int16", "float32"))
        lo, hi, frac = (-4, 4, 0) if dtype == "int16" else (-2.0, 2.0, 3)
        spec = InputSpec(f"w{len(self.inputs)}", dtype, shape, lo, hi, frac)
        self.inputs.append(spec)
        return spec

    def add(self, kind: str, ndim: int, value: Value, definition: list[str],
            reads: list[str], name: str) -> StageSpec:
        lines = (f'{name} = halo.Func("{name}")', *definition)
        used = [r for r in dict.fromkeys(reads)
                if any(re.search(rf"\b{r}\b", line) for line in definition)]
        named = tuple(r for r in self.reductions if any(line.startswith(f"{r} = ")
                                                         for line in definition))
        self.reductions.clear()
        spec = StageSpec(name, kind, ndim, replace(value, src=name), lines, tuple(used),
                         named)
        self.stages.append(spec)
        return spec

    def inline_reduction(self, verb: str, src: str, lines: list[str]) -> str:
        """`halo.<verb>(src)` as source. Every other one is named (`red4`): `lines` gets
        the lines that bind its call and its Func, so the Func joins the built pipeline
        and random schedules place it; the call is returned."""
        if self.counter % 2:
            return f"halo.{verb}({src})"
        name = self.fresh("red")
        lines += [f'{name}_call = halo.{verb}({src}, name="{name}")',
                  f"{name} = {name}_call.func"]
        self.reductions.append(name)
        return f"{name}_call"

    def producer(self, ndims=(2, 3), dtypes=None, exact: bool = False) -> StageSpec:
        """A stage to read: a recent one (more likely), or an input behind a boundary
        condition."""
        ok = [s for s in self.stages if s.ndim in ndims and s.kind != "boundary_input"
              and (dtypes is None or s.dtype in dtypes) and (not exact or s.value.exact)]
        if ok and self.rng.random() < 0.8:
            read = {r for s in self.stages for r in s.reads}
            # Recent stages, and above all stages nobody reads yet, so the drawn stages
            # end up in the pipeline rather than being left behind.
            weights = [(i + 1) * (1 if s.name in read else 4 * len(ok))
                       for i, s in enumerate(ok)]
            return self.rng.choices(ok, weights)[0]
        return boundary_input(self, ndims, dtypes, exact)


def _off(var: str, k: int | str) -> str:
    if isinstance(k, str):
        return f"{var} + {k}"
    return var if k == 0 else f"{var} + {k}" if k > 0 else f"{var} - {-k}"


def read(d: Drawing, p: StageSpec, ndim: int, yi: str | None = None, xi: str | None = None,
         ci: str | None = None) -> Value:
    """`p` read from a consumer of `ndim` dimensions at (ci, yi, xi), by default at the
    consumer's own point; a 3-D producer read by a 2-D consumer gives one channel."""
    idx = []
    if p.ndim == 3:
        idx.append(ci or ("c" if ndim == 3 else str(d.rng.randrange(d.channels))))
    if p.ndim >= 2:
        idx.append(yi or "y")
    idx.append(xi or "x")
    return replace(p.value, src=f"{p.name}[{', '.join(idx)}]")


def _lhs(ndim: int) -> str:
    return ", ".join(DIMS[ndim])


def _pure(name: str, ndim: int, value: Value) -> list[str]:
    return [f"{name}[{_lhs(ndim)}] = {value.src}"]


def _const(d: Drawing, dtype: str) -> Value:
    if dtype == "float32":
        return rv.const(dtype, d.choice((-1.5, -0.25, 0.5, 1.0, 2.0, 3.75)))
    return rv.const(dtype, d.rng.randint(0, 9) if dtype == "uint8" else d.rng.randint(-5, 9))


def _coord(d: Drawing, ndim: int, dtype: str) -> Value:
    var = d.choice(DIMS[ndim])
    return rv.cast(Value(var, "int32", -COORD_LIMIT, COORD_LIMIT), dtype)


def condition(d: Drawing, ndim: int, values: list[Value]) -> str:
    """A bool expression: a predicate on coordinates, or a comparison of exact values
    (an inexact float could compare differently under a legal reassociation)."""
    exact = [v for v in values if v.exact]
    if len(exact) >= 2 and d.rng.random() < 0.5:
        a, b = exact[0], exact[1]
        return f"{a.src} {d.choice(('<', '<=', '>', '==', '!='))} {b.src}"
    var = d.choice(DIMS[ndim])
    return d.choice((f"{var} < {d.rng.randint(0, 9)}", f"{var} % {d.rng.randint(2, 4)} == 0",
                     f"({_off(var, d.rng.randint(-3, 3))}) >= 2"))


def _combine(d: Drawing, a: Value, b: Value, ndim: int) -> Value | None:
    ops = ["+", "-", "*", "min", "max", "select", "/"]
    if not a.is_float:
        ops += ["%", "&", "|", "^"]
    op = d.choice(ops)
    if op in "+-*":
        return rv.arith(op, a, b)
    if op in ("min", "max"):
        return rv.minmax(op, a, b)
    if op == "select":
        return rv.select(condition(d, ndim, [a, b]), a, b)
    if op == "/":
        return rv.divide(a, b)
    if op == "%":
        return rv.modulo(a, b)
    return rv.bitwise(op, a, b)


def pointwise(d: Drawing) -> StageSpec | None:
    """Arithmetic of one or two producers, coordinates and constants."""
    p = d.producer()
    ndim = p.ndim if d.rng.random() < 0.8 else d.choice((2, 3))
    dtype = d.choice((p.dtype, p.dtype) + DTYPES)
    leaves = [p] + ([d.producer()] if d.rng.random() < 0.6 else [])
    values = [rv.cast(read(d, q, ndim), dtype) for q in leaves]
    if any(v is None for v in values):
        return None
    e = values[0]
    for _ in range(d.rng.randint(1, 3)):
        e = _combine(d, e, d.choice(values + [_coord(d, ndim, dtype), _const(d, dtype)]), ndim)
    name = d.fresh("s")
    return d.add("pointwise", ndim, e, _pure(name, ndim, e), [q.name for q in leaves], name)


def math(d: Drawing) -> StageSpec | None:
    """A float math function of a producer, scaled."""
    p = d.producer()
    v = rv.cast(read(d, p, p.ndim), "float32")
    if v is None:
        return None
    e = rv.math_call(d.choice(rv.MATH_FUNCTIONS), v)
    if e is None:
        return None
    e = rv.arith(d.choice("+*"), e, _const(d, "float32"))
    name = d.fresh("s")
    return d.add("math", p.ndim, e, _pure(name, p.ndim, e), [p.name], name)


def stencil(d: Drawing) -> StageSpec | None:
    """A weighted sum of unrolled taps: along x, along y, or a 3x3 subset."""
    p = d.producer()
    r = d.rng.randint(1, 2)
    shape = d.choice(("x", "y", "2d"))
    if shape == "x":
        taps = [(0, k) for k in range(-r, r + 1)]
    elif shape == "y":
        taps = [(k, 0) for k in range(-r, r + 1)]
    else:
        taps = d.rng.sample([(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)], d.rng.randint(2, 9))
    dtype = "float32" if p.value.is_float else d.choice(("int32", "int32", p.dtype))
    e = None
    for dy, dx in taps:
        v = rv.cast(read(d, p, p.ndim, _off("y", dy), _off("x", dx)), dtype)
        term = rv.arith("*", v, _const(d, dtype))
        e = term if e is None else rv.arith("+", e, term)
    name = d.fresh("s")
    return d.add("stencil", p.ndim, e, _pure(name, p.ndim, e), [p.name], name)


def _sum_value(src: str, term: Value, count: int, partial: bool = False) -> Value:
    lo, hi = count * term.lo, count * term.hi
    if partial or term.lo > 0:
        lo, hi = min(lo, 0), max(hi, 0)
    return rv.finish(src, term.dtype, lo, hi, rv.reduce_err(term, count), term.frac)


def _bounded_term(term: Value, count: int) -> Value:
    """Clamp a reduction's term so that the sum of `count` of them stays in range."""
    if term.dtype == "int32":
        return rv.clamp_mag(term, INT32_LIMIT // count)
    if term.is_float:
        return rv.clamp_mag(term, rv.FLOAT_LIMIT // count)
    return term


def stencil_rdom(d: Drawing) -> StageSpec | None:
    """Taps over an RDom: an inline halo.sum / maximum, or an update definition."""
    p = d.producer()
    ndim = p.ndim
    r = d.fresh("r")
    ky, kx = d.choice((1, 2, 3)), d.choice((1, 2, 3, 5))
    lines = [f'{r} = halo.RDom(({-(ky // 2)}, {ky}), ({-(kx // 2)}, {kx}), name="{r}")']
    dtype = "float32" if p.value.is_float else d.choice(("int32", "int32", "int16", "uint8"))
    v = rv.cast(read(d, p, ndim, f"y + {r}.x", f"x + {r}.y"), dtype)
    weight = rv.cast(Value(f"({r}.x - {r}.y + 2)", "int32", -2, 6), dtype)
    term = _bounded_term(rv.arith("*", v, weight), ky * kx)
    name = d.fresh("s")
    form = d.choice(("sum", "maximum", "update", "update_where"))
    if form in ("sum", "maximum"):
        call = d.inline_reduction(form, term.src, lines)
        value = (_sum_value(call, term, ky * kx) if form == "sum" else
                 replace(term, src=call))
        return d.add("stencil_rdom", ndim, value, lines + _pure(name, ndim, value), [p.name],
                     name)
    partial = form == "update_where"
    if partial:
        lines.append(f"{r}.where(({r}.x + {r}.y) % 2 == 0)")
    init = _const(d, dtype)
    typed = init.src if dtype in ("int32", "float32") else f"halo.cast(halo.{dtype}, {init.src})"
    lines += [f"{name}[{_lhs(ndim)}] = {typed}", f"{name}[{_lhs(ndim)}] += {term.src}"]
    value = _sum_value(name, term, ky * kx + 1, partial=True)
    return d.add("stencil_rdom", ndim, value, lines, [p.name], name)


def conv(d: Drawing) -> StageSpec | None:
    """A convolution: an RDom over input channels and taps, weights from an input."""
    p = d.producer()
    cin, k = (d.channels if p.ndim == 3 else 1), d.choice((1, 2, 3))
    w = d.new_weights((d.channels, cin, k, k))
    r = d.fresh("r")
    lines = [f'{r} = halo.RDom((0, {cin}), ({-(k // 2)}, {k}), ({-(k // 2)}, {k}), name="{r}")']
    pv = read(d, p, 3, f"y + {r}.y", f"x + {r}.z", f"{r}.x")
    # c is clamped: a schedule may compute the convolution past its channels (round_up).
    wv = replace(w.value(), src=f"{w.name}[halo.clamp(c, 0, {d.channels - 1}), {r}.x, "
                 f"{r}.y + {k // 2}, {r}.z + {k // 2}]")
    dtype = "float32" if pv.is_float or wv.is_float else "int32"
    term = _bounded_term(rv.arith("*", rv.cast(pv, dtype), rv.cast(wv, dtype)), cin * k * k)
    bias = _const(d, dtype)
    name = d.fresh("s")
    lines += [f"{name}[c, y, x] = {bias.src}", f"{name}[c, y, x] += {term.src}"]
    return d.add("conv", 3, _sum_value(name, term, cin * k * k + 1, partial=True), lines,
                 [p.name, w.name], name)


def pool(d: Drawing) -> StageSpec | None:
    """2x2 max or average pooling (a downsample by 2)."""
    if d.resamples >= 2:
        return None
    d.resamples += 1
    p = d.producer()
    r = d.fresh("r")
    lines = [f'{r} = halo.RDom((0, 2), (0, 2), name="{r}")']
    v = read(d, p, p.ndim, f"y * 2 + {r}.x", f"x * 2 + {r}.y")
    if d.rng.random() < 0.5:
        value = replace(v, src=d.inline_reduction("maximum", v.src, lines))
    elif v.is_float:
        s = _sum_value(d.inline_reduction("sum", v.src, lines), v, 4)
        value = rv.arith("*", s, rv.const("float32", 0.25))
    else:
        iv = rv.cast(v, "int32")
        value = rv.divide(_sum_value(d.inline_reduction("sum", iv.src, lines), iv, 4),
                          rv.const("int32", 4))
    name = d.fresh("s")
    return d.add("pool", p.ndim, value, lines + _pure(name, p.ndim, value), [p.name], name)


def resample(d: Drawing) -> StageSpec | None:
    """Nearest or linear upsampling by 2, or decimation by 2."""
    p = d.producer()
    how = d.choice(("up", "up_linear", "down"))
    if how == "down":
        if d.resamples >= 2:
            return None
        d.resamples += 1
        value = read(d, p, p.ndim, "y * 2 + 1", d.choice(("x * 2", "x")))
    elif how == "up":
        value = read(d, p, p.ndim, "y // 2", d.choice(("x // 2", "x")))
    else:
        dtype = "float32" if p.value.is_float else "int32"
        a = rv.cast(read(d, p, p.ndim, "y // 2", "x // 2"), dtype)
        b = rv.cast(read(d, p, p.ndim, "(y + 1) // 2", "(x + 1) // 2"), dtype)
        value = rv.divide(rv.arith("+", a, b), rv.const(dtype, 2))
    name = d.fresh("s")
    return d.add("resample", p.ndim, value, _pure(name, p.ndim, value), [p.name], name)


def transpose(d: Drawing) -> StageSpec | None:
    p = d.producer()
    value = read(d, p, p.ndim, "x", "y")
    name = d.fresh("s")
    return d.add("transpose", p.ndim, value, _pure(name, p.ndim, value), [p.name], name)


def channel_mix(d: Drawing) -> StageSpec | None:
    """Channels mixed by a matrix (3-D -> 3-D), reduced to one (3-D -> 2-D), or made
    from a 2-D stage (2-D -> 3-D)."""
    p = d.producer()
    name = d.fresh("s")
    dtype = "float32" if p.value.is_float else "int32"
    if p.ndim == 2:
        a = rv.cast(read(d, p, 3), dtype)
        scale = rv.cast(Value("(c + 1)", "int32", 1, d.channels), dtype)
        value = rv.select("c == 0", a, rv.arith("*", a, scale))
        return d.add("channel_mix", 3, value, _pure(name, 3, value), [p.name], name)
    if d.rng.random() < 0.5:
        value = None
        for k in range(d.channels):
            term = rv.arith("*", rv.cast(read(d, p, 2, ci=str(k)), dtype), _const(d, dtype))
            value = term if value is None else rv.arith("+", value, term)
        return d.add("channel_mix", 2, value, _pure(name, 2, value), [p.name], name)
    r = d.fresh("r")
    coef = rv.cast(Value(f"(({r}.x + 2 * c) % 3 - 1)", "int32", -1, 1), dtype)
    term = _bounded_term(rv.arith("*", rv.cast(read(d, p, 3, ci=f"{r}.x"), dtype), coef),
                         d.channels)
    lines = [f'{r} = halo.RDom((0, {d.channels}), name="{r}")']
    value = _sum_value(d.inline_reduction("sum", term.src, lines), term, d.channels)
    return d.add("channel_mix", 3, value, lines + _pure(name, 3, value), [p.name], name)


def cast_stage(d: Drawing) -> StageSpec | None:
    p = d.producer()
    dtype = d.choice([t for t in DTYPES if t != p.dtype])
    value = rv.cast(read(d, p, p.ndim), dtype, saturate=d.rng.random() < 0.6)
    if value is None:
        return None
    name = d.fresh("s")
    return d.add("cast", p.ndim, value, _pure(name, p.ndim, value), [p.name], name)


def select_mask(d: Drawing) -> StageSpec | None:
    """A producer where a condition holds, another value elsewhere."""
    p = d.producer()
    a = read(d, p, p.ndim)
    q = d.producer() if d.rng.random() < 0.5 else None
    b = rv.cast(read(d, q, p.ndim), a.dtype) if q is not None else _const(d, a.dtype)
    if b is None:
        return None
    value = rv.select(condition(d, p.ndim, [a, b]), a, b)
    name = d.fresh("s")
    reads = [p.name] + ([q.name] if q is not None else [])
    return d.add("select_mask", p.ndim, value, _pure(name, p.ndim, value), reads, name)


def _boundary_call(d: Drawing, source: str, dtype: str, bounds: str) -> tuple[str, Value | None]:
    fn = d.choice(BOUNDARIES)
    if fn == "constant_exterior":
        outside = _const(d, dtype)
        return f"halo.boundary.constant_exterior({source}, {outside.src}{bounds})", outside
    return f"halo.boundary.{fn}({source}{bounds})", None


def _with_outside(v: Value, outside: Value | None) -> Value:
    """`v`'s range widened by the value a constant_exterior gives outside the box."""
    return v if outside is None else rv.select("", v, outside)


def boundary_func(d: Drawing) -> StageSpec | None:
    """A boundary condition on an intermediate Func, with explicit bounds."""
    p = d.producer()
    box = ([f"(0, {d.channels})"] if p.ndim == 3 else []) + \
        [f"(0, {d.side()})" for _ in range(min(p.ndim, 2))]
    call, outside = _boundary_call(d, p.name, p.dtype, f", bounds=[{', '.join(box)}]")
    value = replace(_with_outside(p.value, outside), src=f"{call}[{_lhs(p.ndim)}]")
    name = d.fresh("s")
    return d.add("boundary_func", p.ndim, value, _pure(name, p.ndim, value), [p.name], name)


def boundary_input(d: Drawing, ndims, dtypes=None, exact: bool = False) -> StageSpec:
    """An input (new or already drawn) read through a boundary condition."""
    ndims = [n for n in ndims if n in (2, 3)] or [2]
    old = [i for i in d.inputs if i.name.startswith("in") and len(i.shape) in ndims
           and (dtypes is None or i.dtype in dtypes)]
    if old and d.rng.random() < 0.6:
        inp = d.choice(old)
    else:
        inp = d.new_input(d.choice(ndims))
        if dtypes is not None and inp.dtype not in dtypes:
            d.inputs[-1] = inp = replace(inp, dtype=d.choice(dtypes), lo=0, hi=255, frac=0)
    ndim = len(inp.shape)
    call, outside = _boundary_call(d, inp.name, inp.dtype, "")
    value = replace(_with_outside(inp.value(), outside), src=f"{call}[{_lhs(ndim)}]")
    name = d.fresh("b")
    return d.add("boundary_input", ndim, value, _pure(name, ndim, value), [inp.name], name)


def scan(d: Drawing) -> StageSpec | None:
    """A recursive update along x or y: prefix sum, running max, or a float IIR."""
    p = d.producer()
    ndim, n = p.ndim, d.rng.randint(1, 12)
    how = d.choice(("sum", "max", "iir") if p.value.is_float else ("sum", "max"))
    init = _bounded_term(read(d, p, ndim), n + 1)
    r = d.fresh("r")
    along = d.choice(("y", "x"))
    idx = [v if v != along else f"{r}.x" for v in DIMS[ndim]]
    prev = [v if v != along else f"{r}.x - 1" for v in DIMS[ndim]]
    here, before = f"[{', '.join(idx)}]", f"[{', '.join(prev)}]"
    name = d.fresh("s")
    if how == "sum":
        update = f"{name}{here} + {name}{before}"
        value = _sum_value(name, init, n + 1, partial=True)
    elif how == "max":
        update = f"halo.max({name}{here}, {name}{before})"
        value = init
    else:
        update = f"{name}{here} * 0.5 + {name}{before} * 0.5"
        value = replace(init, err=init.err + rv.EPS * (n + 1) * init.mag)
    lines = [f'{r} = halo.RDom((1, {n}), name="{r}")', *_pure(name, ndim, init),
             f"{name}{here} = {update}"]
    return d.add("scan", ndim, value, lines, [p.name], name)


def _bin_index(d: Drawing, v: Value, bins: int) -> str | None:
    iv = rv.cast(v, "int32")
    if iv is None:
        return None
    if d.rng.random() < 0.5:
        return f"halo.clamp({iv.src} // {d.rng.randint(1, 40)}, 0, {bins - 1})"
    return f"{iv.src} % {bins}"


def histogram(d: Drawing) -> StageSpec | None:
    """A scatter update: a 1-D histogram of a region, or one histogram per row."""
    p = d.producer(exact=True)
    bins, r = d.rng.randint(3, 20), d.fresh("r")
    name = d.fresh("s")
    if d.rng.random() < 0.5:
        h, w = d.extent(), d.extent()
        index = _bin_index(d, read(d, p, 2, f"{r}.x", f"{r}.y"), bins)
        lines = [f'{r} = halo.RDom((0, {h}), (0, {w}), name="{r}")', f"{name}[x] = 0",
                 f"{name}[{index}] += 1"]
        value, ndim = Value(name, "int32", 0, h * w), 1
    else:
        w = d.extent()
        index = _bin_index(d, read(d, p, 2, "y", f"{r}.x"), bins)
        lines = [f'{r} = halo.RDom((0, {w}), name="{r}")', f"{name}[y, x] = 0",
                 f"{name}[y, {index}] += 1"]
        value, ndim = Value(name, "int32", 0, w), 2
    if index is None:
        return None
    return d.add("histogram", ndim, value, lines, [p.name], name)


def scatter(d: Drawing) -> StageSpec | None:
    """An update whose left side is indexed by its reduction variables: a region of a
    stage added up at transposed or folded points (`s[r.y, r.x // 2] += p[r.x, r.y]`),
    sometimes over a triangle of the region."""
    p = d.producer()
    h, w = d.extent(), d.extent()
    r, name = d.fresh("r"), d.fresh("s")
    dtype = "float32" if p.value.is_float else "int32"
    # the left side, and how many points of the RDom it sends to one point at most
    lhs, hits = d.choice(((f"{r}.y, {r}.x", 1), (f"{r}.x // 2, {r}.y", 2),
                          (f"{r}.x, ({r}.x + {r}.y) % 3", -(-w // 3))))
    term = _bounded_term(rv.cast(read(d, p, 2, f"{r}.x", f"{r}.y"), dtype), hits)
    lines = [f'{r} = halo.RDom((0, {h}), (0, {w}), name="{r}")']
    if d.rng.random() < 0.5:
        lines.append(f"{r}.where({r}.y < {r}.x)")
    lines += [f"{name}[y, x] = {rv.literal(dtype, 0)}", f"{name}[{lhs}] += {term.src}"]
    return d.add("scatter", 2, _sum_value(name, term, hits, partial=True), lines, [p.name],
                 name)


def _int_index(d: Drawing, ndim: int) -> tuple[StageSpec, Value] | None:
    q = d.producer(exact=True)
    iv = rv.cast(read(d, q, ndim), "int32")
    return None if iv is None else (q, iv)


def lut(d: Drawing) -> StageSpec | None:
    """A data-dependent gather through a 1-D stage (a histogram as a lookup table)."""
    tables = [s for s in d.stages if s.ndim == 1]
    found = _int_index(d, 2)
    if not tables or found is None:
        return None
    t, (q, iv) = d.choice(tables), found
    value = replace(t.value, src=f"{t.name}[halo.clamp({iv.src}, 0, {d.rng.randint(0, 19)})]")
    name = d.fresh("s")
    return d.add("lut", 2, value, _pure(name, 2, value), [t.name, q.name], name)


def gather(d: Drawing) -> StageSpec | None:
    """A data-dependent gather with clamped indices, from a stage or straight from an
    input."""
    name = d.fresh("s")
    if d.rng.random() < 0.3:
        found = _int_index(d, 2)
        if found is None:
            return None
        q, iv = found
        inputs = [i for i in d.inputs if i.name.startswith("in") and len(i.shape) == 2]
        inp = d.choice(inputs) if inputs else d.new_input(2)
        value = replace(inp.value(), src=f"{inp.name}[halo.clamp({iv.src}, 0, "
                        f"{inp.name}.shape[0] - 1), halo.clamp(x, 0, {inp.name}.shape[1] - 1)]")
        return d.add("gather", 2, value, _pure(name, 2, value), [q.name, inp.name], name)
    p = d.producer()
    found = _int_index(d, p.ndim)
    if found is None:
        return None
    q, iv = found
    if d.rng.random() < 0.5:
        value = read(d, p, p.ndim, f"halo.clamp({iv.src}, 0, {d.side()})")
    else:
        value = read(d, p, p.ndim, xi=f"x + halo.clamp({iv.src} % 5, 0, 4) - 2")
    return d.add("gather", p.ndim, value, _pure(name, p.ndim, value), [p.name, q.name], name)


def matmul(d: Drawing) -> StageSpec | None:
    """A contraction a[y, k] * b[k, x] over an RDom: an update or an inline sum."""
    a, b = d.producer(ndims=(2,)), d.producer(ndims=(2,))
    k, r = d.extent(), d.fresh("r")
    dtype = "float32" if a.value.is_float or b.value.is_float else "int32"
    av = rv.cast(read(d, a, 2, xi=f"{r}.x"), dtype)
    bv = rv.cast(read(d, b, 2, yi=f"{r}.x"), dtype)
    term = _bounded_term(rv.arith("*", av, bv), k)
    name = d.fresh("s")
    lines = [f'{r} = halo.RDom((0, {k}), name="{r}")']
    if d.rng.random() < 0.5:
        value = _sum_value(d.inline_reduction("sum", term.src, lines), term, k)
        lines += _pure(name, 2, value)
    else:
        value = _sum_value(name, term, k, partial=True)
        lines += [f"{name}[y, x] = {rv.literal(dtype, 0)}", f"{name}[y, x] += {term.src}"]
    return d.add("matmul", 2, value, lines, [a.name, b.name], name)


STAGE_KINDS = [
    (pointwise, 3.0), (math, 1.5), (stencil, 2.0), (stencil_rdom, 1.5), (conv, 1.0),
    (pool, 1.0), (resample, 1.0), (transpose, 0.7), (channel_mix, 1.0), (cast_stage, 1.0),
    (select_mask, 1.0), (boundary_func, 0.7), (scan, 1.0), (histogram, 0.8), (lut, 0.8),
    (gather, 1.0), (matmul, 1.0), (scatter, 0.6),
]
