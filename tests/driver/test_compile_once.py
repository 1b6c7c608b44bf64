"""A pipeline is lowered and compiled once while its algorithm and schedule stay the same,
and again after any change to either; a new process reads the lowered code from disk."""
from __future__ import annotations

import numpy as np
import pytest

import halo
from halo import driver
from halo.backends.llvm import object_cache
from halo.lru_cache import LRUCache

y, x, xo, xi = halo.vars("y x xo xi")


@pytest.fixture
def lowerings(monkeypatch, tmp_path):
    """The number of times the driver has lowered a pipeline (with an empty on-disk
    cache)."""
    count = [0]
    real = driver.lower

    def counting(env, target):
        count[0] += 1
        return real(env, target)

    monkeypatch.setattr(driver, "lower", counting)
    _forget_compiled(monkeypatch)  # none from other tests
    monkeypatch.setenv("HALO_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HALO_DEBUG", raising=False)
    monkeypatch.delenv("HALO_DUMP_IR", raising=False)
    return count


def blur():
    inp = halo.ImageParam(halo.float32, 2, "inp")
    bx, by = halo.Func("bx"), halo.Func("by")
    clamped = halo.boundary.repeat_edge(inp)
    bx[y, x] = clamped[y, x - 1] + clamped[y, x]
    by[y, x] = bx[y - 1, x] + bx[y, x]
    return inp, bx, by


def test_realize_twice_lowers_once(lowerings):
    inp, bx, by = blur()
    image = np.random.default_rng(0).random((9, 13), dtype=np.float32)
    first = by.realize((8, 13), inputs={inp: image})
    second = by.realize((8, 13), inputs={inp: image * 2})
    assert lowerings[0] == 1
    np.testing.assert_allclose(second, 2 * first, rtol=1e-6)


def test_a_schedule_call_compiles_again(lowerings):
    inp, bx, by = blur()
    image = np.random.default_rng(1).random((9, 13), dtype=np.float32)
    expected = halo.reference(by, (8, 13), inputs={inp: image})
    by.realize((8, 13), inputs={inp: image})
    bx.compute_root()
    np.testing.assert_allclose(by.realize((8, 13), inputs={inp: image}), expected, rtol=1e-6)
    by.split(x, xo, xi, 4)
    np.testing.assert_allclose(by.realize((8, 13), inputs={inp: image}), expected, rtol=1e-6)
    assert lowerings[0] == 3
    assert "bx" in str(by.lower())  # computed at root now: a loop nest of its own


def test_a_new_definition_compiles_again(lowerings):
    f = halo.Func("f")
    f[x] = x * 2
    np.testing.assert_array_equal(f.realize((5,)), [0, 2, 4, 6, 8])
    f[x] = f[x] + 1
    np.testing.assert_array_equal(f.realize((5,)), [1, 3, 5, 7, 9])
    assert lowerings[0] == 2


def test_a_where_after_compiling_compiles_again(lowerings):
    """where() changes an RDom in place; the next realize sees it."""
    f = halo.Func("f")
    r = halo.RDom((0, 6))
    f[()] = 0
    f[()] += r
    assert f.realize(()) == 15
    r.where(r % 2 == 0)
    assert f.realize(()) == 6
    assert lowerings[0] == 2


def test_two_builds_with_other_buffers_each_read_their_own(lowerings):
    """The same program over another Buffer (same name, dtype, rank) reuses the code and
    reads its own array."""
    def build(array):
        b = halo.Buffer(array, "b")
        f = halo.Func("f")
        f[x] = b[x] + 1
        return f
    ones, twos = np.ones(4, np.int32), np.full(4, 2, np.int32)
    np.testing.assert_array_equal(build(ones).realize((4,)), [2, 2, 2, 2])
    np.testing.assert_array_equal(build(twos).realize((4,)), [3, 3, 3, 3])
    assert lowerings[0] == 1


def test_a_new_param_default_is_used(lowerings):
    def build(default):
        p = halo.Param(halo.int32, "p", default=default)
        f = halo.Func("f")
        f[x] = x + p
        return f
    np.testing.assert_array_equal(build(1).realize((3,)), [1, 2, 3])
    np.testing.assert_array_equal(build(10).realize((3,)), [10, 11, 12])
    assert lowerings[0] == 1


def test_other_targets_compile_apart(lowerings):
    f = halo.Func("f")
    f[x] = x
    f.realize((4,))
    f.realize((4,), target=halo.Target("host", threads=1))
    f.realize((4,), target=halo.Target("host", count_stores=True))
    assert lowerings[0] == 3


def test_kernels_keep_their_own_store_counts(lowerings):
    f = halo.Func("f")
    f[x] = x
    target = halo.Target("host", count_stores=True)
    small, large = f.compile(target), f.compile(target)
    small((3,))
    large((7,))
    assert small.store_counts == {"f": 3} and large.store_counts == {"f": 7}
    assert lowerings[0] == 1


def _forget_compiled(monkeypatch):
    """What a new process starts with: no pipeline compiled in memory."""
    monkeypatch.setattr(driver, "_kernels", LRUCache(capacity=64))


def test_a_new_process_reads_the_lowered_code_from_disk(lowerings, monkeypatch):
    inp, bx, by = blur()
    bx.compute_root()
    image = np.random.default_rng(2).random((9, 13), dtype=np.float32)
    first = by.realize((8, 13), inputs={inp: image})
    lowered = by.compile().lowered
    _forget_compiled(monkeypatch)
    again = by.compile()
    assert lowerings[0] == 1 and again.lowered is not lowered
    assert lowered.checks  # the region checks come with the code
    assert (again.lowered.stmt, again.lowered.checks) == (lowered.stmt, lowered.checks)
    np.testing.assert_array_equal(again(inp=image, shape=(8, 13)), first)


def test_a_changed_halo_or_schedule_lowers_again(lowerings, monkeypatch):
    inp, bx, by = blur()
    by.realize((8, 13), inputs={inp: np.zeros((9, 13), np.float32)})
    _forget_compiled(monkeypatch)
    monkeypatch.setattr(driver, "sources_fingerprint", lambda: "another halo")
    by.compile()
    assert lowerings[0] == 2
    _forget_compiled(monkeypatch)
    by.split(x, xo, xi, 4)
    by.compile()
    assert lowerings[0] == 3


def test_a_damaged_entry_is_lowered_again_and_replaced(lowerings, monkeypatch, tmp_path):
    inp, bx, by = blur()
    by.compile()
    saved = [path.stem for path in tmp_path.glob("*.o")
             if (entry := object_cache.load(path.stem)) is not None and entry[1] == b""]
    assert len(saved) == 1
    object_cache.store(saved[0], '{"format": 1, "rows": "damaged"}', b"")
    for _ in range(2):
        _forget_compiled(monkeypatch)
        image = np.ones((9, 13), np.float32)
        np.testing.assert_array_equal(by.realize((8, 13), inputs={inp: image}), 4)
    assert lowerings[0] == 2  # the second process read the entry the first wrote again


def test_without_the_disk_cache_each_process_lowers(lowerings, monkeypatch):
    monkeypatch.setenv("HALO_CACHE_DIR", "off")
    inp, bx, by = blur()
    for _ in range(2):
        _forget_compiled(monkeypatch)
        by.compile()
    assert lowerings[0] == 2
