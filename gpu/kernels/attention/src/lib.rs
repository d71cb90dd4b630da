//! oxtile's attention forward kernels (one PTX module): the Hopper forward and its plain GPU reference. The
//! forward's ablations are `sm90` compiled again by gpu/kernels/attention_ablations, and the backward is a family of
//! its own (gpu/kernels/attention_backward).
//!
//! Tensors are BSHD like flash-attn: q [batch, seq_q, heads_q, head_dim], k and v [batch, seq_k, heads_kv,
//! head_dim], head_dim contiguous; heads_q is a multiple of heads_kv (GQA / MQA: query head h reads key/value
//! head h / (heads_q / heads_kv)). Causal masking is bottom-right aligned: query row i sees keys
//! j ≤ i + seq_k − seq_q. Outputs O (same layout as q) and the row log-sum-exp (natural log, f32, [batch,
//! heads_q, seq_q]); a row that sees no key gets O = 0 and LSE = −∞.
//!
//! - [`sm90`]: the Hopper kernel (TMA, wgmma, warp specialization, FA4's exp2 and lazy rescaling);
//! - [`reference`]: a plain kernel, one simple loop per row, the GPU reference the tests compare large shapes with.

#![no_std]
#![feature(abi_ptx, core_intrinsics)]

// The parameter macros (`device_param!`, …) in every module.
#[macro_use]
extern crate oxtile_device;

use oxtile_device::{arch, opaque, rows, smem_layout, softmax};

/// Keeps the items after a crate's module name only in that crate: here `sm90`'s production kernels, not its
/// ablations.
macro_rules! in_this_module {
    (attention, $($item:tt)*) => {
        $($item)*
    };
    (attention_ablations, $($item:tt)*) => {};
}

pub mod reference;
pub mod sm90;
