//! oxtile's attention backward kernels (one PTX module): dQ, dK and dV on Hopper from the forward's O and row
//! log-sum-exp, and their plain GPU reference. Tensors and masking as the forward's (gpu/kernels/attention).
//!
//! - [`backward_sm90`]: the Hopper backward (preprocessing, the main kernel per key tile, the dQ conversion);
//! - [`reference_backward`]: a plain kernel, one warp per row, the GPU reference the tests compare large shapes with.

#![no_std]
#![feature(abi_ptx, core_intrinsics)]
#![allow(internal_features)]
// `seq!` unrolls loops into literal indices so that fragments stay in registers; its copies for index 0, or past a
// fragment's end behind an `if I < len` guard, read as `x * 0`, `0 + x`, `I < len()` with I = 0 or an index out of
// bounds in a dead arm; `STEP / 4`, `STEP > 0` and `8 * BLOCK as u32` compare or cast literals. Those lints describe
// the unrolled copies, not the source.
#![allow(clippy::identity_op, clippy::erasing_op, clippy::eq_op, clippy::len_zero, clippy::unnecessary_cast)]

// The parameter macros (`device_param!`, …) in every module.
#[macro_use]
extern crate oxtile_device;

use oxtile_device::{arch, bounded_wait, opaque, rows, smem_layout};

pub mod backward_sm90;
pub mod reference_backward;
