//! GPU results against float64 CPU references: fresh normal inputs, poisoned outputs, error bounds fitted to
//! each kernel's precision. Used by `oxtile check` and the GPU integration tests.

use half::bf16;

use crate::error::Result;
use crate::ops::elementwise;
use crate::reference::{self, Comparison, POISON_F32};
use crate::runtime::Gpu;

/// Lengths every elementwise kernel is checked at: empty-tail, odd, one short of and one past a vector, and
/// large enough for the grid-stride loop to wrap.
pub const ELEMENTWISE_LENGTHS: &[usize] = &[1, 3, 7, 8, 9, 1000, 4097, (1 << 20) + 3, 10_000_019];

/// One kernel at one size against its reference.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub kernel: &'static str,
    pub len: usize,
    pub comparison: Comparison,
    /// Largest relative error the kernel's precision allows.
    pub bound: f64,
}

impl CheckReport {
    pub fn passed(&self) -> bool {
        self.comparison.passes(self.bound)
    }

    pub fn table(reports: &[CheckReport]) -> String {
        let mut out = format!("{:<12} {:>10} {:>12} {:>10} {:>8}  {}\n", "kernel", "n", "max rel err", "bound", "bad", "result");
        for r in reports {
            out += &format!(
                "{:<12} {:>10} {:>12.3e} {:>10.1e} {:>8}  {}\n",
                r.kernel,
                r.len,
                r.comparison.max_rel_error,
                r.bound,
                r.comparison.not_finite,
                if r.passed() { "ok" } else { "FAIL" }
            );
        }
        out
    }
}

/// Every kernel at every checked size.
pub fn all(gpu: &Gpu, seed: u64) -> Result<Vec<CheckReport>> {
    let mut reports = Vec::new();
    for (i, &len) in ELEMENTWISE_LENGTHS.iter().enumerate() {
        let seed = seed.wrapping_add(i as u64 * 3);
        reports.push(axpy_f32(gpu, len, seed)?);
        reports.push(axpy_bf16(gpu, len, seed + 1)?);
        reports.push(exp2_f32(gpu, len, seed + 2)?);
    }
    Ok(reports)
}

pub fn axpy_f32(gpu: &Gpu, len: usize, seed: u64) -> Result<CheckReport> {
    let alpha = 1.5f32;
    let x = reference::randn(len, 1.0, seed);
    let y = reference::randn(len, 1.0, seed ^ 0x9e37_79b9);
    let stream = gpu.stream();
    let x_dev = stream.clone_htod(&x)?;
    let mut y_dev = stream.clone_htod(&y)?;
    elementwise::axpy_f32(gpu, alpha, &x_dev, &mut y_dev)?;
    let out = stream.clone_dtoh(&y_dev)?;
    let want = reference::axpy(alpha as f64, &widen(&x), &widen(&y));
    // f32 fma or mul+add: within two f32 roundings of the magnitude.
    let bound = 2.0 * f32::EPSILON as f64;
    Ok(CheckReport { kernel: "axpy_f32", len, comparison: Comparison::of(out.iter().map(|&v| v as f64), want), bound })
}

pub fn axpy_bf16(gpu: &Gpu, len: usize, seed: u64) -> Result<CheckReport> {
    let alpha = 1.5f32;
    let x = reference::to_bf16(&reference::randn(len, 1.0, seed));
    let y = reference::to_bf16(&reference::randn(len, 1.0, seed ^ 0x9e37_79b9));
    let stream = gpu.stream();
    let x_dev = stream.clone_htod(&x)?;
    let mut y_dev = stream.clone_htod(&y)?;
    elementwise::axpy_bf16(gpu, alpha, &x_dev, &mut y_dev)?;
    let out = stream.clone_dtoh(&y_dev)?;
    let want = reference::axpy(alpha as f64, &widen_bf16(&x), &widen_bf16(&y));
    // One rounding to bf16 (8 significant bits): half an ulp, 2^-8 relative, plus f32 arithmetic.
    let bound = 2f64.powi(-8) + 4.0 * f32::EPSILON as f64;
    Ok(CheckReport { kernel: "axpy_bf16", len, comparison: Comparison::of(out.iter().map(|v| v.to_f64()), want), bound })
}

pub fn exp2_f32(gpu: &Gpu, len: usize, seed: u64) -> Result<CheckReport> {
    // Spread over [-100, 100] so results stay normal: ex2.approx.ftz flushes subnormals.
    let x: Vec<f32> = reference::randn(len, 30.0, seed).into_iter().map(|v| v.clamp(-100.0, 100.0)).collect();
    let stream = gpu.stream();
    let x_dev = stream.clone_htod(&x)?;
    let mut y_dev = stream.clone_htod(&vec![POISON_F32; len])?;
    elementwise::exp2_f32(gpu, &x_dev, &mut y_dev)?;
    let out = stream.clone_dtoh(&y_dev)?;
    let want = reference::exp2(&widen(&x));
    // PTX ISA: ex2.approx.f32 has a maximum relative error of 2^-22 over the normal range; allow rounding to f32.
    let bound = 2f64.powi(-22) + f32::EPSILON as f64;
    let comparison = Comparison::of(out.iter().map(|&v| v as f64), want.into_iter().map(|w| (w, w)));
    Ok(CheckReport { kernel: "exp2_f32", len, comparison, bound })
}

fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

fn widen_bf16(v: &[bf16]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}
