//! Ending a kernel that cannot go on. PTX ISA: "trap" (#miscellaneous-instructions-trap).
//!
//! `trap` aborts the whole grid: the host sees the launch fail at its next synchronization (an illegal-instruction
//! or launch-failure error), and the context is unusable afterwards (CUDA's errors after a trap are sticky). The
//! host names the cause where it launched a kernel that can trap (host/src/ops/gemm.rs for stream-K). No message is
//! printed from the device: a call to `vprintf` in a kernel is an ABI call, around which ptxas spills and reorders
//! the hot code of the whole kernel, for a path that never runs in a correct launch.

/// Aborts the grid.
#[inline(always)]
pub fn trap() -> ! {
    unsafe { core::arch::asm!("trap;", options(noreturn, nostack)) }
}
