"""Strided vector accesses in the LLVM backend. Loads of a small constant stride read
the span between their first and last lane at once and keep every stride-th element
(vectors.strided_load); strided stores that fill a dense span together are written as
one interleaved store (interleaved_stores.py). The answers match the reference at
awkward sizes, the optimized IR holds the wide access instead of lane-by-lane ones, and
what doesn't qualify is left alone."""
from __future__ import annotations

import re

import numpy as np
import pytest

import halo
from halo.backends.llvm.interleaved_stores import InterleavedRun, interleaved_runs
from halo.ir import nodes as n
from halo.ir.types import int32, uint8
from tests.correctness.conftest import assert_matches_reference

y, x, c = halo.vars("y x c")


def _interleave(channels: int, lanes: int):
    """out[y, x, c] = planes[c, y, x] + c, through `chunky`, stored with x vectorized and
    c unrolled: `channels` stores of stride `channels` per vector of x."""
    planes = halo.ImageParam(halo.uint8, 3, "planes")
    chunky, out = halo.Func("chunky"), halo.Func("out")
    chunky[y, x, c] = planes[c, y, x] + halo.cast(halo.uint8, c)
    out[y, x, c] = chunky[y, x, c]
    chunky.compute_root().bound(c, 0, channels).vectorize(x, lanes).unroll(c)
    out.bound(c, 0, channels)
    return planes, out


def _wide_stores(out: halo.Func, lanes: int) -> int:
    return len(re.findall(rf"store <{lanes} x i8>", out.compile().source()))


@pytest.mark.parametrize("channels", [2, 3, 4])
@pytest.mark.parametrize("columns", [1, 7, 16, 37])
def test_interleaved_stores_match_the_reference(channels, columns):
    planes, out = _interleave(channels, 16)
    data = np.random.default_rng(columns).integers(0, 250, (channels, 5, columns),
                                                   dtype=np.uint8)
    assert_matches_reference(out, (5, columns, channels), inputs={planes: data},
                             expected=data.transpose(1, 2, 0) + np.arange(channels,
                                                                          dtype=np.uint8))


@pytest.mark.parametrize("channels", [2, 3, 4])
def test_the_stores_of_a_vector_become_one_wide_store(channels):
    _, out = _interleave(channels, 16)
    assert _wide_stores(out, 16 * channels) > 0


def test_a_run_that_reads_what_it_writes_stays_store_by_store():
    """The update's value for r = 2 reads what its store for r = 0 wrote: written as one
    store, it would read the old value."""
    planes = halo.ImageParam(halo.uint8, 3, "planes")
    chunky, out = halo.Func("chunky"), halo.Func("out")
    r = halo.RDom((0, 3), name="r")
    chunky[y, x, c] = planes[c, y, x]
    chunky[y, x, r] = chunky[y, x, 2 - r] + halo.cast(halo.uint8, 1)
    out[y, x, c] = chunky[y, x, c]
    chunky.compute_root().bound(c, 0, 3)
    chunky.update(0).reorder(y, x, r).vectorize(x, 16).unroll(r)
    out.bound(c, 0, 3)
    data = np.random.default_rng(0).integers(0, 250, (3, 3, 21), dtype=np.uint8)
    got = assert_matches_reference(out, (3, 21, 3), inputs={planes: data})
    assert got[..., 2].tolist() == (data[2] + 2).tolist()  # r = 0 made c = 0 data[2] + 1
    assert _wide_stores(out, 48) == 0


@pytest.mark.parametrize("stride", [2, 3, 4, -2, 5])
@pytest.mark.parametrize("columns", [1, 7, 16, 37])
def test_strided_loads_match_the_reference(stride, columns):
    """Every stride-th element of a row, forwards or backwards (5: past the dense limit,
    a gather), with guarded tails (masked loads of the enabled lanes' elements)."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    out = halo.Func("out")
    width = abs(stride) * columns
    start = 0 if stride > 0 else width - 1
    out[y, x] = inp[y, start + stride * x] * 2.0 + inp[y, start + stride * x] * x
    xo, xi = halo.vars("xo xi")
    out.split(x, xo, xi, 8, tail="guard").vectorize(xi)
    data = np.random.default_rng(columns).random((3, width), dtype=np.float32)
    picked = data[:, start::stride][:, :columns]
    assert_matches_reference(out, (3, columns), inputs={inp: data},
                             expected=picked * 2 + picked * np.arange(columns, dtype=np.float32))


@pytest.mark.parametrize("stride", [2, 4, -3])
def test_a_strided_load_reads_its_span_once(stride):
    """Vectors load their span's elements at once and shuffle them; an output narrower
    than a vector masks the load to its lanes' elements."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    out = halo.Func("out")
    out[x] = inp[stride * x + 100]
    out.vectorize(x, 8)
    source = out.compile().source()
    span = abs(stride) * 7 + 1
    assert re.search(rf"= load <{span} x float>", source)
    assert re.search(rf"<{span} x float> @llvm\.masked\.load", source)


def _store(offset: int, stride: int = 3, lanes: int = 8, name: str = "b",
           predicate: n.Expr | None = None, value: n.Expr | None = None) -> n.Store:
    base = n.Add(n.Var("i"), n.const(offset, int32))
    return n.Store(name, n.Ramp(base, n.const(stride, int32), lanes),
                   value if value is not None else n.Broadcast(n.const(offset, uint8), lanes),
                   predicate)


def test_a_run_in_any_order_is_found_and_its_stores_sorted_by_offset():
    stores = (_store(2), _store(0), _store(1))
    (run,) = interleaved_runs(stores)
    assert isinstance(run, InterleavedRun) and run.stride == 3
    assert [s.value.value.value for s in run.stores] == [0, 1, 2]


@pytest.mark.parametrize("stores", [
    (_store(0), _store(2), _store(4)),  # a gap: offsets 0, 2, 4 of stride 3
    (_store(0), _store(1)),  # too few to fill the span
    (_store(0), _store(1, name="other"), _store(2)),  # another buffer
    (_store(0), _store(1, lanes=4), _store(2)),  # other lanes
    (_store(0), _store(1, predicate=n.Broadcast(n.const(True), 8)), _store(2)),
], ids=["gap", "short", "buffer", "lanes", "predicate"])
def test_runs_that_do_not_fill_a_span_once_stay_as_they_are(stores):
    assert list(interleaved_runs(stores)) == list(stores)


def test_a_run_whose_value_reads_its_buffer_stays_as_it_is():
    reads = n.Load(uint8.with_lanes(8), "b", n.Ramp(n.Var("i"), n.const(3, int32), 8))
    stores = (_store(0), _store(1, value=reads), _store(2))
    assert list(interleaved_runs(stores)) == list(stores)
