//! FA4's software exp2: part of a softmax tile's exponentials computed by a polynomial on the FMA pipe, the rest
//! by MUFU.EX2, so both units work at once.
//!
//! 2^x = 2^⌊x⌋ · p(x − ⌊x⌋), p a degree-3 minimax polynomial for 2^f on [0, 1] with p(0) = 1, evaluated by
//! Horner with three FFMAs; ⌊x⌋ is added into the exponent bits with one integer instruction. The coefficients,
//! their derivation and their error are in [`oxtile_abi::exp2`]; host/src/exp2.rs mirrors [`exp2_poly`] bit
//! for bit and proves its error bound on the CPU.
//!
//! The kernels that test and time it (accuracy over a buffer, throughput with the values in registers) are in the
//! support kernels' `exp2` module.

use oxtile_abi::exp2::{MIN_INPUT, POLY};
use seq_macro::seq;

use crate::arch::float::add_rm;
use crate::arch::mufu::ex2_approx;

/// 1.5·2^23: x + this, rounded toward −∞, is this + ⌊x⌋, and its low mantissa bits hold ⌊x⌋ in two's complement.
const FLOOR_MAGIC: f32 = 12_582_912.0;

/// a·b + c with one rounding (FFMA).
#[inline(always)]
fn fma(a: f32, b: f32, c: f32) -> f32 {
    core::intrinsics::fmaf32(a, b, c)
}

/// 2^x by the polynomial, without MUFU: eight instructions (FMNMX, FADD.RM, two FADD, three FFMA and one integer
/// shift-and-add) where MUFU.EX2 takes one, but on units a softmax leaves mostly idle.
///
/// Range: the attention kernel feeds x ≤ 0 (scores minus their row maximum, in log2 units). Over
/// −126 ≤ x ≤ 0 (and on to x < 127) the result is normal and its relative error is at most 8.6e-5 ≈ 2^-13.5
/// (the bound tested is 2^-10). x ≤ −127, −∞ and NaN give exactly 0 (the clamp); x in (−127, −126) gives an
/// approximate subnormal, within 2^-126 of 2^x (where `ex2.approx.ftz` gives 0). x is exact at integers:
/// exp2_poly(0) = 1. Not for x ≥ 127 (the exponent overflows into the sign).
#[inline(always)]
pub fn exp2_poly(x: f32) -> f32 {
    // max.f32 returns the other operand for NaN, so NaN and −∞ both become MIN_INPUT, whose result is 0.
    let x = x.max(MIN_INPUT);
    let shifted = add_rm(x, FLOOR_MAGIC);
    // ⌊x⌋ and x − ⌊x⌋ ∈ [0, 1], both exact for |x| ≥ 1 (below 1 the fraction x + 1 is rounded once).
    let floor = shifted - FLOOR_MAGIC;
    let f = x - floor;
    let [c1, c2, c3] = POLY;
    let p = fma(fma(fma(c3, f, c2), f, c1), f, 1.0);
    // FLOOR_MAGIC's low 9 bits are zero, so `shifted << 23` is ⌊x⌋ << 23 (mod 2^32): adding it to p's bits adds
    // ⌊x⌋ to p's exponent. At x = −127, p = 1 exactly and the sum is +0.
    f32::from_bits(p.to_bits().wrapping_add(shifted.to_bits() << 23))
}

/// Whether value `i` goes to the polynomial when `num` of every `den` values do: spread evenly (value i does
/// when ⌊(i+1)·num/den⌋ > ⌊i·num/den⌋), so any `den` consecutive values hold exactly `num` polynomial ones.
#[inline(always)]
pub const fn takes_poly(i: usize, num: usize, den: usize) -> bool {
    (i * num) % den + num >= den
}

// Any `den` consecutive values hold exactly `num` polynomial ones.
const _: () = {
    let (mut i, mut poly) = (0, 0);
    while i < 16 {
        poly += takes_poly(i, 3, 8) as usize;
        i += 1;
    }
    assert!(poly == 6 && !takes_poly(5, 0, 4) && takes_poly(5, 4, 4));
};

/// Most values [`exp2_mixed`] takes (its unrolling bound: the `seq!` below).
pub const MIXED_MAX_VALUES: usize = 128;

/// `values[i] ← 2^values[i]`, `NUM` of every `DEN` by [`exp2_poly`] (chosen by [`takes_poly`]) and the rest by
/// MUFU.EX2. Fully unrolled: every index is a constant, so the array stays in registers and the choice of unit
/// costs nothing at run time.
#[inline(always)]
pub fn exp2_mixed<const N: usize, const NUM: usize, const DEN: usize>(values: &mut [f32; N]) {
    const { assert!(N <= MIXED_MAX_VALUES && DEN > 0 && NUM <= DEN) };
    seq!(I in 0..128 {
        if I < N
            && let Some(v) = values.get_mut(I)
        {
            *v = if takes_poly(I, NUM, DEN) { exp2_poly(*v) } else { ex2_approx(*v) };
        }
    });
}
