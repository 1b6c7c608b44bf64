"""The driver: `Pipeline`, which lowers a pipeline for a target, compiles it through the
backend seam and runs it (`realize`).

`Pipeline([f, g]).realize(shape, inputs=...)` lowers the pipeline, compiles it for the
target, checks the inputs and the regions the code will touch, and runs it on NumPy arrays
without copying them. `Func.realize`, `compile`, `lower` and `print_loop_nest` are these,
for a pipeline of one output.

A compiled pipeline is kept until its algorithm or schedule changes: `compile` (and so
`realize`) looks it up by the program's key, which holds every definition, every schedule
record (in their JSON form, which replays to the same lowered IR), the inputs' and Params'
types and the target, so an unchanged pipeline is lowered and compiled once, and any
definition, `where()` or schedule call makes the next call compile again.

The lowered code is also kept on disk, in the cache of compiled code
(`backends/llvm/object_cache.py`: its directory, `HALO_CACHE_DIR`, trust rules and
entries), keyed by the program's key, halo's sources (`version.sources_fingerprint`) and,
for the host, its CPU: a new process compiling a program that one before lowered skips
lowering (0.1-5 s in Python), and with the backend's own disk cache, code generation too.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from halo.backends.llvm import object_cache
from halo.errors import HaloError
from halo.ir import codec, nodes, types
from halo.ir.deep_stack import run_deep
from halo.ir.printer import loop_nest_to_str
from halo.lang.driver_seam import install_pipeline
from halo.lang.environment import Environment
from halo.lang.func import Func
from halo.lang.reduction_origins import explained, notes
from halo.lower import bounds_inference
from halo.lower.pipeline import Lowered, lower
from halo.lru_cache import LRUCache
from halo.runtime.kernel import Kernel
from halo.schedule.serialize import schedules_to_json
from halo.target import Target, TargetKind
from halo.version import sources_fingerprint


def _short_traceback(method):
    """`method` of a Pipeline, raising a user's mistake (a HaloError) with a traceback
    that ends just past the user's call: the 20-40 frames of halo's passes and IR
    visitors under it say nothing about the mistake. `HALO_DEBUG` keeps the whole
    traceback. The message says where each name halo made up came from."""
    @functools.wraps(method)
    def user_facing(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except HaloError as error:
            if error.args and isinstance(error.args[0], str):
                error.args = (self._explained(error.args[0]), *error.args[1:])
            if os.environ.get("HALO_DEBUG"):
                raise
            raise error.with_traceback(None)  # noqa: B904 - the same error, fewer frames
    return user_facing


class Pipeline:
    """Several output Funcs realized together, over the same region."""

    def __init__(self, outputs: Sequence[Func] | Func):
        self.outputs = [outputs] if isinstance(outputs, Func) else list(outputs)
        if not self.outputs:
            raise HaloError("a Pipeline needs at least one output Func")

    @_short_traceback
    def lower(self, target: str | Target = "host") -> Lowered:
        """The lowered loop nest; `str()` of it is readable Python-like code."""
        return run_deep(f"lowering {self._names()}", _lower, self.outputs, Target.of(target))

    @_short_traceback
    def print_loop_nest(self, target: str | Target = "host") -> None:
        """Print the loop nest, after a line for each name halo made up that it shows
        (`# sum0: the halo.sum in norm's definition`)."""
        text = loop_nest_to_str(self.lower(target).stmt)
        lines = [f"# {note}\n" for note in notes(text, Environment.of(self.outputs).funcs)]
        print("".join(lines) + text, end="")

    @_short_traceback
    def compile(self, target: str | Target = "host") -> Kernel:
        """The pipeline compiled for `target`; the same Kernel again while the algorithm
        and schedule are unchanged."""
        return run_deep(f"compiling {self._names()}", self._compile, Target.of(target))

    @_short_traceback
    def realize(self, shape=None, inputs=None, target: str | Target = "host", out=None,
                origin=None) -> np.ndarray | list[np.ndarray]:
        """The outputs over the region of `shape` (or of `out`), starting at `origin`."""
        result = self.compile(target).run(shape, out, origin, inputs, {})
        return result[0] if len(self.outputs) == 1 else result

    def _compile(self, target: Target) -> Kernel:
        env = Environment.of(self.outputs)
        key = _program_key(env, target)
        if key is None:
            return Kernel(lower(env, target), target)
        return _kernels.get(key, lambda: Kernel(lowered(env, target, key), target)) \
            .for_environment(env)

    def _names(self) -> str:
        return ", ".join(f.name for f in self.outputs)

    def _explained(self, message: str) -> str:
        """`message` saying where the names halo made up that it shows came from."""
        try:
            funcs = Environment.of(self.outputs).funcs
        except HaloError:  # the pipeline itself is ill-formed: the message says so
            return message
        return explained(message, funcs)


def _lower(outputs: list[Func], target: Target) -> Lowered:
    return lower(Environment.of(outputs), target)


def _program_key(env: Environment, target: Target) -> tuple | None:
    """What the lowered code of `env` depends on, or None where it can't be written down
    (a schedule with no JSON form) or lowering is being watched (HALO_DEBUG, HALO_DUMP_IR):
    then every compile lowers again."""
    if os.environ.get("HALO_DEBUG") or os.environ.get("HALO_DUMP_IR"):
        return None
    try:
        schedules = schedules_to_json({name: f.schedule for name, f in env.funcs.items()})
    except (HaloError, TypeError, ValueError):
        return None
    funcs = tuple((name, tuple(_definition_key(d) for d in f.definitions))
                  for name, f in env.funcs.items())
    inputs = tuple((name, type(i).__name__, i.dtype, i.ndim) for name, i in env.inputs.items())
    params = tuple((name, p.type) for name, p in env.params.items())
    outputs = tuple(f.name for f in env.outputs)
    # A saved schedule names its intrinsics; which Intrinsic objects they are (each repr
    # is unique in the process) decides the code their emitters write.
    intrinsics = tuple(repr(sched.tensorize.declared) for f in env.funcs.values()
                       for stage in f.schedule.stages for sched in stage.variants()
                       if sched.tensorize is not None)
    # The thread count the code embeds, not how it was chosen (HALO_NUM_THREADS may change).
    target = replace(target, threads=target.num_threads)
    return funcs, schedules, inputs, params, outputs, intrinsics, target


def lowered(env: Environment, target: Target, key: tuple | None = None) -> Lowered:
    """`env` lowered for `target`: read from the on-disk cache when a process lowered the
    same program (`key`, `_program_key`'s) with the same halo for the same CPU, else
    lowered now and saved there. A program whose lowered code holds objects with no text
    form (a tensorized loop's Intrinsic) is lowered each time."""
    key = _program_key(env, target) if key is None else key
    if key is None:
        return lower(env, target)
    machine = repr(sorted(target.cpu.features)) + target.cpu.name \
        if target.kind is TargetKind.HOST else ""
    entry_key = object_cache.cache_key(("lowered", sources_fingerprint(), machine, repr(key)))
    entry = object_cache.load(entry_key)
    if entry is not None:
        try:
            return lowered_from_text(entry[0], env)
        except ValueError:  # written by hand, or by a halo that wrote it otherwise
            object_cache.discard(entry_key)
    result = lower(env, target)
    text = lowered_text(result)
    if text is not None:
        object_cache.store(entry_key, text, b"")
    return result


def lowered_text(result: Lowered) -> str | None:
    """The saved form of `result` (its code, region checks and counted Funcs), or None
    where its code holds an object with no text form."""
    try:
        return codec.encode((result.stmt, tuple(result.checks), tuple(result.counted)),
                            _LOWERED_CLASSES)
    except TypeError:
        return None


def lowered_from_text(text: str, env: Environment) -> Lowered:
    """The Lowered whose saved form is `text`, bound to `env`; a ValueError if `text` is
    no such form."""
    value = codec.decode(text, _LOWERED_CLASSES)
    if not (isinstance(value, tuple) and len(value) == 3 and isinstance(value[0], nodes.Stmt)):
        raise ValueError("not the saved form of a lowered pipeline")
    stmt, checks, counted = value
    return Lowered(stmt, env, list(checks), list(counted))


# What a lowered pipeline's saved form holds: IR nodes, types and region checks.
_LOWERED_CLASSES = codec.classes_of(nodes, types, bounds_inference)


def _definition_key(d) -> tuple:
    rdom = d.rdom
    if rdom is None:
        return repr(d.args), repr(d.value)
    bounds = tuple((repr(lo.node), repr(extent.node)) for lo, extent in rdom.bounds)
    predicate = None if rdom.predicate is None else repr(rdom.predicate.node)
    return (repr(d.args), repr(d.value), rdom.name, tuple(r.name for r in rdom.rvars), bounds,
            predicate)


_kernels: LRUCache[Kernel] = LRUCache(capacity=64)


# Func.realize/compile/lower run through this (the language can't import the driver).
install_pipeline(Pipeline)

__all__ = ["Pipeline", "Target", "Kernel"]
