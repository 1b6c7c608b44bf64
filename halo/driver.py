"""The driver: `Pipeline`, which lowers a pipeline for a target, compiles it through the
backend seam and runs it (`realize`).

`Pipeline([f, g]).realize(shape, inputs=...)` lowers the pipeline, compiles it for the
target (cached by the lowered IR and target), checks the inputs and the regions the code
will touch, and runs it on NumPy arrays without copying them. `Func.realize`, `compile`,
`lower` and `print_loop_nest` are these, for a pipeline of one output.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from halo.errors import HaloError
from halo.ir.deep_stack import run_deep
from halo.ir.printer import loop_nest_to_str
from halo.lang.driver_seam import install_pipeline
from halo.lang.environment import Environment
from halo.lang.func import Func
from halo.lower.pipeline import Lowered, lower
from halo.runtime.kernel import Kernel
from halo.target import Target


class Pipeline:
    """Several output Funcs realized together, over the same region."""

    def __init__(self, outputs: Sequence[Func] | Func):
        self.outputs = [outputs] if isinstance(outputs, Func) else list(outputs)
        if not self.outputs:
            raise HaloError("a Pipeline needs at least one output Func")

    def lower(self, target: str | Target = "host") -> Lowered:
        """The lowered loop nest; `str()` of it is readable Python-like code."""
        return run_deep(f"lowering {self._names()}", _lower, self.outputs, Target.of(target))

    def print_loop_nest(self, target: str | Target = "host") -> None:
        print(loop_nest_to_str(self.lower(target).stmt), end="")

    def compile(self, target: str | Target = "host") -> Kernel:
        target = Target.of(target)
        lowered = self.lower(target)
        return run_deep(f"compiling {self._names()}", Kernel, lowered, target)

    def realize(self, shape=None, inputs=None, target: str | Target = "host", out=None,
                origin=None) -> np.ndarray | list[np.ndarray]:
        """The outputs over the region of `shape` (or of `out`), starting at `origin`."""
        result = self.compile(target).run(shape, out, origin, inputs, {})
        return result[0] if len(self.outputs) == 1 else result

    def _names(self) -> str:
        return ", ".join(f.name for f in self.outputs)


def _lower(outputs: list[Func], target: Target) -> Lowered:
    return lower(Environment.of(outputs), target)


# Func.realize/compile/lower run through this (the language can't import the driver).
install_pipeline(Pipeline)

__all__ = ["Pipeline", "Target", "Kernel"]
