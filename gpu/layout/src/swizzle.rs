//! CuTe's `Swizzle<B, M, S>`: XOR `B` bits taken `S` above the `M` low (untouched) bits into
//! the bits starting at `M`, the permutation used to make shared-memory tiles bank-conflict free.

use core::fmt;

use crate::LayoutError;

/// `Swizzle<B,M,S>`: with `yyy = ((1<<B)-1) << (M + max(0,S))` and
/// `zzz = ((1<<B)-1) << (M - min(0,S))`, `apply(o) = o ^ ((o & yyy) >> S)`
/// (a negative `S` shifts left).
///
/// Valid parameters, as CuTe requires (`B >= 0`, `M >= 0`, `|S| >= B`) and so that both masks
/// lie inside the 63 value bits of an `i64` offset: `B + M + |S| <= 63`. Each of them is then at
/// most 63, so no shift in [`Swizzle::apply`] can overflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Swizzle {
    bits: u32,
    base: u32,
    shift: i32,
}

impl Swizzle {
    /// The identity swizzle `Sw<0,0,0>`.
    pub const IDENTITY: Self = Self { bits: 0, base: 0, shift: 0 };

    /// The largest `B + M + |S|`: the masks stay below the sign bit of an `i64` offset.
    pub const MAX_BITS: u32 = 63;

    /// `Swizzle<bits, base, shift>`. Panics (a compile error in `const`) unless
    /// `|shift| >= bits` (the masks would overlap) and every mask bit fits in 63 bits.
    pub const fn new(bits: u32, base: u32, shift: i32) -> Self {
        match Self::checked(bits, base, shift) {
            Ok(s) => s,
            Err(_) => panic!("Swizzle<B,M,S> needs |S| >= B and B + M + |S| <= 63"),
        }
    }

    /// Like [`Swizzle::new`], `None` for invalid parameters.
    pub const fn try_new(bits: u32, base: u32, shift: i32) -> Option<Self> {
        match Self::checked(bits, base, shift) {
            Ok(s) => Some(s),
            Err(_) => None,
        }
    }

    /// Like [`Swizzle::new`], [`LayoutError::InvalidArgument`] for invalid parameters. The sum is
    /// formed in `u64`, so no combination of `u32`/`i32` parameters wraps into range.
    pub const fn checked(bits: u32, base: u32, shift: i32) -> Result<Self, LayoutError> {
        let s = shift.unsigned_abs();
        if s < bits {
            return Err(LayoutError::InvalidArgument("swizzle Sw<B,M,S> needs |S| >= B"));
        }
        if bits as u64 + base as u64 + s as u64 > Self::MAX_BITS as u64 {
            return Err(LayoutError::InvalidArgument("swizzle Sw<B,M,S> needs B + M + |S| <= 63"));
        }
        Ok(Self { bits, base, shift })
    }

    pub const fn bits(self) -> u32 {
        self.bits
    }
    pub const fn base(self) -> u32 {
        self.base
    }
    pub const fn shift(self) -> i32 {
        self.shift
    }

    const fn bit_mask(self) -> i64 {
        (1i64 << self.bits) - 1
    }

    /// The source bits (`yyy`), read and shifted onto [`Swizzle::zzz_mask`].
    pub const fn yyy_mask(self) -> i64 {
        let up = if self.shift > 0 { self.shift as u32 } else { 0 };
        self.bit_mask() << (self.base + up)
    }

    /// The destination bits (`zzz`), flipped by the source bits.
    pub const fn zzz_mask(self) -> i64 {
        let down = if self.shift < 0 { self.shift.unsigned_abs() } else { 0 };
        self.bit_mask() << (self.base + down)
    }

    /// The swizzled offset. An involution: `apply(apply(o)) == o`. Total: the masks lie in bits
    /// 0..63, so the moved bits stay inside the `i64` for every offset, negative ones included.
    pub const fn apply(self, offset: i64) -> i64 {
        let picked = offset & self.yyy_mask();
        let moved = if self.shift >= 0 { picked >> self.shift as u32 } else { picked << self.shift.unsigned_abs() };
        offset ^ moved
    }

    /// [`Swizzle::apply`] in 32-bit arithmetic, for device index math: the low 32 bits of
    /// `apply(offset)`. Mask bits at 32 and above and shifts of 32 or more drop out.
    pub const fn apply_u32(self, offset: u32) -> u32 {
        let picked = offset & (self.yyy_mask() as u32);
        let moved = if self.shift >= 0 {
            picked.checked_shr(self.shift as u32)
        } else {
            picked.checked_shl(self.shift.unsigned_abs())
        };
        let moved = match moved {
            Some(m) => m,
            None => 0,
        };
        offset ^ moved
    }
}

impl fmt::Display for Swizzle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sw<{},{},{}>", self.bits, self.base, self.shift)
    }
}
