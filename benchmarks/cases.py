"""The benchmark cases: each app of `apps/` at the size it is measured at.

A case knows how to make its inputs (keyed by the names of the app's ImageParams, which
the Halide twins share), the NumPy implementation that serves as the reference (its
result gives every variant the output's shape and type), and how much error a float
result may carry.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from apps import blur, conv_relu, harris, histogram, matmul, softmax, unsharp


@dataclass(frozen=True)
class Case:
    """One app at one size."""
    app: str  # the module in apps/, and the key of its Halide twin
    size: str  # for people: "4800x6400", "1024^3"
    module: ModuleType
    make_inputs: Callable[[], dict[str, np.ndarray]]
    numpy: Callable[..., np.ndarray]  # called with the inputs as keyword arguments
    rtol: float = 1e-4
    atol: float = 1e-5
    flops: float | None = None  # floating-point operations of one run, where meaningful

    @property
    def label(self) -> str:
        return f"{self.app} {self.size}"


def _blur_inputs() -> dict[str, np.ndarray]:
    return {"inp": np.random.default_rng(0).random((4800, 6400), dtype=np.float32)}


def _matmul_case(n: int) -> Case:
    def make_inputs() -> dict[str, np.ndarray]:
        rng = np.random.default_rng(0)
        return {"A": rng.random((n, n), dtype=np.float32),
                "B": rng.random((n, n), dtype=np.float32)}
    # Sums of n products of numbers in [0, 1): the results are about n / 4, and the
    # float32 rounding of n additions differs between summation orders.
    return Case("matmul", f"{n}^3", matmul, make_inputs, lambda A, B: A @ B,
                rtol=1e-4, atol=1e-3, flops=2.0 * n**3)


_CONV_SHAPE = (1, 64, 64, 56, 56)  # batch, in channels, out channels, height, width
_IMAGE_SHAPE = (3, 1536, 2560)

CASES: list[Case] = [
    Case("blur", "4800x6400", blur, _blur_inputs, lambda inp: blur.numpy_blur(inp),
         rtol=1e-5, atol=1e-6),
    _matmul_case(1024),
    _matmul_case(2048),
    Case("conv_relu", "1x64x56x56, 64 filters 3x3", conv_relu,
         lambda: conv_relu.make_inputs(_CONV_SHAPE), conv_relu.numpy_conv_relu,
         rtol=1e-4, atol=1e-4, flops=2.0 * 64 * 56 * 56 * 64 * 9),
    Case("unsharp", "3x1536x2560", unsharp, lambda: unsharp.make_inputs(_IMAGE_SHAPE),
         unsharp.numpy_unsharp),
    Case("harris", "3x1536x2560", harris, lambda: harris.make_inputs(_IMAGE_SHAPE),
         harris.numpy_harris, atol=1e-6),
    Case("softmax", "4096x1024", softmax, lambda: softmax.make_inputs((4096, 1024)),
         softmax.numpy_softmax, atol=1e-7),
    Case("histogram", "4096x4096 uint8", histogram,
         lambda: histogram.make_inputs((4096, 4096)), histogram.numpy_histogram, rtol=0, atol=0),
]

APPS: list[str] = list(dict.fromkeys(case.app for case in CASES))
