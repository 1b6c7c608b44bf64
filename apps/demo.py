"""The halo demo: run the apps, check them against NumPy, and print timings.

`make demo` runs this. Sizes are the issue's: blur 4800x6400, matmul 512^3 (1024^3 with
`--full`), and each other app at its own default size (conv_relu: batch x in channels x
out channels x height x width). `python -m benchmarks.run` compares them with Halide too.
Each app prints a line as it starts (compiling takes a few seconds the first time; the
machine code is cached on disk after that) and its row of the table when it is done.
"""
from __future__ import annotations

import sys
from collections.abc import Callable

from apps import blur, conv_relu, harris, histogram, matmul, softmax, unsharp

HEADER = f"{'app':10} {'size':14} {'halo ms':>10} {'numpy ms':>10} {'speedup':>8}"


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


def main() -> None:
    run(apps(full="--full" in sys.argv))
    show_loop_nest()


if __name__ == "__main__":
    main()
