"""oxtile on the GPU through PyTorch: results against float64 references with bounds fitted to each kernel's
precision, on fresh normal inputs, odd sizes, every GEMM layout, GQA, causal masks, strided views; the errors a
bad call raises; the current stream respected; autograd; a torch.compile'd model against eager torch.

Error model (matmul): products of 16-bit inputs are exact in f32, summed in f32 by the tensor cores (at most K
steps of 2^-22 relative to the sum of magnitudes |a|·|b|: 4x the f32 unit for the accumulation order), then D is
rounded once to its type (relative u: 2^-8 bf16, 2^-11 f16, 2^-24 f32). Attention: the model of
host/src/verify/attention.rs (its module documentation derives it), per element against float64.
"""

import math

import pytest
import torch
import torch.nn.functional as F

import oxtile

pytestmark = pytest.mark.gpu

bf16, f16, f32 = torch.bfloat16, torch.float16, torch.float32
UNIT = {bf16: 2.0 ** -8, f16: 2.0 ** -11, f32: 2.0 ** -24}
F32_STEP = 2.0 ** -22  # one f32 accumulation step, 4x the unit (tensor-core accumulation order)
EXP = 2.0 ** -13  # the kernels' exp2, MUFU or polynomial
HEADROOM = 1.0625


def poison(*shapes_and_dtypes):
    """Frees NaN-filled blocks of the given sizes, so that the outputs the ops allocate next (torch's caching
    allocator hands the same blocks back) start as NaN: an element the kernel does not write stays NaN."""
    blocks = [torch.full(shape, float("nan"), dtype=dtype, device="cuda") for shape, dtype in shapes_and_dtypes]
    del blocks


def operand(rows, cols, order, dtype, gen):
    """A rows×cols matrix stored row-major ("t") or column-major ("n": the transposed view of a row-major one)."""
    if order == "t":
        return torch.randn(rows, cols, dtype=dtype, device="cuda", generator=gen)
    return torch.randn(cols, rows, dtype=dtype, device="cuda", generator=gen).T


def check_matmul(d, a, b):
    ref = a.double() @ b.double()
    magnitude = a.double().abs() @ b.double().abs()
    k = a.shape[1]
    assert torch.isfinite(d).all(), "an element of D was not written (or is not finite)"
    error = (d.double() - ref).abs()
    bound = HEADROOM * (UNIT[d.dtype] * ref.abs() + k * F32_STEP * magnitude)
    worst = (error / bound).max().item()
    assert worst <= 1.0, f"max error/bound {worst:.3f}"
    # The bound is a worst case; on random data the typical error is far smaller, and a lost k-tile or a wrong tile
    # could hide under the bound at large K: the root-mean-square error must sit near the output rounding.
    rms = (error.square().mean() / ref.square().mean()).sqrt().item()
    assert rms <= max(2 * UNIT[d.dtype], 2.0 ** -14), f"relative rms error {rms:.2e}"


# Each layout read in place (the contiguous dimension of each operand a multiple of 8) with odd sizes elsewhere;
# each layout with every dimension odd (both operands staged: rows TMA cannot read in place), M ≤ 16 among them;
# then the large shapes, where the tiles (ping-pong, clusters, stream-K) change.
MATMUL_CASES = [
    ("tt", 257, 264, 72), ("tn", 257, 131, 520), ("nt", 264, 136, 77), ("nn", 136, 131, 520),
    ("tt", 5, 777, 1003), ("tn", 333, 777, 265), ("nt", 333, 131, 77), ("nn", 1001, 999, 1003),
    ("tt", 1, 8, 8), ("tn", 64, 8192, 1024), ("tt", 2304, 2304, 2048), ("tn", 4096, 4096, 4096),
    ("tt", 8192, 8192, 8192),
]


@pytest.mark.parametrize("layout,m,n,k", MATMUL_CASES)
@pytest.mark.parametrize("dtype,out_dtype", [(bf16, bf16), (bf16, f32), (f16, f16), (f16, f32)])
def test_matmul_matches_float64(layout, m, n, k, dtype, out_dtype):
    if m * n * k > 2 ** 33 and (dtype, out_dtype) != (bf16, bf16):
        pytest.skip("the large shapes in bf16 → bf16 only (each float64 reference takes a while)")
    gen = torch.Generator(device="cuda").manual_seed(m * 7 + n * 5 + k)
    a, b = operand(m, k, layout[0], dtype, gen), operand(k, n, layout[1], dtype, gen)
    poison(((m, n), out_dtype))
    d = oxtile.matmul(a, b, out_dtype=out_dtype if out_dtype != dtype else None)
    assert (d.shape, d.dtype, d.device) == ((m, n), out_dtype, a.device)
    check_matmul(d, a, b)


def test_matmul_reads_views_off_16_bytes_and_rows_off_16_bytes():
    # A view starting one element into its storage (2-byte aligned) and K = 12 (rows 24 bytes apart): TMA reads
    # neither in place, so the plan stages them.
    gen = torch.Generator(device="cuda").manual_seed(5)
    flat = torch.randn(64 * 64 + 1, dtype=bf16, device="cuda", generator=gen)
    a, b = flat[1:].view(64, 64), torch.randn(64, 72, dtype=bf16, device="cuda", generator=gen)
    check_matmul(oxtile.matmul(a, b), a, b)
    a = torch.randn(64, 12, dtype=bf16, device="cuda", generator=gen)
    b = torch.randn(12, 64, dtype=bf16, device="cuda", generator=gen)
    check_matmul(oxtile.matmul(a, b), a, b)


def test_matmul_gradients_match_float64():
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(136, 264, dtype=bf16, device="cuda", generator=gen, requires_grad=True)
    b = torch.randn(264, 72, dtype=bf16, device="cuda", generator=gen, requires_grad=True)
    g = torch.randn(136, 72, dtype=bf16, device="cuda", generator=gen)
    oxtile.matmul(a, b).backward(g)
    check_matmul(a.grad, g, b.detach().T)
    check_matmul(b.grad, a.detach().T, g)


def test_matmul_opcheck():
    gen = torch.Generator(device="cuda").manual_seed(2)
    a, b = operand(64, 128, "t", bf16, gen), operand(128, 72, "n", bf16, gen)
    torch.library.opcheck(torch.ops.oxtile.matmul.default, (a, b, f32))


def attention_reference(q, k, v, causal, scale):
    """float64: O [B, Sq, Hq, D], M = Σ p·|v| (what O's rounding errors scale with), LSE [B, Hq, Sq], the keys each
    row sees [Sq], and each row's score error bound ε [B, Hq, Sq]."""
    batch, seq_q, heads_q, _ = q.shape
    seq_k, heads_kv = k.shape[1], k.shape[2]
    group = heads_q // heads_kv
    qd = q.double().transpose(1, 2)
    kd = k.double().transpose(1, 2).repeat_interleave(group, dim=1)
    vd = v.double().transpose(1, 2).repeat_interleave(group, dim=1)
    s = qd @ kd.mT * scale
    rows = torch.arange(seq_q, device=q.device)[:, None]
    keys = torch.arange(seq_k, device=q.device)[None, :]
    visible = (keys <= rows + seq_k - seq_q) if causal else torch.ones(seq_q, seq_k, dtype=torch.bool, device=q.device)
    s = s.masked_fill(~visible, -math.inf)
    m = s.amax(-1, keepdim=True)
    seen = visible.any(-1)
    p = torch.exp(s - torch.where(seen[:, None], m, torch.zeros_like(m)))
    p = torch.where(visible, p, torch.zeros_like(p))
    l = p.sum(-1, keepdim=True).clamp_min(1e-300)
    o = (p @ vd) / l
    magnitude = (p @ vd.abs()) / l
    lse = torch.where(seen, (m + l.log()).squeeze(-1), torch.full_like(l.squeeze(-1), -math.inf))
    d = q.shape[3]
    eps = scale * qd.norm(dim=-1) * kd.norm(dim=-1).amax(-1, keepdim=True) * (d + 4) * F32_STEP
    return o.transpose(1, 2), magnitude.transpose(1, 2), lse, visible.sum(-1), eps, vd.abs().amax(-2)


def check_attention(o, lse, q, k, v, causal, scale):
    ref, magnitude, ref_lse, keys, eps, v_max = attention_reference(q, k, v, causal, scale)
    unit = UNIT[q.dtype]
    underflow = 2.0 ** -25 if q.dtype == f16 else 0.0
    n = keys.double()  # [Sq]
    steps = n + torch.ceil(n / 64) + 4
    # eps and lse are [B, Hq, Sq]; O's per-row terms move to [B, Sq, Hq, 1].
    relative = 3 * unit + 2 * EXP + 2 * eps + 2 * F32_STEP * steps
    o_bound = HEADROOM * (relative.transpose(1, 2)[..., None] * magnitude
                          + underflow * n[None, :, None, None] * v_max[:, None])
    none_seen = keys == 0
    o64 = o.double()
    assert torch.isfinite(o64).all(), "an element of O was not written (or is not finite)"
    seen_rows = ~none_seen[None, :, None, None]
    worst = ((o64 - ref).abs() / o_bound).masked_fill(~seen_rows, 0).max().item()
    assert worst <= 1.0, f"O: max error/bound {worst:.3f}"
    assert (o64[:, none_seen] == 0).all(), "a row that sees no key must be 0"
    log = 2.0 ** -20 + 2.0 ** -21 * (ref_lse.abs() + torch.log2(n + 1))
    lse_bound = HEADROOM * (unit + EXP + eps + F32_STEP * steps + log)
    seen = ~none_seen[None, None, :]
    lse64 = lse.double()
    assert not torch.isnan(lse64).any(), "an element of LSE was not written"
    lse_worst = ((lse64 - ref_lse).abs() / lse_bound).masked_fill(~seen, 0).max().item()
    assert lse_worst <= 1.0, f"LSE: max error/bound {lse_worst:.3f}"
    assert (lse64[:, :, none_seen] == -math.inf).all(), "a row that sees no key must have LSE = -inf"


def qkv_tensors(batch, seq_q, seq_k, heads_q, heads_kv, head_dim, dtype, layout, gen):
    new = lambda *shape: torch.randn(*shape, dtype=dtype, device="cuda", generator=gen)  # noqa: E731
    if layout == "packed":
        return new(batch, seq_q, heads_q, head_dim), new(batch, seq_k, heads_kv, head_dim), \
            new(batch, seq_k, heads_kv, head_dim)
    if layout == "qkv":  # views of one packed [B, S, 3, H, D] tensor, as a fused projection makes
        assert seq_q == seq_k and heads_q == heads_kv
        return new(batch, seq_q, 3, heads_q, head_dim).unbind(2)
    if layout == "bhsd":  # transposed views of [B, H, S, D] tensors
        return new(batch, heads_q, seq_q, head_dim).transpose(1, 2), \
            new(batch, heads_kv, seq_k, head_dim).transpose(1, 2), new(batch, heads_kv, seq_k, head_dim).transpose(1, 2)
    raise ValueError(layout)


ATTENTION_CASES = [
    # batch, seq_q, seq_k, heads_q, heads_kv, head_dim, causal, dtype, layout, scale
    (2, 257, 257, 4, 4, 128, False, bf16, "packed", None),
    (2, 257, 257, 4, 4, 128, True, bf16, "packed", None),
    (1, 100, 300, 8, 2, 64, True, bf16, "packed", None),  # GQA; causal bottom-right with Sq < Sk
    (1, 300, 100, 8, 2, 64, True, f16, "packed", None),  # the first 200 rows see no key
    (2, 384, 384, 4, 1, 128, False, f16, "packed", 0.3),  # MQA, a given scale
    (1, 200, 200, 4, 4, 128, True, bf16, "qkv", None),
    (2, 129, 129, 4, 2, 64, False, bf16, "bhsd", None),
    (1, 1, 1, 1, 1, 64, False, bf16, "packed", None),
    (2, 2048, 2048, 16, 16, 128, True, bf16, "packed", None),
    (1, 4096, 4096, 16, 4, 128, False, bf16, "packed", None),
    (1, 200, 77, 4, 2, 256, True, bf16, "packed", None),  # head dim 256: 80-key tiles, the last one partial
    (2, 129, 129, 2, 2, 256, False, f16, "qkv", None),
    (1, 1024, 1024, 8, 2, 256, True, bf16, "bhsd", None),
]


@pytest.mark.parametrize("batch,seq_q,seq_k,heads_q,heads_kv,head_dim,causal,dtype,layout,scale", ATTENTION_CASES)
def test_attention_matches_float64(batch, seq_q, seq_k, heads_q, heads_kv, head_dim, causal, dtype, layout, scale):
    gen = torch.Generator(device="cuda").manual_seed(batch * 1000 + seq_q + seq_k + heads_q * 7 + head_dim)
    q, k, v = qkv_tensors(batch, seq_q, seq_k, heads_q, heads_kv, head_dim, dtype, layout, gen)
    poison(((batch, seq_q, heads_q, head_dim), dtype), ((batch, heads_q, seq_q), f32))
    o, lse = oxtile.attention(q, k, v, causal=causal, softmax_scale=scale, return_lse=True)
    assert (o.shape, o.dtype, lse.shape, lse.dtype) == (q.shape, dtype, (batch, heads_q, seq_q), f32)
    check_attention(o, lse, q, k, v, causal, scale if scale is not None else head_dim ** -0.5)


def test_attention_opcheck():
    gen = torch.Generator(device="cuda").manual_seed(3)
    q, k, v = qkv_tensors(1, 64, 64, 2, 2, 64, bf16, "packed", gen)
    torch.library.opcheck(torch.ops.oxtile.attention.default, (q, k, v, True, 0.125, False))


def reference_gradients(q, k, v, grad_o, causal, scale):
    """dQ, dK, dV in float64 by autograd through plain attention (GQA by repeating k and v; a row that sees no key
    has probabilities 0, as the kernels give it)."""
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    group = q.shape[2] // k.shape[2]
    kk, vv = k64.repeat_interleave(group, dim=2), v64.repeat_interleave(group, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q64, kk) * scale
    seq_q, seq_k = q.shape[1], k.shape[1]
    hidden = torch.zeros(seq_q, seq_k, dtype=torch.bool, device=q.device)
    if causal:
        i = torch.arange(seq_q, device=q.device)[:, None]
        j = torch.arange(seq_k, device=q.device)[None, :]
        hidden = j > i + seq_k - seq_q
    sees = ~hidden.all(dim=1)  # rows with at least one key
    s = s.masked_fill(hidden | ~sees[:, None], float("-inf")).masked_fill(~sees[:, None], 0.0)
    p = torch.softmax(s, dim=-1) * sees[:, None]
    o = torch.einsum("bhqk,bkhd->bqhd", p, vv)
    o.backward(grad_o.double())
    return q64.grad, k64.grad, v64.grad


# The backward's bound, as `oxtile bench attn --backward` checks it: max |out - ref| / max |ref| per gradient.
BACKWARD_BOUND = {bf16: 2.0 ** -6, f16: 2.0 ** -8}

BACKWARD_CASES = [
    # batch, seq_q, seq_k, heads_q, heads_kv, head_dim, causal, dtype, layout
    (2, 257, 257, 4, 4, 128, False, bf16, "packed"),
    (1, 200, 300, 8, 2, 64, True, bf16, "packed"),  # GQA; causal bottom-right with Sq < Sk
    (1, 300, 100, 4, 2, 64, True, f16, "packed"),  # the first 200 rows see no key
    (1, 200, 200, 4, 4, 128, True, bf16, "qkv"),  # strided views: copied for the backward
    (2, 129, 129, 4, 2, 64, False, f16, "bhsd"),
    (1, 1, 1, 1, 1, 128, False, bf16, "packed"),  # one key: dQ and dK are 0 exactly, dV = dO
    (1, 200, 77, 4, 2, 256, True, bf16, "packed"),  # head dim 256: 64-key blocks, the last one partial
    (2, 129, 131, 2, 2, 256, False, f16, "bhsd"),
]


def backward_errors(got, expected):
    """max |out - ref| per gradient, over the largest reference value of dV and its own (as tests/attention_backward.rs
    measures it): with one visible key dQ and dK are 0 exactly and come out as rounding, which only a floor sees as
    small."""
    floor = expected[2].abs().max()
    return [((g.double() - r).abs().max() / torch.maximum(r.abs().max(), floor).clamp_min(1e-30)).item()
            for g, r in zip(got, expected)]


@pytest.mark.parametrize("batch,seq_q,seq_k,heads_q,heads_kv,head_dim,causal,dtype,layout", BACKWARD_CASES)
def test_attention_backward_matches_float64(batch, seq_q, seq_k, heads_q, heads_kv, head_dim, causal, dtype, layout):
    gen = torch.Generator(device="cuda").manual_seed(batch * 1000 + seq_q + seq_k + heads_q * 7 + head_dim + 11)
    q, k, v = (t.detach().requires_grad_() for t in
               qkv_tensors(batch, seq_q, seq_k, heads_q, heads_kv, head_dim, dtype, layout, gen))
    grad_o = torch.randn(batch, seq_q, heads_q, head_dim, dtype=dtype, device="cuda", generator=gen)
    # A scale other than the default on every other case: the backward must use the forward's.
    scale = head_dim ** -0.5 * (0.7 if seq_q % 2 else 1.0)
    o = oxtile.attention(q, k, v, causal=causal, softmax_scale=scale)
    # dQ, dK and dV are allocated next: NaN blocks of their sizes, so an element the kernels skip stays NaN.
    poison(((batch, seq_q, heads_q, head_dim), dtype), ((batch, seq_k, heads_kv, head_dim), dtype),
           ((batch, seq_k, heads_kv, head_dim), dtype))
    o.backward(grad_o)
    expected = reference_gradients(q, k, v, grad_o, causal, scale)
    got = (q.grad, k.grad, v.grad)
    for name, g, r in zip(("dq", "dk", "dv"), got, expected):
        assert g.shape == r.shape and g.dtype == dtype, name
        assert torch.isfinite(g).all(), f"{name}: not finite (unwritten or overflowed)"
    for name, error in zip(("dq", "dk", "dv"), backward_errors(got, expected)):
        assert error <= BACKWARD_BOUND[dtype], f"{name}: {error:.2e} > {BACKWARD_BOUND[dtype]:.2e}"


def test_attention_backward_deterministic_repeats_dq_bit_for_bit():
    gen = torch.Generator(device="cuda").manual_seed(6)
    q, k, v = qkv_tensors(2, 1000, 1000, 8, 2, 128, bf16, "packed", gen)
    grad_o = torch.randn(2, 1000, 8, 128, dtype=bf16, device="cuda", generator=gen)
    runs = []
    for _ in range(3):
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        oxtile.attention(*leaves, causal=True, deterministic=True).backward(grad_o)
        runs.append([t.grad for t in leaves])
    for run in runs[1:]:
        for a, b in zip(runs[0], run):
            assert torch.equal(a.view(torch.int16), b.view(torch.int16))
    expected = reference_gradients(q, k, v, grad_o, True, 128 ** -0.5)
    assert max(backward_errors(runs[0], expected)) <= BACKWARD_BOUND[bf16]


def test_attention_lse_has_no_gradient():
    gen = torch.Generator(device="cuda").manual_seed(4)
    q, k, v = (t.requires_grad_() for t in qkv_tensors(1, 64, 64, 2, 2, 64, bf16, "packed", gen))
    # The LSE is a statistic, not differentiable: a loss through it has no gradient from it, one through O does.
    o, lse = oxtile.attention(q, k, v, return_lse=True)
    assert o.requires_grad and not lse.requires_grad
    (o * lse.transpose(1, 2)[..., None]).sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


def test_runs_on_the_current_stream():
    # On a side stream: a long sleep, then A is filled, then the product. Launched on any other stream, the product
    # would run during the sleep and read A's zeros.
    gen = torch.Generator(device="cuda").manual_seed(5)
    a_src = torch.randn(512, 512, dtype=bf16, device="cuda", generator=gen)
    b = torch.randn(512, 512, dtype=bf16, device="cuda", generator=gen)
    q_src = torch.randn(1, 256, 2, 64, dtype=bf16, device="cuda", generator=gen)
    a, q = torch.zeros_like(a_src), torch.zeros_like(q_src)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # ~0.1 s
        a.copy_(a_src)
        q.copy_(q_src)
        d = oxtile.matmul(a, b)
        o, lse = oxtile.attention(q, q, q, return_lse=True)
    assert not side.query(), "the side stream finished before the check: the sleep was too short"
    side.synchronize()
    check_matmul(d, a_src, b)
    check_attention(o, lse, q_src, q_src, q_src, False, 0.125)


def test_bad_tensors_raise_value_error_not_crash():
    gen = torch.Generator(device="cuda").manual_seed(6)
    a = torch.randn(64, 64, dtype=bf16, device="cuda", generator=gen)
    wide = torch.randn(64, 72, dtype=bf16, device="cuda", generator=gen)
    with pytest.raises(ValueError, match="row-major"):
        oxtile.matmul(wide[:, :64], a)  # rows 72 apart: a padded view the kernels cannot read in place
    with pytest.raises(ValueError, match="a is on cpu"):
        oxtile.matmul(a.cpu(), a)
    with pytest.raises(ValueError, match="b is on cpu"):
        oxtile.matmul(a, a.cpu())
    q = torch.randn(1, 64, 2, 64, dtype=bf16, device="cuda", generator=gen)
    with pytest.raises(ValueError, match="head_dim stride"):
        oxtile.attention(q.transpose(1, 3).contiguous().transpose(1, 3), q, q)
    with pytest.raises(ValueError, match="head dim 96"):
        x = torch.randn(1, 64, 2, 96, dtype=bf16, device="cuda")
        oxtile.attention(x, x, x)
    with pytest.raises(ValueError, match="heads_q 3 is not a multiple of heads_kv 2"):
        oxtile.attention(torch.randn(1, 64, 3, 64, dtype=bf16, device="cuda"), q, q)
    with pytest.raises(ValueError, match="positive"):
        oxtile.attention(q, q, q, softmax_scale=-1.0)
    with pytest.raises(ValueError, match="v is on cpu"):
        oxtile.attention(q, q, q.cpu())
    # Still usable after every refusal.
    check_matmul(oxtile.matmul(a, a), a, a)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_two_gpus_are_refused():
    a = torch.randn(64, 64, dtype=bf16, device="cuda:0")
    with pytest.raises(ValueError, match="one GPU"):
        oxtile.matmul(a, a.to("cuda:1"))


def test_device_info_names_a_hopper_gpu():
    info = oxtile.device_info(torch.cuda.current_device())
    assert info["compute_capability"] == (9, 0)
    assert info["sm_count"] == torch.cuda.get_device_properties(0).multi_processor_count
    assert info["name"] == torch.cuda.get_device_name(0)


HEADS, HEAD_DIM, MODEL = 4, 128, 512


def block(x, weights, attention, matmul):
    """Two pre-norm-free transformer layers: causal self-attention and a GELU MLP, each with a residual."""
    b, s, _ = x.shape
    h = x.reshape(b * s, MODEL)
    for wqkv, wo, w1, w2 in weights:
        qkv = matmul(h, wqkv).reshape(b, s, 3, HEADS, HEAD_DIM)
        o = attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2])
        h = h + matmul(o.reshape(b * s, HEADS * HEAD_DIM), wo)
        h = h + matmul(F.gelu(matmul(h, w1)), w2)
    return h.reshape(b, s, MODEL)


def torch_attention(q, k, v):
    return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                          is_causal=True).transpose(1, 2)


def test_compiled_block_matches_eager_torch():
    gen = torch.Generator(device="cuda").manual_seed(7)

    def weight(rows, cols):
        return torch.randn(rows, cols, dtype=bf16, device="cuda", generator=gen) / math.sqrt(rows)

    weights = [(weight(MODEL, 3 * HEADS * HEAD_DIM), weight(HEADS * HEAD_DIM, MODEL), weight(MODEL, 4 * MODEL),
                weight(4 * MODEL, MODEL)) for _ in range(2)]
    x = torch.randn(2, 256, MODEL, dtype=bf16, device="cuda", generator=gen)
    ours = torch.compile(lambda x: block(x, weights, lambda q, k, v: oxtile.attention(q, k, v, causal=True),
                                         oxtile.matmul), fullgraph=True)
    with torch.no_grad():
        compiled = ours(x)
        eager_torch = block(x, weights, torch_attention, torch.matmul)
        exact = block(x.double(), [tuple(w.double() for w in ws) for ws in weights], torch_attention, torch.matmul)

    def rms_error(y):
        return ((y.double() - exact).square().mean() / exact.square().mean()).sqrt().item()

    # Both compute in bf16; ours must be as close to float64 as torch's own eager run, within half again.
    assert torch.isfinite(compiled).all()
    assert rms_error(compiled) <= 1.5 * rms_error(eager_torch) + 2.0 ** -12, (rms_error(compiled), rms_error(eager_torch))
