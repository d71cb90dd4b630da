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

/// `ld.shared.u16`: the 16 bits at shared-window address `addr`.
/// PTX ISA: "ld" (#data-movement-and-conversion-instructions-ld).
///
/// # Safety
/// `addr` is a 2-byte aligned address inside this block's shared memory.
#[inline(always)]
pub unsafe fn load_u16(addr: u32) -> u16 {
    let value: u16;
    unsafe {
        core::arch::asm!("ld.shared.u16 {value}, [{addr}];", value = out(reg16) value, addr = in(reg32) addr,
            options(nostack, readonly, preserves_flags));
    }
    value
}

/// `st.shared.u16`: writes 16 bits at shared-window address `addr`.
/// PTX ISA: "st" (#data-movement-and-conversion-instructions-st).
///
/// # Safety
/// `addr` is a 2-byte aligned address inside this block's shared memory that no other thread accesses
/// concurrently.
#[inline(always)]
pub unsafe fn store_u16(addr: u32, value: u16) {
    unsafe {
        core::arch::asm!("st.shared.u16 [{addr}], {value};", addr = in(reg32) addr, value = in(reg16) value,
            options(nostack, preserves_flags));
    }
}

/// `st.shared.b32`: writes 32 bits at shared-window address `addr`.
/// PTX ISA: "st" (#data-movement-and-conversion-instructions-st).
///
/// # Safety
/// `addr` is a 4-byte aligned address inside this block's shared memory that no other thread accesses
/// concurrently.
#[inline(always)]
pub unsafe fn store_u32(addr: u32, value: u32) {
    unsafe {
        core::arch::asm!("st.shared.b32 [{addr}], {value};", addr = in(reg32) addr, value = in(reg32) value,
            options(nostack, preserves_flags));
    }
}

/// `st.shared.v2.f32`: writes `lo` at shared-window address `addr` and `hi` after it, as one 8-byte store.
/// PTX ISA: "st" (#data-movement-and-conversion-instructions-st).
///
/// # Safety
/// `addr` is an 8-byte aligned address inside this block's shared memory that no other thread accesses
/// concurrently.
#[inline(always)]
pub unsafe fn store_f32x2(addr: u32, lo: f32, hi: f32) {
    unsafe {
        core::arch::asm!("st.shared.v2.f32 [{addr}], {{{lo}, {hi}}};", addr = in(reg32) addr, lo = in(reg32) lo,
            hi = in(reg32) hi, options(nostack, preserves_flags));
    }
}

/// `ld.shared.b32`: the 32 bits at shared-window address `addr`.
/// PTX ISA: "ld" (#data-movement-and-conversion-instructions-ld).
///
/// # Safety
/// `addr` is a 4-byte aligned address inside this block's shared memory.
#[inline(always)]
pub unsafe fn load_u32(addr: u32) -> u32 {
    let value: u32;
    unsafe {
        core::arch::asm!("ld.shared.b32 {value}, [{addr}];", value = out(reg32) value, addr = in(reg32) addr,
            options(nostack, readonly, preserves_flags));
    }
    value
}

/// `ld.shared.v2.f32`: the two f32 at shared-window address `addr` and after it, as one 8-byte load.
/// PTX ISA: "ld" (#data-movement-and-conversion-instructions-ld).
///
/// # Safety
/// `addr` is an 8-byte aligned address inside this block's shared memory.
#[inline(always)]
pub unsafe fn load_f32x2(addr: u32) -> (f32, f32) {
    let (lo, hi): (f32, f32);
    unsafe {
        core::arch::asm!("ld.shared.v2.f32 {{{lo}, {hi}}}, [{addr}];", lo = out(reg32) lo, hi = out(reg32) hi,
            addr = in(reg32) addr, options(nostack, readonly, preserves_flags));
    }
    (lo, hi)
}
