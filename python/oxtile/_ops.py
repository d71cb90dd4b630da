"""The PyTorch custom operators over the native module: ``oxtile::matmul``, ``oxtile::attention`` and
``oxtile::attention_backward``, their fake (shape-only) implementations for ``torch.compile``, and autograd.

What is checked where: this file checks what only PyTorch knows (a tensor's device, its rank, dtype, whether its
strides form a layout the kernels read) and raises ValueError before calling the native module; the native
module checks the rest (shapes the kernels take, alignment, overlap, the memory behind each address) and raises
ValueError or RuntimeError with the Rust error's message.
"""

from typing import Optional

import torch
from torch import Tensor

from . import _oxtile

_NAMES = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}
_INPUTS = (torch.bfloat16, torch.float16)

#: Head dims the attention backward kernels take (the forward's).
BACKWARD_HEAD_DIMS = (64, 128, 256)


def _cuda_device(op: str, tensors: dict) -> torch.device:
    """The one CUDA device of `tensors`, or ValueError naming the tensor that is elsewhere."""
    for name, t in tensors.items():
        if t.device.type != "cuda":
            raise ValueError(f"oxtile.{op}: {name} is on {t.device}; oxtile takes CUDA tensors")
    devices = {t.device for t in tensors.values()}
    if len(devices) > 1:
        where = ", ".join(f"{name} on {t.device}" for name, t in tensors.items())
        raise ValueError(f"oxtile.{op}: the tensors must be on one GPU, got {where}")
    return devices.pop()


# ---------------------------------------------------------------------------------------------------------- matmul


def _check_matmul(a: Tensor, b: Tensor, out_dtype: torch.dtype) -> None:
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"oxtile.matmul takes 2-D tensors, got a {tuple(a.shape)} and b {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"oxtile.matmul: a {tuple(a.shape)} and b {tuple(b.shape)} do not chain (a's columns ≠ b's rows)")
    if a.dtype not in _INPUTS or b.dtype != a.dtype:
        raise ValueError(f"oxtile.matmul takes two bfloat16 or two float16 tensors, got {a.dtype} and {b.dtype}")
    if out_dtype not in (a.dtype, torch.float32):
        raise ValueError(f"oxtile.matmul: out_dtype {out_dtype} for {a.dtype} inputs: the kernels write {a.dtype} or torch.float32")


def _order(name: str, t: Tensor) -> str:
    """"row" or "col": how the kernels read 2-D `t` in place. Both are dense (no padding between rows or columns);
    where both fit (a dimension of 1), the one TMA reads in place (a contiguous dimension a multiple of 8; the other
    order would be copied first)."""
    rows, cols = t.shape
    s_rows, s_cols = t.stride()
    row = (s_cols == 1 or cols == 1) and (s_rows == cols or rows == 1)
    col = (s_rows == 1 or rows == 1) and (s_cols == rows or cols == 1)
    if row and col:
        return "col" if cols % 8 != 0 and rows % 8 == 0 else "row"
    if row or col:
        return "row" if row else "col"
    raise ValueError(
        f"oxtile.matmul: {name} {tuple(t.shape)} has strides {tuple(t.stride())}: the kernels read a matrix in place "
        f"only row-major (strides ({cols}, 1)) or column-major (strides (1, {rows})); pass {name}.contiguous()"
    )


@torch.library.custom_op("oxtile::matmul", mutates_args=())
def _matmul(a: Tensor, b: Tensor, out_dtype: torch.dtype) -> Tensor:
    _check_matmul(a, b, out_dtype)
    device = _cuda_device("matmul", {"a": a, "b": b})
    (m, k), n = a.shape, b.shape[1]
    a_order, b_order = _order("a", a), _order("b", b)
    with torch.cuda.device(device):
        d = torch.empty((m, n), dtype=out_dtype, device=device)
        stream = torch.cuda.current_stream(device).cuda_stream
        _oxtile.matmul(device.index, stream, _NAMES[a.dtype], _NAMES[out_dtype], m, n, k,
                       a.data_ptr(), a_order, b.data_ptr(), b_order, d.data_ptr())
    return d


@_matmul.register_fake
def _matmul_fake(a: Tensor, b: Tensor, out_dtype: torch.dtype) -> Tensor:
    _check_matmul(a, b, out_dtype)
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype)


def _matmul_setup(ctx, inputs, output):
    a, b, _ = inputs
    ctx.save_for_backward(a, b)


def _matmul_backward(ctx, grad: Tensor):
    # dA = dD·Bᵀ, dB = Aᵀ·dD, by PyTorch's matmul in the inputs' type (the gradient of an f32 output product in f32,
    # then rounded): any layout and size, where oxtile's kernels need multiples of 8.
    a, b = ctx.saved_tensors

    def product(x: Tensor, y: Tensor) -> Tensor:
        return (x.to(grad.dtype) @ y.to(grad.dtype)).to(a.dtype)

    grad_a = product(grad, b.mT) if ctx.needs_input_grad[0] else None
    grad_b = product(a.mT, grad) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b, None


torch.library.register_autograd("oxtile::matmul", _matmul_backward, setup_context=_matmul_setup)


def matmul(a: Tensor, b: Tensor, out_dtype: Optional[torch.dtype] = None) -> Tensor:
    """D = a @ b on oxtile's Hopper GEMM kernels.

    a (M×K) and b (K×N): 2-D CUDA tensors on one GPU, both bfloat16 or both float16, each row-major or column-major
    (a transposed view such as ``w.T`` is read in place: all four layouts). TMA reads an operand in place when its
    data is 16-byte aligned and its contiguous dimension a multiple of 8; any other is copied first into a buffer the
    call allocates (a read and a write of the operand, and an allocation, per call). D is a new row-major M×N tensor of `out_dtype`:
    the inputs' type (default) or torch.float32; products accumulate in f32 either way. Runs on the current stream.
    """
    return torch.ops.oxtile.matmul(a, b, a.dtype if out_dtype is None else out_dtype)


# ------------------------------------------------------------------------------------------------------- attention


def _check_attention(q: Tensor, k: Tensor, v: Tensor) -> None:
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(
            f"oxtile.attention takes 4-D [batch, seq, heads, head_dim] tensors, got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    if k.shape != v.shape:
        raise ValueError(f"oxtile.attention: k {tuple(k.shape)} and v {tuple(v.shape)} must have one shape")
    if q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]:
        raise ValueError(
            f"oxtile.attention: q {tuple(q.shape)} and k {tuple(k.shape)} must agree in batch (dim 0) and head_dim (dim 3)"
        )
    if q.dtype not in _INPUTS or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(
            f"oxtile.attention takes bfloat16 or float16 q, k, v of one dtype, got {q.dtype}, {k.dtype}, {v.dtype}"
        )


def _bshd(name: str, t: Tensor) -> tuple:
    """(address, elements the storage holds from it, (batch, seq, head) strides) of a [B, S, H, D] tensor."""
    if t.stride(3) != 1 and t.shape[3] != 1:
        raise ValueError(
            f"oxtile.attention: {name}'s head_dim stride is {t.stride(3)}: the kernels need head_dim contiguous "
            f"(stride 1); pass {name}.contiguous()"
        )
    _, s, h, d = t.shape
    # A dimension of size 1 is never stepped over, and PyTorch may give it any stride: give it its packed one, which
    # the kernels' tensor maps take (a multiple of 8 when head_dim is).
    packed = (s * h * d, h * d, d)
    strides = tuple(packed[i] if t.shape[i] == 1 else t.stride(i) for i in range(3))
    available = t.untyped_storage().nbytes() // t.element_size() - t.storage_offset()
    return (t.data_ptr(), available, strides)


@torch.library.custom_op("oxtile::attention", mutates_args=())
def _attention(q: Tensor, k: Tensor, v: Tensor, causal: bool, softmax_scale: float,
               deterministic: bool) -> tuple[Tensor, Tensor]:
    # `deterministic` is the backward's mode, an input here so that autograd's context keeps it.
    _check_attention(q, k, v)
    device = _cuda_device("attention", {"q": q, "k": k, "v": v})
    (batch, seq_q, heads_q, head_dim), (_, seq_k, heads_kv, _) = q.shape, k.shape
    with torch.cuda.device(device):
        o = torch.empty((batch, seq_q, heads_q, head_dim), dtype=q.dtype, device=device)
        lse = torch.empty((batch, heads_q, seq_q), dtype=torch.float32, device=device)
        stream = torch.cuda.current_stream(device).cuda_stream
        _oxtile.attention(device.index, stream, _NAMES[q.dtype], (batch, seq_q, seq_k, heads_q, heads_kv, head_dim),
                          _bshd("q", q), _bshd("k", k), _bshd("v", v), _bshd("o", o), lse.data_ptr(),
                          causal, softmax_scale)
    return o, lse


@_attention.register_fake
def _attention_fake(q: Tensor, k: Tensor, v: Tensor, causal: bool, softmax_scale: float,
                    deterministic: bool) -> tuple[Tensor, Tensor]:
    _check_attention(q, k, v)
    batch, seq_q, heads_q, head_dim = q.shape
    return (q.new_empty((batch, seq_q, heads_q, head_dim)),
            q.new_empty((batch, heads_q, seq_q), dtype=torch.float32))


def _check_attention_backward(grad_o: Tensor, q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor) -> None:
    _check_attention(q, k, v)
    batch, seq_q, heads_q, head_dim = q.shape
    if o.shape != q.shape or grad_o.shape != q.shape or o.dtype != q.dtype or grad_o.dtype != q.dtype:
        raise ValueError(
            f"oxtile.attention_backward: o {tuple(o.shape)} {o.dtype} and grad_o {tuple(grad_o.shape)} "
            f"{grad_o.dtype} must have q's shape {tuple(q.shape)} and dtype {q.dtype}"
        )
    if lse.shape != (batch, heads_q, seq_q) or lse.dtype != torch.float32:
        raise ValueError(
            f"oxtile.attention_backward: lse {tuple(lse.shape)} {lse.dtype} must be float32 "
            f"{(batch, heads_q, seq_q)}, as oxtile.attention returns it"
        )
    if head_dim not in BACKWARD_HEAD_DIMS:
        raise ValueError(f"oxtile.attention_backward: head_dim {head_dim}; the backward kernels take 64, 128 or 256")


@torch.library.custom_op("oxtile::attention_backward", mutates_args=())
def _attention_backward(grad_o: Tensor, q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor, causal: bool,
                        softmax_scale: float, deterministic: bool) -> tuple[Tensor, Tensor, Tensor]:
    _check_attention_backward(grad_o, q, k, v, o, lse)
    device = _cuda_device("attention_backward", {"grad_o": grad_o, "q": q, "k": k, "v": v, "o": o, "lse": lse})
    # The kernels take dO in O's layout and write dQ, dK, dV in q's, k's and v's: everything packed here (a copy
    # only of what is not: strided views of a fused projection, transposed layouts, a non-contiguous grad_o).
    q, k, v, o, grad_o, lse = (t.contiguous() for t in (q, k, v, o, grad_o, lse))
    (batch, seq_q, heads_q, head_dim), (_, seq_k, heads_kv, _) = q.shape, k.shape
    with torch.cuda.device(device):
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        stream = torch.cuda.current_stream(device).cuda_stream
        _oxtile.attention_backward(device.index, stream, _NAMES[q.dtype],
                                   (batch, seq_q, seq_k, heads_q, heads_kv, head_dim),
                                   _bshd("q", q), _bshd("k", k), _bshd("v", v), _bshd("o", o), lse.data_ptr(),
                                   _bshd("grad_o", grad_o), _bshd("dq", dq), _bshd("dk", dk), _bshd("dv", dv),
                                   causal, softmax_scale, deterministic)
    return dq, dk, dv


@_attention_backward.register_fake
def _attention_backward_fake(grad_o, q, k, v, o, lse, causal, softmax_scale, deterministic):
    _check_attention_backward(grad_o, q, k, v, o, lse)
    # Packed, as the real op returns them (empty_like would keep a strided input's strides).
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _attention_setup(ctx, inputs, output):
    q, k, v, causal, softmax_scale, deterministic = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal, ctx.softmax_scale, ctx.deterministic = causal, softmax_scale, deterministic
    # The backward kernels take the gradient of O only: the LSE is returned as a statistic, not differentiable
    # (requires_grad False, as flash-attn's), so that no graph, eager or compiled, carries a gradient for it.
    ctx.mark_non_differentiable(lse)
    # O unused by the loss gives None, not zeros.
    ctx.set_materialize_grads(False)


def _attention_grad(ctx, grad_o: Optional[Tensor], grad_lse: Optional[Tensor]):
    if grad_o is None:
        return None, None, None, None, None, None
    q, k, v, o, lse = ctx.saved_tensors
    grad_q, grad_k, grad_v = torch.ops.oxtile.attention_backward(
        grad_o, q, k, v, o, lse, ctx.causal, ctx.softmax_scale, ctx.deterministic)
    return grad_q, grad_k, grad_v, None, None, None


torch.library.register_autograd("oxtile::attention", _attention_grad, setup_context=_attention_setup)


def _softmax_scale(q: Tensor, softmax_scale: Optional[float]) -> float:
    """The scale the kernel gets: `softmax_scale`, or 1/sqrt(head_dim) as the native default (resolved here, so
    that the backward sees the same value)."""
    return q.shape[-1] ** -0.5 if softmax_scale is None else float(softmax_scale)


def attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False, softmax_scale: Optional[float] = None,
              return_lse: bool = False, deterministic: bool = False):
    """softmax(q·kᵀ·scale)·v on oxtile's Hopper attention kernel, in flash-attn's convention.

    q [batch, seq_q, heads_q, head_dim], k and v [batch, seq_k, heads_kv, head_dim]: CUDA tensors on one GPU,
    bfloat16 or float16 alike, head_dim 64, 128 or 256 and contiguous, other strides any multiple of 8 elements (views
    of a packed qkv tensor are read in place). heads_q a multiple of heads_kv: GQA, MQA at heads_kv = 1 (query head
    h reads kv head h // (heads_q // heads_kv)). `causal` masks bottom-right aligned (query i sees keys
    j <= i + seq_k - seq_q); a row that sees no key gives zeros. `softmax_scale` defaults to 1/sqrt(head_dim) and
    must be positive. Returns O [batch, seq_q, heads_q, head_dim] in the inputs' dtype and, with `return_lse`, also
    the natural-log log-sum-exp of each row's scaled scores, float32 [batch, heads_q, seq_q]. Runs on the current
    stream.

    Autograd: the gradients of q, k and v come from oxtile's Hopper backward kernels (head dims 64, 128 and 256), packed
    whatever the inputs' strides (strided inputs are copied for the backward). The returned LSE is not
    differentiable (requires_grad False). dK and dV are bit for bit the same from every call; with `deterministic`,
    dQ is too (its parts are added in a fixed order, at some cost in time).
    """
    o, lse = torch.ops.oxtile.attention(q, k, v, bool(causal), _softmax_scale(q, softmax_scale), bool(deterministic))
    return (o, lse) if return_lse else o
