"""Every app's algorithm with its hand schedule computes what NumPy and the reference
interpreter compute.

Sizes are awkward on purpose: 1, primes, and extents that the schedules' tiles, blocks
and vectors don't divide (or exceed), so every tail path runs. Each app is compiled once
and run at all its sizes (the sizes are run-time values), which keeps this file fast.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import pytest

import halo
from apps import blur, conv_relu, harris, histogram, matmul, softmax, unsharp


@dataclass(frozen=True)
class AppCase:
    module: ModuleType
    make_inputs: Callable[[tuple[int, ...]], dict[str, np.ndarray]]
    numpy: Callable[..., np.ndarray]
    output_shape: Callable[[tuple[int, ...]], tuple[int, ...]]
    shapes: list[tuple[int, ...]]
    rtol: float = 1e-5
    atol: float = 1e-5


def _blur_inputs(shape):
    return {"inp": np.random.default_rng(1).random(shape, dtype=np.float32)}


def _matmul_inputs(shape):
    m, k, n = shape
    rng = np.random.default_rng(1)
    return {"A": rng.random((m, k), dtype=np.float32), "B": rng.random((k, n), dtype=np.float32)}


CASES = {
    "blur": AppCase(blur, _blur_inputs, lambda inp: blur.numpy_blur(inp), lambda s: s,
                    [(1, 1), (7, 13), (37, 263)]),
    # (rows of A, inner dimension, columns of B); 1031 x 53 is two tasks of rows, the
    # second guarded, and two column panels, the second shifted inwards
    "matmul": AppCase(matmul, _matmul_inputs, lambda A, B: A @ B, lambda s: (s[0], s[2]),
                      [(1, 1, 1), (7, 5, 13), (31, 17, 11), (1031, 9, 53)]),
    # (batch, in channels, out channels, height, width)
    "conv_relu": AppCase(conv_relu, lambda s: conv_relu.make_inputs(s, seed=1),
                         conv_relu.numpy_conv_relu, lambda s: (s[0], s[2], s[3], s[4]),
                         [(1, 1, 1, 1, 1), (1, 3, 5, 7, 11), (2, 2, 6, 3, 17)],
                         rtol=1e-4),
    # (channels, height, width)
    "unsharp": AppCase(unsharp, lambda s: unsharp.make_inputs(s, seed=1), unsharp.numpy_unsharp,
                       lambda s: s, [(3, 1, 1), (3, 7, 13), (3, 37, 263)], rtol=1e-4),
    "harris": AppCase(harris, lambda s: harris.make_inputs(s, seed=1), harris.numpy_harris,
                      harris.output_shape, [(3, 5, 5), (3, 11, 17), (3, 41, 263)],
                      rtol=1e-4, atol=1e-7),
    "softmax": AppCase(softmax, lambda s: softmax.make_inputs(s, seed=1), softmax.numpy_softmax,
                       lambda s: s, [(1, 1), (7, 13), (37, 53)], atol=1e-7),
    "histogram": AppCase(histogram, lambda s: histogram.make_inputs(s, seed=1),
                         histogram.numpy_histogram, lambda s: (histogram.BINS,),
                         [(1, 1), (7, 13), (37, 53)]),
}


PARAMS = [pytest.param(name, shape, id=f"{name}-{'x'.join(map(str, shape))}")
          for name, case in CASES.items() for shape in case.shapes]


@functools.cache
def _compiled(name: str):
    """The app's output Func, its ImageParams, and its hand-scheduled kernel."""
    case = CASES[name]
    *params, output, funcs = case.module.algorithm()
    case.module.schedule(funcs)
    return output, params, output.compile()


@pytest.mark.parametrize(("name", "shape"), PARAMS)
def test_hand_schedule_matches_numpy_and_reference(name, shape):
    """The app's hand schedule, run, equals NumPy's result and halo.reference."""
    case = CASES[name]
    output, params, kernel = _compiled(name)
    arrays = case.make_inputs(shape)
    out_shape = case.output_shape(shape)
    got = kernel(out_shape, **arrays)
    reference = halo.reference(output, out_shape, inputs={p: arrays[p.name] for p in params})
    for expected in (case.numpy(**arrays), reference):
        assert got.shape == expected.shape and got.dtype == expected.dtype
        if np.issubdtype(got.dtype, np.floating):
            np.testing.assert_allclose(got, expected, rtol=case.rtol, atol=case.atol)
        else:
            np.testing.assert_array_equal(got, expected)
