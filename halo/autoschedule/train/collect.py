"""`collect`: random pipelines at the realistic profile, each measured under the
schedules the search draws for it (`draws`), appended as raw samples (`samples`).

Pipelines go in chunks: the chunk's schedules are drawn in parallel worker processes
(each pipeline's states, and their calls as halo's schedule JSON), then measured through
an `Executor` (`halo.autoschedule.measure`: worker processes here, or a Dask or Ray
cluster), a pipeline's schedules as one `SideBySide` group (compiled by one worker,
then timed in `rounds` rounds of turns, one group at a time per host), and the chunk's
records are appended. A run is resumable: the seeds the file already holds (for
this profile and generator version) are skipped. Measurements from a host whose
fingerprint differs from this one's are dropped (their features would use this host's
facts).
"""
from __future__ import annotations

import functools
import multiprocessing as mp
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from halo.autoschedule.cost_model import default_model
from halo.autoschedule.measure import (
    Executor,
    MeasureJob,
    Measurement,
    SideBySide,
    Sizes,
    same_machine,
)
from halo.autoschedule.train.draws import draw_states
from halo.autoschedule.train.pipelines import schedule_json, state_json, training_pipeline
from halo.autoschedule.train.samples import append, host_facts, read
from halo.errors import HaloError
from halo.random_programs.random_pipeline import GENERATOR_VERSION, random_pipeline
from halo.random_programs.size_profile import PROFILES, REALISTIC

CUTOFF_S = 1.0  # a schedule whose first call takes longer is timed once


@dataclass(frozen=True)
class CollectOptions:
    out: Path
    seeds: tuple[int, ...]
    threads: int
    profile: str = REALISTIC.name
    greedy: int = 4         # dropout descents per pipeline
    walks: int = 8          # random walks per pipeline
    repeats: int = 3        # timed calls per schedule and round, after the warm-up
    rounds: int = 3         # rounds a pipeline's schedules are timed in, side by side
    chunk: int = 16         # pipelines per chunk (drawn, then measured, then appended)
    draw_workers: int = 2   # processes drawing schedules (1: this one)


@dataclass
class CollectSummary:
    pipelines: int = 0
    samples: int = 0
    errors: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # pipelines not drawn, by why

    def line(self) -> str:
        skipped = ", ".join(f"{v} {k}" for k, v in sorted(self.skipped.items()))
        return (f"{self.pipelines} pipelines, {self.samples} samples measured, "
                f"{self.errors} schedules failed" + (f"; skipped: {skipped}" if skipped
                                                     else ""))


def collect(options: CollectOptions, executor: Executor, summary: CollectSummary | None = None,
            progress: bool = True) -> CollectSummary:
    """Measure the seeds of `options` not yet in `options.out`, appending each pipeline's
    records as they are all back; counts go to `summary` (also when interrupted)."""
    facts = host_facts(options.threads)
    done = {r["seed"] for r in read([options.out]) if r["profile"] == options.profile
            and r["generator"] == GENERATOR_VERSION and same_machine(r["machine"], facts)}
    todo = [s for s in options.seeds if s not in done]
    summary = summary if summary is not None else CollectSummary()
    bar = tqdm(total=len(todo), unit="pipeline", disable=not progress, desc="collect")
    plan = functools.partial(plan_pipeline, options=options, facts=facts)
    pool = _draw_pool(options.draw_workers) if options.draw_workers > 1 else None
    try:
        for start in range(0, len(todo), options.chunk):
            chunk = todo[start:start + options.chunk]
            plans: list[dict] = []
            try:
                drawn = list(pool.map(plan, chunk)) if pool else [plan(s) for s in chunk]
            except BrokenProcessPool:
                pool = _draw_pool(options.draw_workers)
                drawn = [[{"skip": "crashed while drawing"}] for _ in chunk]
            for records in drawn:
                if records and "skip" in records[0]:
                    why = records[0]["skip"]
                    summary.skipped[why] = summary.skipped.get(why, 0) + 1
                else:
                    plans += records
            for measured in _measure(plans, options, facts, executor):
                append(options.out, measured)  # a pipeline at a time: kept if interrupted
                summary.pipelines += 1
                summary.samples += sum(r["times_s"] is not None for r in measured)
                summary.errors += sum(r["times_s"] is None for r in measured)
            bar.update(len(chunk))
            bar.set_postfix(samples=summary.samples, errors=summary.errors)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        bar.close()
    return summary


def _draw_pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"))


def _measure(plans: list[dict], options: CollectOptions, facts: dict, executor: Executor
             ) -> Iterable[list[dict]]:
    """The records of each pipeline of `plans`, measured, once all its jobs are back: a
    pipeline's schedules are one `SideBySide` group (compiled by one worker, then timed
    in turns), so that the host's drift over time weighs on all of them alike. A
    schedule whose first call takes over CUTOFF_S is not timed again. A group whose
    worker crashed or hung (one schedule of it ran for minutes) is measured again one
    job at a time (`rounds` 1), so that only that schedule fails."""
    by_key = {p["key"]: p for p in plans}
    groups: dict[int, list[MeasureJob]] = {}
    for p in plans:
        groups.setdefault(p["seed"], []).append(MeasureJob(
            functools.partial(pipeline_outputs, p["seed"], options.profile),
            p.pop("schedule_json"), _sizes(p["seed"], options.profile), options.repeats,
            p["key"], options.threads,
            functools.partial(pipeline_inputs, p["seed"], options.profile), CUTOFF_S))
    jobs = {j.key: j for js in groups.values() for j in js}
    waiting = Counter(p["seed"] for p in plans)
    back: dict[int, list[dict]] = {}
    again: list[MeasureJob] = []

    def done(m: Measurement, rounds: int) -> list[dict] | None:
        record = by_key[m.key]
        seed = record["seed"]
        waiting[seed] -= 1
        if m.error is not None or same_machine(m.fingerprint, facts):
            record.update(times_s=list(m.times_s) if m.times_s else None, error=m.error,
                          compile_s=round(m.compile_s, 3), schedule=jobs[m.key].schedule,
                          machine=facts, rounds=rounds)
            del record["key"]
            back.setdefault(seed, []).append(record)
        return None if waiting[seed] else back.pop(seed, [])

    for m in executor.measure([SideBySide(tuple(js), options.rounds)
                               for js in groups.values()]):
        if m.unmeasured and len(groups[by_key[m.key]["seed"]]) > 1:
            again.append(jobs[m.key])
        elif (records := done(m, options.rounds)) is not None:
            yield records
    for m in executor.measure(again):
        if (records := done(m, 1)) is not None:
            yield records


def plan_pipeline(seed: int, options: CollectOptions, facts: dict) -> list[dict]:
    """The records (without measurements) of the schedules drawn for pipeline `seed`,
    or one record `{"skip": why}` when the search can't model it."""
    try:
        tp = training_pipeline(seed, PROFILES[options.profile], options.threads,
                               facts["vector_bytes"], tuple(facts["cache_bytes"]))
        states = draw_states(tp, default_model(), options.greedy, options.walks, seed)
    except Exception as e:  # noqa: BLE001 - a pipeline the search can't model is skipped
        return [{"skip": f"not modelled ({type(e).__name__})"}]
    records = []
    for k, (how, state) in enumerate(states):
        try:
            text = schedule_json(tp, state)
        except HaloError as e:  # a state the schedule calls can't express
            records.append({"skip": f"unexpressible state ({type(e).__name__})"})
            continue
        records.append({"key": f"{seed}:{k}", "seed": seed, "profile": options.profile,
                        "generator": GENERATOR_VERSION, "pipeline": tp.fingerprint,
                        "how": how, "state": state_json(tp, state), "schedule_json": text})
    kept = [r for r in records if "skip" not in r]
    return kept or records[:1] or [{"skip": "no states"}]


def pipeline_outputs(seed: int, profile: str) -> list:
    """The output Funcs of pipeline `seed` (a MeasureJob's `build`)."""
    return [random_pipeline(seed, profile=PROFILES[profile]).build().output]


def pipeline_inputs(seed: int, profile: str) -> dict[str, np.ndarray]:
    """The input arrays of pipeline `seed`, without NaN or infinities (a MeasureJob's
    `make_inputs`)."""
    return random_pipeline(seed, profile=PROFILES[profile]).make_inputs(specials=False)


def _sizes(seed: int, profile: str) -> Sizes:
    p = random_pipeline(seed, profile=PROFILES[profile])
    return Sizes.of(list(zip(p.output_origin, p.output_shape, strict=True)),
                    {i.name: i.shape for i in p.inputs})
