//! The small kernels around Newton-Schulz (host/src/ops/newton_schulz.rs) on stacks of matrices, each matrix
//! `len` 16-bit elements (raw bits) in one contiguous block, blockIdx.y the matrix: the squared Frobenius norm, a
//! scaled conversion between bf16 and f16 (the normalization X / (‖X‖_F + ε) in f32), and adding a multiple of the
//! identity to square matrices. Memory-bound and off the GEMMs' path: plain grid-stride loops over scalars.

use crate::arch::atomic::red_relaxed_gpu_add_f32;
use crate::arch::convert::{bf16_to_f32, f16_to_f32, pack_bf16x2, pack_f16x2};
use crate::arch::sreg::{block_dim_x, block_idx_x, block_idx_y, grid_dim_x, lane_id, thread_idx_x};
use crate::arch::warp::shfl_xor;

/// A 16-bit storage type.
trait Half {
    fn to_f32(bits: u16) -> f32;
    /// Rounded to nearest even.
    fn from_f32(value: f32) -> u16;
}

struct Bf16;
struct F16;

impl Half for Bf16 {
    #[inline(always)]
    fn to_f32(bits: u16) -> f32 {
        bf16_to_f32(bits)
    }
    #[inline(always)]
    fn from_f32(value: f32) -> u16 {
        pack_bf16x2(value, 0.0) as u16
    }
}

impl Half for F16 {
    #[inline(always)]
    fn to_f32(bits: u16) -> f32 {
        f16_to_f32(bits)
    }
    #[inline(always)]
    fn from_f32(value: f32) -> u16 {
        pack_f16x2(value, 0.0) as u16
    }
}

/// The indices `0 .. len` this thread visits in a grid-stride loop over the x dimension of the grid.
#[inline(always)]
fn strided(len: usize) -> impl Iterator<Item = usize> {
    let start = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    let stride = (grid_dim_x() * block_dim_x()) as usize;
    let mut next = start;
    core::iter::from_fn(move || {
        let index = next;
        next += stride;
        (index < len).then_some(index)
    })
}

/// sums[m] += Σ x² over matrix m's `len` elements, in f32: each thread sums its elements, the warp adds its lanes'
/// sums by shuffles, and lane 0 adds the warp's to the matrix's sum.
#[inline(always)]
unsafe fn sum_squares<T: Half>(x: *const u16, len: usize, sums: *mut f32) {
    let matrix = block_idx_y() as usize;
    let x = unsafe { x.add(matrix * len) };
    let mut sum = 0.0f32;
    for i in strided(len) {
        let value = T::to_f32(unsafe { *x.add(i) });
        sum = core::intrinsics::fmaf32(value, value, sum);
    }
    // Unrolled by hand: a loop over an array of masks would put the array in local memory.
    sum += shfl_xor(sum, 16);
    sum += shfl_xor(sum, 8);
    sum += shfl_xor(sum, 4);
    sum += shfl_xor(sum, 2);
    sum += shfl_xor(sum, 1);
    if lane_id() == 0 {
        unsafe { red_relaxed_gpu_add_f32(sums.add(matrix), sum) };
    }
}

/// y = x · s over each matrix, s = 1 / (√sums[m] + eps), or 1 where `sums` is null (a plain conversion), computed in
/// f32 and rounded to the output type.
#[inline(always)]
unsafe fn scale<I: Half, O: Half>(x: *const u16, y: *mut u16, len: usize, sums: *const f32, eps: f32) {
    let matrix = block_idx_y() as usize;
    let factor = if sums.is_null() {
        1.0
    } else {
        1.0 / (core::intrinsics::sqrtf32(unsafe { *sums.add(matrix) }) + eps)
    };
    let (x, y) = unsafe { (x.add(matrix * len), y.add(matrix * len)) };
    for i in strided(len) {
        unsafe { *y.add(i) = O::from_f32(I::to_f32(*x.add(i)) * factor) };
    }
}

/// d[m][i][i] += value for each n×n matrix m (i over the grid's x dimension).
#[inline(always)]
unsafe fn add_diagonal<T: Half>(d: *mut u16, n: usize, value: f32) {
    let matrix = block_idx_y() as usize;
    let d = unsafe { d.add(matrix * n * n) };
    for i in strided(n) {
        let at = unsafe { d.add(i * n + i) };
        unsafe { *at = T::from_f32(T::to_f32(*at) + value) };
    }
}

macro_rules! sum_squares_kernel {
    ($name:ident, $t:ty) => {
        /// sums[blockIdx.y] += the squared Frobenius norm of matrix blockIdx.y ([`sum_squares`]).
        ///
        /// # Safety
        /// `x` holds gridDim.y matrices of `len` elements; `sums` gridDim.y f32, 4-byte aligned.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(x: *const u16, len: usize, sums: *mut f32) {
            unsafe { sum_squares::<$t>(x, len, sums) }
        }
    };
}

macro_rules! scale_kernel {
    ($name:ident, $input:ty, $output:ty) => {
        /// y = x / (‖x‖_F + eps) per matrix, or y = x converted when `sums` is null ([`scale`]).
        ///
        /// # Safety
        /// `x` and `y` hold gridDim.y matrices of `len` elements each and share no byte; `sums` is null or holds
        /// gridDim.y f32.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(x: *const u16, y: *mut u16, len: usize, sums: *const f32, eps: f32) {
            unsafe { scale::<$input, $output>(x, y, len, sums, eps) }
        }
    };
}

macro_rules! add_diagonal_kernel {
    ($name:ident, $t:ty) => {
        /// d[m] += value · I for each n×n matrix m = blockIdx.y ([`add_diagonal`]).
        ///
        /// # Safety
        /// `d` holds gridDim.y matrices of n×n elements.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(d: *mut u16, n: usize, value: f32) {
            unsafe { add_diagonal::<$t>(d, n, value) }
        }
    };
}

sum_squares_kernel!(sum_squares_bf16, Bf16);
sum_squares_kernel!(sum_squares_f16, F16);
scale_kernel!(scale_bf16_to_bf16, Bf16, Bf16);
scale_kernel!(scale_bf16_to_f16, Bf16, F16);
scale_kernel!(scale_f16_to_f16, F16, F16);
scale_kernel!(scale_f16_to_bf16, F16, Bf16);
add_diagonal_kernel!(add_diagonal_bf16, Bf16);
add_diagonal_kernel!(add_diagonal_f16, F16);
