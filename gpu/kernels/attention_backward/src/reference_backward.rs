//! The plain attention backward reference kernel: the gradients dQ, dK and dV of the forward in f32 arithmetic,
//! one warp per output row, nothing shared between warps and no atomics. The tests compare fast backward kernels
//! with it on shapes too large for the float64 CPU reference.
//!
//! Inputs are the forward's: q, k, v, its output O and row log-sum-exp LSE (natural log, [batch, heads_q, seq_q];
//! −∞ for a row that sees no key), and the upstream gradient dO (as O), all packed BSHD, 16-bit. With
//! P_ij = exp(scale · q_i·k_j − LSE_i) over the keys row i sees, D_i = dO_i·O_i and dS_ij = P_ij (dO_i·v_j − D_i):
//!
//! - warps `0 .. batch · seq_q · heads_q` each own a query row i: dQ_i = scale · Σ_j dS_ij k_j;
//! - the next `batch · seq_k · heads_kv` warps each own a key row j of a key/value head, and walk the query rows
//!   of every query head that reads it which see key j: dV_j = Σ_i P_ij dO_i, dK_j = scale · Σ_i dS_ij q_i.
//!
//! D is computed from the O given, as a fast kernel's preprocessing does. Lanes split the head dimension as in the
//! forward reference (gpu/kernels/attention, `reference`); dot products are summed by a butterfly, so every lane
//! holds the same P and dS and every branch is uniform. Outputs are f32, packed: dQ as q, dK and dV as k and v.
//!
//! Kernels `attn_bwd_reference_{bf16,f16}_d{64,128,256}`, any block size that is a multiple of 32; the grid covers
//! batch · (seq_q · heads_q + seq_k · heads_kv) warps.

use crate::arch::mufu::ex2_approx;
use crate::arch::sreg::{block_dim_x, block_idx_x, lane_id, thread_idx_x};
use crate::rows::{Bf16, Element, F16, load_lane, warp_sum};

/// log2(e): exp(x) = 2^(x · log2 e).
const LOG2_E: f32 = core::f32::consts::LOG2_E;

/// The problem as both halves of the kernel see it.
#[derive(Clone, Copy)]
struct Shape {
    batch: usize,
    seq_q: usize,
    seq_k: usize,
    heads_q: usize,
    group: usize,
    head_dim: usize,
    /// The softmax scale, and it times log2(e).
    scale: f32,
    scale_log2: f32,
    causal: bool,
}

impl Shape {
    fn heads_kv(&self) -> usize {
        self.heads_q / self.group
    }

    /// Element offset of row `i` of head `head` in a packed [batch, seq, heads, head_dim] tensor.
    fn at(&self, b: usize, i: usize, heads: usize, head: usize, seq: usize) -> usize {
        ((b * seq + i) * heads + head) * self.head_dim
    }

    /// Keys query row `i` sees (bottom-right causal).
    fn visible(&self, i: usize) -> usize {
        if self.causal {
            (i as i64 + self.seq_k as i64 - self.seq_q as i64 + 1).clamp(0, self.seq_k as i64) as usize
        } else {
            self.seq_k
        }
    }

    /// The first query row that sees key `j`.
    fn first_row_seeing(&self, j: usize) -> usize {
        if self.causal { (j as i64 + self.seq_q as i64 - self.seq_k as i64).max(0) as usize } else { 0 }
    }
}

/// The 16-bit inputs.
#[derive(Clone, Copy)]
struct Inputs {
    q: *const u16,
    k: *const u16,
    v: *const u16,
    o: *const u16,
    d_o: *const u16,
    lse: *const f32,
}

/// Σ over the warp of this lane's `a[e] · b[e]`; every lane gets the same bits.
#[inline(always)]
fn dot<const P: usize>(a: &[f32; P], b: &[f32; P]) -> f32 {
    let mut partial = 0.0f32;
    let mut e = 0;
    while e < P {
        partial = core::intrinsics::fmaf32(a[e], b[e], partial);
        e += 1;
    }
    warp_sum(partial)
}

/// `acc += scale · x`, lane-wise.
#[inline(always)]
fn axpy<const P: usize>(acc: &mut [f32; P], scale: f32, x: &[f32; P]) {
    let mut e = 0;
    while e < P {
        acc[e] = core::intrinsics::fmaf32(scale, x[e], acc[e]);
        e += 1;
    }
}

/// Writes this lane's `P` values of a packed f32 row starting at element `row`.
#[inline(always)]
unsafe fn store_lane<const P: usize>(out: *mut f32, row: usize, values: &[f32; P], factor: f32) {
    let first = row + lane_id() as usize * P;
    let mut e = 0;
    while e < P {
        unsafe { out.add(first + e).write(values[e] * factor) };
        e += 1;
    }
}

/// dQ of query row `i` of head `head`, batch `b`.
#[inline(always)]
unsafe fn query_row<E: Element, const P: usize>(s: &Shape, x: &Inputs, dq: *mut f32, b: usize, i: usize, head: usize) {
    let kv_head = head / s.group;
    let row = s.at(b, i, s.heads_q, head, s.seq_q);
    let mut acc = [0.0f32; P];
    let visible = s.visible(i);
    if visible > 0 {
        let q = unsafe { load_lane::<E, P>(x.q.add(row)) };
        let d_o = unsafe { load_lane::<E, P>(x.d_o.add(row)) };
        let o = unsafe { load_lane::<E, P>(x.o.add(row)) };
        let delta = dot(&d_o, &o);
        let lse_log2 = unsafe { x.lse.add((b * s.heads_q + head) * s.seq_q + i).read() } * LOG2_E;
        let mut j = 0;
        while j < visible {
            let key_row = s.at(b, j, s.heads_kv(), kv_head, s.seq_k);
            let k = unsafe { load_lane::<E, P>(x.k.add(key_row)) };
            let v = unsafe { load_lane::<E, P>(x.v.add(key_row)) };
            let p = ex2_approx(dot(&q, &k) * s.scale_log2 - lse_log2);
            let ds = p * (dot(&d_o, &v) - delta);
            axpy(&mut acc, ds, &k);
            j += 1;
        }
    }
    unsafe { store_lane(dq, row, &acc, s.scale) };
}

/// dK and dV of key row `j` of key/value head `kv_head`, batch `b`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn key_row<E: Element, const P: usize>(
    s: &Shape,
    x: &Inputs,
    dk: *mut f32,
    dv: *mut f32,
    b: usize,
    j: usize,
    kv_head: usize,
) {
    let row = s.at(b, j, s.heads_kv(), kv_head, s.seq_k);
    let k = unsafe { load_lane::<E, P>(x.k.add(row)) };
    let v = unsafe { load_lane::<E, P>(x.v.add(row)) };
    let (mut dk_acc, mut dv_acc) = ([0.0f32; P], [0.0f32; P]);
    let mut member = 0;
    while member < s.group {
        let head = kv_head * s.group + member;
        let mut i = s.first_row_seeing(j);
        while i < s.seq_q {
            let query_row = s.at(b, i, s.heads_q, head, s.seq_q);
            let q = unsafe { load_lane::<E, P>(x.q.add(query_row)) };
            let d_o = unsafe { load_lane::<E, P>(x.d_o.add(query_row)) };
            let o = unsafe { load_lane::<E, P>(x.o.add(query_row)) };
            let lse_log2 = unsafe { x.lse.add((b * s.heads_q + head) * s.seq_q + i).read() } * LOG2_E;
            let p = ex2_approx(dot(&q, &k) * s.scale_log2 - lse_log2);
            let ds = p * (dot(&d_o, &v) - dot(&d_o, &o));
            axpy(&mut dv_acc, p, &d_o);
            axpy(&mut dk_acc, ds, &q);
            i += 1;
        }
        member += 1;
    }
    unsafe { store_lane(dv, row, &dv_acc, 1.0) };
    unsafe { store_lane(dk, row, &dk_acc, s.scale) };
}

/// The whole kernel for element type `E` and head dim `32 · P`.
///
/// # Safety
/// As the exported kernels.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn attention_backward_reference<E: Element, const P: usize>(
    x: Inputs,
    dq: *mut f32,
    dk: *mut f32,
    dv: *mut f32,
    s: Shape,
) {
    let warps_per_block = (block_dim_x() / 32) as usize;
    let warp = block_idx_x() as usize * warps_per_block + (thread_idx_x() / 32) as usize;
    let query_rows = s.batch * s.seq_q * s.heads_q;
    if warp < query_rows {
        // Consecutive warps take consecutive query rows of one (batch, head), so they read the same keys.
        let (i, head, b) = (warp % s.seq_q, (warp / s.seq_q) % s.heads_q, warp / (s.seq_q * s.heads_q));
        unsafe { query_row::<E, P>(&s, &x, dq, b, i, head) };
    } else if warp - query_rows < s.batch * s.seq_k * s.heads_kv() {
        let key = warp - query_rows;
        let (j, kv_head, b) = (key % s.seq_k, (key / s.seq_k) % s.heads_kv(), key / (s.seq_k * s.heads_kv()));
        unsafe { key_row::<E, P>(&s, &x, dk, dv, b, j, kv_head) };
    }
}

/// Declares one exported instantiation.
macro_rules! backward_reference_kernel {
    ($name:ident, $element:ty, $per_lane:literal) => {
        /// See the module documentation. `group` = heads_q / heads_kv; `scale` is the softmax scale.
        ///
        /// # Safety
        /// q, o and d_o hold batch · seq_q · heads_q · head_dim elements, k and v batch · seq_k · heads_kv ·
        /// head_dim, packed and 4-byte aligned; lse holds batch · heads_q · seq_q f32; dq holds as many f32 as q,
        /// dk and dv as many as k; the outputs overlap nothing.
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(
            q: *const u16,
            k: *const u16,
            v: *const u16,
            o: *const u16,
            d_o: *const u16,
            lse: *const f32,
            dq: *mut f32,
            dk: *mut f32,
            dv: *mut f32,
            batch: u32,
            seq_q: u32,
            seq_k: u32,
            heads_q: u32,
            group: u32,
            scale: f32,
            causal: u32,
        ) {
            let shape = Shape {
                batch: batch as usize,
                seq_q: seq_q as usize,
                seq_k: seq_k as usize,
                heads_q: heads_q as usize,
                group: group as usize,
                head_dim: 32 * $per_lane,
                scale,
                scale_log2: scale * LOG2_E,
                causal: causal != 0,
            };
            let inputs = Inputs { q, k, v, o, d_o, lse };
            unsafe { attention_backward_reference::<$element, $per_lane>(inputs, dq, dk, dv, shape) }
        }
    };
}

backward_reference_kernel!(attn_bwd_reference_bf16_d128, Bf16, 4);
backward_reference_kernel!(attn_bwd_reference_f16_d128, F16, 4);
backward_reference_kernel!(attn_bwd_reference_bf16_d64, Bf16, 2);
backward_reference_kernel!(attn_bwd_reference_f16_d64, F16, 2);
backward_reference_kernel!(attn_bwd_reference_bf16_d256, Bf16, 8);
backward_reference_kernel!(attn_bwd_reference_f16_d256, F16, 8);
