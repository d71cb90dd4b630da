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
/// Use it for a barrier that follows lane-divergent code (e.g. after `if leader { … }`), where nothing but the
/// compiler's reconvergence makes the warp arrive whole. The builder marks collective inline assembly `convergent`
/// (rustc does not), so LLVM does not copy a barrier into both arms of the branch before it; this form also holds if a warp
/// arrives diverged for another reason.
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

/// `bar.red.or.pred id, THREADS`: a named barrier among `THREADS` threads that returns, to each of them, whether
/// `predicate` held in any of them. Use it to make a decision uniform over a warpgroup before a branch whose arms
/// hold `.sync.aligned` warpgroup instructions (`wgmma.wait_group`): [`crate::arch::warp::any`] makes a decision
/// uniform over a warp only, and warps of one warpgroup that branch apart execute those instructions at different
/// program counters, which the PTX ISA leaves undefined (compute-sanitizer's synccheck reports it).
/// PTX ISA: "bar, barrier" (#parallel-synchronization-and-communication-instructions-bar), the `.red` form.
/// `THREADS` is an immediate: the vote sits where the attention consumers' registers are scarcest.
#[inline(always)]
pub fn named_any<const THREADS: u32>(id: u32, predicate: bool) -> bool {
    let out: u32;
    unsafe {
        core::arch::asm!(
            "{{",
            ".reg .pred p, q;",
            "setp.ne.u32 p, {v}, 0;",
            "bar.red.or.pred q, {id}, {n}, p;",
            "selp.u32 {out}, 1, 0, q;",
            "}}",
            v = in(reg32) predicate as u32,
            id = in(reg32) id,
            n = const THREADS,
            out = out(reg32) out,
            options(nostack),
        )
    };
    out != 0
}
