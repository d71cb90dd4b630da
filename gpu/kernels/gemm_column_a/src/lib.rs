//! The GEMM kernels whose A is column-major (layouts nt and nn): gpu/kernels/gemm's `sm90`, the same source,
//! instantiated here for this module's layouts only (`oxtile_abi::gemm_sm90_module!`). One crate with every layout
//! would be one rustc whose LLVM passes run on one core for minutes; two crates run on two.

#![no_std]
#![feature(abi_ptx, asm_experimental_arch, stmt_expr_attributes)]

// The parameter macros (`device_param!`, …) in every module.
#[macro_use]
extern crate oxtile_device;

/// Expands to its items where `oxtile_abi::gemm_sm90_module!` names this crate's module.
macro_rules! in_this_module {
    (gemm, $($item:tt)*) => {};
    (gemm_column_a, $($item:tt)*) => {
        $($item)*
    };
}

#[path = "../../gemm/src/sm90.rs"]
pub mod sm90;
