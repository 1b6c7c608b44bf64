"""The halo demo: run the apps, check them against NumPy, and print timings; then let
`halo.autoschedule` schedule two of them and show its schedules beside the hand ones.

`make demo` runs this. Sizes are the issue's: blur 4800x6400, matmul 512^3 (1024^3 with
`--full`), and each other app at its own default size (conv_relu: batch x in channels x
out channels x height x width). `python -m benchmarks.run` compares them with Halide too.
Each app prints a line as it starts (compiling takes a few seconds the first time; the
machine code is cached on disk after that) and its row of the table when it is done; a
progress bar runs while the autoscheduler searches.
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import numpy as np
from tqdm import tqdm

import halo
from apps import blur, conv_relu, harris, histogram, matmul, softmax, unsharp
from halo.timing import median_time

HEADER = f"{'app':10} {'size':14} {'halo ms':>10} {'numpy ms':>10} {'speedup':>8}"
AUTO_HEADER = (f"{'app':10} {'size':14} {'hand ms':>9} {'auto ms':>9} {'numpy ms':>9} "
               f"{'search s':>9}  outputs")


def apps(full: bool = False) -> dict[str, Callable[[], dict]]:
    """Each app's name and the call that compiles, checks and times it."""
    return {"blur": blur.main, "matmul": lambda: matmul.main(1024 if full else 512),
            "conv_relu": conv_relu.main, "unsharp": unsharp.main, "harris": harris.main,
            "softmax": softmax.main, "histogram": histogram.main}


def row(r: dict) -> str:
    return (f"{r['app']:10} {r['size']:14} {r['halo_ms']:10.1f} {r['numpy_ms']:10.1f} "
            f"{r['numpy_ms'] / r['halo_ms']:8.2f}x")


def run(selected: dict[str, Callable[[], dict]]) -> None:
    """Run `selected` apps, a progress line before each, its row after."""
    print("halo demo: hand-scheduled pipelines vs NumPy (median wall time)\n")
    rows = []
    for k, (name, main) in enumerate(selected.items(), 1):
        print(f"[{k}/{len(selected)}] {name}: compiling, checking against NumPy, timing...",
              flush=True)
        rows.append(row(main()))
        print(f"      {rows[-1]}", flush=True)
    print(f"\n{HEADER}")
    print("\n".join(rows))


def show_loop_nest() -> None:
    """The blur's loop nest, as `print_loop_nest` shows it: loops and storage only
    (`str(f.lower())` prints every bound and store in full)."""
    print("\nEvery output matched NumPy. The generated loop nest of the blur (the branch "
          "on whole tiles, then each loop split where boundary clamps stop):\n")
    _, out, funcs = blur.algorithm()
    blur.schedule(funcs)
    out.print_loop_nest()


@dataclass(frozen=True)
class AutoCase:
    """An app at one size for the autoscheduling part: its inputs by name and NumPy's
    version of it."""
    module: ModuleType
    size: str
    inputs: dict[str, np.ndarray]
    numpy: Callable[..., np.ndarray]
    rtol: float = 1e-4
    atol: float = 1e-5


def auto_cases(blur_shape: tuple[int, int] = (4800, 6400), matmul_n: int = 512
               ) -> list[AutoCase]:
    rng = np.random.default_rng(0)
    image = rng.random(blur_shape, dtype=np.float32)
    a, b = (rng.random((matmul_n, matmul_n), dtype=np.float32) for _ in range(2))
    return [AutoCase(blur, "x".join(map(str, blur_shape)), {"inp": image},
                     lambda inp: blur.numpy_blur(inp),
                     rtol=1e-5, atol=1e-6),
            AutoCase(matmul, f"{matmul_n}^3", {"A": a, "B": b}, lambda A, B: A @ B,
                     atol=1e-3)]


def with_progress(label: str, work: Callable[[], object]) -> object:
    """Run `work`, a bar with the seconds it has taken updating meanwhile (on a
    terminal)."""
    done = threading.Event()
    with tqdm(desc=label, bar_format="{desc} {elapsed}", file=sys.stdout, leave=False,
              disable=None) as bar:
        def tick() -> None:
            while not done.wait(0.2):
                bar.refresh()
        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            return work()
        finally:
            done.set()
            ticker.join()


def autoschedule_case(case: AutoCase, repeats: int = 5, budget_s: float | None = None
                      ) -> tuple[str, str]:
    """Hand schedule, autoschedule and NumPy of one app, checked against each other and
    timed: (its table row, the autoschedule's source)."""
    name = case.module.__name__.rsplit(".", 1)[-1]
    with halo.NameScope():
        *_, hand_out, funcs = case.module.algorithm()
    case.module.schedule(funcs)
    with halo.NameScope():
        *_, auto_out, _ = case.module.algorithm()
    expected = case.numpy(**case.inputs)
    result = with_progress(f"      {name}: autoscheduling", lambda: halo.autoschedule(
        auto_out, inputs=case.inputs, estimates={auto_out: expected.shape},
        budget_s=budget_s))
    kernels = {"hand": hand_out.compile(), "auto": auto_out.compile()}
    outputs = {k: kernel(expected.shape, **case.inputs) for k, kernel in kernels.items()}
    for got in outputs.values():
        np.testing.assert_allclose(got, expected, rtol=case.rtol, atol=case.atol)
    ms = {k: median_time(lambda k=k: kernels[k](out=outputs[k], **case.inputs), repeats) * 1e3
          for k in kernels}
    ms["numpy"] = median_time(lambda: case.numpy(**case.inputs), repeats) * 1e3
    line = (f"{name:10} {case.size:14} {ms['hand']:9.1f} {ms['auto']:9.1f} "
            f"{ms['numpy']:9.1f} {result.search_s:9.1f}  all three agree")
    return line, result.source


def run_autoschedule(cases: list[AutoCase], budget_s: float | None = None) -> None:
    """The autoscheduling part: per app a progress line, then the table and each
    schedule the autoscheduler wrote."""
    print("\nhalo.autoschedule: the same algorithms scheduled by the autoscheduler, beside "
          "the hand schedules and NumPy\n")
    rows, sources = [], []
    for k, case in enumerate(cases, 1):
        name = case.module.__name__.rsplit(".", 1)[-1]
        print(f"[{k}/{len(cases)}] {name}: searching, compiling, checking, timing...",
              flush=True)
        line, source = autoschedule_case(case, budget_s=budget_s)
        rows.append(line)
        sources.append((name, source))
        print(f"      {line}", flush=True)
    print(f"\n{AUTO_HEADER}")
    print("\n".join(rows))
    for name, source in sources:
        print(f"\nThe schedule halo.autoschedule wrote for {name} (paste it after the "
              f"algorithm to get the same code):\n")
        print(source)


def main() -> None:
    full = "--full" in sys.argv
    run(apps(full))
    show_loop_nest()
    run_autoschedule(auto_cases(matmul_n=1024 if full else 512))


if __name__ == "__main__":
    main()
