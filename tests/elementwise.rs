//! The elementwise kernels on the GPU against float64 references, and argument checks before launch.

use cudarc::driver::CudaSlice;
use oxtile::ops::elementwise;
use oxtile::reference::fresh_seed;
use oxtile::verify::{self, ELEMENTWISE_LENGTHS};
use oxtile::{Error, Gpu};

fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
}

fn assert_all_pass(check: impl Fn(&Gpu, usize, u64) -> oxtile::Result<verify::CheckReport>) {
    let gpu = gpu();
    let seed = fresh_seed();
    let reports: Vec<_> = ELEMENTWISE_LENGTHS.iter().map(|&len| check(&gpu, len, seed + len as u64).unwrap()).collect();
    let table = verify::CheckReport::table(&reports);
    assert!(reports.iter().all(|r| r.passed()), "seed {seed}\n{table}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn axpy_f32_matches_reference() {
    assert_all_pass(verify::axpy_f32);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn axpy_bf16_matches_reference() {
    assert_all_pass(verify::axpy_bf16);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exp2_f32_matches_reference_and_writes_every_element() {
    assert_all_pass(verify::exp2_f32);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn misaligned_and_mismatched_buffers_are_rejected_before_launch() {
    let gpu = gpu();
    let x: CudaSlice<f32> = gpu.stream().clone_htod(&[1.0f32; 64]).unwrap();
    let mut y: CudaSlice<f32> = gpu.stream().clone_htod(&[2.0f32; 64]).unwrap();
    let x_off = x.slice(1..33);
    let mut y_view = y.slice_mut(0..32);
    let err = elementwise::axpy_f32(&gpu, 1.0, &x_off, &mut y_view).unwrap_err();
    assert!(matches!(err, Error::BadArgument { .. }), "{err}");
    assert!(err.to_string().contains("aligned"), "{err}");

    let x_short = x.slice(0..16);
    let err = elementwise::axpy_f32(&gpu, 1.0, &x_short, &mut y).unwrap_err();
    assert!(err.to_string().contains("16 elements, expected 64"), "{err}");

    // Nothing was launched: y still holds its input.
    assert_eq!(gpu.stream().clone_dtoh(&y).unwrap(), vec![2.0f32; 64]);
}

/// Runs everywhere: without a driver the error is typed, with one the GPU opens.
#[test]
fn opening_a_gpu_fails_with_a_typed_error_or_succeeds() {
    let driver_present = unsafe { cudarc::driver::sys::is_culib_present() };
    match Gpu::new(0) {
        Ok(gpu) => assert!(driver_present && gpu.sm_count() > 0),
        Err(Error::NoDriver(_)) => assert!(!driver_present),
        Err(Error::NoGpu(_)) => assert!(driver_present),
        Err(other) => panic!("unexpected error kind: {other}"),
    }
}
