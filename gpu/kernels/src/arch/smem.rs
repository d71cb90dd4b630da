//! Shared memory: the dynamic allocation and the proxy fence between ordinary and async accesses.
//! PTX ISA: "State Spaces: Shared" (#shared-state-space) and "membar/fence" (#parallel-synchronization-and-communication-instructions-membar-fence).

/// Shared-window address of the kernel's dynamic shared memory (1024-byte aligned, the builder declares it).
#[inline(always)]
pub fn dynamic_smem_base() -> u32 {
    let base: u32;
    unsafe { core::arch::asm!("mov.u32 {base}, dyn_smem;", base = out(reg32) base, options(pure, nomem, nostack)) };
    base
}

/// `fence.proxy.async.shared::cta`: makes this thread's ordinary shared-memory writes visible to the async
/// proxy (TMA, wgmma) and orders the other way round. Needed after generic writes the async units read next.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    unsafe { core::arch::asm!("fence.proxy.async.shared::cta;", options(nostack)) };
}
