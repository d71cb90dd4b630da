//! The small kernels around Newton-Schulz (host/src/ops/newton_schulz.rs) on stacks of matrices, each matrix
//! `len` 16-bit elements (raw bits) in one contiguous block, blockIdx.y the matrix: the squared Frobenius norm (in two
//! deterministic steps, no atomics), a scaled conversion between bf16 and f16 (the normalization X / (‖X‖_F + ε) in
//! f32), and adding a multiple of the identity to square matrices. Memory-bound and off the GEMMs' path: plain grid-stride loops over scalars.

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

/// The sum of a value over the warp's 32 lanes, by shuffles in a fixed order (the same bits every run), in every lane.
#[inline(always)]
fn warp_sum(mut sum: f32) -> f32 {
    // Unrolled by hand: a loop over an array of masks would put the array in local memory.
    sum += shfl_xor(sum, 16);
    sum += shfl_xor(sum, 8);
    sum += shfl_xor(sum, 4);
    sum += shfl_xor(sum, 2);
    sum += shfl_xor(sum, 1);
    sum
}

/// Σ x² over matrix m's `len` elements, in f32, in two deterministic steps (no atomics, so the norm, and all that
/// follows from it, has the same bits every run): here each thread sums its elements of a grid-stride loop, the warp
/// adds its lanes' sums, and lane 0 writes the warp's sum to `partials[m · warps + w]` (`warps` = the grid's warps
/// along x, w this warp's index among them); [`sum_partials`] adds them in order.
#[inline(always)]
unsafe fn sum_squares<T: Half>(x: *const u16, len: usize, partials: *mut f32) {
    let matrix = block_idx_y() as usize;
    let x = unsafe { x.add(matrix * len) };
    let mut sum = 0.0f32;
    for i in strided(len) {
        let value = T::to_f32(unsafe { *x.add(i) });
        sum = core::intrinsics::fmaf32(value, value, sum);
    }
    let sum = warp_sum(sum);
    let warps = (grid_dim_x() * block_dim_x() / 32) as usize;
    let warp = ((block_idx_x() * block_dim_x() + thread_idx_x()) / 32) as usize;
    if lane_id() == 0 {
        unsafe { *partials.add(matrix * warps + warp) = sum };
    }
}

/// sums[m] = Σ partials[m · count .. (m + 1) · count] for matrix m = blockIdx.y, by one warp: lane l adds the
/// partials l, l + 32, ... in order, then the warp adds its lanes' sums ([`warp_sum`]).
#[inline(always)]
unsafe fn sum_partials(partials: *const f32, count: usize, sums: *mut f32) {
    let matrix = block_idx_y() as usize;
    let partials = unsafe { partials.add(matrix * count) };
    let mut sum = 0.0f32;
    let mut i = lane_id() as usize;
    while i < count {
        sum += unsafe { *partials.add(i) };
        i += 32;
    }
    let sum = warp_sum(sum);
    if lane_id() == 0 {
        unsafe { *sums.add(matrix) = sum };
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
        /// Each warp's share of the squared Frobenius norm of matrix blockIdx.y into `partials` ([`sum_squares`]).
        ///
        /// # Safety
        /// `x` holds gridDim.y matrices of `len` elements; `partials` gridDim.y × (the grid's warps along x) f32.
        /// blockDim.x is a multiple of 32.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(x: *const u16, len: usize, partials: *mut f32) {
            unsafe { sum_squares::<$t>(x, len, partials) }
        }
    };
}

/// sums[blockIdx.y] = the sum of that matrix's `count` partials ([`sum_partials`]), one warp per matrix.
///
/// # Safety
/// `partials` holds gridDim.y × `count` f32, `sums` gridDim.y; blockDim.x is 32.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn sum_partials_f32(partials: *const f32, count: usize, sums: *mut f32) {
    unsafe { sum_partials(partials, count, sums) }
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
