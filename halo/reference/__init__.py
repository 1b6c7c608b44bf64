"""The reference interpreter, `halo.reference(f, shape, inputs=...)`: the NumPy evaluation
of an algorithm that defines what it means (see interpreter.py). It shares no code with
lowering, so that the two can check each other."""
from halo.reference.interpreter import reference

__all__ = ["reference"]
