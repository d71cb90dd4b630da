//! oxtile's small kernels (one PTX module), each beside the kernels it supports:
//!
//! - [`elementwise`]: memory-bound maps (axpy, exp2) with 16-byte accesses;
//! - [`exp2`]: the software exp2's accuracy kernel and the exponential-throughput microbenchmark;
//! - [`matrix`]: Newton-Schulz's Frobenius norm and scaled conversion;
//! - [`staging`]: the copy that gives a GEMM operand TMA cannot read in place rows it can;
//! - [`layout_demo`]: a transpose through a swizzled shared-memory tile, addressed by the layout algebra;
//! - [`bench`]: what the benchmark harness launches around the timed kernels (the stream hold, block placement).

#![no_std]
#![feature(abi_ptx, core_intrinsics)]

use oxtile_device::{arch, smem_layout, softmax};

pub mod bench;
pub mod elementwise;
pub mod exp2;
pub mod layout_demo;
pub mod matrix;
pub mod staging;
