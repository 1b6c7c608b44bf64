"""The program model: plain data that the algorithm language (`halo.lang`) and the
schedule records' validation (`halo.schedule`) both read."""
from halo.program.definition import Definition, provided_names

__all__ = ["Definition", "provided_names"]
