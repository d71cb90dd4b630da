"""oxtile's kernels beside PyTorch's in one process: ``python -m oxtile.bench attn|gemm [shapes] [options]``.

    python -m oxtile.bench attn                      # default shapes; B,H,S,D,full|causal (B,Hq:Hkv,S,D for GQA)
    python -m oxtile.bench attn 8,16,4096,128,full 8,16,4096,128,causal
    python -m oxtile.bench attn --suite --json attn.json  # issue 25's table: the attention suite, head dim 256 too
    python -m oxtile.bench gemm 8192x8192x8192 --layout tt,tn --dtype bf16

Attention: oxtile.attention on q, k, v [B, S, H, D], against torch's scaled_dot_product_attention with the cuDNN
backend and with the flash backend on transposed views of the same tensors ([B, H, S, D], as SDPA takes them).
GEMM: oxtile.matmul against torch.matmul on the same operands (row-major `t` or column-major `n` views per BLAS
letter: tt is a @ b of row-major tensors, tn is a @ w.T).

How each is timed ("held"): per round, a sleep kernel is queued on the stream first, then `--iters` calls of one
contender back to back, each between two CUDA events, with no synchronization in between; the GPU starts them only
once the sleep ends, after the host has queued them all, so each event pair brackets that call's GPU work (its
launches, and for oxtile the small copies of its tensor maps) and not the Python dispatch. The contenders take
turns in rounds, in an order that rotates, on the same tensors; each figure is the median over every call of every
round. A round whose calls the host could not queue within the sleep is repeated with a longer sleep. Before
timing, each contender's output is compared with torch's (max |difference| over max |value|).
"""

import argparse
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F

import oxtile

ATTN_SHAPES = ["8,16,4096,128,full", "8,16,4096,128,causal", "16,16,2048,128,full", "4,32:8,8192,128,causal",
               "8,32,4096,64,full", "4,16,8192,256,full", "4,16,8192,256,causal"]
# The attention suite of ../shared/bench/torch_reference.py (16384·2 / S sequences of S keys, head dims 128 and 64,
# full and causal) and issue 25's head-dim-256 rows: `--suite`.
ATTN_SUITE = ([f"{32768 // s},16,{s},128,{m}" for s in (512, 1024, 2048, 4096, 8192, 16384) for m in ("full", "causal")]
              + [f"{32768 // s},32,{s},64,{m}" for s in (512, 2048, 8192) for m in ("full", "causal")]
              + [f"{16384 // s},16,{s},256,{m}" for s in (2048, 8192) for m in ("full", "causal")])
GEMM_SHAPES = ["8192x8192x8192", "4096x4096x4096", "8192x4096x14336", "128x8192x8192"]
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "f16": torch.float16}


def held_times(fn, iters: int, sleep_cycles: int) -> list:
    """Per-call GPU times (ms) of `iters` calls of `fn` queued behind a sleep kernel; see the module docstring."""
    stream = torch.cuda.current_stream()
    for _ in range(4):
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        asleep = torch.cuda.Event()
        torch.cuda._sleep(sleep_cycles)
        asleep.record(stream)
        for start, end in zip(starts, ends):
            start.record(stream)
            fn()
            end.record(stream)
        held = not asleep.query()  # the sleep outlasted the queuing: no call started before the host was done
        torch.cuda.synchronize()
        if held:
            return [s.elapsed_time(e) for s, e in zip(starts, ends)]
        sleep_cycles *= 4
    raise RuntimeError("could not queue the calls within a sleep kernel (is the host this slow?)")


def race(contenders: dict, rounds: int, iters: int, sleep_cycles: int) -> dict:
    """Median per-call ms of each contender, taking turns in rounds (the order rotating each round)."""
    names = list(contenders)
    times = {name: [] for name in names}
    for name in names:  # warm-up: module loads, cuDNN plans, allocator
        for _ in range(3):
            contenders[name]()
    torch.cuda.synchronize()
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].extend(held_times(contenders[name], iters, sleep_cycles))
    return {name: statistics.median(ts) for name, ts in times.items()}


def relative_difference(x: torch.Tensor, reference: torch.Tensor) -> float:
    x, reference = x.double(), reference.double()
    return ((x - reference).abs().max() / reference.abs().max().clamp_min(1e-30)).item()


def parse_attn(spec: str):
    """B,H,S,D,mode with H either heads or heads_q:heads_kv."""
    b, h, s, d, mode = spec.split(",")
    hq, _, hkv = h.partition(":")
    if mode not in ("full", "causal"):
        raise ValueError(f"{spec}: the mode is full or causal")
    return int(b), int(hq), int(hkv or hq), int(s), int(d), mode == "causal"


def bench_attn(args) -> list:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    for spec in args.shapes or (ATTN_SUITE if args.suite else ATTN_SHAPES):
        b, hq, hkv, s, d, causal = parse_attn(spec)
        dtype = DTYPES[args.dtype]
        gen = torch.Generator(device="cuda").manual_seed(0)
        q = torch.randn(b, s, hq, d, device="cuda", dtype=dtype, generator=gen)
        k, v = (torch.randn(b, s, hkv, d, device="cuda", dtype=dtype, generator=gen) for _ in range(2))
        flops = 4 * b * hq * s * s * d / (2 if causal else 1)
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        gqa = {"enable_gqa": True} if hq != hkv else {}

        def sdpa(backend):
            def call():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, **gqa).transpose(1, 2)
            return call

        contenders = {"oxtile": lambda: oxtile.attention(q, k, v, causal=causal),
                      "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION), "flash": sdpa(SDPBackend.FLASH_ATTENTION)}
        rows.extend(run_shape(spec, flops, contenders, args))
        del q, k, v, qt, kt, vt
        torch.cuda.empty_cache()
    return rows


def bench_gemm(args) -> list:
    rows = []
    for spec in args.shapes or GEMM_SHAPES:
        m, n, k = (int(x) for x in spec.split("x"))
        for layout in args.layout.split(","):
            dtype = DTYPES[args.dtype]
            gen = torch.Generator(device="cuda").manual_seed(0)
            # Stored as the letters say (t row-major, n column-major), used as A M×K and B K×N.
            a = torch.randn(m, k, device="cuda", dtype=dtype, generator=gen) if layout[0] == "t" else \
                torch.randn(k, m, device="cuda", dtype=dtype, generator=gen).T
            b = torch.randn(k, n, device="cuda", dtype=dtype, generator=gen) if layout[1] == "t" else \
                torch.randn(n, k, device="cuda", dtype=dtype, generator=gen).T
            contenders = {"oxtile": lambda: oxtile.matmul(a, b), "torch": lambda: torch.matmul(a, b)}
            rows.extend(run_shape(f"{spec} {layout}", 2 * m * n * k, contenders, args))
            del a, b
            torch.cuda.empty_cache()
    return rows


def run_shape(spec: str, flops: float, contenders: dict, args) -> list:
    usable, rows = {}, []
    reference = None
    for name, fn in contenders.items():
        try:
            out = fn()
            torch.cuda.synchronize()
        except Exception as error:  # a backend may refuse a shape: say so, time the others
            rows.append({"shape": spec, "impl": name, "error": str(error).splitlines()[0]})
            continue
        if reference is None and name != "oxtile":
            reference = out
        usable[name] = (fn, out)
    checked = {name: (relative_difference(out, reference) if reference is not None else float("nan"))
               for name, (_, out) in usable.items()}
    times = race({name: fn for name, (fn, _) in usable.items()}, args.rounds, args.iters, args.sleep_cycles)
    for name, ms in times.items():
        rows.append({"shape": spec, "impl": name, "ms": ms, "tflops": flops / ms / 1e9, "diff": checked[name]})
    return rows


def print_table(rows: list, title: str) -> None:
    print(title)
    print(f"{'shape':28} {'impl':8} {'ms':>9} {'TFLOP/s':>8} {'oxtile/it':>9} {'vs torch':>9}")
    ours = {r["shape"]: r for r in rows if r["impl"] == "oxtile" and "ms" in r}
    for r in rows:
        if "error" in r:
            print(f"{r['shape']:28} {r['impl']:8} error: {r['error']}")
            continue
        mine = ours.get(r["shape"])
        ratio = f"{r['ms'] / mine['ms']:8.3f}x" if mine and r["impl"] != "oxtile" else ""
        print(f"{r['shape']:28} {r['impl']:8} {r['ms']:9.4f} {r['tflops']:8.1f} {ratio:>9} {r['diff']:9.1e}")
    print("oxtile/it: the contender's time over oxtile's (above 1: oxtile is faster). vs torch: max |difference| "
          "from the first torch contender's output over its max |value|.")


def summarize(rows: list, key=lambda shape: "") -> list:
    """Per group of shapes (`key(shape)`, e.g. the head dimension) and per peer, the geomean and the lowest of the
    peer's time over oxtile's (above 1: oxtile is faster), over the shapes both ran: (group, peer, n, geomean, lowest
    shape, lowest)."""
    ours = {r["shape"]: r["ms"] for r in rows if r["impl"] == "oxtile" and "ms" in r}
    ratios = {}
    for r in rows:
        if r["impl"] != "oxtile" and "ms" in r and r["shape"] in ours:
            for group in dict.fromkeys(["all", key(r["shape"])]):
                if group:
                    ratios.setdefault((group, r["impl"]), []).append((r["ms"] / ours[r["shape"]], r["shape"]))
    summary = []
    for (group, peer), values in ratios.items():
        geomean = math.exp(sum(math.log(v) for v, _ in values) / len(values))
        lowest, shape = min(values)
        summary.append((group, peer, len(values), geomean, shape, lowest))
    return summary


def head_dim(spec: str) -> str:
    """The head dimension of an attention shape B,H,S,D,mode, as the group `summarize` prints it under."""
    return f"d{spec.split(',')[3]}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oxtile.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["attn", "gemm"])
    parser.add_argument("shapes", nargs="*", help="attn: B,H,S,D,full|causal (H or Hq:Hkv); gemm: MxNxK")
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--layout", default="tt", help="gemm: BLAS letters per operand, comma-separated (tt,tn,nt,nn)")
    parser.add_argument("--suite", action="store_true",
                        help="attn: the attention suite of torch_reference.py plus head dim 256 (issue 25's table)")
    parser.add_argument("--json", help="write every row (shape, impl, ms, TFLOP/s, difference) to this file")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=10, help="calls per contender per round")
    parser.add_argument("--sleep-cycles", type=int, default=20_000_000,
                        help="length of the holding sleep kernel in GPU clock cycles (lengthened if too short)")
    args = parser.parse_args(argv)
    if args.suite and (args.what != "attn" or args.shapes):
        parser.error("--suite is the attention table: give it to attn, without shapes")
    if not torch.cuda.is_available():
        print("oxtile.bench needs a CUDA GPU; torch sees none", file=sys.stderr)
        return 2
    rows = bench_attn(args) if args.what == "attn" else bench_gemm(args)
    info = oxtile.device_info(torch.cuda.current_device())
    title = (f"# oxtile {oxtile.__version__}, torch {torch.__version__} (cuDNN {torch.backends.cudnn.version()}) on "
             f"{info['name']}, {args.dtype}, held timing: {args.rounds} rounds x {args.iters} calls per contender")
    print_table(rows, title)
    key = head_dim if args.what == "attn" else (lambda shape: shape.split()[-1])
    summary = summarize(rows, key)
    groups = {group for group, *_ in summary if group != "all"}
    for group, peer, n, geomean, shape, lowest in summary:
        if group == "all" or len(groups) > 1:
            print(f"{group:>5} vs {peer:8} over {n:3} shapes: geomean {geomean:.3f}, lowest {lowest:.3f} ({shape})")
    if args.json:
        # JSON has no NaN: a difference with no torch output to compare with is null.
        clean = [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in rows]
        with open(args.json, "w") as out:
            json.dump({"title": title, "rows": clean}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
