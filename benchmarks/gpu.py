"""The GPU benchmark: `python -m benchmarks.gpu [--out DIR] [--repeats N] [--cases a,b]`.

In one process, on one device, with the same device inputs: each app's GPU schedule
(`gpu_schedule` in apps/) through halo, PyTorch eager (cuBLAS with TF32 off for matmul,
cuDNN for conv_relu, the apps' own algorithms in PyTorch operations for unsharp and harris),
and a Triton kernel written here where Triton has a natural one (matmul, softmax);
`tensor_core` is the fp16 matmul on tensor cores (`gpu_schedule_tensor_core`) against
PyTorch's fp16 matmul (cuBLAS, float32 accumulation).
Outputs are checked against each other first. Times are CUDA events around one call,
the L2 cache flushed before each, median of `--repeats`; halo's are given twice: the
whole call (`kernel(out=..., **inputs)`: binding, region checks, host code, launches)
and the compiled pipeline alone (host code and launches, arguments bound once). A
device-to-device copy of the same bytes is the bandwidth yardstick. Writes
`gpu_results.json` and `gpu_results.md` under `--out` and prints the table, with the GPU
it ran on.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import halo
from apps import blur, conv_relu, harris, histogram, matmul, softmax, unsharp


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--cases",
                        default="blur,matmul,tensor_core,softmax,histogram,conv_relu,"
                                "unsharp,harris")
    return parser.parse_args(argv)


class Timer:
    """CUDA-event timing with the L2 flushed before each run."""

    def __init__(self, torch, repeats: int):
        self.torch = torch
        self.repeats = repeats
        self.flush = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")

    def __call__(self, fn) -> float:
        """Median milliseconds of `fn()`."""
        torch = self.torch
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(self.repeats):
            self.flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return float(np.median(times))


def bound_pipeline(kernel, call):
    """The compiled pipeline with the arguments `call()` binds, to run it without the
    Kernel's binding and checks."""
    function, captured = kernel.function, {}

    class Capture:
        args = function.args

        def __call__(self, *values):
            captured["values"] = values
            function(*values)
    kernel.function = Capture()
    try:
        call()
    finally:
        kernel.function = function
    return lambda: function(*captured["values"])


def _variant(kernel, like, **inputs):
    """`kernel` (another schedule of a case) bound to `inputs` and an output of its own
    shaped like `like`, to time as `bound_pipeline` does."""
    out = like.new_empty(like.shape)
    return bound_pipeline(kernel, lambda: kernel(out=out, **inputs))


def triton_kernels():
    """(matmul, softmax) as Triton functions of torch tensors, or None without Triton."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def matmul_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                      GROUP: tl.constexpr):
        pid = tl.program_id(0)
        num_m, num_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        group = pid // (GROUP * num_n)
        first_m = group * GROUP
        size_m = min(num_m - first_m, GROUP)
        pid_m = first_m + (pid % (GROUP * num_n)) % size_m
        pid_n = (pid % (GROUP * num_n)) // size_m
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            ka = k * BK + rk
            x = tl.load(a + rm[:, None] * sam + ka[None, :] * sak,
                        mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
            y = tl.load(b + ka[:, None] * sbk + rn[None, :] * sbn,
                        mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(x, y, input_precision="ieee")
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc,
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

    @triton.jit
    def softmax_kernel(out, inp, stride_out, stride_in, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(inp + row * stride_in + cols, mask=cols < n, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out + row * stride_out + cols, e / tl.sum(e, axis=0), mask=cols < n)

    def tmatmul(a, b, c):
        M, K = a.shape
        N = b.shape[1]
        grid = (triton.cdiv(M, 128) * triton.cdiv(N, 128),)
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                            b.stride(1), c.stride(0), c.stride(1), BM=128, BN=128, BK=32,
                            GROUP=8, num_warps=8, num_stages=3)

    def tsoftmax(x, y):
        n = x.shape[1]
        softmax_kernel[(x.shape[0],)](y, x, y.stride(0), x.stride(0), n,
                                      BLOCK=triton.next_power_of_2(n), num_warps=4)
    return tmatmul, tsoftmax


def _halo(app, build_output, schedule=None):
    *_, funcs = app.algorithm()
    (schedule or app.gpu_schedule)(funcs)
    start = time.perf_counter()
    kernel = build_output(funcs).compile(target="cuda")
    return kernel, start


def _first_call(torch, call, start: float) -> float:
    """Seconds from `start` (before compiling) to the end of the first `call()`."""
    call()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def _unsharp_eager(torch, image):
    """apps/unsharp.py's algorithm in PyTorch operations (edges repeated by F.pad)."""
    height, width = image.shape[1:]
    gray = unsharp.luma(lambda i: image[i])
    padded = torch.nn.functional.pad(gray[None, None], (3, 3, 3, 3), mode="replicate")[0, 0]
    blur_y = unsharp.gaussian(lambda k: padded[3 + k:3 + k + height])
    blur = unsharp.gaussian(lambda k: blur_y[:, 3 + k:3 + k + width])
    return (2 * gray - blur) / gray * image


def run_case(name: str, torch, timer: Timer, triton) -> list[dict]:
    rows, fp16_checks = [], []  # fp16_checks: whether each fp16 output is right
    dev = "cuda"
    if name == "blur":
        shape = (4800, 6400)
        x = torch.rand(shape, device=dev)
        kernel, start = _halo(blur, lambda f: f["blur_y"])
        out = torch.empty(shape, device=dev)
        call = lambda: kernel(out=out, inp=x)  # noqa: E731
        compile_s = _first_call(torch, call, start)
        xp = torch.nn.functional.pad(x[None, None], (1, 1, 1, 1), mode="replicate")[0, 0]

        def eager():
            bx = (xp[:, :-2] + xp[:, 1:-1] + xp[:, 2:]) * blur.ONE_THIRD
            return (bx[:-2] + bx[1:-1] + bx[2:]) * blur.ONE_THIRD
        check = eager()
        variants = {"torch eager": eager}
        moved = 2 * x.numel() * 4
        flops = None
    elif name.startswith("matmul"):
        n = int(name.removeprefix("matmul"))
        torch.backends.cuda.matmul.allow_tf32 = False
        a, b = torch.rand(n, n, device=dev), torch.rand(n, n, device=dev)
        kernel, start = _halo(matmul, lambda f: f["C"])
        out = torch.empty(n, n, device=dev)
        call = lambda: kernel(out=out, A=a, B=b)  # noqa: E731
        compile_s = _first_call(torch, call, start)
        check = a @ b
        variants = {"torch (cuBLAS, TF32 off)": lambda: a @ b}
        for label, schedule in (("halo, 64 x 64 tiles, 4 x 4 registers a thread",
                                 lambda f: matmul.gpu_schedule(f, tile=64, register_tile=4)),
                                ("halo, k steps of 32",
                                 lambda f: matmul.gpu_schedule(f, depth=32)),
                                ("halo, one copy of the panels, A's by row",
                                 lambda f: matmul.gpu_schedule(f, stages=1, a_by_column=False)),
                                ("halo, panels double-buffered, A's by row",
                                 lambda f: matmul.gpu_schedule(f, a_by_column=False)),
                                ("halo, one copy of the panels, A's by column",
                                 lambda f: matmul.gpu_schedule(f, stages=1)),
                                ("halo, k steps of 8, panels in 3 stages",
                                 lambda f: matmul.gpu_schedule(f, depth=8, stages=3)),
                                ("halo, k steps of 8, panels in 4 stages",
                                 lambda f: matmul.gpu_schedule(f, depth=8, stages=4)),
                                ("halo, vthread 4 x 4", matmul.gpu_schedule_vthread)):
            other, _ = _halo(matmul, lambda f: f["C"], schedule)
            variants[label] = _variant(other, out, A=a, B=b)
        if triton is not None:
            c2 = torch.empty(n, n, device=dev)
            variants["triton"] = lambda: triton[0](a, b, c2)
        moved, flops = 3 * n * n * 4, 2 * n**3
    elif name.startswith("tensor_core"):
        n = int(name.removeprefix("tensor_core"))
        # cuBLAS accumulating in float32, as the tensor-core intrinsic does
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        a = torch.rand(n, n, device=dev).half()
        b = torch.rand(n, n, device=dev).half()
        *_, funcs = matmul.algorithm_fp16()
        matmul.gpu_schedule_tensor_core(funcs)
        start = time.perf_counter()
        kernel = funcs["C"].compile(target="cuda")
        out = torch.empty(n, n, device=dev)
        call = lambda: kernel(out=out, A=a, B=b)  # noqa: E731
        compile_s = _first_call(torch, call, start)
        check = a.float() @ b.float()
        variants = {"torch fp16 (cuBLAS, fp32 accumulation, fp16 out)": lambda: a @ b}
        for label, schedule, sizes in (
                ("halo, blocks 256 x 128 (8 warps), k steps of 64 in 4 stages (sm_90)",
                 matmul.gpu_schedule_tensor_core,
                 {"block": (256, 128), "depth": 64, "stages": 4}),
                ("halo, blocks 256 x 128 (8 warps), k steps of 64 in 3 stages",
                 matmul.gpu_schedule_tensor_core,
                 {"block": (256, 128), "depth": 64, "stages": 3}),
                ("halo, k steps of 32 in 4 stages (not pipelined across steps)",
                 matmul.gpu_schedule_tensor_core, {"depth": 32, "stages": 4}),
                ("halo, blocks 128 x 64, warps 64 x 32, k steps of 64 in 3 stages",
                 matmul.gpu_schedule_tensor_core,
                 {"block": (128, 64), "warp": (64, 32), "depth": 64, "stages": 3}),
                ("halo, accumulators in shared memory (blocks 64 x 64, k steps of 64)",
                 matmul.gpu_schedule_tensor_core_shared, {"depth": 64})):
            *_, other_funcs = matmul.algorithm_fp16()
            schedule(other_funcs, **sizes)
            other = other_funcs["C"].compile(target="cuda")
            variants[label] = _variant(other, out, A=a, B=b)
        half_out = torch.empty(n, n, device=dev, dtype=torch.float16)
        for label, sizes in (
                ("halo, fp16 out, blocks 256 x 128, k steps of 64 in 4 stages (sm_90)",
                 {"block": (256, 128), "depth": 64, "stages": 4}),
                ("halo, fp16 out, the default", {}),
                ("halo, fp16 out, blocks 128 x 64, warps 64 x 32, k steps of 64 in 3 stages",
                 {"block": (128, 64), "warp": (64, 32), "depth": 64, "stages": 3})):
            *_, other_funcs = matmul.algorithm_fp16(out=halo.float16)
            matmul.gpu_schedule_tensor_core(other_funcs, **sizes)
            other = other_funcs["C"].compile(target="cuda")
            other(out=half_out, A=a, B=b)  # rounded from float32 sums: within fp16's step
            fp16_checks.append((half_out - check).abs().max().item()
                               <= 1e-3 * check.abs().max().item())
            variants[label] = _variant(other, half_out, A=a, B=b)
        if triton is not None:
            c2 = torch.empty(n, n, device=dev)
            variants["triton (fp16 in, fp32 out)"] = lambda: triton[0](a, b, c2)
        moved, flops = 2 * n * n * 2 + n * n * 4, 2 * n**3
    elif name == "softmax":
        x = torch.randn(4096, 1024, device=dev) * 3
        kernel, start = _halo(softmax, lambda f: f["softmax"])
        out = torch.empty_like(x)
        call = lambda: kernel(out=out, x=x)  # noqa: E731
        compile_s = _first_call(torch, call, start)
        check = torch.softmax(x, dim=1)
        variants = {"torch eager": lambda: torch.softmax(x, dim=1)}
        schedules = {f"halo, {p} partial results a row merged by one thread":
                     lambda f, p=p: softmax.gpu_schedule_partials(f, partials=p)
                     for p in (64, 256)}
        schedules.update({f"halo, a warp a row, {rows} rows a block, {unroll} loads in flight":
                          lambda f, r=rows, u=unroll: softmax.gpu_schedule(f, r, u)
                          for rows, unroll in ((8, 8), (16, 8))})
        for label, schedule in schedules.items():
            other, _ = _halo(softmax, lambda f: f["softmax"], schedule)
            variants[label] = _variant(other, out, x=x)
        *_, funcs = softmax.algorithm()
        softmax.gpu_schedule(funcs)
        fast = funcs["softmax"].compile(target=halo.Target("cuda", fast_math=True))
        variants["halo, Target('cuda', fast_math=True)"] = _variant(fast, out, x=x)
        if triton is not None:
            y2 = torch.empty_like(x)
            variants["triton"] = lambda: triton[1](x, y2)
        moved, flops = 2 * x.numel() * 4, None
    elif name == "histogram":
        image = torch.from_numpy(histogram.make_inputs()["image"]).to(dev)
        kernel, start = _halo(histogram, lambda f: f["hist"])
        out = torch.empty(histogram.BINS, dtype=torch.int32, device=dev)
        call = lambda: kernel(out=out, image=image)  # noqa: E731
        compile_s = _first_call(torch, call, start)
        flat = image.reshape(-1).long()
        check = torch.bincount(flat, minlength=histogram.BINS).int()
        variants = {"torch.bincount": lambda: torch.bincount(flat, minlength=histogram.BINS)}
        moved, flops = image.numel(), None
    elif name.startswith("conv_relu"):
        batch = int(name.removeprefix("conv_relu_batch"))
        torch.backends.cudnn.allow_tf32 = False
        image = torch.randn(batch, 64, 56, 56, device=dev)
        weights = torch.randn(64, 64, 3, 3, device=dev) * 0.1
        bias = torch.randn(64, device=dev)
        small = batch <= conv_relu.SMALL_BATCH
        kernel, start = _halo(conv_relu, lambda f: f["relu"], conv_relu.gpu_schedule_small_batch
                              if small else conv_relu.gpu_schedule)
        out = torch.empty(batch, 64, 56, 56, device=dev)
        call = lambda: kernel(out=out, image=image, weights=weights, bias=bias)  # noqa: E731
        compile_s = _first_call(torch, call, start)

        def cudnn():
            return torch.relu(torch.nn.functional.conv2d(image, weights, bias, padding=1))
        check = cudnn()
        variants = {"torch (cuDNN, TF32 off)": cudnn}
        tilings = [("halo, the large-batch tiling at any batch (32 channels x 4 x 56 pixels a "
                    "block, 4 x 7 registers a thread)", {})]
        tilings += [(f"halo, the tiling of batches up to {most} at any batch "
                     f"({', '.join(f'{k} {v}' for k, v in arguments.items())})", arguments)
                    for most, arguments in conv_relu.SMALL_BATCHES]
        tilings.append(("halo, 16 channels x 4 x 56 pixels, 4 x 8 registers, 8 input "
                        "channels a step (the default before)",
                        {"channels": 16, "depth": 8, "registers": (4, 8)}))
        schedules = [
            ("halo, `gpu_schedule` (one pipeline for any batch, small ones specialized)",
             conv_relu.gpu_schedule) if small else
            ("halo, `gpu_schedule_small_batch` (the reduction split among 4 groups of "
             "threads)", conv_relu.gpu_schedule_small_batch),
            *((label, lambda f, a=arguments: conv_relu.gpu_schedule(f, **a, small_batches=()))
              for label, arguments in tilings),
            ("halo, direct (no shared memory)", conv_relu.gpu_schedule_direct)]
        for label, schedule in schedules:
            other, _ = _halo(conv_relu, lambda f: f["relu"], schedule)
            variants[label] = _variant(other, out, image=image, weights=weights, bias=bias)
        moved, flops = (image.numel() + out.numel()) * 4, 2 * batch * 64 * 64 * 9 * 56 * 56
    elif name in ("unsharp", "harris"):
        app = unsharp if name == "unsharp" else harris
        image = torch.from_numpy(app.make_inputs()["image"]).to(dev)
        kernel, start = _halo(app, lambda f: f["output"])
        out = torch.empty(image.shape if app is unsharp else harris.output_shape(image.shape),
                          device=dev)
        call = lambda: kernel(out=out, image=image)  # noqa: E731
        compile_s = _first_call(torch, call, start)
        eager = (lambda: _unsharp_eager(torch, image)) if app is unsharp else \
            (lambda: harris.numpy_harris(image))
        check = eager()
        variants = {"torch eager": eager}
        for tile in ((32, 32, 8), (16, 64, 8), (32, 64, 4)):
            other, _ = _halo(app, lambda f: f["output"],
                             lambda f, t=tile: app.gpu_schedule(f, *t))
            variants[f"halo, tiles of {tile[0]} x {tile[1]}, {tile[2]} rows of threads"] = \
                _variant(other, out, image=image)
        moved, flops = (image.numel() + out.numel()) * 4, None
    else:
        raise SystemExit(f"unknown case {name}")
    error = (out.double() - check.double()).abs().max().item()
    scale = max(check.double().abs().max().item(), 1.0)
    ok = error <= 1e-3 * scale and all(fp16_checks)
    pipeline = bound_pipeline(kernel, call)
    copy_src = torch.empty(max(moved // 8, 1), dtype=torch.float32, device=dev)  # moved bytes
    copy_dst = torch.empty_like(copy_src)
    timings = {"halo (call)": timer(call), "halo (pipeline)": timer(pipeline),
               **{k: timer(v) for k, v in variants.items()},
               "device copy of the bytes": timer(lambda: copy_dst.copy_(copy_src))}
    for variant, ms in timings.items():
        row = {"case": name, "variant": variant, "ms": ms, "GB/s": moved / ms / 1e6}
        if flops:
            row["TFLOP/s"] = flops / ms / 1e9
        rows.append(row)
    rows.append({"case": name, "variant": "halo compile + first call (s)", "ms": None,
                 "seconds": compile_s, "max error": error, "checked": ok})
    return rows


def markdown(rows: list[dict], device: str) -> str:
    lines = [f"GPU benchmark on {device} (CUDA events, L2 flushed, median)", "",
             "| case | variant | ms | GB/s | TFLOP/s |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        if r["ms"] is None:
            lines.append(f"| {r['case']} | {r['variant']}: {r['seconds']:.2f}, checked: "
                         f"{r['checked']} (max error {r['max error']:.2g}) | | | |")
            continue
        tflops = f"{r['TFLOP/s']:.2f}" if "TFLOP/s" in r else ""
        lines.append(f"| {r['case']} | {r['variant']} | {r['ms']:.4f} | {r['GB/s']:.0f} | "
                     f"{tflops} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    device = torch.cuda.get_device_name()
    timer = Timer(torch, args.repeats)
    triton = triton_kernels()
    rows = []
    for case in args.cases.split(","):
        names = [f"matmul{n}" for n in (1024, 2048, 4096)] if case == "matmul" else \
            [f"tensor_core{n}" for n in (1024, 2048, 4096)] if case == "tensor_core" else \
            ["conv_relu_batch1", "conv_relu_batch32"] if case == "conv_relu" else [case]
        for name in names:
            done = run_case(name, torch, timer, triton)
            rows.extend(done)
            # (progress: the table comes at the end, a case's compiles take up to 30 s)
            print(f"{name}: " + "; ".join(f"{r['variant']} {r['ms']:.4f} ms" for r in done
                                         if r["ms"] is not None), file=sys.stderr, flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_results.json").write_text(json.dumps({"device": device, "halo": halo.__version__,
                                                      "rows": rows}, indent=1))
    text = markdown(rows, device)
    (out / "gpu_results.md").write_text(text)
    print(text)
    return 0 if all(r.get("checked", True) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
