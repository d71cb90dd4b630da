//! Hopper attention forward: O = softmax(scale · Q·Kᵀ) · V (scale > 0, checked by the host) and the row
//! log-sum-exp, the FlashAttention-3 data path with FlashAttention-4's software exp2 and lazy rescaling.
//!
//! Persistent blocks (one per SM) take work items — 128-row query tiles of one (batch, head) — from a global
//! counter, in an order that keeps a few heads' K and V in L2 and runs causal tiles longest first. Per block
//! (384 threads):
//! - warpgroup 0, the producer, drops to 32 registers; one thread has TMA load each work item's
//!   Q tile once (as soon as the consumers released the previous one, so it overlaps their epilogue), then streams
//!   K and V tiles of `tile_kv` keys (128; 80 at head dim 256) through a ring of `stages` (K and V each have
//!   full/empty mbarriers, so Q·Kᵀ starts before V has landed);
//! - warpgroups 1 and 2, the consumers, rise to 232 registers (at head dim 256 O's fragment alone is 128 of them);
//!   each owns 64 query rows and, per key tile: S = Q·Kᵀ by m64n{tile_kv}k16 wgmma from shared memory, an online
//!   softmax on S in registers, P = S converted to 16 bits in place (the accumulator fragment *is* the A fragment of
//!   the next wgmma), O += P·V by m64n{head_dim}k16 wgmma with A from registers and V read MN-major from shared
//!   memory;
//! - within a warpgroup, the next tile's Q·Kᵀ is issued together with this tile's P·V before the softmax, so
//!   the tensor cores work while the softmax runs; between the two warpgroups, named barriers hand the right to
//!   issue back and forth (ping-pong), so one's softmax overlaps the other's matrix work.
//!
//! Softmax: scores are kept raw (unscaled); the applied row maximum m moves only when a tile's maximum exceeds
//! it by more than [`ATTN_RESCALE_THRESHOLD_LOG2`] in log2 units (lazy rescaling), so most tiles skip the
//! rescale of O and of the running sum; terms 2^((s − m)·scale·log2 e) then stay below 2^8, and the result is
//! exact because the final normalization uses the m actually applied. `NUM` of every `DEN` exponentials go to
//! the FMA-pipe polynomial ([`crate::softmax::exp2`]), the rest to MUFU.EX2. At head dims 64 and 128 the row sums
//! are not FADDs but 8 more columns of P·V against ones in shared memory ([`AttnTile::mma_row_sums`]): Σ of the
//! 16-bit P that O is made of, rescaled with O.
//!
//! Kernel ABI (the host, host/src/ops/attention.rs, pushes the parameters in this order): see `attn_kernel!`.

use core::sync::atomic::{AtomicU32, Ordering};

use oxtile_abi::divisor::Divisor;
use oxtile_abi::{
    ATTN_RESCALE_THRESHOLD_LOG2, ATTN_SPECULATION_LIMIT_LOG2, ATTN_STATS_RECOMPUTED, ATTN_STATS_RESCALED,
    ATTN_STATS_WARP_TILES, AttnTile,
};
use seq_macro::seq;

use crate::arch::mbarrier::{self, RingState};
use crate::arch::sreg::{block_idx_x, grid_dim_x, lane_id, thread_idx_x};
use crate::arch::{barrier, convert, mufu, setmaxnreg, smem, tma, warp, wgmma};
use crate::opaque::{opaque, opaque_here, opaque_u64};
use crate::smem_layout::{SW128_64X64_B16, sw128_mn_major};
use crate::softmax::exp2::{exp2_poly, takes_poly};

/// Most scores per thread (a 192-key tile): the bound of the unrolled loops over a fragment of S.
const MAX_SCORES: usize = 96;
/// Most output values per thread (head dim 256): the bound of the unrolled loops over a fragment of O.
const MAX_OUT: usize = 128;

/// One kernel configuration: tile shape (shared with the host), element type, and the softmax tricks.
trait Config {
    const TILE: AttnTile;
    /// `NUM` of every `DEN` exponentials by the polynomial; (0, 1) is MUFU only.
    const POLY: (usize, usize);
    /// Lazy rescaling; `false` rescales whenever a row maximum grows (the FA2/FA3 rule), for the ablation.
    const LAZY: bool;
    /// The consumer warpgroups take turns issuing wgmma; `false` lets both issue whenever ready (ablation).
    const PINGPONG: bool;
    /// Tiles after the first are exponentiated against the maximum already applied
    /// ([`softmax_tile_speculative`], an ablation: measured slower); `false` finds each tile's row maximum first.
    const SPECULATE: bool;
    /// `tile_kv / 2` f32 per thread: the m64n{tile_kv} accumulator fragment of S.
    type Scores: Copy + AsRef<[f32]> + AsMut<[f32]>;
    const SCORES_ZERO: Self::Scores;
    /// The scores packed two per register: the A fragments of the `tile_kv / 16` k16 steps of P·V.
    type Packed: Copy + AsRef<[u32]> + AsMut<[u32]>;
    const PACKED_ZERO: Self::Packed;
    /// `head_dim / 2` f32 per thread: the m64n{head_dim} accumulator fragment of O; with
    /// [`AttnTile::mma_row_sums`] the m64n{head_dim + 8} one, whose last 4 values are the thread's two rows' sums
    /// ([`row_sums`]).
    type Out: Copy + AsRef<[f32]> + AsMut<[f32]>;
    const OUT_ZERO: Self::Out;
    /// S (+)= Q·Kᵀ for one k16 step of the head dimension; both operands K-major in shared memory. The first step
    /// (`accumulate == false`) only writes S: the previous tile's scores are dead by then (packed into P).
    unsafe fn mma_qk(s: &mut Self::Scores, desc_q: u64, desc_k: u64, accumulate: bool);
    /// O += P·V for one k16 step of the keys; P from registers, V MN-major in shared memory.
    unsafe fn mma_pv(o: &mut Self::Out, p: &[u32; 4], desc_v: u64);
    fn pack2(lo: f32, hi: f32) -> u32;
    /// Two 16-bit elements (the low one first) as f32, exactly.
    fn unpack2(bits: u32) -> (f32, f32);
    /// `setmaxnreg` of the producer warpgroup (down) and of the consumers (up): an immediate each, so a function
    /// per configuration.
    fn producer_registers();
    fn consumer_registers();
}

macro_rules! config {
    ($name:ident, $tile:path, $qk:ident / $qk_first:ident, $pv:ident, $pack:path, $unpack:path, scores = $scores:literal, out = $out:literal, registers = ($producer:literal, $consumer:literal), poly = $poly:expr, lazy = $lazy:literal, pingpong = $pingpong:literal, speculate = $speculate:literal) => {
        struct $name;

        // The unrolled loops over S cover it; the k16 steps of P·V tile it; O is m64n{head_dim}.
        const _: () = assert!($scores <= MAX_SCORES && $scores % 8 == 0 && $tile.tile_kv == 2 * $scores);
        // O's fragment: head_dim columns, and 8 more for the row sums when the tensor cores take them.
        const _: () = assert!($tile.head_dim + 8 * $tile.mma_row_sums as u32 == 2 * $out && $out <= MAX_OUT);
        // The registers the warpgroups claim fit what the block holds: the `.maxntid` cap at entry (65,536 over the
        // threads, rounded down to 8) for every thread.
        const _: () = assert!(
            AttnTile::WARPGROUP_THREADS * ($producer + $tile.consumers * $consumer)
                <= 65536 / $tile.threads() / 8 * 8 * $tile.threads()
        );

        impl Config for $name {
            const TILE: AttnTile = $tile;
            const POLY: (usize, usize) = $poly;
            const LAZY: bool = $lazy;
            const PINGPONG: bool = $pingpong;
            const SPECULATE: bool = $speculate;
            type Scores = [f32; $scores];
            const SCORES_ZERO: Self::Scores = [0.0; $scores];
            type Packed = [u32; $scores / 2];
            const PACKED_ZERO: Self::Packed = [0; $scores / 2];
            type Out = [f32; $out];
            const OUT_ZERO: Self::Out = [0.0; $out];

            #[inline(always)]
            unsafe fn mma_qk(s: &mut Self::Scores, desc_q: u64, desc_k: u64, accumulate: bool) {
                if accumulate {
                    unsafe { wgmma::$qk::<0, 0>(s, desc_q, desc_k, true) }
                } else {
                    unsafe { wgmma::$qk_first::<0, 0>(s, desc_q, desc_k) }
                }
            }

            #[inline(always)]
            unsafe fn mma_pv(o: &mut Self::Out, p: &[u32; 4], desc_v: u64) {
                unsafe { wgmma::$pv::<1>(o, p, desc_v, true) }
            }

            #[inline(always)]
            fn pack2(lo: f32, hi: f32) -> u32 {
                $pack(lo, hi)
            }

            #[inline(always)]
            fn unpack2(bits: u32) -> (f32, f32) {
                $unpack(bits)
            }

            #[inline(always)]
            fn producer_registers() {
                setmaxnreg::dec::<$producer>();
            }

            #[inline(always)]
            fn consumer_registers() {
                setmaxnreg::inc::<$consumer>();
            }
        }
    };
}

/// Defines one exported kernel over [`attn_fwd`], its parameters those of `oxtile_abi::attn_sm90_params!`.
macro_rules! attn_kernel {
    ($(#[$doc:meta])* $name:ident, $config:ty) => {
        oxtile_abi::attn_sm90_params! { attn_kernel_fn, ($(#[$doc])* $name, $config) }
        // The builder reads the bound from the marker's name, so it is a literal here, asserted to be the tile's.
        const _: () = assert!(<$config as Config>::TILE.threads() == 384);
        oxtile_device::launch_bounds!($name, max_threads = 384, min_blocks = 1);
    };
}

/// [`attn_kernel!`]'s function: one parameter per field of the list, in its order, gathered into a local struct of the
/// same names.
macro_rules! attn_kernel_fn {
    (($(#[$doc:meta])* $name:ident, $config:ty) $($(#[$field_doc:meta])* $field:ident: $kind:ident($($ty:ty)?),)*) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// The parameters are as `oxtile_abi::attn_sm90_params!` documents them: the tensor maps are over q and o
        /// [B, seq_q, heads_q, D] and k, v [B, seq_k, heads_q / group, D] seen as dims (D, heads, seq, batch),
        /// 128-byte swizzled, boxes of (64, 1, tile_q, 1) for q, (64, 1, tile_kv, 1) for k and v and (64, 1, 64, 1) for o (one consumer
        /// warpgroup's rows); `lse` is [B, heads_q, seq_q]; `q` and `k` are the tensors of the maps, with their
        /// element strides (4-byte aligned rows), read directly only on the rare recompute path. Persistent: launched
        /// with a 1-D grid of at most one block per SM and at most ceil(seq_q / 128)·heads_q·batch blocks, the
        /// configuration's threads and dynamic shared memory.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name($($field: device_param!($kind($($ty)?)),)*) {
            struct Params {
                $($field: device_field!($kind($($ty)?)),)*
            }
            let params = Params { $($field: device_value!($kind, $field),)* };
            let problem = Problem {
                lse: params.lse,
                seq_q: params.seq_q,
                seq_k: params.seq_k,
                heads_q: Divisor::from_packed(params.heads_q, params.heads_q_divisor),
                batch: params.batch,
                group: Divisor::from_packed(params.group, params.group_divisor),
                q_tiles: Divisor::from_packed(params.q_tiles, params.q_tiles_divisor),
                scale_log2: params.scale_log2,
                causal: params.causal != 0,
                work_counter: params.work_counter,
                stats: params.stats,
                q: params.q,
                k: params.k,
                q_strides: Strides { batch: params.q_batch_stride, seq: params.q_seq_stride, head: params.q_head_stride },
                k_strides: Strides { batch: params.k_batch_stride, seq: params.k_seq_stride, head: params.k_head_stride },
            };
            let tensor_maps = [params.tensor_map_q, params.tensor_map_k, params.tensor_map_v, params.tensor_map_o];
            unsafe { attn_fwd::<$config>(tensor_maps, &problem) }
        }
    };
}

// The production kernels, those `AttnVariant::Auto` runs: gpu/kernels/attention's module (each crate compiling this
// source defines `in_this_module!` to keep its own).
in_this_module! { attention,
    use oxtile_abi::{ATTN_SM90_D64, ATTN_SM90_D128, ATTN_SM90_D256};

    // Measured on the H200 (docs/perf-notes.md, attention v1–v3 and the d64 note of session 19): at head dim 128,
    // MUFU-only exponentials beat FA4's split (a quarter on the polynomial costs 3–7%): each polynomial exponential
    // takes ~8 issue slots where MUFU takes one, and that softmax is issue-bound. At head dim 64 the matrix work per
    // key tile is half as long and MUFU.EX2 is the wall: an eighth on the polynomial is 0–5% faster than MUFU only.
    // The other splits stay as ablations.
    config!(
        Bf16D128,
        ATTN_SM90_D128,
        mma_m64n128k16_f32_bf16 / mma_m64n128k16_f32_bf16_overwrite,
        mma_rs_m64n136k16_f32_bf16,
        convert::pack_bf16x2,
        convert::unpack_bf16x2,
        scores = 64,
        out = 68,
        registers = (32, 232),
        poly = (0, 1),
        lazy = true,
        pingpong = true,
        speculate = false
    );
    config!(
        F16D128,
        ATTN_SM90_D128,
        mma_m64n128k16_f32_f16 / mma_m64n128k16_f32_f16_overwrite,
        mma_rs_m64n136k16_f32_f16,
        convert::pack_f16x2,
        convert::unpack_f16x2,
        scores = 64,
        out = 68,
        registers = (32, 232),
        poly = (0, 1),
        lazy = true,
        pingpong = true,
        speculate = false
    );
    config!(
        Bf16D64,
        ATTN_SM90_D64,
        mma_m64n128k16_f32_bf16 / mma_m64n128k16_f32_bf16_overwrite,
        mma_rs_m64n72k16_f32_bf16,
        convert::pack_bf16x2,
        convert::unpack_bf16x2,
        scores = 64,
        out = 36,
        registers = (32, 232),
        poly = (1, 8),
        lazy = true,
        pingpong = true,
        speculate = false
    );
    config!(
        F16D64,
        ATTN_SM90_D64,
        mma_m64n128k16_f32_f16 / mma_m64n128k16_f32_f16_overwrite,
        mma_rs_m64n72k16_f32_f16,
        convert::pack_f16x2,
        convert::unpack_f16x2,
        scores = 64,
        out = 36,
        registers = (32, 232),
        poly = (1, 8),
        lazy = true,
        pingpong = true,
        speculate = false
    );
    // Head dim 256: twice head dim 128's matrix work per score, so MUFU.EX2 is further from the wall than there: MUFU
    // only. The O fragment (128) with S (40) and the P in flight (20) fit the consumers' 232. FlashAttention-3 gives
    // them 240 and its producer 24, but ours, one thread whose TMA operands move to uniform registers per copy,
    // spilled at 24 (docs/perf-notes.md); 240 waits for a producer warp with an elected lane.
    config!(
        Bf16D256,
        ATTN_SM90_D256,
        mma_m64n80k16_f32_bf16 / mma_m64n80k16_f32_bf16_overwrite,
        mma_rs_m64n256k16_f32_bf16,
        convert::pack_bf16x2,
        convert::unpack_bf16x2,
        scores = 40,
        out = 128,
        registers = (32, 232),
        poly = (0, 1),
        lazy = true,
        pingpong = true,
        speculate = false
    );
    config!(
        F16D256,
        ATTN_SM90_D256,
        mma_m64n80k16_f32_f16 / mma_m64n80k16_f32_f16_overwrite,
        mma_rs_m64n256k16_f32_f16,
        convert::pack_f16x2,
        convert::unpack_f16x2,
        scores = 40,
        out = 128,
        registers = (32, 232),
        poly = (0, 1),
        lazy = true,
        pingpong = true,
        speculate = false
    );
    attn_kernel!(
        /// bf16 attention forward, head dim 128.
        attn_fwd_bf16_d128_sm90, Bf16D128
    );
    attn_kernel!(
        /// f16 attention forward, head dim 128.
        attn_fwd_f16_d128_sm90, F16D128
    );
    attn_kernel!(
        /// bf16 attention forward, head dim 64.
        attn_fwd_bf16_d64_sm90, Bf16D64
    );
    attn_kernel!(
        /// f16 attention forward, head dim 64.
        attn_fwd_f16_d64_sm90, F16D64
    );
    attn_kernel!(
        /// bf16 attention forward, head dim 256.
        attn_fwd_bf16_d256_sm90, Bf16D256
    );
    attn_kernel!(
        /// f16 attention forward, head dim 256.
        attn_fwd_f16_d256_sm90, F16D256
    );
}

// The ablations, each a kernel above with one mechanism changed (the rows after `oxtile` in `oxtile bench attn`):
// gpu/kernels/attention_ablations's module, so that the two halves of this source compile at the same time.
in_this_module! { attention_ablations,
    use oxtile_abi::{ATTN_SM90_D64, ATTN_SM90_D128};

    config!(
        Bf16D128Poly,
        ATTN_SM90_D128,
        mma_m64n128k16_f32_bf16 / mma_m64n128k16_f32_bf16_overwrite,
        mma_rs_m64n136k16_f32_bf16,
        convert::pack_bf16x2,
        convert::unpack_bf16x2,
        scores = 64,
        out = 68,
        registers = (32, 232),
        poly = (1, 4),
        lazy = true,
        pingpong = true,
        speculate = false
    );
    config!(
        Bf16D64Mufu,
        ATTN_SM90_D64,
        mma_m64n128k16_f32_bf16 / mma_m64n128k16_f32_bf16_overwrite,
        mma_rs_m64n72k16_f32_bf16,
        convert::pack_bf16x2,
        convert::unpack_bf16x2,
        scores = 64,
        out = 36,
        registers = (32, 232),
        poly = (0, 1),
        lazy = true,
        pingpong = true,
        speculate = false
    );
    config!(
        Bf16D128Eager,
        ATTN_SM90_D128,
        mma_m64n128k16_f32_bf16 / mma_m64n128k16_f32_bf16_overwrite,
        mma_rs_m64n136k16_f32_bf16,
        convert::pack_bf16x2,
        convert::unpack_bf16x2,
        scores = 64,
        out = 68,
        registers = (32, 232),
        poly = (0, 1),
        lazy = false,
        pingpong = true,
        speculate = false
    );
    config!(
        Bf16D128NoPingpong,
        ATTN_SM90_D128,
        mma_m64n128k16_f32_bf16 / mma_m64n128k16_f32_bf16_overwrite,
        mma_rs_m64n136k16_f32_bf16,
        convert::pack_bf16x2,
        convert::unpack_bf16x2,
        scores = 64,
        out = 68,
        registers = (32, 232),
        poly = (0, 1),
        lazy = true,
        pingpong = false,
        speculate = false
    );
    config!(
        Bf16D128Spec,
        ATTN_SM90_D128,
        mma_m64n128k16_f32_bf16 / mma_m64n128k16_f32_bf16_overwrite,
        mma_rs_m64n136k16_f32_bf16,
        convert::pack_bf16x2,
        convert::unpack_bf16x2,
        scores = 64,
        out = 68,
        registers = (32, 232),
        poly = (0, 1),
        lazy = true,
        pingpong = true,
        speculate = true
    );

    attn_kernel!(
        /// Ablation of `attn_fwd_bf16_d128_sm90`: FA4's split, a quarter of the exponentials on the polynomial.
        attn_fwd_bf16_d128_poly_sm90, Bf16D128Poly
    );
    attn_kernel!(
        /// Ablation of `attn_fwd_bf16_d64_sm90`: every exponential by MUFU.EX2 (no polynomial).
        attn_fwd_bf16_d64_mufu_sm90, Bf16D64Mufu
    );
    attn_kernel!(
        /// Ablation of `attn_fwd_bf16_d128_sm90`: rescale whenever a row maximum grows (no lazy rescaling).
        attn_fwd_bf16_d128_eager_sm90, Bf16D128Eager
    );
    attn_kernel!(
        /// Ablation of `attn_fwd_bf16_d128_sm90`: no ping-pong; both consumer warpgroups issue whenever ready.
        attn_fwd_bf16_d128_nopingpong_sm90, Bf16D128NoPingpong
    );
    attn_kernel!(
        /// Ablation of `attn_fwd_bf16_d128_sm90`: exponentials against the maximum already applied, beside the
        /// tile's row maximum (`softmax_tile_speculative`).
        attn_fwd_bf16_d128_spec_sm90, Bf16D128Spec
    );
}

/// Element strides of a [B, S, H, D] tensor: batch, sequence position, head (D is contiguous).
#[derive(Clone, Copy)]
struct Strides {
    batch: u64,
    seq: u64,
    head: u64,
}

struct Problem {
    lse: *mut f32,
    seq_q: u32,
    seq_k: u32,
    heads_q: Divisor,
    batch: u32,
    /// Query heads per key/value head.
    group: Divisor,
    /// ⌈seq_q / tile_q⌉: the query tiles of a head.
    q_tiles: Divisor,
    scale_log2: f32,
    causal: bool,
    work_counter: *mut u32,
    stats: *mut u32,
    q: *const u16,
    k: *const u16,
    q_strides: Strides,
    k_strides: Strides,
}

impl Problem {
    /// Keys visible to query row `row`: all of them, or (causal, bottom-right aligned) those j ≤ row + seq_k − seq_q.
    #[inline(always)]
    fn key_limit(&self, row: u32) -> u32 {
        if self.causal {
            (row as i64 + self.seq_k as i64 - self.seq_q as i64 + 1).clamp(0, self.seq_k as i64) as u32
        } else {
            self.seq_k
        }
    }
}

/// Where everything lives in dynamic shared memory (offsets from oxtile-abi's [`AttnTile`]).
struct SmemMap {
    base: u32,
    tile: AttnTile,
}

impl SmemMap {
    /// Bytes of one 64-column block of a Q tile / of a K or V tile.
    fn q_block_bytes(&self) -> u32 {
        self.tile.tile_q * 128
    }
    fn kv_block_bytes(&self) -> u32 {
        self.tile.tile_kv * 128
    }
    fn q(&self, buffer: u32, block: u32) -> u32 {
        self.base + self.tile.smem_q_offset(buffer) + block * self.q_block_bytes()
    }
    fn k(&self, stage: u32, block: u32) -> u32 {
        self.base + self.tile.smem_k_offset(stage) + block * self.kv_block_bytes()
    }
    fn v(&self, stage: u32, block: u32) -> u32 {
        self.base + self.tile.smem_v_offset(stage) + block * self.kv_block_bytes()
    }
    fn barrier(&self, index: u32) -> u32 {
        self.base + self.tile.barriers_offset() + 8 * index
    }
    fn q_full(&self, buffer: u32) -> u32 {
        self.barrier(buffer)
    }
    /// The work item the producer published with the Q of `buffer` (after the barriers).
    fn work_slot(&self, buffer: u32) -> u32 {
        self.base + self.tile.work_slot_offset(buffer)
    }
    fn q_empty(&self, buffer: u32) -> u32 {
        self.barrier(self.tile.q_buffers + buffer)
    }
    fn k_full(&self, stage: u32) -> u32 {
        self.barrier(2 * self.tile.q_buffers + stage)
    }
    fn k_empty(&self, stage: u32) -> u32 {
        self.barrier(2 * self.tile.q_buffers + self.tile.stages + stage)
    }
    fn v_full(&self, stage: u32) -> u32 {
        self.barrier(2 * self.tile.q_buffers + 2 * self.tile.stages + stage)
    }
    /// Column block `block` of the O staging tile of the item whose Q is in buffer `q`, at this warpgroup's rows.
    fn o(&self, q: u32, block: u32, rows_offset: u32) -> u32 {
        self.base + self.tile.smem_o_offset(q) + block * self.q_block_bytes() + rows_offset
    }
    fn v_empty(&self, stage: u32) -> u32 {
        self.barrier(2 * self.tile.q_buffers + 3 * self.tile.stages + stage)
    }
    /// The block of ones P·V's row-sum columns read where they are not in the V stages
    /// ([`AttnTile::ones_in_v_stages`]).
    fn ones(&self) -> u32 {
        self.base + self.tile.smem_ones_offset()
    }
    /// The 16-byte chunks of ones thread `thread` of `threads` writes: of each V stage's last column block, or of the
    /// block after the V stages ([`AttnTile::ones_in_v_stages`]).
    fn ones_chunks(&self, thread: u32, threads: u32) -> impl Iterator<Item = u32> + '_ {
        let tile = self.tile;
        let (blocks, chunks) = if tile.ones_in_v_stages() {
            (tile.stages, (tile.smem_v_stage_bytes() - tile.smem_kv_bytes()) / 16)
        } else {
            (1, tile.smem_ones_bytes() / 16)
        };
        (thread..blocks * chunks).step_by(threads as usize).map(move |i| {
            let (block, chunk) = (i / chunks, i % chunks);
            let start = if tile.ones_in_v_stages() { self.v(block, tile.column_blocks()) } else { self.ones() };
            start + 16 * chunk
        })
    }
}

/// The descriptor fields of a K-major operand (Q, K): each 64-column block of head dim a 128-byte swizzled tile
/// with a row per query or key, [`SW128_64X64_B16`].
const K_MAJOR: u64 = wgmma::sw128_fields(&SW128_64X64_B16);
/// Bytes between the k16 slices of one swizzled 128-byte row (K-major operands): 32.
const K_STEP_BYTES: u32 = wgmma::k16_step_bytes(&SW128_64X64_B16);

/// Named barriers of the ping-pong: warpgroup `c` may issue its wgmma when barrier `PINGPONG_BASE + c` opens.
const PINGPONG_BASE: u32 = 1;
const PINGPONG_THREADS: u32 = 256;
/// Named barriers of each consumer warpgroup's epilogue: `EPILOGUE_BASE + c`.
const EPILOGUE_BASE: u32 = 3;
/// Named barriers on which each consumer warpgroup of the `spec` ablation makes its recompute decision uniform:
/// `VOTE_BASE + c`.
const VOTE_BASE: u32 = 5;
const WARPS_PER_WARPGROUP: u32 = AttnTile::WARPGROUP_THREADS / 32;

/// One unit of work: a query tile of one (head, batch), and the key tiles it needs.
#[derive(Clone, Copy)]
struct Work {
    head: u32,
    batch: u32,
    /// First query row of the tile.
    q0: u32,
    kv_tiles: u32,
    /// Key tiles before this one are visible to every row of the tile; from it on, scores are masked.
    first_masked_tile: u32,
}

/// The work list: item i is query tile i mod q_tiles of head (i / q_tiles) mod heads and batch
/// i / (q_tiles · heads). The query tiles of one head are adjacent, so the blocks running at one time share a few
/// heads' K and V in L2; causal tiles come longest (last) first within each head.
///
/// Blocks take items dynamically: block b starts with item b, then each producer claims the next unclaimed item
/// from a global counter (zeroed by the host before the launch) and publishes it to its consumers in shared
/// memory. Causal items differ in length by up to seq_k / 128 key tiles; a static round-robin over 132 blocks
/// gave each block the same query tile index every time (132 is a multiple of 4), so the blocks holding the
/// longest tiles set the run time.
#[derive(Clone, Copy)]
struct Scheduler {
    works: u32,
}

impl Scheduler {
    #[inline(always)]
    fn new(problem: &Problem) -> Self {
        Self::from_q_tiles(problem.q_tiles.get(), problem)
    }

    /// [`Scheduler::new`] from the tile count read at this point (opaque), for a warpgroup to derive after its
    /// `setmaxnreg`: computed once before it and live across it, a count was spilled (4 bytes) at head dim 256.
    #[inline(always)]
    fn new_here(problem: &Problem) -> Self {
        Self::from_q_tiles(opaque_here(problem.q_tiles.get()), problem)
    }

    #[inline(always)]
    fn from_q_tiles(q_tiles: u32, problem: &Problem) -> Self {
        Scheduler { works: q_tiles * problem.heads_q.get() * problem.batch }
    }

    /// Whether each warpgroup derives the schedule after its `setmaxnreg` ([`Scheduler::new_here`]): at head dims
    /// above 128, where the consumers' registers are full. Below, it is derived once before, as the d64 and d128
    /// kernels were measured (the late form measured 0.988 at 8,16,4096,128 full).
    const AFTER_SETMAXNREG_ABOVE_HEAD_DIM: u32 = 128;

    #[inline(always)]
    fn after_setmaxnreg(problem: &Problem, tile: AttnTile, early: Scheduler) -> Self {
        if tile.head_dim > Self::AFTER_SETMAXNREG_ABOVE_HEAD_DIM { Self::new_here(problem) } else { early }
    }

    #[inline(always)]
    fn work(&self, index: u32, problem: &Problem, tile: AttnTile) -> Work {
        // Multiply-high divisions by the host's divisors: a division by a run-time value is a chain of an I2F, a
        // MUFU.RCP, an F2I and a dozen integer steps, and each item's first product waits for it.
        let (head_batch, in_head) = problem.q_tiles.div_rem(index);
        let (batch, head) = problem.heads_q.div_rem(head_batch);
        let q_tile = if problem.causal { problem.q_tiles.get() - 1 - in_head } else { in_head };
        let q0 = q_tile * tile.tile_q;
        let last_row = (q0 + tile.tile_q).min(problem.seq_q) - 1;
        Work {
            head,
            batch,
            q0,
            kv_tiles: problem.key_limit(last_row).div_ceil(tile.tile_kv),
            first_masked_tile: problem.key_limit(q0) / tile.tile_kv,
        }
    }
}

/// Published in the work slot when there is no item left.
const NO_WORK: u32 = u32::MAX;

#[inline(always)]
unsafe fn attn_fwd<C: Config>(tensor_maps: [u64; 4], problem: &Problem) {
    let tile = C::TILE;
    let smem = SmemMap { base: smem::dynamic_smem_base(), tile };
    // Broadcast from lane 0, so that ptxas knows the branches on it are warp-uniform (each role's loop state and
    // wgmma descriptors can then live in uniform registers).
    let warpgroup = warp::broadcast_first(thread_idx_x() / AttnTile::WARPGROUP_THREADS);
    let thread = thread_idx_x() % AttnTile::WARPGROUP_THREADS;
    let early = Scheduler::new(problem);

    if thread_idx_x() == 0 {
        unsafe {
            for buffer in 0..tile.q_buffers {
                mbarrier::init(smem.q_full(buffer), 1);
                // One arrival per consumer warp: each warp's reader of the work slot hands Q and the slot back itself.
                mbarrier::init(smem.q_empty(buffer), tile.consumers * WARPS_PER_WARPGROUP);
            }
            for stage in 0..tile.stages {
                mbarrier::init(smem.k_full(stage), 1);
                mbarrier::init(smem.k_empty(stage), tile.consumers);
                mbarrier::init(smem.v_full(stage), 1);
                mbarrier::init(smem.v_empty(stage), tile.consumers);
            }
        }
        mbarrier::fence_init();
    }
    // The ones of the row sums, 16 bytes a thread at a time, made visible to the wgmma that read them (the async
    // proxy) before the block's barrier.
    if tile.mma_row_sums {
        let ones = C::pack2(1.0, 1.0);
        for at in smem.ones_chunks(thread_idx_x(), tile.threads()) {
            seq!(WORD in 0..4 {
                unsafe { smem::store_u32(at + 4 * WORD, ones) };
            });
        }
        smem::fence_proxy_async_shared();
    }
    barrier::sync_threads();

    if warpgroup == 0 {
        C::producer_registers();
        let scheduler = Scheduler::after_setmaxnreg(problem, tile, early);
        // The producer is warp 0: every lane walks the loop and waits for the buffers (its values then warp-uniform,
        // in uniform registers), lane 0 claims the next item, and one lane chosen by `elect.sync` writes the work
        // slot and issues the copies (no loop over lanes around them).
        if warp::broadcast_first(thread / 32) == 0 {
            let leader = warp::elect_one();
            let [map_q, map_k, map_v, _] = tensor_maps;
            if leader {
                tma::prefetch_tensormap(map_q);
                tma::prefetch_tensormap(map_k);
                tma::prefetch_tensormap(map_v);
            }
            let counter = unsafe { AtomicU32::from_ptr(problem.work_counter) };
            let mut q_ring = RingState::new(tile.q_buffers);
            let mut ring = RingState::new(tile.stages);
            let mut next = block_idx_x();
            loop {
                let index = next;
                if index < scheduler.works {
                    // Claimed now, used after this item's loads: the atomic's latency hides under them.
                    let claimed = if lane_id() == 0 { counter.fetch_add(1, Ordering::Relaxed) } else { 0 };
                    next = grid_dim_x() + warp::broadcast_first(claimed);
                }
                // With O staged in Q's buffer, the buffer comes back only after the epilogue of the item it held: the
                // first K and V tiles load before it, into stages that item's main loop has already handed back.
                let mut first_kv_tile = 0;
                if tile.o_in_q && index < scheduler.works {
                    let work = scheduler.work(index, problem, tile);
                    if work.kv_tiles > 0 {
                        let kv_head = problem.group.div(work.head) as i32;
                        let batch = work.batch as i32;
                        unsafe { load_kv_tile(&smem, [map_k, map_v], &mut ring, 0, kv_head, batch, leader) };
                        first_kv_tile = 1;
                    }
                }
                // The consumers release a Q buffer (and have read its work slot) after their last Q·Kᵀ of the item
                // it held, `q_buffers` items ago (after its epilogue, with O staged there).
                let (q, q_full) = (q_ring.stage, smem.q_full(q_ring.stage));
                unsafe { mbarrier::wait(smem.q_empty(q), q_ring.phase ^ 1) };
                q_ring.advance();
                if index >= scheduler.works {
                    if leader {
                        unsafe {
                            smem::store_u32(smem.work_slot(q), NO_WORK);
                            mbarrier::arrive(q_full);
                        }
                    }
                    break;
                }
                let work = scheduler.work(index, problem, tile);
                if leader {
                    unsafe { smem::store_u32(smem.work_slot(q), index) };
                }
                if work.kv_tiles == 0 {
                    if leader {
                        unsafe { mbarrier::arrive(q_full) };
                    }
                    continue;
                }
                let kv_head = problem.group.div(work.head) as i32;
                let (head, batch) = (work.head as i32, work.batch as i32);
                if leader {
                    unsafe {
                        mbarrier::arrive_expect_tx(q_full, tile.smem_q_bytes());
                        for block in 0..tile.column_blocks() {
                            let column = (block * AttnTile::BOX_COLS) as i32;
                            tma::load_4d(smem.q(q, block), map_q, column, head, work.q0 as i32, batch, q_full);
                        }
                    }
                }
                for kv_tile in first_kv_tile..work.kv_tiles {
                    unsafe { load_kv_tile(&smem, [map_k, map_v], &mut ring, kv_tile, kv_head, batch, leader) };
                }
            }
        }
    } else {
        C::consumer_registers();
        let scheduler = Scheduler::after_setmaxnreg(problem, tile, early);
        let consumer = warpgroup - 1;
        let q_rows_offset = consumer * tile.consumer_rows() * 128;
        let warpgroup = Warpgroup {
            smem: &smem,
            consumer,
            q_rows_offset,
            desc_q: wgmma::desc(smem.q(0, 0) + q_rows_offset, K_MAJOR),
            leader: thread == 0,
            pingpong: C::PINGPONG,
            map_o: tensor_maps[3],
        };
        tma::prefetch_tensormap(warpgroup.map_o);
        // Consumer 0 issues first.
        if consumer == 1 {
            warpgroup.pass_token();
        }
        let mut q_ring = RingState::new(tile.q_buffers);
        let mut ring = RingState::new(tile.stages);
        // The item whose output is still to be stored, under the next item's first Q·Kᵀ.
        let mut finished = Finished::<C::Out>::nothing(C::OUT_ZERO, thread);
        loop {
            let q = q_ring.stage;
            unsafe { mbarrier::wait(smem.q_full(q), q_ring.phase) };
            q_ring.advance();
            // One lane per warp reads the slot and arrives on q_empty after its last use of Q, so each read is
            // ordered before the arrival that lets the producer overwrite the slot (racecheck sees no other lane).
            let slot = smem.work_slot(q);
            let index = warp::broadcast_first(if lane_id() == 0 { unsafe { smem::load_u32(slot) } } else { 0 });
            if tile.overlaps_items() {
                // The list's end and items without keys store the item before them here, one place for both.
                let ends = index == NO_WORK;
                let work = scheduler.work(if ends { 0 } else { index }, problem, tile);
                if (ends || work.kv_tiles == 0) && finished.due {
                    unsafe { finished.store::<C>(&warpgroup, problem) };
                    finished.due = false;
                }
                if ends {
                    break;
                }
                let rows = Rows::new(work.q0 + consumer * tile.consumer_rows(), thread);
                if work.kv_tiles == 0 {
                    warpgroup.release_q(q);
                    finished = Finished { o: C::OUT_ZERO, softmax: Softmax::empty(), rows, work, q, due: true };
                    continue;
                }
                let (softmax, o) = unsafe { consume::<C>(&warpgroup, q, &work, &rows, &mut ring, &finished, problem) };
                finished = Finished { o: copied::<C>(o), softmax, rows, work, q, due: true };
            } else {
                if index == NO_WORK {
                    break;
                }
                let work = scheduler.work(index, problem, tile);
                let rows = Rows::new(work.q0 + consumer * tile.consumer_rows(), thread);
                if work.kv_tiles == 0 {
                    if !tile.o_in_q {
                        warpgroup.release_q(q);
                    }
                    unsafe { store_output::<C>(&C::OUT_ZERO, &Softmax::empty(), &rows, &work, &warpgroup, q, problem) };
                    continue;
                }
                let (softmax, o) = unsafe { consume::<C>(&warpgroup, q, &work, &rows, &mut ring, &finished, problem) };
                unsafe { store_output::<C>(&o, &softmax, &rows, &work, &warpgroup, q, problem) };
            }
        }
        // The last stores must be done reading shared memory before the block exits (their global writes are done
        // by the end of the grid).
        if warpgroup.leader {
            tma::wait_group_read::<0>();
        }
        // Consumer 1 passed the token once more than consumer 0 took it.
        if consumer == 0 {
            warpgroup.take_token();
        }
    }
}

/// Has TMA load key tile `kv_tile` of K and of V (maps `[k, v]`) into the ring's stage once the consumers handed
/// it back, and advances the ring: every lane of the producer warp waits, the `leader` issues. K and V have barriers
/// of their own, so Q·Kᵀ can start before V has landed.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn load_kv_tile(
    smem: &SmemMap,
    maps: [u64; 2],
    ring: &mut RingState,
    kv_tile: u32,
    kv_head: i32,
    batch: i32,
    leader: bool,
) {
    let tile = smem.tile;
    let [map_k, map_v] = maps;
    let (stage, key0) = (ring.stage, (kv_tile * tile.tile_kv) as i32);
    unsafe {
        mbarrier::wait(smem.k_empty(stage), ring.phase ^ 1);
        if leader {
            mbarrier::arrive_expect_tx(smem.k_full(stage), tile.smem_kv_bytes());
            for block in 0..tile.column_blocks() {
                let column = (block * AttnTile::BOX_COLS) as i32;
                let k_full = smem.k_full(stage);
                tma::load_4d(smem.k(stage, block), map_k, column, kv_head, key0, batch, k_full);
            }
        }
        mbarrier::wait(smem.v_empty(stage), ring.phase ^ 1);
        if leader {
            mbarrier::arrive_expect_tx(smem.v_full(stage), tile.smem_kv_bytes());
            for block in 0..tile.column_blocks() {
                let column = (block * AttnTile::BOX_COLS) as i32;
                let v_full = smem.v_full(stage);
                tma::load_4d(smem.v(stage, block), map_v, column, kv_head, key0, batch, v_full);
            }
        }
    }
    ring.advance();
}

/// The two query rows a consumer thread holds (m64 fragment rows `r` and `r + 8`, counted from the warpgroup's
/// first row `row0`) and the first of the two columns it holds in each 8-column block. Their key limits are
/// recomputed in the (rare) masked tiles rather than kept: registers are the consumers' scarcest resource.
struct Rows {
    row0: u32,
    local: u32,
    column: u32,
}

impl Rows {
    #[inline(always)]
    fn new(row0: u32, thread: u32) -> Self {
        let (warp, lane) = (thread / 32, thread % 32);
        Rows { row0, local: 16 * warp + lane / 4, column: 2 * (lane % 4) }
    }

    /// Row `half` (0: r, 1: r + 8) counted from the warpgroup's first row.
    #[inline(always)]
    fn local(&self, half: usize) -> u32 {
        self.local + 8 * half as u32
    }

    /// Row `half` of the problem.
    #[inline(always)]
    fn index(&self, half: usize) -> u32 {
        self.row0 + self.local(half)
    }
}

/// Online-softmax state of a thread's two rows: the maximum applied to O and the running sum (raw score units;
/// the sum is this thread's partial sum, reduced over the row's four threads at the end; unused, and its
/// arithmetic dead, where O's extra columns carry the sums, [`AttnTile::mma_row_sums`]).
struct Softmax {
    max: [f32; 2],
    sum: [f32; 2],
    rescaled_tiles: u32,
    tiles: u32,
    /// Tiles whose scores this thread recomputed (see [`softmax_tile_speculative`]).
    recomputed_tiles: u32,
}

impl Softmax {
    fn empty() -> Self {
        Softmax { max: [f32::NEG_INFINITY; 2], sum: [0.0; 2], rescaled_tiles: 0, tiles: 0, recomputed_tiles: 0 }
    }

    /// Row `half`'s exponent base in log2 units: the applied maximum times the scale; 0 for a row without a
    /// visible key yet (max = −∞), so its −∞ scores give 0, not NaN.
    #[inline(always)]
    fn base_log2(&self, half: usize, scale_log2: f32) -> f32 {
        if self.max[half] == f32::NEG_INFINITY { 0.0 } else { self.max[half] * scale_log2 }
    }
}

/// Score `i` of the fragment: row half (0: row r, 1: row r + 8) and column inside the 128-key tile.
#[inline(always)]
const fn score_position(i: usize, column: u32) -> (usize, u32) {
    let (block, half, pair) = (i / 4, (i / 2) % 2, i % 2);
    (half, 8 * block as u32 + column + pair as u32)
}

/// Independent accumulators per row in the softmax's reductions.
const PARTIALS: usize = 4;

/// Which of a row's [`PARTIALS`] accumulators score `i` goes to: alternating 8-column blocks and the pair member.
#[inline(always)]
const fn partial(i: usize) -> usize {
    ((i / 4) % 2) * 2 + i % 2
}

/// Turns a tile of raw scores into unnormalized probabilities in place and returns each row's rescale factor
/// for O (1 when its applied maximum did not move).
#[inline(always)]
fn softmax_tile<C: Config>(
    s: &mut C::Scores,
    state: &mut Softmax,
    rows: &Rows,
    key0: u32,
    masked: bool,
    problem: &Problem,
) -> [f32; 2] {
    let scale_log2 = problem.scale_log2;
    let s = s.as_mut();
    if masked {
        mask_scores(s, rows, key0, problem);
    }
    let mut partial_max = [[0.0f32; PARTIALS]; 2];
    seq!(I in 0..96 {
        if I < s.len() {
            accumulate_partial(&mut partial_max, I, s[I], f32::max);
        }
    });
    let tile_max = row_max(partial_max);
    let mut factor = [1.0f32; 2];
    seq!(HALF in 0..2 {
        let half = HALF;
        let (old, new) = (state.max[half], state.max[half].max(tile_max[half]));
        // +∞ on the first tile that has a visible key (old = −∞), NaN while a row has none: no rescale.
        let growth_log2 = (new - old) * scale_log2;
        if rescales::<C>(growth_log2) {
            factor[half] = mufu::ex2_approx((old - new) * scale_log2);
            state.max[half] = new;
            state.sum[half] *= factor[half];
        }
    });
    let base = [state.base_log2(0, scale_log2), state.base_log2(1, scale_log2)];
    let tile_sum = exponentiate::<C>(s, base, scale_log2, |_, _| {});
    // With the sums taken by P·V, this thread's partial sums are dead and their FADDs go.
    if !C::TILE.mma_row_sums {
        seq!(HALF in 0..2 {
            state.sum[HALF] += tile_sum[HALF];
        });
    }
    factor
}

/// Softmax of a key tile after a row maximum has been applied: as [`softmax_tile`], but the exponentials are
/// taken against the maximum already applied, so they start as soon as S lands and the tile's maximum (FMNMX,
/// shuffles) is found beside them instead of before them. Afterwards:
/// - growth ≤ the lazy threshold (the common case): the terms are the ones [`softmax_tile`] makes;
/// - up to [`ATTN_SPECULATION_LIMIT_LOG2`]: the row rescales as usual and its terms are multiplied by the same
///   factor as O (one FMUL each, exact to an ulp);
/// - beyond it (or a first visible key after tile 0, which bottom-right causal masking never produces): the terms
///   may have overflowed; returns `None` to every thread of the warpgroup if any row overflowed, with `s`
///   destroyed and `state` untouched, and the caller recomputes the scores and takes [`softmax_tile`].
#[inline(always)]
fn softmax_tile_speculative<C: Config>(
    warpgroup: &Warpgroup,
    s: &mut C::Scores,
    state: &mut Softmax,
    rows: &Rows,
    key0: u32,
    masked: bool,
    problem: &Problem,
) -> Option<[f32; 2]> {
    let scale_log2 = problem.scale_log2;
    let s = s.as_mut();
    if masked {
        mask_scores(s, rows, key0, problem);
    }
    let base = [state.base_log2(0, scale_log2), state.base_log2(1, scale_log2)];
    let mut partial_max = [[0.0f32; PARTIALS]; 2];
    let mut tile_sum =
        exponentiate::<C>(s, base, scale_log2, |i, score| accumulate_partial(&mut partial_max, i, score, f32::max));
    let tile_max = row_max(partial_max);
    let mut growth_log2 = [0.0f32; 2];
    seq!(HALF in 0..2 {
        growth_log2[HALF] = (state.max[HALF].max(tile_max[HALF]) - state.max[HALF]) * scale_log2;
    });
    // NaN (a row without a visible key so far and in this tile) compares false: its terms are all 0.
    let overflow = growth_log2[0] > ATTN_SPECULATION_LIMIT_LOG2 || growth_log2[1] > ATTN_SPECULATION_LIMIT_LOG2;
    // The recompute path waits on wgmma (`.sync.aligned` over the warpgroup) and shuffles across the warp: the whole
    // warpgroup takes it or none of it. (Rows differ in causal tiles; a lane alone in that path hangs the warp, and
    // a warp alone in it runs the wait at another program counter than its warpgroup.)
    if warpgroup.any(overflow) {
        return None;
    }
    let mut factor = [1.0f32; 2];
    seq!(HALF in 0..2 {
        if rescales::<C>(growth_log2[HALF]) {
            factor[HALF] = mufu::ex2_approx(-growth_log2[HALF]);
            state.max[HALF] = state.max[HALF].max(tile_max[HALF]);
            state.sum[HALF] *= factor[HALF];
            tile_sum[HALF] *= factor[HALF];
        }
    });
    if factor[0] != 1.0 || factor[1] != 1.0 {
        seq!(I in 0..96 {
            if I < s.len() {
                s[I] *= factor[score_position(I, 0).0];
            }
        });
    }
    seq!(HALF in 0..2 {
        state.sum[HALF] += tile_sum[HALF];
    });
    Some(factor)
}

/// Whether a row whose maximum grew by `growth_log2` rescales: past the lazy threshold, or at any growth for
/// the eager ablation.
#[inline(always)]
fn rescales<C: Config>(growth_log2: f32) -> bool {
    if C::LAZY { growth_log2 > ATTN_RESCALE_THRESHOLD_LOG2 } else { growth_log2 > 0.0 }
}

/// Folds score `i` into its row's partial accumulator. Four independent partials per row: a single running
/// value would be a dependency chain of 32 FMNMX (FADD); four chains of 8 and a two-level tree are not. The
/// first eight scores cover all eight accumulators and start them, so no −∞ or 0 is folded in.
#[inline(always)]
fn accumulate_partial(partials: &mut [[f32; PARTIALS]; 2], i: usize, value: f32, fold: fn(f32, f32) -> f32) {
    let (half, _) = score_position(i, 0);
    let slot = &mut partials[half][partial(i)];
    *slot = if i < 2 * PARTIALS { value } else { fold(*slot, value) };
}

/// Each row's maximum over the whole tile: its four partials, then across the row's four threads.
#[inline(always)]
fn row_max(partial_max: [[f32; PARTIALS]; 2]) -> [f32; 2] {
    partial_max.map(|[a, b, c, d]| {
        let mut m = a.max(b).max(c.max(d));
        m = m.max(warp::shfl_xor(m, 1));
        m.max(warp::shfl_xor(m, 2))
    })
}

/// s ← 2^(s·scale_log2 − base) in place (`NUM` of every `DEN` by the polynomial, the rest by MUFU); returns this
/// thread's sum of each row's terms. `visit(i, s[i])` sees each raw score just before it is replaced, in the
/// same unrolled step, so its work interleaves with the exponentials in program order.
#[inline(always)]
fn exponentiate<C: Config>(
    s: &mut [f32],
    base: [f32; 2],
    scale_log2: f32,
    mut visit: impl FnMut(usize, f32),
) -> [f32; 2] {
    let (num, den) = C::POLY;
    let mut partial_sum = [[0.0f32; PARTIALS]; 2];
    seq!(I in 0..96 {
        if I < s.len() {
            visit(I, s[I]);
            let (half, _) = score_position(I, 0);
            let x = core::intrinsics::fmaf32(s[I], scale_log2, -base[half]);
            s[I] = if takes_poly(I, num, den) { exp2_poly(x) } else { mufu::ex2_approx(x) };
            accumulate_partial(&mut partial_sum, I, s[I], |a, b| a + b);
        }
    });
    partial_sum.map(|[a, b, c, d]| (a + b) + (c + d))
}

/// −∞ for the scores of keys a row may not see (past seq_k, or after the diagonal when causal).
#[inline(always)]
fn mask_scores(s: &mut [f32], rows: &Rows, key0: u32, problem: &Problem) {
    let key_limit = [problem.key_limit(rows.index(0)), problem.key_limit(rows.index(1))];
    seq!(I in 0..96 {
        if I < s.len() {
            let (half, column) = score_position(I, rows.column);
            if key0 + column >= key_limit[half] {
                s[I] = f32::NEG_INFINITY;
            }
        }
    });
}

/// The rare path of [`softmax_tile_speculative`]: this thread's raw scores of the key tile at `key0`, again, from
/// q and k in global memory (the tile's K stage and, on the last tile, Q are already handed back by then). f32
/// FMAs in head-dimension order; rows past seq_q and keys past seq_k read nothing and score 0 (the mask then
/// hides the keys).
#[inline(always)]
unsafe fn recompute_scores<C: Config>(s: &mut C::Scores, rows: &Rows, work: &Work, key0: u32, problem: &Problem) {
    // Every value this path needs beyond the hot loop's goes through `opaque` here, so LLVM cannot hoist the
    // address arithmetic out of the cold block into registers held across the whole kernel.
    let (qs, ks) = (problem.q_strides, problem.k_strides);
    let (batch, head, kv_head) = (work.batch as u64, work.head as u64, problem.group.div(work.head) as u64);
    let q_head = opaque_u64(problem.q as u64 + 2 * (batch * qs.batch + head * qs.head));
    let k_head = opaque_u64(problem.k as u64 + 2 * (batch * ks.batch + kv_head * ks.head));
    let (q_seq_bytes, k_seq_bytes) = (opaque_u64(2 * qs.seq), opaque_u64(2 * ks.seq));
    let s = s.as_mut();
    // Rolled loops (a run-time trip count LLVM cannot see through): this path is cold, and unrolled it would be
    // thousands of instructions beside the hot loop.
    for i in 0..opaque(s.len() as u32) as usize {
        let (half, column) = score_position(i, rows.column);
        let (row, key) = (rows.index(half), key0 + column);
        let mut dot = 0.0f32;
        if row < problem.seq_q && key < problem.seq_k {
            // Rows start on 4-byte boundaries: the host requires 16-byte aligned bases and 8-element strides.
            let q = (q_head + row as u64 * q_seq_bytes) as *const u32;
            let k = (k_head + key as u64 * k_seq_bytes) as *const u32;
            for pair in 0..opaque(C::TILE.head_dim / 2) as usize {
                let (q0, q1) = C::unpack2(unsafe { *q.add(pair) });
                let (k0, k1) = C::unpack2(unsafe { *k.add(pair) });
                dot = core::intrinsics::fmaf32(q1, k1, core::intrinsics::fmaf32(q0, k0, dot));
            }
        }
        // Registers cannot be indexed at run time: select the slot.
        seq!(I in 0..96 {
            if I < s.len() && i == I {
                s[I] = dot;
            }
        });
    }
}

/// The consumer's main loop over `kv_tiles` key tiles; returns the softmax state and the unnormalized O. The
/// previous item's output, if `finished` holds it, is staged under the first tile's Q·Kᵀ and its stores issued
/// after the wait for it ([`stage_output`], [`issue_output`]).
///
/// Pipeline per tile t ≥ 1 (one wgmma group each, issued back to back under the ping-pong token):
/// S ← Q·K_tᵀ, O += P_{t−1}·V_{t−1}; wait for S; softmax(S). The wait for that P·V, O's rescale ([`retire_pv`])
/// and the packing of P_t run at the top of the next iteration, or after the loop: the loop's back edge
/// puts them in another basic block than the softmax. ptxas schedules a warpgroup wait as early as its block
/// allows; in the softmax's block it would run before the softmax and serialize the two (docs/perf-notes.md,
/// attention v3). Every branch around the wait depends only on the tile index, so the four warps of a warpgroup
/// run it at one program counter (`.sync.aligned`) without meeting at a barrier first.
#[inline(always)]
unsafe fn consume<C: Config>(
    warpgroup: &Warpgroup,
    q: u32,
    work: &Work,
    rows: &Rows,
    ring: &mut RingState,
    finished: &Finished<C::Out>,
    problem: &Problem,
) -> (Softmax, C::Out) {
    let tile = C::TILE;
    let smem = warpgroup.smem;
    let (kv_tiles, first_masked_tile) = (work.kv_tiles, work.first_masked_tile);
    let mut state = Softmax::empty();
    let mut o = C::OUT_ZERO;
    let mut s = C::SCORES_ZERO;

    // Tile 0: S only.
    warpgroup.take_token();
    unsafe { mbarrier::wait(smem.k_full(ring.stage), ring.phase) };
    wgmma::fence();
    warpgroup.issue_qk::<C>(&mut s, q, ring.stage);
    wgmma::commit_group();
    warpgroup.pass_token();
    // The previous item's output staged while the tensor cores compute these scores, its stores issued after. No
    // branch between the issue and the wait: ptxas serializes every wgmma of a kernel where one is waited for in a
    // path it cannot prove the warpgroup's as one. Without a previous item, `finished` stages zeros, which nothing
    // stores.
    let sums = if tile.overlaps_items() { unsafe { finished.stage::<C>(warpgroup) } } else { [0.0; 2] };
    wgmma::wait_group::<0>();
    wgmma::fence_operands(s.as_mut());
    if tile.overlaps_items() && finished.due {
        unsafe { finished.issue::<C>(sums, warpgroup, problem) };
    }
    warpgroup.release(smem.k_empty(ring.stage));
    if kv_tiles == 1 && !tile.o_in_q {
        warpgroup.release_q(q);
    }
    softmax_tile::<C>(&mut s, &mut state, rows, 0, first_masked_tile == 0, problem);
    let mut p = pack::<C>(&s);
    let mut factor = [1.0f32; 2];
    ring.advance();

    // In iteration t, `ring` is K_t's stage; V_{t−1} (the P·V issued now) and V_{t−2} (the one in flight) trail it.
    // One body, expanded in one loop or two ([`AttnTile::masked_loop`]): the unmasked tiles', whose loop then holds
    // no masking code to branch around, and the masked ones' (from `first_masked_tile` on).
    macro_rules! main_loop_tile {
        ($kv_tile:expr, $masked:expr) => {{
            let kv_tile = $kv_tile;
            if kv_tile > 1 {
                unsafe { retire_pv::<C>(warpgroup, &mut o, &mut state, factor, ring.behind(2).stage) };
                // After the wait: P_{t−2}'s registers are read by the P·V in flight until then.
                p = pack::<C>(&s);
            }
            let v_ring = ring.behind(1);
            warpgroup.take_token();
            // Both waits before the fence: a spin loop between two wgmma issues would make ptxas fence again.
            unsafe { mbarrier::wait(smem.k_full(ring.stage), ring.phase) };
            unsafe { mbarrier::wait(smem.v_full(v_ring.stage), v_ring.phase) };
            wgmma::fence();
            warpgroup.issue_qk::<C>(&mut s, q, ring.stage);
            wgmma::commit_group();
            warpgroup.issue_pv::<C>(&mut o, &p, v_ring.stage);
            wgmma::commit_group();
            warpgroup.pass_token();

            wgmma::wait_group::<1>();
            wgmma::fence_operands(s.as_mut());
            warpgroup.release(smem.k_empty(ring.stage));
            if kv_tile == kv_tiles - 1 && !tile.o_in_q {
                warpgroup.release_q(q);
            }
            let (key0, masked) = (kv_tile * tile.tile_kv, $masked);
            let speculated = if C::SPECULATE {
                softmax_tile_speculative::<C>(warpgroup, &mut s, &mut state, rows, key0, masked, problem)
            } else {
                Some(softmax_tile::<C>(&mut s, &mut state, rows, key0, masked, problem))
            };
            factor = match speculated {
                Some(factor) => factor,
                None => {
                    state.recomputed_tiles += 1;
                    // P·V done first: P's registers are free for the recompute (the wait in `retire_pv` is then a
                    // no-op).
                    wgmma::wait_group::<0>();
                    unsafe { recompute_scores::<C>(&mut s, rows, work, key0, problem) };
                    softmax_tile::<C>(&mut s, &mut state, rows, key0, masked, problem)
                }
            };
            state.tiles += 1;
            ring.advance();
        }};
    }
    // The ablations keep one loop: two copies of `spec`'s recompute path spilled, and `nopingpong` with two loops
    // computed a wrong O under compute-sanitizer memcheck only: the tool's instrumentation of the leader's K hand-back,
    // made while a P·V group is in flight, disturbs O's registers in some register allocations (moving the hand-back
    // after the P·V wait cures it and costs d64/d128 up to 1.6%; docs/perf-notes.md, session 34). The kernels built
    // here pass all three tools.
    if tile.masked_loop && C::PINGPONG && !C::SPECULATE {
        let unmasked_end = first_masked_tile.max(1).min(kv_tiles);
        for kv_tile in 1..unmasked_end {
            main_loop_tile!(kv_tile, false);
        }
        for kv_tile in unmasked_end..kv_tiles {
            main_loop_tile!(kv_tile, true);
        }
    } else {
        for kv_tile in 1..kv_tiles {
            main_loop_tile!(kv_tile, kv_tile >= first_masked_tile);
        }
    }
    if kv_tiles > 1 {
        unsafe { retire_pv::<C>(warpgroup, &mut o, &mut state, factor, ring.behind(2).stage) };
        p = pack::<C>(&s);
    }

    // The last tile's P·V.
    let v_ring = ring.behind(1);
    warpgroup.take_token();
    unsafe { mbarrier::wait(smem.v_full(v_ring.stage), v_ring.phase) };
    wgmma::fence();
    warpgroup.issue_pv::<C>(&mut o, &p, v_ring.stage);
    wgmma::commit_group();
    warpgroup.pass_token();
    wgmma::wait_group::<0>();
    wgmma::fence_operands(o.as_mut());
    warpgroup.release(smem.v_empty(v_ring.stage));
    (state, o)
}

/// Waits for the P·V in flight (reading V stage `v_stage`), hands that stage back and rescales O by the
/// factor of the tile whose probabilities are issued next. The rescale is decided per warp: no warpgroup
/// instruction sits in the branch, so warps may take it apart.
#[inline(always)]
unsafe fn retire_pv<C: Config>(
    warpgroup: &Warpgroup,
    o: &mut C::Out,
    state: &mut Softmax,
    factor: [f32; 2],
    v_stage: u32,
) {
    wgmma::wait_group::<0>();
    let o = o.as_mut();
    wgmma::fence_operands(o);
    warpgroup.release(warpgroup.smem.v_empty(v_stage));
    if warp::any(factor[0] != 1.0 || factor[1] != 1.0) {
        state.rescaled_tiles += 1;
        seq!(I in 0..128 {
            if I < o.len() {
                o[I] *= factor[(I / 2) % 2];
            }
        });
    }
}

/// What a consumer warpgroup needs to issue its matrix work and hand stages back.
struct Warpgroup<'a> {
    smem: &'a SmemMap,
    consumer: u32,
    /// Byte offset of this warpgroup's 64 query rows inside each 64-column block of Q.
    q_rows_offset: u32,
    /// Descriptor of this warpgroup's rows of the first column block of Q buffer 0.
    desc_q: u64,
    /// Thread 0 of the warpgroup: the one that arrives on the empty barriers.
    leader: bool,
    pingpong: bool,
    /// Tensor map of O with boxes of (64, 1, 64, 1): one column block of this warpgroup's rows.
    map_o: u64,
}

impl Warpgroup<'_> {
    /// S = Q_q·K_stageᵀ: one wgmma per 16 head-dim columns (64-column block STEP / 4 of Q and K). Every descriptor
    /// is the first one of its buffer advanced by a constant.
    #[inline(always)]
    fn issue_qk<C: Config>(&self, s: &mut C::Scores, q: u32, stage: u32) {
        let head_dim = C::TILE.head_dim;
        let (q_block_bytes, kv_block_bytes) = (self.smem.q_block_bytes(), self.smem.kv_block_bytes());
        let desc_q = wgmma::desc_advance(self.desc_q, C::TILE.smem_q_offset(q));
        // Q's descriptors are the same for every key tile of an item, and LLVM hoists them out of the main loop: 16
        // of 64 bits at head dim 256, which do not fit beside O's 128 accumulators (ptxas spilled them). There the
        // low word (the address) is opaque here, so each step's descriptor is one add from it at each issue, as the K
        // descriptors are.
        let desc_q =
            if head_dim > 128 { (desc_q & 0xffff_ffff_0000_0000) | opaque_here(desc_q as u32) as u64 } else { desc_q };
        let desc_k = wgmma::desc(self.smem.k(stage, 0), K_MAJOR);
        seq!(STEP in 0..16 {
            if STEP < head_dim / 16 {
                let (block, k_offset) = (STEP / 4, (STEP % 4) * K_STEP_BYTES);
                let desc_q = wgmma::desc_advance(desc_q, block * q_block_bytes + k_offset);
                let desc_k = wgmma::desc_advance(desc_k, block * kv_block_bytes + k_offset);
                unsafe { C::mma_qk(s, desc_q, desc_k, STEP > 0) };
            }
        });
    }

    /// O += P·V_stage: one wgmma per 16 keys (P registers 4·STEP.., V rows 16·STEP.. of every column block). With
    /// [`AttnTile::mma_row_sums`] B's last 8 columns are ones, so O's last columns gain Σ P: at head dim 64 the block
    /// of ones after the V stages, reached from each k-step of V by the descriptor's leading byte offset; above, the
    /// V stage's own last column block.
    #[inline(always)]
    fn issue_pv<C: Config>(&self, o: &mut C::Out, p: &C::Packed, stage: u32) {
        let p = p.as_ref();
        // V is MN-major: its head-dim blocks (M/N) of `tile_kv` key rows (k), one block's bytes apart.
        let (v_major, v_step) = const {
            let v = sw128_mn_major(C::TILE.head_dim / 64, C::TILE.tile_kv);
            (wgmma::sw128_fields(&v), wgmma::k16_step_bytes(&v))
        };
        let v = self.smem.v(stage, 0);
        let desc_v = wgmma::desc(v, v_major);
        // The ones in the V stage: its last column block, where the layout's leading byte offset reaches it. Else the
        // block after the stages, the offset moving with each k-step.
        let moving_ones = C::TILE.mma_row_sums && !C::TILE.ones_in_v_stages();
        let desc_v = if moving_ones { wgmma::desc_with_leading(desc_v, self.smem.ones() - v) } else { desc_v };
        seq!(STEP in 0..12 {
            if STEP < C::TILE.tile_kv / 16 {
                let desc_v = if moving_ones {
                    wgmma::desc_advance_fixed_leading(desc_v, STEP * v_step)
                } else {
                    wgmma::desc_advance(desc_v, STEP * v_step)
                };
                let a = [p[4 * STEP], p[4 * STEP + 1], p[4 * STEP + 2], p[4 * STEP + 3]];
                unsafe { C::mma_pv(o, &a, desc_v) };
            }
        });
    }

    /// This warpgroup is done with the stage guarded by the empty barrier `bar`.
    #[inline(always)]
    fn release(&self, bar: u32) {
        if self.leader {
            unsafe { mbarrier::arrive(bar) };
        }
    }

    /// This warp is done with Q buffer `q` and its work slot: lane 0, which read the slot, arrives on its q_empty
    /// (one arrival per consumer warp).
    #[inline(always)]
    fn release_q(&self, q: u32) {
        if lane_id() == 0 {
            unsafe { mbarrier::arrive(self.smem.q_empty(q)) };
        }
    }

    /// A barrier among this warpgroup's 128 threads only. The epilogue reaches it behind lane-divergent code (the
    /// row leaders' LSE stores). The builder marks collective asm `convergent`, so LLVM no longer copies a barrier into
    /// both arms of such a branch; the unaligned form still keeps one arrival per warp should a warp arrive
    /// diverged, at no cost where ptxas sees it converged.
    #[inline(always)]
    fn sync(&self) {
        barrier::named_sync_id_unaligned(EPILOGUE_BASE + self.consumer, AttnTile::WARPGROUP_THREADS);
    }

    /// Whether `predicate` holds in any thread of this warpgroup, told to all of them: a decision every warp of the
    /// warpgroup takes alike, as a branch around `.sync.aligned` warpgroup instructions must be.
    #[inline(always)]
    fn any(&self, predicate: bool) -> bool {
        barrier::named_any::<{ AttnTile::WARPGROUP_THREADS }>(VOTE_BASE + self.consumer, predicate)
    }

    /// Ping-pong: wait for the right to issue wgmma...
    #[inline(always)]
    fn take_token(&self) {
        if self.pingpong {
            barrier::named_sync_id(PINGPONG_BASE + self.consumer, PINGPONG_THREADS);
        }
    }

    /// ...and hand it to the other consumer warpgroup.
    #[inline(always)]
    fn pass_token(&self) {
        if self.pingpong {
            barrier::named_arrive_id(PINGPONG_BASE + (1 - self.consumer), PINGPONG_THREADS);
        }
    }
}

/// Probabilities to the 16-bit A fragments of P·V: values 2i and 2i + 1 are neighbours in a row.
#[inline(always)]
fn pack<C: Config>(s: &C::Scores) -> C::Packed {
    let mut packed = C::PACKED_ZERO;
    let (s, p) = (s.as_ref(), packed.as_mut());
    seq!(I in 0..48 {
        if I < p.len() {
            p[I] = C::pack2(s[2 * I], s[2 * I + 1]);
        }
    });
    packed
}

/// The sums of this thread's two rows' terms over all key tiles: O's last columns ([`AttnTile::mma_row_sums`]:
/// every column of that 8-column block holds its row's sum, all four threads of the row alike), or the thread's
/// partial sums reduced over the row's four threads.
#[inline(always)]
fn row_sums<C: Config>(o: &[f32], state: &Softmax) -> [f32; 2] {
    let mut sums = [0.0f32; 2];
    seq!(HALF in 0..2 {
        sums[HALF] = if C::TILE.mma_row_sums {
            o[C::TILE.head_dim as usize / 2 + 2 * HALF]
        } else {
            let mut sum = state.sum[HALF];
            sum += warp::shfl_xor(sum, 1);
            sum + warp::shfl_xor(sum, 2)
        };
    });
    sums
}

/// A work item whose products are done and whose output is still to be stored: where the tile overlaps items
/// ([`AttnTile::overlaps_items`]), its epilogue runs under the next item's first Q·Kᵀ.
struct Finished<Out> {
    /// The unnormalized output fragment, every product retired.
    o: Out,
    softmax: Softmax,
    rows: Rows,
    work: Work,
    /// The Q buffer the item came in.
    q: u32,
    /// Whether its output is still to be stored; `false` for [`Finished::nothing`].
    due: bool,
}

impl<Out> Finished<Out> {
    /// No item: staging it writes zeros to the output's own staging buffer, which nothing stores.
    #[inline(always)]
    fn nothing(zero: Out, thread: u32) -> Self {
        let work = Work { head: 0, batch: 0, q0: 0, kv_tiles: 0, first_masked_tile: 0 };
        Finished { o: zero, softmax: Softmax::empty(), rows: Rows::new(0, thread), work, q: 0, due: false }
    }

    /// [`store_output`] of this item.
    #[inline(always)]
    unsafe fn store<C: Config<Out = Out>>(&self, warpgroup: &Warpgroup, problem: &Problem) {
        unsafe { store_output::<C>(&self.o, &self.softmax, &self.rows, &self.work, warpgroup, self.q, problem) };
    }

    /// [`stage_output`] of this item; returns its rows' sums.
    #[inline(always)]
    unsafe fn stage<C: Config<Out = Out>>(&self, warpgroup: &Warpgroup) -> [f32; 2] {
        unsafe { stage_output::<C>(&self.o, &self.softmax, &self.rows, warpgroup, self.q) }
    }

    /// [`issue_output`] of this item, after [`Finished::stage`].
    #[inline(always)]
    unsafe fn issue<C: Config<Out = Out>>(&self, sums: [f32; 2], warpgroup: &Warpgroup, problem: &Problem) {
        unsafe { issue_output::<C>(sums, &self.softmax, &self.rows, &self.work, warpgroup, self.q, problem) };
    }
}

/// O through `mov`s, into registers that no wgmma defined: read under the next item's first Q·Kᵀ, registers whose
/// last definition was a wgmma's make ptxas wait for the one in flight first (its advisory C7517).
#[inline(always)]
fn copied<C: Config>(mut o: C::Out) -> C::Out {
    for value in o.as_mut() {
        *value = f32::from_bits(opaque(value.to_bits()));
    }
    o
}

/// Normalizes O by the row sums and stores it through shared memory: the warpgroup writes its 64 rows into the
/// staging tile in the TMA box layout (64-column blocks of 128-byte swizzled rows, addressed by the layout
/// algebra's [`SW128_64X64_B16`]) and its leader has TMA store them, clipping rows past seq_q. The log-sum-exp
/// is written directly, by one thread per row. With O staged in the item's Q buffer `q` ([`AttnTile::o_in_q`]:
/// this warpgroup's rows of it, which only this warpgroup's wgmma read, all retired by now), the warpgroup hands
/// the buffer back once the store has read it. Two steps: [`stage_output`], with no branch on the thread, may run
/// while a wgmma is in flight (ptxas serializes every wgmma of a kernel that has to wait for one in a branch on
/// the thread); [`issue_output`] then takes the thread-divergent parts.
#[inline(always)]
unsafe fn store_output<C: Config>(
    o: &C::Out,
    state: &Softmax,
    rows: &Rows,
    work: &Work,
    warpgroup: &Warpgroup,
    q: u32,
    problem: &Problem,
) {
    let sums = unsafe { stage_output::<C>(o, state, rows, warpgroup, q) };
    unsafe { issue_output::<C>(sums, state, rows, work, warpgroup, q, problem) };
}

/// The first step of [`store_output`]: O normalized into the staging tile, made visible to the TMA store; returns
/// the thread's two rows' sums.
#[inline(always)]
unsafe fn stage_output<C: Config>(o: &C::Out, state: &Softmax, rows: &Rows, warpgroup: &Warpgroup, q: u32) -> [f32; 2] {
    let o = o.as_ref();
    let sums = row_sums::<C>(o, state);
    // Where this runs with a wgmma in flight ([`AttnTile::overlaps_items`]), MUFU.RCP alone, and of +∞ (0) for a row
    // without a visible key: no branch on the thread (`1.0 / sum` is IEEE division, whose slow path is one, and a
    // condition around the reciprocal would be another).
    let inverse = if C::TILE.overlaps_items() {
        sums.map(|sum| mufu::rcp_approx(if sum > 0.0 { sum } else { f32::INFINITY }))
    } else {
        sums.map(|sum| if sum > 0.0 { 1.0 / sum } else { 0.0 })
    };

    // The previous work item's store must have read the staging tile before it is overwritten. Every thread waits
    // (only the leader has bulk groups; the others return at once): no branch in front of the barrier. Staged in Q,
    // the store was waited for before Q went back to the producer.
    if !C::TILE.o_in_q {
        tma::wait_group_read::<0>();
        warpgroup.sync();
    }
    let smem = warpgroup.smem;
    // The staging addresses depend on the thread only; computed from values opaque here, they are computed here
    // instead of once before the work loop and held (spilled, at the main loop's register pressure) until now.
    let (local, first_column) = (opaque_here(rows.local), opaque_here(rows.column));
    seq!(BLOCK in 0..32 {
        if 8 * BLOCK < C::TILE.head_dim as usize {
            let column = 8 * BLOCK as u32 + first_column;
            let staging = smem.o(q, column / 64, warpgroup.q_rows_offset);
            seq!(HALF in 0..2 {
                let (v0, v1) = (o[4 * BLOCK + 2 * HALF] * inverse[HALF], o[4 * BLOCK + 2 * HALF + 1] * inverse[HALF]);
                let offset = SW128_64X64_B16.crd2idx_u32(&[local + 8 * HALF as u32, column % 64]);
                unsafe { smem::store_u32(staging + offset, C::pack2(v0, v1)) };
            });
        }
    });
    smem::fence_proxy_async_shared();
    warpgroup.sync();
    sums
}

/// The second step of [`store_output`]: the row leaders' log-sum-exp, the leader's TMA store of the staged tile,
/// Q's hand-back where O was staged in it, and the statistics.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn issue_output<C: Config>(
    sums: [f32; 2],
    state: &Softmax,
    rows: &Rows,
    work: &Work,
    warpgroup: &Warpgroup,
    q: u32,
    problem: &Problem,
) {
    let (head, batch) = (work.head, work.batch);
    let lane_is_row_leader = thread_idx_x().is_multiple_of(4);
    seq!(HALF in 0..2 {
        let sum = sums[HALF];
        let row = rows.index(HALF);
        if lane_is_row_leader && row < problem.seq_q {
            // ln Σ exp(scale·s) = (m·scale·log2 e + log2 Σ 2^((s − m)·scale·log2 e)) · ln 2
            let lse = if sum > 0.0 {
                (state.max[HALF] * problem.scale_log2 + mufu::lg2_approx(sum)) * core::f32::consts::LN_2
            } else {
                f32::NEG_INFINITY
            };
            let at = (batch as usize * problem.heads_q.get() as usize + head as usize) * problem.seq_q as usize
                + row as usize;
            unsafe { *problem.lse.add(at) = lse };
        }
    });
    if warpgroup.leader {
        let row0 = (work.q0 + warpgroup.consumer * C::TILE.consumer_rows()) as i32;
        for block in 0..C::TILE.column_blocks() {
            let column = (block * AttnTile::BOX_COLS) as i32;
            let staging = warpgroup.smem.o(q, block, warpgroup.q_rows_offset);
            unsafe { tma::store_4d(warpgroup.map_o, column, head as i32, row0, batch as i32, staging) };
        }
        tma::commit_group();
    }
    if C::TILE.o_in_q {
        // As at the top: every thread waits, the leader alone for something; then each warp hands Q back.
        tma::wait_group_read::<0>();
        warpgroup.sync();
        warpgroup.release_q(q);
    }
    if !problem.stats.is_null() && thread_idx_x().is_multiple_of(32) && state.tiles > 0 {
        unsafe {
            AtomicU32::from_ptr(problem.stats.add(ATTN_STATS_RESCALED))
                .fetch_add(state.rescaled_tiles, Ordering::Relaxed);
            AtomicU32::from_ptr(problem.stats.add(ATTN_STATS_WARP_TILES)).fetch_add(state.tiles, Ordering::Relaxed);
        }
    }
    if !problem.stats.is_null() && state.recomputed_tiles > 0 {
        unsafe {
            AtomicU32::from_ptr(problem.stats.add(ATTN_STATS_RECOMPUTED))
                .fetch_add(state.recomputed_tiles, Ordering::Relaxed);
        }
    }
}
