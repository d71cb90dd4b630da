//! Attention backward: the gradients dQ, dK and dV of [`super::attention`]'s forward from its O and LSE.
//!
//! Today this holds the plain GPU reference ([`attention_backward_reference`], f32 arithmetic, one warp per output
//! row: gpu/kernels/src/attention/reference_backward.rs), which the float64 CPU reference
//! (`reference::attention_backward`) checks on small problems and which checks fast backward kernels on large
//! ones. The Hopper backward kernel (issue 26) is not written yet.

use cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};

use super::attention::{AttnElement, AttnOptions, AttnShape, AttnStrides, check_problem, reference_kernel};
use super::{check_disjoint, input_ptr, output_ptr};
use crate::error::{Error, Result};
use crate::runtime::Gpu;

const REFERENCE_OP: &str = "attention_backward_reference";

/// Threads per block of the reference kernel: 8 warps, one output row each.
const REFERENCE_THREADS: u32 = 256;

/// dQ, dK and dV (f32, packed: dQ as q, dK and dV as k and v) of the forward whose output `o` and row log-sum-exp
/// `lse` (natural log, [batch, heads_q, seq_q], as [`super::attention::attention`] writes it) were computed from
/// `q`, `k`, `v`, for the upstream gradient `d_o` (as `o`), by the plain GPU reference kernel. Every tensor is
/// packed BSHD (`options.strides` must be `None` or the packed strides); `options.variant` is ignored. Shapes,
/// mask, scale and grouping as the forward's.
#[allow(clippy::too_many_arguments)]
pub fn attention_backward_reference<T: AttnElement>(
    gpu: &Gpu,
    shape: AttnShape,
    q: &impl DevicePtr<T>,
    k: &impl DevicePtr<T>,
    v: &impl DevicePtr<T>,
    o: &impl DevicePtr<T>,
    lse: &impl DevicePtr<f32>,
    d_o: &impl DevicePtr<T>,
    dq: &mut impl DevicePtrMut<f32>,
    dk: &mut impl DevicePtrMut<f32>,
    dv: &mut impl DevicePtrMut<f32>,
    options: AttnOptions,
) -> Result<()> {
    let p = check_problem(REFERENCE_OP, shape, &options)?;
    if p.strides != AttnStrides::packed(shape) {
        return Err(Error::unsupported(REFERENCE_OP, "the backward reference takes packed BSHD tensors only"));
    }
    let kernel = reference_kernel(REFERENCE_OP, T::BACKWARD_REFERENCE_KERNELS, shape.head_dim)?;
    let stream = gpu.stream();
    let rows = shape.rows();
    let (q_len, kv_len) = (rows * shape.head_dim, shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim);
    let element = std::mem::size_of::<T>();
    // The kernel reads each lane's elements as 4-byte words.
    let (q_address, _q_use) = input_ptr(REFERENCE_OP, "q", q, stream, q_len, 4)?;
    let (k_address, _k_use) = input_ptr(REFERENCE_OP, "k", k, stream, kv_len, 4)?;
    let (v_address, _v_use) = input_ptr(REFERENCE_OP, "v", v, stream, kv_len, 4)?;
    let (o_address, _o_use) = input_ptr(REFERENCE_OP, "o", o, stream, q_len, 4)?;
    let (lse_address, _lse_use) = input_ptr(REFERENCE_OP, "lse", lse, stream, rows, 4)?;
    let (d_o_address, _d_o_use) = input_ptr(REFERENCE_OP, "d_o", d_o, stream, q_len, 4)?;
    let (dq_address, _dq_use) = output_ptr(REFERENCE_OP, "dq", dq, stream, q_len, 4)?;
    let (dk_address, _dk_use) = output_ptr(REFERENCE_OP, "dk", dk, stream, kv_len, 4)?;
    let (dv_address, _dv_use) = output_ptr(REFERENCE_OP, "dv", dv, stream, kv_len, 4)?;
    let inputs = [
        ("q", q_address, q_len * element),
        ("k", k_address, kv_len * element),
        ("v", v_address, kv_len * element),
        ("o", o_address, q_len * element),
        ("lse", lse_address, rows * 4),
        ("d_o", d_o_address, q_len * element),
    ];
    let outputs = [("dq", dq_address, q_len * 4), ("dk", dk_address, kv_len * 4), ("dv", dv_address, kv_len * 4)];
    for (n, output) in outputs.iter().enumerate() {
        check_disjoint(REFERENCE_OP, *output, &inputs)?;
        check_disjoint(REFERENCE_OP, *output, &outputs[n + 1..])?;
    }
    // One warp per query row and per key row, counted in 32 bits by the kernel's grid.
    let warps = rows + shape.batch * shape.seq_k * shape.heads_kv;
    let warps_per_block = (REFERENCE_THREADS / 32) as usize;
    let blocks = u32::try_from(warps.div_ceil(warps_per_block)).map_err(|_| {
        Error::bad_argument(
            REFERENCE_OP,
            format!("{warps} rows: too many for one grid of {warps_per_block}-row blocks"),
        )
    })?;

    let function = gpu.function(kernel)?;
    let (batch, seq_q, seq_k, heads_q, group) =
        (shape.batch as u32, shape.seq_q as u32, shape.seq_k as u32, shape.heads_q as u32, shape.group() as u32);
    let causal = p.causal as u32;
    let mut launch = stream.launch_builder(&function);
    launch
        .arg(&q_address)
        .arg(&k_address)
        .arg(&v_address)
        .arg(&o_address)
        .arg(&d_o_address)
        .arg(&lse_address)
        .arg(&dq_address)
        .arg(&dk_address)
        .arg(&dv_address)
        .arg(&batch)
        .arg(&seq_q)
        .arg(&seq_k)
        .arg(&heads_q)
        .arg(&group)
        .arg(&p.scale)
        .arg(&causal);
    let config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (REFERENCE_THREADS, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: the arguments match the kernel's signature in order and type; every tensor is packed with the
    // lengths the kernel reads or writes, 4-byte aligned, and the outputs overlap nothing.
    unsafe { launch.launch(config) }.map(drop).map_err(|source| Error::Launch { kernel: kernel.name, source })
}
