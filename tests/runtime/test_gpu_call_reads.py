"""A call of a GPU pipeline reads each GPU array's `__cuda_array_interface__` once (a
PyTorch tensor builds it anew at each read): checked without a GPU, with tensors that
count their reads and launches that do nothing."""
import numpy as np
import pytest

import halo


class CountingTensor:
    """A GPU array (as far as halo can tell) that builds its interface at each read."""

    def __init__(self, shape, dtype, pointer):
        self.shape, self.dtype, self.pointer, self.reads = shape, np.dtype(dtype), pointer, 0

    @property
    def __cuda_array_interface__(self):
        self.reads += 1
        return {"shape": self.shape, "typestr": self.dtype.str, "strides": None,
                "data": (self.pointer, False), "version": 3}


class _NoLaunch:
    def prepared_call(self, *args, **kwargs):
        pass


def _kernel():
    x, y, xo, xi, yo, yi = halo.vars("x y xo xi yo yi")
    inp = halo.ImageParam(halo.float32, 2, "inp")
    weights = halo.ImageParam(halo.float32, 1, "weights")
    f = halo.Func("f")
    f[y, x] = inp[y, x] * weights[x]
    f.gpu_tile(y, x, yo, xo, yi, xi, 8, 32)
    kernel = f.compile(halo.Target("cuda", arch="sm_90"))
    kernel.function._load = lambda aligned: [_NoLaunch()] * len(kernel.function.kernels)
    return kernel, inp, weights


@pytest.mark.parametrize("by", ["name", "object"])
def test_each_gpu_array_interface_is_read_once_a_call(by):
    kernel, inp, weights = _kernel()
    image = CountingTensor((40, 64), np.float32, 1 << 20)
    row = CountingTensor((64,), np.float32, 1 << 30)
    out = CountingTensor((40, 64), np.float32, 1 << 34)
    for call in range(3):  # the first call checks the layout; later ones reuse that
        if by == "name":
            kernel(out=out, inp=image, weights=row)
        else:
            kernel.run(None, out, None, {inp: image, weights: row}, {})
        assert (image.reads, row.reads, out.reads) == (call + 1,) * 3


def test_a_gpu_array_of_the_wrong_dtype_is_still_refused():
    kernel, _, _ = _kernel()
    wrong = CountingTensor((40, 64), np.float64, 1 << 20)
    with pytest.raises(halo.InputError, match="input inp is a GPU array of dtype float64"):
        kernel(out=CountingTensor((40, 64), np.float32, 1 << 34), inp=wrong,
               weights=CountingTensor((64,), np.float32, 1 << 30))
