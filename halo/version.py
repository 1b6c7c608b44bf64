"""halo's version: part of every on-disk cache key, so a new halo never loads code an old
one compiled."""
__version__ = "0.1.0"
