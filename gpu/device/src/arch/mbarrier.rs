//! Shared-memory transaction barriers. PTX ISA: "mbarrier" (#parallel-synchronization-and-communication-instructions-mbarrier).
//!
//! A barrier completes a phase when its pending arrivals reach zero and its expected transaction bytes
//! (from `complete_tx` copies) have all landed; waiters name the phase by its parity.

/// `mbarrier.init`: `arrivals` arrivals complete each phase.
///
/// # Safety
/// `bar` is an 8-byte aligned shared address no other thread uses yet.
#[inline(always)]
pub unsafe fn init(bar: u32, arrivals: u32) {
    unsafe {
        core::arch::asm!("mbarrier.init.shared::cta.b64 [{bar}], {n};", bar = in(reg32) bar, n = in(reg32) arrivals,
            options(nostack));
    }
}

/// `fence.mbarrier_init.release.cluster`: publishes initialized barriers to the async proxy and the cluster.
/// Follow with a block (or cluster) barrier before anyone uses them.
#[inline(always)]
pub fn fence_init() {
    unsafe { core::arch::asm!("fence.mbarrier_init.release.cluster;", options(nostack)) };
}

/// `mbarrier.arrive.expect_tx`: one arrival, and `bytes` more transaction bytes this phase must receive.
///
/// # Safety
/// `bar` is an initialized barrier.
#[inline(always)]
pub unsafe fn arrive_expect_tx(bar: u32, bytes: u32) {
    unsafe {
        core::arch::asm!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{bar}], {tx};", bar = in(reg32) bar,
            tx = in(reg32) bytes, options(nostack));
    }
}

/// `mbarrier.arrive`: one arrival (release semantics at CTA scope).
///
/// # Safety
/// `bar` is an initialized barrier.
#[inline(always)]
pub unsafe fn arrive(bar: u32) {
    unsafe { core::arch::asm!("mbarrier.arrive.shared::cta.b64 _, [{bar}];", bar = in(reg32) bar, options(nostack)) };
}

/// `mbarrier.arrive.shared::cluster`: one arrival on a barrier in any block of the cluster, `bar` being a
/// `.shared::cluster` address from [`crate::arch::cluster::map_shared`]. Default (`.release.cta`) semantics:
/// the `.release.cluster` form also waits for this thread's in-flight wgmma, draining the tensor pipe each k-tile
/// (measured 2026-11-30: 1.4–1.7× slower GEMM main loop).
///
/// # Safety
/// `bar` is an initialized barrier of a block in this cluster that is still running.
#[inline(always)]
pub unsafe fn arrive_cluster(bar: u32) {
    unsafe {
        core::arch::asm!("mbarrier.arrive.shared::cluster.b64 _, [{bar}];", bar = in(reg32) bar,
            options(nostack));
    }
}

/// `mbarrier.try_wait.parity`: whether the phase with parity `phase` has completed (the hardware may
/// suspend the thread for a while before answering false).
///
/// # Safety
/// `bar` is an initialized barrier.
#[inline(always)]
pub unsafe fn try_wait(bar: u32, phase: u32) -> bool {
    let done: u32;
    unsafe {
        core::arch::asm!(
            "{{",
            ".reg .pred p;",
            "mbarrier.try_wait.parity.shared::cta.b64 p, [{bar}], {phase};",
            "selp.u32 {done}, 1, 0, p;",
            "}}",
            bar = in(reg32) bar, phase = in(reg32) phase, done = out(reg32) done, options(nostack));
    }
    done != 0
}

/// Spins until the phase with parity `phase` has completed (acquire semantics at CTA scope).
///
/// # Safety
/// `bar` is an initialized barrier.
#[inline(always)]
pub unsafe fn wait(bar: u32, phase: u32) {
    while !unsafe { try_wait(bar, phase) } {}
}

/// Position in a ring of `stages` buffers guarded by full/empty barrier pairs: which stage, and the parity
/// of the phase the next wait on that stage's barrier expects.
#[derive(Clone, Copy)]
pub struct RingState {
    stages: u32,
    pub stage: u32,
    pub phase: u32,
}

impl RingState {
    pub const fn new(stages: u32) -> Self {
        RingState { stages, stage: 0, phase: 0 }
    }

    #[inline(always)]
    pub fn advance(&mut self) {
        self.stage += 1;
        if self.stage == self.stages {
            self.stage = 0;
            self.phase ^= 1;
        }
    }

    /// The ring as it stood `n` buffers ago (`n` ≤ the stage count): the buffer and parity a consumer that trails
    /// this one by `n` uses, derived rather than carried in registers of its own.
    #[inline(always)]
    pub fn behind(&self, n: u32) -> RingState {
        if self.stage >= n {
            RingState { stages: self.stages, stage: self.stage - n, phase: self.phase }
        } else {
            RingState { stages: self.stages, stage: self.stage + self.stages - n, phase: self.phase ^ 1 }
        }
    }

    /// Moves past `n` buffers at once, as `n` calls of [`advance`](Self::advance) would: for a consumer that
    /// skips the buffers another one reads.
    #[inline(always)]
    pub fn advance_by(&mut self, n: u32) {
        let position = self.stage + n;
        // Each full lap of the ring flips the parity once.
        self.phase ^= (position / self.stages) & 1;
        self.stage = position % self.stages;
    }
}
