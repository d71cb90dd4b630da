#!/usr/bin/env python3
"""torch's own cuBLAS kernels for the GEMM suite, timed on the GPU by CUPTI (torch.profiler).

Runs beside ../shared/bench/torch_reference.py on the GPU machine to separate what that script's figure holds:
its CUDA events bracket the Python dispatch of `a @ b` as well as the kernel. Here the same call (same shapes,
bf16 row-major A and B, randn inputs, rotated input sets) runs under the profiler, and each launch's kernel
duration comes from CUPTI's activity records, which hold GPU execution time only. Printed per shape: the cuBLAS
kernel torch chose, its median kernel time, TFLOP/s, and (with --json) the same rows torch_reference.py writes, so
`oxtile bench gemm --peers` can merge them.

  python3 scripts/torch_cublas_kernels.py [MxNxK ...] [--json OUT.json]
"""
import argparse
import json
import statistics

import torch
from torch.profiler import ProfilerActivity, profile

SUITE = ["2048x2048x2048", "4096x4096x4096", "8192x8192x8192", "16384x16384x16384",
         "4096x14336x4096", "8192x4096x14336", "128x8192x8192", "1024x1024x1024"]


def kernel_times(shape, iters, warm):
    m, n, k = (int(x) for x in shape.split("x"))
    # torch_reference.py's rotation: enough sets to exceed the 60 MB L2 several times, at most 8.
    count = max(2, min(8, int(4 * 60e6 // (2 * (m * k + k * n))) + 1))
    sets = [(torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
             torch.randn(k, n, device="cuda", dtype=torch.bfloat16)) for _ in range(count)]
    for i in range(warm):
        a, b = sets[i % count]
        a @ b
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(iters):
            a, b = sets[i % count]
            a @ b
        torch.cuda.synchronize()
    durations = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            durations.setdefault(event.name, []).append(event.device_time_total)  # microseconds
    if not durations:
        raise RuntimeError("the profiler recorded no CUDA kernels (is CUPTI available?)")
    # The GEMM is the kernel launched once per call with the most time; a split-K reduction, if any, is added.
    per_call = {name: times for name, times in durations.items() if len(times) == iters}
    main = max(per_call, key=lambda name: sum(per_call[name]))
    totals = [sum(times[i] for times in per_call.values()) for i in range(iters)]
    us = statistics.median(totals)
    others = {name: len(times) for name, times in durations.items() if name not in per_call}
    return {"op": "gemm", "shape": shape, "impl": "cublas(torch,cupti)", "ms": us / 1e3,
            "tflops": 2 * m * n * k / (us / 1e6) / 1e12, "kernel": main,
            "kernels": {name: statistics.median(times) / 1e3 for name, times in per_call.items()},
            "other_kernels": others}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("shapes", nargs="*")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = []
    for shape in args.shapes or SUITE:
        rows.append(kernel_times(shape, args.iters, args.warmup))
        torch.cuda.empty_cache()
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}: cuBLAS kernel time by CUPTI")
    for r in rows:
        print(f"gemm  {r['shape']:24} {r['ms']:9.4f} ms {r['tflops']:8.1f} TFLOP/s")
        for name, ms in r["kernels"].items():
            print(f"        {ms:9.4f} ms  {name[:110]}")
        for name, count in r["other_kernels"].items():
            print(f"        ({count} launches of {name[:100]})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
