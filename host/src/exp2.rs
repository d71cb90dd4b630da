//! The host side of the attention softmax's software exp2 (gpu/device/src/softmax/exp2.rs): a bit-exact mirror
//! of the device function, the Remez exchange its coefficients come from, and (in the tests, no GPU needed) the
//! proof of its error bound.

use oxtile_abi::exp2::{MIN_INPUT, POLY, THROUGHPUT_VALUES, throughput_start};

/// Largest relative error the attention kernel accepts from its exponentials: below bf16's rounding (2^-9).
pub const REL_ERROR_BOUND: f64 = 1.0 / 1024.0;

/// p(f) = 1 + f·(c1 + f·(c2 + f·c3)) ≈ 2^f for f in [0, 1], as the device evaluates it (three FFMAs;
/// `mul_add` rounds once, as FFMA does).
pub fn exp2_poly_fraction(f: f32) -> f32 {
    let [c1, c2, c3] = POLY;
    c3.mul_add(f, c2).mul_add(f, c1).mul_add(f, 1.0)
}

/// The device's `exp2_poly`, bit for bit: the same f32 operations in the same order with the same rounding
/// (the device's ⌊x⌋ by a rounded-down add of 1.5·2^23 is exact, as `floor` is).
pub fn exp2_poly(x: f32) -> f32 {
    let x = x.max(MIN_INPUT);
    let floor = x.floor();
    let p = exp2_poly_fraction(x - floor);
    f32::from_bits(p.to_bits().wrapping_add((floor as i32 as u32) << 23))
}

/// What thread `thread` of a throughput kernel writes after `iters` iterations of v ← 2^(v − bias), in float64
/// with exact exponentials. The start values depend only on the thread's parity, so two calls cover a grid.
pub fn throughput_reference(thread: u32, iters: u32, bias: f32) -> f64 {
    (0..THROUGHPUT_VALUES)
        .map(|i| (0..iters).fold(throughput_start(thread, i) as f64, |v, _| (v - bias as f64).exp2()))
        .sum()
}

/// Result of [`derive_poly`].
#[derive(Clone, Debug, PartialEq)]
pub struct Derivation {
    /// c1 … c_degree of p(f) = 1 + c1·f + … + c_degree·f^degree.
    pub coefficients: Vec<f64>,
    /// The minimax relative error: max over [0, 1] of |p(f)·2^-f − 1|.
    pub max_rel_error: f64,
}

/// The minimax-relative-error polynomial p(f) = 1 + c1·f + … + c_d·f^d ≈ 2^f on [0, 1], by a Remez exchange
/// in float64: solve p(f_i)·2^-f_i − 1 = (−1)^i·E at d + 1 reference points, move the references to the
/// extrema of the error on a grid of `grid` points, repeat until the extrema are level. The constant term is
/// fixed at 1 so p is exact at f = 0 (the error is 0 there, so the references stay inside (0, 1]).
pub fn derive_poly(degree: usize, grid: usize) -> Derivation {
    let error = |c: &[f64], f: f64| {
        let p = c.iter().rev().fold(0.0, |acc, &ck| (acc + ck) * f) + 1.0;
        p * (-f).exp2() - 1.0
    };
    let points: Vec<f64> = (0..grid).map(|i| i as f64 / (grid - 1) as f64).collect();
    let mut references: Vec<f64> = (1..=degree + 1).map(|i| i as f64 / (degree + 1) as f64).collect();
    let mut coefficients = vec![0.0; degree];
    let mut max_rel_error = f64::INFINITY;
    for _ in 0..50 {
        // Unknowns c1..c_d and E: Σ_k c_k·f^k·2^-f − (−1)^i·E = 1 − 2^-f at each reference f.
        let mut system: Vec<Vec<f64>> = references
            .iter()
            .enumerate()
            .map(|(i, &f)| {
                let scale = (-f).exp2();
                let mut row: Vec<f64> = (1..=degree).map(|k| f.powi(k as i32) * scale).collect();
                row.push(if i % 2 == 0 { -1.0 } else { 1.0 });
                row.push(1.0 - scale);
                row
            })
            .collect();
        let solution = solve(&mut system);
        coefficients = solution[..degree].to_vec();
        let levelled = solution[degree].abs();

        // The extremum of |error| between consecutive sign changes, one per run of equal sign.
        let errors: Vec<f64> = points.iter().map(|&f| error(&coefficients, f)).collect();
        let mut extrema = Vec::new();
        let mut start = 1;
        for j in 1..grid {
            if j == grid - 1 || (errors[j] > 0.0) != (errors[j + 1] > 0.0) {
                let best = (start..=j).max_by(|&a, &b| errors[a].abs().total_cmp(&errors[b].abs())).unwrap();
                extrema.push(points[best]);
                start = j + 1;
            }
        }
        max_rel_error = errors.iter().fold(0.0f64, |m, e| m.max(e.abs()));
        if extrema.len() > degree {
            references = extrema[extrema.len() - (degree + 1)..].to_vec();
        }
        if max_rel_error - levelled <= 1e-9 * max_rel_error {
            break;
        }
    }
    Derivation { coefficients, max_rel_error }
}

/// Solves the augmented system in place by Gaussian elimination with partial pivoting.
fn solve(m: &mut [Vec<f64>]) -> Vec<f64> {
    let n = m.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs())).unwrap();
        m.swap(col, pivot);
        for row in 0..n {
            if row != col {
                let factor = m[row][col] / m[col][col];
                let pivot_row = m[col].clone();
                for (x, p) in m[row].iter_mut().zip(pivot_row) {
                    *x -= factor * p;
                }
            }
        }
    }
    (0..n).map(|i| m[i][n] / m[i][i]).collect()
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;

    fn rel_error(out: f32, x: f64) -> f64 {
        let want = x.exp2();
        (out as f64 - want).abs() / want
    }

    #[test]
    fn the_remez_exchange_reproduces_the_coefficients() {
        let derived = derive_poly(3, 20_001);
        for (k, (&d, &c)) in derived.coefficients.iter().zip(&POLY).enumerate() {
            // Each constant is its derived value rounded to f32: within half an f32 ulp (2^-24 relative).
            assert!((d - c as f64).abs() <= d.abs() * 2f64.powi(-24), "c{}: derived {d}, constant {c}", k + 1);
        }
        let levelled = derived.max_rel_error;
        assert!((levelled / oxtile_abi::exp2::POLY_MAX_REL_ERROR - 1.0).abs() < 0.01, "levelled error {levelled:e}");
    }

    #[test]
    fn degree_two_cannot_meet_the_bound() {
        let derived = derive_poly(2, 20_001);
        assert!(derived.max_rel_error > REL_ERROR_BOUND, "{derived:?}");
    }

    /// Every fraction x − ⌊x⌋ the kernel can form is a multiple of 2^-24 in [0, 1], and adding ⌊x⌋ to the
    /// exponent is exact, so this sweep bounds the error of every normal result.
    #[test]
    fn every_reachable_fraction_is_within_the_bound() {
        let steps = 1u32 << 24;
        let (mut worst, mut worst_f) = (0.0f64, 0.0f32);
        for k in 0..=steps {
            let f = k as f32 / steps as f32;
            let err = rel_error(exp2_poly_fraction(f), f as f64);
            if err > worst {
                (worst, worst_f) = (err, f);
            }
        }
        assert!(worst <= REL_ERROR_BOUND, "max relative error {worst:e} at f = {worst_f}");
        // The f32 evaluation adds little to the float64 minimax error (8.56e-5).
        assert!(worst < 8.6e-5, "max relative error {worst:e} at f = {worst_f}");
    }

    #[test]
    fn exp2_poly_is_within_the_bound_over_the_attention_range() {
        let mut worst = (0.0f64, 0.0f32);
        let mut check = |x: f32| {
            let err = rel_error(exp2_poly(x), x as f64);
            if err > worst.0 {
                worst = (err, x);
            }
        };
        // Dense: 4096 points in every unit interval of [−126, 0]; every 1021st f32 of (−1, −2^-30), where the
        // fraction x + 1 is rounded; random inputs.
        for j in -126..0 {
            for k in 0..4096 {
                check(j as f32 + k as f32 / 4096.0);
            }
        }
        let mut x = -1.0f32;
        while x < -2f32.powi(-30) {
            check(x);
            x = f32::from_bits(x.to_bits() - 1021);
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(0xe2);
        for _ in 0..1_000_000 {
            check(rng.random_range(-126.0f32..=0.0));
        }
        check(0.0);
        check(-126.0);
        // 2^-13.5, well inside REL_ERROR_BOUND (2^-10).
        assert!(worst.0 < 8.6e-5, "max relative error {:e} at x = {}", worst.0, worst.1);
    }

    #[test]
    fn integers_are_exact_and_out_of_range_saturates_to_zero() {
        for j in -126..=126 {
            assert_eq!(exp2_poly(j as f32), 2f32.powi(j), "x = {j}");
        }
        assert_eq!(exp2_poly(-0.0), 1.0);
        for x in [-127.0, -127.5, -200.0, f32::MIN, f32::NEG_INFINITY, f32::NAN] {
            assert_eq!(exp2_poly(x).to_bits(), 0, "x = {x}");
        }
        // Between −127 and −126: an approximate subnormal, within 2^-126 of 2^x.
        for k in 1..1000 {
            let x = -127.0 + k as f32 / 1000.0;
            let err = (exp2_poly(x) as f64 - (x as f64).exp2()).abs();
            assert!(err < 2f64.powi(-126), "x = {x}: {} against {}", exp2_poly(x), (x as f64).exp2());
        }
    }

    #[test]
    fn slightly_positive_inputs_stay_accurate() {
        // A row maximum subtracted with rounding can leave a tiny positive argument.
        for x in [1e-7f32, 1e-3, 0.5, 0.999_999, 1.0, 3.25] {
            assert!(rel_error(exp2_poly(x), x as f64) < 8.6e-5, "x = {x}");
        }
    }
}
