"""Training the cost model on random programs: `python -m halo.autoschedule.train
collect|train|evaluate` (docs/autoschedule.md, "Retraining on your own machine").

`collect` draws random pipelines at the realistic size profile, schedules each several
ways with the search itself (`draws`), compiles and times them (`measure`) and appends
the raw samples to a compressed file (`samples`); `train` recomputes the features of
every sample (`pipelines`) and fits the weights of a `LinearTermsModel` (`fit`);
`evaluate` scores models on held-out pipelines (`metrics`) and draws the plots
(`plots`).
"""
