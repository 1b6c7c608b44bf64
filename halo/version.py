"""halo's version: part of every on-disk cache key, so a new halo never loads code an old
one compiled."""
from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path

__version__ = "0.1.0"


@cache
def sources_fingerprint() -> str:
    """A hash of halo's version and of each of its source files' path, size and time of
    last change (what Python checks before it uses a file's compiled bytecode): a cache
    keyed by it is not used by a halo whose code has changed since the entry was written.
    About a millisecond, once per process."""
    package = Path(__file__).parent
    sources = sorted(os.path.join(directory, name) for directory, _, names in os.walk(package)
                     for name in names if name.endswith(".py"))
    digest = hashlib.sha256(__version__.encode())
    for source in sources:
        info = os.stat(source)
        digest.update(f"{os.path.relpath(source, package)}|{info.st_size}|"
                      f"{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()
