//! Memory-bound elementwise kernels: 16-byte loads and stores, a grid-stride loop, a scalar tail.
//!
//! Buffers must be 16-byte aligned (the host checks); any length works, the last `n % lanes` elements
//! go through the scalar path.

use crate::arch::convert::{bf16_to_f32, pack_bf16x2};
use crate::arch::mufu::ex2_approx;

/// a·b + c with one rounding (FFMA): rustc does not contract `a * b + c` by itself.
#[inline(always)]
fn fma(a: f32, b: f32, c: f32) -> f32 {
    core::intrinsics::fmaf32(a, b, c)
}
use crate::arch::sreg::{global_thread_idx_x, grid_stride};

/// 16 bytes, so one `ld.global.v4` moves it.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Vec16([u32; 4]);

/// Vector part then scalar tail of an elementwise map over `n` elements of `lanes` per 16 bytes.
/// The tail is shorter than `lanes`, so the first few threads of the grid take one element each.
#[inline(always)]
fn for_each_vector_then_tail(n: usize, lanes: usize, mut vector: impl FnMut(usize), scalar: impl FnOnce(usize)) {
    let vectors = n / lanes;
    for i in grid_stride(vectors) {
        vector(i);
    }
    let tail_idx = vectors * lanes + global_thread_idx_x();
    if tail_idx < n {
        scalar(tail_idx);
    }
}

/// y ← alpha·x + y over `n` f32.
///
/// # Safety
/// `x` and `y` point to `n` elements each, 16-byte aligned; `y` is not aliased by another thread's `x`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn axpy_f32(n: usize, alpha: f32, x: *const f32, y: *mut f32) {
    for_each_vector_then_tail(
        n,
        4,
        |i| unsafe {
            let xv = *(x as *const Vec16).add(i);
            let mut yv = *(y as *const Vec16).add(i);
            for k in 0..4 {
                yv.0[k] = fma(alpha, f32::from_bits(xv.0[k]), f32::from_bits(yv.0[k])).to_bits();
            }
            *(y as *mut Vec16).add(i) = yv;
        },
        |i| unsafe { *y.add(i) = fma(alpha, *x.add(i), *y.add(i)) },
    );
}

/// y ← alpha·x + y over `n` bf16 (as raw `u16` bits), computed in f32 and rounded to nearest even.
///
/// # Safety
/// As [`axpy_f32`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn axpy_bf16(n: usize, alpha: f32, x: *const u16, y: *mut u16) {
    let axpy2 = |x2: u32, y2: u32| {
        let lo = fma(alpha, bf16_to_f32(x2 as u16), bf16_to_f32(y2 as u16));
        let hi = fma(alpha, bf16_to_f32((x2 >> 16) as u16), bf16_to_f32((y2 >> 16) as u16));
        pack_bf16x2(lo, hi)
    };
    for_each_vector_then_tail(
        n,
        8,
        |i| unsafe {
            let xv = *(x as *const Vec16).add(i);
            let mut yv = *(y as *const Vec16).add(i);
            for k in 0..4 {
                yv.0[k] = axpy2(xv.0[k], yv.0[k]);
            }
            *(y as *mut Vec16).add(i) = yv;
        },
        |i| unsafe { *y.add(i) = axpy2(*x.add(i) as u32, *y.add(i) as u32) as u16 },
    );
}

/// y ← 2^x over `n` f32 through MUFU.EX2 (`ex2.approx.ftz`).
///
/// # Safety
/// `x` and `y` point to `n` elements each, 16-byte aligned.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn exp2_f32(n: usize, x: *const f32, y: *mut f32) {
    for_each_vector_then_tail(
        n,
        4,
        |i| unsafe {
            let xv = *(x as *const Vec16).add(i);
            let mut yv = Vec16([0; 4]);
            for k in 0..4 {
                yv.0[k] = ex2_approx(f32::from_bits(xv.0[k])).to_bits();
            }
            *(y as *mut Vec16).add(i) = yv;
        },
        |i| unsafe { *y.add(i) = ex2_approx(*x.add(i)) },
    );
}
