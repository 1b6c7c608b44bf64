"""Device arrays out: with GPU arrays in and no out=, a pipeline's result stays on the
device, as the inputs' kind (a PyTorch tensor, a CuPy array) or a halo.DeviceArray; and
arrays that offer only DLPack (no __cuda_array_interface__) are used in place."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import halo

_spec = importlib.util.spec_from_file_location("gpu_pipelines",
                                               Path(__file__).with_name("gpu_pipelines.py"))
gpu_pipelines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_pipelines)
PIPELINES = gpu_pipelines.PIPELINES


class DLPackOnly:
    """A GPU array that speaks only DLPack (as some libraries' arrays do)."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


def _torch_inputs(inputs):
    torch = pytest.importorskip("torch")
    return {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}


@pytest.mark.parametrize("name", ["blur_shared", "two_kernels", "histogram"])
def test_torch_inputs_give_a_torch_tensor_on_the_device(name):
    torch = pytest.importorskip("torch")
    out, inputs, shape = PIPELINES[name]()
    got = out.realize(shape, inputs=_torch_inputs(inputs), target="cuda")
    assert isinstance(got, torch.Tensor) and got.is_cuda and tuple(got.shape) == shape
    want = halo.reference(out, shape, inputs=inputs)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5, atol=1e-5)


def test_cupy_inputs_give_a_cupy_array():
    cupy = pytest.importorskip("cupy")
    out, inputs, shape = PIPELINES["two_kernels"]()
    got = out.realize(shape, inputs={k: cupy.asarray(v) for k, v in inputs.items()},
                      target="cuda")
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(got), halo.reference(out, shape, inputs=inputs))


def test_dlpack_only_inputs_give_a_device_array_that_feeds_another_pipeline():
    out, inputs, shape = PIPELINES["pointwise_1d"]()
    (inp, array), = inputs.items()
    (tensor,) = _torch_inputs(inputs).values()
    got = out.realize(shape, inputs={inp: DLPackOnly(tensor)}, target="cuda")
    assert isinstance(got, halo.DeviceArray) and got.shape == shape
    want = halo.reference(out, shape, inputs=inputs)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    # the result is a GPU array itself: an input of the next call, in place
    again = out.realize(shape, inputs={inp: got}, target="cuda")
    np.testing.assert_allclose(again.numpy(), halo.reference(out, shape, inputs={inp: want}),
                               rtol=1e-5, atol=1e-4)


def test_dlpack_only_out_is_written_in_place():
    torch = pytest.importorskip("torch")
    out, inputs, shape = PIPELINES["blur_shared"]()
    result = torch.zeros(shape, dtype=torch.float32, device="cuda")
    (inp, array), = inputs.items()
    out.realize(inputs={inp: DLPackOnly(torch.from_numpy(array).cuda())}, target="cuda",
                out=DLPackOnly(result))
    np.testing.assert_allclose(result.cpu().numpy(), halo.reference(out, shape, inputs=inputs),
                               rtol=1e-5, atol=1e-5)


def test_a_dlpack_array_of_the_wrong_dtype_is_refused_before_any_launch():
    torch = pytest.importorskip("torch")
    out, inputs, shape = PIPELINES["pointwise_1d"]()
    (inp, array), = inputs.items()
    wrong = DLPackOnly(torch.zeros(array.shape, dtype=torch.float64, device="cuda"))
    with pytest.raises(halo.InputError, match="float64"):
        out.realize(shape, inputs={inp: wrong}, target="cuda")


def test_numpy_inputs_still_give_numpy():
    out, inputs, shape = PIPELINES["two_kernels"]()
    assert isinstance(out.realize(shape, inputs=inputs, target="cuda"), np.ndarray)
