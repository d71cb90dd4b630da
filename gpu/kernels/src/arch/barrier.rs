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

/// `barrier.sync id, threads` (without `.aligned`): as [`named_sync_id`], but correct where the threads of a warp
/// reach it through different instructions. `bar.sync` is `barrier.sync.aligned`, which promises that every thread
/// executes the same instruction (undefined behaviour otherwise). A barrier "marks warps' arrival": each copy that a
/// diverged warp executes arrives for the whole warp, so such a warp arrives twice and the barrier's generations
/// drift, which deadlocks. Without `.aligned`, ptxas joins the warp's threads first when it is diverged (a
/// `BRA.DIV` to a `WARPSYNC.COLLECTIVE` path around the same `BAR.SYNC`), at the cost of that one branch when it
/// is not, and none where it can tell that the warp is converged.
///
/// Use it for a barrier that follows lane-divergent code (e.g. after `if leader { … }`): rustc does not mark inline
/// assembly `convergent` in LLVM IR, so LLVM may copy a barrier into both arms of the branch before it (tail
/// duplication), which is what the aligned form must never see.
/// PTX ISA: "bar, barrier" (#parallel-synchronization-and-communication-instructions-bar).
#[inline(always)]
pub fn named_sync_id_unaligned(id: u32, threads: u32) {
    unsafe { core::arch::asm!("barrier.sync {id}, {n};", id = in(reg32) id, n = in(reg32) threads, options(nostack)) };
}

/// `bar.arrive id, threads`: arrives on a named barrier without waiting (the signalling side of a hand-off;
/// the threads that wait use [`named_sync_id`] with the same count).
#[inline(always)]
pub fn named_arrive_id(id: u32, threads: u32) {
    unsafe { core::arch::asm!("bar.arrive {id}, {n};", id = in(reg32) id, n = in(reg32) threads, options(nostack)) };
}
