"""The int8 matrix multiply tensorized onto VNNI, side by side with halo's best float32
matrix multiply and, where the `onnxruntime` and `onnx` packages import (the `bench`
extra), onnxruntime's `MatMulInteger` (uint8 x int8 -> int32) on the same operands.

Every variant is checked against NumPy first. Throughput counts 2 * n**3 operations for
all of them (a multiply and an add per term, int32 or float32), so the ratio of the int8
throughput to the float32 one is the issue's "int32-operation throughput" ratio. halo's
int8 kernel also requantizes to uint8 (one multiply-round-clamp per output, n**2 of them).

    python -m benchmarks.quantized_matmul --sizes 512,1024 --threads 1

The variants take turns, `--rounds` times (each turn a median of `--repeats` runs after a
warm-up, halo.timing), and each reports the median of its turns: a machine shared with
other work slows every variant's turns alike, so the ratios stay honest.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable

import numpy as np

from apps import matmul, quantized_matmul
from halo.target import host_cpu
from halo.timing import median_time


def _halo_int8(n: int) -> Callable[[], object]:
    inputs = quantized_matmul.make_inputs(n, n, n)
    scale, zero_point = 1.0 / (64 * n), 128
    *_, out, funcs = quantized_matmul.algorithm()
    quantized_matmul.schedule(funcs)
    kernel = out.compile()
    result = kernel((n, n), **inputs, scale=scale, zero_point=zero_point)
    np.testing.assert_array_equal(result, quantized_matmul.numpy_version(
        inputs["A"], inputs["W"], scale, zero_point))
    return lambda: kernel(out=result, **inputs, scale=scale, zero_point=zero_point)


def _halo_float32(n: int) -> Callable[[], object]:
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    *_, C, funcs = matmul.algorithm()
    matmul.schedule(funcs)
    kernel = C.compile()
    result = kernel((n, n), A=a, B=b)
    np.testing.assert_allclose(result, a @ b, rtol=1e-4, atol=1e-3)
    return lambda: kernel(out=result, A=a, B=b)


def _onnxruntime_int8(n: int, threads: int) -> Callable[[], object] | None:
    """onnxruntime's MatMulInteger on the same uint8 x int8 operands, or None where the
    packages are not installed."""
    try:
        import onnx
        import onnxruntime
        from onnx import TensorProto, helper
    except ImportError:
        return None
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "W"], ["C"])], "matmul_integer",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [n, n]),
         helper.make_tensor_value_info("W", TensorProto.INT8, [n, n])],
        [helper.make_tensor_value_info("C", TensorProto.INT32, [n, n])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    onnx.checker.check_model(model)
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    inputs = quantized_matmul.make_inputs(n, n, n)
    (result,) = session.run(None, inputs)
    np.testing.assert_array_equal(result, inputs["A"].astype(np.int32) @
                                  inputs["W"].astype(np.int32))
    return lambda: session.run(None, inputs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="512,1024")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for every variant (HALO_NUM_THREADS, onnxruntime's "
                             "intra-op threads)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.environ["HALO_NUM_THREADS"] = str(args.threads)
    print(f"host {host_cpu().name}, {args.threads} thread(s); GOP/s = 2 n^3 / time, the "
          f"median of {args.rounds} turns")
    for n in (int(s) for s in args.sizes.split(",")):
        variants = {"int8": _halo_int8(n), "float32": _halo_float32(n),
                    "onnxruntime": _onnxruntime_int8(n, args.threads)}
        variants = {name: run for name, run in variants.items() if run is not None}
        turns: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, run in variants.items():
                turns[name].append(median_time(run, args.repeats))
        rate = {name: 2.0 * n**3 / float(np.median(t)) / 1e9 for name, t in turns.items()}
        ort = rate.get("onnxruntime")
        print(f"{n}^3: halo int8 VNNI {rate['int8']:.1f} GOP/s, halo float32 "
              f"{rate['float32']:.1f} GFLOP/s, onnxruntime MatMulInteger "
              f"{'not installed' if ort is None else f'{ort:.1f} GOP/s'}; int8 / float32 "
              f"{rate['int8'] / rate['float32']:.2f}x"
              + ("" if ort is None else f", halo int8 / onnxruntime {rate['int8'] / ort:.2f}x"))


if __name__ == "__main__":
    main()
