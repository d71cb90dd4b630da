//! The attention softmax's software exp2 on the GPU: the polynomial kernel against float64 2^x and against its
//! bit-exact CPU mirror, and the throughput kernels' sums against float64 iterations (so the benchmark computes
//! real values). The CPU proofs of the error bound are host/src/exp2.rs's unit tests.

use cudarc::driver::CudaSlice;
use oxtile::exp2::{self, REL_ERROR_BOUND};
use oxtile::ops::softmax::{self, Exp2Mode, Exp2Throughput, THROUGHPUT_BIAS};
use oxtile::reference::{POISON_F32, fresh_seed};
use oxtile::verify::{self, CheckReport, ELEMENTWISE_LENGTHS};
use oxtile::{Error, Gpu};
use rand::{Rng, SeedableRng};

fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
}

/// exp2_poly_f32 over `x` (output poisoned first).
fn run_poly(gpu: &Gpu, x: &[f32]) -> Vec<f32> {
    let stream = gpu.stream();
    let x_dev = stream.clone_htod(x).unwrap();
    let mut y_dev = stream.clone_htod(&vec![POISON_F32; x.len()]).unwrap();
    softmax::exp2_poly_f32(gpu, &x_dev, &mut y_dev).unwrap();
    stream.clone_dtoh(&y_dev).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exp2_poly_matches_float64_at_every_length() {
    let gpu = gpu();
    let seed = fresh_seed();
    let reports: Vec<_> =
        ELEMENTWISE_LENGTHS.iter().map(|&len| verify::exp2_poly_f32(&gpu, len, seed + len as u64).unwrap()).collect();
    let table = CheckReport::table(&reports);
    assert!(reports.iter().all(|r| r.passed()), "seed {seed}\n{table}");
}

/// A dense sweep of [−126, 0] (8192 points per unit interval, every f32 near 0, the integers, random inputs):
/// within 2^-10 of float64 and bit-identical to the CPU mirror.
#[test]
#[ignore = "needs a CUDA GPU"]
fn exp2_poly_dense_sweep_is_accurate_and_bit_exact() {
    let gpu = gpu();
    let seed = fresh_seed();
    let mut x: Vec<f32> = (-126 * 8192..=0).map(|k| k as f32 / 8192.0).collect();
    let mut near_zero = -1.0f32;
    while near_zero < -1e-30 {
        x.push(near_zero);
        near_zero = f32::from_bits(near_zero.to_bits() - 4099);
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    x.extend((0..1_000_001).map(|_| rng.random_range(-126.0f32..=0.0)));
    let y = run_poly(&gpu, &x);

    let (mut worst, mut worst_x) = (0.0f64, 0.0f32);
    let mut not_mirror = Vec::new();
    for (&x, &y) in x.iter().zip(&y) {
        let want = (x as f64).exp2();
        let err = if y.is_finite() { (y as f64 - want).abs() / want } else { f64::INFINITY };
        if err > worst {
            (worst, worst_x) = (err, x);
        }
        if y.to_bits() != exp2::exp2_poly(x).to_bits() && not_mirror.len() < 10 {
            not_mirror.push((x, y, exp2::exp2_poly(x)));
        }
    }
    assert!(worst <= REL_ERROR_BOUND, "seed {seed}: max relative error {worst:e} at x = {worst_x}");
    assert!(not_mirror.is_empty(), "seed {seed}: GPU differs from the CPU mirror (x, gpu, cpu): {not_mirror:?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exp2_poly_saturates_like_the_mirror_outside_the_range() {
    let gpu = gpu();
    let x = [-127.0f32, -126.5, -126.0, -200.0, f32::MIN, f32::NEG_INFINITY, f32::NAN, 0.0, -0.0, 1e-6, 5.5, 100.0];
    let y = run_poly(&gpu, &x);
    for (&x, &y) in x.iter().zip(&y) {
        assert_eq!(y.to_bits(), exp2::exp2_poly(x).to_bits(), "x = {x}: gpu {y}, cpu {}", exp2::exp2_poly(x));
    }
    assert_eq!(y[0].to_bits(), 0);
    assert_eq!(y[5].to_bits(), 0);
    assert_eq!(y[7], 1.0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn throughput_kernels_compute_the_same_sums_in_every_mode() {
    let gpu = gpu();
    let iters = 200;
    let mut sums = Vec::new();
    for mode in Exp2Mode::ALL {
        let report = verify::exp2_throughput(&gpu, mode, iters).unwrap();
        assert!(report.passed(), "{}", CheckReport::table(std::slice::from_ref(&report)));
        let kernel = Exp2Throughput::new(&gpu, mode).unwrap();
        let mut out = gpu.stream().clone_htod(&vec![POISON_F32; kernel.threads()]).unwrap();
        kernel.launch(&gpu, iters, THROUGHPUT_BIAS, &mut out).unwrap();
        let out = gpu.stream().clone_dtoh(&out).unwrap();
        sums.push((mode, out.iter().map(|&v| v as f64).sum::<f64>() / out.len() as f64));
    }
    let mufu = sums[0].1;
    for &(mode, sum) in &sums {
        assert!((sum / mufu - 1.0).abs() <= REL_ERROR_BOUND, "{}: mean sum {sum} against MUFU's {mufu}", mode.name());
    }
    // The polynomial really ran: its fixed point differs from MUFU's in the last bits.
    assert_ne!(sums[1].1, mufu, "poly-only sums equal MUFU-only's exactly");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_arguments_are_rejected_before_launch() {
    let gpu = gpu();
    let x: CudaSlice<f32> = gpu.stream().clone_htod(&[0.0f32; 64]).unwrap();
    let mut y: CudaSlice<f32> = gpu.stream().clone_htod(&[2.0f32; 32]).unwrap();
    let err = softmax::exp2_poly_f32(&gpu, &x, &mut y).unwrap_err();
    assert!(err.to_string().contains("64 elements, expected 32"), "{err}");

    let kernel = Exp2Throughput::new(&gpu, Exp2Mode::Poly).unwrap();
    let mut short: CudaSlice<f32> = gpu.stream().alloc_zeros(kernel.threads() - 1).unwrap();
    let err = kernel.launch(&gpu, 1, THROUGHPUT_BIAS, &mut short).unwrap_err();
    assert!(matches!(err, Error::BadArgument { .. }), "{err}");
    let mut out: CudaSlice<f32> = gpu.stream().alloc_zeros(kernel.threads()).unwrap();
    let err = kernel.launch(&gpu, 1, f32::NAN, &mut out).unwrap_err();
    assert!(matches!(err, Error::BadArgument { .. }), "{err}");
    assert!(Exp2Throughput::new(&gpu, Exp2Mode::Mixed { num: 1, den: 3 }).is_err());

    // Nothing was launched: y still holds its input.
    assert_eq!(gpu.stream().clone_dtoh(&y).unwrap(), vec![2.0f32; 32]);
}
