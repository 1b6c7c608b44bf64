"""A random pipeline as plain data: its inputs, its stages (each a Func's definition as
halo source), and the box of the output to realize.

A `RandomPipeline` is what `random_pipeline.random_pipeline(seed)` draws: `source()` is
the halo algorithm as Python code, `build()` executes it into Funcs, `make_inputs()`
draws the input arrays, and `truncated(name)` keeps one stage and what it reads (for
shrinking).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from halo.random_programs.random_values import Value

DIMS = {1: ("x",), 2: ("y", "x"), 3: ("c", "y", "x")}


SPECIAL_FLOATS = (np.nan, np.inf, -np.inf)
SPECIAL_ARRAYS = 0.25   # the fraction of float32 arrays with some NaN and infinities in them
SPECIAL_POINTS = 0.1    # and the fraction of their points that are


@dataclass(frozen=True)
class InputSpec:
    """An ImageParam and the arrays drawn for it: integers in [lo, hi] (float32:
    multiples of 2**-frac in [lo, hi], and, in some arrays if `specials`, NaN and +-inf at
    some points: values outside [lo, hi], which NaN-propagating min/max, clamps and
    the NaN -> 0 cast to integers carry through every stage kind)."""
    name: str
    dtype: str
    shape: tuple[int, ...]
    lo: float
    hi: float
    frac: int = 0

    def value(self) -> Value:
        return Value(self.name, self.dtype, self.lo, self.hi, 0.0, self.frac)

    def draw(self, rng: np.random.Generator, specials: bool = True) -> np.ndarray:
        scale = 2**self.frac
        ints = rng.integers(int(self.lo * scale), int(self.hi * scale) + 1, self.shape)
        values = (ints / scale).astype(self.dtype)
        if specials and self.dtype == "float32" and rng.random() < SPECIAL_ARRAYS:
            where = rng.random(self.shape) < SPECIAL_POINTS
            values[where] = rng.choice(SPECIAL_FLOATS, int(where.sum()))
        return values


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
    reductions: tuple[str, ...] = ()  # the inline reductions it names (their Funcs)

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
        funcs = {r: namespace[r] for s in self.stages for r in (*s.reductions, s.name)}
        params = {i.name: namespace[i.name] for i in self.inputs}
        return BuiltPipeline(funcs, params, funcs[self.output.name])

    def make_inputs(self, seed: int | None = None,
                    specials: bool = True) -> dict[str, np.ndarray]:
        """Input arrays by ImageParam name, drawn deterministically from `seed` (without
        NaN and infinities if not `specials`)."""
        rng = np.random.default_rng(self.seed if seed is None else seed)
        return {i.name: i.draw(rng, specials) for i in self.inputs}

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
