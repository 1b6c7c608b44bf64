"""Random halo programs: algorithms and the schedules drawn for them.

`random_pipeline` draws random halo algorithms (DAGs of the stage kinds in
`random_stages`, described as plain data by `pipeline_spec`) with inputs whose values
keep integer math in range (`random_values`); `random_schedule` draws legal schedules
for them and `illegal_schedule` illegal ones, as lists of `halo.schedule.calls.Call`.
The differential fuzzer (`halo.fuzz`) checks compiled results against
`halo.reference`; the same distribution is what a cost model can train on.
"""
