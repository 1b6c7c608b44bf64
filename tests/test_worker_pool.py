"""`halo.worker_pool`: results come back as tasks finish; a worker that dies or works past
the timeout gives its task a WorkerFailure and is replaced; waiting for a turn
(`waiting()`) does not count against the timeout; a worker whose result says it is
unusable (`replace_if`) is replaced; the host's timing lock lets one task
time at a time."""
from __future__ import annotations

from halo.worker_pool import CRASH, HANG, WorkerFailure, WorkerPool
from tests.worker_tasks import die, pid, timed_interval, wait_then_answer, work


def test_results_failures_and_replaced_workers():
    with WorkerPool(2, work, timeout_s=1.0) as pool:
        results = dict(pool.run([0.0, 3.0, 0.1]))
        assert results[0.0] == "worked" and results[0.1] == "worked"
        assert results[3.0] == WorkerFailure(HANG, "no result after 1 s")
        assert dict(pool.run([0.0])) == {0.0: "worked"}  # the hung worker was replaced
    with WorkerPool(1, die, timeout_s=5.0) as pool:
        (_, failure), = pool.run([3])
        assert failure == WorkerFailure(CRASH, "the worker died (exit code 3)")


def test_waiting_for_a_turn_is_not_a_hang():
    with WorkerPool(1, wait_then_answer, timeout_s=0.5) as pool:
        assert dict(pool.run([1.5])) == {1.5: "answered"}


def test_timing_turns_do_not_overlap():
    with WorkerPool(2, timed_interval, timeout_s=10.0) as pool:
        intervals = sorted(r for _, r in pool.run([0.3, 0.3, 0.3]))
    assert len(intervals) == 3
    for (_, end), (start, _) in zip(intervals, intervals[1:], strict=False):
        assert end <= start


def test_a_worker_whose_result_says_so_is_replaced():
    with WorkerPool(1, pid, timeout_s=30.0) as pool:
        first, second = (p for _, p in pool.run(["a", "b"]))
        assert first == second  # kept between tasks
    with WorkerPool(1, pid, timeout_s=30.0, replace_if=lambda _: True) as pool:
        first, second = (p for _, p in pool.run(["a", "b"]))
        assert first != second
