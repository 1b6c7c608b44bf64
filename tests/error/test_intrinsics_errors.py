"""halo.intrinsics on a host without the instructions, and with shapes the instructions
can't take: a DefinitionError that says what the host lacks and what to use instead."""
from __future__ import annotations

import pytest

import halo
from halo import intrinsics
from halo.target import HostCPU


def _host(monkeypatch, *features: str) -> None:
    monkeypatch.setattr(intrinsics, "host_cpu", lambda: HostCPU("oldcpu", frozenset(features)))


def message(fn) -> str:
    with pytest.raises(halo.DefinitionError) as info:
        fn()
    return str(info.value)


def test_dot_u8i8_on_a_host_without_vnni(monkeypatch):
    _host(monkeypatch, "avx2", "fma")
    assert message(lambda: intrinsics.dot_u8i8(4, 16, 4)) == (
        "halo.intrinsics.dot_u8i8(4, 16, 4, isa=None): this host (oldcpu) has neither "
        "avx512vnni nor avxvnni; use fma_outer_product on float32 instead")


def test_dot_u8i8_asking_for_an_instruction_set_the_host_lacks(monkeypatch):
    _host(monkeypatch, "avx2", "avxvnni")
    assert message(lambda: intrinsics.dot_u8i8(4, 16, 4, isa="avx512vnni")) == (
        "halo.intrinsics.dot_u8i8(4, 16, 4, isa='avx512vnni'): this host (oldcpu) has no "
        "avx512vnni; use isa=None to take what the host has, or fma_outer_product")


def test_dot_u8i8_picks_what_the_host_has(monkeypatch):
    _host(monkeypatch, "avx2", "avxvnni")
    assert intrinsics.dot_u8i8(2, 8, 1).name == "dot_u8i8_avxvnni_2x8x4"


def test_dot_u8i8_columns_not_a_multiple_of_the_register(monkeypatch):
    _host(monkeypatch, "avx512vnni")
    assert message(lambda: intrinsics.dot_u8i8(4, 24, 4)) == (
        "halo.intrinsics.dot_u8i8(4, 24, 4, isa=None): columns must be a multiple of 16, the "
        "int32 lanes of a register for avx512vnni")


def test_dot_u8i8_unknown_instruction_set(monkeypatch):
    _host(monkeypatch, "avx512vnni")
    assert message(lambda: intrinsics.dot_u8i8(4, 16, 4, isa="amx")) == (
        "halo.intrinsics.dot_u8i8(4, 16, 4, isa='amx'): isa must be one of avx512vnni, "
        "avxvnni or None")


def test_sizes_must_be_positive(monkeypatch):
    _host(monkeypatch, "avx512vnni", "fma")
    assert message(lambda: intrinsics.dot_u8i8(0, 16, 4)) == (
        "halo.intrinsics.dot_u8i8(0, 16, 4, isa=None): rows must be a positive int, not 0")
    assert message(lambda: intrinsics.fma_outer_product(2, 16, 1.5)) == (
        "halo.intrinsics.fma_outer_product(2, 16, 1.5): depth must be a positive int, not 1.5")


def test_fma_outer_product_on_a_host_without_fma(monkeypatch):
    _host(monkeypatch, "sse2")
    assert message(lambda: intrinsics.fma_outer_product(4, 16, 4)) == (
        "halo.intrinsics.fma_outer_product(4, 16, 4): this host (oldcpu) has no fused "
        "multiply-add instructions (fma); leave the loops to halo's vectorizer")


def test_fma_outer_product_columns_not_a_multiple_of_the_register(monkeypatch):
    _host(monkeypatch, "avx", "avx2", "fma")
    assert message(lambda: intrinsics.fma_outer_product(4, 12, 4)) == (
        "halo.intrinsics.fma_outer_product(4, 12, 4): columns must be a multiple of 8, the "
        "float32 lanes of this host's registers")


def test_a_spec_with_a_where_is_refused():
    j = halo.Var("j")
    a = halo.ImageParam(halo.float32, 1, "a")
    r = halo.RDom((0, 4), name="r")
    r.where(r.x < 2)
    spec = halo.Func("where_spec")
    spec[j] = 0.0
    spec[j] += a[j + r]
    spec.bound(j, 0, 4)
    assert message(lambda: halo.Intrinsic("partial", spec, emit=print)) == (
        "Intrinsic partial: the reduction of spec where_spec has a where condition; an "
        "intrinsic computes a whole tile")
