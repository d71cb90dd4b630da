//! f32 arithmetic with an explicit rounding mode (PTX ISA §9.7.4, "Floating Point Instructions": `add`).
//! Rust's `+` always rounds to nearest even; these pick another IEEE 754 direction, at the same full FADD rate.

/// a + b rounded toward −∞ (`add.rm.f32`, one FADD.RM). With b = 1.5·2^23 and |a| < 2^22 the sum lands in
/// [2^23, 2^24), where f32's spacing is 1, so the result is b + ⌊a⌋: a floor on the FMA pipe, where
/// `cvt.rmi` (FRND) is a conversion-class instruction at a fraction of the FADD rate.
#[inline(always)]
pub fn add_rm(a: f32, b: f32) -> f32 {
    let d: f32;
    unsafe {
        core::arch::asm!("add.rm.f32 {d}, {a}, {b};", d = out(reg32) d, a = in(reg32) a, b = in(reg32) b,
            options(pure, nomem, nostack));
    }
    d
}
