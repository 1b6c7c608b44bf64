"""Tasks run in long-lived worker processes, so a crash or a hang is a result, not the end
of the run: the fuzzer's cases and the autotuner's measurements both run here.

Workers are started with the "spawn" method (libgomp hangs a process forked after a
parallel kernel ran) and kept for many tasks, since starting one costs about a second. A
worker that dies (a segfault in generated code) gives its task a `WorkerFailure` of kind
`CRASH` and is replaced; one that runs past the timeout is killed, its task a `HANG`, and
replaced. So is one whose result says its process is unusable (`replace_if`: a CUDA error
leaves the worker's GPU context broken).

A task that must wait its turn for something other workers hold (the host's timing lock)
says so with `with waiting():`; its timeout stops while it waits and starts again when
it goes on, so a task queued behind a slow one is not taken for a hung one.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait

CRASH = "crash"
HANG = "hang"

_RESULT, _WAITING, _WORKING = "result", "waiting", "working"
_parent: Connection | None = None  # in a worker: the pipe to the pool


@dataclass(frozen=True)
class WorkerFailure:
    """What a task got instead of a result: its worker died (`CRASH`) or ran past the
    timeout (`HANG`)."""
    kind: str
    message: str


@contextmanager
def waiting() -> Iterator[None]:
    """In a pool's worker: the timeout of the current task stops for the `with` block (it
    waits for its turn, not works). Elsewhere it does nothing."""
    if _parent is None:
        yield
        return
    _parent.send((_WAITING, None))
    try:
        yield
    finally:
        _parent.send((_WORKING, None))


def _serve(conn: Connection, task: Callable, env: dict[str, str]) -> None:
    global _parent
    _parent = conn
    for name, value in env.items():
        os.environ.setdefault(name, value)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the driver, not its tasks
    while True:
        try:
            item = conn.recv()
        except EOFError:  # the pool's process ended
            return
        if item is None:
            return
        conn.send((_WORKING, None))  # the timeout starts now, not while the worker starts
        conn.send((_RESULT, task(item)))


class _Worker:
    def __init__(self, ctx, task: Callable, env: dict[str, str]):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, task, env), daemon=True)
        self.proc.start()
        child.close()
        self.item: object | None = None
        self.busy = False
        self.started: float | None = None  # None until the task starts, and while it waits

    def submit(self, item: object) -> None:
        self.item, self.busy, self.started = item, True, None
        self.conn.send(item)

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()


class WorkerPool:
    """`jobs` worker processes running `task` (a picklable function of one argument);
    `run(items)` yields (item, result or WorkerFailure) as they finish. `env` holds
    environment variables set in each worker unless already set; a worker whose result
    satisfies `replace_if` is replaced after giving it."""

    def __init__(self, jobs: int, task: Callable, timeout_s: float = 120.0,
                 env: dict[str, str] | None = None,
                 replace_if: Callable[[object], bool] | None = None):
        self.ctx = mp.get_context("spawn")
        self.task, self.env = task, dict(env or {})
        self.replace_if = replace_if
        self.timeout_s = timeout_s
        self.workers = [self._new_worker() for _ in range(max(1, jobs))]

    def _new_worker(self) -> _Worker:
        return _Worker(self.ctx, self.task, self.env)

    def close(self) -> None:
        for w in self.workers:
            if not w.busy and w.proc.is_alive():
                try:
                    w.conn.send(None)
                except OSError:  # it died meanwhile
                    pass
            w.stop()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def abandon(self) -> None:
        """Forget the tasks in flight (after an interrupted `run`): their workers are
        replaced."""
        for w in list(self.workers):
            if w.busy:
                self._replace(w)

    def _replace(self, w: _Worker) -> None:
        w.stop()
        self.workers[self.workers.index(w)] = self._new_worker()

    def run(self, items: Iterable) -> Iterator[tuple[object, object]]:
        todo = iter(items)
        exhausted = False
        while True:
            for w in self.workers:
                if not w.busy and not exhausted:
                    item = next(todo, _END)
                    if item is _END:
                        exhausted = True
                    else:
                        w.submit(item)
            busy = [w for w in self.workers if w.busy]
            if not busy:
                return
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=1.0)
            for w in busy:
                item = w.item
                if w.conn in ready:
                    try:
                        kind, value = w.conn.recv()
                    except (EOFError, OSError):
                        self._replace(w)
                        yield item, WorkerFailure(CRASH, f"the worker died (exit code "
                                                         f"{w.proc.exitcode})")
                        continue
                    if kind == _RESULT:
                        w.busy, w.item = False, None
                        if self.replace_if is not None and self.replace_if(value):
                            self._replace(w)
                        yield item, value
                    else:
                        w.started = None if kind == _WAITING else time.monotonic()
                elif w.proc.sentinel in ready:
                    w.proc.join()
                    self._replace(w)
                    yield item, WorkerFailure(CRASH, f"the worker died (exit code "
                                                     f"{w.proc.exitcode})")
                elif w.started is not None and time.monotonic() - w.started > self.timeout_s:
                    self._replace(w)
                    yield item, WorkerFailure(HANG, f"no result after {self.timeout_s:g} s")


_END = object()
