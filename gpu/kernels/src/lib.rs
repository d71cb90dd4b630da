//! oxtile's device kernels, compiled to PTX by `oxtile-builder` (never for the host).
//!
//! `arch` holds thin wrappers over PTX instructions, one module per instruction family; the kernel modules
//! compose those with the layout algebra. Every `extern "ptx-kernel"` function exported here is a kernel the
//! host crate launches by name.

#![no_std]
#![feature(abi_ptx, asm_experimental_arch, core_intrinsics, stdarch_nvptx, stmt_expr_attributes)]
#![allow(internal_features)]

// Before the modules, which use them (a `macro_rules!` is visible after its definition).

/// A kernel parameter's type, from a family's list in oxtile-abi (`gemm_sm90_params!`, `attn_sm90_params!`): a tensor
/// map by value, or the pointer or scalar as listed.
macro_rules! device_param {
    (map()) => { $crate::arch::tma::TensorMap };
    (ptr($ty:ty)) => { $ty };
    (val($ty:ty)) => { $ty };
}

/// A parameter as the kernel keeps it in its local struct: a tensor map as `()` (read only through its address,
/// `tma::param_address!`), the others as they are.
macro_rules! device_field {
    (map()) => { () };
    (ptr($ty:ty)) => { $ty };
    (val($ty:ty)) => { $ty };
}

/// A parameter's value in that struct.
macro_rules! device_value {
    (map, $field:ident) => { () };
    (ptr, $field:ident) => { $field };
    (val, $field:ident) => { $field };
}

pub mod arch;
pub mod attention;
pub mod bench;
pub mod bounded_wait;
pub mod elementwise;
pub mod gemm;
pub mod layout_demo;
pub mod matrix;
pub mod opaque;
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
