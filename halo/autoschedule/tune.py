"""Autotuning: `halo.autoschedule(..., measure=True, budget_s=...)` measures candidates and
returns the fastest one it measured.

The rounds, until the budget is spent:

1. The root schedule (halo's default nests) is measured alone first. Its values are
   checked against `halo.reference` at a reduced size here, and its measured outputs are
   what every later candidate's must equal (`measure.samples_agree`).
2. The first round measures the beam search's ranking; each later one, greedy probes
   with dropout and every mutation of the three fastest measured schedules
   (`proposals.py`). A round prices its proposals with the model, drops those measured
   before (this session or a recorded one: same schedule JSON), and measures the
   `batch` cheapest through the executor: compiled in parallel, timed one at a time.
   Two of each later round's slots go to random walks (each Func's decision drawn at
   random), whatever their price: mutations and probes stay near what the model
   likes, and the schedules it misjudges are often far from it.
3. After each round, a model that can be fitted (`fit(terms, seconds)`, as
   `LinearTermsModel` can) is refitted on every measurement so far, and the next round
   is priced by it.

At the end, in the time kept for it, the RUNOFF fastest measured schedules are measured
again side by side (RUNOFF_ROUNDS rounds of turns in one worker): each got there by the
best of many noisy times, and on a busy machine the fastest first time is as often luck
as speed (unsharp's best first time, 7.5 ms, ran 11-14 ms timed again). Their runoff
medians rank them, ahead of the rest. The ranked schedules are checked at awkward sizes
(`validate.py`) until one passes; it is applied and returned with its time (its runoff
median, where it ran) and the tuning curve (seconds spent, best first time so far).
Measurements from a host whose fingerprint is not the target's are dropped. With
`records=`, every measurement and the chosen best (with its runoff times) are appended
to the records file (`records.py`), and a later call resumes: what was measured is not
measured again (but for the runoff), the budget counts the time spent before, and once
it is spent (or without `measure=True`) the recorded best is returned at once.
"""
from __future__ import annotations

import json
import random
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from halo.autoschedule.algorithm import Algorithm, extent
from halo.autoschedule.canonical import canonical
from halo.autoschedule.features import TERMS
from halo.autoschedule.measure import (
    DEFAULT_TIMEOUT_S,
    Executor,
    GivenInputs,
    LocalExecutor,
    MeasureJob,
    Measurement,
    SideBySide,
    Sizes,
    algorithm_builder,
    apply_schedule,
    as_executor,
    default_inputs,
    fingerprint,
    machine_difference,
    same_machine,
    samples_agree,
)
from halo.autoschedule.proposals import greedy_probe, mutations, random_walk
from halo.autoschedule.records import (
    BEST,
    MEASUREMENT,
    Record,
    Records,
    best_of,
    for_target,
    sizes_key,
)
from halo.autoschedule.search import Search, State
from halo.autoschedule.validate import Snapshot, Validator, apply_calls
from halo.driver import Pipeline
from halo.errors import HaloError
from halo.lang.environment import Environment
from halo.lang.func import Func
from halo.reference import reference
from halo.schedule.calls import Call
from halo.schedule.serialize import schedules_to_json
from halo.target import Target
from halo.timing import WARM_S

BATCH = 8          # candidates measured per round
PROBES = 4         # greedy probes per round
DROPOUT = 0.5      # the chance a probe passes over each child
PARENTS = 3        # the fastest measured schedules mutated each round
EXPLORE = 2        # random walks measured each round whatever their predicted time
CHECK_SIDE = 24    # the root schedule is checked against halo.reference over at most this
REPEATS = 3        # timed calls per candidate, after the warm-up
CUTOFF = 3.0       # a candidate whose first call is this much slower than the best so far
                   # is timed once (the root schedule of a big matmul takes seconds a call)
FIT_AFTER = 4      # measurements before the model is refitted
CHECK_SHARE = 0.1  # of the budget, kept for the runoff (half of it) and the checks at
                   # awkward sizes
RUNOFF = 4         # the fastest measured schedules measured again at the end
RUNOFF_ROUNDS = 3  # times each
MIN_TIMEOUT_S = 10.0  # the default executor's timeout for a job, at the least


@dataclass
class Tuned:
    """What tuning chose (already applied to the Funcs)."""
    schedule: str
    calls: list[Call] | None   # None: a schedule from the records, applied as JSON
    measured_s: float
    predicted_s: float
    curve: list[tuple[float, float]]
    measurements: int
    rounds: int
    from_records: bool


@dataclass
class _Candidate:
    schedule: str
    state: State | None
    calls: list[Call] | None
    predicted_s: float
    seconds: float | None = None
    error: str | None = None
    recorded_best: bool = False
    runoff: list[float] = field(default_factory=list)  # its times measured again at the end
    compile_s: float = 1.0  # lowering and compiling it took (a guess until measured)

    @property
    def time_s(self) -> float | None:
        """Its runoff median (the upper one of an even count) where it ran, else its
        first measured time."""
        return sorted(self.runoff)[len(self.runoff) // 2] if self.runoff else self.seconds


@dataclass
class Problem:
    """What the tuner works on: the user's (unscheduled) outputs, the algorithm at the
    planned sizes, the search (its model is refitted), the states it starts from, the
    calls of a state, and the root schedule."""
    outputs: list[Func]
    alg: Algorithm
    target: Target
    inputs: dict | None
    search: Search
    starts: list[State]
    calls_of: Callable[[State], list[Call]]
    root: State
    seed: int = 0
    params: dict = field(default_factory=dict)


def recorded_best(problem: Problem, records: str) -> Tuned | None:
    """The best schedule recorded for this problem on this machine, applied; None if there
    is none."""
    session = _Session(problem, records, budget_s=0.0)
    return session.recorded()


def tune(problem: Problem, budget_s: float, executor: object, records: str | None,
         progress: bool | None) -> Tuned:
    """Measure candidates for `budget_s` seconds (counting a resumed problem's earlier
    sessions) and apply the fastest that passes the checks."""
    session = _Session(problem, records, budget_s)
    # A session stops measuring where its checks' share of the budget begins.
    done = session.spent_before >= budget_s * (1 - CHECK_SHARE)
    recorded = session.recorded() if done else None
    if recorded is not None:
        return recorded
    owned = executor is None
    # A hung candidate holds up its round until its worker's timeout: a fraction of the
    # budget, so the budget holds (within a compile) however candidates fail.
    timeout_s = min(DEFAULT_TIMEOUT_S, max(MIN_TIMEOUT_S, budget_s / 4))
    executor = LocalExecutor(timeout_s=timeout_s) if owned else as_executor(executor)
    try:
        return session.run(executor, sys.stderr.isatty() if progress is None else progress)
    finally:
        if owned:
            executor.close()


def _given_inputs(problem: Problem, sizes: Sizes) -> GivenInputs | None:
    """The caller's arrays (`inputs=`) as the jobs' inputs when they give every input at
    the planned size; else None (deterministic arrays of each input's shape)."""
    given = {getattr(k, "name", k): v for k, v in (problem.inputs or {}).items()}
    shapes = dict(sizes.inputs)
    if not shapes or set(given) != set(shapes) or any(
            not isinstance(given[name], np.ndarray) or given[name].shape != tuple(shape)
            for name, shape in shapes.items()):
        return None
    return GivenInputs(given)


class _Session:
    def __init__(self, problem: Problem, records: str | None, budget_s: float):
        self.p = problem
        self.start = time.monotonic()
        self.budget_s = budget_s
        self.id = uuid.uuid4().hex[:12]
        self.build = algorithm_builder(problem.outputs)
        self.canon = canonical(problem.outputs)
        self.machine = fingerprint(problem.target)
        alg = problem.alg
        out_box = alg.outputs[problem.outputs[0].name]
        self.sizes = Sizes(tuple((lo, hi - lo + 1) for lo, hi in out_box),
                           tuple((name, extent(box)) for name, (box, _) in alg.inputs.items()),
                           tuple(problem.params.items()))
        self.key = sizes_key(self.canon, alg.outputs,
                             {name: box for name, (box, _) in alg.inputs.items()},
                             problem.params)
        self.make_inputs = _given_inputs(problem, self.sizes)
        self.records = Records(records) if records else None
        prior = self.records.of_problem(self.canon.digest, self.key) if self.records else []
        self.prior = for_target(prior, self.machine, "halo.autoschedule")
        # Each session's clock starts where the earlier ones stopped (`session_s`).
        self.spent_before = max((r.session_s for r in self.prior), default=0.0)
        self.candidates: dict[str, _Candidate] = {}
        for r in self.prior:
            text = r.schedule_for(self.canon)
            c = self.candidates.setdefault(_key(text), _Candidate(text, None, None,
                                                                  r.predicted_s or 0.0))
            if r.seconds is not None and (c.seconds is None or r.seconds < c.seconds):
                c.seconds = r.seconds
            c.recorded_best |= r.kind == BEST
            if r.error is not None and c.seconds is None:
                c.error = r.error
        self.reference_sample: tuple = ()
        self.curve: list[tuple[float, float]] = []
        self.measured = 0
        self.dropped_hosts: set[str] = set()
        self.rounds = 0

    # ------------------------------------------------------------------ recorded best

    def recorded(self) -> Tuned | None:
        best = best_of(self.prior)
        if best is None:
            return None
        text = best.schedule_for(self.canon)
        apply_schedule(self.p.outputs, text)
        return Tuned(_schedule_json(self.p.outputs), None, best.seconds,
                     best.predicted_s or 0.0, [(self.spent_before, best.seconds)],
                     0, 0, from_records=True)

    # ------------------------------------------------------------------ the rounds

    def run(self, executor: Executor, progress: bool) -> Tuned:
        p = self.p
        deadline = self.start + max(0.0, self.budget_s - self.spent_before)
        check_at = deadline - CHECK_SHARE * self.budget_s
        bar = _bar(self.budget_s, self.spent_before) if progress else None
        root = self.root = self._candidate(p.root)
        self._check_root(root)
        self._measure(executor, [root], float("inf"), bar)
        if root.error is not None or root.seconds is None:
            raise HaloError(f"halo.autoschedule(measure=True): the root schedule of "
                            f"{', '.join(f.name for f in p.outputs)} could not be measured "
                            f"({root.error})")
        rng = random.Random(p.seed)
        proposals, walks = [priced.state for priced in p.search.run(p.starts)], []
        while time.monotonic() < check_at:
            batch = self._batch(proposals, walks, rng)
            if not batch:
                if not proposals and not walks:
                    break
                proposals, walks = [], []
            else:
                self.rounds += 1
                self._measure(executor, batch, check_at, bar)
                self._refit()
            proposals, walks = self._proposals(rng, check_at)
        self._runoff(executor, deadline - CHECK_SHARE * self.budget_s / 2)
        if bar is not None:
            bar.close()
        return self._choose()

    def _candidate(self, state: State) -> _Candidate:
        calls = self.p.calls_of(state)
        copies = self.build()
        apply_calls(copies, calls)
        text = _schedule_json(copies)
        known = self.candidates.get(_key(text))
        if known is not None:
            if known.state is None:
                known.state, known.calls = state, calls
            return known
        return _Candidate(text, state, calls, 0.0)

    def _batch(self, states: list[State], explore: Sequence[State] = (),
               rng: random.Random | None = None) -> list[_Candidate]:
        """`BATCH` proposals not measured yet: up to `EXPLORE` drawn at random from
        `explore`, whatever the model thinks of them, and the cheapest of the rest."""
        new: dict[str, _Candidate] = {}
        wild: list[str] = []
        for group in (explore, states):
            for s in group:
                try:
                    c = self._candidate(s)
                except HaloError:  # a proposal halo refuses (a mutation too far): skipped
                    continue
                k = _key(c.schedule)
                if k not in self.candidates and k not in new:
                    new[k] = c
                    if group is explore:
                        wild.append(k)
        fresh = list(new.values())
        for c, price in zip(fresh, self.p.search.price([c.state for c in fresh]), strict=True):
            c.predicted_s = price
        picked = [new[k] for k in rng.sample(wild, min(EXPLORE, len(wild)))] if rng else []
        rest = sorted((c for c in fresh if c not in picked), key=lambda c: c.predicted_s)
        return picked + rest[:BATCH - len(picked)]

    def _proposals(self, rng: random.Random, until: float) -> tuple[list[State], list[State]]:
        """(mutations of the fastest measured schedules and greedy probes, to be taken
        by price; random walks, some of which are measured whatever their price)."""
        p = self.p
        out, walks = [], []
        for k in range(PROBES):
            if time.monotonic() >= until:
                break
            start = p.starts[k % len(p.starts)]
            out.append(greedy_probe(p.search, start, rng, DROPOUT))
            walks.append(random_walk(p.search, start, rng))
        for parent in self._fastest()[:PARENTS]:
            if parent.state is not None:
                out += mutations(parent.state, p.search.machine.lanes)
        return out, walks

    def _fastest(self) -> list[_Candidate]:
        ok = [c for c in self.candidates.values() if c.seconds is not None]
        return sorted(ok, key=lambda c: c.seconds)

    def _check_root(self, root: _Candidate) -> None:
        """The root schedule against `halo.reference`, over at most CHECK_SIDE points a
        side (or the whole estimate where the pipeline accepts no smaller region)."""
        copies = self.build()
        apply_calls(copies, root.calls)
        kernel = Pipeline(copies).compile(self.p.target)
        env = Environment.of(copies)
        arrays = self.make_inputs() if self.make_inputs else default_inputs(env, self.sizes)
        named = {**arrays, **dict(self.sizes.params)}
        reduced = tuple(min(e, CHECK_SIDE) for e in self.sizes.shape)
        for shape in dict.fromkeys([reduced, self.sizes.shape]):
            try:
                got = kernel.run(shape, None, self.sizes.origin, None, named)
            except HaloError:
                continue
            want = reference(copies, shape, named, self.sizes.origin)
            want = want if isinstance(want, list) else [want]
            if not samples_agree([g.reshape(-1) for g in got], [w.reshape(-1) for w in want]):
                raise HaloError(f"halo.autoschedule(measure=True): halo's default schedule "
                                f"of {', '.join(f.name for f in self.p.outputs)} differs from "
                                f"halo.reference over {shape}; please report this algorithm")
            return

    def _job(self, c: _Candidate, key: int, repeats: int = REPEATS,
             cutoff: float | None = None) -> MeasureJob:
        return MeasureJob(self.build, c.schedule, self.sizes, repeats, str(key),
                          self.p.target.num_threads, self.make_inputs, cutoff)

    def _measure(self, executor: Executor, batch: list[_Candidate], until: float,
                 bar) -> None:
        best = self._fastest()
        cutoff = CUTOFF * best[0].seconds if best else None
        repeats = REPEATS if best else 1  # the root schedule: a baseline, not a contender
        jobs = [self._job(c, k, repeats, cutoff) for k, c in enumerate(batch)]
        for m in _measured(executor, jobs, until):
            self._take(batch[int(m.key)], m)
            if bar is not None:
                self._show(bar)

    def _runoff(self, executor: Executor, until: float) -> None:
        """The RUNOFF fastest schedules measured again side by side (one `SideBySide`
        group: compiled by one worker, then RUNOFF_ROUNDS rounds of REPEATS calls of
        every one in turn, so a drift of the machine's speed falls on them all), if it
        can finish by `until` (a group's measurements come back together); each keeps
        its median of each round."""
        finalists = self._fastest()[:RUNOFF]
        needs = sum(c.compile_s + RUNOFF_ROUNDS * (WARM_S + (REPEATS + 1) * c.seconds)
                    for c in finalists)
        if len(finalists) < 2 or time.monotonic() + needs >= until:
            return
        group = SideBySide(tuple(self._job(c, k) for k, c in enumerate(finalists)),
                           RUNOFF_ROUNDS)
        for m in _measured(executor, [group], until):
            if m.error is None and self._same_machine(m):
                per_round = len(m.times_s) // RUNOFF_ROUNDS
                finalists[int(m.key)].runoff = [
                    float(np.median(m.times_s[k:k + per_round]))
                    for k in range(0, per_round * RUNOFF_ROUNDS, per_round)]

    def _same_machine(self, m: Measurement) -> bool:
        """Whether `m` came from a host like the target's (else it is noted, to warn)."""
        if same_machine(m.fingerprint, self.machine):
            return True
        self.dropped_hosts.add(f"{m.fingerprint.get('host')} "
                               f"({machine_difference(self.machine, m.fingerprint)})")
        return False

    def _take(self, c: _Candidate, m: Measurement) -> None:
        if m.error is None and not self._same_machine(m):
            return
        self.measured += 1
        c.seconds, c.error, c.compile_s = m.seconds, m.error, m.compile_s
        if c.error is None and not self.reference_sample:
            self.reference_sample = m.sample
        elif c.error is None and not samples_agree(m.sample, self.reference_sample):
            c.seconds, c.error = None, "its values differ from the root schedule's"
        self.candidates[_key(c.schedule)] = c
        elapsed = self.spent_before + time.monotonic() - self.start
        best = self._fastest()
        if best:
            self.curve.append((elapsed, best[0].seconds))
        self._record(MEASUREMENT, c, elapsed, m)

    def _record(self, kind: str, c: _Candidate, elapsed: float,
                m: Measurement | None = None) -> None:
        if self.records is None:
            return
        terms = None
        if kind == MEASUREMENT and c.state is not None:
            row = self.p.search.terms([c.state])[0]
            terms = dict(zip(TERMS, row.tolist(), strict=True))
        # (a chosen schedule's line has its runoff's times, if it ran)
        times = list(m.times_s) if m and m.times_s else c.runoff if kind == BEST else []
        self.records.append(Record(
            kind, self.canon.digest, self.key, m.fingerprint if m else self.machine,
            self.canon.names, c.schedule, c.time_s if kind == BEST else c.seconds,
            times or None, c.error, m.compile_s if m else 0.0, c.predicted_s, self.id,
            elapsed, terms=terms))

    def _refit(self) -> None:
        fit = getattr(self.p.search.model, "fit", None)
        ok = [c for c in self._fastest() if c.state is not None]
        if fit is None or len(ok) < FIT_AFTER:
            return
        terms = self.p.search.terms([c.state for c in ok])
        self.p.search.model = fit(terms, np.array([c.seconds for c in ok]))

    def _show(self, bar) -> None:
        best = self._fastest()
        bar.n = min(bar.total, round(self.spent_before + time.monotonic() - self.start, 1))
        bar.set_postfix_str(f"round {self.rounds}, {self.measured} measured, best "
                            f"{best[0].seconds * 1e3:.3f} ms" if best else "", refresh=True)

    # ------------------------------------------------------------------ the choice

    def _ranked(self) -> list[_Candidate]:
        """The measured schedules, fastest first: those of the runoff by their runoff
        medians, then the rest by their times."""
        fastest = self._fastest()
        ran = sorted((c for c in fastest if c.runoff), key=lambda c: c.time_s)
        return ran + [c for c in fastest if not c.runoff]

    def _choose(self) -> Tuned:
        """The fastest measured schedule (`_ranked`) that passes the checks at awkward
        sizes (one from the records passed them when it was chosen), applied."""
        p = self.p
        root_calls = p.calls_of(p.root)
        validator = Validator(p.outputs, Environment.of(p.outputs), p.alg, p.target, p.inputs,
                              root_calls)
        snapshot = Snapshot(p.outputs)
        chosen = None
        for c in self._ranked():
            if c.calls is not None and validator.check(c.calls):
                chosen = c
                break
            if c.calls is None and c.recorded_best:
                snapshot.restore()
                apply_schedule(p.outputs, c.schedule)
                chosen = c
                break
        if chosen is None:  # nothing faster passed: the root schedule (measured first)
            snapshot.restore()
            chosen = self.root
            apply_calls(p.outputs, root_calls)
        elapsed = self.spent_before + time.monotonic() - self.start
        self._record(BEST, chosen, elapsed)
        if self.dropped_hosts:
            _warn_dropped(self.dropped_hosts)
        return Tuned(_schedule_json(p.outputs), chosen.calls, chosen.time_s,
                     chosen.predicted_s, self.curve, self.measured, self.rounds,
                     from_records=False)


def _measured(executor: Executor, jobs: list[MeasureJob | SideBySide], until: float
              ) -> Iterator[Measurement]:
    """The executor's measurements of `jobs` as they finish, until `until`: then the jobs
    still running are stopped."""
    results = executor.measure(jobs)
    try:
        for m in results:
            yield m
            if time.monotonic() >= until:
                break
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()


def _schedule_json(outputs: list[Func]) -> str:
    env = Environment.of(outputs)
    return schedules_to_json({name: f.schedule for name, f in env.funcs.items()})


def _key(text: str) -> str:
    """A schedule's identity: its JSON, normalized."""
    return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))


def _bar(budget_s: float, spent: float):
    # tqdm is imported with the first progress bar: `import halo` stays light.
    from tqdm import tqdm
    return tqdm(total=round(budget_s, 1), initial=round(spent, 1), unit="s",
                desc="tuning", dynamic_ncols=True,
                bar_format="{desc}: {bar} {n:.0f}/{total:.0f} s{postfix}")


def _warn_dropped(hosts: set[str]) -> None:
    warnings.warn("halo.autoschedule(measure=True) dropped the measurements of hosts unlike "
                  f"the target: {'; '.join(sorted(hosts))}", stacklevel=4)
