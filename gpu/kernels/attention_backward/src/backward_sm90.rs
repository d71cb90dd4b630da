//! Hopper attention backward: dQ, dK and dV of O = softmax(scale · Q·Kᵀ) · V from the forward's O and row
//! log-sum-exp, FlashAttention-3's data path with the products taken "swapped" (keys as the M of every wgmma), so
//! that P and dS stay in registers as the A operands of dV and dK (but at head dim 256, below).
//!
//! Three kernels per problem (four where full attention's last round is split; two where the main kernel converts
//! dQ, below), launched in this order by host/src/ops/attention_backward.rs:
//! 1. [`preprocess`], `head_dim / 8` threads per query row (every (batch, head) padded to whole query tiles,
//!    [`AttnBwdRows`]): the row's D = dO·O in f32, its LSE in log2 units (+∞ for a row that sees no key and for
//!    padding rows, so its probabilities come out 0), zeros for the row's dQ where no walk visits the row's tile
//!    (the main kernel writes every other tile's), and each 64-row unit's flag.
//! 2. [`attn_bwd`], a walk per `tile_kv` keys of one (key/value head, batch): K and V stay in shared memory
//!    while the producer warp has TMA stream query tiles (`tile_q` rows: 64 at head dims 128 and 256, 128 at head
//!    dim 64; Q, dO, and the rows' LSE and D) through a ring, for each query head of the key/value head in turn
//!    (GQA: dK and dV are summed in registers over the group, no atomics).
//!    At head dims 64 and 128 each of the two consumer warpgroups owns 64 of the block's 128 keys and, per query
//!    tile: Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (m64n{tile_q}k16, both operands K-major in shared memory);
//!    Pᵀ = 2^(Sᵀ·scale·log2 e − LSE·log2 e) per query column; dSᵀ = Pᵀ ∘ (dPᵀ − D);
//!    dV += Pᵀ·dO and dK += dSᵀ·Q (A from registers, converted in place as the forward converts P; dO and Q read
//!    MN-major); dSᵀ to shared memory; dQ = dS·K (A = dSᵀ read MN-major, B = K read MN-major) in pieces of 64
//!    queries × 64 columns of head dim, each staged in shared memory as f32 and added to the f32 accumulator by
//!    one bulk reduce-add (`cp.reduce.async.bulk ... add.f32`) from the producer warpgroup's dQ writer warp
//!    ([`write_dq`]: the tile's first writer stores its pieces instead, the block that claims the tile first or in
//!    the deterministic mode the first turn, and every later one waits until those stores are complete, in the
//!    deterministic mode for its own turn; in the staggered deterministic kernels at full attention the tile's last
//!    turn hands it to the producer warpgroup's two converter warps, [`convert_tiles`], which write dQ = scale ·
//!    the accumulator in the input type while the tile is in the L2): the accumulator is tiled so
//!    that each piece is one contiguous run of it ([`dq_accum_index`]). The consumers split the tile's pieces
//!    (FlashAttention-3's arrangement, [`AttnBwdTile::splits_dq_pieces`]): after a barrier between them, each
//!    computes its pieces over all 128 keys from both consumers' dSᵀ (at head dim 128 a column block each, at head
//!    dim 64 a 64-row unit each), so the writer adds each element of a tile's dQ once per block.
//!    At the end of the walk dK (times the softmax scale) and dV are converted and stored. A block walks one or
//!    more key blocks in turn ([`Walks`], [`WalkSplit::for_launch`]); the producer loads the next walk's
//!    K and V once the consumers are done with the last, while they store its dK and dV.
//!    At head dim 256 one consumer's dK and dV of 64 keys would take 256 registers per thread, so there the
//!    consumers split the head dim instead ([`BwdSplit::HeadDim`], [`consume_columns`]): a block owns 64 keys,
//!    each consumer computes Sᵀ and dPᵀ for 32 of a tile's 64 queries (m64n32k16), writes its half of Pᵀ and dSᵀ to
//!    tiles both consumers share, and after a barrier between them takes 128 columns of dV += Pᵀ·dO, dK += dSᵀ·Q
//!    (both operands from shared memory) and dQ = dS·K (two pieces); the ring has one stage (a second does not
//!    fit).
//!    Full attention's persistent launches split their last round ([`WalkSplit`]): its walks are cut into pieces
//!    (runs of their query tiles) spread over the blocks, each storing its dK and dV partials to a workspace
//!    (`store_partial`), and one more kernel, [`sum_pieces`] (a thread per 4 columns of a split walk's key row),
//!    adds them up in piece order into dK and dV after the main kernel.
//! 3. Where the main kernel does not convert dQ (`convert_dq` 0: every launch but the staggered kernels' at full
//!    attention with enough key blocks, `AttnBwdTile::converts_in_kernel`), [`convert_dq`], `head_dim / 8` threads
//!    per query row.
//!
//! Kernel ABI: see [`attn_bwd_kernel`] and the exported functions' documentation.

use oxtile_abi::bwd_launch::{BwdLaunchOrder, WalkSplit};
use oxtile_abi::dq_order::{DqOrder, DqSchedule};
use oxtile_abi::{ATTN_BWD_SM90_D64, ATTN_BWD_SM90_D128, ATTN_BWD_SM90_D256, AttnBwdRows, AttnBwdTile, BwdSplit};
use seq_macro::seq;

use crate::arch::mbarrier::{self, RingState};
use crate::arch::sreg::{block_dim_x, block_idx_x, block_idx_y, grid_dim_x, grid_dim_y, lane_id, thread_idx_x};
use crate::arch::warp::{self, shfl_xor};
use crate::arch::{atomic, barrier, convert, global, mufu, setmaxnreg, smem, tma, wgmma};
use crate::bounded_wait;
use crate::opaque::{opaque_here, opaque_u64};
use crate::rows::{Bf16, Element, F16, Strides};
use crate::smem_layout::{SW32_64X64_B32, SW128_64X64_B16, sw128_mn_major};

/// log2(e): exp(x) = 2^(x · log2 e).
const LOG2_E: f32 = core::f32::consts::LOG2_E;

/// Packs two f32 into the 16-bit input type (round to nearest), the low one first.
trait Pack {
    fn pack2(lo: f32, hi: f32) -> u32;
}

impl Pack for Bf16 {
    #[inline(always)]
    fn pack2(lo: f32, hi: f32) -> u32 {
        convert::pack_bf16x2(lo, hi)
    }
}

impl Pack for F16 {
    #[inline(always)]
    fn pack2(lo: f32, hi: f32) -> u32 {
        convert::pack_f16x2(lo, hi)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Preprocessing.

/// This thread's row of an [`AttnBwdRows`] grid (x over one (batch, head)'s rows) and the first of its 8 head-dim
/// columns: `head_dim / 8` adjacent lanes per row, by shifts (head dims are powers of two).
#[inline(always)]
fn row_and_column(head_dim: u32) -> (u32, u32) {
    let shift = AttnBwdRows::row_threads(head_dim).trailing_zeros();
    let x = block_idx_x() * block_dim_x() + thread_idx_x();
    (x >> shift, (x & ((1 << shift) - 1)) * AttnBwdRows::COLUMNS_PER_THREAD)
}

/// Per padded query row `i` of (batch, head) pair `batch_head` ([`AttnBwdRows`]: `head_dim / 8` threads a row, 8
/// columns each): D_i = dO_i·O_i (0 for a padding row), LSE_i · log2 e (+∞ where LSE_i = −∞ or for a padding row),
/// below `zero_rows` (the rows of tiles no walk visits) the row's dQ written as zeros, and the row's 64-row unit's
/// flag (the main kernel's semaphore or claim) zeroed by the unit's first row.
#[inline(always)]
unsafe fn preprocess<E: Element>(p: &PreprocessArgs) {
    let (i, column) = row_and_column(p.head_dim);
    // Warp-uniform: a warp holds whole rows (32 / row threads of them) and the padded rows are whole 64-row units.
    if i >= p.padded_rows {
        return;
    }
    let row_threads = AttnBwdRows::row_threads(p.head_dim);
    let batch_heads = p.batch * p.heads;
    let mut batch_head = block_idx_y();
    while batch_head < batch_heads {
        let (head, batch) = ((batch_head % p.heads) as usize, (batch_head / p.heads) as usize);
        let row = batch_head as usize * p.padded_rows as usize + i as usize;
        let valid = i < p.seq_q;
        if valid && i < p.zero_rows {
            let to = unsafe { p.dq.add(p.dq_strides.offset(batch, i as usize, head) + column as usize) };
            unsafe { global::store_u32x4(to as *mut u32, [0; 4]) };
        }
        // The row's LSE, loaded by the thread that writes the row's statistics before the loads and sums below.
        let row_lse = if valid && column == 0 {
            unsafe { p.lse.add(batch_head as usize * p.seq_q as usize + i as usize).read() }
        } else {
            f32::NEG_INFINITY
        };
        let mut partial = 0.0f32;
        if valid {
            // 16-byte loads: rows start on 16-byte boundaries (the host checks bases and strides), columns at
            // multiples of 8.
            let (i, column) = (i as usize, column as usize);
            let o = unsafe { global::load_u32x4_stream(p.o.add(p.o_strides.offset(batch, i, head) + column)) };
            let d_o = unsafe { global::load_u32x4_stream(p.d_o.add(p.d_o_strides.offset(batch, i, head) + column)) };
            seq!(PAIR in 0..4 {
                let (o0, o1) = E::widen_pair(o[PAIR]);
                let (g0, g1) = E::widen_pair(d_o[PAIR]);
                partial = core::intrinsics::fmaf32(g1, o1, core::intrinsics::fmaf32(g0, o0, partial));
            });
        }
        // The row's sum over its threads, adjacent lanes of one warp (every lane of the warp takes part).
        let mut mask = row_threads / 2;
        while mask > 0 {
            partial += shfl_xor(partial, mask);
            mask /= 2;
        }
        if column == 0 {
            let log2 = if row_lse == f32::NEG_INFINITY { f32::INFINITY } else { row_lse * LOG2_E };
            unsafe {
                p.lse_log2.add(row).write(log2);
                p.dsum.add(row).write(if valid { partial } else { 0.0 });
            }
            // The first row of each 64-row unit zeroes the unit's flag (a query tile counts its turns, or is
            // claimed, on its first unit's).
            let unit = AttnBwdTile::DQ_UNIT_ROWS as usize;
            if !p.dq_flags.is_null() && row.is_multiple_of(unit) {
                unsafe { p.dq_flags.add(row / unit).write(0) };
            }
        }
        batch_head += grid_dim_y();
    }
}

/// [`preprocess`]'s parameters as it reads them.
struct PreprocessArgs {
    o: *const u16,
    d_o: *const u16,
    o_strides: Strides,
    d_o_strides: Strides,
    lse: *const f32,
    lse_log2: *mut f32,
    dsum: *mut f32,
    dq_flags: *mut u32,
    dq: *mut u16,
    dq_strides: Strides,
    batch: u32,
    heads: u32,
    seq_q: u32,
    padded_rows: u32,
    zero_rows: u32,
    head_dim: u32,
}

/// Declares one exported preprocessing kernel, its parameters those of `oxtile_abi::attn_bwd_preprocess_params!`.
macro_rules! preprocess_kernel {
    ($name:ident, $element:ty) => {
        oxtile_abi::attn_bwd_preprocess_params! { preprocess_kernel_fn, ($name, $element) }
    };
}

/// [`preprocess_kernel!`]'s function: one parameter per field of the list, in its order.
macro_rules! preprocess_kernel_fn {
    (($name:ident, $element:ty) $($(#[$field_doc:meta])* $field:ident: $kind:ident($($ty:ty)?),)*) => {
        /// See [`preprocess`]: per padded query row, `dsum` = dO·O, `lse_log2` = LSE·log2 e (+∞ for −∞ and for
        /// padding rows), and below `zero_rows` (and seq_q) dQ's row written as zeros; per 64-row unit, its
        /// u32 of `dq_flags` zeroed unless that is null. Launched with [`AttnBwdRows::grid`] over the padded rows
        /// (blocks of [`AttnBwdRows::THREADS`]).
        ///
        /// # Safety
        /// o, d_o and dq are [batch, seq_q, heads, head_dim] with the given element strides (multiples of 8,
        /// 16-byte aligned bases), dq's elements distinct, head_dim 64, 128 or 256, padded_rows ≥ seq_q and
        /// zero_rows ≤ padded_rows multiples of 64 with padded_rows · head_dim / 8 below 2^32; lse holds batch ·
        /// heads · seq_q f32; lse_log2 and dsum hold batch · heads · padded_rows f32, dq_flags (or null) one u32 per
        /// 64 of those rows, overlapping nothing.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name($($field: device_param!($kind($($ty)?)),)*) {
            struct Params {
                $($field: device_field!($kind($($ty)?)),)*
            }
            let p = Params { $($field: device_value!($kind, $field),)* };
            let args = PreprocessArgs {
                o: p.o,
                d_o: p.d_o,
                o_strides: Strides::new(p.o_batch_stride, p.o_seq_stride, p.o_head_stride),
                d_o_strides: Strides::new(p.d_o_batch_stride, p.d_o_seq_stride, p.d_o_head_stride),
                lse: p.lse,
                lse_log2: p.lse_log2,
                dsum: p.dsum,
                dq_flags: p.dq_flags,
                dq: p.dq,
                dq_strides: Strides::new(p.dq_batch_stride, p.dq_seq_stride, p.dq_head_stride),
                batch: p.batch,
                heads: p.heads_q,
                seq_q: p.seq_q,
                padded_rows: p.padded_rows,
                zero_rows: p.zero_rows,
                head_dim: p.head_dim,
            };
            unsafe { preprocess::<$element>(&args) }
        }
    };
}

preprocess_kernel!(attn_bwd_preprocess_bf16, Bf16);
preprocess_kernel!(attn_bwd_preprocess_f16, F16);

// ---------------------------------------------------------------------------------------------------------------
// 3. dQ conversion.

/// Index in the dQ accumulator of column `column` of padded row `row` (over all (batch, head) in order), in
/// `AttnBwdTile`'s tiled layout: the row's 64-row unit starts where it would in a row-major [rows, head_dim] array
/// and holds one run per 64-column block, a staging piece of the main kernel ([`SW32_64X64_B32`], in f32 units) as
/// it was added.
#[inline(always)]
fn dq_accum_index(row: usize, column: usize, head_dim: usize) -> usize {
    let unit_rows = AttnBwdTile::DQ_UNIT_ROWS as usize;
    let run = (AttnBwdTile::DQ_PIECE_BYTES / 4) as usize;
    let box_cols = AttnBwdTile::BOX_COLS as usize;
    let (unit, local) = (row / unit_rows, row % unit_rows);
    let in_run = SW32_64X64_B32.crd2idx_u32(&[local as u32, (column % box_cols) as u32]) / 4;
    unit * unit_rows * head_dim + (column / box_cols) * run + in_run as usize
}

// The conversion reads each thread's 8 columns as two 16-byte loads: in every row of a run, each 8 aligned columns
// are 32 contiguous, 32-byte aligned bytes (the layout permutes whole 32-byte units).
const _: () = {
    let mut row = 0;
    while row < AttnBwdTile::DQ_UNIT_ROWS {
        let mut column = 0;
        while column < AttnBwdTile::BOX_COLS {
            let first = SW32_64X64_B32.crd2idx_u32(&[row, column]);
            assert!(first.is_multiple_of(32));
            let mut j = 1;
            while j < AttnBwdRows::COLUMNS_PER_THREAD {
                assert!(SW32_64X64_B32.crd2idx_u32(&[row, column + j]) == first + 4 * j);
                j += 1;
            }
            column += AttnBwdRows::COLUMNS_PER_THREAD;
        }
        row += 1;
    }
};

/// Where the main kernel does not convert dQ (`AttnBwdTile::converts_in_kernel`: a tile takes too few visits for the
/// converter warps to keep up), after it: dQ = scale · dq_accum over the seq_q real rows ([`AttnBwdRows`]:
/// `head_dim / 8` threads a row), in the input type, with q's strides: per thread 8 columns, two 16-byte loads of the
/// accumulator and one 16-byte store of dQ; rows below `zero_rows` (no walk visited them: the preprocessing kernel
/// wrote their zeros) skipped.
#[inline(always)]
unsafe fn convert_dq<E: Pack>(p: &ConvertArgs) {
    let (i, column) = row_and_column(p.head_dim);
    if i >= p.seq_q || i < p.zero_rows {
        return;
    }
    let batch_heads = p.batch * p.heads;
    let mut batch_head = block_idx_y();
    while batch_head < batch_heads {
        let (head, batch) = ((batch_head % p.heads) as usize, (batch_head / p.heads) as usize);
        let row = batch_head as usize * p.padded_rows as usize + i as usize;
        let from = unsafe { p.dq_accum.add(dq_accum_index(row, column as usize, p.head_dim as usize)) };
        let (lo, hi) = unsafe { (global::load_f32x4_stream(from), global::load_f32x4_stream(from.add(4))) };
        let packed = scale_and_pack(lo, hi, p.scale, E::pack2);
        let to = unsafe { p.dq.add(p.strides.offset(batch, i as usize, head) + column as usize) };
        unsafe { global::store_u32x4(to as *mut u32, packed) };
        batch_head += grid_dim_y();
    }
}

/// Eight adjacent f32 of the dQ accumulator (`lo`, then `hi`) times `scale`, as four pairs packed in the input type:
/// one 16-byte store of dQ.
#[inline(always)]
fn scale_and_pack(lo: [f32; 4], hi: [f32; 4], scale: f32, pack2: impl Fn(f32, f32) -> u32) -> [u32; 4] {
    [
        pack2(lo[0] * scale, lo[1] * scale),
        pack2(lo[2] * scale, lo[3] * scale),
        pack2(hi[0] * scale, hi[1] * scale),
        pack2(hi[2] * scale, hi[3] * scale),
    ]
}

/// [`convert_dq`]'s parameters as it reads them.
struct ConvertArgs {
    dq_accum: *const f32,
    dq: *mut u16,
    strides: Strides,
    batch: u32,
    heads: u32,
    seq_q: u32,
    padded_rows: u32,
    zero_rows: u32,
    head_dim: u32,
    scale: f32,
}

/// Declares one exported conversion kernel, its parameters those of `oxtile_abi::attn_bwd_convert_params!`.
macro_rules! convert_kernel {
    ($name:ident, $element:ty) => {
        oxtile_abi::attn_bwd_convert_params! { convert_kernel_fn, ($name, $element) }
    };
}

/// [`convert_kernel!`]'s function: one parameter per field of the list, in its order.
macro_rules! convert_kernel_fn {
    (($name:ident, $element:ty) $($(#[$field_doc:meta])* $field:ident: $kind:ident($($ty:ty)?),)*) => {
        /// See [`convert_dq`]. Launched with [`AttnBwdRows::grid`] over the seq_q rows (blocks of
        /// [`AttnBwdRows::THREADS`]).
        ///
        /// # Safety
        /// dq_accum holds batch · heads · padded_rows · head_dim f32 in the main kernel's tiled layout (padded_rows
        /// ≥ seq_q, a multiple of 64; head_dim 64, 128 or 256; seq_q · head_dim / 8 below 2^32), 16-byte aligned;
        /// dq is [batch, seq_q, heads, head_dim] with the given element strides (multiples of 8, 16-byte aligned
        /// base), its elements distinct, overlapping nothing.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name($($field: device_param!($kind($($ty)?)),)*) {
            struct Params {
                $($field: device_field!($kind($($ty)?)),)*
            }
            let p = Params { $($field: device_value!($kind, $field),)* };
            let args = ConvertArgs {
                dq_accum: p.dq_accum,
                dq: p.dq,
                strides: Strides::new(p.dq_batch_stride, p.dq_seq_stride, p.dq_head_stride),
                batch: p.batch,
                heads: p.heads_q,
                seq_q: p.seq_q,
                padded_rows: p.padded_rows,
                zero_rows: p.zero_rows,
                head_dim: p.head_dim,
                scale: p.scale,
            };
            unsafe { convert_dq::<$element>(&args) }
        }
    };
}

convert_kernel!(attn_bwd_convert_dq_bf16, Bf16);
convert_kernel!(attn_bwd_convert_dq_f16, F16);

/// After the main kernel where it split walks ([`WalkSplit`]), a thread per 4 columns
/// of one key row of one split walk: dK (times the softmax scale) and dV of that row, the sums of the walk's pieces'
/// partials in piece order (the same every launch), in the input type; rows past seq_k skipped.
#[inline(always)]
unsafe fn sum_pieces<E: Pack>(p: &SumPiecesArgs) {
    let x = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    let per_key = (p.head_dim / 4) as usize;
    let per_walk = p.tile_kv as usize * per_key;
    if x >= p.split_walks as usize * per_walk {
        return;
    }
    let (walk, key, column) = (x / per_walk, x % per_walk / per_key, x % per_key * 4);
    let order = BwdLaunchOrder { key_blocks: p.key_blocks, groups: p.groups, tail_groups: p.tail_groups };
    let (key_block, group) = order.block(p.whole_walks + walk as u32);
    let key_index = key_block as usize * p.tile_kv as usize + key;
    if key_index >= p.seq_k as usize {
        return;
    }
    let tensor = p.tile_kv as usize * p.head_dim as usize;
    let (mut dk, mut dv) = ([0.0f32; 4], [0.0f32; 4]);
    for piece in 0..p.pieces as usize {
        let at = (walk * p.pieces as usize + piece) * 2 * tensor + key * p.head_dim as usize + column;
        let (k, v) = unsafe {
            (global::load_f32x4_cg(p.split_accum.add(at)), global::load_f32x4_cg(p.split_accum.add(at + tensor)))
        };
        seq!(I in 0..4 {
            dk[I] += k[I];
            dv[I] += v[I];
        });
    }
    let (kv_head, batch) = ((group % p.heads_kv) as usize, (group / p.heads_kv) as usize);
    let s = p.scale;
    unsafe {
        let dk_at = p.dk.add(p.dk_strides.offset(batch, key_index, kv_head) + column) as *mut u32;
        let dv_at = p.dv.add(p.dv_strides.offset(batch, key_index, kv_head) + column) as *mut u32;
        dk_at.write(E::pack2(dk[0] * s, dk[1] * s));
        dk_at.add(1).write(E::pack2(dk[2] * s, dk[3] * s));
        dv_at.write(E::pack2(dv[0], dv[1]));
        dv_at.add(1).write(E::pack2(dv[2], dv[3]));
    }
}

/// [`sum_pieces`]'s parameters as it reads them.
struct SumPiecesArgs {
    split_accum: *const f32,
    dk: *mut u16,
    dv: *mut u16,
    dk_strides: Strides,
    dv_strides: Strides,
    seq_k: u32,
    heads_kv: u32,
    key_blocks: u32,
    groups: u32,
    tail_groups: u32,
    whole_walks: u32,
    split_walks: u32,
    pieces: u32,
    tile_kv: u32,
    head_dim: u32,
    scale: f32,
}

/// Declares one exported piece-summing kernel, its parameters those of `oxtile_abi::attn_bwd_sum_pieces_params!`.
macro_rules! sum_pieces_kernel {
    ($name:ident, $element:ty) => {
        oxtile_abi::attn_bwd_sum_pieces_params! { sum_pieces_kernel_fn, ($name, $element) }
    };
}

/// [`sum_pieces_kernel!`]'s function: one parameter per field of the list, in its order.
macro_rules! sum_pieces_kernel_fn {
    (($name:ident, $element:ty) $($(#[$field_doc:meta])* $field:ident: $kind:ident($($ty:ty)?),)*) => {
        /// See [`sum_pieces`]. Launched with at least `split_walks · tile_kv · head_dim / 4` threads along x.
        ///
        /// # Safety
        /// split_accum holds the main kernel's partials of this launch's split (`split_walks · pieces` slots of
        /// dK's and dV's `tile_kv × head_dim` f32, 16-byte aligned); dk and dv as the main kernel's (4-byte
        /// aligned columns); the order and split those the main kernel ran with.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name($($field: device_param!($kind($($ty)?)),)*) {
            struct Params {
                $($field: device_field!($kind($($ty)?)),)*
            }
            let p = Params { $($field: device_value!($kind, $field),)* };
            let args = SumPiecesArgs {
                split_accum: p.split_accum,
                dk: p.dk,
                dv: p.dv,
                dk_strides: Strides::new(p.dk_batch_stride, p.dk_seq_stride, p.dk_head_stride),
                dv_strides: Strides::new(p.dv_batch_stride, p.dv_seq_stride, p.dv_head_stride),
                seq_k: p.seq_k,
                heads_kv: p.heads_kv,
                key_blocks: p.key_blocks,
                groups: p.groups,
                tail_groups: p.tail_groups,
                whole_walks: p.whole_walks,
                split_walks: p.split_walks,
                pieces: p.pieces,
                tile_kv: p.tile_kv,
                head_dim: p.head_dim,
                scale: p.scale,
            };
            unsafe { sum_pieces::<$element>(&args) }
        }
    };
}

sum_pieces_kernel!(attn_bwd_sum_pieces_bf16, Bf16);
sum_pieces_kernel!(attn_bwd_sum_pieces_f16, F16);

// ---------------------------------------------------------------------------------------------------------------
// 2. The main kernel.

/// Values per thread of one m64n64 f32 fragment: a dQ piece (64 queries × 64 columns of head dim).
const PIECE_VALUES: usize = 32;

/// One kernel configuration: the tile (shared with the host), the element type and its wgmma, and the order of
/// the deterministic mode's dQ additions.
trait Config {
    const TILE: AttnBwdTile;
    /// False: the blocks walk their query tiles ascending; given semaphores they add to each dQ tile by key block
    /// ascending ([`DqOrder::Ascending`]), without them in any order, the first claimant of each tile storing
    /// ([`claim_tile`]). True: deterministic only, the walk and the turns of
    /// [`DqOrder::Staggered`] (the `_staggered` kernels: each configuration's type with `STAGGERED = true`).
    const STAGGERED: bool;
    /// `consumer_columns / 2` f32 per thread: the m64n{consumer_columns} accumulator fragment of dK or dV.
    type Acc: Copy + AsRef<[f32]> + AsMut<[f32]>;
    const ACC_ZERO: Self::Acc;
    /// `consumer_queries / 2` f32 per thread: the m64n{consumer_queries} fragment of one consumer's 64 keys × its
    /// queries of the tile (Sᵀ, dPᵀ), and the same packed to 16-bit pairs (`consumer_queries / 4` u32: the A
    /// fragments of the k16 steps over the queries).
    type Scores: Copy + AsRef<[f32]> + AsMut<[f32]>;
    const SCORES_ZERO: Self::Scores;
    type Packed: Copy + AsRef<[u32]> + AsMut<[u32]>;
    const PACKED_ZERO: Self::Packed;
    /// D (+)= A·B, m64n{consumer_queries}k16, both operands K-major in shared memory.
    unsafe fn mma_scores(acc: &mut Self::Scores, desc_a: u64, desc_b: u64, accumulate: bool);
    /// D (+)= A·B, m64n64k16, both operands in shared memory (MN-major where the flag is 1).
    unsafe fn mma_ss<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; PIECE_VALUES],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    );
    /// D += A·B, m64n{consumer_columns}k16, A from registers, B MN-major in shared memory.
    unsafe fn mma_rs(acc: &mut Self::Acc, a: &[u32; 4], desc_b: u64);
    /// D += A·B, m64n{consumer_columns}k16, A K-major and B MN-major in shared memory (dV and dK where the
    /// consumers split the head dim: A the shared Pᵀ or dSᵀ).
    unsafe fn mma_ss_columns(acc: &mut Self::Acc, desc_a: u64, desc_b: u64);
    fn pack2(lo: f32, hi: f32) -> u32;
    /// [`Config::pack2`] saturated to the type's finite range (±∞ to ±its largest finite value, NaN kept).
    fn pack2_finite(lo: f32, hi: f32) -> u32;
}

macro_rules! config {
    (
        $name:ident,
        $tile:path,
        $scores_ss:ident,
        $ss:ident,
        $rs:ident,
        $columns_ss:ident,
        $pack:path,
        $pack_finite:path,
        acc = $acc:literal,
        scores = $scores:literal
    ) => {
        /// A kernel configuration, in the ascending order (`false`) or the staggered one (`true`).
        struct $name<const STAGGERED: bool>;

        const _: () = assert!(2 * $acc == $tile.consumer_columns() && 2 * $scores == $tile.consumer_queries());

        impl<const STAGGERED: bool> Config for $name<STAGGERED> {
            const TILE: AttnBwdTile = $tile;
            const STAGGERED: bool = STAGGERED;
            type Acc = [f32; $acc];
            const ACC_ZERO: Self::Acc = [0.0; $acc];
            type Scores = [f32; $scores];
            const SCORES_ZERO: Self::Scores = [0.0; $scores];
            type Packed = [u32; $scores / 2];
            const PACKED_ZERO: Self::Packed = [0; $scores / 2];

            #[inline(always)]
            unsafe fn mma_scores(acc: &mut Self::Scores, desc_a: u64, desc_b: u64, accumulate: bool) {
                unsafe { wgmma::$scores_ss::<0, 0>(acc, desc_a, desc_b, accumulate) }
            }

            #[inline(always)]
            unsafe fn mma_ss<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
                acc: &mut [f32; PIECE_VALUES],
                desc_a: u64,
                desc_b: u64,
                accumulate: bool,
            ) {
                unsafe { wgmma::$ss::<MN_MAJOR_A, MN_MAJOR_B>(acc, desc_a, desc_b, accumulate) }
            }

            #[inline(always)]
            unsafe fn mma_rs(acc: &mut Self::Acc, a: &[u32; 4], desc_b: u64) {
                unsafe { wgmma::$rs::<1>(acc, a, desc_b, true) }
            }

            #[inline(always)]
            unsafe fn mma_ss_columns(acc: &mut Self::Acc, desc_a: u64, desc_b: u64) {
                unsafe { wgmma::$columns_ss::<0, 1>(acc, desc_a, desc_b, true) }
            }

            #[inline(always)]
            fn pack2(lo: f32, hi: f32) -> u32 {
                $pack(lo, hi)
            }

            #[inline(always)]
            fn pack2_finite(lo: f32, hi: f32) -> u32 {
                $pack_finite(lo, hi)
            }
        }
    };
}

config!(
    Bf16D128,
    ATTN_BWD_SM90_D128,
    mma_m64n64k16_f32_bf16,
    mma_m64n64k16_f32_bf16,
    mma_rs_m64n128k16_f32_bf16,
    mma_m64n128k16_f32_bf16,
    convert::pack_bf16x2,
    convert::pack_bf16x2_finite,
    acc = 64,
    scores = 32
);
config!(
    F16D128,
    ATTN_BWD_SM90_D128,
    mma_m64n64k16_f32_f16,
    mma_m64n64k16_f32_f16,
    mma_rs_m64n128k16_f32_f16,
    mma_m64n128k16_f32_f16,
    convert::pack_f16x2,
    convert::pack_f16x2_finite,
    acc = 64,
    scores = 32
);
config!(
    Bf16D64,
    ATTN_BWD_SM90_D64,
    mma_m64n128k16_f32_bf16,
    mma_m64n64k16_f32_bf16,
    mma_rs_m64n64k16_f32_bf16,
    mma_m64n64k16_f32_bf16,
    convert::pack_bf16x2,
    convert::pack_bf16x2_finite,
    acc = 32,
    scores = 64
);
config!(
    Bf16D256,
    ATTN_BWD_SM90_D256,
    mma_m64n32k16_f32_bf16,
    mma_m64n64k16_f32_bf16,
    mma_rs_m64n128k16_f32_bf16,
    mma_m64n128k16_f32_bf16,
    convert::pack_bf16x2,
    convert::pack_bf16x2_finite,
    acc = 64,
    scores = 16
);
config!(
    F16D64,
    ATTN_BWD_SM90_D64,
    mma_m64n128k16_f32_f16,
    mma_m64n64k16_f32_f16,
    mma_rs_m64n64k16_f32_f16,
    mma_m64n64k16_f32_f16,
    convert::pack_f16x2,
    convert::pack_f16x2_finite,
    acc = 32,
    scores = 64
);
config!(
    F16D256,
    ATTN_BWD_SM90_D256,
    mma_m64n32k16_f32_f16,
    mma_m64n64k16_f32_f16,
    mma_rs_m64n128k16_f32_f16,
    mma_m64n128k16_f32_f16,
    convert::pack_f16x2,
    convert::pack_f16x2_finite,
    acc = 64,
    scores = 16
);

/// Defines one exported kernel over [`attn_bwd`], its parameters those of `oxtile_abi::attn_bwd_sm90_params!`.
macro_rules! attn_bwd_kernel {
    ($(#[$doc:meta])* $name:ident, $config:ty) => {
        oxtile_abi::attn_bwd_sm90_params! { attn_bwd_kernel_fn, ($(#[$doc])* $name, $config) }
        // The builder reads the bound from the marker's name, so it is a literal here, asserted to be the tile's.
        const _: () = assert!(<$config as Config>::TILE.threads() == 384);
        oxtile_device::launch_bounds!($name, max_threads = 384, min_blocks = 1);
    };
}

/// [`attn_bwd_kernel!`]'s function: one parameter per field of the list, in its order.
macro_rules! attn_bwd_kernel_fn {
    (($(#[$doc:meta])* $name:ident, $config:ty) $($(#[$field_doc:meta])* $field:ident: $kind:ident($($ty:ty)?),)*) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The parameters are as `oxtile_abi::attn_bwd_sm90_params!` documents them: the tensor maps are over q and
        /// dO [B, seq_q, heads_q, D] and k, v [B, seq_k, heads_q / group, D] seen as dims (D, heads, seq, batch),
        /// 128-byte swizzled, boxes of (64, 1, tile_q, 1) for q and dO and (64, 1, tile_kv, 1) for k and v; the workspaces
        /// are the preprocessing kernel's, 16-byte aligned, with exactly one of `dq_semaphores` and `dq_claims`
        /// set; dk and dv hold every element their strides address, distinct, 4-byte aligned, overlapping nothing;
        /// where `convert_dq` is 1 (a `_staggered` kernel only), so does dq, 16-byte aligned with strides of
        /// multiples of 8. `key_blocks` = ceil(seq_k / tile_kv), `groups` = heads_kv · batch, their product below 2^31, and
        /// `tail_groups` as `BwdLaunchOrder::for_launch` gives it. Every kernel launches with a grid of (n, 1, 1)
        /// blocks, n ≤ key_blocks · groups (`BwdLaunchOrder::launched_blocks`), each walking every n-th walk of the
        /// launch order (the plain kernels: n = all of them where `dq_semaphores` is set, as the ascending order
        /// waits only for walks dispatched before; a `_staggered` kernel: n a multiple of key_blocks or all of
        /// them), with the tile's threads and dynamic shared memory. A `_staggered` kernel needs `dq_semaphores`
        /// set and the 32-bit arithmetic of `DqSchedule::fits_u32`; unless `DqSchedule::launches_descending`, it
        /// waits for blocks launched after it as well, so every key block of a (batch, kv head) must be resident at
        /// once (else a wait traps).
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name($($field: device_param!($kind($($ty)?)),)*) {
            struct Params {
                $($field: device_field!($kind($($ty)?)),)*
            }
            let params = Params { $($field: device_value!($kind, $field),)* };
            let problem = Problem {
                lse_log2: params.lse_log2,
                dsum: params.dsum,
                dq_accum: params.dq_accum,
                dq_semaphores: params.dq_semaphores,
                dq_claims: params.dq_claims,
                dk: params.dk,
                dv: params.dv,
                dk_strides: Strides::new(params.dk_batch_stride, params.dk_seq_stride, params.dk_head_stride),
                dv_strides: Strides::new(params.dv_batch_stride, params.dv_seq_stride, params.dv_head_stride),
                dq: params.dq,
                dq_strides: Strides::new(params.dq_batch_stride, params.dq_seq_stride, params.dq_head_stride),
                convert_dq: params.convert_dq != 0,
                seq_q: params.seq_q,
                seq_k: params.seq_k,
                padded_rows: params.padded_rows,
                heads_q: params.heads_q,
                group: params.group,
                scale: params.scale,
                scale_log2: params.scale_log2,
                causal: params.causal != 0,
                key_blocks: params.key_blocks,
                groups: params.groups,
                tail_groups: params.tail_groups,
                split_accum: params.split_accum,
                split_walks: params.split_walks,
                split_pieces: params.split_pieces,
            };
            let tensor_maps = [params.tensor_map_q, params.tensor_map_k, params.tensor_map_v, params.tensor_map_do];
            unsafe { attn_bwd::<$config>(tensor_maps, &problem) }
        }
    };
}

attn_bwd_kernel!(
    /// bf16 attention backward, head dim 128.
    attn_bwd_bf16_d128_sm90, Bf16D128<false>
);
attn_bwd_kernel!(
    /// f16 attention backward, head dim 128.
    attn_bwd_f16_d128_sm90, F16D128<false>
);
attn_bwd_kernel!(
    /// bf16 attention backward, head dim 64.
    attn_bwd_bf16_d64_sm90, Bf16D64<false>
);
attn_bwd_kernel!(
    /// f16 attention backward, head dim 64.
    attn_bwd_f16_d64_sm90, F16D64<false>
);
attn_bwd_kernel!(
    /// bf16 attention backward, head dim 256.
    attn_bwd_bf16_d256_sm90, Bf16D256<false>
);
attn_bwd_kernel!(
    /// f16 attention backward, head dim 256.
    attn_bwd_f16_d256_sm90, F16D256<false>
);
attn_bwd_kernel!(
    /// bf16 attention backward, head dim 128, deterministic in the staggered order (`dq_semaphores` set).
    attn_bwd_bf16_d128_staggered_sm90, Bf16D128<true>
);
attn_bwd_kernel!(
    /// f16 attention backward, head dim 128, deterministic in the staggered order (`dq_semaphores` set).
    attn_bwd_f16_d128_staggered_sm90, F16D128<true>
);
attn_bwd_kernel!(
    /// bf16 attention backward, head dim 64, deterministic in the staggered order (`dq_semaphores` set).
    attn_bwd_bf16_d64_staggered_sm90, Bf16D64<true>
);
attn_bwd_kernel!(
    /// f16 attention backward, head dim 64, deterministic in the staggered order (`dq_semaphores` set).
    attn_bwd_f16_d64_staggered_sm90, F16D64<true>
);
attn_bwd_kernel!(
    /// bf16 attention backward, head dim 256, deterministic in the staggered order (`dq_semaphores` set).
    attn_bwd_bf16_d256_staggered_sm90, Bf16D256<true>
);
attn_bwd_kernel!(
    /// f16 attention backward, head dim 256, deterministic in the staggered order (`dq_semaphores` set).
    attn_bwd_f16_d256_staggered_sm90, F16D256<true>
);

struct Problem {
    lse_log2: *const f32,
    dsum: *const f32,
    dq_accum: *mut f32,
    /// The deterministic mode's turn counts, or null.
    dq_semaphores: *mut u32,
    /// Outside the deterministic mode, the tiles' claims ([`claim_tile`]), else null.
    dq_claims: *mut u32,
    dk: *mut u16,
    dv: *mut u16,
    dk_strides: Strides,
    dv_strides: Strides,
    dq: *mut u16,
    dq_strides: Strides,
    /// Whether each tile's last turn hands it to the converter warps (the staggered kernels only; else the
    /// conversion kernel converts).
    convert_dq: bool,
    seq_q: u32,
    seq_k: u32,
    padded_rows: u32,
    heads_q: u32,
    group: u32,
    scale: f32,
    scale_log2: f32,
    causal: bool,
    /// The plain kernels' launch order: its key blocks, groups and tail groups ([`BwdLaunchOrder`]).
    key_blocks: u32,
    groups: u32,
    tail_groups: u32,
    /// The split last walks ([`WalkSplit`]): their pieces' dK/dV partials, how many walks and pieces.
    split_accum: *mut f32,
    split_walks: u32,
    split_pieces: u32,
}

impl Problem {
    /// The launch's split last walks, as the host made them ([`WalkSplit::for_launch`]), from values opaque here:
    /// LLVM would otherwise compute them once before the roles' loops and hold them across (registers the
    /// producer and the writer, at 24, do not have).
    #[inline(always)]
    fn walk_split<C: Config>(&self) -> WalkSplit {
        WalkSplit {
            walks: opaque_here(self.key_blocks) * self.groups,
            launched: grid_dim_x(),
            // Full attention (the only split launches): every walk has all the query tiles.
            q_tiles: opaque_here(self.padded_rows) / C::TILE.tile_q,
            split_walks: opaque_here(self.split_walks),
            // At least 1 (the host's): no division-by-zero path.
            pieces: opaque_here(self.split_pieces).max(1),
        }
    }
}

/// Where everything lives in dynamic shared memory (offsets from oxtile-abi's [`AttnBwdTile`]).
struct SmemMap {
    base: u32,
    tile: AttnBwdTile,
}

impl SmemMap {
    /// Bytes of one 64-column block of a Q or dO tile / of the K or V tile.
    fn q_block_bytes(&self) -> u32 {
        self.tile.tile_q * 128
    }
    fn kv_block_bytes(&self) -> u32 {
        self.tile.tile_kv * 128
    }
    fn k(&self, block: u32) -> u32 {
        self.base + self.tile.smem_k_offset() + block * self.kv_block_bytes()
    }
    fn v(&self, block: u32) -> u32 {
        self.base + self.tile.smem_v_offset() + block * self.kv_block_bytes()
    }
    fn q(&self, stage: u32, block: u32) -> u32 {
        self.base + self.tile.smem_q_offset(stage) + block * self.q_block_bytes()
    }
    fn d_o(&self, stage: u32, block: u32) -> u32 {
        self.base + self.tile.smem_do_offset(stage) + block * self.q_block_bytes()
    }
    /// Score tile `index`: where the consumers split the keys, consumer `c`'s dSᵀ of stage `s` at
    /// `s · consumers + c` ([`Self::ds_set`]); where they split the head dim, the shared Pᵀ (0) and dSᵀ (1).
    fn ds(&self, index: u32) -> u32 {
        self.base + self.tile.smem_ds_offset(index)
    }
    /// Stage `stage`'s set of score tiles where the consumers split the keys: each consumer's dSᵀ, adjacent.
    fn ds_set(&self, stage: u32) -> u32 {
        self.ds(stage * self.tile.consumers)
    }
    /// Bytes of one 64-query block of a score tile (a 128-byte row per key).
    fn ds_block_bytes(&self) -> u32 {
        self.tile.consumer_keys() * 128
    }
    /// Piece `piece` of staging slot `slot` ([`dq_slot`]).
    fn dq(&self, slot: u32, piece: u32) -> u32 {
        self.base + self.tile.smem_dq_offset(slot, piece)
    }
    fn lse(&self, stage: u32) -> u32 {
        self.base + self.tile.smem_lse_offset(stage)
    }
    fn dsum(&self, stage: u32) -> u32 {
        self.base + self.tile.smem_dsum_offset(stage)
    }
    fn barrier(&self, index: u32) -> u32 {
        self.base + self.tile.barriers_offset() + 8 * index
    }
    fn kv_full(&self) -> u32 {
        self.barrier(0)
    }
    /// The walk's K and V are free again: every consumer thread arrives once its last products are done.
    fn kv_empty(&self) -> u32 {
        self.barrier(1 + 2 * self.tile.stages + 2 * self.tile.dq_slots())
    }
    fn q_full(&self, stage: u32) -> u32 {
        self.barrier(1 + stage)
    }
    fn q_empty(&self, stage: u32) -> u32 {
        self.barrier(1 + self.tile.stages + stage)
    }
    /// Staging slot `slot` is staged (every thread of its consumer arrives).
    fn dq_full(&self, slot: u32) -> u32 {
        self.barrier(1 + 2 * self.tile.stages + slot)
    }
    /// Slot `slot` is free again: the writer's bulk reductions have read it (the writer's lane 0 arrives).
    fn dq_empty(&self, slot: u32) -> u32 {
        self.barrier(1 + 2 * self.tile.stages + self.tile.dq_slots() + slot)
    }
    /// The convert queue's entry `slot` holds a tile (the writer's lane 0 arrives after writing it).
    fn convert_full(&self, slot: u32) -> u32 {
        self.barrier(2 + 2 * self.tile.stages + 2 * self.tile.dq_slots() + slot)
    }
    /// Entry `slot` is free again: every converter thread has read it.
    fn convert_empty(&self, slot: u32) -> u32 {
        self.barrier(2 + 2 * self.tile.stages + 2 * self.tile.dq_slots() + AttnBwdTile::CONVERT_SLOTS + slot)
    }
    /// Entry `slot`: the tile's [`tile_unit`].
    fn convert_entry(&self, slot: u32) -> u32 {
        self.base + self.tile.smem_convert_offset() + slot * AttnBwdTile::CONVERT_ENTRY_BYTES
    }
}

/// The descriptor fields of a K-major operand (K, V, Q, dO read along the head dimension): each 64-column block a
/// 128-byte swizzled tile with a row per key or query, [`SW128_64X64_B16`].
const K_MAJOR: u64 = wgmma::sw128_fields(&SW128_64X64_B16);
/// Bytes between the k16 slices of one swizzled 128-byte row (K-major operands): 32.
const K_STEP_BYTES: u32 = wgmma::k16_step_bytes(&SW128_64X64_B16);
/// Bytes between the k16 slices of an MN-major operand: two 8-row swizzle atoms, 2048.
const MN_K_STEP_BYTES: u32 = wgmma::k16_step_bytes(&sw128_mn_major(1, 64));
/// The named barrier among every consumer thread ([`Warpgroup::sync_consumers`]): any id but 0, the block's.
const CONSUMERS_BARRIER: u32 = 3;

/// One walk's keys and the query tiles it visits: for each query head of its key/value head, the query tiles
/// that see one of its keys (causal: from the first that does; else all), ascending from the first, or in the
/// staggered order from where [`DqSchedule`] starts this block, wrapping past the last tile. Its key block and
/// group come from the walk's place in the launch order ([`BwdLaunchOrder`]; the staggered kernels' key block is
/// [`DqSchedule::key_block`] of its place in the group).
#[derive(Clone, Copy)]
struct Block {
    kv_head: u32,
    batch: u32,
    /// The key block (its index in the group), and its first key.
    key_block: u32,
    key0: u32,
    /// The query tile this block's walk starts at.
    first_q_tile: u32,
    /// Query tiles per query head.
    q_tiles: u32,
}

impl Block {
    /// The walk dispatched `linear`-th in the launch order, or past the whole walks the split walks' piece in slot
    /// `linear − whole walks` ([`WalkSplit`]). The staggered kernels' walks are in the order's own (the group's key
    /// blocks one after another), their key block [`DqSchedule::key_block`] of the walk's place in its group.
    #[inline(always)]
    fn at<C: Config>(problem: &Problem, linear: u32) -> Block {
        let tile = C::TILE;
        let heads_kv = opaque_here(problem.heads_q) / problem.group;
        if C::STAGGERED {
            let schedule = staggered_schedule(problem, tile);
            let (x, group) = (linear % problem.key_blocks, linear / problem.key_blocks);
            let key_block = schedule.key_block(x);
            return Block {
                kv_head: group % heads_kv,
                batch: group / heads_kv,
                key_block,
                key0: key_block * tile.tile_kv,
                first_q_tile: schedule.first_visit(key_block),
                q_tiles: schedule.visits(key_block),
            };
        }
        let order =
            BwdLaunchOrder { key_blocks: problem.key_blocks, groups: problem.groups, tail_groups: problem.tail_groups };
        // Past the whole walks, a split walk's piece: its walk, and its run of the query tiles (full attention).
        let split = problem.walk_split::<C>();
        let whole = split.whole_walks();
        let piece = linear >= whole;
        let walk = if piece { whole + (linear - whole) / split.pieces } else { linear };
        let (key_block, group) = order.block(walk);
        let key0 = key_block * tile.tile_kv;
        // Bottom-right causal: query row i sees key j when j ≤ i + seq_k − seq_q; the first row that sees key0.
        let first_row = if problem.causal { (key0 + problem.seq_q).saturating_sub(problem.seq_k) } else { 0 };
        let tiles = problem.padded_rows / tile.tile_q;
        let first_q_tile = first_row / tile.tile_q;
        let (first_q_tile, q_tiles) =
            if piece { split.tiles(linear - whole) } else { (first_q_tile, tiles - first_q_tile) };
        Block { kv_head: group % heads_kv, batch: group / heads_kv, key_block, key0, first_q_tile, q_tiles }
    }

    /// Query tiles over all query heads of the group.
    #[inline(always)]
    fn items(&self, problem: &Problem) -> u32 {
        problem.group * self.q_tiles
    }

    /// Item `index`: (query head, first query row of the tile).
    #[inline(always)]
    fn item<C: Config>(&self, index: u32, problem: &Problem) -> (u32, u32) {
        let tile = C::TILE;
        let (member, mut q_tile) = (index / self.q_tiles, self.first_q_tile + index % self.q_tiles);
        // A walk that starts past the first tile (the staggered kernels' at full attention) wraps once past the
        // last tile (a causal walk, as an ascending one, ends there; `DqSchedule::q_tile` is the staggered kernels'
        // walk, as its tests check).
        let tiles = problem.padded_rows / tile.tile_q;
        if q_tile >= tiles {
            q_tile -= tiles;
        }
        (self.kv_head * problem.group + member, q_tile * tile.tile_q)
    }

    /// The staggered order's place of this block's additions to the query tile starting at `q0` among the blocks of
    /// its (batch, key/value head), [`DqSchedule::turn`]. (The ascending order's is the block index.)
    #[inline(always)]
    fn staggered_turn(&self, q0: u32, problem: &Problem, tile: AttnBwdTile) -> u32 {
        staggered_schedule(problem, tile).turn(self.key_block, q0 / tile.tile_q)
    }

    /// The query tile at (head, q0)'s flag in `flags` (one per 64-row unit: the tile's first unit's), or null where
    /// `flags` is null.
    #[inline(always)]
    fn tile_flag(&self, flags: *mut u32, head: u32, q0: u32, problem: &Problem) -> *mut u32 {
        if flags.is_null() {
            return core::ptr::null_mut();
        }
        let row = self.workspace_row(head, q0, problem);
        unsafe { flags.add(row / AttnBwdTile::DQ_UNIT_ROWS as usize) }
    }

    /// Row of (batch, head, q0) in the per-row workspaces.
    #[inline(always)]
    fn workspace_row(&self, head: u32, q0: u32, problem: &Problem) -> usize {
        (self.batch as usize * problem.heads_q as usize + head as usize) * problem.padded_rows as usize + q0 as usize
    }
}

/// The walks of this block, one after another: those at `blockIdx.x + k · gridDim.x` among the launch order's
/// whole walks and then the split walks' pieces, a piece where the index is past the whole walks ([`Block::at`];
/// host and kernel agree on the launch order's size and the split, the grid on how many blocks share them:
/// [`BwdLaunchOrder::launched_blocks`], [`WalkSplit::for_launch`]). Every role of the block walks the same
/// sequence, each with its own copy.
struct Walks {
    next: u32,
    end: u32,
}

impl Walks {
    #[inline(always)]
    fn new<C: Config>(problem: &Problem) -> Walks {
        let split = problem.walk_split::<C>();
        Walks { next: block_idx_x(), end: split.whole_walks() + split.split_walks * split.pieces }
    }

    #[inline(always)]
    fn next<C: Config>(&mut self, problem: &Problem) -> Option<Block> {
        if self.next >= self.end {
            return None;
        }
        let block = Block::at::<C>(problem, self.next);
        // Below 2^31 walks and pieces (the host checks): the sum does not wrap.
        self.next += grid_dim_x();
        Some(block)
    }

    /// Whether the walk [`Walks::next`] returned last is a split walk's piece (whose slot is then the block
    /// index: the whole walks end at a multiple of the grid where there is a split, [`WalkSplit::slot`]; the
    /// staggered kernels never split).
    #[inline(always)]
    fn in_piece<C: Config>(&self, problem: &Problem) -> bool {
        !C::STAGGERED && self.next - grid_dim_x() >= problem.walk_split::<C>().whole_walks()
    }
}

/// The staggered order's schedule of a (batch, key/value head): its key blocks against the padded query tiles. The
/// host launches the `_staggered` kernels only where its 32-bit arithmetic holds ([`DqSchedule::fits_u32`]).
#[inline(always)]
fn staggered_schedule(problem: &Problem, tile: AttnBwdTile) -> DqSchedule {
    DqSchedule {
        order: DqOrder::Staggered,
        causal: problem.causal,
        key_blocks: problem.key_blocks,
        q_tiles: problem.padded_rows / tile.tile_q,
        tile_q: tile.tile_q,
        tile_kv: tile.tile_kv,
        seq_q: problem.seq_q,
        seq_k: problem.seq_k,
    }
}

#[inline(always)]
unsafe fn attn_bwd<C: Config>(tensor_maps: [u64; 4], problem: &Problem) {
    let tile = C::TILE;
    let smem = SmemMap { base: smem::dynamic_smem_base(), tile };
    // The warpgroup and warp indices broadcast from lane 0, so that ptxas knows every branch on them is
    // warp-uniform: each role's loop state, addresses and wgmma descriptors can then live in uniform registers (held
    // in vector registers they took one R2UR per descriptor word before each wgmma, and the consumers' registers).
    let warpgroup = warp::broadcast_first(thread_idx_x() / AttnBwdTile::WARPGROUP_THREADS);
    let thread = thread_idx_x() % AttnBwdTile::WARPGROUP_THREADS;

    if thread_idx_x() == 0 {
        unsafe {
            mbarrier::init(smem.kv_full(), 1);
            mbarrier::init(smem.kv_empty(), tile.consumers * AttnBwdTile::WARPGROUP_THREADS);
            for stage in 0..tile.stages {
                mbarrier::init(smem.q_full(stage), 1);
                mbarrier::init(smem.q_empty(stage), tile.consumers * AttnBwdTile::WARPGROUP_THREADS);
            }
            for slot in 0..tile.dq_slots() {
                mbarrier::init(smem.dq_full(slot), AttnBwdTile::WARPGROUP_THREADS);
                mbarrier::init(smem.dq_empty(slot), 1);
            }
            for slot in 0..AttnBwdTile::CONVERT_SLOTS {
                mbarrier::init(smem.convert_full(slot), 1);
                mbarrier::init(smem.convert_empty(slot), AttnBwdTile::CONVERTER_THREADS);
            }
        }
        mbarrier::fence_init();
    }
    barrier::sync_threads();

    if warpgroup == 0 {
        setmaxnreg::dec::<24>();
        let warp = warp::broadcast_first(thread / 32);
        if warp == 0 {
            unsafe { produce::<C>(tensor_maps, &smem, problem) };
        } else if warp == 1 {
            unsafe { write_dq::<C>(&smem, problem) };
        } else if C::STAGGERED {
            unsafe { convert_tiles::<C>(&smem, thread - 64, problem) };
        }
    } else {
        setmaxnreg::inc::<240>();
        let consumer = warpgroup - 1;
        if C::TILE.split == BwdSplit::HeadDim {
            unsafe { consume_columns::<C>(&smem, consumer, thread, problem) };
        } else {
            unsafe { consume::<C>(&smem, consumer, thread, problem) };
        }
    }
}

/// The producer warp: per walk, each query tile's Q, dO, LSE and D into the ring, and after the first tile's the
/// walk's K and V, once the consumers are done with the last walk's (the ring and K/V's parity run on across
/// walks, so the next walk's first tile loads while the consumers finish the last). Every lane walks the loop and
/// waits for the stage (the walk's values are then warp-uniform, in uniform registers); one lane, chosen by
/// `elect.sync`, issues the copies (no loop over lanes around them).
#[inline(always)]
unsafe fn produce<C: Config>(tensor_maps: [u64; 4], smem: &SmemMap, problem: &Problem) {
    let tile = smem.tile;
    let [map_q, map_k, map_v, map_do] = tensor_maps;
    let leader = warp::elect_one();
    if leader {
        for map in tensor_maps {
            tma::prefetch_tensormap(map);
        }
    }
    // The walk's K and V, once the consumers are done with the last walk's.
    let load_kv = |block: &Block, kv_phase: u32| {
        unsafe { mbarrier::wait(smem.kv_empty(), kv_phase ^ 1) };
        if leader {
            let (kv_head, key0, batch) = (block.kv_head as i32, block.key0 as i32, block.batch as i32);
            unsafe {
                mbarrier::arrive_expect_tx(smem.kv_full(), 2 * tile.smem_kv_bytes());
                for column_block in 0..tile.column_blocks() {
                    let column = (column_block * AttnBwdTile::BOX_COLS) as i32;
                    tma::load_4d(smem.k(column_block), map_k, column, kv_head, key0, batch, smem.kv_full());
                    tma::load_4d(smem.v(column_block), map_v, column, kv_head, key0, batch, smem.kv_full());
                }
            }
        }
    };
    let mut ring = RingState::new(tile.stages);
    let mut walks = Walks::new::<C>(problem);
    let mut kv_phase = 0;
    while let Some(block) = walks.next::<C>(problem) {
        let batch = block.batch as i32;
        let items = block.items(problem);
        if items == 0 {
            // (Every walk visits a tile; were one not to, the consumers would still wait for its K and V.)
            load_kv(&block, kv_phase);
        }
        for index in 0..items {
            // The item's coordinates (a division) before the wait, so that they are not on the path from the
            // consumers' release to the copies (LLVM would sink them into the leader's branch, after the wait;
            // with one stage, at head dim 256, that path is every tile's).
            let (head, q0) = block.item::<C>(index, problem);
            let row = block.workspace_row(head, q0, problem);
            let (head, q0, row) = (opaque_here(head), opaque_here(q0), opaque_u64(row as u64) as usize);
            let stage = ring.stage;
            let full = smem.q_full(stage);
            unsafe { mbarrier::wait(smem.q_empty(stage), ring.phase ^ 1) };
            if leader {
                unsafe {
                    mbarrier::arrive_expect_tx(full, tile.stage_bytes());
                    for column_block in 0..tile.column_blocks() {
                        let column = (column_block * AttnBwdTile::BOX_COLS) as i32;
                        let (head, q0) = (head as i32, q0 as i32);
                        tma::load_4d(smem.q(stage, column_block), map_q, column, head, q0, batch, full);
                        tma::load_4d(smem.d_o(stage, column_block), map_do, column, head, q0, batch, full);
                    }
                    let rows_bytes = tile.smem_rows_bytes();
                    tma::load_bulk(smem.lse(stage), problem.lse_log2.add(row) as *const u8, rows_bytes, full);
                    tma::load_bulk(smem.dsum(stage), problem.dsum.add(row) as *const u8, rows_bytes, full);
                }
            }
            ring.advance();
            if index == 0 {
                load_kv(&block, kv_phase);
            }
        }
        kv_phase ^= 1;
    }
}

/// The dQ writer warp: per query tile, each consumer's staged dQ pieces added to the f32 accumulator by bulk
/// reduce-adds (one per piece, from lane 0), and the staging slot handed back once they are read. The consumers hand
/// a tile over through `dq_full` (every consumer thread arrives after its stores and a proxy fence, so each store
/// is ordered before the reductions' reads) and get the slot back through `dq_empty`, so they never wait for a
/// reduction, a claim or in the deterministic mode for their turn, unless the writer is a whole turn of slots
/// behind. The writer walks the block's walks and query tiles as the consumers do (the slots taken in turn across
/// walks) and computes each tile's accumulator row and turn itself.
///
/// A tile's first writer stores its pieces instead of adding them, so the accumulator needs no zeroing (zeros
/// would be written, evicted and read back from DRAM by the first additions). Which block is first: outside the
/// deterministic mode the one whose claim reaches the tile first ([`claim_tile`]; every other waits until that
/// block's stores are complete before it adds); the first claimant is running and its stores wait for nothing but
/// its own consumers, so no wait here needs another block to be resident. In the deterministic mode the tile's
/// first turn. In the staggered kernels at full attention (`convert_dq`) the tile's last turn
/// ([`DqSchedule::visitor_count`]) then hands the tile to the converter warps ([`convert_tiles`]), which write dQ
/// while the tile is still in the L2 (the conversion kernel reads it back from DRAM): there the last turns rotate
/// over the group's blocks, so each converts its share.
///
/// Deterministic mode: the warp waits for the tile's turn (acquire, [`bounded_wait`]), lane 0 issues the
/// consumers' reductions (each consumer adds its own pieces of the tile, [`AttnBwdTile::dq_run`]; at the tile's
/// first turn it stores them instead), and counts the block's consumers in once all are complete (release).
///
/// The chain that orders block A's writes before those of B, the next in line (the next turn, any block after the
/// first claimant, or the last turn's converter), in each element's order of modifications: A's stores or
/// reductions complete (`cp.async.bulk.wait_group`: the writes performed, not only the staging read) →
/// A's `fence.proxy.async.global` (its async-proxy writes now ordered before its later generic accesses) → A's
/// release on the semaphore or claim (`red.release.gpu`) → B's acquire (`ld.acquire.gpu`, or the claim's
/// `atom.acquire.gpu`) reads that value or a later one (release-acquire: A's
/// writes happen before B's later accesses) → B's `fence.proxy.async.global` (B's later async-proxy accesses
/// ordered after its acquire) → B's reductions; or, at the last turn, its lane 0's arrival on the convert queue
/// (release at CTA scope) → the converter threads' wait (acquire) → their loads of the accumulator. So no
/// reduction adds to a stale accumulator, the converter reads every addition, and in the deterministic mode each
/// element sees the additions in turn order, so the f32 sums round the same in every launch.
#[inline(always)]
unsafe fn write_dq<C: Config>(smem: &SmemMap, problem: &Problem) {
    let mut writer = Writer { tiles_before: 0, queue: RingState::new(AttnBwdTile::CONVERT_SLOTS) };
    let mut walks = Walks::new::<C>(problem);
    while let Some(block) = walks.next::<C>(problem) {
        unsafe { write_walk::<C>(smem, &block, &mut writer, problem) };
        writer.tiles_before += block.items(problem);
    }
    // The converter warps (the staggered kernels') stop at an entry without a tile.
    if C::STAGGERED {
        unsafe { hand_to_converter(smem, &mut writer.queue, NO_TILE) };
    }
}

/// What [`write_dq`] carries across walks.
struct Writer {
    /// Query tiles of the block's earlier walks: the staging slots are taken in turn across walks.
    tiles_before: u32,
    /// The convert queue's next entry.
    queue: RingState,
}

/// A convert-queue entry that holds no tile.
const NO_TILE: u32 = u32::MAX;

/// A query tile as the writer hands it on: the 64-row unit (over all (batch, head) pairs' padded rows) of its first
/// row, below 2^32 − 1 (the accumulator holds 16 KB and more per unit).
#[inline(always)]
fn tile_unit(row: usize) -> u32 {
    (row / AttnBwdTile::DQ_UNIT_ROWS as usize) as u32
}

/// What a tile's claim holds once its first claimant's stores are complete (added to the count of claims, which
/// stays below 2^31: one per walk or piece visiting the tile, and the host holds those below 2^31).
const CLAIM_STORED: u32 = 1 << 31;

/// Claims the dQ tile whose claim is `claim` for the writer warp (every lane calls it; lane 0 claims and waits):
/// true where this is the tile's first claim, whose block then stores the tile's pieces and publishes that with
/// [`CLAIM_STORED`]; false once a first claimant's stores are complete and acquired (waiting, bounded, if they are
/// not yet), after which the block may add to the tile.
#[inline(always)]
unsafe fn claim_tile(claim: *mut u32) -> bool {
    let before = if lane_id() == 0 { unsafe { atomic::atom_acquire_gpu_add(claim, 1) } } else { 0 };
    let before = warp::broadcast_first(before);
    if before == 0 {
        return true;
    }
    if before < CLAIM_STORED {
        unsafe { bounded_wait::wait_at_least_from_first_lane(claim, CLAIM_STORED) };
    }
    false
}

/// Puts `unit` (the [`tile_unit`] of a tile whose every addition is complete and acquired by lane 0, or
/// [`NO_TILE`]) in the convert queue once its slot is free (every lane waits; lane 0 writes).
#[inline(always)]
unsafe fn hand_to_converter(smem: &SmemMap, queue: &mut RingState, unit: u32) {
    let slot = queue.stage;
    unsafe { mbarrier::wait(smem.convert_empty(slot), queue.phase ^ 1) };
    if lane_id() == 0 {
        unsafe {
            smem::store_u32(smem.convert_entry(slot), unit);
            mbarrier::arrive(smem.convert_full(slot));
        }
    }
    queue.advance();
}

/// [`write_dq`] over one walk, whose first query tile is the block's `writer.tiles_before`-th.
#[inline(always)]
unsafe fn write_walk<C: Config>(smem: &SmemMap, block: &Block, writer: &mut Writer, problem: &Problem) {
    let tile = smem.tile;
    let leader = lane_id() == 0;
    // The `_staggered` kernels are deterministic only (no claims code in them).
    let deterministic = C::STAGGERED || !problem.dq_semaphores.is_null();
    let run = AttnBwdTile::DQ_PIECE_BYTES;
    for index in 0..block.items(problem) {
        let slot_index = writer.tiles_before + index;
        let (head, q0) = block.item::<C>(index, problem);
        let row = block.workspace_row(head, q0, problem);
        // The tile's semaphore (deterministic mode) or claim (else): one of them is null.
        let semaphore = block.tile_flag(problem.dq_semaphores, head, q0, problem);
        let claim = block.tile_flag(problem.dq_claims, head, q0, problem);
        // The block's turn comes after every consumer of the blocks whose turns come before its own.
        let turn = if C::STAGGERED { block.staggered_turn(q0, problem, tile) } else { block.key_block };
        let count = tile.consumers * turn;
        let mut first = deterministic && count == 0;
        let accum_tile = unsafe { problem.dq_accum.add(row * tile.head_dim as usize) };
        for consumer in 0..tile.consumers {
            let (slot, parity) = dq_slot::<C>(slot_index, consumer);
            unsafe { mbarrier::wait(smem.dq_full(slot), parity) };
            if consumer == 0 {
                if deterministic {
                    unsafe { bounded_wait::wait_at_least_from_first_lane(semaphore, count) };
                } else {
                    first = unsafe { claim_tile(claim) };
                }
            }
            if leader {
                if !first {
                    // After the acquire (the first consumer's, or where the acquire came before).
                    atomic::fence_proxy_async_global();
                }
                for piece in 0..tile.dq_pieces() {
                    let to = unsafe { accum_tile.add((tile.dq_run(consumer, piece) * run / 4) as usize) };
                    if first {
                        unsafe { tma::store_bulk(to as *mut u8, smem.dq(slot, piece), run) };
                    } else {
                        unsafe { tma::reduce_add_bulk_f32(to, smem.dq(slot, piece), run) };
                    }
                }
            }
        }
        // One bulk group per tile.
        if leader {
            tma::commit_group();
            if deterministic || first {
                tma::wait_group::<0>();
                atomic::fence_proxy_async_global();
                let (flag, value) = if deterministic { (semaphore, tile.consumers) } else { (claim, CLAIM_STORED) };
                unsafe { atomic::red_release_gpu_add(flag, value) };
            }
            tma::wait_group_read::<0>();
            for consumer in 0..tile.consumers {
                unsafe { mbarrier::arrive(smem.dq_empty(dq_slot::<C>(slot_index, consumer).0)) };
            }
        }
        // The staggered kernels: its own additions complete and every earlier turn's acquired, the last turn
        // converts.
        if C::STAGGERED && problem.convert_dq {
            let visitors = staggered_schedule(problem, tile).visitor_count(q0 / tile.tile_q);
            if turn + 1 == visitors {
                unsafe { hand_to_converter(smem, &mut writer.queue, tile_unit(row)) };
            }
        }
    }
}

/// The converter warps (the producer warpgroup's last two; `thread` their index, 0 to 63): each tile the writer
/// hands over ([`write_dq`]: its every addition complete and acquired), dQ = scale · the accumulator over its rows
/// below seq_q, in the input type and q's layout. Each thread keeps 8 columns and takes every
/// (64 / (head_dim / 8))-th row: per row two 16-byte loads from the L2 (`.cg`: other SMs wrote the tile during this
/// launch) and one 16-byte store. Until an entry without a tile.
#[inline(always)]
unsafe fn convert_tiles<C: Config>(smem: &SmemMap, thread: u32, problem: &Problem) {
    let tile = smem.tile;
    let chunks = tile.head_dim / AttnBwdRows::COLUMNS_PER_THREAD;
    let rows_apart = AttnBwdTile::CONVERTER_THREADS / chunks;
    // Entries taken so far: the slot and the parity of its barriers' phase (one register across the tile loop).
    let mut taken = 0u32;
    loop {
        let (slot, phase) = (taken % AttnBwdTile::CONVERT_SLOTS, taken / AttnBwdTile::CONVERT_SLOTS % 2);
        unsafe { mbarrier::wait(smem.convert_full(slot), phase) };
        let at = smem.convert_entry(slot);
        let unit = unsafe { smem::load_u32(at) };
        unsafe { mbarrier::arrive(smem.convert_empty(slot)) };
        taken += 1;
        if unit == NO_TILE {
            return;
        }
        let units = problem.padded_rows / AttnBwdTile::DQ_UNIT_ROWS;
        let (batch_head, q0) = (unit / units, unit % units * AttnBwdTile::DQ_UNIT_ROWS);
        let (head, batch) = ((batch_head % problem.heads_q) as usize, (batch_head / problem.heads_q) as usize);
        let rows = tile.tile_q.min(problem.seq_q - q0);
        // From values opaque here: LLVM would otherwise compute the thread's column offsets and the row step once
        // before the loop and hold them across the waits (registers these warps, at 24, do not have).
        let thread = opaque_here(thread);
        let rows_apart = opaque_here(rows_apart);
        let column = thread % chunks * AttnBwdRows::COLUMNS_PER_THREAD;
        // The tile's accumulator: whole 64-row units from its first row's.
        let unit_values = (AttnBwdTile::DQ_UNIT_ROWS * tile.head_dim) as usize;
        let accum_tile = unsafe { problem.dq_accum.add(unit as usize * unit_values) };
        let mut r = thread / chunks;
        let mut to =
            unsafe { problem.dq.add(problem.dq_strides.offset(batch, (q0 + r) as usize, head) + column as usize) };
        let to_step = problem.dq_strides.offset(0, rows_apart as usize, 0);
        while r < rows {
            let from = unsafe { accum_tile.add(dq_accum_index(r as usize, column as usize, tile.head_dim as usize)) };
            let (lo, hi) = unsafe { (global::load_f32x4_cg(from), global::load_f32x4_cg(from.add(4))) };
            unsafe { global::store_u32x4(to as *mut u32, scale_and_pack(lo, hi, problem.scale, C::pack2)) };
            to = unsafe { to.add(to_step) };
            r += rows_apart;
        }
    }
}

/// The staging slot (each [`AttnBwdTile::dq_pieces`] pieces) that consumer `consumer` stages its dQ of the
/// block's `index`-th query tile (counted across its walks) in, and the parity of that slot's barriers for it: one
/// of the consumer's own ([`AttnBwdTile::dq_slots_per_consumer`]), the tiles taking them in turn.
#[inline(always)]
const fn dq_slot<C: Config>(index: u32, consumer: u32) -> (u32, u32) {
    let own = C::TILE.dq_slots_per_consumer();
    (consumer * own + index % own, (index / own) % 2)
}

/// What a consumer warpgroup needs to issue its matrix work.
struct Warpgroup<'a> {
    smem: &'a SmemMap,
    consumer: u32,
    /// Byte offset of this warpgroup's 64 keys inside each 64-column block of K and V.
    keys_offset: u32,
    /// The first of the two key rows (m64 fragment rows r and r + 8, from the warpgroup's first key) this thread
    /// holds, and the first of the two columns it holds in each 8-column block.
    row: u32,
    column: u32,
}

impl<'a> Warpgroup<'a> {
    /// Consumer warpgroup `consumer` as its thread `thread` (0..128) sees it; `keys_offset` as the field.
    #[inline(always)]
    fn new(smem: &'a SmemMap, consumer: u32, thread: u32, keys_offset: u32) -> Self {
        let (warp, lane) = (thread / 32, thread % 32);
        Warpgroup { smem, consumer, keys_offset, row: 16 * warp + lane / 4, column: 2 * (lane % 4) }
    }

    /// acc = A·Bᵀ over the head dimension for this warpgroup's 64 keys: A = K or V (`a` its first column block),
    /// B = Q or dO of a stage from this warpgroup's first query (`b`, in the first column block), both K-major; one
    /// wgmma per 16 head-dim columns.
    #[inline(always)]
    fn issue_keys_by_queries<C: Config>(&self, acc: &mut C::Scores, a: u32, b: u32) {
        let (kv_block_bytes, q_block_bytes) = (self.smem.kv_block_bytes(), self.smem.q_block_bytes());
        // K and V do not move: descriptors computed from addresses opaque here are computed at each use, one add
        // each, instead of all of them once before the loop over query tiles and held (spilled) across it.
        let desc_a = wgmma::desc(opaque_here(a + self.keys_offset), K_MAJOR);
        let desc_b = wgmma::desc(b, K_MAJOR);
        seq!(STEP in 0..16 {
            if STEP < C::TILE.head_dim / 16 {
                let (block, k_offset) = (STEP / 4, (STEP % 4) * K_STEP_BYTES);
                let step_a = wgmma::desc_advance(desc_a, block * kv_block_bytes + k_offset);
                let step_b = wgmma::desc_advance(desc_b, block * q_block_bytes + k_offset);
                unsafe { C::mma_scores(acc, step_a, step_b, STEP > 0) };
            }
        });
    }

    /// acc += Aᵀ-fragment · B over the query tile: A (this warpgroup's keys × the tile's queries) packed in
    /// registers, B = dO or Q of a stage (`b` its first column block) read MN-major; one wgmma per 16 queries.
    #[inline(always)]
    fn issue_keys_by_head_dim<C: Config>(&self, acc: &mut C::Acc, a: &C::Packed, b: u32) {
        // B is MN-major: head-dim blocks (N) of `tile_q` query rows (k), `q_block_bytes` apart.
        let b_major = const { wgmma::sw128_fields(&sw128_mn_major(C::TILE.head_dim / 64, C::TILE.tile_q)) };
        let desc_b = wgmma::desc(b, b_major);
        let a = a.as_ref();
        // `seq!` repeats its body in one scope: each step's descriptor gets a name of its own (a shadowing
        // `let desc_b` would advance from the previous step's, not from the tile's start).
        seq!(STEP in 0..8 {
            if STEP < C::TILE.tile_q / 16 {
                let step_b = wgmma::desc_advance(desc_b, STEP * MN_K_STEP_BYTES);
                let step = [a[4 * STEP], a[4 * STEP + 1], a[4 * STEP + 2], a[4 * STEP + 3]];
                unsafe { C::mma_rs(acc, &step, step_b) };
            }
        });
    }

    /// acc += A·B over the query tile for this warpgroup's columns, where the consumers split the head dim: A = a
    /// shared score tile (`a`: Pᵀ or dSᵀ, the block's keys × the tile's queries, K-major), B = dO or Q of a stage
    /// from this warpgroup's first column block (`b`), read MN-major; one wgmma per 16 queries.
    #[inline(always)]
    fn issue_keys_by_columns<C: Config>(&self, acc: &mut C::Acc, a: u32, b: u32) {
        let b_major = const { wgmma::sw128_fields(&sw128_mn_major(C::TILE.consumer_blocks(), C::TILE.tile_q)) };
        let desc_a = wgmma::desc(opaque_here(a), K_MAJOR);
        let desc_b = wgmma::desc(b, b_major);
        seq!(STEP in 0..4 {
            if STEP < C::TILE.tile_q / 16 {
                let step_a = wgmma::desc_advance(desc_a, STEP * K_STEP_BYTES);
                let step_b = wgmma::desc_advance(desc_b, STEP * MN_K_STEP_BYTES);
                unsafe { C::mma_ss_columns(acc, step_a, step_b) };
            }
        });
    }

    /// acc = dS · K[:, 64 · column_block ..][.. 64] over this warpgroup's 64 keys for 64 queries: A = dSᵀ from the
    /// score tile block at `ds`, B = K, both read MN-major; one wgmma per 16 keys.
    #[inline(always)]
    fn issue_dq_at<C: Config>(&self, acc: &mut [f32; PIECE_VALUES], ds: u32, column_block: u32) {
        // Both tiles stay put; opaque addresses keep their descriptors from being held across the loop (see
        // `issue_keys_by_queries`).
        // dSᵀ: blocks of 64 queries (M), `ds_block_bytes` apart, one row per key (k); K: head-dim blocks (N) of
        // `tile_kv` key rows (k).
        let ds_major = const { wgmma::sw128_fields(&sw128_mn_major(C::TILE.tile_q / 64, C::TILE.consumer_keys())) };
        let k_major = const { wgmma::sw128_fields(&sw128_mn_major(C::TILE.head_dim / 64, C::TILE.tile_kv)) };
        let desc_a = wgmma::desc(opaque_here(ds), ds_major);
        let desc_b = wgmma::desc(opaque_here(self.smem.k(column_block) + self.keys_offset), k_major);
        seq!(STEP in 0..4 {
            let step_a = wgmma::desc_advance(desc_a, STEP * MN_K_STEP_BYTES);
            let step_b = wgmma::desc_advance(desc_b, STEP * MN_K_STEP_BYTES);
            unsafe { C::mma_ss::<1, 1>(acc, step_a, step_b, STEP > 0) };
        });
    }

    /// acc = this warpgroup's dQ piece `piece` over all the block's keys, where the consumers split the tile's
    /// pieces ([`AttnBwdTile::dq_run`]: 64 queries of one unit × 64 columns of one block): dS · K, A = every
    /// consumer's dSᵀ of the score-tile set at `set` (for each consumer's 64 keys the unit's 64-query block of its
    /// tile), B = K, both read MN-major; one wgmma per 16 keys.
    #[inline(always)]
    fn issue_dq_piece<C: Config>(&self, acc: &mut [f32; PIECE_VALUES], set: u32, piece: u32) {
        let tile = C::TILE;
        // A: one 64-query block (M) of `consumer_keys` key rows (k) per consumer tile; B: head-dim blocks (N) of
        // `tile_kv` key rows (k).
        let ds_major = const { wgmma::sw128_fields(&sw128_mn_major(1, C::TILE.tile_kv)) };
        let k_major = const { wgmma::sw128_fields(&sw128_mn_major(C::TILE.head_dim / 64, C::TILE.tile_kv)) };
        let (units, blocks) = (tile.tile_q / AttnBwdTile::DQ_UNIT_ROWS, tile.column_blocks());
        let run = tile.dq_run(self.consumer, piece);
        // The one-unit and one-block tiles spelled out: `run / blocks` alone would compute a unit at head dim 128,
        // where the tile has one (nothing tells the compiler that `run < blocks`).
        let (unit, block) = match (units, blocks) {
            (1, _) => (0, run),
            (_, 1) => (run, 0),
            _ => (run / blocks, run % blocks),
        };
        // Both tiles stay put (see `issue_dq_at`).
        let desc_a = wgmma::desc(opaque_here(set + unit * self.smem.ds_block_bytes()), ds_major);
        let desc_b = wgmma::desc(opaque_here(self.smem.k(block)), k_major);
        let steps_per_tile = tile.consumer_keys() / 16;
        seq!(STEP in 0..16 {
            if STEP < C::TILE.tile_kv / 16 {
                let (consumer_tile, k_step) = (STEP / steps_per_tile, STEP % steps_per_tile);
                let a_offset = consumer_tile * tile.smem_ds_bytes() + k_step * MN_K_STEP_BYTES;
                let step_a = wgmma::desc_advance(desc_a, a_offset);
                let step_b = wgmma::desc_advance(desc_b, STEP * MN_K_STEP_BYTES);
                unsafe { C::mma_ss::<1, 1>(acc, step_a, step_b, STEP > 0) };
            }
        });
    }

    /// A barrier among every consumer thread (the score tiles' hand-overs: every consumer's dSᵀ of a tile stored
    /// before any consumer's products read them); unaligned, so correct even if a warp arrives diverged.
    #[inline(always)]
    fn sync_consumers<C: Config>(&self) {
        let consumers = C::TILE.consumers;
        barrier::named_sync_id_unaligned(CONSUMERS_BARRIER, consumers * AttnBwdTile::WARPGROUP_THREADS);
    }

    /// This thread is done with the stage guarded by the empty barrier `bar`: every consumer thread arrives, as
    /// every one read the stage's LSE and D with ordinary loads, so each read is ordered before the producer's next
    /// bulk copy into the stage by that thread's own release (a leader's arrival behind a named barrier is ordered
    /// too, but compute-sanitizer's racecheck does not follow that chain and reports each read as a hazard).
    #[inline(always)]
    fn release(&self, bar: u32) {
        unsafe { mbarrier::arrive(bar) };
    }
}

/// Value `i` of an m64n64 (or m64nN) accumulator fragment: (row half: 0 for r, 1 for r + 8; column offset from
/// the thread's first column).
#[inline(always)]
const fn value_position(i: usize) -> (u32, u32) {
    let (block, half, pair) = (i / 4, (i / 2) % 2, i % 2);
    (half as u32, 8 * block as u32 + pair as u32)
}

/// The consumer warpgroup `consumer` where the consumers split the keys: per walk, its 64 keys against every
/// query tile of the walk, then the walk's K and V handed back and its dK and dV stored (the ring, K/V's parity and
/// the staging slots' turns run on across walks).
#[inline(always)]
unsafe fn consume<C: Config>(smem: &SmemMap, consumer: u32, thread: u32, problem: &Problem) {
    let tile = C::TILE;
    let warpgroup = Warpgroup::new(smem, consumer, thread, consumer * tile.consumer_keys() * 128);
    let mut ring = RingState::new(tile.stages);
    let mut walks = Walks::new::<C>(problem);
    let (mut kv_phase, mut tiles_before) = (0, 0);
    while let Some(block) = walks.next::<C>(problem) {
        let block = &block;
        // This warpgroup's first key.
        let key0 = block.key0 + consumer * tile.consumer_keys();
        let mut dk = C::ACC_ZERO;
        let mut dv = C::ACC_ZERO;
        unsafe { mbarrier::wait(smem.kv_full(), kv_phase) };
        for index in 0..block.items(problem) {
            let (_, q0) = block.item::<C>(index, problem);
            let stage = ring.stage;
            unsafe { mbarrier::wait(smem.q_full(stage), ring.phase) };

            // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ.
            let mut s = C::SCORES_ZERO;
            let mut dp = C::SCORES_ZERO;
            wgmma::fence();
            warpgroup.issue_keys_by_queries::<C>(&mut s, smem.k(0), smem.q(stage, 0));
            wgmma::commit_group();
            warpgroup.issue_keys_by_queries::<C>(&mut dp, smem.v(0), smem.d_o(stage, 0));
            wgmma::commit_group();
            wgmma::wait_group::<1>();
            wgmma::fence_operands(s.as_mut());

            // Pᵀ in place of Sᵀ while dPᵀ's products run. Keys past seq_k were loaded as zeros: their dV and dK are
            // never stored and their zero K rows add nothing to dQ once dS is packed finite ([`pack_finite`]), so only
            // the causal mask needs applying. The block's key bound from a value opaque here: held across the loop, it
            // is spilled.
            let key_end = opaque_here(key0);
            let masked = crosses_diagonal(problem, key_end + tile.consumer_keys(), q0);
            unsafe { probabilities::<C>(&mut s, &warpgroup, stage, key0, q0, 0, masked, problem) };
            let p = pack::<C>(&s);

            // dV += Pᵀ·dO, issued behind dPᵀ's products (its wgmma reads P from registers, so the exponentials stay
            // ahead of dPᵀ's wait); then dSᵀ = Pᵀ ∘ (dPᵀ − D).
            wgmma::fence();
            warpgroup.issue_keys_by_head_dim::<C>(&mut dv, &p, smem.d_o(stage, 0));
            wgmma::commit_group();
            wgmma::wait_group::<1>();
            wgmma::fence_operands(dp.as_mut());
            unsafe { score_gradients::<C>(&s, &mut dp, &warpgroup, stage, 0) };
            let ds = pack_finite::<C>(&dp);

            // dSᵀ goes to the stage's set of score tiles, which every consumer's dQ products of the stage's previous
            // tile (at least two back) have read (each waited for them before the next tile's barrier), and the barrier
            // after the stores gives this consumer every consumer's dSᵀ of the tile for its dQ piece over all the
            // block's keys.
            unsafe { store_ds::<C>(&ds, &warpgroup, smem.ds_set(stage) + consumer * tile.smem_ds_bytes(), 0) };
            smem::fence_proxy_async_shared();
            warpgroup.sync_consumers::<C>();

            // dK += dSᵀ·Q and this consumer's piece of dQ = dS·K; where the tile says so ([`AttnBwdTile::dq_under_dk`])
            // the piece first, in a group of its own, staged for the writer while dK's products run.
            let under_dk = tile.dq_under_dk && !C::STAGGERED;
            let mut dq = [0.0f32; PIECE_VALUES];
            wgmma::fence();
            if under_dk {
                warpgroup.issue_dq_piece::<C>(&mut dq, smem.ds_set(stage), 0);
                wgmma::commit_group();
                warpgroup.issue_keys_by_head_dim::<C>(&mut dk, &ds, smem.q(stage, 0));
                wgmma::commit_group();
                wgmma::wait_group::<1>();
                wgmma::fence_operands(dv.as_mut());
                wgmma::fence_operands(&mut dq);
            } else {
                warpgroup.issue_keys_by_head_dim::<C>(&mut dk, &ds, smem.q(stage, 0));
                warpgroup.issue_dq_piece::<C>(&mut dq, smem.ds_set(stage), 0);
                wgmma::commit_group();
                wgmma::wait_group::<0>();
                wgmma::fence_operands(dv.as_mut());
                wgmma::fence_operands(dk.as_mut());
                wgmma::fence_operands(&mut dq);
                // dK's products read the stage's Q: the stage goes back once they are done.
                warpgroup.release(smem.q_empty(stage));
            }
            // One piece per consumer and tile (gpu/abi's table checks it): no second product.
            let second = |acc: &mut [f32; PIECE_VALUES]| warpgroup.issue_dq_piece::<C>(acc, smem.ds_set(stage), 1);
            unsafe { add_dq::<C>(&dq, &warpgroup, tiles_before + index, second) };
            if under_dk {
                wgmma::wait_group::<0>();
                wgmma::fence_operands(dk.as_mut());
                warpgroup.release(smem.q_empty(stage));
            }
            ring.advance();
        }
        // Every product of the walk is done (its last tile waited for them): K and V go back to the producer.
        warpgroup.release(smem.kv_empty());
        kv_phase ^= 1;
        tiles_before += block.items(problem);
        // The first key from values opaque here: computed before the loop and held across it, it is spilled.
        let key0 = block.key0 + opaque_here(consumer) * tile.consumer_keys();
        if walks.in_piece::<C>(problem) {
            unsafe { store_partial::<C>(&dk, &dv, &warpgroup, problem) };
        } else {
            unsafe { store_dk_dv::<C>(&dk, &dv, &warpgroup, block, key0, 0, problem) };
        }
    }
}

/// The walk just consumed is a split walk's piece ([`WalkSplit`]): this warpgroup's partial dK and dV (f32, dK
/// unscaled) to its keys' rows of the piece's slot (the block index) of the workspace, as [`store_dk_dv`] lays
/// out dK and dV; [`sum_pieces`] adds the slots up after the kernel.
#[inline(always)]
unsafe fn store_partial<C: Config>(dk: &C::Acc, dv: &C::Acc, warpgroup: &Warpgroup, problem: &Problem) {
    let tile = C::TILE;
    let (dk, dv) = (dk.as_ref(), dv.as_ref());
    let tensor = (tile.tile_kv * tile.head_dim) as usize;
    // From values opaque here, as `store_dk_dv`'s: computed before the walk's loop and held across it, they spill.
    let (row, first_column) = (opaque_here(warpgroup.row), opaque_here(warpgroup.column));
    let key0 = opaque_here(warpgroup.consumer) * tile.consumer_keys();
    let slot = problem.split_accum.wrapping_add(block_idx_x() as usize * 2 * tensor);
    seq!(HALF in 0..2 {
        let key = (key0 + row + 8 * HALF) as usize;
        seq!(BLOCK in 0..16 {
            if 4 * BLOCK < dk.len() {
                let i = 4 * BLOCK + 2 * HALF;
                let at = slot.wrapping_add(key * tile.head_dim as usize + (8 * BLOCK + first_column) as usize);
                unsafe {
                    global::store_f32x2(at, dk[i], dk[i + 1]);
                    global::store_f32x2(at.wrapping_add(tensor), dv[i], dv[i + 1]);
                }
            }
        });
    });
}

/// The consumer warpgroup `consumer` where the consumers split the head dim ([`BwdSplit::HeadDim`]): per query
/// tile, the scores of the walk's keys against its share of the queries, written to the shared Pᵀ and dSᵀ tiles;
/// then, from both consumers' halves, its columns of dV += Pᵀ·dO, dK += dSᵀ·Q and dQ = dS·K; per walk as
/// [`consume`].
#[inline(always)]
unsafe fn consume_columns<C: Config>(smem: &SmemMap, consumer: u32, thread: u32, problem: &Problem) {
    let tile = C::TILE;
    let warpgroup = Warpgroup::new(smem, consumer, thread, 0);
    // This warpgroup's queries of each tile (columns of the score tiles) and its first column block of dK, dV, dQ.
    let first_query = consumer * tile.consumer_queries();
    let first_block = tile.consumer_first_block(consumer);
    let (p_tile, ds_tile) = (smem.ds(0), smem.ds(1));
    let mut ring = RingState::new(tile.stages);
    let mut walks = Walks::new::<C>(problem);
    let (mut kv_phase, mut tiles_before) = (0, 0);
    while let Some(block) = walks.next::<C>(problem) {
        let block = &block;
        let key0 = block.key0;
        let mut dk = C::ACC_ZERO;
        let mut dv = C::ACC_ZERO;
        unsafe { mbarrier::wait(smem.kv_full(), kv_phase) };
        for index in 0..block.items(problem) {
            let (_, q0) = block.item::<C>(index, problem);
            // With one stage its buffers' addresses are the same in every iteration, and LLVM would hoist every
            // descriptor of them out of the loop (32 of 64 bits for the scores alone, spilled); opaque here, they are
            // computed at each use, one add each.
            let stage = opaque_here(ring.stage);
            unsafe { mbarrier::wait(smem.q_full(stage), ring.phase) };

            // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ for this warpgroup's queries (a 128-byte row each in every column block).
            let mut s = C::SCORES_ZERO;
            let mut dp = C::SCORES_ZERO;
            wgmma::fence();
            warpgroup.issue_keys_by_queries::<C>(&mut s, smem.k(0), smem.q(stage, 0) + first_query * 128);
            warpgroup.issue_keys_by_queries::<C>(&mut dp, smem.v(0), smem.d_o(stage, 0) + first_query * 128);
            wgmma::commit_group();
            wgmma::wait_group::<0>();
            wgmma::fence_operands(s.as_mut());
            wgmma::fence_operands(dp.as_mut());

            let masked = crosses_diagonal(problem, key0 + tile.consumer_keys(), q0 + first_query);
            unsafe {
                probabilities::<C>(&mut s, &warpgroup, stage, key0, q0, first_query, masked, problem);
                score_gradients::<C>(&s, &mut dp, &warpgroup, stage, first_query);
            }
            let p = pack::<C>(&s);
            let ds = pack_finite::<C>(&dp);

            // Pᵀ and dSᵀ to the shared tiles once every consumer's products of the previous tile have read them (each
            // waited for its wgmma groups before staging its dQ).
            warpgroup.sync_consumers::<C>();
            unsafe {
                store_ds::<C>(&p, &warpgroup, p_tile, first_query);
                store_ds::<C>(&ds, &warpgroup, ds_tile, first_query);
            }
            smem::fence_proxy_async_shared();
            warpgroup.sync_consumers::<C>();

            // dV += Pᵀ·dO and dK += dSᵀ·Q over this warpgroup's columns, and its first piece of dQ = dS·K.
            let mut dq = [0.0f32; PIECE_VALUES];
            wgmma::fence();
            warpgroup.issue_keys_by_columns::<C>(&mut dv, p_tile, smem.d_o(stage, first_block));
            warpgroup.issue_keys_by_columns::<C>(&mut dk, ds_tile, smem.q(stage, first_block));
            warpgroup.issue_dq_at::<C>(&mut dq, ds_tile, first_block);
            wgmma::commit_group();
            wgmma::wait_group::<0>();
            wgmma::fence_operands(dv.as_mut());
            wgmma::fence_operands(dk.as_mut());
            wgmma::fence_operands(&mut dq);
            let second = |acc: &mut [f32; PIECE_VALUES]| warpgroup.issue_dq_at::<C>(acc, ds_tile, first_block + 1);
            unsafe { finish_tile::<C>(&warpgroup, stage, tiles_before + index, &dq, second) };
            ring.advance();
        }
        // Every product of the walk is done (its last tile waited for them): K and V go back to the producer.
        warpgroup.release(smem.kv_empty());
        kv_phase ^= 1;
        tiles_before += block.items(problem);
        unsafe { store_dk_dv::<C>(&dk, &dv, &warpgroup, block, key0, first_block * AttnBwdTile::BOX_COLS, problem) };
    }
}

/// The end of the block's `index`-th query tile (counted across its walks) for one consumer, once its products
/// have read the stage: the stage handed back, then the tile's dQ staged for the writer warp ([`add_dq`]: `dq` the
/// first piece, `second` issuing the second's product).
#[inline(always)]
unsafe fn finish_tile<C: Config>(
    warpgroup: &Warpgroup,
    stage: u32,
    index: u32,
    dq: &[f32; PIECE_VALUES],
    second: impl FnOnce(&mut [f32; PIECE_VALUES]),
) {
    warpgroup.release(warpgroup.smem.q_empty(stage));
    unsafe { add_dq::<C>(dq, warpgroup, index, second) };
}

/// Whether the causal mask hides any key before `key_end` from query `first_query` (and so from some query of a tile
/// that starts there): key j is hidden from query i when j > i + seq_k − seq_q.
#[inline(always)]
fn crosses_diagonal(problem: &Problem, key_end: u32, first_query: u32) -> bool {
    problem.causal && first_query + problem.seq_k < key_end - 1 + problem.seq_q
}

/// Pᵀ = 2^(Sᵀ·scale·log2 e − LSE·log2 e) in place of Sᵀ (0 where the causal mask hides the key), LSE per query
/// column from the stage's row (the fragment's column 0 is the tile's query `first_query`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn probabilities<C: Config>(
    s: &mut C::Scores,
    warpgroup: &Warpgroup,
    stage: u32,
    key0: u32,
    q0: u32,
    first_query: u32,
    masked: bool,
    problem: &Problem,
) {
    let lse = warpgroup.smem.lse(stage) + 4 * first_query;
    let scale_log2 = problem.scale_log2;
    let s = s.as_mut();
    seq!(BLOCK in 0..16 {
        if 4 * BLOCK < s.len() {
            let column = 8 * BLOCK + warpgroup.column;
            let (lse0, lse1) = unsafe { smem::load_f32x2(lse + 4 * column) };
            seq!(HALF in 0..2 {
                seq!(PAIR in 0..2 {
                    let i = 4 * BLOCK + 2 * HALF + PAIR;
                    let row_lse = if PAIR == 0 { lse0 } else { lse1 };
                    let mut probability = mufu::ex2_approx(core::intrinsics::fmaf32(s[i], scale_log2, -row_lse));
                    if masked {
                        // Key j is hidden from query row i when j > i + seq_k − seq_q.
                        let key = key0 + warpgroup.row + 8 * HALF;
                        let query = q0 + first_query + column + PAIR;
                        if key + problem.seq_q > query + problem.seq_k {
                            probability = 0.0;
                        }
                    }
                    s[i] = probability;
                });
            });
        }
    });
}

/// dSᵀ = Pᵀ ∘ (dPᵀ − D) in place of dPᵀ, D per query column from the stage's row.
#[inline(always)]
unsafe fn score_gradients<C: Config>(
    p: &C::Scores,
    dp: &mut C::Scores,
    warpgroup: &Warpgroup,
    stage: u32,
    first_query: u32,
) {
    let dsum = warpgroup.smem.dsum(stage) + 4 * first_query;
    let (p, dp) = (p.as_ref(), dp.as_mut());
    seq!(BLOCK in 0..16 {
        if 4 * BLOCK < p.len() {
            let column = 8 * BLOCK + warpgroup.column;
            let (d0, d1) = unsafe { smem::load_f32x2(dsum + 4 * column) };
            seq!(HALF in 0..2 {
                seq!(PAIR in 0..2 {
                    let i = 4 * BLOCK + 2 * HALF + PAIR;
                    dp[i] = p[i] * (dp[i] - if PAIR == 0 { d0 } else { d1 });
                });
            });
        }
    });
}

/// A tile of probabilities (or their gradients) as the 16-bit A fragments of the k16 steps over the queries:
/// values 2i and 2i + 1 are neighbours in a row.
#[inline(always)]
fn pack<C: Config>(values: &C::Scores) -> C::Packed {
    pack_pairs::<C>(values, C::pack2)
}

/// [`pack`] saturated to the type's finite range ([`Config::pack2_finite`], ±∞ to ±the largest finite value, NaN
/// kept), for dS: a key past seq_k, which is loaded as zeros, has a probability of 2^(−LSE·log2 e) (the causal mask
/// hides such keys, full attention does not), so where a row's LSE is far below 0 its dS overflows, and ±∞ · 0 in
/// dQ = dS·K would be NaN; saturated, the zero K row makes its term 0. A real key's dS is P ≤ 1 times dP − D, so
/// the saturation reaches it only where dP − D is past the type's range already. The saturating conversion is one
/// instruction, as the plain one.
#[inline(always)]
fn pack_finite<C: Config>(values: &C::Scores) -> C::Packed {
    pack_pairs::<C>(values, C::pack2_finite)
}

#[inline(always)]
fn pack_pairs<C: Config>(values: &C::Scores, pack2: impl Fn(f32, f32) -> u32) -> C::Packed {
    let mut packed = C::PACKED_ZERO;
    {
        let (values, to) = (values.as_ref(), packed.as_mut());
        seq!(I in 0..32 {
            if I < to.len() {
                to[I] = pack2(values[2 * I], values[2 * I + 1]);
            }
        });
    }
    packed
}

/// Writes this thread's packed Pᵀ or dSᵀ values into the score tile at `base`: per 64 queries one 64 × 64 block, a
/// 128-byte swizzled row per key with the block's queries along it (addressed by the layout algebra's
/// [`SW128_64X64_B16`]), the fragment's column 0 at query `first_query` (where that is not 0, the fragment's
/// columns stay inside the first block).
#[inline(always)]
unsafe fn store_ds<C: Config>(ds: &C::Packed, warpgroup: &Warpgroup, base: u32, first_query: u32) {
    let block_bytes = warpgroup.smem.ds_block_bytes();
    let ds = ds.as_ref();
    // The offsets depend on the thread only; computed from values opaque here, they are computed here instead of
    // once before the loop over query tiles and held (spilled, at its register pressure) until now.
    let (row, first_column) = (opaque_here(warpgroup.row), opaque_here(warpgroup.column) + first_query);
    seq!(I in 0..32 {
        if I < ds.len() {
            let (half, column) = value_position(2 * I);
            let (block, column) = (column / 64, column % 64);
            let offset = block * block_bytes + SW128_64X64_B16.crd2idx_u32(&[row + 8 * half, first_column + column]);
            unsafe { smem::store_u32(base + offset, ds[I]) };
        }
    });
}

/// Stages this consumer's dQ of the tile for the writer warp, which adds it to the accumulator ([`write_dq`]): each
/// piece (64 queries × 64 columns, [`AttnBwdTile::dq_run`]) stored by every thread into the pieces of the tile's
/// staging slot ([`dq_slot`]) once it is free again (`dq` holds the first piece's values; where there are two,
/// `second` issues the second piece's product, which runs while they are stored), then every thread arrives on
/// `dq_full` after a proxy fence (the writer's bulk reductions read the slot: its stores ordered before those
/// reads).
#[inline(always)]
unsafe fn add_dq<C: Config>(
    dq: &[f32; PIECE_VALUES],
    warpgroup: &Warpgroup,
    index: u32,
    second: impl FnOnce(&mut [f32; PIECE_VALUES]),
) {
    let (tile, smem, consumer) = (C::TILE, warpgroup.smem, warpgroup.consumer);
    let two_pieces = tile.dq_pieces() == 2;
    let mut second_piece = [0.0f32; PIECE_VALUES];
    if two_pieces {
        wgmma::fence();
        second(&mut second_piece);
        wgmma::commit_group();
    }
    let (slot, parity) = dq_slot::<C>(index, consumer);
    unsafe { mbarrier::wait(smem.dq_empty(slot), parity ^ 1) };
    unsafe { stage_dq(dq, warpgroup, smem.dq(slot, 0)) };
    if two_pieces {
        wgmma::wait_group::<0>();
        wgmma::fence_operands(&mut second_piece);
        unsafe { stage_dq(&second_piece, warpgroup, smem.dq(slot, 1)) };
    }
    // The staging goes to the writer's bulk reductions (the async proxy).
    smem::fence_proxy_async_shared();
    unsafe { mbarrier::arrive(smem.dq_full(slot)) };
}

/// Writes this thread's values of one piece of dQ (64 queries × 64 columns) into the staging piece at `base`: one
/// 8-byte store per column pair, at [`SW32_64X64_B32`]'s offsets (whose permutation spreads each half-warp's store
/// over all 32 banks).
#[inline(always)]
unsafe fn stage_dq(dq: &[f32; PIECE_VALUES], warpgroup: &Warpgroup, base: u32) {
    // Offsets that depend on the thread only, computed here from values opaque here (see `store_ds`).
    let (row, first_column) = (opaque_here(warpgroup.row), opaque_here(warpgroup.column));
    seq!(I in 0..16 {
        let (half, column) = value_position(2 * I);
        let offset = SW32_64X64_B32.crd2idx_u32(&[row + 8 * half, first_column + column]);
        unsafe { smem::store_f32x2(base + offset, dq[2 * I], dq[2 * I + 1]) };
    });
}

/// dK (times the softmax scale) and dV of this warpgroup's keys and columns (from head-dim column `first_column`
/// on), converted to the input type: each thread writes its element pairs of its two key rows, rows past seq_k
/// skipped.
#[inline(always)]
unsafe fn store_dk_dv<C: Config>(
    dk: &C::Acc,
    dv: &C::Acc,
    warpgroup: &Warpgroup,
    block: &Block,
    key0: u32,
    first_column: u32,
    problem: &Problem,
) {
    let (dk, dv) = (dk.as_ref(), dv.as_ref());
    let (batch, kv_head) = (block.batch as usize, block.kv_head as usize);
    seq!(HALF in 0..2 {
        let key = key0 + warpgroup.row + 8 * HALF;
        if key < problem.seq_k {
            let dk_row = unsafe { problem.dk.add(problem.dk_strides.offset(batch, key as usize, kv_head)) };
            let dv_row = unsafe { problem.dv.add(problem.dv_strides.offset(batch, key as usize, kv_head)) };
            seq!(BLOCK in 0..16 {
                if 4 * BLOCK < dk.len() {
                    let i = 4 * BLOCK + 2 * HALF;
                    let column = (first_column + 8 * BLOCK + warpgroup.column) as usize;
                    let scale = problem.scale;
                    unsafe {
                        (dk_row.add(column) as *mut u32).write(C::pack2(dk[i] * scale, dk[i + 1] * scale));
                        (dv_row.add(column) as *mut u32).write(C::pack2(dv[i], dv[i + 1]));
                    }
                }
            });
        }
    });
}
