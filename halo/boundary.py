"""`halo.boundary`: boundary conditions, importable as a module (`from halo.boundary import
repeat_edge`) as well as through `halo.boundary.repeat_edge`. They are defined in
halo/lang/boundary.py."""
from halo.lang.boundary import (
    constant_exterior,
    mirror_image,
    mirror_interior,
    repeat_edge,
    repeat_image,
)

__all__ = ["constant_exterior", "mirror_image", "mirror_interior", "repeat_edge",
           "repeat_image"]
