"""The on-disk cache of compiled code, so that a second process compiling the same
pipeline skips code generation, optimization and machine-code emission.

An entry holds the machine code (the object file MCJIT emitted) and the optimized LLVM IR
(what `Kernel.source()` shows) of one function. It is keyed by a SHA-256 of everything
the code depends on: the lowered, flattened halo IR (its structural `repr`), the function's
name and arguments, the thread count (embedded in the code), the host's triple, CPU name
and features, and the compiler's version: halo's, a hash of this backend's sources (so a
changed code generator never reuses old code), llvmlite's and LLVM's.

Where: `$HALO_CACHE_DIR`, else `$XDG_CACHE_HOME/halo`, else `~/.cache/halo`.
`HALO_CACHE_DIR=off` (or `0`, `false`, `no`) turns the cache off.

Entries are written to a temporary file in the same directory and renamed into place, so
concurrent processes see either no entry or a whole one. Each starts with a checksum of
the rest, verified before LLVM sees the bytes (LLVM crashes on a malformed object file
rather than reporting it): a truncated or corrupted file (or one that LLVM refuses to
link) counts as a miss and is replaced by the freshly compiled code. A cache that can't
be written (a read-only or full disk) is skipped silently; nothing is ever evicted, so
delete the directory to reclaim the space.

`stats` counts hits, misses and writes in this process (tests and benchmarks read it).
"""
from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from collections import Counter
from functools import cache
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from halo.version import __version__

_MAGIC = b"HALOOBJ1"
_HEADER = struct.Struct("<8s32sQ")  # magic, SHA-256 of the payload, length of the IR text
_OFF = ("off", "0", "false", "no")
_OBJECT_MAGICS = (b"\x7fELF", b"\xcf\xfa\xed\xfe")  # ELF, 64-bit Mach-O

stats: Counter[str] = Counter()


def cache_dir() -> Path | None:
    """The cache directory, or None when the cache is off (read on every compile, so
    setting HALO_CACHE_DIR takes effect at once)."""
    setting = os.environ.get("HALO_CACHE_DIR")
    if setting is not None:
        return None if setting.strip().lower() in _OFF else Path(setting).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "halo"


@cache
def compiler_fingerprint() -> str:
    """halo's version, this backend's sources, llvmlite's and LLVM's versions."""
    digest = hashlib.sha256(f"{__version__}|{llvmlite.__version__}|"
                            f"{llvm.llvm_version_info}".encode())
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()


def cache_key(parts: tuple[str, ...]) -> str:
    """The entry name for code determined by `parts` (and the compiler itself)."""
    digest = hashlib.sha256(compiler_fingerprint().encode())
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part.encode())
    return digest.hexdigest()


def load(key: str) -> tuple[str, bytes] | None:
    """(optimized IR, object code) of entry `key`, or None if absent or damaged."""
    directory = cache_dir()
    if directory is None:
        return None
    try:
        data = (directory / f"{key}.o").read_bytes()
    except OSError:
        stats["misses"] += 1
        return None
    entry = _decode(data)
    stats["hits" if entry is not None else "misses"] += 1
    if entry is None:
        stats["damaged"] += 1
    return entry


def store(key: str, optimized_ir: str, obj: bytes) -> None:
    """Write entry `key` atomically; give up quietly if the directory isn't writable."""
    directory = cache_dir()
    if directory is None:
        return
    text = optimized_ir.encode()
    payload = text + obj
    header = _HEADER.pack(_MAGIC, hashlib.sha256(payload).digest(), len(text))
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{key[:16]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(header + payload)
            os.replace(temporary, directory / f"{key}.o")
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        return
    stats["writes"] += 1


def discard(key: str) -> None:
    """Remove entry `key` (LLVM refused to load it)."""
    directory = cache_dir()
    if directory is not None:
        try:
            (directory / f"{key}.o").unlink()
        except OSError:
            pass


def _decode(data: bytes) -> tuple[str, bytes] | None:
    if len(data) < _HEADER.size:
        return None
    magic, checksum, text_length = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if magic != _MAGIC or hashlib.sha256(payload).digest() != checksum or \
            text_length > len(payload):
        return None
    try:
        text = payload[:text_length].decode()
    except UnicodeDecodeError:
        return None
    code = payload[text_length:]
    return (text, code) if code[:4] in _OBJECT_MAGICS else None
