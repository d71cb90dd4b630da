//! Float64 CPU references and the helpers every GPU check uses: fresh normal inputs, poison, error metrics.
//!
//! [`attention`] holds the attention forward reference, [`attention_backward`] its gradients.

pub mod attention;
pub mod attention_backward;
pub mod newton_schulz;

use half::bf16;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

/// A bit pattern no kernel computes: outputs are filled with it before a run to catch unwritten elements.
pub const POISON_F32: f32 = f32::from_bits(0x7fc0_dead);
pub const POISON_BF16: bf16 = bf16::from_bits(0x7fde);

/// Values per independently seeded stretch of [`randn`].
const RANDN_CHUNK: usize = 1 << 16;

/// `n` draws from N(0, std²). A fresh seed per check unless one is given for reproduction.
///
/// Drawn on every core: each stretch of [`RANDN_CHUNK`] values has its own generator, keyed by the seed and the
/// stretch's index (ChaCha keys, not consecutive seeds, so no two seeds share a stretch), which makes the values
/// depend on `seed` and `n` alone, never on the number of threads.
pub fn randn(n: usize, std: f32, seed: u64) -> Vec<f32> {
    let normal = Normal::new(0.0, std).expect("finite std");
    let mut values = vec![0f32; n];
    values.par_chunks_mut(RANDN_CHUNK).enumerate().for_each(|(chunk, values)| {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(&(chunk as u64).to_le_bytes());
        let mut rng = StdRng::from_seed(key);
        values.iter_mut().for_each(|v| *v = normal.sample(&mut rng));
    });
    values
}

/// A seed from the clock, printed by checks so a failure can be replayed.
pub fn fresh_seed() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0x5eed)
}

pub fn to_bf16(values: &[f32]) -> Vec<bf16> {
    values.par_iter().copied().map(bf16::from_f32).collect()
}

/// alpha·x + y in f64, with the magnitude |alpha·x| + |y| that the rounding error scales with.
pub fn axpy(alpha: f64, x: &[f64], y: &[f64]) -> Vec<(f64, f64)> {
    x.par_iter().zip(y).map(|(&x, &y)| (alpha * x + y, (alpha * x).abs() + y.abs())).collect()
}

pub fn exp2(x: &[f64]) -> Vec<f64> {
    x.par_iter().map(|&x| x.exp2()).collect()
}

/// How far a GPU result is from its reference.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Largest |out − ref| / scale over all elements.
    pub max_rel_error: f64,
    /// Index of that element.
    pub worst_index: usize,
    /// Elements that are NaN, infinite or still hold the poison.
    pub not_finite: usize,
}

impl Comparison {
    /// Compares `out` with `(reference, scale)` pairs; `scale` is the magnitude the error is relative to.
    pub fn of(out: impl IntoIterator<Item = f64>, reference: impl IntoIterator<Item = (f64, f64)>) -> Comparison {
        let mut cmp = Comparison::default();
        for (i, (out, (want, scale))) in out.into_iter().zip(reference).enumerate() {
            if !out.is_finite() {
                cmp.not_finite += 1;
                continue;
            }
            let err = (out - want).abs() / scale.max(f64::MIN_POSITIVE);
            if err > cmp.max_rel_error {
                cmp.max_rel_error = err;
                cmp.worst_index = i;
            }
        }
        cmp
    }

    pub fn passes(&self, bound: f64) -> bool {
        self.not_finite == 0 && self.max_rel_error <= bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn randn_is_normal_and_never_zero_filled() {
        let v = randn(100_000, 2.0, 7);
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / v.len() as f64;
        assert!(mean.abs() < 0.05, "mean {mean}");
        assert!((var.sqrt() - 2.0).abs() < 0.05, "std {}", var.sqrt());
        assert_ne!(randn(8, 1.0, 1), randn(8, 1.0, 2));
    }

    #[test]
    fn randn_stretches_are_independent_and_thread_count_free() {
        let n = 3 * RANDN_CHUNK + 5;
        let v = randn(n, 1.0, 11);
        // A shorter draw is a prefix; one thread draws the same values as many.
        assert_eq!(&v[..RANDN_CHUNK + 3], &randn(RANDN_CHUNK + 3, 1.0, 11)[..]);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        assert_eq!(pool.install(|| randn(n, 1.0, 11)), v);
        // Neighbouring seeds share no stretch: seed 12's first is not seed 11's second.
        let next = randn(RANDN_CHUNK, 1.0, 12);
        assert_ne!(&v[RANDN_CHUNK..2 * RANDN_CHUNK], &next[..]);
        assert_ne!(&v[..RANDN_CHUNK], &v[RANDN_CHUNK..2 * RANDN_CHUNK]);
    }

    #[test]
    fn comparison_finds_worst_and_non_finite() {
        let reference = [(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)];
        let cmp = Comparison::of([1.0, 2.2, f64::NAN], reference);
        assert_eq!(cmp.not_finite, 1);
        assert_eq!(cmp.worst_index, 1);
        assert!((cmp.max_rel_error - 0.1).abs() < 1e-12);
        assert!(!cmp.passes(1.0));
        assert!(Comparison::of([1.0, 2.0], reference).passes(0.0));
    }

    #[test]
    fn poison_is_not_finite() {
        assert!(POISON_F32.is_nan());
        assert!(POISON_BF16.to_f32().is_nan());
    }
}
