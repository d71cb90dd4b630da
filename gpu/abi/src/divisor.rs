//! Division of u32 values by a divisor fixed for a launch, as a multiply-high, an add and a shift.
//!
//! A kernel that divides by a run-time value (a work item's index by the query tiles of a head, then by the heads)
//! pays NVPTX's integer division: an I2F, a MUFU.RCP, an F2I and a dozen dependent integer steps, a few hundred
//! cycles at the start of every work item. The host instead derives a multiplier and a shift once per launch
//! ([`Divisor::new`]) and passes them packed in a u64 ([`Divisor::packed`]); the kernel rebuilds the divisor from
//! them ([`Divisor::from_packed`]) and divides with them ([`Divisor::div_rem`]).
//!
//! The method is Granlund and Montgomery's, "Division by invariant integers using multiplication" (PLDI 1994),
//! section 4, for N = 32: with ℓ = ⌈log2 d⌉ and m' = ⌊2^32 · (2^ℓ − d) / d⌋ + 1 (which fits in 32 bits),
//! ⌊n / d⌋ = ⌊(t + n) / 2^ℓ⌋ where t = ⌊m' · n / 2^32⌋, for every u32 n. The sum t + n can exceed 32 bits, so it is
//! taken in 64. The tests check it against `/` over every divisor up to 2^12 at chosen numerators and over random
//! pairs of the whole range.

/// A u32 divisor d ≥ 1 with the multiplier and shift that divide by it (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divisor {
    divisor: u32,
    multiplier: u32,
    shift: u32,
}

impl Divisor {
    /// The multiplier and shift for `divisor`; `None` for 0.
    pub const fn new(divisor: u32) -> Option<Divisor> {
        if divisor == 0 {
            return None;
        }
        // ℓ = ⌈log2 d⌉: 0 for d = 1, 32 for d > 2^31.
        let shift = 32 - (divisor - 1).leading_zeros();
        // 2^32 · (2^ℓ − d) < 2^63: 0 for d = 1; for 1 ≤ ℓ ≤ 31, 2^ℓ − d < 2^(ℓ−1); for ℓ = 32, d > 2^31.
        let multiplier = ((1u64 << 32) * ((1u64 << shift) - divisor as u64) / divisor as u64 + 1) as u32;
        Some(Divisor { divisor, multiplier, shift })
    }

    /// The divisor.
    #[inline(always)]
    pub const fn get(self) -> u32 {
        self.divisor
    }

    /// The multiplier in the low word and the shift in the high word: the kernel parameter.
    pub const fn packed(self) -> u64 {
        self.multiplier as u64 | (self.shift as u64) << 32
    }

    /// The divisor `divisor` with the multiplier and shift of its [`Divisor::packed`], as the host passed them.
    #[inline(always)]
    pub const fn from_packed(divisor: u32, packed: u64) -> Divisor {
        Divisor { divisor, multiplier: packed as u32, shift: (packed >> 32) as u32 }
    }

    /// ⌊n / d⌋.
    #[inline(always)]
    pub const fn div(self, n: u32) -> u32 {
        let high = (n as u64 * self.multiplier as u64) >> 32;
        ((high + n as u64) >> self.shift) as u32
    }

    /// ⌊n / d⌋ and n mod d.
    #[inline(always)]
    pub const fn div_rem(self, n: u32) -> (u32, u32) {
        let quotient = self.div(n);
        (quotient, n - quotient * self.divisor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(d: u32, n: u32) {
        let divisor = Divisor::new(d).unwrap();
        let rebuilt = Divisor::from_packed(d, divisor.packed());
        assert_eq!(rebuilt, divisor);
        assert_eq!(rebuilt.div_rem(n), (n / d, n % d), "{n} / {d}");
    }

    #[test]
    fn zero_has_no_divisor() {
        assert_eq!(Divisor::new(0), None);
    }

    #[test]
    fn every_small_divisor_divides_the_numerators_around_its_multiples_and_the_range_ends() {
        for d in 1..=4096u32 {
            for n in [0, 1, 2, d - 1, d, d + 1, 2 * d - 1, 2 * d, 1000 * d - 1, 1000 * d, u32::MAX - 1, u32::MAX] {
                check(d, n);
            }
            let last_multiple = u32::MAX / d * d;
            for n in [last_multiple - 1, last_multiple, last_multiple.saturating_add(d - 1)] {
                check(d, n);
            }
        }
    }

    #[test]
    fn the_largest_divisors_and_powers_of_two_divide_exactly() {
        let large: [u32; 9] = [u32::MAX, u32::MAX - 1, (1 << 31) + 1, 1 << 31, (1 << 31) - 1, 3, 7, 641, 6_700_417];
        for d in large.into_iter().chain((0..32).map(|k| 1u32 << k)) {
            for n in [0, 1, d - 1, d, d.wrapping_add(1), u32::MAX / 2, u32::MAX - 1, u32::MAX] {
                check(d, n);
            }
        }
    }

    #[test]
    fn random_pairs_over_the_whole_range_divide_exactly() {
        // SplitMix64: a fixed sequence, so a failure names its pair.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        for _ in 0..1_000_000 {
            let (a, b) = (next(), next());
            // Divisors of every magnitude: a random bit length, then random bits below it.
            let bits = (a % 32) as u32 + 1;
            let d = ((a >> 8) as u32 >> (32 - bits)).max(1);
            check(d, b as u32);
        }
    }
}
