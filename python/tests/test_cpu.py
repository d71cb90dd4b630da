"""What works without a GPU: import, signatures, the custom operators' registration and fake implementations,
tracing through them, and the errors every call without a usable GPU must raise (never a crash)."""

import inspect
import math

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import oxtile
from oxtile import _oxtile

bf16, f16 = torch.bfloat16, torch.float16


def test_imports_and_exports():
    assert set(oxtile.__all__) == {"attention", "matmul", "device_info", "__version__"}
    assert oxtile.__version__.count(".") == 2


def test_signatures_follow_flash_attn_and_torch():
    assert list(inspect.signature(oxtile.matmul).parameters) == ["a", "b", "out_dtype"]
    attention = inspect.signature(oxtile.attention).parameters
    assert list(attention) == ["q", "k", "v", "causal", "softmax_scale", "return_lse", "deterministic"]
    defaults = [attention[p].default for p in ("causal", "softmax_scale", "return_lse", "deterministic")]
    assert defaults == [False, None, False, False]


def test_custom_ops_are_registered_with_their_schemas():
    schemas = {name: str(getattr(torch.ops.oxtile, name).default._schema)
               for name in ("matmul", "attention", "attention_backward")}
    assert schemas["matmul"] == "oxtile::matmul(Tensor a, Tensor b, ScalarType out_dtype) -> Tensor"
    assert schemas["attention"] == ("oxtile::attention(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale, "
                                    "bool deterministic) -> (Tensor, Tensor)")
    assert schemas["attention_backward"] == (
        "oxtile::attention_backward(Tensor grad_o, Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, bool causal, "
        "float softmax_scale, bool deterministic) -> (Tensor, Tensor, Tensor)")


@pytest.mark.parametrize("dtype,out_dtype", [(bf16, bf16), (bf16, torch.float32), (f16, f16), (f16, torch.float32)])
def test_matmul_fake_gives_shape_and_dtype(dtype, out_dtype):
    a = torch.empty(100, 64, dtype=dtype, device="meta")
    b = torch.empty(64, 40, dtype=dtype, device="meta").T.contiguous().T  # column-major: the fake ignores layout
    d = torch.ops.oxtile.matmul(a, b, out_dtype)
    assert (d.shape, d.dtype, d.device.type) == ((100, 40), out_dtype, "meta")


def test_attention_fake_gives_o_and_lse_shapes():
    q = torch.empty(2, 100, 8, 128, dtype=bf16, device="meta")
    k = torch.empty(2, 300, 2, 128, dtype=bf16, device="meta")
    o, lse = oxtile.attention(q, k, k, causal=True, return_lse=True)
    assert (o.shape, o.dtype) == ((2, 100, 8, 128), bf16)
    assert (lse.shape, lse.dtype) == ((2, 8, 100), torch.float32)


def test_fake_tracing_keeps_the_ops_in_the_graph():
    def block(x, w, wo):
        b, s, _ = x.shape
        qkv = oxtile.matmul(x.reshape(b * s, -1), w).reshape(b, s, 3, 4, 64)
        o = oxtile.attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], causal=True)
        return oxtile.matmul(o.reshape(b * s, -1), wo)

    x, w, wo = torch.randn(2, 16, 256, dtype=bf16), torch.randn(256, 768, dtype=bf16), torch.randn(256, 256, dtype=bf16)
    graph = make_fx(block, tracing_mode="fake")(x, w, wo)
    targets = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    assert targets.count("oxtile.matmul.default") == 2
    assert targets.count("oxtile.attention.default") == 1


def test_attention_backward_fake_gives_the_inputs_shapes():
    q = torch.empty(1, 64, 8, 64, dtype=bf16, device="meta")
    k = torch.empty(1, 100, 2, 64, dtype=bf16, device="meta")
    lse = torch.empty(1, 8, 64, dtype=torch.float32, device="meta")
    fake = torch.ops.oxtile.attention_backward(q, q, k, k, q, lse, False, 0.125, False)
    assert [(t.shape, t.dtype) for t in fake] == [(q.shape, bf16), (k.shape, bf16), (k.shape, bf16)]


@pytest.mark.parametrize("change,message", [
    (dict(head_dim=96), "the backward kernels take 64, 128 or 256"),
    (dict(lse_dtype=bf16), "lse"),
    (dict(grad_o_dtype=torch.float16), "grad_o"),
])
def test_attention_backward_checks_before_the_gpu(change, message):
    head_dim = change.get("head_dim", 64)
    q = torch.empty(1, 64, 2, head_dim, dtype=bf16, device="meta")
    grad_o = torch.empty(1, 64, 2, head_dim, dtype=change.get("grad_o_dtype", bf16), device="meta")
    lse = torch.empty(1, 2, 64, dtype=change.get("lse_dtype", torch.float32), device="meta")
    with pytest.raises(ValueError, match=message):
        torch.ops.oxtile.attention_backward(grad_o, q, q, q, q, lse, False, 0.125, False)


def test_attention_backward_takes_cuda_tensors():
    cpu = torch.zeros(1, 64, 2, 64, dtype=bf16)
    with pytest.raises(ValueError, match="grad_o is on cpu"):
        torch.ops.oxtile.attention_backward(cpu, cpu, cpu, cpu, cpu, torch.zeros(1, 2, 64), False, 0.125, False)


def test_the_training_step_traces_with_the_backward():
    def step(q, k, v):
        q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
        o = oxtile.attention(q, k, v, causal=True)
        o.sum().backward()
        return q.grad, k.grad, v.grad

    q, k = torch.randn(1, 32, 4, 64, dtype=bf16), torch.randn(1, 32, 2, 64, dtype=bf16)
    graph = make_fx(step, tracing_mode="fake")(q, k, k)
    targets = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    assert targets.count("oxtile.attention.default") == 1
    assert targets.count("oxtile.attention_backward.default") == 1


@pytest.mark.parametrize("call,message", [
    (lambda: oxtile.matmul(torch.randn(8, 8, dtype=bf16), torch.randn(8, 8, dtype=bf16)), "a is on cpu"),
    (lambda: oxtile.matmul(torch.randn(8, 8, dtype=bf16), torch.randn(8, 8, dtype=f16)), "two bfloat16 or two float16"),
    (lambda: oxtile.matmul(torch.randn(8, 8), torch.randn(8, 8)), "two bfloat16 or two float16"),
    (lambda: oxtile.matmul(torch.randn(8, 16, dtype=bf16), torch.randn(8, 8, dtype=bf16)), "do not chain"),
    (lambda: oxtile.matmul(torch.randn(2, 8, 8, dtype=bf16), torch.randn(8, 8, dtype=bf16)), "2-D"),
    (lambda: oxtile.matmul(torch.randn(8, 8, dtype=bf16), torch.randn(8, 8, dtype=bf16), f16), "out_dtype"),
    (lambda: oxtile.attention(*[torch.randn(1, 8, 2, 64, dtype=bf16)] * 3), "q is on cpu"),
    (lambda: oxtile.attention(*[torch.randn(8, 2, 64, dtype=bf16)] * 3), "4-D"),
    (lambda: oxtile.attention(torch.randn(1, 8, 2, 64, dtype=bf16), torch.randn(1, 8, 2, 64, dtype=bf16),
                              torch.randn(1, 9, 2, 64, dtype=bf16)), "one shape"),
    (lambda: oxtile.attention(*[torch.randn(1, 8, 2, 64)] * 3), "bfloat16 or float16"),
])
def test_bad_calls_raise_value_error_before_any_gpu(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def attn_args(head_dim=128, strides=(8 * 4 * 128, 4 * 128, 128), heads=(4, 4), scale=0.1):
    """Arguments of the native attention call, addresses made up: rejected before any address is used."""
    tensor = (0x10000, 1 << 20, strides)
    return dict(device=0, stream=0, dtype="bf16", shape=(1, 8, 8, heads[0], heads[1], head_dim), q=tensor, k=tensor,
                v=tensor, o=tensor, lse=0x20000, causal=False, scale=scale)


@pytest.mark.parametrize("change,message", [
    (dict(head_dim=96), "head dim 96: the kernels take 64, 128 or 256"),
    (dict(heads=(6, 4)), "heads_q 6 is not a multiple of heads_kv 4"),
    (dict(strides=(4100, 516, 128)), "q's batch stride 4100 is not a multiple of 8"),
    (dict(scale=-1.0), "positive scales"),
])
def test_native_attention_errors_carry_the_rust_message(change, message):
    with pytest.raises(ValueError, match=message):
        _oxtile.attention(**attn_args(**change))


def test_native_matmul_errors_carry_the_rust_message():
    with pytest.raises(ValueError, match="bf16 → f16"):
        _oxtile.matmul(0, 0, "bf16", "f16", 16, 16, 16, 0x10000, "row", 0x20000, "col", 0x30000)
    with pytest.raises(ValueError, match="order"):
        _oxtile.matmul(0, 0, "bf16", "bf16", 16, 16, 16, 0x10000, "diagonal", 0x20000, "col", 0x30000)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error of a machine without a GPU")
def test_valid_calls_without_a_gpu_raise_runtime_error():
    with pytest.raises(RuntimeError, match="CUDA"):
        _oxtile.matmul(0, 0, "bf16", "bf16", 16, 16, 16, 0x10000, "row", 0x20000, "col", 0x30000)
    with pytest.raises(RuntimeError, match="CUDA"):
        _oxtile.attention(**attn_args())
    with pytest.raises(RuntimeError, match="CUDA"):
        oxtile.device_info(0)


def test_default_softmax_scale_is_one_over_sqrt_head_dim():
    for head_dim in (64, 128):
        q = torch.empty(1, 8, 2, head_dim, dtype=bf16, device="meta")
        assert oxtile._ops._softmax_scale(q, None) == pytest.approx(1 / math.sqrt(head_dim))
        assert oxtile._ops._softmax_scale(q, 0.5) == 0.5


def test_attention_backward_fake_returns_packed_gradients_as_the_op_does():
    # A bhsd view: the real op returns packed gradients, so must the fake (torch.compile trusts its strides).
    q = torch.empty(2, 4, 100, 64, dtype=bf16, device="meta").transpose(1, 2)
    lse = torch.empty(2, 4, 100, dtype=torch.float32, device="meta")
    grads = torch.ops.oxtile.attention_backward(q.contiguous(), q, q, q, q.contiguous(), lse, False, 0.125, False)
    assert all(g.is_contiguous() and g.shape == q.shape for g in grads)


def test_the_lse_is_returned_without_a_gradient_so_compiled_training_traces():
    from functorch.compile import aot_function, nop

    q = torch.randn(1, 32, 2, 64, dtype=bf16, device="meta", requires_grad=True)
    compiled = aot_function(lambda q, k, v: oxtile.attention(q, k, v, causal=True, return_lse=True), nop)
    o, lse = compiled(q, q, q)
    assert o.requires_grad and not lse.requires_grad


def test_bench_suite_and_summary():
    from oxtile import bench

    # torch_reference.py's 18 attention rows (head dims 128 and 64) and issue 25's four at head dim 256.
    assert len(bench.ATTN_SUITE) == 22 and len(set(bench.ATTN_SUITE)) == 22
    assert {bench.head_dim(s) for s in bench.ATTN_SUITE} == {"d64", "d128", "d256"}
    assert "2,16,16384,128,causal" in bench.ATTN_SUITE and "2,16,8192,256,full" in bench.ATTN_SUITE
    rows = [{"shape": "1,1,512,64,full", "impl": "oxtile", "ms": 2.0},
            {"shape": "1,1,512,64,full", "impl": "cudnn", "ms": 1.0},
            {"shape": "1,1,512,128,full", "impl": "oxtile", "ms": 1.0},
            {"shape": "1,1,512,128,full", "impl": "cudnn", "ms": 2.0},
            {"shape": "1,1,512,128,causal", "impl": "cudnn", "ms": 2.0},  # oxtile missing: not counted
            {"shape": "1,1,512,128,full", "impl": "flash", "error": "refused"}]
    summary = {(group, peer): (n, geomean, shape, lowest)
               for group, peer, n, geomean, shape, lowest in bench.summarize(rows, bench.head_dim)}
    assert set(summary) == {("all", "cudnn"), ("d64", "cudnn"), ("d128", "cudnn")}
    n, geomean, shape, lowest = summary[("all", "cudnn")]
    assert (n, shape, lowest) == (2, "1,1,512,64,full", 0.5) and math.isclose(geomean, 1.0)
    assert summary[("d128", "cudnn")][:2] == (1, 2.0)
