"""A fuzzing campaign: a deterministic stream of cases, run on a worker pool, counted,
and every failure shrunk and written out as a script."""
from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from halo.fuzz.check import (
    ACCEPTED,
    CRASH,
    HANG,
    INTERNAL,
    MISMATCH,
    OK,
    REJECTED,
    UNFIT,
    Case,
    Outcome,
)
from halo.fuzz.script import case_script
from halo.fuzz.shrink import shrink
from halo.fuzz.workers import WorkerPool

SCHEDULES_PER_PROGRAM = 3


def case_stream(seed: int, illegal_fraction: float = 0.2, start: int = 0,
                target: str = "host", compile_only: bool = False) -> Iterator[Case]:
    """Cases of a campaign: pair i uses program `seed * 10**6 + i // 3` and schedule i;
    every k-th pair (k = 1 / illegal_fraction) is illegal. Schedules for `target`
    ("cuda": GPU schedules; `compile_only`: compiled to PTX, not run)."""
    every = round(1 / illegal_fraction) if illegal_fraction > 0 else 0
    i = start
    while True:
        legal = not (every and i % every == every - 1)
        yield Case(seed * 10**6 + i // SCHEDULES_PER_PROGRAM, seed * 10**6 + i, legal,
                   target=target, compile_only=compile_only)
        i += 1


@dataclass
class Summary:
    seed: int
    counts: Counter = field(default_factory=Counter)     # (legal?, outcome kind) -> n
    rules: Counter = field(default_factory=Counter)      # illegal rule -> n rejected
    failures: list[tuple[Case, Outcome, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def bugs(self) -> int:
        return len(self.failures)

    def add(self, case: Case, outcome: Outcome) -> None:
        self.counts[case.legal, outcome.kind] += 1
        if not case.legal and outcome.kind == OK:
            self.rules[outcome.rule] += 1

    def line(self) -> str:
        c = self.counts
        return (f"mismatch={c[True, MISMATCH]} internal={c[True, INTERNAL] + c[False, INTERNAL]} "
                f"crash={c[True, CRASH] + c[False, CRASH]} hang={c[True, HANG] + c[False, HANG]} "
                f"rejected={c[True, REJECTED]} accepted={c[False, ACCEPTED]}")

    def report(self) -> str:
        c = self.counts
        legal = sum(v for (lg, _), v in c.items() if lg)
        illegal = sum(v for (lg, _), v in c.items() if not lg)
        lines = [
            f"halo.fuzz seed {self.seed}: {legal + illegal} pairs in {self.seconds:.0f} s "
            f"({legal} legal schedules, {illegal} illegal)",
            f"  legal:   ok {c[True, OK]}, mismatches {c[True, MISMATCH]}, internal errors "
            f"{c[True, INTERNAL]}, crashes {c[True, CRASH]}, hangs {c[True, HANG]}, "
            f"rejected (HaloError) {c[True, REJECTED]}"
            + (f", unfit for the GPU's limits {c[True, UNFIT]}" if c[True, UNFIT] else ""),
            f"  illegal: raised HaloError {c[False, OK]}, accepted {c[False, ACCEPTED]}, "
            f"internal errors {c[False, INTERNAL]}, crashes {c[False, CRASH]}, hangs "
            f"{c[False, HANG]}",
            "  illegal rules checked: " + ", ".join(f"{r} {n}" for r, n in
                                                    sorted(self.rules.items())),
        ]
        for case, outcome, path in self.failures:
            first = outcome.detail.splitlines()[0] if outcome.detail else ""
            lines.append(f"  FAIL {outcome.kind}: {case.label()} -> {path}\n      {first[:300]}")
        return "\n".join(lines)


def run_campaign(seed: int, pairs: int | None, seconds: float | None, jobs: int = 1,
                 start: int = 0,
                 illegal_fraction: float = 0.2, timeout_s: float = 120.0,
                 out_dir: str = "fuzz_failures", shrink_failures: bool = True,
                 progress: bool = True, target: str = "host",
                 compile_only: bool = False) -> Summary:
    """Run pairs `start`, `start + 1`, ... of the campaign `seed` until `pairs` were tried
    or `seconds` passed, then shrink and write out the failures."""
    summary = Summary(seed)
    began = time.monotonic()
    stream = case_stream(seed, illegal_fraction, start, target, compile_only)

    def cases() -> Iterator[Case]:
        for n, case in enumerate(stream):
            if (pairs is not None and n >= pairs) or \
                    (seconds is not None and time.monotonic() - began > seconds):
                return
            yield case

    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=pairs, unit="pair", dynamic_ncols=True,
                   mininterval=0.1 if sys.stderr.isatty() else 5.0)
    found: list[tuple[Case, Outcome]] = []
    with WorkerPool(jobs, timeout_s) as pool:
        try:
            for case, outcome in pool.run(cases()):
                summary.add(case, outcome)
                if outcome.is_bug:
                    found.append((case, outcome))
                    print(f"found {outcome.kind}: {case.label()}", flush=True)
                if bar is not None:
                    bar.update()
                    bar.set_postfix_str(summary.line(), refresh=False)
        except KeyboardInterrupt:  # Ctrl-C (or SIGINT): stop, but still report
            print("interrupted: the summary covers the pairs finished so far", flush=True)
            pool.abandon()
        if bar is not None:
            bar.close()
        summary.seconds = time.monotonic() - began
        for case, outcome in found:
            if shrink_failures:
                case, outcome = shrink(case, outcome, pool.run_all)
            summary.failures.append((case, outcome, _write(case, outcome, out_dir)))
    return summary


def _write(case: Case, outcome: Outcome, out_dir: str) -> str:
    os.makedirs(out_dir, exist_ok=True)
    name = f"{outcome.kind}_{case.program_seed}_{case.schedule_seed}"
    path = os.path.join(out_dir, f"test_{name}.py")
    with open(path, "w") as f:
        f.write(case_script(case, outcome, name))
    return path
