"""Test-suite options: `--update-golden` rewrites golden snapshots instead of comparing.

The suite never writes into the user's cache directory: compiled code goes to a
temporary on-disk cache of its own (removed at exit), which every test exercises;
tests/backends/llvm/test_object_cache.py tests the cache itself.
"""
import atexit
import os
import shutil
import tempfile

_CACHE = tempfile.mkdtemp(prefix="halo-test-cache-")
os.environ["HALO_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/snapshots/*.txt from the current output")
