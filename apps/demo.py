"""The halo demo: run the apps, check them against NumPy, and print timings.

`make demo` runs this. Sizes are the issue's: blur 4800x6400, matmul 512^3 (1024^3 with
`--full`).
"""
from __future__ import annotations

import sys

from apps import blur, matmul


def main() -> None:
    full = "--full" in sys.argv
    print("halo demo: hand-scheduled pipelines vs NumPy (median wall time)\n")
    rows = [blur.main(), matmul.main(1024 if full else 512)]
    print(f"{'app':8} {'size':12} {'halo ms':>10} {'numpy ms':>10} {'speedup':>8}")
    for r in rows:
        print(f"{r['app']:8} {r['size']:12} {r['halo_ms']:10.1f} {r['numpy_ms']:10.1f} "
              f"{r['numpy_ms'] / r['halo_ms']:8.2f}x")
    print("\nBoth outputs matched NumPy. The generated loop nest of the blur:\n")
    inp, out, funcs = blur.algorithm()
    blur.schedule(funcs)
    out.print_loop_nest()


if __name__ == "__main__":
    main()
