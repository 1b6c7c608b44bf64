"""Cases run in long-lived worker processes (`halo.worker_pool`), so a crash or a hang is
an outcome, not the end of the run: a worker that dies is a `CRASH` outcome, one that runs
past the timeout a `HANG`, and either is replaced; so is one whose case reports a CUDA
error (a `CRASH` outcome from the worker itself: its GPU context is unusable after one)."""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from halo.fuzz.check import CRASH, HANG, Case, Outcome, run_case
from halo.worker_pool import CRASH as WORKER_CRASH
from halo.worker_pool import WorkerFailure
from halo.worker_pool import WorkerPool as _Pool

THREADS_PER_WORKER = 2  # parallel loops still run on several threads, without oversubscribing


def _lost_its_gpu(outcome: Outcome) -> bool:
    return outcome.kind == CRASH  # run_case reports a CUDA error as a crash


class WorkerPool(_Pool):
    """`jobs` workers running fuzz cases; `run(cases)` yields (case, outcome) as they
    finish."""

    def __init__(self, jobs: int, timeout_s: float = 120.0):
        super().__init__(jobs, run_case, timeout_s,
                         env={"HALO_NUM_THREADS": str(THREADS_PER_WORKER)},
                         replace_if=_lost_its_gpu)

    def run(self, cases: Iterable[Case]) -> Iterator[tuple[Case, Outcome]]:
        for case, result in super().run(cases):
            if isinstance(result, WorkerFailure):
                result = Outcome(CRASH if result.kind == WORKER_CRASH else HANG, result.message)
            yield case, result

    def run_all(self, cases: list[Case]) -> list[Outcome]:
        """Outcomes of `cases`, in order."""
        results = dict(self.run(cases))
        return [results[c] for c in cases]
