//! Values hidden from LLVM behind a `mov` in inline assembly, to keep a computation where the kernel puts it: a loop
//! bound it must not unroll by, or addresses it must not hoist out of a loop (and hold in registers across it).

/// `value`, hidden from LLVM (a `mov`), so a loop bounded by it is not unrolled.
#[inline(always)]
pub fn opaque(value: u32) -> u32 {
    let out: u32;
    unsafe {
        core::arch::asm!("mov.u32 {out}, {value};", out = out(reg32) out, value = in(reg32) value,
            options(pure, nomem, nostack))
    };
    out
}

/// `value` through a `mov` with side effects: LLVM neither moves it nor merges it with another, so what is computed
/// from it is computed at this point of every iteration of the loops around it.
#[inline(always)]
pub fn opaque_here(value: u32) -> u32 {
    let out: u32;
    unsafe {
        core::arch::asm!("mov.u32 {out}, {value};", out = out(reg32) out, value = in(reg32) value, options(nomem, nostack))
    };
    out
}

/// `value`, hidden from LLVM (a `mov`), so what is computed from it stays where it is used.
#[inline(always)]
pub fn opaque_u64(value: u64) -> u64 {
    let out: u64;
    unsafe {
        core::arch::asm!("mov.u64 {out}, {value};", out = out(reg64) out, value = in(reg64) value,
            options(pure, nomem, nostack))
    };
    out
}
