//! The kernels of FA4's software exp2 ([`oxtile_device::softmax::exp2`]) for the tests and the microbenchmark:
//! [`exp2_poly_f32`] maps a buffer (accuracy), the `exp2_throughput_*` kernels keep 32 values per thread in
//! registers and apply exp2 to them `iters` times (exponential throughput, not memory).

use oxtile_abi::exp2::THROUGHPUT_VALUES;
use seq_macro::seq;

use crate::arch::sreg::{global_thread_idx_x, grid_stride};
use crate::softmax::exp2::{exp2_mixed, exp2_poly};

/// y ← 2^x over `n` f32 by [`exp2_poly`] alone: the accuracy test's kernel.
///
/// # Safety
/// `x` and `y` point to `n` elements each.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn exp2_poly_f32(n: usize, x: *const f32, y: *mut f32) {
    for i in grid_stride(n) {
        unsafe { *y.add(i) = exp2_poly(*x.add(i)) };
    }
}

const VALUES: usize = THROUGHPUT_VALUES as usize;
// The `seq!` loops below spell the count out.
const _: () = assert!(VALUES == 32);

/// The throughput loop: 32 values in registers, `iters` times v ← 2^(v − bias) (the subtraction stands for the
/// softmax's max subtraction, and keeps the compiler from folding anything), then the thread's sum to `out`.
/// With bias ≥ 1 the map is a contraction, so every mode converges to the same fixed point and the sums agree
/// to within the polynomial's error.
#[inline(always)]
fn throughput<const NUM: usize, const DEN: usize>(iters: u32, bias: f32, out: *mut f32) {
    let thread = global_thread_idx_x();
    let mut v = [0.0f32; VALUES];
    seq!(I in 0..32 {
        v[I] = oxtile_abi::exp2::throughput_start(thread as u32, I);
    });
    for _ in 0..iters {
        seq!(I in 0..32 {
            v[I] -= bias;
        });
        exp2_mixed::<VALUES, NUM, DEN>(&mut v);
    }
    let mut sum = 0.0f32;
    seq!(I in 0..32 {
        sum += v[I];
    });
    unsafe { *out.add(thread) = sum };
}

/// Exponential throughput, MUFU.EX2 only. Each thread applies 32 × `iters` exponentials and writes one sum.
///
/// # Safety
/// `out` holds one f32 per thread of the grid (1-D grid, any block size).
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn exp2_throughput_mufu(iters: u32, bias: f32, out: *mut f32) {
    throughput::<0, 1>(iters, bias, out);
}

/// Exponential throughput, [`exp2_poly`] only.
///
/// # Safety
/// As [`exp2_throughput_mufu`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn exp2_throughput_poly(iters: u32, bias: f32, out: *mut f32) {
    throughput::<1, 1>(iters, bias, out);
}

/// Exponential throughput, 1 of every 4 by the polynomial, the rest by MUFU.EX2.
///
/// # Safety
/// As [`exp2_throughput_mufu`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn exp2_throughput_mixed_1_4(iters: u32, bias: f32, out: *mut f32) {
    throughput::<1, 4>(iters, bias, out);
}

/// Exponential throughput, 3 of every 8 by the polynomial: the issue-rate model's best split (docs/perf-notes.md).
///
/// # Safety
/// As [`exp2_throughput_mufu`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn exp2_throughput_mixed_3_8(iters: u32, bias: f32, out: *mut f32) {
    throughput::<3, 8>(iters, bias, out);
}

/// Exponential throughput, half by the polynomial.
///
/// # Safety
/// As [`exp2_throughput_mufu`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn exp2_throughput_mixed_1_2(iters: u32, bias: f32, out: *mut f32) {
    throughput::<1, 2>(iters, bias, out);
}
