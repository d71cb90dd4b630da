//! Per-warpgroup register reallocation (sm_90a). PTX ISA: "setmaxnreg" (#miscellaneous-instructions-setmaxnreg).
//!
//! All warps of a warpgroup must execute the same call. ptxas honours it only when the kernel has a register
//! cap at entry, i.e. launch bounds (`launch_bounds!`); otherwise it warns (C7508) and ignores it.

/// Releases registers down to `N` per thread (a producer that only issues copies needs few).
#[inline(always)]
pub fn dec<const N: u32>() {
    const { assert!(N >= 24 && N <= 256 && N.is_multiple_of(8)) };
    unsafe { core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack)) };
}

/// Claims registers up to `N` per thread (math warpgroups holding accumulator fragments).
#[inline(always)]
pub fn inc<const N: u32>() {
    const { assert!(N >= 24 && N <= 256 && N.is_multiple_of(8)) };
    unsafe { core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack)) };
}
