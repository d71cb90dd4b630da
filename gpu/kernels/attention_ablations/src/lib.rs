//! The attention forward's ablations: gpu/kernels/attention's `sm90`, the same source, instantiated here for the
//! kernels that change one of its mechanisms (the exponential split, lazy rescaling, ping-pong, speculation). The
//! library runs them only when asked (`AttnVariant`; `Auto` never picks them) and the benchmark times them beside
//! the production kernels. A crate of their own so that the source's two halves compile at the same time, on two
//! cores.

#![no_std]
#![feature(abi_ptx, core_intrinsics)]

// The parameter macros (`device_param!`, …) in every module.
#[macro_use]
extern crate oxtile_device;

use oxtile_device::{arch, opaque, smem_layout, softmax};

/// Keeps the items after a crate's module name only in that crate: here `sm90`'s ablations.
macro_rules! in_this_module {
    (attention, $($item:tt)*) => {};
    (attention_ablations, $($item:tt)*) => {
        $($item)*
    };
}

#[path = "../../attention/src/sm90.rs"]
pub mod sm90;
