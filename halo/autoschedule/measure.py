"""Measuring schedules: a `MeasureJob` (an algorithm, a schedule as JSON, the sizes) runs on
some host and comes back as a `Measurement` (run times, or why there are none, and the
fingerprint of the host that measured it). An `Executor` runs jobs and yields
measurements as they finish:

- `LocalExecutor(workers=2)`: worker processes on this machine (`halo.worker_pool`), so a
  candidate that crashes or hangs its worker becomes an error measurement and the others
  go on;
- `DaskExecutor(client_or_address)`: the workers of a Dask distributed cluster;
- `RayExecutor(address=None)`: the workers of a Ray cluster (or a local one).

Every host compiles for itself, in parallel, and times one job at a time: a job's timed
calls hold the host's timing lock (a file lock, released by the OS if its holder dies),
after `halo.timing`'s warm-up. A `SideBySide` group (schedules of one algorithm) is
measured in one process, its schedules timed in turns, rounds of them, so that the
host's drift over time weighs on all alike. A measurement carries its host's
`fingerprint` (CPU model and features, thread count, halo version); the driver keeps
only those matching the target's (`same_machine`).

The algorithm is rebuilt in the worker by `job.build`, a picklable function (a
module-level function or a `functools.partial` of one, such as `algorithm_builder`'s)
returning the output Funcs of an unscheduled algorithm; the schedule is applied to them
by name, as `halo.apply_json` does, so it names the Funcs as `build` names them inside a
fresh `halo.NameScope` (where `build` runs). Inputs are made in the worker too
(`job.make_inputs`, else deterministic random arrays of each input's shape and type), so
nothing large travels.
"""
from __future__ import annotations

import copyreg
import fcntl
import functools
import hashlib
import io
import multiprocessing as mp
import os
import pickle
import socket
import tempfile
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from halo.driver import Pipeline
from halo.errors import HaloError
from halo.lang.environment import Environment
from halo.lang.expr import Expr
from halo.lang.func import Func
from halo.lang.names import NameScope
from halo.schedule.conditions import condition_from_json
from halo.schedule.serialize import apply_schedules_json
from halo.target import Target, host_cpu
from halo.timing import time_call, warm_up
from halo.version import __version__
from halo.worker_pool import WorkerFailure, WorkerPool, waiting

DEFAULT_REPEATS = 3
DEFAULT_TIMEOUT_S = 120.0  # compiling one job, or timing it (waiting for the lock is free)
SAMPLE_POINTS = 4096  # output values a measurement brings back, to compare candidates
# The fingerprint entries that must agree for two hosts' times to be comparable.
MACHINE_KEYS = ("cpu", "features", "threads", "halo")


@dataclass(frozen=True)
class Sizes:
    """The region a job computes and the inputs it reads: `output` as (min, extent) per
    dimension, outermost first; `inputs` as {name: shape}; `params` as {name: value}."""
    output: tuple[tuple[int, int], ...]
    inputs: tuple[tuple[str, tuple[int, ...]], ...] = ()
    params: tuple[tuple[str, int | float], ...] = ()

    @staticmethod
    def of(output: Sequence, inputs: Mapping[str, Sequence[int]] | None = None,
           params: Mapping[str, int | float] | None = None) -> Sizes:
        """From an output shape (`(1536, 2560)`) or (min, extent) pairs, and dicts."""
        box = tuple((int(d[0]), int(d[1])) if isinstance(d, (tuple, list)) else (0, int(d))
                    for d in output)
        return Sizes(box, tuple((k, tuple(int(s) for s in v)) for k, v in
                                sorted((inputs or {}).items())),
                     tuple(sorted((params or {}).items())))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(e for _, e in self.output)

    @property
    def origin(self) -> tuple[int, ...]:
        return tuple(lo for lo, _ in self.output)


@dataclass(frozen=True)
class MeasureJob:
    """One schedule of one algorithm to compile and time. `build` (picklable) returns the
    output Funcs of a freshly defined, unscheduled algorithm; `schedule` is JSON from
    `halo.schedule_to_json` (or `AutoscheduleResult.schedule`); `threads` the thread
    count of the target (None: the host's default); `make_inputs` (picklable, optional)
    returns the input arrays by name; `key` is the caller's, returned in the
    Measurement. `cutoff_s`: a candidate whose first call takes longer is not timed
    further (its one time is the measurement): a tuner passes a multiple of the best
    time so far, so a slow candidate costs one call, not a warm-up and `repeats`."""
    build: Callable[[], list[Func]]
    schedule: str
    sizes: Sizes
    repeats: int = DEFAULT_REPEATS
    key: str = ""
    threads: int | None = None
    make_inputs: Callable[[], dict[str, np.ndarray]] | None = None
    cutoff_s: float | None = None


@dataclass(frozen=True)
class GivenInputs:
    """A job's `make_inputs` for arrays the caller gave, by input name: a pipeline whose
    work depends on its data (a histogram, a lookup) is timed on the data it will run
    on. The arrays travel with each job (pickled to the worker that runs it)."""
    arrays: dict[str, np.ndarray]

    def __call__(self) -> dict[str, np.ndarray]:
        return dict(self.arrays)


@dataclass(frozen=True)
class SideBySide:
    """Schedules of one algorithm measured together, in one process: `jobs` share their
    build, sizes, threads and inputs (the first job's `make_inputs`), each with its own
    schedule, key, repeats and cutoff. Each is compiled, then all are timed in `rounds`
    rounds while the host's timing lock is held, a round being a warm-up and `repeats`
    calls of each in turn. A host's speed drifts over the seconds between two jobs:
    identical schedules of a training pipeline timed in separate jobs of one collection
    differed by 1.24x at the median and 1.75x at the 90th percentile on a 2-core virtual
    machine, where each job's own calls agreed within 8%. A drift weighs on every
    schedule of a round alike, so their order holds, which is what ranking schedules
    needs. A schedule that fails is its own error; a crash or a hang of the process is
    every one's."""
    jobs: tuple[MeasureJob, ...]
    rounds: int = 3


@dataclass(frozen=True)
class Measurement:
    """What measuring a job gave: `times_s` (each timed call, after warm-up) or `error`
    (why there are none: a HaloError, a crash, a hang); the measuring host's
    `fingerprint`; `compile_s` (lowering and compiling); `sample`, up to SAMPLE_POINTS
    values of each output at evenly spaced positions, to compare candidates' results."""
    key: str
    times_s: tuple[float, ...] | None
    error: str | None
    fingerprint: dict
    compile_s: float
    sample: tuple[np.ndarray, ...] = field(default=(), repr=False, compare=False)

    @property
    def unmeasured(self) -> bool:
        """Whether no host measured it: its process crashed or hung, or its task was
        lost on a cluster (a schedule's own failure comes with the host's fingerprint)."""
        return not self.fingerprint

    @property
    def seconds(self) -> float | None:
        """The median time of a call (the upper one of an even count), or None."""
        if not self.times_s:
            return None
        return sorted(self.times_s)[len(self.times_s) // 2]


class Executor(Protocol):
    """Runs measure jobs (and `SideBySide` groups of them) somewhere; yields their
    measurements as they finish (in any order; `key` tells them apart). A job that
    fails, however it fails, still yields one measurement, with its `error`."""

    def measure(self, jobs: Sequence[MeasureJob | SideBySide]) -> Iterator[Measurement]: ...


# ------------------------------------------------------------------------- fingerprints


def fingerprint(target: Target | None = None) -> dict:
    """The facts that decide how fast code runs here for `target`: the CPU (LLVM's name,
    and a digest of its features), the thread count, halo's version; and the host name
    (informative, not compared)."""
    target = target or Target()
    cpu = host_cpu()
    features = hashlib.sha256(",".join(sorted(cpu.features)).encode()).hexdigest()[:16]
    return {"cpu": cpu.name, "features": features, "threads": target.num_threads,
            "halo": __version__, "host": socket.gethostname()}


def same_machine(a: Mapping, b: Mapping) -> bool:
    """Whether times measured under fingerprints `a` and `b` are comparable."""
    return all(a.get(k) == b.get(k) for k in MACHINE_KEYS)


def machine_difference(a: Mapping, b: Mapping) -> str:
    """How fingerprint `b` differs from `a`, for a message."""
    return ", ".join(f"{k} {b.get(k)!r} (not {a.get(k)!r})" for k in MACHINE_KEYS
                     if a.get(k) != b.get(k))


# ------------------------------------------------------------------------- algorithms


class _AlgorithmPickler(pickle.Pickler):
    # What `cache_read` remembers of its possible readers is a WeakSet, which pickle
    # refuses: it travels as a WeakSet of the same Funcs.
    dispatch_table = {**copyreg.dispatch_table,
                      weakref.WeakSet: lambda s: (weakref.WeakSet, (list(s),))}


def algorithm_builder(outputs: Sequence[Func]) -> Callable[[], list[Func]]:
    """A picklable `build` for MeasureJob: copies of `outputs` and every Func, input and
    Param they read, with the same names, as they are now (so call it before scheduling
    them)."""
    buffer = io.BytesIO()
    _AlgorithmPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(list(outputs))
    return functools.partial(_unpickled_outputs, buffer.getvalue())


def _unpickled_outputs(blob: bytes) -> list[Func]:
    return pickle.loads(blob)  # noqa: S301 - bytes algorithm_builder made in this run


# ------------------------------------------------------------------------- one job


def run_job(job: MeasureJob) -> Measurement:
    """Measure `job` in this process: build, schedule, compile, then time it holding the
    host's timing lock. Errors (a schedule halo refuses, a run that fails) come back as
    the measurement's `error`; only a crash or a hang of the process itself is left to
    the caller."""
    return run_side_by_side(_group_of(job))[0]


def run_side_by_side(group: SideBySide) -> list[Measurement]:
    """Measure the jobs of `group` in this process (`SideBySide`), in their order."""
    jobs = group.jobs
    target = Target(threads=jobs[0].threads)
    machine = fingerprint(target)
    done: dict[int, Measurement] = {}
    kernels, compile_s, env = {}, {}, None
    for i, job in enumerate(jobs):
        start = time.perf_counter()
        try:
            with compiling():
                with NameScope():  # the names halo makes up, as in the caller's fresh scope
                    outputs = list(job.build())
                if env is None:  # the algorithm's inputs, for default_inputs
                    env = Environment.of(outputs)
                apply_schedule(outputs, job.schedule)
                kernels[i] = Pipeline(outputs).compile(target)
        except Exception as error:  # noqa: BLE001 - any failure is this job's result
            done[i] = _error(job, error, machine, time.perf_counter() - start)
        compile_s[i] = time.perf_counter() - start
    if not kernels:
        return [done[i] for i in range(len(jobs))]
    sizes = jobs[0].sizes
    try:
        arrays = jobs[0].make_inputs() if jobs[0].make_inputs is not None else \
            default_inputs(env, sizes)
    except Exception as error:  # noqa: BLE001 - the inputs fail every job alike
        return [done.get(i) or _error(job, error, machine, compile_s[i])
                for i, job in enumerate(jobs)]
    named = {**arrays, **dict(sizes.params)}
    calls, results, times = {}, {}, {}
    with timing_turn():
        for i, kernel in kernels.items():
            try:
                first = time.perf_counter()
                results[i] = kernel.run(sizes.shape, None, sizes.origin, None, named)
                first = time.perf_counter() - first
            except Exception as error:  # noqa: BLE001
                done[i] = _error(jobs[i], error, machine, compile_s[i])
                continue
            cutoff = jobs[i].cutoff_s
            if cutoff is not None and first > cutoff:
                times[i] = [first]  # slow: its first call is its time
                continue
            # The timed calls write into the first call's outputs, as a user's repeated
            # calls with out= do and as the benchmarks time: a new output each call
            # would time the page faults of its first touch too (blur's 123 MB output:
            # 25 ms a call against 19 into an array written before).
            calls[i] = functools.partial(kernel.run, None, results[i], sizes.origin,
                                         None, named)
            times[i] = []
        for _ in range(group.rounds):
            for i, call in list(calls.items()):
                try:
                    warm_up(call)
                    times[i] += [time_call(call) for _ in range(max(1, jobs[i].repeats))]
                except Exception as error:  # noqa: BLE001
                    done[i] = _error(jobs[i], error, machine, compile_s[i])
                    del calls[i]
    for i, ts in times.items():
        if i not in done:
            done[i] = Measurement(jobs[i].key, tuple(ts), None, machine, compile_s[i],
                                  tuple(sample_of(a) for a in results[i]))
    return [done[i] for i in range(len(jobs))]


def _error(job: MeasureJob, error: Exception, machine: dict, seconds: float) -> Measurement:
    kind = "" if isinstance(error, HaloError) else f"{type(error).__name__}: "
    return Measurement(job.key, None, f"{kind}{error}", machine, seconds)


def measure_here(item: MeasureJob | SideBySide) -> list[Measurement]:
    """The measurements of a job or a group, measured in this process."""
    return run_side_by_side(_group_of(item))


def _group_of(item: MeasureJob | SideBySide) -> SideBySide:
    """A group as it is; a job as a group of one, timed once."""
    return item if isinstance(item, SideBySide) else SideBySide((item,), rounds=1)


def apply_schedule(outputs: list[Func], text: str) -> None:
    """`halo.apply_json` for a pipeline of several outputs: schedule JSON applied to the
    (unscheduled) Funcs feeding `outputs`, by name."""
    env = Environment.of(outputs)

    def condition(data: list) -> Expr:
        return Expr(*condition_from_json(data, env.inputs, env.params))

    apply_schedules_json(text, env.funcs, env.inputs, condition, {})


def default_inputs(env: Environment, sizes: Sizes) -> dict[str, np.ndarray]:
    """Deterministic arrays for the inputs of `env` at `sizes` (small values, so indices
    read from an input stay small; a Buffer keeps its own array)."""
    shapes = dict(sizes.inputs)
    arrays = {}
    for name, inp in env.inputs.items():
        if hasattr(inp, "array"):
            continue
        if name not in shapes:
            raise HaloError(f"the measure job has no shape for input {name}; give it in "
                            f"Sizes.of(..., inputs={{'{name}': shape}})")
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        values = rng.integers(0, 4, shapes[name]) if inp.dtype.is_integer or \
            inp.dtype.is_bool else rng.random(shapes[name])
        arrays[name] = values.astype(inp.dtype.numpy)
    return arrays


def sample_of(a: np.ndarray) -> np.ndarray:
    """Up to SAMPLE_POINTS values of `a` at evenly spaced flat positions (the same
    positions for arrays of the same shape)."""
    flat = np.ascontiguousarray(a).reshape(-1)
    step = max(1, flat.size // SAMPLE_POINTS)
    return flat[::step][:SAMPLE_POINTS].copy()


def samples_agree(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> bool:
    """Whether two measurements' samples hold the same values; floats within what a
    reordered reduction may change."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape:
            return False
        if w.dtype.kind == "f":
            finite = np.abs(w[np.isfinite(w)])
            scale = float(finite.max()) if finite.size else 1.0
            if not np.allclose(g, w, rtol=1e-3, atol=1e-4 * max(1.0, scale), equal_nan=True):
                return False
        elif not np.array_equal(g, w):
            return False
    return True


def timing_turn() -> AbstractContextManager[None]:
    """Hold this host's timing lock alone: one job times at a time on a host, whoever
    started it (worker processes, Dask or Ray workers), and none while a job compiles."""
    return _host_lock(fcntl.LOCK_EX)


def compiling() -> AbstractContextManager[None]:
    """Hold this host's timing lock shared, while a job compiles: compiles run side by
    side, but no job times beside one. A timed call uses every core the target has: on a
    2-core host, unsharp's hand schedule ran 2.2-2.7x slower beside a process lowering
    another pipeline than alone."""
    return _host_lock(fcntl.LOCK_SH)


@contextmanager
def _host_lock(mode: int) -> Iterator[None]:
    """This host's timing lock, held in `mode`: a file lock, so a holder that dies
    releases it; waiting for it does not count against a worker's timeout."""
    path = os.path.join(tempfile.gettempdir(), f"halo-timing-{os.getuid()}.lock")
    with open(path, "a") as lock:
        with waiting():
            fcntl.flock(lock, mode)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _failed(item: MeasureJob | SideBySide, failure: WorkerFailure) -> list[Measurement]:
    return [Measurement(job.key, None, f"{failure.kind}: {failure.message}", {}, 0.0)
            for job in _group_of(item).jobs]


# ------------------------------------------------------------------------- executors


class LocalExecutor:
    """Jobs measured by `workers` worker processes on this machine (default 2; they
    compile in parallel and time one at a time). A job whose worker crashes or runs past
    `timeout_s` (compiling, or timing) becomes an error measurement and the worker is
    replaced. The workers start on the first `measure` and stay until `close()` (or the
    end of a `with` block)."""

    def __init__(self, workers: int = 2, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.workers, self.timeout_s = max(1, workers), timeout_s
        self._pool: WorkerPool | None = None

    def measure(self, jobs: Sequence[MeasureJob | SideBySide]) -> Iterator[Measurement]:
        if self._pool is None:
            self._pool = WorkerPool(self.workers, measure_here, self.timeout_s)
        try:
            for item, result in self._pool.run(jobs):
                yield from _failed(item, result) if isinstance(result, WorkerFailure) \
                    else result
        except GeneratorExit:  # the caller stopped early: drop what is still running
            self._pool.abandon()
            raise

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_local = threading.local()


def measure_isolated(item: MeasureJob | SideBySide, timeout_s: float = DEFAULT_TIMEOUT_S
                     ) -> list[Measurement]:
    """`measure_here` in a child process of this one (one per thread, kept), so a crash
    or a hang is the job's error, not the death of the process calling: what a Dask or
    Ray task runs. A daemonic process (a Dask worker unless `distributed.worker.daemon`
    is False) may not start children: it measures the job itself."""
    if mp.current_process().daemon:
        return measure_here(item)
    pool = getattr(_local, "pool", None)
    if pool is not None and pool.timeout_s != timeout_s:
        pool.close()
        pool = None
    if pool is None:
        pool = _local.pool = WorkerPool(1, measure_here, timeout_s)
    for _, result in pool.run([item]):
        return _failed(item, result) if isinstance(result, WorkerFailure) else result
    raise AssertionError("a worker pool returned no result")  # pragma: no cover


def _lost(item: MeasureJob | SideBySide, error: BaseException) -> list[Measurement]:
    return [Measurement(job.key, None, f"the task failed on the cluster: "
                                       f"{type(error).__name__}: {error}", {}, 0.0)
            for job in _group_of(item).jobs]


class DaskExecutor:
    """Jobs measured on the workers of a Dask distributed cluster: `client` a
    `distributed.Client`, or the scheduler's address (`"tcp://host:8786"`) to connect to.
    Each job runs in a child process of its Dask worker (`measure_isolated`)."""

    def __init__(self, client: object = None, timeout_s: float = DEFAULT_TIMEOUT_S):
        try:
            # Dask is optional (the halo[dask] extra): imported only when asked for.
            import distributed
        except ImportError:
            raise HaloError("DaskExecutor needs Dask distributed: pip install "
                            "'halo[dask]'") from None
        self._distributed = distributed
        self.client = client if isinstance(client, distributed.Client) else \
            distributed.Client(client)
        self.timeout_s = timeout_s

    def measure(self, jobs: Sequence[MeasureJob | SideBySide]) -> Iterator[Measurement]:
        jobs = list(jobs)
        futures = self.client.map(measure_isolated, jobs, timeout_s=self.timeout_s,
                                  pure=False)
        job_of = {f.key: j for f, j in zip(futures, jobs, strict=True)}
        try:
            for future in self._distributed.as_completed(futures):
                try:
                    measured = future.result()
                except Exception as error:  # noqa: BLE001 - a lost task is its job's result
                    measured = _lost(job_of[future.key], error)
                yield from measured
        finally:
            for f in futures:
                f.cancel()


class RayExecutor:
    """Jobs measured on a Ray cluster: `address` as `ray.init` takes it (None: a local
    one started here, or the one this process already joined; "auto": the cluster of
    this machine). Each job runs in a child process of its Ray worker."""

    def __init__(self, address: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 **init_options):
        try:
            # Ray is optional (the halo[ray] extra): imported only when asked for.
            import ray
        except ImportError:
            raise HaloError("RayExecutor needs Ray: pip install 'halo[ray]'") from None
        self._ray = ray
        if not ray.is_initialized():
            ray.init(address=address, **init_options)
        self._task = ray.remote(num_cpus=1, max_retries=0)(measure_isolated)
        self.timeout_s = timeout_s

    def measure(self, jobs: Sequence[MeasureJob | SideBySide]) -> Iterator[Measurement]:
        ray = self._ray
        pending = {self._task.remote(j, self.timeout_s): j for j in jobs}
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                job = pending.pop(done[0])
                try:
                    measured = ray.get(done[0])
                except Exception as error:  # noqa: BLE001 - a lost task is its job's result
                    measured = _lost(job, error)
                yield from measured
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)


def as_executor(executor: object) -> Executor:
    """An Executor from what `halo.autoschedule(executor=...)` takes: an Executor, a
    `dask.distributed.Client`, or the context `ray.init()` returned."""
    if hasattr(executor, "measure"):
        return executor
    module = type(executor).__module__.split(".")[0]
    if module == "distributed":
        return DaskExecutor(executor)
    if module == "ray":
        return RayExecutor()
    raise HaloError(f"halo.autoschedule(executor={executor!r}): an executor is a "
                    "halo.autoschedule.measure.Executor (LocalExecutor, DaskExecutor, "
                    "RayExecutor), a dask.distributed.Client, or what ray.init() returned")

