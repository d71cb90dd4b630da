//! The small kernels around Newton-Schulz (host/src/ops/newton_schulz.rs) on stacks of matrices, each matrix
//! `len` 16-bit elements (raw bits) in one contiguous block, blockIdx.y the matrix: the squared Frobenius norm (in two
//! deterministic steps, no atomics) and a scaled conversion between bf16 and f16 (the normalization X / (‖X‖_F + ε)
//! in f32). Memory-bound: grid-stride loops that move eight
//! elements (16 bytes) per load and store where the matrices allow it, each thread's sum reduced over its block.

use crate::arch::barrier;
use crate::arch::convert::{bf16_to_f32, f16_to_f32, pack_bf16x2, pack_f16x2};
use crate::arch::smem;
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

/// Eight 16-bit elements as one 16-byte load or store (`ld.global.v4.u32`), each word two elements, the lower first.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Eight([u32; 4]);

/// Whether a matrix of `len` elements at `x` and at `y` can be moved eight elements at a time: `len` a multiple
/// of 8 (so every matrix of a stack starts 16 bytes after the previous one's start) and each base 16-byte aligned.
#[inline(always)]
fn by_eights(len: usize, x: usize, y: usize) -> bool {
    len.is_multiple_of(8) && (x | y).is_multiple_of(16)
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

/// The sum of a value over the block's threads in a fixed order (the same bits every run), in thread 0 (the other
/// threads get their warp's share): each warp adds its lanes' values ([`warp_sum`]), lane 0 of each puts the warp's
/// sum in shared memory, and thread 0 adds those in warp order. Needs one f32 of dynamic shared memory per warp.
///
/// # Safety
/// Every thread of the block calls it (it holds a block barrier); blockDim.x is a multiple of 32.
#[inline(always)]
unsafe fn block_sum(value: f32) -> f32 {
    let sum = warp_sum(value);
    let base = smem::dynamic_smem_base();
    if lane_id() == 0 {
        unsafe { smem::store_u32(base + 4 * (thread_idx_x() / 32), sum.to_bits()) };
    }
    barrier::sync_threads();
    if thread_idx_x() != 0 {
        return sum;
    }
    let mut total = 0.0f32;
    for warp in 0..block_dim_x() / 32 {
        total += f32::from_bits(unsafe { smem::load_u32(base + 4 * warp) });
    }
    total
}

/// Σ x² over matrix m's `len` elements, in f32, in two deterministic steps (no atomics, so the norm, and all that
/// follows from it, has the same bits every run): here each thread sums its elements of a grid-stride loop (eight at
/// a time where [`by_eights`]), the block adds its threads' sums ([`block_sum`]) and thread 0 writes them to
/// `partials[m · gridDim.x + blockIdx.x]`; [`sum_partials`] adds those in order.
#[inline(always)]
unsafe fn sum_squares<T: Half>(x: *const u16, len: usize, partials: *mut f32) {
    let matrix = block_idx_y() as usize;
    let x = unsafe { x.add(matrix * len) };
    let mut sum = 0.0f32;
    let mut add = |bits: u16| {
        let value = T::to_f32(bits);
        sum = core::intrinsics::fmaf32(value, value, sum);
    };
    if by_eights(len, x as usize, x as usize) {
        let x = x as *const Eight;
        for i in strided(len / 8) {
            let Eight([w0, w1, w2, w3]) = unsafe { *x.add(i) };
            // Word by word, by name: a loop over the array would keep it in local memory.
            add(w0 as u16);
            add((w0 >> 16) as u16);
            add(w1 as u16);
            add((w1 >> 16) as u16);
            add(w2 as u16);
            add((w2 >> 16) as u16);
            add(w3 as u16);
            add((w3 >> 16) as u16);
        }
    } else {
        for i in strided(len) {
            add(unsafe { *x.add(i) });
        }
    }
    let sum = unsafe { block_sum(sum) };
    if thread_idx_x() == 0 {
        unsafe { *partials.add(matrix * grid_dim_x() as usize + block_idx_x() as usize) = sum };
    }
}

/// sums[m] = Σ partials[m · count .. (m + 1) · count] for matrix m = blockIdx.y, by one block: thread t adds the
/// partials t, t + blockDim.x, ... in order, then the block adds its threads' sums ([`block_sum`]).
#[inline(always)]
unsafe fn sum_partials(partials: *const f32, count: usize, sums: *mut f32) {
    let matrix = block_idx_y() as usize;
    let partials = unsafe { partials.add(matrix * count) };
    let mut sum = 0.0f32;
    let mut i = thread_idx_x() as usize;
    while i < count {
        sum += unsafe { *partials.add(i) };
        i += block_dim_x() as usize;
    }
    let sum = unsafe { block_sum(sum) };
    if thread_idx_x() == 0 {
        unsafe { *sums.add(matrix) = sum };
    }
}

/// y = x · s over each matrix, s = 1 / (√sums[m] + eps), or 1 where `sums` is null (a plain conversion), computed in
/// f32 and rounded to the output type.
#[inline(always)]
unsafe fn scale<I: Half, O: Half>(x: *const u16, y: *mut u16, len: usize, sums: *const f32, eps: f32) {
    let matrix = block_idx_y() as usize;
    let factor =
        if sums.is_null() { 1.0 } else { 1.0 / (core::intrinsics::sqrtf32(unsafe { *sums.add(matrix) }) + eps) };
    let (x, y) = unsafe { (x.add(matrix * len), y.add(matrix * len)) };
    let convert = |bits: u16| O::from_f32(I::to_f32(bits) * factor);
    if by_eights(len, x as usize, y as usize) {
        let (x, y) = (x as *const Eight, y as *mut Eight);
        for i in strided(len / 8) {
            let Eight(words) = unsafe { *x.add(i) };
            let words = words.map(|word| convert(word as u16) as u32 | (convert((word >> 16) as u16) as u32) << 16);
            unsafe { *y.add(i) = Eight(words) };
        }
    } else {
        for i in strided(len) {
            unsafe { *y.add(i) = convert(*x.add(i)) };
        }
    }
}

macro_rules! sum_squares_kernel {
    ($name:ident, $t:ty) => {
        /// Each block's share of the squared Frobenius norm of matrix blockIdx.y into `partials` ([`sum_squares`]).
        ///
        /// # Safety
        /// `x` holds gridDim.y matrices of `len` elements; `partials` gridDim.y × gridDim.x f32. blockDim.x is a
        /// multiple of 32 and the block has 4 bytes of dynamic shared memory per warp.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(x: *const u16, len: usize, partials: *mut f32) {
            unsafe { sum_squares::<$t>(x, len, partials) }
        }
    };
}

/// sums[blockIdx.y] = the sum of that matrix's `count` partials ([`sum_partials`]), one block per matrix.
///
/// # Safety
/// `partials` holds gridDim.y × `count` f32, `sums` gridDim.y; blockDim.x is a multiple of 32 and the block has 4
/// bytes of dynamic shared memory per warp.
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

sum_squares_kernel!(sum_squares_bf16, Bf16);
sum_squares_kernel!(sum_squares_f16, F16);
scale_kernel!(scale_bf16_to_bf16, Bf16, Bf16);
scale_kernel!(scale_bf16_to_f16, Bf16, F16);
scale_kernel!(scale_f16_to_f16, F16, F16);
scale_kernel!(scale_f16_to_bf16, F16, Bf16);
