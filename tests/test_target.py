"""The Target value: kinds, options, and the host facts it reads without a backend."""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import halo
from halo.target import (
    MAX_THREADS,
    Target,
    TargetKind,
    default_num_threads,
    host_cache_bytes,
    host_cpu,
)


@pytest.mark.parametrize(("setting", "expected"), [("3", 3), ("", None), (" 1 ", 1)])
def test_default_thread_count_follows_halo_num_threads(monkeypatch, setting, expected):
    """HALO_NUM_THREADS sets the default thread count; unset or empty means every core."""
    monkeypatch.setenv("HALO_NUM_THREADS", setting)
    assert default_num_threads() == (expected or os.cpu_count())
    assert Target("host").num_threads == (expected or os.cpu_count())
    assert Target("host", threads=5).num_threads == 5


@pytest.mark.parametrize("setting", ["0", "-2", "four"])
def test_bad_halo_num_threads_is_reported(monkeypatch, setting):
    """A HALO_NUM_THREADS that is not a positive integer raises a HaloError naming it."""
    monkeypatch.setenv("HALO_NUM_THREADS", setting)
    with pytest.raises(halo.HaloError, match="HALO_NUM_THREADS"):
        default_num_threads()


def test_kind_is_an_enum_given_as_a_string():
    """Target("host") and Target(TargetKind.HOST) are the same value; `name` is the string."""
    assert Target("host") == Target(TargetKind.HOST) == Target()
    assert Target("host").kind is TargetKind.HOST and Target("host").name == "host"
    assert Target.of("host") == Target() and Target.of(Target(threads=2)).threads == 2


@pytest.mark.parametrize(("args", "message"), [
    (("gpu",), "unknown target 'gpu'"),
    (("host",), None),
])
def test_unknown_and_unavailable_kinds_are_refused(args, message):
    if message is None:
        Target(*args)
        return
    with pytest.raises(halo.HaloError, match=message):
        Target(*args)


def test_cuda_targets_name_their_architecture():
    """Target('cuda', arch=...) generates code without a GPU; arch is checked."""
    assert Target("cuda", arch="sm_90").arch == "sm_90"
    assert Target("cuda", arch="sm_80") != Target("cuda", arch="sm_90")
    for arch in ("sm_60", "compute_90", "90", 90):
        with pytest.raises(halo.HaloError, match="arch names an NVIDIA GPU architecture"):
            Target("cuda", arch=arch)
    with pytest.raises(halo.HaloError, match="counting stores"):
        Target("cuda", arch="sm_90", count_stores=True)


@pytest.mark.skipif(importlib.util.find_spec("pycuda") is not None,
                    reason="PyCUDA is installed: Target('cuda') reads the GPU")
def test_cuda_without_pycuda_says_to_name_the_architecture():
    with pytest.raises(halo.HaloError, match="arch='sm_90'"):
        Target("cuda")


def test_arch_is_for_gpu_targets_only():
    with pytest.raises(halo.HaloError, match="arch is for GPU targets"):
        Target("host", arch="sm_90")


def test_host_facts_come_from_the_cpu():
    """The host's features are LLVM's names without '+', and the vector width follows them."""
    cpu = host_cpu()
    assert cpu.name and cpu.features
    assert not any(f.startswith(("+", "-")) for f in cpu.features)
    expected = 64 if "avx512f" in cpu.features else 32 if "avx" in cpu.features else 16
    assert cpu.vector_bytes == expected
    assert Target().natural_vector_size(halo.float32) == expected // 4
    assert Target().natural_vector_size(halo.float64) == expected // 8
    assert Target().has_feature(next(iter(cpu.features)))
    assert not Target().has_feature("no-such-feature")


@pytest.mark.parametrize("threads", [True, False, 2.0, "4", 0, -1, 1025, 2**31, 2**32 + 1])
def test_thread_counts_outside_one_to_1024_are_refused(threads):
    """Only integers from 1 to MAX_THREADS are thread counts: a bool passed validation and
    then made invalid LLVM IR, 2**32 + 1 wrapped to 1, and 2**31 made OpenMP's runtime
    run out of memory and kill the process."""
    with pytest.raises(halo.HaloError, match=r"threads must be a positive integer, at most 1024"):
        Target("host", threads=threads)


@pytest.mark.parametrize("setting", ["1025", "99999999999", str(2**32 + 1)])
def test_huge_halo_num_threads_is_refused(monkeypatch, setting):
    monkeypatch.setenv("HALO_NUM_THREADS", setting)
    with pytest.raises(halo.HaloError, match=r"HALO_NUM_THREADS=.*more than 1024"):
        default_num_threads()


def test_thread_counts_are_plain_ints_and_the_default_is_capped(monkeypatch):
    """A NumPy integer is accepted as the int it holds; every core, capped at MAX_THREADS,
    is the default."""
    assert Target("host", threads=np.int64(3)).threads == 3
    assert type(Target("host", threads=np.int64(3)).threads) is int
    assert Target("host", threads=MAX_THREADS).num_threads == MAX_THREADS
    monkeypatch.delenv("HALO_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4096)
    assert default_num_threads() == MAX_THREADS


def test_host_cache_bytes():
    sizes = host_cache_bytes()
    assert len(sizes) == 3 and all(isinstance(s, int) and s >= 1024 for s in sizes)
    assert sizes[0] <= sizes[1] <= sizes[2]


def test_fast_math_is_for_gpu_targets_without_strict_float():
    assert halo.Target("cuda", arch="sm_90", fast_math=True).fast_math
    with pytest.raises(halo.HaloError, match="approximate math is for GPU targets"):
        halo.Target("host", fast_math=True)
    with pytest.raises(halo.HaloError, match="choose one"):
        halo.Target("cuda", arch="sm_90", strict_float=True, fast_math=True)
    assert halo.Target("cuda", arch="sm_90", fast_math=True) != halo.Target("cuda",
                                                                           arch="sm_90")
