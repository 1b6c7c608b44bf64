"""Where deep work runs: lowering, compilation and the reference, on a stack of known size.

The IR walkers recurse once per nesting level, and a long pipeline nests deeply (a let per
bound, a loop per dimension, per stage, an operation per inlined stage): more than
Python's default recursion limit of 1000 frames, and more than the C stack of the calling
thread can be trusted to hold. `run_deep(what, fn, ...)` runs `fn` on a thread of its own
with a `_STACK_BYTES` stack (reserved, not touched, so it costs no real memory) and turns
running out of that depth into a `HaloError` saying what nested too deeply.

The recursion limit is the interpreter's, shared by every thread, so it is raised to
`_DEPTH` while any deep work runs and put back when the last finishes (counted under a
lock): several threads may lower, compile and evaluate at once, and none of them lowers
the limit under another.
"""
from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from halo.errors import HaloError

T = TypeVar("T")

# Python frames deep work may use, and the stack that holds them with room to spare (a
# frame of the walkers, through the C calls between them, takes well under 4 KB).
_DEPTH = 60_000
_STACK_BYTES = 512 * 1024 * 1024

_lock = threading.Lock()
_running = 0  # deep work in flight, in every thread
_limit_before = 0  # the recursion limit before the first of them raised it


def _enter() -> None:
    global _running, _limit_before
    with _lock:
        if _running == 0:
            _limit_before = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_limit_before, _DEPTH))
        _running += 1


def _leave() -> None:
    global _running
    with _lock:
        _running -= 1
        if _running == 0 and sys.getrecursionlimit() == max(_limit_before, _DEPTH):
            sys.setrecursionlimit(_limit_before)


def run_deep(what: str, fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)` on a thread with a deep stack, in the caller's context; its result or
    its exception. `what` ("lowering f") names the work in the HaloError raised when the
    program nests deeper than halo follows."""
    outcome: list = []

    def work() -> None:
        try:
            outcome.append((True, fn(*args)))
        except BaseException as e:  # handed to the caller, raised there
            outcome.append((False, e))
        finally:
            _leave()  # here, not in the caller: an interrupted caller stops waiting first

    context = contextvars.copy_context()
    _enter()
    try:
        with _lock:  # the stack size is a process-wide setting for threads started next
            previous = threading.stack_size(_STACK_BYTES)
            try:
                worker = threading.Thread(target=context.run, args=(work,),
                                          name=f"halo: {what}", daemon=True)
                worker.start()
            except RuntimeError:  # no thread (a strict memory commit limit): run here
                worker = None
            finally:
                threading.stack_size(previous)
    except BaseException:
        _leave()
        raise
    if worker is None:
        work()
    else:
        worker.join()
    ok, value = outcome[0]
    if ok:
        return value
    if isinstance(value, RecursionError):
        raise HaloError(
            f"{what}: the program nests deeper than halo follows ({_DEPTH:,} Python frames), "
            "as a chain of thousands of inlined Funcs or an expression thousands of "
            "operations deep does; give some Funcs of the chain storage (compute_root() or "
            "compute_at()), or build the expression in fewer levels") from None
    raise value
