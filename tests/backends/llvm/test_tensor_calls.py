"""Tensor intrinsic calls in the LLVM backend: the host assembly holds the instruction
each of halo's intrinsics stands for, and an operand's strides reach the emitter as
constants where lowering knows them."""
from __future__ import annotations

import re

import pytest

import halo
from halo import intrinsics
from halo.target import host_cpu

y, x, yo, yi, xo, xi, ro, ri = halo.vars("y x yo yi xo xi ro ri")
FEATURES = host_cpu().features


def _int8_kernel(isa: str, columns: int) -> str:
    A = halo.ImageParam(halo.uint8, 2, "A")
    Bp = halo.ImageParam(halo.int8, 3, "Bp")
    r = halo.RDom((0, Bp.shape[0]), (0, 4), name="r")
    C = halo.Func("C")
    C[y, x] = 0
    C[y, x] += halo.cast(halo.int32, A[y, 4 * r.x + r.y]) * \
        halo.cast(halo.int32, Bp[r.x, x, r.y])
    dot = intrinsics.dot_u8i8(2, columns, 2, isa)
    C.update(0).split(y, yo, yi, 2).split(x, xo, xi, columns).split(r.x, ro, ri, 2) \
        .reorder(yo, xo, ro, yi, xi, ri, r.y).tensorize(yi, dot)
    return C.compile().function.assembly()


@pytest.mark.skipif("avx512vnni" not in FEATURES, reason="the host has no AVX-512 VNNI")
def test_avx512_vnni_emits_vpdpbusd_on_zmm_registers():
    asm = _int8_kernel("avx512vnni", 32)
    assert re.search(r"vpdpbusd\s+[^\n]*%zmm", asm)


@pytest.mark.skipif("avxvnni" not in FEATURES, reason="the host has no AVX-VNNI")
def test_avx_vnni_emits_vpdpbusd_on_ymm_registers():
    asm = _int8_kernel("avxvnni", 16)
    assert re.search(r"vpdpbusd\s+[^\n]*%ymm", asm)
    assert not re.search(r"vpdpbusd\s+[^\n]*%zmm", asm)


@pytest.mark.skipif("fma" not in FEATURES, reason="the host has no FMA")
def test_fma_outer_product_emits_fused_multiply_adds():
    A = halo.ImageParam(halo.float32, 2, "A")
    B = halo.ImageParam(halo.float32, 2, "B")
    k = halo.RDom((0, A.shape[1]), name="k")
    C = halo.Func("C")
    C[y, x] = 0.0
    C[y, x] += A[y, k] * B[k, x]
    lanes = host_cpu().vector_bytes // 4
    micro = intrinsics.fma_outer_product(2, lanes, 3)
    C.update(0).split(y, yo, yi, 2).split(x, xo, xi, lanes).split(k.x, ro, ri, 3) \
        .reorder(yo, xo, ro, yi, xi, ri).tensorize(yi, micro)
    assert re.search(r"vfmadd\d+ps", C.compile().function.assembly())


def test_known_strides_reach_the_emitter_as_constants():
    """A Func computed at root with constant extents has constant strides; an input's
    are run-time values."""
    seen = []

    def emit(ctx) -> None:
        seen.append({name: ctx.operand(name).constant_strides for name in ("spec", "a")})

    j, k = halo.vars("j k")
    a = halo.ImageParam(halo.float32, 2, "a")
    spec = halo.Func("spec")
    spec[j, k] = a[j, k]
    spec.bound(j, 0, 2).bound(k, 0, 4)
    copy = halo.Intrinsic("copy2x4", spec, emit=emit)
    inp = halo.ImageParam(halo.float32, 2, "inp")
    g, f = halo.Func("g"), halo.Func("f")
    g[y, x] = inp[y, x]
    g.split(y, yo, yi, 2).split(x, xo, xi, 4).reorder(yo, xo, yi, xi).tensorize(yi, copy)
    g.compute_root().bound(x, 0, 8)
    f[y, x] = g[y, x]
    f.bound(x, 0, 8)
    f.compile()
    assert seen and all(s == {"spec": (8, 1), "a": (None, 1)} for s in seen)
