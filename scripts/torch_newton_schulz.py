#!/usr/bin/env python3
"""Torch-on-cuBLAS peers of `oxtile bench ns` (issue 29), on the GPU machine, in the same device call.

  python3 torch_newton_schulz.py [--json OUT.json] [--gemm NxK,...] [--ns BxRxC,...] [--timing held|synced]

symgemm rows: X @ X.mT for a bf16 X (n x k): the full product cuBLAS computes for the n x n output the symmetric
GEMM computes half of. ns rows: Muon's standard Newton-Schulz in bf16 with the five Polar Express steps (arXiv
2505.16932, with the Gram Newton-Schulz reference's safety factor 1.05), X normalized by its Frobenius norm, worked
on transposed when rows > columns, batched with torch.bmm-style matmuls over a stack. Shapes and names match
`oxtile bench ns`'s, so `oxtile bench ns --peers OUT.json` puts the rows beside ours.

Timing (held, the protocol of ../shared/bench/torch_reference.py): warm-up calls, then the stream is held by a
sleep kernel while every timed call is queued between its own pair of CUDA events, so the calls run back to back;
the median of the per-call times. --timing synced synchronizes after each call instead.
"""
import argparse, json
import torch

UNSCALED = [
    (8.28721201814563, -23.595886519098837, 17.300387312530933),
    (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
    (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
    (3.3184196573706015, -2.488488024314874, 0.51004894012372),
    (2.300652019954817, -1.6689039845747493, 0.4188073119525673),
]
SAFETY = 1.05
COEFFICIENTS = [(a / SAFETY, b / SAFETY ** 3, c / SAFETY ** 5) for a, b, c in UNSCALED]
GEMMS = ["4096x4096", "4096x14336", "8192x8192", "8192x28672", "2048x8192"]
STACKS = ["1x4096x4096", "1x4096x14336", "1x14336x4096", "1x2048x8192", "4x2048x8192", "1x8192x28672"]


def timed(fn, iters, warm, timing):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    if timing == "held":
        torch.cuda._sleep(int(2e7))
        for s, e in zip(starts, ends):
            s.record(); fn(); e.record()
        torch.cuda.synchronize()
    else:
        for s, e in zip(starts, ends):
            s.record(); fn(); e.record()
            torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return times[len(times) // 2]


def newton_schulz(x):
    """The standard quintic iteration on a stack [batch, rows, columns], in x's dtype."""
    tall = x.size(-2) > x.size(-1)
    if tall:
        x = x.mT
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for a, b, c in COEFFICIENTS:
        gram = x @ x.mT
        poly = b * gram + c * (gram @ gram)
        x = a * x + poly @ x
    return x.mT if tall else x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--gemm", default=",".join(GEMMS))
    parser.add_argument("--ns", default=",".join(STACKS))
    parser.add_argument("--timing", choices=["held", "synced"], default="held")
    args = parser.parse_args()
    torch.manual_seed(0)
    rows = []
    for spec in filter(None, args.gemm.split(",")):
        n, k = map(int, spec.split("x"))
        x = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        ms = timed(lambda: x @ x.mT, 30, 5, args.timing)
        rows.append({"op": "symgemm", "shape": f"{n}x{n}x{k}", "impl": "cublas(torch)", "ms": ms,
                     "tflops": 2 * n * n * k / ms / 1e9})
    for spec in filter(None, args.ns.split(",")):
        batch, r, c = map(int, spec.split("x"))
        x = torch.randn(batch, r, c, device="cuda", dtype=torch.bfloat16)
        n, m = min(r, c), max(r, c)
        ms = timed(lambda: newton_schulz(x), 10, 3, args.timing)
        flops = batch * len(COEFFICIENTS) * (4 * n * n * m + 2 * n ** 3)
        rows.append({"op": "ns", "shape": spec, "impl": "torch-ns-standard", "ms": ms, "tflops": flops / ms / 1e9})
    for r in rows:
        print(f"{r['op']:8} {r['shape']:16} {r['impl']:18} {r['ms']:9.4f} ms {r['tflops']:8.1f} TFLOP/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
