//! Vector loads and stores of global memory. PTX ISA: "ld" (#data-movement-and-conversion-instructions-ld) and
//! "st" (#data-movement-and-conversion-instructions-st), with the cache operators of "Cache Operators"
//! (#cache-operators).

/// `st.global.v4.f32`: writes `values` at `at` as one 16-byte store.
///
/// # Safety
/// `at` is a 16-byte aligned address of four f32 in global memory that no other thread accesses concurrently.
#[inline(always)]
pub unsafe fn store_f32x4(at: *mut f32, values: [f32; 4]) {
    let [v0, v1, v2, v3] = values;
    unsafe {
        core::arch::asm!("st.global.v4.f32 [{at}], {{{v0}, {v1}, {v2}, {v3}}};", at = in(reg64) at,
            v0 = in(reg32) v0, v1 = in(reg32) v1, v2 = in(reg32) v2, v3 = in(reg32) v3, options(nostack));
    }
}

/// `st.global.v2.f32`: writes `a` and `b` at `at` as one 8-byte store.
///
/// # Safety
/// `at` is an 8-byte aligned address of two f32 in global memory that no other thread accesses concurrently.
#[inline(always)]
pub unsafe fn store_f32x2(at: *mut f32, a: f32, b: f32) {
    unsafe {
        core::arch::asm!("st.global.v2.f32 [{at}], {{{a}, {b}}};", at = in(reg64) at, a = in(reg32) a,
            b = in(reg32) b, options(nostack));
    }
}

/// `st.global.v4.u32`: writes `values` at `at` as one 16-byte store.
///
/// # Safety
/// `at` is a 16-byte aligned address of 16 bytes in global memory that no other thread accesses concurrently.
#[inline(always)]
pub unsafe fn store_u32x4(at: *mut u32, values: [u32; 4]) {
    let [v0, v1, v2, v3] = values;
    unsafe {
        core::arch::asm!("st.global.v4.u32 [{at}], {{{v0}, {v1}, {v2}, {v3}}};", at = in(reg64) at,
            v0 = in(reg32) v0, v1 = in(reg32) v1, v2 = in(reg32) v2, v3 = in(reg32) v3, options(nostack));
    }
}

/// `ld.global.cg.v4.f32`: the four f32 at `at` as one 16-byte load, cached in L2 only (`.cg`): for data another
/// SM wrote during this launch (this SM's L1 is not coherent with it, and the data is read once). Not `readonly`
/// to LLVM, so it stays after the acquire that made the data visible.
///
/// # Safety
/// `at` is a 16-byte aligned address of four f32 in global memory.
#[inline(always)]
pub unsafe fn load_f32x4_cg(at: *const f32) -> [f32; 4] {
    let (v0, v1, v2, v3): (f32, f32, f32, f32);
    unsafe {
        core::arch::asm!("ld.global.cg.v4.f32 {{{v0}, {v1}, {v2}, {v3}}}, [{at}];", at = in(reg64) at,
            v0 = out(reg32) v0, v1 = out(reg32) v1, v2 = out(reg32) v2, v3 = out(reg32) v3, options(nostack));
    }
    [v0, v1, v2, v3]
}

/// `ld.global.nc.v4.u32`: the 16 bytes at `at` through the non-coherent (read-only) data path, cached in L1: for data
/// no thread writes during the launch and that other warps of the SM read again (a skinny GEMM's A).
///
/// # Safety
/// `at` is a 16-byte aligned address of 16 bytes in global memory that nothing writes during the launch.
#[inline(always)]
pub unsafe fn load_u32x4_nc(at: *const u16) -> [u32; 4] {
    let (v0, v1, v2, v3): (u32, u32, u32, u32);
    unsafe {
        core::arch::asm!("ld.global.nc.v4.u32 {{{v0}, {v1}, {v2}, {v3}}}, [{at}];", at = in(reg64) at,
            v0 = out(reg32) v0, v1 = out(reg32) v1, v2 = out(reg32) v2, v3 = out(reg32) v3,
            options(nostack, readonly, pure));
    }
    [v0, v1, v2, v3]
}

/// `ld.global.nc.L1::no_allocate.v4.u32`: as [`load_u32x4_nc`], without keeping the line in L1: for data streamed
/// once (a skinny GEMM's B), which would only evict what is read again.
///
/// # Safety
/// As [`load_u32x4_nc`].
#[inline(always)]
pub unsafe fn load_u32x4_stream(at: *const u16) -> [u32; 4] {
    let (v0, v1, v2, v3): (u32, u32, u32, u32);
    unsafe {
        core::arch::asm!("ld.global.nc.L1::no_allocate.v4.u32 {{{v0}, {v1}, {v2}, {v3}}}, [{at}];", at = in(reg64) at,
            v0 = out(reg32) v0, v1 = out(reg32) v1, v2 = out(reg32) v2, v3 = out(reg32) v3,
            options(nostack, readonly, pure));
    }
    [v0, v1, v2, v3]
}

/// `ld.global.nc.L1::no_allocate.v4.f32`: [`load_u32x4_stream`] for f32 (an accumulator an earlier kernel wrote,
/// converted once).
///
/// # Safety
/// `at` is a 16-byte aligned address of four f32 in global memory that nothing writes during the launch.
#[inline(always)]
pub unsafe fn load_f32x4_stream(at: *const f32) -> [f32; 4] {
    let (v0, v1, v2, v3): (f32, f32, f32, f32);
    unsafe {
        core::arch::asm!("ld.global.nc.L1::no_allocate.v4.f32 {{{v0}, {v1}, {v2}, {v3}}}, [{at}];", at = in(reg64) at,
            v0 = out(reg32) v0, v1 = out(reg32) v1, v2 = out(reg32) v2, v3 = out(reg32) v3,
            options(nostack, readonly, pure));
    }
    [v0, v1, v2, v3]
}
