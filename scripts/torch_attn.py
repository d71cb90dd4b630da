#!/usr/bin/env python3
"""Peer baselines of attention on the GPU machine: cuDNN and FlashAttention-2 through torch SDPA.

  python3 scripts/torch_attn.py                                       # the attention suite of torch_reference.py
  python3 scripts/torch_attn.py 4,16,8192,128,causal --backward --json attn-bwd.json
  python3 scripts/torch_attn.py 8,16,4096,128,full --settle-s 1.5     # timed at the clock a sustained load runs at

Then `oxtile bench attn [--backward] --peers FILE.json` shows the rows beside ours (ops "attn" and "attn-bwd").
Shapes are B,H,S,D,{full|causal}; q, k, v, dO are [B,H,S,D] bf16 drawn from N(0,1). Timed: the forward, or the
backward alone (torch.autograd.grad of one SDPA output, graph kept, with respect to q, k and v), as medians of
per-call CUDA-event timings, the calls queued back to back behind a sleep kernel (the held timing of
../shared/bench/torch_reference.py), several input sets rotated so L2 does not hold them. FLOPs: the forward's
4*B*H*S*S*D, 2.5 x that for the backward, halved if causal.

Settling: under the power cap the clock a row runs at depends on the load before it. torch_reference.py times 20
calls after 5 (a burst: on an H100, 8,16,4096,128 full forward at ~1980 MHz), while `oxtile bench attn` with its
defaults runs every variant's 50 calls in 5 rounds (~0.5 s of load: ~1700 MHz), which alone made cuDNN look 9%
faster than ours (docs/perf-notes.md, session 47). `--settle-s S` runs the calls back to back for S seconds before
timing (match it with `oxtile bench attn --settle-ms`), so both sides are timed at the sustained clock. Each row
records the SM clock (NVML, the median of samples taken while its timed calls run: `sm_mhz`, as `oxtile bench attn`
reports ours): on an H100 the clock after a 1 s settle differs by 10-20% between shapes and between the two sides,
as each kernel's power draw sets it under the cap.
"""
import argparse
import ctypes
import json
import sys
import time

import torch
import torch.nn.functional as F

SUITE = [f"{16384 // s * 2},16,{s},128,{m}" for s in (512, 1024, 2048, 4096, 8192, 16384) for m in ("full", "causal")] + \
        [f"{16384 // s * 2},32,{s},64,{m}" for s in (512, 2048, 8192) for m in ("full", "causal")]


class SmClock:
    """The SM clock of the current CUDA device through NVML (libnvidia-ml, as the driver installs it); `read()` is
    None where NVML cannot be loaded or the device not found."""

    def __init__(self):
        self.handle = None
        try:
            nvml = ctypes.CDLL("libnvidia-ml.so.1")
            if nvml.nvmlInit_v2() != 0:
                return
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            handle = ctypes.c_void_p()
            if hasattr(props, "pci_domain_id"):
                bus_id = f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0".encode()
                found = nvml.nvmlDeviceGetHandleByPciBusId_v2(ctypes.c_char_p(bus_id), ctypes.byref(handle)) == 0
            else:  # one device: NVML's first is CUDA's
                found = (torch.cuda.device_count() == 1
                         and nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0)
            if found:
                self.nvml, self.handle = nvml, handle
        except OSError:
            pass

    def read(self):
        if self.handle is None:
            return None
        mhz = ctypes.c_uint()
        # NVML_CLOCK_SM = 1
        return mhz.value if self.nvml.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(mhz)) == 0 else None


def held_median_ms(fn, sets, settle_s, clock, iters=20, warm=3):
    """Median time of fn(*set) in ms, the calls queued behind a sleep kernel so each event pair brackets kernels only;
    first `warm` calls, and more until `settle_s` seconds have passed. Also the median SM clock sampled while the timed
    calls run (None without NVML)."""
    for i in range(warm):
        fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    end = time.monotonic() + settle_s
    while time.monotonic() < end:
        for i in range(16):
            fn(*sets[i % len(sets)])
        torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    torch.cuda._sleep(int(1e7))
    for i in range(iters):
        starts[i].record()
        fn(*sets[i % len(sets)])
        ends[i].record()
    mhz = []
    while not starts[0].query():  # the sleep kernel still holds the queue
        time.sleep(0.0002)
    while not ends[-1].query():
        mhz.append(clock.read())
        time.sleep(0.0005)
    torch.cuda.synchronize()
    if not mhz:  # the timed calls were done before the first sample
        mhz.append(clock.read())
    mhz = sorted(m for m in mhz if m is not None)
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return times[len(times) // 2], (mhz[len(mhz) // 2] if mhz else None)


BACKENDS = ("cudnn", "flash2")


def attn(spec, backward, settle_s, clock, only=BACKENDS):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, h, s, d, mode = spec.split(",")
    b, h, s, d = int(b), int(h), int(s), int(d)
    causal = mode == "causal"
    flops = (2.5 if backward else 1.0) * 4 * b * h * s * s * d / (2 if causal else 1)
    op = "attn-bwd" if backward else "attn"
    count = max(2, min(4, int(4 * 60e6 // (8 * 2 * b * h * s * d)) + 1))
    rows = []
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash2", SDPBackend.FLASH_ATTENTION)):
        if name not in only:
            continue
        try:
            with sdpa_kernel(backend):
                sets = []
                for _ in range(count):
                    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=backward)
                               for _ in range(3))
                    if backward:
                        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        sets.append((out, q, k, v, torch.randn_like(out)))
                    else:
                        sets.append((q, k, v))
                if backward:
                    def call(out, q, k, v, d_o):
                        return torch.autograd.grad(out, (q, k, v), d_o, retain_graph=True)
                else:
                    def call(q, k, v):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                ms, mhz = held_median_ms(call, sets, settle_s, clock)
            rows.append({"op": op, "shape": spec, "impl": name, "ms": ms, "tflops": flops / ms / 1e9, "sm_mhz": mhz})
        except Exception as ex:  # a backend may refuse a shape
            rows.append({"op": op, "shape": spec, "impl": name, "error": str(ex).splitlines()[0]})
        torch.cuda.empty_cache()
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("shapes", nargs="*")
    p.add_argument("--backward", action="store_true", help="time the backward alone (default: the forward)")
    p.add_argument("--settle-s", type=float, default=0.0, help="back-to-back calls for this long before timing")
    p.add_argument("--only", choices=BACKENDS, action="append", help="time only this backend (repeatable)")
    p.add_argument("--json", help="also write the rows to this file")
    a = p.parse_args()
    rows, clock = [], SmClock()
    for spec in a.shapes or SUITE:
        rows.extend(attn(spec, a.backward, a.settle_s, clock, a.only or BACKENDS))
    what = "backward alone" if a.backward else "forward"
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}, timing held, {what}, settled {a.settle_s} s")
    for r in rows:
        if "error" in r:
            print(f"{r['op']:8} {r['shape']:24} {r['impl']:8} error: {r['error']}")
        else:
            print(f"{r['op']:8} {r['shape']:24} {r['impl']:8} {r['ms']:9.4f} ms {r['tflops']:8.1f} TFLOP/s"
                  f"  {r['sm_mhz']} MHz")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
