"""The JIT side of the LLVM backend: floating-point contraction, the IR and
assembly text, and engines that stay independent."""
from __future__ import annotations

import numpy as np
import pytest

from halo.backends.arguments import Argument
from halo.backends.llvm import CompiledFunction, compile_function
from halo.ir.nodes import Add, For, ForKind, Load, Mul, Store, Var, const
from halo.ir.types import Type, float32, float64, int32

i, n = Var("i"), Var("n")


def multiply_add(t: Type, name: str = "multiply_add", strict_float: bool = False
                 ) -> CompiledFunction:
    """out[i] = a[i] * b[i] + c[i]"""
    value = Add(Mul(Load(t, "a", i), Load(t, "b", i)), Load(t, "c", i))
    body = For("i", const(0), n, ForKind.SERIAL, Store("out", i, value))
    args = [Argument(name, "buffer", t) for name in ("a", "b", "c", "out")]
    return compile_function(name, body, args + [Argument("n", "scalar", int32)],
                            strict_float=strict_float)


def _run_multiply_add(t: Type, strict_float: bool):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(4096).astype(t.numpy) for _ in range(3))
    out = np.zeros_like(a)
    f = multiply_add(t, strict_float=strict_float)
    f(a, b, c, out, len(out))
    return f, out, a * b + c


@pytest.mark.parametrize("t", [float32, float64], ids=str)
def test_strict_float_rounds_every_operation(t):
    """With strict_float, a * b + c rounds twice, as NumPy does: no fast-math flag at all,
    so no FMA contraction and no reassociation."""
    f, out, expected = _run_multiply_add(t, strict_float=True)
    np.testing.assert_array_equal(out, expected)
    assert "vfmadd" not in f.assembly()
    for flag in ("fast", "reassoc", "contract", "nnan", "ninf", "afn", "arcp"):
        assert f" {flag} " not in f.llvm_ir


@pytest.mark.parametrize("t", [float32, float64], ids=str)
def test_multiply_add_is_fused_by_default(t):
    """By default a * b + c may round once (an FMA instruction on this CPU), as in Halide;
    contraction is the only liberty taken: nothing is reassociated."""
    f, out, expected = _run_multiply_add(t, strict_float=False)
    np.testing.assert_allclose(out, expected, rtol=1e-6 if t == float32 else 1e-14,
                               atol=1e-6 if t == float32 else 1e-14)
    assert "vfmadd" in f.assembly()
    assert " contract " in f.llvm_ir
    for flag in ("fast", "reassoc", "nnan", "ninf", "afn", "arcp"):
        assert f" {flag} " not in f.llvm_ir


def test_llvm_ir_and_assembly_text():
    """llvm_ir is the optimized module defining the function with noalias buffers, and
    assembly() is the host assembly of that function."""
    f = multiply_add(float32, name="kernel_text")
    assert "define void @kernel_text(ptr noalias" in f.llvm_ir
    assert "kernel_text:" in f.assembly()


def test_functions_with_the_same_name_stay_distinct():
    """Two compiled functions of one name keep their own code."""
    def fill(value: int) -> CompiledFunction:
        body = For("i", const(0), n, ForKind.SERIAL, Store("out", i, const(value)))
        return compile_function("fill", body, [Argument("out", "buffer", int32),
                                               Argument("n", "scalar", int32)])

    ones, twos = fill(1), fill(2)
    out = np.zeros(3, dtype=np.int32)
    ones(out, 3)
    np.testing.assert_array_equal(out, 1)
    twos(out, 3)
    np.testing.assert_array_equal(out, 2)
