"""Measuring one case: build every variant, check their outputs against each other, and
time them.

The variants of a case run on the very same input arrays, with the same thread count.
NumPy runs first: its output is the reference, and gives the others their output's shape
and type. Each variant's first call (the one whose output is checked) is also its
warm-up. The timed calls are interleaved, one call of each variant per round, so that
the load of a shared machine drifting during a case weighs on all variants alike, each
after a pause that lets the previous variant's threads go idle and 50 ms of untimed
calls that wake the cores up again (`halo.timing.time_after_idle`).

A timed call is what a user's call costs: for halo, `kernel(out=..., **inputs)` with its
checks of the inputs and of the regions the code will touch; for Halide, a compiled
`Callable` on buffers that wrap the arrays (wrapped once, outside the timing).

The autoscheduled variants (halo's `halo.autoschedule`, Halide's Adams2019, Mullapudi2016
and Li2018) schedule the unscheduled algorithm for the case's sizes in this process;
their `search_s` (choosing the schedule) and `compile_s` (compiling it) are recorded
apart. halo's search time is its whole `autoschedule` call: the search, and the
validation that compiles and runs its best candidates.
"""
from __future__ import annotations

import contextlib
import io
import itertools
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import halo
from benchmarks.cases import Case
from halo.timing import time_after_idle

# Variants in the order tables and charts show them.
HALO, HALO_AUTO, HALO_TUNE, HALIDE, NUMPY = "halo", "halo_auto", "halo_tune", "halide", "numpy"
HALIDE_AUTOSCHEDULERS = ("Adams2019", "Mullapudi2016", "Li2018")
HALIDE_AUTO = {name: f"halide_{name.lower()}" for name in HALIDE_AUTOSCHEDULERS}
VARIANTS = (HALO, HALO_AUTO, HALO_TUNE, HALIDE, *HALIDE_AUTO.values(), NUMPY)
LABELS = {HALO: "halo", HALO_AUTO: "halo auto", HALO_TUNE: "halo auto+tune",
          HALIDE: "Halide (same schedule)",
          **{v: f"Halide ({name})" for name, v in HALIDE_AUTO.items()}, NUMPY: "NumPy"}
AUTOSCHEDULED = (HALO_AUTO, HALO_TUNE, *HALIDE_AUTO.values())


@dataclass
class VariantResult:
    """What one variant of one case did: its timed runs, or why it has none."""
    build_s: float | None = None  # compiling (and autoscheduling) plus the first run
    search_s: float | None = None  # choosing the schedule (autoscheduled variants)
    compile_s: float | None = None  # compiling the scheduled pipeline
    times_s: list[float] = field(default_factory=list)
    error: str | None = None  # it could not be built or run
    skipped: str | None = None  # it was not attempted, and why

    @property
    def median_s(self) -> float | None:
        return float(np.median(self.times_s)) if self.times_s else None


@dataclass(frozen=True)
class Mismatch:
    """Two variants whose outputs differ beyond the case's tolerance."""
    a: str
    b: str
    detail: str

    def __str__(self) -> str:
        return f"{self.a} vs {self.b}: {self.detail}"


@dataclass
class CaseResult:
    """Everything measured for one case."""
    app: str
    size: str
    flops: float | None
    variants: dict[str, VariantResult]
    mismatches: list[Mismatch] = field(default_factory=list)
    # Texts worth keeping beside the numbers (loop nests, the autoscheduler's schedule),
    # by file name.
    artifacts: dict[str, str] = field(default_factory=dict)

    def median_ms(self, variant: str) -> float | None:
        result = self.variants.get(variant)
        median = result.median_s if result else None
        return median * 1e3 if median is not None else None

    def agrees(self, variant: str) -> bool:
        """Whether the variant ran and matched the reference (NumPy). Disagreements
        between two other variants are listed in `mismatches` too, but mark neither."""
        return self.median_ms(variant) is not None and not any(
            {variant, NUMPY} == {m.a, m.b} for m in self.mismatches)


@dataclass
class _Built:
    run: Callable[[], object]
    output: np.ndarray
    search_s: float | None = None
    compile_s: float | None = None


def measure(case: Case, threads: int, repeats: int, halide_twins=None,
            skip: dict[str, str] | None = None, tune_budget_s: float = 0.0) -> CaseResult:
    """Run every variant of `case`. `halide_twins` is that module, or None (then `skip`
    must name every Halide variant); `skip` maps the variants not to run to the reason;
    "halo auto+tune" measures for `tune_budget_s` seconds (skipped at 0)."""
    skip = skip or {}
    inputs = case.make_inputs()
    result = CaseResult(case.app, case.size, case.flops, {})
    reference = case.numpy(**inputs)
    builders: dict[str, Callable[[], _Built]] = {
        HALO: lambda: _halo(case, inputs, reference, threads, result),
        HALO_AUTO: lambda: _halo_auto(case, inputs, reference, threads, result),
        HALO_TUNE: lambda: _halo_auto(case, inputs, reference, threads, result,
                                      tune_budget_s),
        NUMPY: lambda: _Built(lambda: case.numpy(**inputs), reference),
        HALIDE: lambda: _halide(halide_twins, case, inputs, reference, result),
        **{variant: _halide_auto_builder(halide_twins, name, case, inputs, reference,
                                         threads, result)
           for name, variant in HALIDE_AUTO.items()},
    }
    built: dict[str, _Built] = {}
    if tune_budget_s <= 0:
        skip = {HALO_TUNE: "no tuning budget (--tune-budget)", **skip}
    for name in VARIANTS:
        if name in skip:
            result.variants[name] = VariantResult(skipped=skip[name])
            continue
        variant = result.variants[name] = VariantResult()
        start = time.perf_counter()
        try:
            built[name] = builders[name]()
        except Exception as error:  # noqa: BLE001 - any failure is reported, not fatal
            variant.error = f"{type(error).__name__}: {error}"
            traceback.print_exc()
            continue
        variant.build_s = time.perf_counter() - start
        variant.search_s, variant.compile_s = built[name].search_s, built[name].compile_s
    result.mismatches = _compare_all({name: b.output for name, b in built.items()}, case)
    for _ in range(repeats):
        for name, b in built.items():
            result.variants[name].times_s.append(time_after_idle(b.run))
    return result


def _halo(case: Case, inputs: dict[str, np.ndarray], reference: np.ndarray,
          threads: int, result: CaseResult) -> _Built:
    *_, output_func, funcs = case.module.algorithm()
    case.module.schedule(funcs)
    return _halo_compiled(output_func, inputs, reference, threads, result, "halo", None)


def _halo_auto(case: Case, inputs: dict[str, np.ndarray], reference: np.ndarray,
               threads: int, result: CaseResult, tune_budget_s: float = 0.0) -> _Built:
    """The app's algorithm, unscheduled, through `halo.autoschedule` for these inputs and
    the output's size; with a tuning budget, measuring candidates for that long."""
    *_, output_func, _ = case.module.algorithm()
    target = halo.Target("host", threads=threads)
    tune = {"measure": True, "budget_s": tune_budget_s} if tune_budget_s > 0 else {}
    chosen = halo.autoschedule(output_func, target=target, inputs=inputs,
                               estimates={output_func: reference.shape}, **tune)
    name = HALO_TUNE if tune else HALO_AUTO
    result.artifacts[f"{name}_schedule.py"] = chosen.source
    return _halo_compiled(output_func, inputs, reference, threads, result, name,
                          chosen.search_s)


def _halo_compiled(output_func, inputs: dict[str, np.ndarray], reference: np.ndarray,
                   threads: int, result: CaseResult, name: str,
                   search_s: float | None) -> _Built:
    target = halo.Target("host", threads=threads)
    start = time.perf_counter()
    kernel = output_func.compile(target)
    compile_s = time.perf_counter() - start
    loop_nest = io.StringIO()
    with contextlib.redirect_stdout(loop_nest):
        output_func.print_loop_nest(target)
    result.artifacts[f"{name}_loop_nest.txt"] = loop_nest.getvalue()
    out = np.empty_like(reference)

    def run() -> None:
        kernel(out=out, **inputs)
    run()
    return _Built(run, out, search_s, compile_s)


def _halide(twins, case: Case, inputs: dict[str, np.ndarray], reference: np.ndarray,
            result: CaseResult) -> _Built:
    halide_run = twins.compile_hand_scheduled(case.app, inputs)
    result.artifacts["halide_loop_nest.txt"] = twins.loop_nest(case.app)
    out = np.empty_like(reference)
    halide_run(out)
    return _Built(lambda: halide_run(out), out)


def _halide_auto_builder(twins, autoscheduler: str, case: Case,
                         inputs: dict[str, np.ndarray], reference: np.ndarray, threads: int,
                         result: CaseResult) -> Callable[[], _Built]:
    def build() -> _Built:
        done = twins.compile_autoscheduled(case.app, inputs, reference.shape, threads,
                                           autoscheduler)
        result.artifacts[f"{autoscheduler.lower()}_schedule.txt"] = done.source
        out = np.empty_like(reference)
        done.run(out)
        return _Built(lambda: done.run(out), out, done.search_s, done.compile_s)
    return build


def _compare_all(outputs: dict[str, np.ndarray], case: Case) -> list[Mismatch]:
    """Every pair of outputs, compared with the case's tolerance; the disagreements."""
    mismatches = []
    for (a, out_a), (b, out_b) in itertools.combinations(outputs.items(), 2):
        detail = _difference(out_a, out_b, case)
        if detail:
            mismatches.append(Mismatch(a, b, detail))
    return mismatches


def _difference(a: np.ndarray, b: np.ndarray, case: Case) -> str | None:
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"shape/type {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
    if np.issubdtype(a.dtype, np.floating):
        bad = ~np.isclose(a, b, rtol=case.rtol, atol=case.atol)
    else:
        bad = a != b
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())} of {a.size} elements differ beyond rtol={case.rtol}, "
            f"atol={case.atol}; first at {where}: {a[where].item()!r} vs {b[where].item()!r}")
