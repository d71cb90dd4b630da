//! oxtile's GEMM kernels. `sm90` holds the Hopper data path (TMA → shared-memory ring → wgmma → registers → global)
//! in every configuration of oxtile-abi's GEMM tables, general and symmetric; the order in which a persistent block
//! visits output tiles is oxtile-abi's `raster`, shared with the host. `skinny` is the decode-sized GEMM.
//!
//! This crate's PTX module holds the kernels whose A is row-major (layouts tn and tt) and the skinny kernels;
//! gpu/kernels/gemm_column_a compiles `sm90` again for those whose A is column-major (nt, nn), so that the two halves
//! compile at the same time (`oxtile_abi::gemm_sm90_module!` says which module each layout's kernels are in).

#![no_std]
#![feature(abi_ptx, asm_experimental_arch, stmt_expr_attributes)]

// The parameter macros (`device_param!`, …) in every module.
#[macro_use]
extern crate oxtile_device;

/// Expands to its items where `oxtile_abi::gemm_sm90_module!` names this crate's module.
macro_rules! in_this_module {
    (gemm, $($item:tt)*) => {
        $($item)*
    };
    (gemm_column_a, $($item:tt)*) => {};
}

pub mod skinny;
pub mod sm90;
