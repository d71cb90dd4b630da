//! Thread-block clusters (sm_90): rank, cluster-wide barriers and distributed shared memory.
//! PTX ISA: "Special Registers: %cluster_ctarank" (#special-registers-cluster-ctarank), "barrier.cluster"
//! (#parallel-synchronization-and-communication-instructions-barrier-cluster) and "mapa"
//! (#data-movement-and-conversion-instructions-mapa).

/// `%cluster_ctarank`: this block's rank in its cluster.
#[inline(always)]
pub fn block_rank() -> u32 {
    let rank: u32;
    unsafe {
        core::arch::asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) rank, options(pure, nomem, nostack));
    }
    rank
}

/// `barrier.cluster.arrive.release` then `barrier.cluster.wait.acquire`: every thread of every block of the
/// cluster meets here; shared-memory writes before it are visible cluster-wide after it. Not `.aligned`: threads
/// of a warp may arrive at different times (a producer warp whose one issuing thread is still looping).
#[inline(always)]
pub fn sync() {
    unsafe {
        core::arch::asm!("barrier.cluster.arrive.release;", "barrier.cluster.wait.acquire;", options(nostack));
    }
}

/// `barrier.cluster.arrive.release`: the first half of [`sync`]. This thread's shared-memory writes before it are
/// visible cluster-wide to every thread once that thread's [`wait`] returns; work between the two overlaps the other
/// blocks' arrival. Each thread must [`wait`] before it arrives again.
#[inline(always)]
pub fn arrive() {
    unsafe { core::arch::asm!("barrier.cluster.arrive.release;", options(nostack)) };
}

/// `barrier.cluster.wait.acquire`: the second half of [`sync`]: returns once every thread of every block of the
/// cluster has arrived.
#[inline(always)]
pub fn wait() {
    unsafe { core::arch::asm!("barrier.cluster.wait.acquire;", options(nostack)) };
}

/// `mapa.shared::cluster`: the address of the same shared-memory location (`addr`, a local `.shared::cta`
/// address) in block `rank` of the cluster, as a `.shared::cluster` address.
#[inline(always)]
pub fn map_shared(addr: u32, rank: u32) -> u32 {
    let remote: u32;
    unsafe {
        core::arch::asm!("mapa.shared::cluster.u32 {remote}, {addr}, {rank};", remote = out(reg32) remote,
            addr = in(reg32) addr, rank = in(reg32) rank, options(pure, nomem, nostack));
    }
    remote
}
