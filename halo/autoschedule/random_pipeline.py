"""Random halo pipelines: seeded, deterministic, printable as a standalone script.

`random_pipeline(seed)` draws a DAG of 2-15 stages from the kinds real pipelines use
(the table in `random_stages`), with the inputs it reads: their shapes (small and awkward:
primes, 1, sizes no split factor divides) and value ranges that keep integer math in
range and gathers in bounds. A `RandomPipeline` is plain data: `source()` is the halo
algorithm as Python code, `build()` executes it into Funcs, `make_inputs()` draws the
input arrays, and `truncated(name)` keeps one stage and what it reads (for shrinking).

    p = random_pipeline(7)
    print(p.source())
    built = p.build()
    inputs = {built.params[k]: v for k, v in p.make_inputs().items()}
    out = built.output.realize(p.output_shape, inputs=inputs, origin=p.output_origin)
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace

import numpy as np

from halo.autoschedule.random_values import Value

DIMS = {1: ("x",), 2: ("y", "x"), 3: ("c", "y", "x")}
AWKWARD_SIZES = (1, 2, 3, 5, 6, 7, 9, 11, 13, 16, 17, 19, 23)
MIN_STAGES, MAX_STAGES = 2, 15
# Kinds that make poor outputs: an input behind a boundary condition is no computation,
# and updates that write a fixed region (histograms, scans) may write outside the output.
NOT_OUTPUTS = ("boundary_input", "histogram", "scan")


@dataclass(frozen=True)
class InputSpec:
    """An ImageParam and the arrays drawn for it: integers in [lo, hi] (float32:
    multiples of 2**-frac in [lo, hi])."""
    name: str
    dtype: str
    shape: tuple[int, ...]
    lo: float
    hi: float
    frac: int = 0

    def value(self) -> Value:
        return Value(self.name, self.dtype, self.lo, self.hi, 0.0, self.frac)

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        scale = 2**self.frac
        ints = rng.integers(int(self.lo * scale), int(self.hi * scale) + 1, self.shape)
        return (ints / scale).astype(self.dtype)


@dataclass(frozen=True)
class StageSpec:
    """One Func of the pipeline: its definition (`lines` of halo source that define
    `name`), what it reads (stage and input names), its dimensionality and the range of
    its values (`value.src` is the name)."""
    name: str
    kind: str
    ndim: int
    value: Value
    lines: tuple[str, ...]
    reads: tuple[str, ...]

    @property
    def dtype(self) -> str:
        return self.value.dtype


@dataclass
class BuiltPipeline:
    """A pipeline's algorithm, executed: its Funcs and ImageParams by name."""
    funcs: dict
    params: dict
    output: object


@dataclass(frozen=True)
class RandomPipeline:
    seed: int
    inputs: tuple[InputSpec, ...]
    stages: tuple[StageSpec, ...]   # producers first; the last one is the output
    height: int
    width: int
    channels: int
    origin_y: int = 0       # the realized box starts here (channels always start at 0:
    origin_x: int = 0       # convolution weights are indexed by the channel)

    @property
    def output(self) -> StageSpec:
        return self.stages[-1]

    @property
    def output_shape(self) -> tuple[int, ...]:
        return {1: (self.width,), 2: (self.height, self.width),
                3: (self.channels, self.height, self.width)}[self.output.ndim]

    @property
    def output_origin(self) -> tuple[int, ...]:
        return {1: (self.origin_x,), 2: (self.origin_y, self.origin_x),
                3: (0, self.origin_y, self.origin_x)}[self.output.ndim]

    def stage(self, name: str) -> StageSpec:
        return next(s for s in self.stages if s.name == name)

    def source(self) -> str:
        """The algorithm as halo Python code (defines the inputs, then every stage)."""
        lines = ["import halo", "", 'c, y, x = halo.vars("c y x")']
        for inp in self.inputs:
            lines.append(f'{inp.name} = halo.ImageParam(halo.{inp.dtype}, {len(inp.shape)}, '
                         f'"{inp.name}")')
        for s in self.stages:
            lines += s.lines
        return "\n".join(lines) + "\n"

    def build(self) -> BuiltPipeline:
        """Execute `source()`: fresh Funcs and ImageParams, named as in the source."""
        namespace: dict = {}
        exec(compile(self.source(), f"<random pipeline {self.seed}>", "exec"), namespace)
        funcs = {s.name: namespace[s.name] for s in self.stages}
        params = {i.name: namespace[i.name] for i in self.inputs}
        return BuiltPipeline(funcs, params, funcs[self.output.name])

    def make_inputs(self, seed: int | None = None) -> dict[str, np.ndarray]:
        """Input arrays by ImageParam name, drawn deterministically from `seed`."""
        rng = np.random.default_rng(self.seed if seed is None else seed)
        return {i.name: i.draw(rng) for i in self.inputs}

    def truncated(self, name: str) -> RandomPipeline:
        """The pipeline whose output is stage `name`: it and what it reads."""
        keep, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n not in keep:
                keep.add(n)
                todo += [r for r in self.stage(n).reads if any(s.name == r for s in self.stages)]
        stages = tuple(s for s in self.stages if s.name in keep)  # producers first, so
        used = {r for s in stages for r in s.reads}                 # `name` comes last
        return replace(self, stages=stages, inputs=tuple(i for i in self.inputs
                                                         if i.name in used))

    def consumers(self, name: str) -> list[StageSpec]:
        return [s for s in self.stages if name in s.reads]


@dataclass
class Drawing:
    """The state of one pipeline being drawn; stage kinds call its methods."""
    rng: random.Random
    channels: int
    inputs: list[InputSpec] = field(default_factory=list)
    stages: list[StageSpec] = field(default_factory=list)
    counter: int = 0
    resamples: int = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def choice(self, seq):
        return self.rng.choice(list(seq))

    def size(self, most: int = 23) -> int:
        return self.choice([s for s in AWKWARD_SIZES if s <= most])

    def new_input(self, ndim: int) -> InputSpec:
        dtype = self.choice(("uint8", "int16", "int32", "float32"))
        lo, hi, frac = {"uint8": (0, 255, 0), "int16": (-300, 300, 0),
                        "int32": (-1000, 1000, 0), "float32": (-8.0, 8.0, 2)}[dtype]
        shape = ((self.channels,) if ndim == 3 else ()) + (self.size(), self.size())
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
        spec = StageSpec(name, kind, ndim, replace(value, src=name), lines, tuple(used))
        self.stages.append(spec)
        return spec

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
        from halo.autoschedule.random_stages import boundary_input
        return boundary_input(self, ndims, dtypes, exact)


def random_pipeline(seed: int, max_stages: int = MAX_STAGES) -> RandomPipeline:
    """A random pipeline of 2..max_stages stages, the same for the same seed."""
    from halo.autoschedule.random_stages import STAGE_KINDS
    rng = random.Random(seed)
    d = Drawing(rng, channels=rng.choice((1, 2, 3, 4)))
    # Stage counts lean small (compile time grows with them) but reach max_stages.
    target = MIN_STAGES + int((max_stages - MIN_STAGES + 1) * rng.random() ** 2)
    kinds = [k for k, _ in STAGE_KINDS]
    weights = [w for _, w in STAGE_KINDS]
    attempts = 0
    while len(d.stages) < target or d.stages[-1].kind in NOT_OUTPUTS:
        attempts += 1
        kind = rng.choices(kinds, weights)[0]
        before = (len(d.stages), len(d.inputs), d.counter)
        if kind(d) is None:
            del d.stages[before[0]:]
            del d.inputs[before[1]:]
        if attempts > 200:
            break
    origin = (rng.randint(-5, 5), rng.randint(-5, 5)) if rng.random() < 0.3 else (0, 0)
    full = RandomPipeline(seed, tuple(d.inputs), tuple(d.stages), d.size(), d.size(),
                          d.channels, *origin)
    return full.truncated(full.stages[-1].name)
