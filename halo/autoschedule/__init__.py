"""Automatic scheduling and the random programs it learns from.

`random_pipeline` draws random halo algorithms (DAGs of the stage kinds real pipelines
use) with inputs whose values keep integer math in range; `random_schedule` draws legal
and illegal schedules for them. The differential fuzzer (`halo.fuzz`) checks compiled
results against `halo.reference`; the same distribution is what a cost model trains on.
"""
