//! Output checks of the benchmarks: how far an output is from the reference output, the bound it must meet, and the
//! poison written before the run so that an element left unwritten shows.
//!
//! Two correct results differ by the rounding of each to the output type (half an ulp of the element each) plus fp32
//! accumulation-order noise, so the bound on max |out − ref| / max |ref| is 2⁻⁶ for bf16 and 2⁻⁹ for f16, each a
//! few ulps. (The largest |ref| rather than each element's: an element-wise relative error would blow up where the
//! sum cancels to near zero, which randn inputs make common.)

use cudarc::driver::{CudaSlice, DevicePtrMut};

use crate::error::Result;
use crate::runtime::Gpu;
use crate::types::Dtype;

impl Dtype {
    /// Largest accepted max-relative difference of a benchmark's output from the reference output (see the module
    /// documentation of [`crate::bench::outputs`]).
    pub fn check_bound(self) -> f64 {
        match self {
            Dtype::Bf16 => 2f64.powi(-6),
            Dtype::F16 => 2f64.powi(-9),
        }
    }
}

/// How far one output is from the reference output.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OutputDiff {
    /// max |out − ref| / max |ref|, over the finite elements of `out`.
    pub max_rel: f64,
    /// ‖out − ref‖₂ / ‖ref‖₂ over the same elements.
    pub norm_rel: f64,
    /// Elements of `out` that are NaN or infinite (the poison included).
    pub not_finite: usize,
    /// Elements of the reference that are NaN or infinite: the comparison means nothing when this is not 0.
    pub reference_not_finite: usize,
}

impl OutputDiff {
    pub fn passes(&self, bound: f64) -> bool {
        self.not_finite == 0 && self.reference_not_finite == 0 && self.max_rel <= bound
    }
}

pub fn compare_outputs(out: &[f32], reference: &[f32]) -> OutputDiff {
    assert_eq!(out.len(), reference.len(), "output lengths");
    let mut diff = OutputDiff::default();
    let (mut max_ref, mut max_err, mut sq_ref, mut sq_err) = (0f64, 0f64, 0f64, 0f64);
    for (&o, &r) in out.iter().zip(reference) {
        let (o, r) = (o as f64, r as f64);
        if !r.is_finite() {
            diff.reference_not_finite += 1;
            continue;
        }
        max_ref = max_ref.max(r.abs());
        sq_ref += r * r;
        if !o.is_finite() {
            diff.not_finite += 1;
            continue;
        }
        max_err = max_err.max((o - r).abs());
        sq_err += (o - r) * (o - r);
    }
    diff.max_rel = max_err / max_ref.max(f64::MIN_POSITIVE);
    diff.norm_rel = (sq_err / sq_ref.max(f64::MIN_POSITIVE)).sqrt();
    diff
}

/// Sets every byte of `buffer` to 0xFF: NaN in bf16, f16 and f32.
pub fn poison<T>(gpu: &Gpu, buffer: &mut CudaSlice<T>) -> Result<()> {
    let stream = gpu.stream();
    let bytes = buffer.len() * std::mem::size_of::<T>();
    let (ptr, _use) = buffer.device_ptr_mut(stream);
    // SAFETY: `ptr` addresses `bytes` bytes of `buffer`, which outlives the memset on this stream.
    unsafe { cudarc::driver::result::memset_d8_async(ptr, 0xFF, bytes, stream.cu_stream()) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_comparison() {
        let reference = [1.0, -4.0, 2.0, 0.0];
        let same = compare_outputs(&reference, &reference);
        assert_eq!(same, OutputDiff::default());
        assert!(same.passes(0.0));
        let diff = compare_outputs(&[1.0, -4.0, 2.0, 0.04], &reference);
        assert!((diff.max_rel - 0.01).abs() < 1e-9, "{diff:?}");
        assert!((diff.norm_rel - 0.04 / 21f64.sqrt()).abs() < 1e-9, "{diff:?}");
        assert!(diff.passes(Dtype::Bf16.check_bound()));
        assert!(!diff.passes(Dtype::F16.check_bound()));
        let poisoned = compare_outputs(&[1.0, f32::NAN, 2.0, 0.0], &reference);
        assert_eq!(poisoned.not_finite, 1);
        assert!(!poisoned.passes(1.0));
        let bad_reference = compare_outputs(&reference, &[1.0, f32::INFINITY, 2.0, 0.0]);
        assert_eq!(bad_reference.reference_not_finite, 1);
        assert!(!bad_reference.passes(1.0));
    }
}
