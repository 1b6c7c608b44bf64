"""Lowering: one pass per module, listed in order by `pipeline.passes(target)`."""
