"""vectorize_loops: vectorized loops become vector code (ramps, broadcasts, masks), or
stay serial loops when their body has no vector form."""
from __future__ import annotations

import halo
from halo.analysis.simplify import simplify
from halo.ir import nodes as n
from halo.ir.nodes import ForKind

from .conftest import lower_until, nodes_of

y, x, xo, xi = halo.vars("y x xo xi")


def vectorized(f: halo.Func) -> n.Stmt:
    # Without partition_loops, which would take the tail guards out of the vector loops.
    stmt, _ = lower_until(f, "vectorize_loops", skip=("partition_loops",))
    return stmt


def test_dense_loads_and_stores_become_stride_one_ramps():
    """inp[y, x + 1] in a loop vectorized by 8 over x loads a ramp of stride 1, and the
    store writes one, with no loop left."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    f = halo.Func("f")
    f[y, x] = inp[y, x + 1] * 2.0
    f.bound(x, 0, 16).vectorize(x, 8)
    stmt = vectorized(f)
    assert not [lp for lp in nodes_of(stmt, n.For) if lp.kind is ForKind.VECTORIZED]
    store = nodes_of(stmt, n.Store, "f")[0]
    load = nodes_of(stmt, n.Load, "inp")[0]
    for index in (store.index, load.index):
        assert isinstance(index, n.Ramp) and index.lanes == 8
    assert store.value.type == halo.float32.with_lanes(8)
    assert store.predicate is None  # 8 divides the bound extent 16: no tail guard


def test_reversed_index_is_a_ramp_of_stride_minus_one():
    """inp[15 - x] reads backwards: a ramp of stride -1, not a gather."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[15 - x]
    f.bound(x, 0, 16).vectorize(x, 8)
    load = nodes_of(vectorized(f), n.Load, "inp")[0]
    assert isinstance(load.index, n.Ramp) and simplify(load.index.stride) == n.const(-1)


def test_tail_guard_becomes_a_mask_on_stores_and_loads():
    """A guarded split's tail test depends on the lane, so it masks the store and the
    loads feeding it (tail lanes touch no memory)."""
    inp = halo.ImageParam(halo.float32, 1, "inp")
    f = halo.Func("f")
    f[x] = inp[x] + 1.0
    f.split(x, xo, xi, 8, tail="guard").vectorize(xi)
    stmt = vectorized(f)
    store = nodes_of(stmt, n.Store, "f")[0]
    load = nodes_of(stmt, n.Load, "inp")[0]
    assert store.predicate is not None and store.predicate.type.lanes == 8
    assert load.predicate == store.predicate
    assert not nodes_of(stmt, n.IfThenElse)


def test_loop_inside_a_vectorized_loop_runs_once_with_its_body_widened():
    """A reduction loop inside the vectorized loop (same range for every lane) runs once,
    its body on vectors: f[ramp] accumulates a vector per iteration of r, as in Halide."""
    inp = halo.ImageParam(halo.float32, 2, "inp")
    r = halo.RDom((0, 4), name="r")
    f = halo.Func("f")
    f[x] = 0.0
    f[x] += inp[r, x]
    f.update(0).reorder(x, r.x)
    f.bound(x, 0, 8).update(0).vectorize(x)
    stmt = vectorized(f)
    kinds = {lp.name: lp.kind for lp in nodes_of(stmt, n.For)}
    assert "f.s1.x" not in kinds and kinds["f.s1.r.x"] is ForKind.SERIAL
    assert nodes_of(stmt, n.Store, "f")[-1].value.type.lanes == 8


def test_vectorized_code_runs_as_simd():
    """The compiled blur's inner loops use 256- or 512-bit vector registers."""
    import apps.blur
    _, out, funcs = apps.blur.algorithm()
    apps.blur.schedule(funcs)
    asm = out.compile().function.assembly()
    assert "ymm" in asm or "zmm" in asm
