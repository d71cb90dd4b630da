//! Block-level barriers. PTX ISA: "bar, barrier" (#parallel-synchronization-and-communication-instructions-bar).

/// `bar.sync 0`: all threads of the block (`__syncthreads`).
#[inline(always)]
pub fn sync_threads() {
    unsafe { core::arch::asm!("bar.sync 0;", options(nostack)) };
}

/// `bar.sync id, threads`: a named barrier among `threads` threads (a multiple of 32), e.g. the consumer
/// warpgroups without the producer. Barrier 0 is [`sync_threads`]'s; kernels use 1..=15.
#[inline(always)]
pub fn named_sync<const ID: u32>(threads: u32) {
    unsafe { core::arch::asm!("bar.sync {id}, {n};", id = const ID, n = in(reg32) threads, options(nostack)) };
}
