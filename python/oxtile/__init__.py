"""oxtile: GPU kernels written in pure Rust for NVIDIA Hopper (sm_90a), called on PyTorch tensors.

    import torch, oxtile
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    d = oxtile.matmul(a, a.T)                              # bf16 out; out_dtype=torch.float32 for f32
    q, k, v = (torch.randn(2, 4096, 16, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o = oxtile.attention(q, k, v, causal=True)             # flash-attn's [batch, seq, heads, head_dim]

Both run on PyTorch's current stream of the tensors' device, take the tensors without copying them and return
tensors PyTorch allocated. They are PyTorch custom operators (``torch.ops.oxtile.*``) with fake implementations, so
``torch.compile`` keeps them in its graphs. ``matmul`` has a backward (PyTorch's own matmul on the gradients);
``attention``'s backward runs oxtile's Hopper backward kernels (head dims 64, 128 and 256; ``deterministic=True``
for a bit-reproducible dQ).

Importing needs no GPU; a call without one raises RuntimeError.
"""

from ._oxtile import __version__, device_info
from ._ops import attention, matmul

__all__ = ["attention", "matmul", "device_info", "__version__"]
