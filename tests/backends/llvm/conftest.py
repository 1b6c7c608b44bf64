"""Fixtures for the LLVM backend tests: compile and run small elementwise kernels."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from halo.backends.arguments import Argument
from halo.backends.llvm import compile_function
from halo.ir.nodes import Expr, For, ForKind, Load, Store, Var, const
from halo.ir.types import as_type, int32

ElementwiseRunner = Callable[..., np.ndarray]


def _run_elementwise(build: Callable[..., Expr], *inputs: np.ndarray) -> np.ndarray:
    """`out[i] = build(in0[i], in1[i], ...)` compiled for the inputs' dtypes and run over
    their (common) length; returns `out`, whose dtype is the type of the built expression."""
    i = Var("i")
    loads = [Load(as_type(a.dtype), f"in{k}", i) for k, a in enumerate(inputs)]
    value = build(*loads)
    body = For("i", const(0), Var("n"), ForKind.SERIAL, Store("out", i, value))
    args = [Argument(f"in{k}", "buffer", as_type(a.dtype)) for k, a in enumerate(inputs)]
    args += [Argument("out", "buffer", value.type), Argument("n", "scalar", int32)]
    out = np.zeros(len(inputs[0]), value.type.numpy)
    compile_function("elementwise", body, args)(*inputs, out, len(out))
    return out


@pytest.fixture
def elementwise() -> ElementwiseRunner:
    """The elementwise kernel runner `_run_elementwise`."""
    return _run_elementwise

