//! Rows of 16-bit elements as the attention families' plain kernels read them (the forward and backward
//! references, the backward's row kernels): the element types, a BSHD tensor's strides, a lane's share of a row
//! widened to f32, and a warp's sum.

use crate::arch::convert::f16_to_f32;
use crate::arch::sreg::lane_id;
use crate::arch::warp::shfl_xor;

/// Element strides (batch, seq, head) of a BSHD tensor; head_dim is contiguous.
#[derive(Clone, Copy)]
pub struct Strides {
    pub batch: usize,
    pub seq: usize,
    pub head: usize,
}

impl Strides {
    /// From a kernel's (batch, seq, head) stride parameters.
    #[inline(always)]
    pub fn new(batch: u64, seq: u64, head: u64) -> Strides {
        Strides { batch: batch as usize, seq: seq as usize, head: head as usize }
    }

    /// The element offset of (batch, seq, head)'s row.
    #[inline(always)]
    pub fn offset(&self, batch: usize, seq: usize, head: usize) -> usize {
        batch * self.batch + seq * self.seq + head * self.head
    }
}

/// The 16-bit input type: how a pair of elements packed in a u32 (first element in the low half) widens to f32.
pub trait Element {
    fn widen_pair(bits: u32) -> (f32, f32);
}

pub struct Bf16;
pub struct F16;

impl Element for Bf16 {
    /// Exact: a bf16 is the upper half of an f32.
    #[inline(always)]
    fn widen_pair(bits: u32) -> (f32, f32) {
        (f32::from_bits(bits << 16), f32::from_bits(bits & 0xffff_0000))
    }
}

impl Element for F16 {
    /// Exact: f16 values are all representable in f32.
    #[inline(always)]
    fn widen_pair(bits: u32) -> (f32, f32) {
        (f16_to_f32(bits as u16), f16_to_f32((bits >> 16) as u16))
    }
}

/// This lane's `P` consecutive elements of a row, widened. The lane's first element is `P`-aligned and rows
/// start on 16-byte boundaries (the host checks bases and strides), so the u32 loads are aligned.
///
/// # Safety
/// `row` addresses `32 · P` readable 16-bit elements of global memory, 4-byte aligned; `P` is even.
#[inline(always)]
pub unsafe fn load_lane<E: Element, const P: usize>(row: *const u16) -> [f32; P] {
    let words = unsafe { row.add(lane_id() as usize * P) } as *const u32;
    let mut out = [0.0f32; P];
    let mut w = 0;
    while w < P / 2 {
        let (lo, hi) = E::widen_pair(unsafe { words.add(w).read() });
        out[2 * w] = lo;
        out[2 * w + 1] = hi;
        w += 1;
    }
    out
}

/// The sum over the warp of every lane's `value`; all lanes get the same bits.
#[inline(always)]
pub fn warp_sum(mut value: f32) -> f32 {
    let mut mask = 16;
    while mask > 0 {
        value += shfl_xor(value, mask);
        mask /= 2;
    }
    value
}
