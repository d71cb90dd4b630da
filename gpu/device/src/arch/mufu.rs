//! The multi-function unit's transcendentals (PTX ISA §9.7.4, "Floating Point Instructions").

/// 2^x by `ex2.approx.ftz.f32` (PTX ISA §9.7.4.13): one MUFU.EX2, max relative error 2^-22 over the normal
/// range; subnormal inputs and results flush to zero.
#[inline(always)]
pub fn ex2_approx(x: f32) -> f32 {
    let y: f32;
    unsafe {
        core::arch::asm!("ex2.approx.ftz.f32 {y}, {x};", y = out(reg32) y, x = in(reg32) x,
            options(pure, nomem, nostack));
    }
    y
}

/// log2(x) by `lg2.approx.ftz.f32` (PTX ISA §9.7.4.12): one MUFU.LG2, max absolute error 2^-22 for x in
/// [0.5, 2]; lg2(0) = −∞.
#[inline(always)]
pub fn lg2_approx(x: f32) -> f32 {
    let y: f32;
    unsafe {
        core::arch::asm!("lg2.approx.ftz.f32 {y}, {x};", y = out(reg32) y, x = in(reg32) x,
            options(pure, nomem, nostack));
    }
    y
}

/// 1/x by `rcp.approx.ftz.f32` (PTX ISA §9.7.4, "rcp"): one MUFU.RCP, at most 1 ulp from the exact reciprocal over
/// the normal range; subnormal inputs and results flush to zero. The IEEE-rounded `rcp.rn.f32` that `1.0 / x`
/// compiles to adds a Newton step and a branch to a slow path for operands near the range's ends.
#[inline(always)]
pub fn rcp_approx(x: f32) -> f32 {
    let y: f32;
    unsafe {
        core::arch::asm!("rcp.approx.ftz.f32 {y}, {x};", y = out(reg32) y, x = in(reg32) x,
            options(pure, nomem, nostack));
    }
    y
}
