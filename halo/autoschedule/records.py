"""Tuning records: every measurement the tuner makes, one JSON object a line, appended to a
file the user names (`halo.autoschedule(..., measure=True, records="tuning.jsonl")`).

A line is keyed by the problem, the algorithm's canonical digest (`canonical.py`: Func
names don't matter) and the sizes it was planned for (by canonical name), and by the
`target` fingerprint of the host that measured it (CPU model and features, thread count,
halo version: `measure.fingerprint`). It holds the schedule as JSON (in the names of the
algorithm as it was then, with `names`, their canonical names, to move it to another copy),
the times or the error, the compile time, the prediction, the cost model's terms of the
schedule (`terms`), and the tuning session's clock. Two kinds: `"measurement"` (every
candidate timed) and `"best"` (the schedule a session chose, after it passed the checks
at awkward sizes): a later call returns the best of those instantly, and
`halo.apply_best` applies it.

Records of another target are never used silently: where a problem has records only from
other machines, the tuner warns and starts afresh, and `apply_best` refuses, saying which
fingerprint entries differ. The measurements also feed `halo.autoschedule.train`
(`--records`: fine-tuning the model's weights on the user's own machine and problems).
"""
from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from halo.autoschedule.canonical import CanonicalAlgorithm, canonical, renamed_schedule
from halo.autoschedule.measure import (
    apply_schedule,
    fingerprint,
    machine_difference,
    same_machine,
)
from halo.errors import HaloError
from halo.lang.func import Func

MEASUREMENT, BEST = "measurement", "best"
FORMAT = 1  # the version of a line's layout


@dataclass
class Record:
    """One line of a records file."""
    kind: str
    algorithm: str
    sizes: dict
    target: dict
    names: dict[str, str]
    schedule: str
    seconds: float | None
    times_s: list[float] | None = None
    error: str | None = None
    compile_s: float = 0.0
    predicted_s: float | None = None
    session: str = ""
    # seconds spent tuning this problem when this line was written: the earlier
    # sessions' and this one's (a session's clock starts where the last one stopped)
    session_s: float = 0.0
    when: float = field(default_factory=time.time)
    format: int = FORMAT
    # the cost model's terms of the schedule (`features.TERMS` by name) on the measuring
    # machine: what `train --records` fits the model's weights on
    terms: dict[str, float] | None = None

    def schedule_for(self, current: CanonicalAlgorithm) -> str:
        """The schedule in the names of `current`, a copy of the recorded algorithm."""
        return renamed_schedule(self.schedule, self.names, current.names)


def sizes_key(algorithm: CanonicalAlgorithm, outputs: dict, inputs: dict, params: dict) -> dict:
    """The sizes a problem plans for, by canonical name: boxes as [min, max] pairs."""
    def boxes(d: dict) -> dict:
        return algorithm.box_key({k: [list(b) for b in v] for k, v in d.items()})
    return {"outputs": boxes(outputs), "inputs": boxes(inputs),
            "params": algorithm.box_key(dict(params))}


class Records:
    """A records file (JSON lines); `append` writes a line at once (flushed), so records of
    an interrupted session are kept."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __iter__(self) -> Iterator[Record]:
        if not self.path.exists():
            return
        with self.path.open() as f:
            for k, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                    if data.get("format") != FORMAT:
                        continue  # a layout this halo does not read
                    yield Record(**data)
                except (ValueError, TypeError) as error:
                    raise HaloError(f"{self.path} line {k} is not a tuning record ({error}); "
                                    "records files hold the lines halo.autoschedule "
                                    "appends") from None

    def append(self, record: Record) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(asdict(record)) + "\n")

    def of_problem(self, algorithm: str, sizes: dict | None) -> list[Record]:
        """The records of an algorithm (at `sizes`, unless None), from any target."""
        return [r for r in self if r.algorithm == algorithm and
                (sizes is None or r.sizes == sizes)]


def for_target(records: Sequence[Record], target: dict, what: str) -> list[Record]:
    """The records measured on a machine like `target`'s; a warning names the others'
    fingerprints when only those exist (they are never used)."""
    mine = [r for r in records if same_machine(r.target, target)]
    if records and not mine:
        warnings.warn(f"{what}: the records hold measurements of this problem only from "
                      f"other machines ({machine_difference(target, records[0].target)}); "
                      "they are not used", stacklevel=3)
    return mine


def best_of(records: Sequence[Record]) -> Record | None:
    """The fastest "best" line (a schedule a session chose and checked), or None."""
    chosen = [r for r in records if r.kind == BEST and r.seconds is not None]
    return min(chosen, key=lambda r: r.seconds) if chosen else None


def apply_best(f: Func | Sequence[Func], records: str | os.PathLike, target: dict | None = None,
               sizes: dict | None = None) -> Record:
    """Give the (unscheduled) Funcs feeding `f` the best schedule recorded for them on this
    machine (`target`: a fingerprint, default this host's for the default target), at
    `sizes` (a `sizes_key`; None: the only sizes recorded). Returns the record applied.
    A HaloError if there is none, saying whether records of other machines or sizes
    exist."""
    outputs = [f] if isinstance(f, Func) else list(f)
    current = canonical(outputs)
    mine_all = Records(records).of_problem(current.digest, None)
    names = ", ".join(o.name for o in outputs)
    if not mine_all:
        raise HaloError(f"halo.apply_best: {records} holds no tuning record of the "
                        f"algorithm of {names}; run halo.autoschedule({names}, measure=True, "
                        f"records={str(records)!r}) first")
    here = target if target is not None else fingerprint()
    mine = [r for r in mine_all if same_machine(r.target, here)]
    if not mine:
        raise HaloError(f"halo.apply_best: the records of {names} in {records} were "
                        "measured on other machines "
                        f"({machine_difference(here, mine_all[0].target)}); tune on this one "
                        "(halo.autoschedule(..., measure=True, records=...))")
    if sizes is None:
        recorded = {json.dumps(r.sizes, sort_keys=True) for r in mine if r.kind == BEST}
        if len(recorded) > 1:
            raise HaloError(f"halo.apply_best: {records} holds best schedules of {names} for "
                            f"{len(recorded)} different sizes; say which with sizes= or "
                            "call halo.autoschedule(..., records=...) with the sizes")
    else:
        mine = [r for r in mine if r.sizes == sizes]
    best = best_of(mine)
    if best is None:
        raise HaloError(f"halo.apply_best: no tuning session of {names} in {records} "
                        "finished (a session records its best at its end); run "
                        "halo.autoschedule(..., measure=True, records=...) again")
    apply_schedule(outputs, best.schedule_for(current))
    return best


