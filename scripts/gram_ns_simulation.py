#!/usr/bin/env python3
"""Gram Newton-Schulz in emulated half precision, on the CPU (numpy), next to the standard iteration (issue 29).

  python3 scripts/gram_ns_simulation.py [--seeds N] [--n 136] [--m 136]

Question it answers: is the overshoot our GPU Gram Newton-Schulz showed on a 136x136 standard-normal matrix
(singular values up to 2.04, relative error 0.29 against the float64 Gram iteration) a bug of ours or a property of
the algorithm in half precision? The iteration here follows the public description of Gram Newton-Schulz
(Zhang, Amsel, Chen, Dao; Dao AI Lab 2026) step by step, with rounding where our GPU path rounds:

- X is normalized in f32 (the Frobenius norm of the input, X / (norm + 1e-7)) and rounded to f16; worked on
  transposed when rows > columns.
- Every product is a tensor-core GEMM: f16 operands, f32 accumulation, the epilogue alpha*AB + beta*C in f32, one
  rounding to f16. Products whose result is symmetric (X X^T, R R, Q Z, R Z, Z RZ) keep the upper triangle and mirror
  it, as the symmetric GEMM does.
- Q = Z + a*I after a (re)start: one f32 addition on the diagonal, rounded to f16.
- Restarts before the iterations listed (0-based; [2]: between the 2nd and the 3rd), then X <- Q X, R = X X^T,
  Q = I. The last iteration does not update R; neither does the one before a restart.
- The result Q X is rounded to f16, then to the input type.

Compared, on the same inputs: the float64 Gram iteration (equal to the float64 standard one), the standard iteration
in f16 (what the reference runs for square matrices: its dispatch uses Gram only when max side > min side) and in
bf16 (Muon's, torch's). Inputs: standard normal, and U diag(s) V^T with s geometric from 1 to 1e-3 or 1e-5.
Prints, per case, the relative Frobenius error against float64 and the range of singular values.
"""
import argparse

import numpy as np

UNSCALED = [
    (8.28721201814563, -23.595886519098837, 17.300387312530933),
    (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
    (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
    (3.3184196573706015, -2.488488024314874, 0.51004894012372),
    (2.300652019954817, -1.6689039845747493, 0.4188073119525673),
]
SAFETY = 1.05
COEFFICIENTS = [(a / SAFETY, b / SAFETY**3, c / SAFETY**5) for a, b, c in UNSCALED]
EPS = 1e-7


def to_bf16(x):
    """Round float32 values to bfloat16 (nearest even), returned as float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def to_f16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


ROUND = {"f16": to_f16, "bf16": to_bf16}


def gemm(a, b, rnd, c=None, alpha=1.0, beta=0.0, symmetric=False):
    """alpha*A*B + beta*C: operands already rounded, f32 accumulation and epilogue, one rounding."""
    acc = a.astype(np.float32) @ b.astype(np.float32)
    out = np.float32(alpha) * acc
    if c is not None and beta != 0.0:
        out = out + np.float32(beta) * c.astype(np.float32)
    if symmetric:
        upper = np.triu(out)
        out = upper + np.triu(out, 1).T
    return rnd(out)


def normalize(x, rnd):
    x32 = x.astype(np.float32)
    norm = np.sqrt(np.sum(x32.astype(np.float32) ** 2, dtype=np.float32))
    return rnd(x32 / (norm + np.float32(EPS)))


def gram_ns(x, restarts=(2,), precision="f16"):
    rnd = ROUND[precision]
    tall = x.shape[0] > x.shape[1]
    x = normalize(x.T if tall else x, rnd)
    n = x.shape[0]
    r = gemm(x, x.T, rnd, symmetric=True)
    q = None
    last = len(COEFFICIENTS) - 1
    for i, (a, b, c) in enumerate(COEFFICIENTS):
        if i != 0 and i in restarts:
            x = gemm(q, x, rnd)
            r = gemm(x, x.T, rnd, symmetric=True)
            q = None
        z = gemm(r, r, rnd, c=r, alpha=c, beta=b, symmetric=True)
        if q is None:
            q = z.copy()
            q[np.arange(n), np.arange(n)] = rnd(z.diagonal() + np.float32(a))
        else:
            q = gemm(q, z, rnd, c=q, alpha=1.0, beta=a, symmetric=True)
        if i < last and (i + 1) not in restarts:
            rz = gemm(r, z, rnd, c=r, alpha=1.0, beta=a, symmetric=True)
            r = gemm(z, rz, rnd, c=rz, alpha=1.0, beta=a, symmetric=True)
    x = gemm(q, x, rnd)
    return x.T if tall else x


def standard_ns(x, precision):
    rnd = ROUND[precision]
    tall = x.shape[0] > x.shape[1]
    x = normalize(x.T if tall else x, rnd)
    for a, b, c in COEFFICIENTS:
        g = gemm(x, x.T, rnd, symmetric=True)
        p = gemm(g, g, rnd, c=g, alpha=c, beta=b, symmetric=True)
        x = gemm(p, x, rnd, c=x, alpha=1.0, beta=a)
    return x.T if tall else x


def exact_ns(x):
    tall = x.shape[0] > x.shape[1]
    x = x.T if tall else x
    x = x / (np.linalg.norm(x) + EPS)
    for a, b, c in COEFFICIENTS:
        g = x @ x.T
        x = a * x + (b * g + c * g @ g) @ x
    return x.T if tall else x


def exact_gram(x, restarts=(2,)):
    """The float64 Gram iteration (equal to exact_ns up to float64 roundoff)."""
    tall = x.shape[0] > x.shape[1]
    x = x.T if tall else x
    x = x / (np.linalg.norm(x) + EPS)
    n = x.shape[0]
    r, q = x @ x.T, np.eye(n)
    for i, (a, b, c) in enumerate(COEFFICIENTS):
        if i != 0 and i in restarts:
            x, q = q @ x, np.eye(n)
            r = x @ x.T
        z = b * r + c * r @ r
        q = q @ z + a * q
        rz = r @ z + a * r
        r = z @ rz + a * rz
    x = q @ x
    return x.T if tall else x


def inputs(rows, columns, seed):
    rng = np.random.default_rng(seed)
    short = min(rows, columns)
    yield "normal", rng.standard_normal((rows, columns))
    u, _ = np.linalg.qr(rng.standard_normal((rows, short)))
    v, _ = np.linalg.qr(rng.standard_normal((columns, short)))
    for low in (1e-3, 1e-5):
        s = np.geomspace(1.0, low, short)
        yield f"geometric 1..{low:g}", (u * s) @ v.T


def describe(name, got, want):
    sv = np.linalg.svd(got.astype(np.float64), compute_uv=False)
    error = np.linalg.norm(got - want) / np.linalg.norm(want)
    return f"{name:14} rel.err {error:7.3f}  sv [{sv.min():.4f}, {sv.max():.4f}]"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--shapes", default="136x136,128x456,456x128,256x256,512x512,512x1792")
    parser.add_argument("--input", choices=["bf16", "f16"], default="bf16", help="the type X arrives in")
    args = parser.parse_args()
    for spec in args.shapes.split(","):
        rows, columns = map(int, spec.split("x"))
        for seed in range(args.seeds):
            for kind, x in inputs(rows, columns, seed):
                x = ROUND[args.input](x.astype(np.float32)).astype(np.float64)
                normalized = np.linalg.svd(x / np.linalg.norm(x), compute_uv=False)
                print(f"{rows}x{columns} seed {seed} {kind}: normalized sv [{normalized.min():.2e}, "
                      f"{normalized.max():.2e}]")
                want = exact_gram(x)
                diff = np.linalg.norm(want - exact_ns(x)) / np.linalg.norm(want)
                assert diff < 1e-8, diff
                print("  " + describe("float64", want, want))
                for restarts in [(2,), (), (1, 2, 3, 4)]:
                    got = gram_ns(x, restarts)
                    print("  " + describe(f"gram f16 {list(restarts)}", got, want))
                for precision in ["f16", "bf16"]:
                    print("  " + describe(f"standard {precision}", standard_ns(x, precision), want))


if __name__ == "__main__":
    main()
