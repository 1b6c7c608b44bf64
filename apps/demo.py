"""The halo demo: run the apps, check them against NumPy, and print timings.

`make demo` runs this. Sizes are the issue's: blur 4800x6400, matmul 512^3 (1024^3 with
`--full`), and each other app at its own default size (conv_relu: batch x in channels x
out channels x height x width). `python -m benchmarks.run` compares them with Halide too.
"""
from __future__ import annotations

import sys

from apps import blur, conv_relu, harris, histogram, matmul, softmax, unsharp


def main() -> None:
    full = "--full" in sys.argv
    print("halo demo: hand-scheduled pipelines vs NumPy (median wall time)\n")
    rows = [blur.main(), matmul.main(1024 if full else 512), conv_relu.main(),
            unsharp.main(), harris.main(), softmax.main(), histogram.main()]
    print(f"{'app':10} {'size':14} {'halo ms':>10} {'numpy ms':>10} {'speedup':>8}")
    for r in rows:
        print(f"{r['app']:10} {r['size']:14} {r['halo_ms']:10.1f} {r['numpy_ms']:10.1f} "
              f"{r['numpy_ms'] / r['halo_ms']:8.2f}x")
    print("\nEvery output matched NumPy. The generated loop nest of the blur:\n")
    inp, out, funcs = blur.algorithm()
    blur.schedule(funcs)
    out.print_loop_nest()


if __name__ == "__main__":
    main()
