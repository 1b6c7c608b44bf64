"""The on-disk cache of compiled code, so that a second process compiling the same
pipeline skips code generation, optimization and machine-code emission.

An entry holds the machine code (the object file MCJIT emitted) and the optimized LLVM IR
(what `Kernel.source()` shows) of one function; the CUDA backend's entries hold a cubin
and its CUDA C, and the driver's a lowered pipeline as text, with no code. An entry of
the host's code is keyed by a SHA-256 of everything the code depends on: the lowered,
flattened halo IR (its structural `repr`), the function's name and arguments, the thread
count (embedded in the code), the host's triple, CPU name and features, and the
compiler's version: halo's, a hash of this backend's sources (so a changed code
generator never reuses old code), llvmlite's and LLVM's.

Where: `$HALO_CACHE_DIR`, else `$XDG_CACHE_HOME/halo`, else `~/.cache/halo`.
`HALO_CACHE_DIR=off` (or `0`, `false`, `no`, or empty) turns the cache off.

What it trusts, and why. Loading an entry runs its machine code in this process, so the
cache trusts exactly what ssh trusts of `~/.ssh`: a directory (and entries) owned by this
user and writable by nobody else. It creates the directory 0700 and its entries 0600;
it refuses (and warns once about) a directory owned by someone else or writable by group
or others, compiling instead, and it skips an entry that is not a regular file of this
user's, writable by nobody else, of at most `MAX_ENTRY_BYTES`. Entries are opened through
the directory's file descriptor without following symlinks and without blocking (a FIFO
or a link to /dev/zero is skipped, never read). Each entry holds its own key, compared
on load, so an entry copied under another key's name is a miss.

Entries are written to a temporary file in the same directory and renamed into place, so
concurrent processes see either no entry or a whole one. Each starts with a checksum of
the rest, verified before LLVM sees the bytes (LLVM crashes on a malformed object file
rather than reporting it): a truncated or corrupted file (or one that LLVM refuses to
link) counts as a miss and is replaced by the freshly compiled code. A cache that can't
be written (a read-only or full disk) is skipped silently; nothing is ever evicted, so
delete the directory to reclaim the space. Entries of an older format are misses (the
magic names the format), replaced as they are compiled again.

`stats` counts hits, misses, writes and refusals (`untrusted`) in this process (tests and
benchmarks read it).
"""
from __future__ import annotations

import hashlib
import os
import secrets
import stat
import struct
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from halo.version import __version__

_MAGIC = b"HALOOBJ2"
# magic, the entry's key (64 hex digits), SHA-256 of key and payload, length of the IR text
_HEADER = struct.Struct("<8s64s32sQ")
_OFF = ("off", "0", "false", "no", "")
_OBJECT_MAGICS = (b"\x7fELF", b"\xcf\xfa\xed\xfe")  # ELF, 64-bit Mach-O
MAX_ENTRY_BYTES = 1 << 28
"""An entry larger than this (256 MiB) is not read."""

stats: Counter[str] = Counter()
_warned: set[str] = set()


class UntrustedCacheWarning(UserWarning):
    """The cache directory or an entry could be written by someone else; it is skipped."""


def cache_dir() -> Path | None:
    """The cache directory, or None when the cache is off (read on every compile, so
    setting HALO_CACHE_DIR takes effect at once). An empty HALO_CACHE_DIR is off, never
    the current directory."""
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
    """(optimized IR, object code) of entry `key` (the code empty for an entry of text
    alone), or None if absent, damaged, or not trusted (see the module's docstring)."""
    with _trusted_directory(create=False) as directory:
        if directory is None:
            return None
        data = _read_entry(directory, key)
    if data is None:
        return None
    entry = _decode(data, key)
    stats["hits" if entry is not None else "misses"] += 1
    if entry is None:
        stats["damaged"] += 1
    return entry


def store(key: str, optimized_ir: str, obj: bytes) -> None:
    """Write entry `key` atomically (a 0600 temporary file renamed into place); give up
    quietly if the directory isn't writable, and with a warning if it isn't trusted."""
    text = optimized_ir.encode()
    payload = text + obj
    header = _HEADER.pack(_MAGIC, key.encode(), _checksum(key, payload), len(text))
    with _trusted_directory(create=True) as directory:
        if directory is None:
            return
        temporary = f".{key[:16]}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                         os.O_CLOEXEC, 0o600, dir_fd=directory)
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(header + payload)
                os.replace(temporary, f"{key}.o", src_dir_fd=directory, dst_dir_fd=directory)
            except BaseException:
                os.unlink(temporary, dir_fd=directory)
                raise
        except OSError:
            return
    stats["writes"] += 1


def discard(key: str) -> None:
    """Remove entry `key` (LLVM refused to load it)."""
    with _trusted_directory(create=False) as directory:
        if directory is not None:
            try:
                os.unlink(f"{key}.o", dir_fd=directory)
            except OSError:
                pass


@contextmanager
def _trusted_directory(create: bool) -> Iterator[int | None]:
    """A file descriptor of the cache directory (created 0700 if `create`), or None
    when the cache is off, the directory is missing, or it isn't trusted."""
    path = cache_dir()
    if path is None:
        yield None
        return
    try:
        if create:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        if not create:
            stats["misses"] += 1
        yield None
        return
    try:
        problem = _untrusted(os.fstat(fd), "directory")
        if problem is not None:
            stats["untrusted"] += 1
            _warn_once(f"halo: not using the compiled-code cache {path}: {problem}; "
                       "whoever can write there could make this process run their code. "
                       f"Make it yours and private (chmod 700 {path}), or point "
                       "HALO_CACHE_DIR elsewhere (or set it to off)")
            yield None
        else:
            yield fd
    finally:
        os.close(fd)


def _read_entry(directory: int, key: str) -> bytes | None:
    """The bytes of entry `key` if it is a trusted regular file of a sane size: opened
    without following a symlink and without blocking on a FIFO, checked after opening."""
    name = f"{key}.o"
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=directory)
    except FileNotFoundError:
        stats["misses"] += 1
        return None
    except OSError as error:  # a symlink (ELOOP), or unreadable
        return _refuse_entry(name, f"it can't be opened as a file ({error.strerror})")
    try:
        info = os.fstat(fd)
        problem = _untrusted(info, "entry")
        if problem is None and not stat.S_ISREG(info.st_mode):
            problem = "it is not a regular file"
        if problem is None and info.st_size > MAX_ENTRY_BYTES:
            problem = f"it has {info.st_size} bytes, more than {MAX_ENTRY_BYTES}"
        if problem is not None:
            return _refuse_entry(name, problem)
        return _read_all(fd, info.st_size)
    finally:
        os.close(fd)


def _read_all(fd: int, size: int) -> bytes:
    """The `size` bytes of a regular file, or fewer if it is shorter."""
    chunks, remaining = [], size
    while remaining > 0:
        chunk = os.read(fd, remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _refuse_entry(name: str, problem: str) -> None:
    stats["untrusted"] += 1
    _warn_once(f"halo: not loading the compiled-code cache entry {name}: {problem}; "
               "it will be compiled again and replaced")
    return None


def _untrusted(info: os.stat_result, what: str) -> str | None:
    """Why a directory or entry with this status can't be trusted, or None."""
    if info.st_uid != os.geteuid():
        return f"the {what} is owned by uid {info.st_uid}, not by this user ({os.geteuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"the {what} is writable by group or others (mode {stat.filemode(info.st_mode)})"
    return None


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, UntrustedCacheWarning, stacklevel=2)


def _checksum(key: str, payload: bytes) -> bytes:
    digest = hashlib.sha256(key.encode())
    digest.update(payload)
    return digest.digest()


def _decode(data: bytes, key: str) -> tuple[str, bytes] | None:
    if len(data) < _HEADER.size:
        return None
    magic, stored_key, checksum, text_length = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if magic != _MAGIC or stored_key != key.encode() or \
            _checksum(key, payload) != checksum or text_length > len(payload):
        return None
    try:
        text = payload[:text_length].decode()
    except UnicodeDecodeError:
        return None
    code = payload[text_length:]
    return (text, code) if not code or code[:4] in _OBJECT_MAGICS else None
