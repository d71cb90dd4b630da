//! oxtile's GEMM kernels (one PTX module). `sm90` holds the Hopper data path (TMA → shared-memory ring → wgmma →
//! registers → global) in every configuration of oxtile-abi's GEMM tables, general and symmetric; the order in which a
//! persistent block visits output tiles is oxtile-abi's `raster`, shared with the host.

#![no_std]
#![feature(abi_ptx, asm_experimental_arch, stmt_expr_attributes)]

// The parameter macros (`device_param!`, …) in every module.
#[macro_use]
extern crate oxtile_device;

use oxtile_device::{arch, bounded_wait, opaque, smem_layout};

pub mod sm90;
