"""The performance suite: halo's hand-scheduled apps against NumPy and Halide.

`python -m benchmarks.run` (or `make bench`) runs every app of `apps/` in one process,
on the same inputs and thread count, as halo (the app's hand schedule), halo
autoscheduled (`halo.autoschedule`), NumPy, and, when the `halide` package imports,
Halide with the same schedule (`halide_twins.py`) and with its Adams2019, Mullapudi2016
and Li2018 autoschedulers. Every output is checked against the others before anything
is timed. Results go to `benchmarks/results/`.
"""
