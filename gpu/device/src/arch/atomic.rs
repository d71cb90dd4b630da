//! Flags in global memory through which the blocks of one grid hand data to each other, with the memory model's
//! release and acquire patterns at GPU scope. PTX ISA: "red" (#parallel-synchronization-and-communication-instructions-red),
//! "ld" (#data-movement-and-conversion-instructions-ld), "st" (#data-movement-and-conversion-instructions-st), and
//! "Memory Consistency Model" (#memory-consistency-model), its "Release and Acquire Patterns" and "Causality Order".
//!
//! The pattern: a writer makes its ordinary stores, then [`red_release_gpu_add`] on a flag; a reader spins on
//! [`load_acquire_gpu`] until the flag holds the value it waits for, then reads the data. The release orders all of
//! the writer thread's earlier accesses before the addition, the acquire orders the reader's later accesses after the
//! load that observed it, so the reader's loads see the writer's stores. Only the writer thread's *own* earlier stores
//! are covered this directly: where several threads write the data, each releases its own (or they synchronize with
//! the releasing thread first).
//!
//! The `.sys`-scope forms (memory model: "Scope", #scope) serve a flag shared with the host through mapped pinned
//! memory (host memory the GPU reads over the bus): a strong load at system scope is never served from a stale
//! cached copy, so a kernel polling it sees the host's write once it lands.
//!
//! Every wrapper is an `asm!` without `nomem`/`readonly`, so LLVM keeps the program order of memory accesses around
//! it as well.

/// `red.release.gpu.global.add.u32`: adds `value` to the u32 at `flag`, with release semantics at GPU scope: every
/// memory access of this thread before it becomes visible, at GPU scope, to a thread whose acquire load observes
/// the addition (or a later value of the flag).
///
/// # Safety
/// `flag` is a 4-byte aligned address in global memory.
#[inline(always)]
pub unsafe fn red_release_gpu_add(flag: *mut u32, value: u32) {
    unsafe {
        core::arch::asm!("red.release.gpu.global.add.u32 [{flag}], {value};", flag = in(reg64) flag,
            value = in(reg32) value, options(nostack));
    }
}

/// `ld.acquire.gpu.global.u32`: the u32 at `flag`, with acquire semantics at GPU scope: this thread's later memory
/// accesses happen after it, and see whatever the release that produced the observed value ordered before itself.
///
/// # Safety
/// `flag` is a 4-byte aligned address in global memory.
#[inline(always)]
pub unsafe fn load_acquire_gpu(flag: *const u32) -> u32 {
    let value: u32;
    unsafe {
        core::arch::asm!("ld.acquire.gpu.global.u32 {value}, [{flag}];", value = out(reg32) value,
            flag = in(reg64) flag, options(nostack));
    }
    value
}

/// `atom.acq_rel.gpu.global.add.u32`: adds `value` to the u32 at `flag` and returns what it held before, with both
/// release and acquire semantics at GPU scope: the counter of a last-arriver pattern, where every arriving block
/// publishes its data with the addition and the block that finds the count complete reads the others' data after it.
///
/// # Safety
/// `flag` is a 4-byte aligned address in global memory.
#[inline(always)]
pub unsafe fn atom_acq_rel_gpu_add(flag: *mut u32, value: u32) -> u32 {
    let before: u32;
    unsafe {
        core::arch::asm!("atom.acq_rel.gpu.global.add.u32 {before}, [{flag}], {value};", before = out(reg32) before,
            flag = in(reg64) flag, value = in(reg32) value, options(nostack));
    }
    before
}

/// `atom.acquire.gpu.global.add.u32`: adds `value` to the u32 at `flag` and returns what it held before, with acquire
/// semantics at GPU scope: a claim that, where it finds the flag already published (the value a release produced, or
/// a later one), may read what that release ordered before itself. Unlike [`atom_acq_rel_gpu_add`] it publishes
/// nothing of its own, so it does not wait for this thread's earlier writes.
///
/// # Safety
/// `flag` is a 4-byte aligned address in global memory.
#[inline(always)]
pub unsafe fn atom_acquire_gpu_add(flag: *mut u32, value: u32) -> u32 {
    let before: u32;
    unsafe {
        core::arch::asm!("atom.acquire.gpu.global.add.u32 {before}, [{flag}], {value};", before = out(reg32) before,
            flag = in(reg64) flag, value = in(reg32) value, options(nostack));
    }
    before
}

/// `atom.relaxed.gpu.global.add.u32`: adds `value` to the u32 at `flag` and returns what it held before, as one strong
/// read-modify-write at GPU scope with no ordering of its own: for counting arrivals whose data is already ordered
/// some other way (e.g. the last of them resets the flag).
///
/// # Safety
/// `flag` is a 4-byte aligned address in global memory.
#[inline(always)]
pub unsafe fn atom_relaxed_gpu_add(flag: *mut u32, value: u32) -> u32 {
    let before: u32;
    unsafe {
        core::arch::asm!("atom.relaxed.gpu.global.add.u32 {before}, [{flag}], {value};", before = out(reg32) before,
            flag = in(reg64) flag, value = in(reg32) value, options(nostack));
    }
    before
}

/// `st.relaxed.gpu.global.u32`: writes `value` at `flag` as a strong (relaxed, GPU-scope) store: no ordering of its
/// own, but never torn or cached away from the other blocks, unlike a plain store. For resetting a flag that no one
/// else touches until the next launch.
///
/// # Safety
/// `flag` is a 4-byte aligned address in global memory.
#[inline(always)]
pub unsafe fn store_relaxed_gpu(flag: *mut u32, value: u32) {
    unsafe {
        core::arch::asm!("st.relaxed.gpu.global.u32 [{flag}], {value};", flag = in(reg64) flag,
            value = in(reg32) value, options(nostack));
    }
}

/// `ld.relaxed.sys.global.u32`: the u32 at `flag` as a strong (relaxed) load at system scope: it observes stores
/// of the host and of other devices, not only of this GPU's threads, and each call reads memory again. No ordering
/// of its own: for a flag that carries no data with it.
///
/// # Safety
/// `flag` is a 4-byte aligned global address: device memory, or host memory mapped into the GPU's address space.
#[inline(always)]
pub unsafe fn load_relaxed_sys(flag: *const u32) -> u32 {
    let value: u32;
    unsafe {
        core::arch::asm!("ld.relaxed.sys.global.u32 {value}, [{flag}];", value = out(reg32) value,
            flag = in(reg64) flag, options(nostack));
    }
    value
}

/// `st.relaxed.sys.global.u32`: writes `value` at `flag` as a strong (relaxed) store at system scope, so the host
/// reads it once the kernel has finished (or earlier, with no ordering promise).
///
/// # Safety
/// As [`load_relaxed_sys`].
#[inline(always)]
pub unsafe fn store_relaxed_sys(flag: *mut u32, value: u32) {
    unsafe {
        core::arch::asm!("st.relaxed.sys.global.u32 [{flag}], {value};", flag = in(reg64) flag,
            value = in(reg32) value, options(nostack));
    }
}

/// `red.relaxed.gpu.global.add.f32`: adds `value` to the f32 at `sum` (no ordering: a sum whose readers run in a
/// later kernel, e.g. a sum of squares). The order of the additions is the
/// hardware's, so the low bits of a sum vary between launches. (The two-element form `red.global.add.v2.f32` needs
/// PTX ISA 8.1; the device crate is built for 8.0.)
/// PTX ISA: "red" (#parallel-synchronization-and-communication-instructions-red).
///
/// # Safety
/// `sum` is a 4-byte aligned address in global memory.
#[inline(always)]
pub unsafe fn red_relaxed_gpu_add_f32(sum: *mut f32, value: f32) {
    unsafe {
        core::arch::asm!("red.relaxed.gpu.global.add.f32 [{sum}], {value};", sum = in(reg64) sum,
            value = in(reg32) value, options(nostack));
    }
}

/// `fence.proxy.async.global`: orders this thread's global-memory accesses made through the generic proxy (ordinary
/// loads and stores, `red`, `ld.acquire`) against those it makes or has made through the async proxy (bulk copies
/// and reductions), both ways. After [`crate::arch::tma::wait_group`], it brings a completed bulk reduction's
/// writes into the generic proxy, so that a later release of this thread covers them; before a bulk operation, it
/// orders the operation after this thread's earlier acquire. PTX ISA: "membar/fence"
/// (#parallel-synchronization-and-communication-instructions-membar-fence), "Proxies" (#proxies); PTX 8.0, sm_90.
#[inline(always)]
pub fn fence_proxy_async_global() {
    unsafe { core::arch::asm!("fence.proxy.async.global;", options(nostack)) };
}
