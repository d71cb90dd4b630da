//! Block-level barriers. PTX ISA: "bar, barrier" (#parallel-synchronization-and-communication-instructions-bar).

/// `bar.sync 0`: all threads of the block (`__syncthreads`).
#[inline(always)]
pub fn sync_threads() {
    unsafe { core::arch::asm!("bar.sync 0;", options(nostack)) };
}

/// `bar.sync id, threads`: a named barrier among `threads` threads (a multiple of 32), e.g. the consumer
/// warpgroups without the producer. Barrier 0 is [`sync_threads`]'s; kernels use 1..=15. The id is a register
/// (the same in every thread of a warp), so warpgroups that take turns run one code path instead of branching on
/// their index.
#[inline(always)]
pub fn named_sync_id(id: u32, threads: u32) {
    unsafe { core::arch::asm!("bar.sync {id}, {n};", id = in(reg32) id, n = in(reg32) threads, options(nostack)) };
}

/// `bar.arrive id, threads`: arrives on a named barrier without waiting (the signalling side of a hand-off;
/// the threads that wait use [`named_sync_id`] with the same count).
#[inline(always)]
pub fn named_arrive_id(id: u32, threads: u32) {
    unsafe { core::arch::asm!("bar.arrive {id}, {n};", id = in(reg32) id, n = in(reg32) threads, options(nostack)) };
}
