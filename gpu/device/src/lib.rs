//! What every family of oxtile's device kernels builds on (compiled for `nvptx64-nvidia-cuda` only, never for the
//! host): `arch`, thin wrappers over PTX instructions, one module per instruction family; the waits between
//! blocks, the shared-memory tile layouts, the software exp2 of the softmax, the 16-bit element rows of the plain
//! kernels; the kernel-parameter and launch-bounds macros; the panic handler.
//!
//! It exports no kernel. Each family is a crate of its own below gpu/kernels (gemm, gemm_column_a, attention,
//! attention_ablations, attention_backward, support), compiled to a PTX module of its own by `oxtile-builder`, so
//! that an edit to one family rebuilds and reassembles that family alone.

#![no_std]
#![feature(asm_experimental_arch, core_intrinsics, stdarch_nvptx)]
#![allow(internal_features)]

/// A kernel parameter's type, from a family's list in oxtile-abi (`gemm_sm90_params!`, `attn_sm90_params!`): a tensor
/// map by value, or the pointer or scalar as listed.
#[macro_export]
macro_rules! device_param {
    (map()) => {
        $crate::arch::tma::TensorMap
    };
    (ptr($ty:ty)) => {
        $ty
    };
    (val($ty:ty)) => {
        $ty
    };
}

/// A parameter as the kernel keeps it in its local struct: a tensor map as `()` (read only through its address,
/// `tma::param_address!`), the others as they are.
#[macro_export]
macro_rules! device_field {
    (map()) => {
        ()
    };
    (ptr($ty:ty)) => {
        $ty
    };
    (val($ty:ty)) => {
        $ty
    };
}

/// A parameter's value in that struct.
#[macro_export]
macro_rules! device_value {
    (map, $field:ident) => {
        ()
    };
    (ptr, $field:ident) => {
        $field
    };
    (val, $field:ident) => {
        $field
    };
}

pub mod arch;
pub mod bounded_wait;
pub mod opaque;
pub mod rows;
pub mod smem_layout;
pub mod softmax;

/// Declares a kernel's launch bounds (`.maxntid threads, 1, 1` and `.minnctapersm blocks`).
///
/// Rust has no attribute for them, so this exports a marker symbol whose name carries the numbers; the
/// builder reads it at link time, drops it, and writes the directives into the kernel's PTX. Kernels that use
/// `setmaxnreg` need these: ptxas ignores `setmaxnreg` without a register cap at entry.
#[macro_export]
macro_rules! launch_bounds {
    ($kernel:ident, max_threads = $threads:literal, min_blocks = $blocks:literal) => {
        const _: () = {
            $crate::launch_bounds!(name = stringify!($kernel), max_threads = $threads, min_blocks = $blocks);
            // Refers to the kernel so a typo in its name fails to compile.
            let _ = $kernel;
        };
    };
    // A kernel exported under a generated name (`export_name`).
    (name = $name:expr, max_threads = $threads:literal, min_blocks = $blocks:literal) => {
        const _: () = {
            #[unsafe(export_name = concat!(
                                "__oxtile_launch_bounds__", $name, "__", stringify!($threads), "__", stringify!($blocks)
                            ))]
            pub static LAUNCH_BOUNDS: u8 = 0;
        };
    };
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe { core::arch::nvptx::trap() }
}
