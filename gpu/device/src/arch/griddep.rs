//! Programmatic dependent launch: a grid that overlaps the tail of the grid before it in the stream. PTX ISA:
//! "griddepcontrol" (#parallel-synchronization-and-communication-instructions-griddepcontrol), sm_90 and up.
//!
//! A kernel launched with the programmatic-stream-serialization attribute may start before the kernel ahead of it
//! has finished; it must [`wait`] before it touches global memory that kernel may write or read. Launched without
//! the attribute, [`wait`] returns at once and [`launch_dependents`] has no effect.

/// `griddepcontrol.wait`: blocks the thread until every prerequisite grid has completed and its memory operations
/// are visible. No load or store may move above it, so the asm is a compiler barrier for memory (no `nomem`).
#[inline(always)]
pub fn wait() {
    unsafe { core::arch::asm!("griddepcontrol.wait;", options(nostack)) };
}

/// `griddepcontrol.launch_dependents`: lets the grids that depend on this one be scheduled once every block of this
/// grid has issued it (or exited). Only their scheduling: their [`wait`] still waits for this grid to complete.
/// Repeated calls are harmless.
#[inline(always)]
pub fn launch_dependents() {
    unsafe { core::arch::asm!("griddepcontrol.launch_dependents;", options(nomem, nostack)) };
}
