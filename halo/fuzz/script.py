"""A case as a standalone halo script that is also a pytest test.

The script defines the algorithm, applies the schedule, draws the same inputs, and checks
the compiled result against `halo.reference` (legal schedules) or that halo raises a
`HaloError` (illegal ones); a case of `--target cuda --compile-only` checks that its CUDA
C compiles to PTX. Run it with `python script.py` or collect it with pytest.
"""
from __future__ import annotations

import textwrap

import numpy as np

from halo.fuzz.check import Case, Outcome, case_program, tolerance
from halo.fuzz.ptx import PTX_ARCH
from halo.schedule.calls import declare_loops


def _inputs_source(pipeline) -> list[str]:
    lines = [f"rng = np.random.default_rng({pipeline.seed})", "inputs = {"]
    for i in pipeline.inputs:
        scale = 2**i.frac
        draw = f"rng.integers({int(i.lo * scale)}, {int(i.hi * scale) + 1}, {i.shape})"
        if scale != 1:
            draw = f"({draw} / {scale})"
        lines.append(f'    {i.name}: {draw}.astype("{i.dtype}"),')
    return lines + ["}"]


def case_script(case: Case, outcome: Outcome, name: str = "case") -> str:
    """The text of a standalone script (and pytest test `test_<name>`) for `case`."""
    pipeline, calls, rule = case_program(case)
    algorithm = pipeline.source().split("\n", 2)[2].rstrip().splitlines()
    out, shape = pipeline.output.name, pipeline.output_shape
    box = f"{shape}, inputs=inputs, origin={pipeline.output_origin}"
    on = "" if case.target == "host" else f", target={case.target!r}"
    run = f'compile(halo.Target("cuda", arch="{PTX_ARCH}"))' if case.compile_only else \
        f"realize({box}{on})"
    body = algorithm + [""]
    schedule = declare_loops(calls) + [c.source() for c in calls]
    if case.compile_only and case.legal:
        body += schedule + ["", f"kernel = {out}.{run}",
                            "for source in (kernel.function.cuda_source, "
                            "kernel.function.aligned_source):",
                            "    problem = source and ptx_problem(source)",
                            "    assert not problem, problem"]
    elif case.legal:
        body += schedule + [""] + _inputs_source(pipeline) + [
            f"got = {out}.{run}",
            f"want = halo.reference({out}, {box})"]
        if pipeline.output.value.is_float:
            atol = float(tolerance(pipeline, np.zeros(1))[0])
            body.append(f"np.testing.assert_allclose(got, want, rtol=1e-6, atol={atol!r})")
        else:
            body.append("np.testing.assert_array_equal(got, want)")
    else:
        body += schedule[:-1] + [""] + _inputs_source(pipeline) + [
            "try:", f"    {schedule[-1]}",
            f"    {out}.{run}",
            "except halo.HaloError:", "    return",
            f'raise AssertionError("the illegal call ({rule}) was accepted")']
    detail = textwrap.indent(textwrap.fill(outcome.detail.splitlines()[0] if outcome.detail
                                           else outcome.kind, 88), "    ")
    header = (f'"""{outcome.kind}: {case.label()}, found by `python -m halo.fuzz`.\n\n'
              f"{detail}\n\"\"\"")
    return "\n".join([
        header, "import numpy as np", "", "import halo",
        *(["from halo.fuzz.ptx import ptx_problem"] if case.compile_only else []), "", "",
        f"def test_{name}():", textwrap.indent("\n".join(body), "    "), "", "",
        'if __name__ == "__main__":', f"    test_{name}()", ""])
