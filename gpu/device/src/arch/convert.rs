//! Conversions between f32 and the 16-bit float formats (PTX ISA §9.7.9.21, `cvt`).

/// bf16 bits to f32: exact, bf16 is the top half of an f32.
#[inline(always)]
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// Two f32 to two bf16 with round-to-nearest-even, packed with `lo` in the low half
/// (`cvt.rn.bf16x2.f32`, sm_80+; its first source goes to the upper half).
#[inline(always)]
pub fn pack_bf16x2(lo: f32, hi: f32) -> u32 {
    let packed: u32;
    unsafe {
        core::arch::asm!("cvt.rn.bf16x2.f32 {d}, {hi}, {lo};", d = out(reg32) packed, hi = in(reg32) hi,
            lo = in(reg32) lo, options(pure, nomem, nostack));
    }
    packed
}

/// f16 bits to f32 (`cvt.f32.f16`, exact).
#[inline(always)]
pub fn f16_to_f32(bits: u16) -> f32 {
    let out: f32;
    unsafe {
        core::arch::asm!("cvt.f32.f16 {out}, {h};", out = out(reg32) out, h = in(reg16) bits,
            options(pure, nomem, nostack));
    }
    out
}

/// Two f32 to two f16 with round-to-nearest-even, packed with `lo` in the low half (`cvt.rn.f16x2.f32`).
#[inline(always)]
pub fn pack_f16x2(lo: f32, hi: f32) -> u32 {
    let packed: u32;
    unsafe {
        core::arch::asm!("cvt.rn.f16x2.f32 {d}, {hi}, {lo};", d = out(reg32) packed, hi = in(reg32) hi,
            lo = in(reg32) lo, options(pure, nomem, nostack));
    }
    packed
}

/// Two packed bf16 (the low half first) to f32: exact, each is the top half of an f32.
#[inline(always)]
pub fn unpack_bf16x2(bits: u32) -> (f32, f32) {
    (f32::from_bits(bits << 16), f32::from_bits(bits & 0xffff_0000))
}

/// Two packed f16 (the low half first) to f32 (`cvt.f32.f16` each, exact).
#[inline(always)]
pub fn unpack_f16x2(bits: u32) -> (f32, f32) {
    (f16_to_f32(bits as u16), f16_to_f32((bits >> 16) as u16))
}

/// [`pack_bf16x2`] saturated to the finite range: a value past ±the largest finite bf16 (±∞ included) becomes it,
/// NaN stays NaN (`cvt.rn.satfinite.bf16x2.f32`, PTX ISA 8.1, sm_80+; one F2FP.SATFINITE, as cheap as the plain
/// conversion).
#[inline(always)]
pub fn pack_bf16x2_finite(lo: f32, hi: f32) -> u32 {
    let packed: u32;
    unsafe {
        core::arch::asm!("cvt.rn.satfinite.bf16x2.f32 {d}, {hi}, {lo};", d = out(reg32) packed, hi = in(reg32) hi,
            lo = in(reg32) lo, options(pure, nomem, nostack));
    }
    packed
}

/// [`pack_f16x2`] saturated to the finite range: past ±65504 (±∞ included) becomes ±65504, NaN stays NaN
/// (`cvt.rn.satfinite.f16x2.f32`, PTX ISA 8.1, sm_80+).
#[inline(always)]
pub fn pack_f16x2_finite(lo: f32, hi: f32) -> u32 {
    let packed: u32;
    unsafe {
        core::arch::asm!("cvt.rn.satfinite.f16x2.f32 {d}, {hi}, {lo};", d = out(reg32) packed, hi = in(reg32) hi,
            lo = in(reg32) lo, options(pure, nomem, nostack));
    }
    packed
}
