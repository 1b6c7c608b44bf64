"""Running compiled pipelines: binding arrays and scalars to a pipeline's arguments,
checking what the code will read and write before it runs, and calling the backend."""
from halo.runtime.kernel import Kernel

__all__ = ["Kernel"]
