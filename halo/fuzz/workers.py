"""Cases run in long-lived worker processes, so a crash or a hang is an outcome, not the
end of the run.

Workers are started with the "spawn" method (libgomp hangs a process forked after a
parallel kernel ran) and kept for many cases, since starting one costs about a second. A
worker that dies (a segfault in generated code) is reported as a crash and replaced; one
that runs past the timeout is killed, reported as a hang, and replaced; so is one that
reports a CUDA error (its GPU context is unusable after one).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections.abc import Iterable, Iterator
from multiprocessing.connection import wait

from halo.fuzz.check import CRASH, HANG, Case, Outcome, run_case

THREADS_PER_WORKER = 2  # parallel loops still run on several threads, without oversubscribing


def _serve(conn) -> None:
    os.environ.setdefault("HALO_NUM_THREADS", str(THREADS_PER_WORKER))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the campaign, not its cases
    while True:
        case = conn.recv()
        if case is None:
            return
        conn.send(run_case(case))


class _Worker:
    def __init__(self, ctx):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.case: Case | None = None
        self.started = 0.0

    def submit(self, case: Case) -> None:
        self.case, self.started = case, time.monotonic()
        self.conn.send(case)

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()


class WorkerPool:
    """`jobs` worker processes; `run(cases)` yields (case, outcome) as they finish."""

    def __init__(self, jobs: int, timeout_s: float = 120.0):
        self.ctx = mp.get_context("spawn")
        self.timeout_s = timeout_s
        self.workers = [_Worker(self.ctx) for _ in range(max(1, jobs))]

    def close(self) -> None:
        for w in self.workers:
            if w.case is None and w.proc.is_alive():
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
        """Forget the cases in flight (after an interrupted `run`): their workers are
        replaced."""
        for w in list(self.workers):
            if w.case is not None:
                self._replace(w)

    def _replace(self, w: _Worker) -> None:
        w.stop()
        self.workers[self.workers.index(w)] = _Worker(self.ctx)

    def run(self, cases: Iterable[Case]) -> Iterator[tuple[Case, Outcome]]:
        todo = iter(cases)
        exhausted = False
        while True:
            for w in self.workers:
                if w.case is None and not exhausted:
                    case = next(todo, None)
                    if case is None:
                        exhausted = True
                    else:
                        w.submit(case)
            busy = [w for w in self.workers if w.case is not None]
            if not busy:
                return
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=1.0)
            for w in busy:
                case = w.case
                if w.conn in ready:
                    try:
                        outcome = w.conn.recv()
                    except (EOFError, OSError):
                        outcome = Outcome(CRASH, f"the worker died (exit code "
                                                 f"{w.proc.exitcode})")
                        self._replace(w)
                    else:
                        w.case = None
                        if outcome.kind == CRASH:  # a CUDA error: its GPU context is lost
                            self._replace(w)
                    yield case, outcome
                elif w.proc.sentinel in ready:
                    w.proc.join()
                    outcome = Outcome(CRASH, f"the worker died (exit code {w.proc.exitcode})")
                    self._replace(w)
                    yield case, outcome
                elif time.monotonic() - w.started > self.timeout_s:
                    self._replace(w)
                    yield case, Outcome(HANG, f"no result after {self.timeout_s:.0f} s")

    def run_all(self, cases: list[Case]) -> list[Outcome]:
        """Outcomes of `cases`, in order."""
        results = dict(self.run(cases))
        return [results[c] for c in cases]
