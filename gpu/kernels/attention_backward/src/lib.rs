//! oxtile's attention backward kernels (one PTX module): dQ, dK and dV on Hopper from the forward's O and row
//! log-sum-exp, and their plain GPU reference. Tensors and masking as the forward's (gpu/kernels/attention).
//!
//! - [`backward_sm90`]: the Hopper backward (preprocessing, the main kernel per key tile, the dQ conversion);
//! - [`reference_backward`]: a plain kernel, one warp per row, the GPU reference the tests compare large shapes with.

#![no_std]
#![feature(abi_ptx, core_intrinsics)]

// The parameter macros (`device_param!`, …) in every module.
#[macro_use]
extern crate oxtile_device;

use oxtile_device::{arch, bounded_wait, opaque, rows, smem_layout};

pub mod backward_sm90;
pub mod reference_backward;
