"""Autoschedules of two trees (or two runs) against the hand schedule, side by side:
`python -m benchmarks.compare_schedules RESULTS [RESULTS ...] [--apps a,b] [--rounds N]`.

Each RESULTS is a directory `python -m benchmarks.run` wrote (`--out`), perhaps by
another checkout of halo: its `details/<case>/halo_auto_schedule.py` is the schedule
`halo.autoschedule` printed there. In this one process, for each case, the app's hand
schedule and each such source pasted onto a fresh `algorithm()` (as a user would paste
it) are compiled, checked against NumPy, and timed side by side (`halo.timing.
side_by_side`), so that a change to the autoscheduler is measured without the drift
between processes (on a shared 2-core host, the same schedule moved by 30% between
runs minutes apart). Boundary Funcs are renamed to this process's numbering.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

import halo
from benchmarks.cases import CASES, Case
from benchmarks.report import _slug
from halo.lang.environment import Environment
from halo.timing import side_by_side


def build(case: Case, source: str | None):
    """The case's app compiled with its hand schedule (`source` None) or with `source`
    pasted onto a fresh algorithm."""
    with halo.NameScope():
        *_, out, funcs = case.module.algorithm()
    if source is None:
        case.module.schedule(funcs)
        return out.compile()
    env = Environment.of([out])
    for name in env.funcs:  # image_constant_exterior3 there may be ..._exterior0 here
        numbered = re.fullmatch(r"(.*?)(\d+)", name)
        if numbered:
            source = re.sub(re.escape(numbered.group(1)) + r"\d+(?!\d)", name, source)
    namespace = {"halo": halo, **funcs, **env.funcs}
    exec(compile(source, "<autoschedule source>", "exec"), namespace)  # noqa: S102
    return out.compile()


def compare(case: Case, results: list[Path], rounds: int) -> dict[str, float]:
    """Median seconds of the hand schedule and of each results directory's
    autoschedule."""
    inputs = case.make_inputs()
    reference = case.numpy(**inputs)
    sources = {"hand": None}
    for directory in results:
        path = directory / "details" / _slug(case.label) / "halo_auto_schedule.py"
        sources[str(directory)] = path.read_text()
    calls = {}
    for label, source in sources.items():
        kernel = build(case, source)
        out = np.empty_like(reference)
        kernel(reference.shape, out=out, **inputs)
        np.testing.assert_allclose(out, reference, rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{case.label}: {label}")
        calls[label] = lambda kernel=kernel, out=out: kernel(reference.shape, out=out,
                                                             **inputs)
    return side_by_side(calls, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path,
                        help="directories benchmarks.run wrote")
    parser.add_argument("--apps", default=None, help="comma-separated apps (default: all)")
    parser.add_argument("--rounds", type=int, default=11, help="rounds of side_by_side")
    args = parser.parse_args()
    apps = set(args.apps.split(",")) if args.apps else None
    for case in CASES:
        if apps is not None and case.app not in apps:
            continue
        times = compare(case, args.results, args.rounds)
        hand = times.pop("hand")
        print(f"{case.label}: hand {hand * 1e3:.2f} ms; " + "; ".join(
            f"{label} {t * 1e3:.2f} ms ({t / hand:.2f}x hand)" for label, t in times.items()),
            flush=True)


if __name__ == "__main__":
    main()
