//! The plain attention reference kernel: one warp per query row, f32 arithmetic throughout, nothing shared
//! between warps. The tests compare the Hopper kernel with it on shapes too large for the float64 CPU reference.
//!
//! Each warp walks the keys its row may see in order, keeping the online softmax state (running maximum `m` in
//! log2 units, running sum `l`, unnormalized output `acc`) exactly as the textbook recurrence writes it. The 32
//! lanes split the head dimension: lane `t` owns the `D / 32` consecutive elements from `t · D / 32` of q, of
//! every key and value row, and of the output row. A score is the lanes' partial dot products summed by a
//! butterfly (every lane ends with the same bits: each level adds the same two values, in either order), so the
//! softmax state is identical in every lane and every branch on it is uniform. Keys go four at a time so four
//! independent loads and reductions are in flight before the state update needs them.
//!
//! Outputs are f32 and contiguous: O [batch, seq_q, heads_q, head_dim], LSE [batch, heads_q, seq_q] (natural
//! log), and optionally `o_magnitude` (same layout as O): Σ_j p_j·|v_jd|, the magnitude the rounding errors of any
//! attention kernel's output element scale with, which the tests use to size their bounds. A row that sees no
//! key gets O = 0, o_magnitude = 0 and LSE = −∞.
//!
//! Kernels `attn_reference_{bf16,f16}_d{64,128,256}`, any block size that is a multiple of 32 (one row per warp);
//! the grid covers batch · heads_q · seq_q rows.

use crate::arch::mufu::{ex2_approx, lg2_approx};
use crate::arch::sreg::{block_dim_x, block_idx_x, lane_id, thread_idx_x};
use crate::rows::{Bf16, Element, F16, Strides, load_lane, warp_sum};

/// Keys a warp scores before it updates its softmax state.
const KEYS_PER_STEP: usize = 4;

/// ln 2: LSE = (m + log2 l) · ln 2 turns the log2-unit state into a natural log.
const LN_2: f32 = core::f32::consts::LN_2;

/// One row's online softmax state, this lane's share of it.
struct RowState<const P: usize> {
    /// Largest score so far, log2 units; −∞ before the first key.
    max: f32,
    /// Σ 2^(score − max).
    sum: f32,
    /// Σ 2^(score − max) · v, this lane's elements.
    acc: [f32; P],
    /// Σ 2^(score − max) · |v|.
    magnitude: [f32; P],
}

/// The operands of one row: where its q, keys and values live, and the score scale.
struct RowInputs<const P: usize> {
    /// This lane's q elements.
    q: [f32; P],
    /// Key row 0 of this (batch, kv head), and the element stride from one key row to the next.
    k: *const u16,
    k_stride_seq: usize,
    v: *const u16,
    v_stride_seq: usize,
    scale_log2: f32,
}

/// Keys `first .. first + KEYS` into the row's state: their scores, one rescale to the largest, their terms.
#[inline(always)]
unsafe fn step<E: Element, const P: usize, const KEYS: usize>(
    state: &mut RowState<P>,
    inputs: &RowInputs<P>,
    first: usize,
) {
    let mut scores = [0.0f32; KEYS];
    let mut t = 0;
    while t < KEYS {
        let key = unsafe { load_lane::<E, P>(inputs.k.add((first + t) * inputs.k_stride_seq)) };
        let mut partial = 0.0f32;
        let mut e = 0;
        while e < P {
            partial = core::intrinsics::fmaf32(inputs.q[e], key[e], partial);
            e += 1;
        }
        scores[t] = partial;
        t += 1;
    }
    let mut step_max = f32::NEG_INFINITY;
    t = 0;
    while t < KEYS {
        scores[t] = warp_sum(scores[t]) * inputs.scale_log2;
        step_max = step_max.max(scores[t]);
        t += 1;
    }
    // Uniform across the warp: every lane holds the same scores and maximum.
    if step_max > state.max {
        // 2^(−∞) = 0 on the first key: the empty state stays zero.
        let correction = ex2_approx(state.max - step_max);
        state.max = step_max;
        state.sum *= correction;
        let mut e = 0;
        while e < P {
            state.acc[e] *= correction;
            state.magnitude[e] *= correction;
            e += 1;
        }
    }
    t = 0;
    while t < KEYS {
        let p = ex2_approx(scores[t] - state.max);
        state.sum += p;
        let value = unsafe { load_lane::<E, P>(inputs.v.add((first + t) * inputs.v_stride_seq)) };
        let mut e = 0;
        while e < P {
            state.acc[e] = core::intrinsics::fmaf32(p, value[e], state.acc[e]);
            state.magnitude[e] = core::intrinsics::fmaf32(p, value[e].abs(), state.magnitude[e]);
            e += 1;
        }
        t += 1;
    }
}

/// The whole kernel for element type `E` and head dim `32 · P`.
///
/// # Safety
/// As the exported kernels.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn attention_reference<E: Element, const P: usize>(
    q: *const u16,
    k: *const u16,
    v: *const u16,
    o: *mut f32,
    o_magnitude: *mut f32,
    lse: *mut f32,
    batch: u32,
    seq_q: u32,
    seq_k: u32,
    heads_q: u32,
    group: u32,
    q_strides: Strides,
    k_strides: Strides,
    v_strides: Strides,
    scale_log2: f32,
    causal: u32,
) {
    let warps_per_block = (block_dim_x() / 32) as usize;
    let row = block_idx_x() as usize * warps_per_block + (thread_idx_x() / 32) as usize;
    let (seq_q, seq_k, heads_q) = (seq_q as usize, seq_k as usize, heads_q as usize);
    if row >= batch as usize * heads_q * seq_q {
        return;
    }
    // Consecutive warps take consecutive query rows of one (batch, head), so they read the same keys.
    let i = row % seq_q;
    let head = (row / seq_q) % heads_q;
    let b = row / (seq_q * heads_q);
    let kv_head = head / group as usize;
    // Bottom-right causal: row i sees keys j ≤ i + seq_k − seq_q, none when that is negative.
    let visible =
        if causal != 0 { (i as i64 + seq_k as i64 - seq_q as i64 + 1).clamp(0, seq_k as i64) as usize } else { seq_k };

    let inputs = RowInputs::<P> {
        q: unsafe { load_lane::<E, P>(q.add(q_strides.offset(b, i, head))) },
        k: unsafe { k.add(k_strides.offset(b, 0, kv_head)) },
        k_stride_seq: k_strides.seq,
        v: unsafe { v.add(v_strides.offset(b, 0, kv_head)) },
        v_stride_seq: v_strides.seq,
        scale_log2,
    };
    let mut state = RowState::<P> { max: f32::NEG_INFINITY, sum: 0.0, acc: [0.0; P], magnitude: [0.0; P] };
    let mut key = 0;
    while key + KEYS_PER_STEP <= visible {
        unsafe { step::<E, P, KEYS_PER_STEP>(&mut state, &inputs, key) };
        key += KEYS_PER_STEP;
    }
    while key < visible {
        unsafe { step::<E, P, 1>(&mut state, &inputs, key) };
        key += 1;
    }

    // No key: O = 0 and LSE = −∞ (the sum is 0; 1/0 would make NaN of the zero accumulator).
    let inverse = if visible == 0 { 0.0 } else { 1.0 / state.sum };
    let out = ((b * seq_q + i) * heads_q + head) * 32 * P + lane_id() as usize * P;
    let mut e = 0;
    while e < P {
        unsafe { o.add(out + e).write(state.acc[e] * inverse) };
        if !o_magnitude.is_null() {
            unsafe { o_magnitude.add(out + e).write(state.magnitude[e] * inverse) };
        }
        e += 1;
    }
    if lane_id() == 0 {
        // The sum is at least 1 (the maximum's own term is 2^0), so lg2.approx is in its accurate range.
        let row_lse = if visible == 0 { f32::NEG_INFINITY } else { (state.max + lg2_approx(state.sum)) * LN_2 };
        unsafe { lse.add((b * heads_q + head) * seq_q + i).write(row_lse) };
    }
}

/// Declares one exported instantiation.
macro_rules! reference_kernel {
    ($name:ident, $element:ty, $per_lane:literal) => {
        /// See the module documentation. Strides are in elements; `group` = heads_q / heads_kv.
        ///
        /// # Safety
        /// q, k and v hold every element their shape and strides address, 16-byte aligned with strides that
        /// are multiples of 8 elements; o (and o_magnitude unless null) hold batch · seq_q · heads_q · head_dim f32,
        /// lse batch · heads_q · seq_q; the outputs overlap nothing.
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(
            q: *const u16,
            k: *const u16,
            v: *const u16,
            o: *mut f32,
            o_magnitude: *mut f32,
            lse: *mut f32,
            batch: u32,
            seq_q: u32,
            seq_k: u32,
            heads_q: u32,
            group: u32,
            q_stride_batch: u64,
            q_stride_seq: u64,
            q_stride_head: u64,
            k_stride_batch: u64,
            k_stride_seq: u64,
            k_stride_head: u64,
            v_stride_batch: u64,
            v_stride_seq: u64,
            v_stride_head: u64,
            scale_log2: f32,
            causal: u32,
        ) {
            let strides = Strides::new;
            unsafe {
                attention_reference::<$element, $per_lane>(
                    q,
                    k,
                    v,
                    o,
                    o_magnitude,
                    lse,
                    batch,
                    seq_q,
                    seq_k,
                    heads_q,
                    group,
                    strides(q_stride_batch, q_stride_seq, q_stride_head),
                    strides(k_stride_batch, k_stride_seq, k_stride_head),
                    strides(v_stride_batch, v_stride_seq, v_stride_head),
                    scale_log2,
                    causal,
                )
            }
        }
    };
}

reference_kernel!(attn_reference_bf16_d128, Bf16, 4);
reference_kernel!(attn_reference_f16_d128, F16, 4);
reference_kernel!(attn_reference_bf16_d64, Bf16, 2);
reference_kernel!(attn_reference_f16_d64, F16, 2);
reference_kernel!(attn_reference_bf16_d256, Bf16, 8);
reference_kernel!(attn_reference_f16_d256, F16, 8);
