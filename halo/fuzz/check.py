"""The differential check of one (pipeline, schedule) pair.

A `Case` names a pair by seeds (the pipeline's and the schedule's), whether the schedule
is legal or illegal, and optionally a smaller version of it (a stage as the output and a
subset of the schedule's calls), as the shrinker makes them. `run_case` compiles the pair
for the case's target (the LLVM backend on the host; CUDA kernels for `target="cuda"`,
with a GPU schedule), runs it, and compares with `halo.reference`: integers exactly,
floats within a tolerance derived from the error bound the generator tracked (how much
any legal order of float operations may change the result). A `compile_only` CUDA case
needs no GPU: its CUDA C is compiled by nvcc to PTX (`ptx.py`) and not run. Each case's
lowered code must also read back as itself from the form the on-disk cache keeps.
"""
from __future__ import annotations

import re
import traceback
from dataclasses import dataclass

import numpy as np

from halo.driver import lowered_from_text, lowered_text
from halo.errors import HaloError, InternalError
from halo.fuzz.ptx import PTX_ARCH, ptx_problem
from halo.ir.deep_stack import run_deep
from halo.lower.pipeline import Lowered
from halo.random_programs.illegal_gpu_schedule import illegal_gpu_schedule
from halo.random_programs.illegal_schedule import illegal_schedule
from halo.random_programs.pipeline_spec import RandomPipeline
from halo.random_programs.random_gpu_schedule import random_gpu_schedule
from halo.random_programs.random_pipeline import random_pipeline
from halo.random_programs.random_schedule import apply_schedule, random_schedule
from halo.reference import reference
from halo.schedule.calls import Call, StageRef
from halo.target import Target

PLACEMENT_CALLS = ("compute_at", "compute_root", "compute_inline", "store_at", "store_root",
                   "store_in", "double_buffer", "reorder_storage")

# Outcome kinds. For legal schedules: ok, mismatch, internal (InternalError or another
# exception from inside halo), rejected (a HaloError), unfit (a GPU schedule refused for
# a resource limit, below); for illegal ones: ok (a HaloError), accepted (no error).
# Crashes and hangs are seen by the process running the case (a CUDA error is a crash:
# the GPU context is lost with it).
OK, MISMATCH, INTERNAL, REJECTED, ACCEPTED, CRASH, HANG, UNFIT = (
    "ok", "mismatch", "internal", "rejected", "accepted", "crash", "hang", "unfit")
BUGS = (MISMATCH, INTERNAL, REJECTED, ACCEPTED, CRASH, HANG)
# The refusals of a GPU schedule that the draw can't foresee without bounds inference:
# a region (of a buffer in shared memory or registers, or of a thread loop) that no
# constant bounds, a block of more than 1024 threads, more shared memory than a block
# holds, a Func at block level in registers whose threads don't each keep to a part of
# their own, a block whose x extent a warp reduction's lanes don't divide, a
# double-buffered Func that reads what its loop writes. A legal GPU
# case refused with one of them is unfit, not a bug.
GPU_LIMITS = ("needs a constant size", "which halo can't bound by a constant",
              "a block has at most", "bytes of shared memory",
              "registers hold it only if each thread", "a warp reduction over",
              "can't be computed an iteration ahead")


@dataclass(frozen=True)
class Case:
    program_seed: int
    schedule_seed: int
    legal: bool = True
    output: str | None = None               # a stage to make the output (shrinking)
    keep: tuple[int, ...] | None = None     # indices of the calls to keep (shrinking)
    target: str = "host"                    # "host" or "cuda" (a GPU schedule)
    compile_only: bool = False              # cuda: nvcc to PTX, no GPU, no run

    def label(self) -> str:
        kind = "legal" if self.legal else "illegal"
        on = "" if self.target == "host" else f", {self.target}"
        return f"program {self.program_seed} schedule {self.schedule_seed} ({kind}{on})"


@dataclass(frozen=True)
class Outcome:
    kind: str
    detail: str = ""
    rule: str = ""          # for illegal schedules: the rule the last call breaks

    @property
    def is_bug(self) -> bool:
        return self.kind in BUGS


def full_schedule(case: Case, pipeline: RandomPipeline) -> tuple[list[Call], str]:
    """The calls drawn for the case's whole pipeline (and the rule an illegal one
    breaks)."""
    built = pipeline.build()
    if case.target == "cuda":
        if case.legal:
            return random_gpu_schedule(pipeline, built, case.schedule_seed), ""
        return illegal_gpu_schedule(pipeline, built, case.schedule_seed)
    if case.legal:
        return random_schedule(pipeline, built, case.schedule_seed), ""
    return illegal_schedule(pipeline, built, case.schedule_seed)


class NotApplicable(Exception):
    """A shrinking choice that doesn't apply to the case (not a bug in halo)."""


def case_program(case: Case) -> tuple[RandomPipeline, list[Call], str]:
    """The pipeline and the schedule calls of a case, after its shrinking choices. An
    illegal case's last call (the one that breaks the rule) must survive them."""
    full = random_pipeline(case.program_seed)
    drawn, rule = full_schedule(case, full)
    pipeline = full if case.output is None else full.truncated(case.output)
    calls = drawn if case.output is None else restrict_calls(drawn, pipeline)
    if case.keep is not None:
        calls = defined_calls([calls[i] for i in case.keep if i < len(calls)], pipeline)
    if not case.legal and (not calls or calls[-1] != drawn[-1]):
        raise NotApplicable(f"the shrunk case lost the illegal call {drawn[-1].source()}")
    return pipeline, calls, rule


def _names_used(c: Call) -> set[str]:
    """The Funcs and inputs a call names (its target, arguments, conditions)."""
    refs = [c.target, *c.args, *(v for _, v in c.kwargs)]
    refs += [x for r in refs if isinstance(r, tuple) for x in r]
    out = {r.func for r in refs if isinstance(r, StageRef)}
    out |= {m for r in refs if isinstance(r, StageRef) and r.condition
            for m in re.findall(r"[A-Za-z_]\w*", r.condition)}
    return out - {"shape", "halo"}


def defined_calls(calls: list[Call], pipeline: RandomPipeline) -> list[Call]:
    """The calls whose Funcs and inputs exist: those of the pipeline, and those made by
    an earlier call kept (`cache_read`, `rfactor`, ...)."""
    known = {s.name for s in pipeline.stages} | {i.name for i in pipeline.inputs}
    out = []
    for c in calls:
        if _names_used(c) <= known:
            out.append(c)
            if c.result is not None:
                known.add(c.result)
    return out


def restrict_calls(calls: list[Call], pipeline: RandomPipeline) -> list[Call]:
    """The calls that still make sense on a truncated pipeline: those on its Funcs, minus
    the placement of its (new) output."""
    kept = [c for c in calls if not (c.target.func == pipeline.output.name and
                                     c.method in PLACEMENT_CALLS)]
    return defined_calls(kept, pipeline)


def tolerance(pipeline: RandomPipeline, want: np.ndarray) -> np.ndarray:
    """Per point, how far a float result may legally be from the reference."""
    return 4 * pipeline.output.value.err + 1e-6 * (1 + np.abs(want.astype(np.float64)))


def compare(pipeline: RandomPipeline, got: np.ndarray, want: np.ndarray) -> str:
    """'' when `got` matches `want`, else a description of the first difference. Float
    points where either side is NaN or infinite must match exactly (NaN where NaN): the
    inputs' NaN and infinities reach a result only through operations whose result no
    legal rounding or order changes (the values stay far from overflow)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape} {got.dtype} vs reference {want.shape} {want.dtype}"
    if np.issubdtype(want.dtype, np.floating):
        finite = np.isfinite(got) & np.isfinite(want)
        with np.errstate(invalid="ignore"):
            diff = np.abs(got.astype(np.float64) - want)
            close = diff <= tolerance(pipeline, want)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        bad = ~np.where(finite, close, same)
    else:
        bad = got != want
    if not bad.any():
        return ""
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())} of {bad.size} points differ; first at {where}: got "
            f"{got[where]!r}, reference {want[where]!r}")


def saved_form_problem(lowered: Lowered) -> str:
    """What is wrong with the form of `lowered` that the on-disk cache keeps (it must read
    back as the same code), or ""."""
    return run_deep("saving and reading lowered code", _saved_form_problem, lowered)


def _saved_form_problem(lowered: Lowered) -> str:
    text = lowered_text(lowered)
    if text is None:
        return ""
    back = lowered_from_text(text, lowered.env)
    if (back.stmt, back.checks, back.counted) == (lowered.stmt, lowered.checks,
                                                  lowered.counted):
        return ""
    return "the lowered code's saved form (the on-disk cache's) reads back as other code"


def run_case(case: Case) -> Outcome:
    """Compile, run and check one case (in this process)."""
    try:
        pipeline, calls, rule = case_program(case)
    except (HaloError, NotApplicable) as e:  # a shrinking choice that doesn't apply
        return Outcome(REJECTED, f"drawing: {type(e).__name__}: {e}")
    built = pipeline.build()
    arrays = pipeline.make_inputs()
    inputs = {built.params[k]: v for k, v in arrays.items()}
    try:
        apply_schedule(calls, built)
        if case.compile_only:
            kernel = built.output.compile(target=Target("cuda", arch=PTX_ARCH))
            for source in (kernel.function.cuda_source, kernel.function.aligned_source):
                problem = source and ptx_problem(source)
                if problem:
                    return Outcome(INTERNAL, f"nvcc -ptx refused the CUDA C: {problem}", rule)
        else:
            kernel = built.output.compile(target=case.target)
            got = kernel.run(pipeline.output_shape, None, pipeline.output_origin, inputs, {})[0]
        problem = saved_form_problem(kernel.lowered)
        if problem:
            return Outcome(INTERNAL, problem, rule)
    except HaloError as e:
        detail = f"{type(e).__name__}: {e}"
        if not case.legal:
            return Outcome(OK, detail, rule)
        unfit = case.target == "cuda" and any(limit in str(e) for limit in GPU_LIMITS)
        return Outcome(UNFIT if unfit else REJECTED, detail, rule)
    except InternalError as e:
        return Outcome(INTERNAL, f"InternalError: {e}", rule)
    except Exception as e:  # noqa: BLE001 - any other exception from halo is a bug in it
        if type(e).__module__.startswith("pycuda"):  # the GPU context is lost with it
            return Outcome(CRASH, f"CUDA error: {type(e).__name__}: {e}", rule)
        return Outcome(INTERNAL, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-4)}",
                       rule)
    if not case.legal:
        return Outcome(ACCEPTED, f"the illegal call {calls[-1].source()} raised no error",
                       rule)
    if case.compile_only:
        return Outcome(OK)
    want = reference(pipeline.build().output, pipeline.output_shape,
                     inputs={k: v for k, v in arrays.items()}, origin=pipeline.output_origin)
    problem = compare(pipeline, got, want)
    return Outcome(MISMATCH, problem) if problem else Outcome(OK)
