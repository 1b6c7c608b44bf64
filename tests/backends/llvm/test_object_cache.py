"""The on-disk cache of compiled code: a second process compiling the same pipeline loads
its machine code instead of compiling it; damaged entries are recompiled; anything that
changes the code changes the key."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from halo.backends.arguments import Argument
from halo.backends.llvm import compile_function, object_cache
from halo.ir.nodes import Add, For, ForKind, Load, Store, Var, const
from halo.ir.types import int32

ROOT = Path(__file__).resolve().parents[3]
i, n = Var("i"), Var("n")
ARGS = [Argument("a", "buffer", int32), Argument("out", "buffer", int32),
        Argument("n", "scalar", int32)]


def add_constant(k: int, kind: ForKind = ForKind.SERIAL):
    """out[i] = a[i] + k, compiled."""
    body = For("i", const(0), n, kind, Store("out", i, Add(Load(int32, "a", i), const(k))))
    return compile_function("add_constant", body, ARGS, num_threads=2)


def check_adds(f, k: int) -> None:
    a = np.arange(37, dtype=np.int32)
    out = np.zeros_like(a)
    f(a, out, len(a))
    np.testing.assert_array_equal(out, a + k)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache directory, and the counters from zero."""
    monkeypatch.setenv("HALO_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(object_cache, "stats", object_cache.stats.__class__())
    return tmp_path


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.o"))


CHILD = """
import json, sys
import numpy as np
from apps import blur
from halo.backends.llvm import object_cache
inp, out, funcs = blur.algorithm()
blur.schedule(funcs)
image = np.random.default_rng(1).random((45, 301), dtype=np.float32)
got = out.compile()((45, 301), inp=image)
ok = bool(np.allclose(got, blur.numpy_blur(image), rtol=1e-5, atol=1e-6))
print(json.dumps({"ok": ok, **object_cache.stats}))
"""


def start_child(cache_dir: Path) -> subprocess.Popen:
    env = {**os.environ, "HALO_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", CHILD], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(child: subprocess.Popen) -> dict:
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def run_child(cache_dir: Path) -> dict:
    return finish(start_child(cache_dir))


def test_a_second_process_loads_the_code_from_disk(tmp_path):
    """The first process compiles and writes the blur app's code (and the driver its
    lowered code, an entry of its own); a second one finds both (hits, nothing written)
    and still computes the right blur."""
    first = run_child(tmp_path)
    assert first == {"ok": True, "misses": 2, "writes": 2}
    assert len(entries(tmp_path)) == 2
    second = run_child(tmp_path)
    assert second == {"ok": True, "hits": 2}


def test_concurrent_processes_share_the_cache(tmp_path):
    """Two processes compiling the same pipeline at once both run correctly and leave
    one whole entry of each kind (each writes a temporary file and renames it into place),
    which a third process then loads."""
    first, second = start_child(tmp_path), start_child(tmp_path)
    assert finish(first)["ok"] and finish(second)["ok"]
    assert len(entries(tmp_path)) == 2
    assert list(tmp_path.glob("*.tmp")) == []
    assert run_child(tmp_path) == {"ok": True, "hits": 2}


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_a_damaged_entry_is_recompiled_and_replaced(cache, damage):
    """A truncated, altered, empty or foreign file is a miss (never handed to LLVM): the
    code is compiled again, runs correctly, and the entry is rewritten whole."""
    add_constant(5)
    (entry,) = entries(cache)
    data = entry.read_bytes()
    entry.write_bytes({"truncate": data[:len(data) // 2],
                       "flip": data[:-9] + bytes([data[-9] ^ 0xFF]) + data[-8:],
                       "empty": b"",
                       "garbage": b"\x7fELF" + b"\x00" * 300}[damage])
    check_adds(add_constant(5), 5)
    assert object_cache.stats["damaged"] == 1
    assert object_cache.stats["writes"] == 2
    assert entry.read_bytes() == data
    check_adds(add_constant(5), 5)
    assert object_cache.stats["hits"] == 1


def test_the_same_code_hits_and_different_code_misses(cache, monkeypatch):
    """Same IR, arguments, threads and compiler: a hit. A different IR, thread count or
    compiler version: a new entry."""
    check_adds(add_constant(3), 3)
    check_adds(add_constant(3), 3)
    assert object_cache.stats == {"misses": 1, "writes": 1, "hits": 1}
    check_adds(add_constant(4), 4)
    assert len(entries(cache)) == 2
    body = For("i", const(0), n, ForKind.PARALLEL,
               Store("out", i, Add(Load(int32, "a", i), const(3))))
    check_adds(compile_function("add_constant", body, ARGS, num_threads=3), 3)
    assert len(entries(cache)) == 3
    monkeypatch.setattr(object_cache, "compiler_fingerprint", lambda: "another halo")
    check_adds(add_constant(3), 3)
    assert len(entries(cache)) == 4
    assert object_cache.stats["hits"] == 1


def test_a_parallel_function_from_disk_runs_on_threads(cache):
    """Code calling libgomp links against it when loaded from the cache."""
    add_constant(7, ForKind.PARALLEL)
    check_adds(add_constant(7, ForKind.PARALLEL), 7)
    assert object_cache.stats["hits"] == 1


SOFTMAX_CHILD = """
import json
import numpy as np
from apps import softmax
from halo.backends.llvm import object_cache
inp, out, funcs = softmax.algorithm()
softmax.schedule(funcs)
x = np.random.default_rng(2).random((9, 70), dtype=np.float32)
got = out.compile()((9, 70), x=x)
ok = bool(np.allclose(got, softmax.numpy_softmax(x), rtol=1e-5, atol=1e-6))
print(json.dumps({"ok": ok, **object_cache.stats}))
"""


def test_vector_math_from_disk_links_libmvec(tmp_path):
    """softmax calls libmvec's vector exp: a second process, which loads the code from
    disk without compiling any, must link it to libmvec (it jumped to address 0)."""
    env = {**os.environ, "HALO_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    runs = [subprocess.run([sys.executable, "-c", SOFTMAX_CHILD], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=120) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), [r.stderr[-500:] for r in runs]
    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first["ok"] and first["writes"] == 2  # the lowered code and the machine code
    assert second == {"ok": True, "hits": 2}


@pytest.mark.parametrize("setting", ["off", "OFF", "0"])
def test_off_turns_the_cache_off(tmp_path, monkeypatch, setting):
    """HALO_CACHE_DIR=off writes nothing and reads nothing."""
    monkeypatch.setenv("HALO_CACHE_DIR", setting)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(object_cache, "stats", object_cache.stats.__class__())
    check_adds(add_constant(11), 11)
    assert object_cache.cache_dir() is None
    assert object_cache.stats == {}
    assert list(tmp_path.iterdir()) == []


def test_the_default_directory_is_under_the_user_cache(monkeypatch, tmp_path):
    """Without HALO_CACHE_DIR: $XDG_CACHE_HOME/halo, else ~/.cache/halo."""
    monkeypatch.delenv("HALO_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert object_cache.cache_dir() == tmp_path / "halo"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert object_cache.cache_dir() == tmp_path / ".cache" / "halo"


def test_an_unwritable_directory_is_skipped(tmp_path, monkeypatch):
    """A cache directory that can't be created (a file is in the way) only costs the
    write: the code is compiled and runs."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("HALO_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(object_cache, "stats", object_cache.stats.__class__())
    check_adds(add_constant(13), 13)
    assert object_cache.stats["writes"] == 0
