"""Calling compiled functions: what arguments are accepted, and the InputErrors that stop
wrong ones before any machine code runs."""
from __future__ import annotations

import numpy as np
import pytest

from halo.backends.arguments import Argument
from halo.backends.llvm import CompiledFunction, compile_function
from halo.errors import InputError
from halo.ir.nodes import For, ForKind, Load, Mul, Store, Var, const
from halo.ir.types import bool_, float32, int8, int32, uint8


@pytest.fixture(scope="module")
def copy() -> CompiledFunction:
    """out[i] = inp[i] over float32, with int8, uint8 and bool parameters it ignores."""
    i = Var("i")
    body = For("i", const(0), Var("n"), ForKind.SERIAL, Store("out", i, Load(float32, "inp", i)))
    return compile_function("copy", body, [
        Argument("inp", "buffer", float32), Argument("out", "buffer", float32),
        Argument("n", "scalar", int32), Argument("small", "scalar", int8),
        Argument("byte", "scalar", uint8), Argument("flag", "scalar", bool_)])


def test_accepts_numpy_scalars_and_read_only_inputs(copy):
    """NumPy scalars are valid scalars, and a read-only array is a valid input buffer."""
    inp = np.arange(4, dtype=np.float32)
    inp.flags.writeable = False
    out = np.zeros(4, dtype=np.float32)
    copy(inp, out, np.int64(4), np.int8(-3), np.uint8(200), np.bool_(True))
    np.testing.assert_array_equal(out, inp)


def test_buffers_are_passed_without_copies(copy):
    """The function writes into the caller's array itself, also into a view of a larger one."""
    storage = np.zeros(8, dtype=np.float32)
    copy(np.ones(4, dtype=np.float32), storage[2:6], 4, 0, 0, False)
    np.testing.assert_array_equal(storage, [0, 0, 1, 1, 1, 1, 0, 0])


def arrays() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(4, dtype=np.float32), np.zeros(4, dtype=np.float32)


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda inp, out: (inp.astype(np.float64), out), "must be a NumPy array of float32"),
    (lambda inp, out: ([0.0] * 4, out), "must be a NumPy array of float32"),
    (lambda inp, out: (np.frombuffer(bytearray(17), np.float32, 4, offset=1), out), "aligned"),
    (lambda inp, out: (inp, np.broadcast_to(np.float32(0), (4,))), "read-only"),
    (lambda inp, out: (out, out), "overlap"),
], ids=["dtype", "list", "unaligned", "broadcast output", "same array"])
def test_buffer_checks(copy, mutate, message):
    """Buffers must be aligned arrays of the right dtype that don't overlap."""
    inp, out = mutate(*arrays())
    with pytest.raises(InputError, match=message):
        copy(inp, out, 4, 0, 0, False)


def test_the_advice_for_a_misaligned_buffer_works(copy):
    """It advised np.ascontiguousarray, which returns the same misaligned array; the
    advised np.array(a) copy is aligned and accepted."""
    inp = np.frombuffer(bytearray(17), np.float32, 4, offset=1)
    with pytest.raises(InputError, match=r"pass an aligned copy, np\.array\(a\)"):
        copy(inp, np.zeros(4, np.float32), 4, 0, 0, False)
    copy(np.array(inp), np.zeros(4, np.float32), 4, 0, 0, False)


@pytest.mark.parametrize(("scalars", "message"), [
    ((4, 0, 0, "false"), "'flag' must be a bool"),
    ((2**80, 0, 0, False), r"'n' must be an integer in \[-2147483648, 2147483647\]"),
    ((4, 0, np.uint8(1) + 0j, False), "'byte' must be an integer"),
], ids=["str for bool", "huge int", "complex for uint8"])
def test_scalars_are_checked_as_params_are(copy, scalars, message):
    """The converters use the same check as Params (halo.ir.values.checked_scalar)."""
    with pytest.raises(InputError, match=message):
        copy(*arrays(), *scalars)


def test_strided_views_are_passed_by_their_first_element():
    """A non-contiguous view is passed by the address of its first element, and the
    function's own stride arithmetic walks it, negative strides included."""
    i, stride = Var("i"), Var("stride")
    body = For("i", const(0), Var("n"), ForKind.SERIAL,
               Store("out", i, Load(int32, "inp", Mul(i, stride))))
    gather = compile_function("gather", body, [
        Argument("inp", "buffer", int32), Argument("out", "buffer", int32),
        Argument("n", "scalar", int32), Argument("stride", "scalar", int32)])
    base = np.arange(8, dtype=np.int32)
    for view in (base[1::3], base[::-2]):
        out = np.zeros(len(view), dtype=np.int32)
        gather(view, out, len(view), view.strides[0] // view.itemsize)
        np.testing.assert_array_equal(out, view)


def test_adjacent_views_are_accepted(copy):
    """Views of one array that touch without sharing an element are distinct buffers."""
    storage = np.arange(8, dtype=np.float32)
    copy(storage[:4], storage[4:], 4, 0, 0, False)
    np.testing.assert_array_equal(storage, [0, 1, 2, 3, 0, 1, 2, 3])


def test_overlapping_views_are_rejected(copy):
    """Two views sharing one element break `noalias`, so the call is refused."""
    storage = np.zeros(8, dtype=np.float32)
    with pytest.raises(InputError, match="'inp' and 'out' overlap"):
        copy(storage[:5], storage[4:], 4, 0, 0, False)


def test_written_buffer_must_be_writeable(copy):
    """A read-only array can't receive the function's stores."""
    inp, out = arrays()
    out.flags.writeable = False
    with pytest.raises(InputError, match="'out' is written to"):
        copy(inp, out, 4, 0, 0, False)


@pytest.mark.parametrize(("scalars", "message"), [
    ((4.0, 0, 0, False), "'n' must be an integer"),
    ((4, 128, 0, False), r"'small' must be an integer in \[-128, 127\]"),
    ((4, 0, -1, False), r"'byte' must be an integer in \[0, 255\]"),
    ((4, 0, 0, 1), "'flag' must be a bool"),
], ids=["float for int", "int8 overflow", "negative uint8", "int for bool"])
def test_scalar_checks(copy, scalars, message):
    """Scalars must have the parameter's kind and fit its type."""
    with pytest.raises(InputError, match=message):
        copy(*arrays(), *scalars)


def test_argument_count(copy):
    """A call with the wrong number of values names the expected arguments."""
    with pytest.raises(InputError, match=r"takes 6 arguments \(inp, out, n, small, byte"):
        copy(*arrays(), 4)
