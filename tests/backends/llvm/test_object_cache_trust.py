"""The on-disk cache runs only code its own user wrote: each attack on it (a planted entry,
a directory others can write or own, a symlink, a FIFO, a link to /dev/zero, an empty
HALO_CACHE_DIR) runs in a child process, with a timeout and a memory limit, which must
compute the right answer without loading the planted code, hanging or reading forever."""
from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backends.llvm.test_object_cache import add_constant

ROOT = Path(__file__).resolve().parents[3]

CHILD = """
import json, sys, warnings
from halo.backends.llvm import object_cache
from tests.backends.llvm.test_object_cache import add_constant, check_adds
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for k in map(int, sys.argv[1:]):
        check_adds(add_constant(k), k)
print(json.dumps({**object_cache.stats, "warnings": [str(w.message) for w in caught]}))
"""


def _limit_memory() -> None:
    """Reading /dev/zero must not take the machine's memory with it."""
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))


def compile_in_child(cache_dir: Path | str, *constants: int, cwd: Path = ROOT,
                     umask: int | None = None) -> dict:
    """Compile and check `out[i] = a[i] + k` for each k in a fresh process using the cache
    at `cache_dir`: its cache counters and the warnings it gave."""
    env = {**os.environ, "HALO_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}

    def prepare() -> None:
        _limit_memory()
        if umask is not None:
            os.umask(umask)

    done = subprocess.run([sys.executable, "-c", CHILD, *map(str, constants)], env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=90,
                          preexec_fn=prepare)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def entry_of(cache_dir: Path, before: set[Path]) -> Path:
    (entry,) = set(cache_dir.glob("*.o")) - before
    return entry


@pytest.fixture
def two_entries(tmp_path, monkeypatch) -> tuple[Path, Path, Path]:
    """A cache directory holding the entries of `+ 1` and of `+ 2` (written by this
    process; the attacks run in children)."""
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("HALO_CACHE_DIR", str(cache_dir))
    add_constant(1)
    one = entry_of(cache_dir, set())
    add_constant(2)
    two = entry_of(cache_dir, {one})
    return cache_dir, one, two


def test_an_entry_copied_under_another_key_is_refused(two_entries):
    """`+ 1`'s entry (checksum valid) planted under `+ 2`'s name ran as `+ 2`; each entry
    now holds its key, so the planted one is a miss, recompiled and replaced."""
    cache_dir, one, two = two_entries
    shutil.copyfile(one, two)
    stats = compile_in_child(cache_dir, 2)
    assert stats.get("hits", 0) == 0 and stats["damaged"] == 1 and stats["writes"] == 1
    assert two.read_bytes() != one.read_bytes()
    assert compile_in_child(cache_dir, 2)["hits"] == 1


def test_the_directory_and_entries_are_private_under_any_umask(tmp_path):
    """Under umask 000 the directory was created 0777."""
    cache_dir = tmp_path / "new" / "cache"
    compile_in_child(cache_dir, 1, umask=0)
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    (entry,) = cache_dir.glob("*.o")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


@pytest.mark.parametrize("attack", ["world-writable", "group-writable", "foreign owner"])
def test_a_directory_others_control_is_not_used(two_entries, attack):
    """A directory someone else owns or can write is refused, with one warning that says
    why and what to do: nothing is loaded from it or written to it."""
    cache_dir, one, two = two_entries
    if attack == "foreign owner":
        if os.geteuid() != 0:
            pytest.skip("changing a directory's owner needs root")
        os.chown(cache_dir, 12345, -1)
    else:
        cache_dir.chmod(0o777 if attack == "world-writable" else 0o770)
    before = sorted(cache_dir.iterdir())
    stats = compile_in_child(cache_dir, 1, 2, 1)
    assert "hits" not in stats and "writes" not in stats
    (warning,) = stats["warnings"]
    assert f"not using the compiled-code cache {cache_dir}" in warning
    assert ("owned by uid 12345" if attack == "foreign owner" else "writable by group or "
            "others") in warning and "chmod 700" in warning
    assert sorted(cache_dir.iterdir()) == before


@pytest.mark.parametrize("attack", ["symlink", "fifo", "dev-zero", "world-writable",
                                    "foreign owner", "directory"])
def test_an_entry_that_is_not_a_private_regular_file_is_not_read(two_entries, tmp_path,
                                                                  attack):
    """A symlink (even to a valid entry of the right key) is not followed, a FIFO does not
    hang the compile, a link to /dev/zero is not read, an entry others can write or own
    is skipped: each is compiled again and replaced by a private regular file."""
    cache_dir, one, two = two_entries
    outside = tmp_path / "outside.o"
    shutil.move(two, outside)
    if attack == "symlink":
        two.symlink_to(outside)
    elif attack == "fifo":
        os.mkfifo(two)
    elif attack == "dev-zero":
        two.symlink_to("/dev/zero")
    elif attack == "directory":
        two.mkdir()
    else:
        shutil.copyfile(outside, two)
        if attack == "foreign owner":
            if os.geteuid() != 0:
                pytest.skip("changing a file's owner needs root")
            os.chown(two, 12345, -1)
        else:
            two.chmod(0o666)
    stats = compile_in_child(cache_dir, 2, 2)
    (warning,) = stats["warnings"]
    assert f"not loading the compiled-code cache entry {two.name}" in warning
    if attack == "directory":  # (a rename can't replace a directory with a file)
        assert stats.get("hits", 0) == 0 and stats["untrusted"] == 2
    else:
        assert stats.get("hits", 0) == 1 and stats["untrusted"] == 1
        assert two.is_file() and not two.is_symlink()
        assert two.read_bytes() == outside.read_bytes()


@pytest.mark.parametrize("setting", ["", "  "])
def test_an_empty_cache_dir_setting_is_off(tmp_path, setting):
    """`HALO_CACHE_DIR=` wrote and loaded code in the current directory."""
    stats = compile_in_child(setting, 1, 1, cwd=tmp_path)
    assert stats == {"warnings": []}
    assert list(tmp_path.iterdir()) == []
