#!/usr/bin/env python3
"""The vendor libraries on the GPU the farm tunes for, timed the way the farm times.

Runs on the GPU host, next to the farm (it needs PyTorch with CUDA; the farm
itself does not): cuDNN's best algorithm for each 3x3 conv2d layer of
ResNet-18 (float32, TF32 off, ``cudnn.benchmark`` on, so cuDNN tries its
algorithms and keeps the fastest) and cuBLAS SGEMM for the GEMM example's
shapes. Timing matches the farm's time evaluator with ``graph: true``
(examples/tune-cuda-conv2d.ts and tune-cuda-gemm.ts use it): ``number``
calls captured once as a CUDA graph, each repeat one replay between two CUDA
events, the per-call time its elapsed time over ``number``; ``number`` grows
until a repeat lasts ``--min-repeat-ms``; the figure is the median of
``--repeat`` repeats. A graph keeps PyTorch's per-call CPU overhead (tens of
microseconds, longer than the smallest layer's kernels) out of the figure,
as it keeps the farm's launch overhead out of the tuned kernels'.

Each output is checked against a float64 reference from integer-valued
operands (exact in float32), so a figure never comes from a wrong answer.
The kernels cuDNN launched are named (from the profiler), so the table says
which algorithm won.

    python3 examples/cudnn-baseline.py [--out baseline.json] [--gemm 1024,4096]
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

LAYERS = {"56x56x64": (64, 56, 56, 64), "28x28x128": (128, 28, 28, 128), "14x14x256": (256, 14, 14, 256), "7x7x512": (512, 7, 7, 512)}


def time_graph(fn, number: int, repeat: int, min_repeat_ms: float) -> tuple[float, int]:
    """Median seconds per call of ``fn``, replayed ``number`` times in a CUDA graph per repeat."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()  # warm-up: cudnn.benchmark picks its algorithm here, outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    while True:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(number):
                fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        graph.replay()
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        if start.elapsed_time(end) >= min_repeat_ms or number >= 1 << 16:
            break
        number *= 2
    times = []
    for _ in range(repeat):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / number)
    return statistics.median(times), number


def kernels_of(fn) -> list[str]:
    """The CUDA kernels one call of ``fn`` launches, by name."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return sorted(set(names), key=names.index)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the figures here as JSON (the --baseline of tune-cuda-conv2d.ts and tune-cuda-gemm.ts)")
    ap.add_argument("--gemm", default="1024,4096", help="square SGEMM sizes for cuBLAS, comma-separated")
    ap.add_argument("--number", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--min-repeat-ms", type=float, default=5.0)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("cudnn-baseline: no CUDA device: run this on the GPU host", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    dev = torch.device("cuda")
    out = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "timing": f"CUDA graph of number calls per repeat, CUDA events, median of {args.repeat} repeats, min repeat {args.min_repeat_ms} ms",
        "conv2d": {},
        "sgemm": {},
    }
    rows = []
    for name, (c, h, w, k) in LAYERS.items():
        x = torch.randint(-4, 5, (1, c, h, w), device=dev).float()
        wt = torch.randint(-4, 5, (k, c, 3, 3), device=dev).float()
        fn = lambda: F.conv2d(x, wt, padding=1)  # noqa: E731
        want = F.conv2d(x.double().cpu(), wt.double().cpu(), padding=1)
        got = fn().double().cpu()
        if not torch.equal(got, want):
            print(f"cudnn-baseline: cuDNN's {name} differs from the float64 reference by up to {(got - want).abs().max().item()}", file=sys.stderr)
            return 1
        seconds, number = time_graph(fn, args.number, args.repeat, args.min_repeat_ms)
        flops = 2 * k * h * w * c * 9
        kernels = kernels_of(fn)
        out["conv2d"][name] = {"us": seconds * 1e6, "gflops": flops / seconds / 1e9, "number": number, "kernels": kernels, "algo": short_algo(kernels)}
        rows.append((f"conv2d {name}", seconds * 1e6, flops / seconds / 1e9, short_algo(kernels)))
    for n in [int(s) for s in args.gemm.split(",") if s]:
        a = torch.randint(-4, 5, (n, n), device=dev).float()
        b = torch.randint(-4, 5, (n, n), device=dev).float()
        fn = lambda: torch.mm(a, b)  # noqa: E731
        if n <= 2048 and not torch.equal(fn().double().cpu(), a.double().cpu() @ b.double().cpu()):
            print(f"cudnn-baseline: cuBLAS's {n}^3 SGEMM is not exact", file=sys.stderr)
            return 1
        seconds, number = time_graph(fn, max(1, args.number // (1 + n // 1024)), args.repeat, args.min_repeat_ms)
        flops = 2 * n**3
        kernels = kernels_of(fn)
        out["sgemm"][str(n)] = {"us": seconds * 1e6, "gflops": flops / seconds / 1e9, "number": number, "kernels": kernels}
        rows.append((f"sgemm {n}^3", seconds * 1e6, flops / seconds / 1e9, kernels[0] if kernels else "?"))
    print(f"{out['gpu']}, torch {out['torch']}, CUDA {out['cuda']}, cuDNN {out['cudnn']}; {out['timing']}")
    print(f"{'':18} {'us':>10} {'GFLOP/s':>10}  kernel")
    for label, us, gf, algo in rows:
        print(f"{label:18} {us:10.2f} {gf:10.0f}  {algo[:90]}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


def short_algo(kernels: list[str]) -> str:
    """cuDNN's kernels in a few words: their names without template arguments."""
    return " + ".join(k.split("<")[0].split("(")[0] for k in kernels) or "?"


if __name__ == "__main__":
    sys.exit(main())
