//! D = alpha·A·B + beta·D on the Hopper GEMM kernels (gpu/kernels/gemm/src/sm90.rs).
//!
//! A is M×K and B is K×N, each stored row- or column-major ([`Order`]; the four combinations are the BLAS
//! layouts tn, tt, nt, nn, see [`GemmLayout`]); D is M×N row-major, in the input type or in f32
//! ([`GemmOutput`]). The kernels load each operand with TMA as it lies and wgmma reads it in place: K-major (A
//! row-major, B column-major) or MN-major (A column-major, B row-major), no transposes. TMA needs a 16-byte aligned
//! base and rows a multiple of 16 bytes apart: an operand without them (a contiguous dimension not a multiple of 8
//! elements, a view starting off 16 bytes) is read from a copy of the plan's own, refreshed before each launch
//! ([`super::staging`]). Every argument is checked before launch.
//!
//! Every kernel writes D through shared memory and TMA stores when a tensor map can describe it (D's
//! rows 16 bytes apart: N a multiple of 8 for 16-bit outputs, of 4 for f32), from registers otherwise
//! ([`tma_store_epilogue`]).
//!
//! [`Variant::StreamK`] runs the wide tile's whole waves data-parallel and splits the last one (the tail) between all
//! blocks by k-tiles ([`oxtile_abi::stream_k`]), and [`Variant::StreamKCluster2`] the same over clusters of two sharing
//! B; such a plan owns a workspace for the partial tiles and the flags that hand them over, allocated at its first
//! launch (or [`GemmPlan::bind_output`]) and reused by every launch after.

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use cudarc::driver::sys::{CUfunction_attribute, CUtensorMap, CUtensorMapDataType};
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DevicePtrMut};
use oxtile_abi::skinny::SkinnySplit;
use oxtile_abi::stream_k::StreamK;
use oxtile_abi::{
    GEMM_SM90_64X64, GEMM_SM90_64X128, GEMM_SM90_128X64, GEMM_SM90_128X128, GEMM_SM90_128X128_PINGPONG,
    GEMM_SM90_128X192, GEMM_SM90_128X256, GEMM_SM90_192X192, GemmParams, GemmTile, TensorMapBytes,
};

use super::gemm_skinny::{self, SkinnyPlan};
use super::staging::{self, StagedMatrix};
use super::{input_ptr, output_ptr};
use crate::error::{Error, Result};
pub use crate::kernels::Variant;
use crate::kernels::{self, Kernel};
use crate::runtime::{ClusterLaunch, ClusterShape, Gpu};
use crate::tma::{self, Tile2d};
use crate::tune_cache;
pub use crate::types::{GemmElement, GemmLayout, GemmOutput, GemmShape, Order};

const OP: &str = "gemm";

/// Idle time, in k-tiles per worker (an SM, or a cluster), that the last wave of tiles must leave for
/// [`Variant::Auto`] to take stream-K: about what its fixup (partials stored, waited for, read back) costs on the H200.
/// Below it stream-K lost to the data-parallel kernel on the H200 (down to −15% at 11 idle k-tiles), above it won (up
/// to +22%), single blocks and clusters alike (docs/perf-notes.md, "The GEMM heuristic's measurements").
const STREAM_K_MIN_IDLE_K_TILES: usize = 16;

/// [`STREAM_K_MIN_IDLE_K_TILES`] for the 64×128 tiles of few-row problems ([`Variant::FlatStreamK`]): far higher,
/// because where the data-parallel tiles already stream B at the rate the memory system gives (64×8192×8192 reads
/// 0.98–1.0 of cuBLASLt on half the SMs), more SMs only add the fixup. Stream-K won from 115 idle k-tiles on and lost
/// at 66 and below (docs/perf-notes.md, "The GEMM heuristic's measurements").
const FLAT_STREAM_K_MIN_IDLE_K_TILES: usize = 100;

/// [`FLAT_STREAM_K_MIN_IDLE_K_TILES`] above one row of 64×128 tiles (M > 64) where the tiles are few enough to split
/// (at most half as many as SMs, [`stream_k_schedule`]): there each tile computes more per byte of B, so more SMs pay
/// sooner. On the H200 the flat split-K won by 30–46% at 71 idle k-tiles (256×1536×7168, 48 tiles in 2 pieces), 86
/// (333×576×7168), 91 (77×1536×7168) and 95 (256×576×7168), by 6–15% at 95 (512×576×7168) and 2–16% at 99
/// (128×4096×12288), against the same tiles data-parallel; with more tiles than half the SMs, stream-K ranges over
/// all of them lost 27% at 88 (77×5120×14336, 80 tiles) (docs/perf-notes.md, "Session 29").
const FLAT_ROWS_STREAM_K_MIN_IDLE_K_TILES: usize = 64;

/// Waves of 128×128 tiles from which [`Variant::Auto`] runs them ping-pong ([`Variant::PingPong`]) rather than as
/// wide cooperative tiles, where K is at most [`PING_PONG_MAX_K_TILES`] deep. Each consumer's epilogue then runs under
/// the other's main loop, which pays where tiles are short; the 128×128 tiles read a third more operand bytes per
/// FLOP than the 128×256 ones, which costs where they are deep. On the H200 ping-pong won from 1.9 waves (2048³,
/// 1.94 waves, included) at K ≤ 2048, and lost or tied from K = 4096 on (docs/perf-notes.md, "The GEMM heuristic's
/// measurements").
const PING_PONG_MIN_TENTHS_OF_WAVES: usize = 19;
/// See [`PING_PONG_MIN_TENTHS_OF_WAVES`].
const PING_PONG_MAX_K_TILES: usize = 32;

/// What a k-tile of the 128×128 tile ([`Variant::Square`]) costs, in eighths of its outputs' share of a wide k-tile:
/// its one consumer issues both m64n128 halves of a k16 step, where the two-consumer tiles split theirs, and it ran
/// 7–11% behind the 128×192 tiles' split-K where the estimate put them level (2048×576×7168: 0.81 of cuBLAS against
/// 0.91; {1000, 1024}×1536×7168: 0.82 against 0.88–0.89; docs/perf-notes.md, "Session 63"). Weighed only where
/// [`Variant::square_or_split_wide192`] compares the two.
const SQUARE_K_TILE_EIGHTHS: usize = 9;

/// The most rows (2 to 4 rows of 128-row tiles) for which [`Variant::wide`] keeps single blocks off stream-K below two
/// waves of wide tiles, weighing the 128×256 and 128×192 tiles data-parallel only. Their stream-K ranges start across
/// K, so each column of tiles reads its k-tiles of B out of step, once per row (1.9–2.5× B's bytes from DRAM by
/// docs/wip/stream-k-traffic), and with so few rows of A per byte of B that traffic, not the idle SMs the split saves,
/// sets the time. Measured on an H100 (docs/perf-notes.md, "Session 63"; tn, each against the fastest cuBLAS peer in
/// the same process): 333×7168×18432 0.58 on the 128×256 stream-K against 0.87 on 128×192 tiles, 512×5120×25600 0.62
/// against 0.86, 512×10240×{5120, 8192} 0.77–0.79 against 0.86–0.88, 512×7168×16384 0.88 against 0.95 on 128×256
/// tiles; with 8 rows (1024×5120×K) the stream-K stays ahead (0.85–0.93 against 0.80–0.86).
const STREAM_K_MAX_FEW_ROWS_M: usize = 512;

/// How much sooner, in sixteenths, the 192×192 tiles ([`Variant::Square192`]) must be estimated to end than the
/// single-block schedule [`Variant::wide`] would otherwise take. The estimate counts a k-tile of every tile at its
/// outputs, but per output the 192×192 tiles ran 2–5% slower than the 128-row ones where both fill their waves
/// (8192×5120×8192: 0.990 against 1.013 of cuBLAS for the 128×192 stream-K), and their stream-K was slower where
/// the estimate put it level (333×6144×5120: 0.742 against 0.809 for the 128×192 tiles). Where their waves fit and
/// the others' do not they win by 5–15%: 8192×576×7168 (129 tiles, one wave; 126 against 138 wide k-tiles per SM,
/// 0.891 of cuBLAS against 0.774) and 3000×1536×7168 (0.960 against 0.905). Measured on an H100
/// (docs/perf-notes.md, "Session 63").
const SQUARE_192_MIN_GAIN_SIXTEENTHS: usize = 1;

/// Tiles of `tile` that cover D.
fn tiles_of(shape: GemmShape, tile: GemmTile) -> usize {
    shape.m.div_ceil(tile.tile_m as usize) * shape.n.div_ceil(tile.tile_n as usize)
}

/// `k_tiles` k-tiles of `tile` in k-tiles of a 128×256 tile, by the outputs each computes (a 128×192 k-tile is
/// three quarters of a wide one, a 128×128 one half, a 192×192 one 9/8): the unit [`Variant::wide`]'s estimates count
/// in.
fn in_wide_k_tiles(k_tiles: usize, tile: GemmTile) -> usize {
    let wide = GEMM_SM90_128X256;
    k_tiles * (tile.tile_m * tile.tile_n) as usize / (wide.tile_m * wide.tile_n) as usize
}

/// The most k-tiles any block of `schedule` computes (the blocks run at once; the last to finish ends the grid).
fn busiest_block_k_tiles(schedule: &StreamK) -> usize {
    (0..schedule.grid())
        .map(|block| schedule.units(block).map(|unit| (unit.k_end - unit.k_begin) as usize).sum::<usize>())
        .max()
        .unwrap_or(0)
}

/// Whether [`Variant::Auto`] runs `shape` on 128×128 ping-pong tiles (see [`PING_PONG_MIN_TENTHS_OF_WAVES`]).
fn ping_pong_pays(shape: GemmShape, sms: usize) -> bool {
    let tile = GEMM_SM90_128X128_PINGPONG;
    let tiles = tiles_of(shape, tile);
    10 * tiles >= PING_PONG_MIN_TENTHS_OF_WAVES * sms && shape.k.div_ceil(tile.tile_k as usize) <= PING_PONG_MAX_K_TILES
}

/// The most pieces the stream-K ranges cut a tile into when there is at most half a wave of tiles ([`stream_k_over`]:
/// the symmetric GEMM, the kernels that do not share split-K tiles, and splits into fewer than
/// [`MIN_SHARED_PIECES`]): their reducing block adds the other pieces' partials one after another (about 0.85 µs each
/// on the H200, docs/perf-notes.md, "Session 29"). 8 is the most measured there (docs/perf-notes.md, "The GEMM
/// heuristic's measurements").
const MAX_SPLIT_K_PIECES: usize = 8;

/// The fewest k-tiles of one split-K piece ([`stream_k_schedule`]): 896 of K. A piece pays its block's start, its
/// pipeline's fill and a reduction that waits for every other piece; cut thinner, those outweigh the k-tiles it
/// saves. Measured on an H100 (docs/perf-notes.md, "Session 62") against 4 and 28 on 28 few-tile rows: ×1.035 Auto's
/// geomean over 4, ×1.2–1.3 where the count changes (64×576×7168: 8 pieces of 14 k-tiles, not 26 of 4; 64×256×16384:
/// 18, not 64); 28 (at most 4 pieces at K = 7168) gave back most of it.
const MIN_SPLIT_K_PIECE_K_TILES: usize = 14;

/// The fewest pieces whose tile they reduce together ([`stream_k_schedule`]). With two, the stream-K ranges' reducer
/// reads one partial and stores through TMA, which measured 2–4% faster than both pieces waiting for each other and
/// storing halves from registers (128×4096×14336 on 64×128 tiles, docs/perf-notes.md, "Session 29").
const MIN_SHARED_PIECES: usize = 3;

/// The idle time, in k-tiles per worker, that `tiles` work items of `k_tiles` each leave on `workers` running them in
/// waves: what the workers without a tile in the last wave wait. Zero when the last wave is full.
fn idle_k_tiles(tiles: usize, k_tiles: usize, workers: usize) -> usize {
    match tiles % workers {
        0 => 0,
        last_wave => (workers - last_wave) * k_tiles / workers,
    }
}

/// Whether A's or B's rows, as the kernel reads them (16-bit elements), start off 128-byte boundaries: rows read in
/// place are their contiguous dimension ([`contiguous_dims`]) apart, staged ones a multiple of 128 bytes
/// ([`staging`]), and rows not a multiple of a swizzled row's 64 elements apart make most box rows TMA loads of that
/// operand span two L2 lines ([`Variant::for_unaligned_rows`]). From the shape alone: a base address off a 128-byte
/// boundary straddles too (one off 16 bytes is staged), and is not weighed.
pub(crate) fn operand_rows_straddle_lines(shape: GemmShape, layout: GemmLayout) -> bool {
    contiguous_dims(shape, layout).into_iter().any(|(_, _, (_, extent))| {
        let pitch =
            if staging::tma_reads_in_place::<u16>(0, extent) { extent } else { staging::staged_pitch::<u16>(extent) };
        !pitch.is_multiple_of(SWIZZLE_ROW as usize)
    })
}

impl Variant {
    /// The concrete kernel for `shape` on a GPU with `sm_count` SMs, by shape alone: MN-major operands take the same
    /// data path as K-major ones, and the f32 epilogue's extra bytes do not change which tiling fills the GPU best
    /// (docs/perf-notes.md). What the plans run is [`Variant::resolve_for`], which for Auto also weighs where the
    /// layout puts the operands' rows (rows off 128-byte lines go to the wide clusters); `oxtile tune gemm` records
    /// per-layout measurements that take precedence.
    ///
    /// A stream-K choice is what [`GemmPlan::new`] runs only where the options allow it ([`GemmOptions::auto_stream_k`],
    /// `OXTILE_NO_STREAM_K`) and every block of its grid can be resident on the GPU at once (its blocks wait for each
    /// other); otherwise the plan runs what Auto runs kept off stream-K ([`Variant::data_parallel_for`]). An
    /// `sm_count` of 0 is taken as 1.
    pub fn resolve(self, shape: GemmShape, sm_count: u32) -> Variant {
        if self != Variant::Auto {
            return self;
        }
        let sm_count = sm_count.max(1);
        // With under half an SM's worth of wide tiles per SM, smaller tiles fill the GPU better; from two waves of
        // wide tiles on, clusters sharing B by multicast win (L2 → SM traffic is what limits the wide kernel) unless
        // their 256-row pairs compute more than an eighth more rows than 128-row tiles; in between, single blocks:
        // wide, 128×192 or 192×192 tiles, whichever schedule ends first ([`Variant::wide`]). In both wide regions
        // stream-K takes over where the last wave would leave the GPU idle for long. Where tiles are many
        // and short, 128×128 ping-pong tiles, whose epilogues hide under main
        // loops (see PING_PONG_MIN_TENTHS_OF_WAVES). Where M fits in 64 rows, 64×128 tiles instead of 128×128 ones;
        // where it fits in one row of wide tiles, their stream-K on 64×128 tiles ([`Variant::flat`]). Wherever the
        // 64×64 tiles are at most half as many as SMs and K is deep, those tiles split over K, ahead of every other
        // few-row choice ([`Variant::splits_narrow_tiles`]). The measurements behind each rule:
        // docs/perf-notes.md, "The GEMM heuristic's measurements", "Session 28" and "Session 60".
        let sms = sm_count as usize;
        if Variant::few_tiles(shape, sms) {
            // Where the narrow tiles take more than one wave and 128×128 tiles fit in one: one wave of cooperative
            // 128×128 tiles, which beat the ping-pong and narrow ones there (from 65 rows on). Else 64×128 tiles:
            // their ring holds twice the B bytes in flight of the 128×64 tile's, and they beat the 128×64 tiles in
            // every layout and the 128×128 tiles split-K ([`Variant::SquareStreamK`]) for 128 < M ≤ 256 and deep K.
            // Not the narrow tile in clusters: sharing A is slower.
            let tiles = |tile| tiles_of(shape, tile);
            if tiles(GEMM_SM90_128X64) > sms && tiles(GEMM_SM90_128X128) <= sms && !Variant::one_flat_row(shape) {
                return Variant::square_or_split_wide192(shape, sms);
            }
            Variant::flat(shape, sms)
        } else if ping_pong_pays(shape, sms) {
            // At most 32 k-tiles: never the flat tiles' stream-K (FLAT_STREAM_K_MIN_IDLE_K_TILES).
            if Variant::one_flat_row(shape) { Variant::Flat } else { Variant::PingPong }
        } else {
            Variant::wide(shape, sms)
        }
    }

    /// [`Variant::resolve`]'s choice where one wave of 128×128 tiles covers `shape` on `sms` SMs and 128×64 tiles
    /// would take more than one: those tiles ([`Variant::Square`]), or the 128×192 tiles' stream-K
    /// ([`Variant::Wide192StreamK`]) where it is estimated to end first — in k-tiles of a 128×256 tile per SM, as
    /// [`Variant::wide`] counts them: the 128×128 tiles' one wave at half a wide k-tile each, times
    /// [`SQUARE_K_TILE_EIGHTHS`] / 8 for their one consumer, against the busiest
    /// block of the schedule the 128×192 stream-K runs ([`stream_k_schedule`]) at three quarters, plus
    /// [`STREAM_K_MIN_IDLE_K_TILES`] of fixup. Only where the 128×192 tiles are at most half a wave and above one
    /// row: their stream-K then cuts every tile into the same number of pieces, which walk K in step and read each
    /// k-tile of B once. With more tiles the ranges start across K and read B again and again (333×5120×14336: twice
    /// by the traffic model, 0.59 of cuBLAS against 0.91 on 128×128 tiles); with one row (M ≤ 128) the 128×128 tiles
    /// already stream B once without fixups, and the split measured 6% slower (128×10240×8192). Measured on an H100
    /// (docs/perf-notes.md, "Session 62"): 1.06–1.09× the 128×128 tiles on 256×5120×{14336, 25600} and
    /// 333×4096×{12288, 14336}; and ("Session 63") 1.07–1.11× on 2048×576×7168 and {1000, 1024}×1536×7168 (58 against
    /// 56 k-tiles per SM without the consumer's weight, 63 with it).
    fn square_or_split_wide192(shape: GemmShape, sms: usize) -> Variant {
        let narrow = GEMM_SM90_128X192;
        let split_tiles = tiles_of(shape, narrow);
        if shape.m <= narrow.tile_m as usize || 2 * split_tiles > sms {
            return Variant::Square;
        }
        let k_tiles = shape.k.div_ceil(narrow.tile_k as usize);
        let square = in_wide_k_tiles(k_tiles, GEMM_SM90_128X128);
        let schedule = stream_k_schedule(shape, narrow, 1, sms as u32, true);
        let split = in_wide_k_tiles(busiest_block_k_tiles(&schedule), narrow) + STREAM_K_MIN_IDLE_K_TILES;
        if 8 * split < SQUARE_K_TILE_EIGHTHS * square { Variant::Wide192StreamK } else { Variant::Square }
    }

    /// The 64×128 tiles for `shape` on `sms` SMs: stream-K ([`Variant::FlatStreamK`]) or not ([`Variant::Flat`]) by
    /// the wide tiles' idle-time rule on these tiles' own waves, with their own thresholds: one row of them streams
    /// B and gains from more SMs only where many would idle ([`FLAT_STREAM_K_MIN_IDLE_K_TILES`]); more rows, up to
    /// half a wave, gain sooner ([`FLAT_ROWS_STREAM_K_MIN_IDLE_K_TILES`]); more rows and more tiles never: the
    /// stream-K ranges then start across K, and each column's tiles read B out of step, once per row (77×5120×14336,
    /// 80 tiles: −27% against the same tiles data-parallel, docs/perf-notes.md "Session 29"; 77 and 128×5120×25600 ran
    /// 159–161 µs split, 0.61–0.65 of cuBLAS, where the data-parallel tiles ran K = 14336 in 55–60 µs, 1.03–1.10,
    /// "Session 63"). Before all of these, the 64×64 tiles split over K where [`Variant::splits_narrow_tiles`] says.
    fn flat(shape: GemmShape, sms: usize) -> Variant {
        if Variant::splits_narrow_tiles(shape, sms) {
            return Variant::FlatNarrowStreamK;
        }
        let (flat_tiles, flat_k_tiles) =
            (tiles_of(shape, GEMM_SM90_64X128), shape.k.div_ceil(GEMM_SM90_64X128.tile_k as usize));
        if !Variant::one_flat_row(shape) && 2 * flat_tiles > sms {
            return Variant::Flat;
        }
        let idle = idle_k_tiles(flat_tiles, flat_k_tiles, sms);
        let threshold = if Variant::one_flat_row(shape) {
            FLAT_STREAM_K_MIN_IDLE_K_TILES
        } else {
            FLAT_ROWS_STREAM_K_MIN_IDLE_K_TILES
        };
        if idle >= threshold { Variant::FlatStreamK } else { Variant::Flat }
    }

    /// Whether [`Variant::Auto`] splits `shape`'s 64×64 tiles over K on `sms` SMs ([`Variant::FlatNarrowStreamK`]),
    /// ahead of the 64×128 tiles ([`Variant::flat`]) and of the skinny kernel: where those tiles are at most half as
    /// many as SMs, so that each is cut into the same number of pieces and every piece walks K in step with its
    /// column's (B read once), and K holds [`MIN_SHARED_PIECES`] pieces of [`MIN_SPLIT_K_PIECE_K_TILES`] (42 k-tiles,
    /// K > 2624), so that every piece [`stream_k_schedule`] cuts is that deep: with fewer k-tiles and at most a third
    /// as many tiles as SMs it would fall back to [`stream_k_over`]'s up to [`MAX_SPLIT_K_PIECES`] thin pieces
    /// (16×576×2048: 8 of 4 k-tiles). Every row measured had K ≥ 4096. Twice the 64×128 tiles engage
    /// twice the blocks on the same B, each k-tile two thirds of the bytes, through a 12-stage ring. Measured
    /// (docs/perf-notes.md, "Session 64"; tn and tt, ratio to the fastest cuBLAS peer): on an H100 over 20 rows of
    /// 32 ≤ M ≤ 333 × {576, 1536} × 7168, 0.971 against the 64×128 split's 0.862; on an H200 ahead of the 64×128
    /// split on all 72 few-row rows timed (M ≤ 333, N ≤ 4096, K 4096–14336), 64×4096×4096 0.89–0.93 against the
    /// data-parallel 64×128 tiles' 0.81–0.82, and against the skinny kernel (M ≤ 16) 0.910 / 0.966 against 0.863 /
    /// 0.901 on the two machines (ahead on 52 of 62 rows). With more tiles it lost (256 and 512×1536×7168, 96 and 192
    /// tiles: 0.54–0.74 against the 64×128 split's 0.65–0.97).
    fn splits_narrow_tiles(shape: GemmShape, sms: usize) -> bool {
        let k_tiles = shape.k.div_ceil(GEMM_SM90_64X64.tile_k as usize);
        2 * tiles_of(shape, GEMM_SM90_64X64) <= sms && k_tiles >= MIN_SHARED_PIECES * MIN_SPLIT_K_PIECE_K_TILES
    }

    /// Whether `shape` fits in one row of 64×128 tiles (M ≤ 64): the 128-row tiles would then compute at least half
    /// padding, and the 64×128 tile covers the same columns per tile with a deeper ring (8 stages of B against 6), so
    /// [`Variant::resolve`] gives it the shapes it would give 128×128 tiles (docs/perf-notes.md, "Session 28").
    fn one_flat_row(shape: GemmShape) -> bool {
        shape.m <= GEMM_SM90_64X128.tile_m as usize
    }

    /// Whether `shape` has at most half an SM's worth of 128×256 tiles per SM: the few-row and small problems, which
    /// [`Variant::resolve`] gives smaller tiles.
    fn few_tiles(shape: GemmShape, sms: usize) -> bool {
        2 * Variant::wide_tiles(shape) <= sms
    }

    /// 128×256 tiles of D.
    fn wide_tiles(shape: GemmShape) -> usize {
        tiles_of(shape, GEMM_SM90_128X256)
    }

    /// [`Variant::resolve`]'s choice among single blocks for `shape` on `sms` SMs, with more than half an SM's worth
    /// of 128×256 tiles, or among clusters sharing B from two waves of them on ([`Variant::wide_clusters`]) where
    /// their 256-row pairs compute at most an eighth more rows than 128-row tiles (333×28672×5120 computes 512 rows
    /// in pairs, 384 in single tiles: 0.75 of cuBLAS in pairs, 0.95 on single blocks' stream-K; docs/perf-notes.md,
    /// "Session 63"). Single blocks: whichever of five schedules is estimated to end first, in k-tiles of a 128×256
    /// tile per SM — the wide tiles data-parallel (their waves × K), the same tiles with the last wave split by
    /// stream-K (the waves less the idle time, plus [`STREAM_K_MIN_IDLE_K_TILES`] of fixup: the idle-time rule), the
    /// same two on 128×192 tiles ([`Variant::Wide192`], [`Variant::Wide192StreamK`]) at three quarters of the columns
    /// per tile, and 192×192 tiles data-parallel ([`Variant::Square192`]) by a margin
    /// ([`SQUARE_192_MIN_GAIN_SIXTEENTHS`]); no stream-K for 2 to 4 rows of tiles under two waves
    /// ([`STREAM_K_MAX_FEW_ROWS_M`]).
    /// For one row of tiles (M ≤ 128), stream-K on 64×128 tiles where the idle-time rule takes stream-K. cuBLAS fits
    /// its tile widths to the SMs this way (1536³: 192×96 tiles, 128 of them; 2504³: 128×216). Measured on an H100
    /// (docs/perf-notes.md, "Session 60", "Session 62" and "Session 63"): where this estimate takes the 128×192
    /// tiles data-parallel, 1.02–1.93× the wide or stream-K tiles it passes over; where it takes their stream-K
    /// (3000×576×7168 and the like), 1.67× on 3000×576×7168; where it takes the 192×192 tiles (8192×576×7168,
    /// 3000×1536×7168), 1.07–1.20× the 128×192 stream-K. The near tie 1280×3840×4096 (88 against 89 k-tiles per
    /// SM) takes the 128×192 stream-K at 0.97× the wide stream-K: the 128-row tiles' own challengers get no margin,
    /// which lost more elsewhere (333×8192×28672's 128×192 tiles).
    fn wide(shape: GemmShape, sms: usize) -> Variant {
        Variant::wide_among(shape, sms, true, true)
    }

    /// [`Variant::wide`], with the 128×192 and 192×192 tiles among the choices or not (`narrower`: the types without
    /// their kernels), and stream-K or not (`stream_k`: Auto kept off it, [`Variant::data_parallel_for`]).
    fn wide_among(shape: GemmShape, sms: usize, narrower: bool, stream_k: bool) -> Variant {
        let wide_tiles = Variant::wide_tiles(shape);
        let k_tiles = shape.k.div_ceil(GEMM_SM90_128X256.tile_k as usize);
        let rows = |tile_m: u32| shape.m.div_ceil(tile_m as usize);
        let many_waves = wide_tiles >= 2 * sms;
        // The clusters' 256-row pairs, unless they compute more than an eighth more rows than 128-row tiles (M = 333:
        // 512 rows against 384). One row of tiles (M ≤ 128) never pairs: 256 rows against 128.
        let pair_rows = 2 * rows(2 * GEMM_SM90_128X256.tile_m);
        if many_waves && 8 * pair_rows <= 9 * rows(GEMM_SM90_128X256.tile_m) {
            return Variant::wide_clusters(shape, sms);
        }
        // No stream-K under two waves of tiles 2 to 4 rows deep ([`STREAM_K_MAX_FEW_ROWS_M`]).
        let few_rows = shape.m > GEMM_SM90_128X256.tile_m as usize && shape.m <= STREAM_K_MAX_FEW_ROWS_M;
        let stream_k = stream_k && (many_waves || !few_rows);
        // Each tiling's data-parallel end and, where its last wave idles for long, its stream-K end, in k-tiles of
        // its own tile per SM.
        let ends = |tiles: usize| {
            let data_parallel = tiles.div_ceil(sms) * k_tiles;
            let idle = idle_k_tiles(tiles, k_tiles, sms);
            let split = (stream_k && idle >= STREAM_K_MIN_IDLE_K_TILES).then_some(data_parallel - idle);
            (data_parallel, split)
        };
        let (data_parallel, split) = ends(wide_tiles);
        let mut best = match split {
            // With one row of wide tiles, the 64×128 tiles, whose fixups move a quarter of the partial-tile bytes,
            // with no padding rows up to 64 (not weighed against 128×192 tiles); stream-K on them by their own waves
            // ([`Variant::flat`]): 1×24576×4096's 96 wide tiles idle 17 k-tiles per SM, its 192 narrow ones 34, and
            // data-parallel they measured 1.05–1.08× their stream-K at M = 1–128 (docs/perf-notes.md, "Session 62").
            Some(_) if shape.m <= GEMM_SM90_128X256.tile_m as usize => return Variant::flat(shape, sms),
            Some(split) => (split + STREAM_K_MIN_IDLE_K_TILES, Variant::StreamK),
            None => (data_parallel, Variant::Wide),
        };
        if narrower {
            // The 128×192 tiles' k-tiles are three quarters of a wide one's; each replaces the choice only where it
            // is estimated to end strictly sooner.
            let narrow = GEMM_SM90_128X192;
            let in_wide = |k_tiles| in_wide_k_tiles(k_tiles, narrow);
            let (data_parallel, split) = ends(tiles_of(shape, narrow));
            let candidates = [
                Some((in_wide(data_parallel), Variant::Wide192)),
                // Not on one row of tiles (M ≤ 128): there the split measured slower ([`Variant::square_or_split_wide192`]).
                split
                    .filter(|_| shape.m > narrow.tile_m as usize)
                    .map(|split| (in_wide(split) + STREAM_K_MIN_IDLE_K_TILES, Variant::Wide192StreamK)),
            ];
            for (end, variant) in candidates.into_iter().flatten() {
                if end < best.0 {
                    best = (end, variant);
                }
            }
            // The 192×192 tiles (9/8 of a wide k-tile each), data-parallel, only where they are estimated to end at
            // least [`SQUARE_192_MIN_GAIN_SIXTEENTHS`] sooner: where their waves fit the SMs and the others' do not.
            let (data_parallel, _) = ends(tiles_of(shape, GEMM_SM90_192X192));
            let end = in_wide_k_tiles(data_parallel, GEMM_SM90_192X192);
            if 16 * end <= (16 - SQUARE_192_MIN_GAIN_SIXTEENTHS) * best.0 {
                best = (end, Variant::Square192);
            }
        }
        best.1
    }

    /// The 128×256 tiles in clusters of two blocks sharing B: stream-K over the same clusters where the last wave of
    /// cluster tiles leaves the clusters idle for longer than its fixup costs (see STREAM_K_MIN_IDLE_K_TILES): 8192³,
    /// 16384³, 4096×14336×4096, 8192×4096×14336 of the suite, not 4096³.
    fn wide_clusters(shape: GemmShape, sms: usize) -> Variant {
        let k_tiles = shape.k.div_ceil(GEMM_SM90_128X256.tile_k as usize);
        let clusters = (sms / 2).max(1);
        let cluster_tiles = shape.m.div_ceil(2 * GEMM_SM90_128X256.tile_m as usize)
            * shape.n.div_ceil(GEMM_SM90_128X256.tile_n as usize);
        if idle_k_tiles(cluster_tiles, k_tiles, clusters) >= STREAM_K_MIN_IDLE_K_TILES {
            Variant::StreamKCluster2
        } else {
            Variant::WideCluster2
        }
    }

    /// [`Variant::resolve`]'s choice where A's or B's rows start off 128-byte boundaries
    /// ([`operand_rows_straddle_lines`]): instead of ping-pong 128×128 tiles or single blocks (wide, 128×192 or
    /// 192×192), the wide tiles in clusters sharing B ([`Variant::wide_clusters`]), above one row of them, even where
    /// their 256-row pairs pad M more than [`Variant::wide`] allows (not measured with straddling rows). A TMA box row of such an operand spans
    /// two L2 lines, and blocks that load many of them per unit of work slow down by up to 2×; the wide tile loads
    /// the fewest rows per FLOP and the cluster halves B's. Measured on an H100 (docs/perf-notes.md, "Session 59"):
    /// where both operands' rows straddle lines, outside the few-tile region, ping-pong at 0.41–0.75 of cuBLAS and
    /// the wide clusters at 0.75–0.96, the best variant or within 4% of it; the few-tile region's choices (64×128,
    /// 128×128 tiles) gained nothing consistent from clusters and keep the heuristic's choice.
    fn for_unaligned_rows(shape: GemmShape, sms: usize, resolved: Variant) -> Variant {
        match resolved {
            Variant::PingPong
            | Variant::Wide
            | Variant::Wide192
            | Variant::Wide192StreamK
            | Variant::Square192
            | Variant::StreamK
                if shape.m > GEMM_SM90_128X256.tile_m as usize && !Variant::few_tiles(shape, sms) =>
            {
                Variant::wide_clusters(shape, sms)
            }
            other => other,
        }
    }

    /// What [`Variant::Auto`] runs instead of `self` when kept off stream-K ([`GemmOptions::auto_stream_k`], or a
    /// grid that is not resident at once): the 128×192 tiles' stream-K of a few-tile problem gives way to the 128×128
    /// tiles it was weighed against ([`Variant::square_or_split_wide192`]); the single wide blocks' stream-K to
    /// whichever data-parallel tiles [`Variant::wide`] estimates to end first (the 128×192 and 192×192 ones where
    /// their kernels exist); any other stream-K choice to its own tiles ([`Variant::data_parallel`]).
    pub fn data_parallel_for(
        self,
        shape: GemmShape,
        sm_count: u32,
        (input, output): (&str, &str),
        layout: GemmLayout,
    ) -> Variant {
        let sm_count = sm_count.max(1);
        match self {
            Variant::Wide192StreamK if Variant::few_tiles(shape, sm_count as usize) => Variant::Square,
            Variant::StreamK | Variant::Wide192StreamK => {
                let narrower = Variant::Wide192.available(input, output, layout)
                    && Variant::Square192.available(input, output, layout);
                Variant::wide_among(shape, sm_count as usize, narrower, false).data_parallel()
            }
            other => other.data_parallel(),
        }
    }

    /// [`Variant::resolve`] for `input` → `output` GEMMs in `layout`: for [`Variant::Auto`] where A's or B's rows
    /// start off 128-byte boundaries, the wide tiles in clusters instead of ping-pong or single blocks (from one
    /// row of tiles on; `for_unaligned_rows`, docs/perf-notes.md "Session 59"); then, where the heuristic's choice has no
    /// kernel for them, the nearest that has: the same tiles without stream-K (stream-K in clusters and
    /// on the 64×128 tile is bf16 → bf16 only, single-block stream-K not f16 → f32), the 64×128 tiles' choice for the
    /// 64×64 split-K (bf16 → bf16 only), the ping-pong 128×128 tile for the
    /// cooperative one (bf16 → bf16 only), the 64×128 tile for split 128×128 ones and, where no ping-pong kernel exists
    /// (f32 outputs), for the ping-pong ones of few-tile problems, and the wide tiles for those of many-tile problems;
    /// for the 128×192 tile (bf16 → bf16 only), the wide tiles' choice without it.
    pub fn resolve_for(
        self,
        shape: GemmShape,
        sm_count: u32,
        (input, output): (&str, &str),
        layout: GemmLayout,
    ) -> Variant {
        let sm_count = sm_count.max(1);
        let resolved = match self.resolve(shape, sm_count) {
            resolved if self == Variant::Auto && operand_rows_straddle_lines(shape, layout) => {
                Variant::for_unaligned_rows(shape, sm_count as usize, resolved)
            }
            resolved => resolved,
        };
        match resolved {
            Variant::StreamKCluster2 if !Variant::StreamKCluster2.available(input, output, layout) => {
                Variant::WideCluster2
            }
            Variant::StreamK if !Variant::StreamK.available(input, output, layout) => Variant::Wide,
            Variant::FlatNarrowStreamK if !Variant::FlatNarrowStreamK.available(input, output, layout) => {
                Variant::FlatStreamK.resolve_for(shape, sm_count, (input, output), layout)
            }
            Variant::FlatStreamK if !Variant::FlatStreamK.available(input, output, layout) => {
                Variant::Flat.resolve_for(shape, sm_count, (input, output), layout)
            }
            Variant::Square if !Variant::Square.available(input, output, layout) => {
                Variant::PingPong.resolve_for(shape, sm_count, (input, output), layout)
            }
            Variant::SquareStreamK if !Variant::SquareStreamK.available(input, output, layout) => {
                Variant::Flat.resolve_for(shape, sm_count, (input, output), layout)
            }
            Variant::PingPong
                if !Variant::few_tiles(shape, sm_count as usize)
                    && !Variant::PingPong.available(input, output, layout) =>
            {
                Variant::wide(shape, sm_count as usize).resolve_for(shape, sm_count, (input, output), layout)
            }
            Variant::PingPong if !Variant::PingPong.available(input, output, layout) => {
                Variant::Flat.resolve_for(shape, sm_count, (input, output), layout)
            }
            Variant::Flat if !Variant::Flat.available(input, output, layout) => Variant::Narrow,
            Variant::Wide192StreamK
                if Variant::few_tiles(shape, sm_count as usize) && !resolved.available(input, output, layout) =>
            {
                Variant::Square.resolve_for(shape, sm_count, (input, output), layout)
            }
            Variant::Wide192 | Variant::Wide192StreamK | Variant::Square192
                if !resolved.available(input, output, layout) =>
            {
                let without = Variant::wide_among(shape, sm_count as usize, false, true);
                without.resolve_for(shape, sm_count, (input, output), layout)
            }
            chosen => chosen,
        }
    }
}

/// The stream-K schedule of `tile` in clusters of `cluster` blocks stacked along M ([`Variant::StreamK`],
/// [`Variant::FlatStreamK`] and [`Variant::SquareStreamK`]: 1, [`Variant::StreamKCluster2`]: 2) for `shape`, when
/// `resident` clusters fit on the GPU at once (the SM count without clusters). Its units are cluster tiles and its
/// blocks clusters; the kernel rebuilds the same schedule from the cluster-tile count, the k-tiles, its grid and the
/// `sk_tiles` and split pieces it is given. `shares`: the kernel reduces split-K tiles with all of their pieces
/// ([`oxtile_abi::GemmConfig::shares_split_k`]). The grid:
/// - at most half as many tiles as resident blocks, where the kernel shares and each tile can be cut into at least
///   [`MIN_SHARED_PIECES`] pieces of at least [`MIN_SPLIT_K_PIECE_K_TILES`]: split-K ([`StreamK::split_k`]), each
///   tile on S = ⌊resident / tiles⌋ blocks (fewer where K is short), each piece one contiguous range of K, so all
///   blocks walk K on S fronts. The pieces reduce their tile together (each adds up its 1/S of it), so S is not
///   capped by a reducer that reads the partials one by one;
/// - otherwise [`stream_k_over`]: at most half a wave, split-K through the stream-K ranges (up to
///   [`MAX_SPLIT_K_PIECES`] pieces, one reducer); above, every resident block (never more than k-tiles of work, so
///   each has some), the tail that [`StreamK::split`] makes stream-K spread evenly over them.
///
/// Split-K rather than stream-K ranges spread over every resident block: those would start all over K (128×8192×8192
/// on 128×128 tiles: ~64 places), which costs problems that stream an operand from DRAM 10–30% (docs/perf-notes.md,
/// GEMM sm90 v14).
pub fn stream_k_schedule(shape: GemmShape, tile: GemmTile, cluster: u32, resident: u32, shares: bool) -> StreamK {
    let tiles = shape.m.div_ceil((tile.tile_m * cluster.max(1)) as usize) * shape.n.div_ceil(tile.tile_n as usize);
    let k_tiles = shape.k.div_ceil(tile.tile_k as usize);
    let pieces = (resident.max(1) as usize / tiles.max(1)).min(k_tiles / MIN_SPLIT_K_PIECE_K_TILES);
    match (u32::try_from(tiles), u32::try_from(k_tiles)) {
        // Counts past u32 cannot occur for checked shapes (dimensions < 2^31; tiles × pieces ≤ resident).
        (Ok(tiles), Ok(k_tiles)) if shares && pieces >= MIN_SHARED_PIECES => {
            StreamK::split_k(tiles, k_tiles, pieces as u32)
        }
        _ => stream_k_over(tiles, k_tiles, resident),
    }
}

/// The stream-K ranges for `tiles` (cluster) tiles of `k_tiles` k-tiles in any order (the symmetric GEMM's triangle,
/// and [`stream_k_schedule`] above half a wave): with at most half a wave, up to [`MAX_SPLIT_K_PIECES`] blocks per
/// tile whose ranges cut each tile into as many pieces, its reducer reading the partials one by one.
pub(crate) fn stream_k_over(tiles: usize, k_tiles: usize, resident: u32) -> StreamK {
    let resident = resident.max(1) as usize;
    let grid = if 2 * tiles <= resident {
        tiles * (resident / tiles).min(k_tiles).min(MAX_SPLIT_K_PIECES)
    } else {
        tiles.saturating_mul(k_tiles).clamp(1, resident)
    };
    // Counts past u32 cannot occur for checked shapes (dimensions < 2^31); saturate rather than wrap regardless.
    let narrow = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    StreamK::split(narrow(tiles), narrow(k_tiles), narrow(grid))
}

/// The co-residency guard of a stream-K plan whose grid of `blocks` blocks has a tail (its blocks wait for each
/// other) on a GPU that holds `capacity` of its blocks at once: the variant to run. `variant` itself when every
/// block fits; for [`Variant::Auto`]'s choice, `auto_fallback`: what Auto runs kept off stream-K
/// ([`Variant::data_parallel_for`]); for an explicitly requested stream-K variant (no fallback),
/// [`Error::StreamKNotResident`].
fn guard_stream_k(
    variant: Variant,
    auto_fallback: Option<Variant>,
    kernel: &'static str,
    blocks: u32,
    capacity: u32,
) -> Result<Variant> {
    match auto_fallback {
        _ if blocks <= capacity => Ok(variant),
        Some(fallback) => Ok(fallback),
        None => Err(Error::StreamKNotResident { kernel, blocks, resident: capacity }),
    }
}

/// The stream-K workspace of a plan (a stream-K variant with a tail): `partial_slots × cluster × tile_m × tile_n` f32
/// partial tiles (a slot per block) and the flags (per block of a cluster tile), zeroed here once; every launch leaves
/// the flags at zero again.
pub(crate) struct StreamKWorkspace {
    pub(crate) partials: CudaSlice<f32>,
    pub(crate) flags: CudaSlice<u32>,
}

impl StreamKWorkspace {
    pub(crate) fn new(gpu: &Gpu, schedule: &StreamK, tile: GemmTile, cluster: u32) -> Result<Self> {
        let floats = (schedule.partial_slots() * cluster) as usize * (tile.tile_m * tile.tile_n) as usize;
        let flags = (schedule.flags(tile.tile_sharers()) * cluster) as usize;
        let fail = |what, bytes| move |source| Error::Workspace { op: OP, what, bytes, source };
        // SAFETY: the partials are only read by a reducer after the block that wrote them in the same launch
        // signalled them; nothing reads an unwritten element.
        let partials =
            unsafe { gpu.stream().alloc::<f32>(floats) }.map_err(fail("stream-K partial tiles", 4 * floats))?;
        let flags = gpu.stream().alloc_zeros::<u32>(flags).map_err(fail("stream-K flags", 4 * flags))?;
        Ok(StreamKWorkspace { partials, flags })
    }
}

/// The operand layout, the epilogue's scalars, the kernel variant and how a grid of single blocks is launched. The
/// default is layout tn (A row-major, B column-major: both K-major) with D = A·B, launched plainly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmOptions {
    pub layout: GemmLayout,
    pub alpha: f32,
    pub beta: f32,
    pub variant: Variant,
    /// How a kernel of single blocks is launched: [`ClusterShape::Plain`], or through the cluster path as clusters of
    /// one, an ablation (it places the blocks differently: the narrow tile ran 7–18% slower so; docs/perf-notes.md,
    /// GEMM sm90 v10). Cluster kernels always launch as clusters.
    pub single_block_launch: ClusterShape,
    /// Launch as a programmatic dependent of the kernel ahead in the stream ([`ClusterLaunch::dependent_launch`]):
    /// the GEMM's blocks take the SMs that kernel's blocks leave and set up while it finishes; they wait for it
    /// before touching global memory. `false` is the ablation.
    pub dependent_launch: bool,
    /// Whether [`Variant::Auto`] may pick a stream-K kernel (from the heuristic or the tune cache). `false` runs what
    /// Auto runs kept off stream-K instead ([`Variant::data_parallel_for`]); so does the environment variable
    /// `OXTILE_NO_STREAM_K=1`, read once per process. An explicitly requested stream-K variant is not affected.
    pub auto_stream_k: bool,
    /// Where [`Variant::Auto`] runs the skinny kernel (M ≤ 16, A row-major: [`gemm_skinny::applies`]; A and B read
    /// in place, as TMA would: staged operands take the tiles).
    pub skinny: SkinnyChoice,
}

/// Where [`Variant::Auto`] runs the skinny kernel ([`gemm_skinny`]) instead of the wgmma tiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SkinnyChoice {
    /// Where it applies and pays ([`gemm_skinny::pays`]), except where the 64×64 tiles split over K
    /// ([`Variant::splits_narrow_tiles`], where that kernel exists for the types and layout and Auto may take
    /// stream-K, [`GemmOptions::auto_may_stream_k`]): it then ran ahead of
    /// the skinny kernel on 52 of 62 rows (docs/perf-notes.md, "Session 64"), so the skinny kernel keeps short K.
    #[default]
    WherePays,
    /// Wherever it applies: its tests, and measuring it against the tiles where the rule does not take it.
    WhereApplies,
    /// Never: Auto keeps to the wgmma tiles (the ablation).
    Never,
}

impl GemmOptions {
    /// Whether [`Variant::Auto`] may pick a stream-K kernel: [`GemmOptions::auto_stream_k`], unless the process runs
    /// with `OXTILE_NO_STREAM_K` set to anything but empty or `0`.
    pub fn auto_may_stream_k(&self) -> bool {
        static NO_STREAM_K: OnceLock<bool> = OnceLock::new();
        let off = *NO_STREAM_K.get_or_init(|| no_stream_k(std::env::var_os("OXTILE_NO_STREAM_K").as_deref()));
        self.auto_stream_k && !off
    }
}

/// Whether a value of `OXTILE_NO_STREAM_K` turns stream-K off for [`Variant::Auto`]: set, and neither empty nor `0`.
fn no_stream_k(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

impl Default for GemmOptions {
    fn default() -> Self {
        GemmOptions {
            layout: GemmLayout::Tn,
            alpha: 1.0,
            beta: 0.0,
            variant: Variant::Auto,
            single_block_launch: ClusterShape::Plain,
            dependent_launch: true,
            auto_stream_k: true,
            skinny: SkinnyChoice::WherePays,
        }
    }
}

/// Whether the kernel of a concrete `variant` writes a D of `n` columns of `output_bytes`-byte elements through
/// its TMA-store epilogue (shared-memory staging, TMA stores overlapping the next tile): its tile configuration
/// has one (every tile configuration does) and D's rows start 16 bytes apart, as a
/// tensor map needs (its base is 16-byte aligned, checked at launch). Otherwise the kernel stores from
/// registers, which any N allows.
pub fn tma_store_epilogue(variant: Variant, n: usize, output_bytes: usize) -> bool {
    variant.tile().stores_through_tma() && (n * output_bytes).is_multiple_of(16)
}

/// D's tensor map for the TMA-store epilogue: every kernel's store boxes are 16 rows × 128 bytes (one warp's rows of
/// a staging buffer), 128-byte swizzled like the staging layout.
fn output_map(data_type: CUtensorMapDataType, address: u64, shape: GemmShape, output_bytes: usize) -> Tile2d {
    Tile2d {
        data_type,
        address,
        rows: shape.m as u64,
        cols: shape.n as u64,
        row_stride: shape.n as u64,
        box_rows: GemmTile::STORE_BOX_ROWS,
        box_cols: GemmTile::STAGING_ROW_BYTES / output_bytes as u32,
    }
}

/// A's and B's contiguous dimensions as `layout` stores them: per operand its name, its order, and the name and
/// extent of the dimension one stored row holds (A: K row-major, M column-major; B: N row-major, K column-major).
fn contiguous_dims(shape: GemmShape, layout: GemmLayout) -> [(&'static str, Order, (&'static str, usize)); 2] {
    let GemmShape { m, n, k } = shape;
    let (a_order, b_order) = (layout.a_order(), layout.b_order());
    let a = if a_order == Order::RowMajor { ("K", k) } else { ("M", m) };
    let b = if b_order == Order::RowMajor { ("N", n) } else { ("K", k) };
    [("A", a_order, a), ("B", b_order, b)]
}

/// A's and B's storage as `layout` lays them out: per operand its stored rows and the elements each holds (its
/// contiguous dimension, [`contiguous_dims`]), packed.
fn stored_rows(shape: GemmShape, layout: GemmLayout) -> [(usize, usize); 2] {
    let GemmShape { m, n, k } = shape;
    contiguous_dims(shape, layout).map(|(operand, _, (_, extent))| {
        let elements = if operand == "A" { m * k } else { k * n };
        (elements / extent, extent)
    })
}

/// Whether TMA can load A and B in `layout` where they lie, for the kernels that never stage an operand (the
/// symmetric GEMM): the contiguous dimension of each (K for A row-major and B column-major, M for A column-major, N
/// for B row-major) must be a multiple of 8, since rows must start 16 bytes apart. [`Error::Unsupported`] otherwise,
/// naming the operand and dimension.
pub(crate) fn check_tma_rows(shape: GemmShape, layout: GemmLayout) -> Result<()> {
    for (operand, order, (dim, extent)) in contiguous_dims(shape, layout) {
        if !extent.is_multiple_of(8) {
            let order = if order == Order::RowMajor { "row-major" } else { "column-major" };
            return Err(Error::unsupported(
                OP,
                format!(
                    "layout {}: {operand} is {order}, so {dim} = {extent} is its contiguous dimension, and it is not a \
                     multiple of 8: TMA needs 16-byte row strides",
                    layout
                ),
            ));
        }
    }
    Ok(())
}

/// Elements of one 128-byte swizzled row: the k extent of every TMA box, and the M/N extent of an MN-major one.
const SWIZZLE_ROW: u32 = GemmTile::MN_BOX;

/// The tensor map of one operand over its storage at `address`, stored rows `pitch` elements apart. `mn` is its M (A)
/// or N (B) extent; `k_major` says whether K is its contiguous dimension; `box_mn` is the M/N extent of a K-major box
/// (a tile, or a cluster block's share).
fn operand_map(
    data_type: CUtensorMapDataType,
    (address, pitch): (u64, usize),
    k_major: bool,
    mn: usize,
    k: usize,
    box_mn: u32,
) -> Tile2d {
    if k_major {
        // Stored as mn rows of k: one box of box_mn rows × 64 k per tile.
        Tile2d {
            data_type,
            address,
            rows: mn as u64,
            cols: k as u64,
            row_stride: pitch as u64,
            box_rows: box_mn,
            box_cols: SWIZZLE_ROW,
        }
    } else {
        // Stored as k rows of mn: boxes of 64 k rows × 64 M/N, tile_mn / 64 of them per tile.
        Tile2d {
            data_type,
            address,
            rows: k as u64,
            cols: mn as u64,
            row_stride: pitch as u64,
            box_rows: SWIZZLE_ROW,
            box_cols: SWIZZLE_ROW,
        }
    }
}

/// The rows TMA loads for the last box of `box_rows`-row boxes over `extent` rows: those left inside the matrix,
/// rounded up to a 128-byte swizzle atom's 8 (what the kernel's `Operand::load` expects of the tail map,
/// gpu/kernels/gemm/src/sm90.rs), or the whole box when the extent fills it.
fn last_box_rows(extent: usize, box_rows: u32) -> u32 {
    match (extent % box_rows as usize) as u32 {
        0 => box_rows,
        left => left.next_multiple_of(8),
    }
}

/// Whether [`Variant::Auto`] runs `shape` (`input` → `output` GEMMs) on the skinny kernel on `sm_count` SMs, given
/// that TMA could read both operands in place (the skinny kernel reads them where they lie; staged ones take the
/// tiles): by [`GemmOptions::skinny`]; where it pays, unless Auto may split 64×64 tiles over K there
/// ([`Variant::splits_narrow_tiles`]; kept off stream-K, the skinny kernel stays).
fn auto_runs_skinny(shape: GemmShape, options: GemmOptions, types: (&str, &str), sm_count: u32) -> bool {
    options.variant == Variant::Auto
        && gemm_skinny::applies(shape, options.layout, types)
        && match options.skinny {
            SkinnyChoice::WherePays => {
                gemm_skinny::pays(shape, options.layout, sm_count)
                    && !(options.auto_may_stream_k()
                        && Variant::splits_narrow_tiles(shape, sm_count as usize)
                        && Variant::FlatNarrowStreamK.available(types.0, types.1, options.layout))
            }
            SkinnyChoice::WhereApplies => true,
            SkinnyChoice::Never => false,
        }
}

/// The kernel a plan of `shape` runs with `options` for `input` → `output` GEMMs (16-bit inputs) on a GPU with
/// `sm_count` SMs, as far as it follows from these alone (`oxtile bench gemm --plan` lists it without a GPU): for A
/// and B whose data start 16-byte aligned (operands with rows TMA cannot read in place are staged and take the
/// tiles), where [`Variant::Auto`] finds no tune-cache entry. The plan itself also reads the tune cache, and a
/// stream-K choice whose grid would not be resident at once runs what Auto runs kept off stream-K. `None` where no
/// kernel exists for the request (an explicit variant without a kernel for these types or layout) or the shape is one
/// no plan takes (a zero or oversized dimension). An `sm_count` of 0 is taken as 1.
pub fn planned_kernel(
    shape: GemmShape,
    options: GemmOptions,
    types: (&str, &str),
    sm_count: u32,
) -> Option<&'static str> {
    let (input, output) = types;
    check_shape(shape).ok()?;
    let sm_count = sm_count.max(1);
    let in_place = stored_rows(shape, options.layout)
        .into_iter()
        .all(|(_, row_elements)| staging::tma_reads_in_place::<u16>(0, row_elements));
    if in_place && auto_runs_skinny(shape, options, types, sm_count) {
        return kernels::find_gemm_skinny(input, output, options.layout).map(|skinny| skinny.kernel.name);
    }
    let variant = tiled_variant(shape, options, types, sm_count, None);
    kernels::find_gemm(input, output, options.layout, variant).map(|gemm| gemm.kernel.name)
}

/// The tiles a plan runs: `options.variant`, or for [`Variant::Auto`] the tune cache's entry (`cached`) or else the
/// heuristic ([`Variant::resolve_for`]), either kept off stream-K where the options say so
/// ([`Variant::data_parallel_for`]).
fn tiled_variant(
    shape: GemmShape,
    options: GemmOptions,
    types: (&str, &str),
    sm_count: u32,
    cached: Option<Variant>,
) -> Variant {
    match options.variant {
        Variant::Auto => {
            let chosen = cached.unwrap_or_else(|| Variant::Auto.resolve_for(shape, sm_count, types, options.layout));
            match options.auto_may_stream_k() {
                true => chosen,
                false => chosen.data_parallel_for(shape, sm_count, types, options.layout),
            }
        }
        chosen => chosen,
    }
}

/// A checked GEMM bound to its operand buffers: the tensor maps (or the skinny kernel's split) are made once, so
/// repeated launches (benchmarks, iterative solvers) pay nothing but the launch, and the copy of each operand TMA
/// cannot read in place ([`super::staging`]). `T` is the type of A and B, `O` that
/// of D (`T` unless given: `GemmPlan::<bf16, f32>` writes f32).
pub struct GemmPlan<T: GemmElement, O: GemmOutput<T> = T> {
    path: Path<T, O>,
    shape: GemmShape,
    /// A's and B's addresses: every launch must bring these buffers (the tensor maps, or the skinny plan, hold them).
    a_address: u64,
    b_address: u64,
}

/// Which kernel family computes a plan.
enum Path<T: GemmElement, O: GemmOutput<T>> {
    /// The wgmma tiles of the GEMM table. Both plans are boxed: a tiled one holds three tensor maps (~900 bytes).
    Tiled(Box<TiledPlan<T, O>>),
    /// The skinny kernel (M ≤ 16).
    Skinny(Box<SkinnyPlan>, std::marker::PhantomData<(T, O)>),
}

impl<T: GemmElement, O: GemmOutput<T>> GemmPlan<T, O> {
    /// Checks the problem and plans it: for [`Variant::Auto`] the skinny kernel where [`GemmOptions::skinny`] says,
    /// else the tiled kernel of the variant (Auto's: the tune cache's or the heuristic's, [`Variant::resolve_for`]).
    /// The skinny choice goes first: `oxtile tune gemm` times the tiled variants only, and where the skinny rule takes
    /// a shape every tiled variant measured slower (docs/perf-notes.md, "Session 30") but the 64×64 tiles split over
    /// K, which the rule leaves those shapes to ([`Variant::splits_narrow_tiles`], "Session 64").
    pub fn new(
        gpu: &Gpu,
        shape: GemmShape,
        options: GemmOptions,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
    ) -> Result<Self> {
        check_shape(shape)?;
        let element = std::mem::size_of::<T>() as u64;
        let (a_address, _a_use) = input_ptr(OP, "A", a, gpu.stream(), shape.m * shape.k, element)?;
        let (b_address, _b_use) = input_ptr(OP, "B", b, gpu.stream(), shape.k * shape.n, element)?;
        let [a_rows, b_rows] = stored_rows(shape, options.layout);
        let in_place = [(a_address, a_rows), (b_address, b_rows)]
            .map(|(address, (_, row_elements))| staging::tma_reads_in_place::<T>(address, row_elements));
        // The skinny kernel reads A and B where they lie, with 16-byte loads.
        let skinny = in_place == [true, true] && auto_runs_skinny(shape, options, (T::NAME, O::NAME), gpu.sm_count());
        let path = if skinny {
            let scalars = (options.alpha, options.beta);
            let plan = SkinnyPlan::new::<T, O>(gpu, shape, options.layout, scalars, options.dependent_launch)?;
            Path::Skinny(Box::new(plan), std::marker::PhantomData)
        } else {
            let read_from = |what, address, rows: (usize, usize), in_place| -> Result<ReadFrom<T>> {
                Ok(match in_place {
                    true => ReadFrom::InPlace { address, row_elements: rows.1 },
                    false => ReadFrom::Copy(StagedMatrix::new(gpu, OP, what, address, rows)?),
                })
            };
            let operands =
                [read_from("A", a_address, a_rows, in_place[0])?, read_from("B", b_address, b_rows, in_place[1])?];
            Path::Tiled(Box::new(TiledPlan::new(gpu, shape, options, operands)?))
        };
        Ok(GemmPlan { path, shape, a_address, b_address })
    }

    /// The stream-K schedule the plan launches ([`Variant::StreamK`]), `None` for the other variants and the skinny
    /// kernel.
    pub fn stream_k(&self) -> Option<StreamK> {
        match &self.path {
            Path::Tiled(plan) => plan.stream_k,
            Path::Skinny(..) => None,
        }
    }

    /// The skinny kernel's split, `None` for the tiled kernels.
    pub fn skinny_split(&self) -> Option<SkinnySplit> {
        match &self.path {
            Path::Tiled(_) => None,
            Path::Skinny(plan, _) => Some(plan.split()),
        }
    }

    /// The flags (stream-K) or counters (the skinny kernel's split groups) of the plan's workspace as the GPU holds
    /// them once the stream's work is done: every launch must leave them all 0 (the next one counts from there). Empty
    /// while the plan has no workspace. For tests.
    pub fn stream_k_flags(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        match &self.path {
            Path::Tiled(plan) => plan.stream_k_flags(gpu),
            Path::Skinny(plan, _) => plan.counters(gpu),
        }
    }

    pub fn shape(&self) -> GemmShape {
        self.shape
    }

    /// The kernel the plan launches.
    pub fn kernel(&self) -> Kernel {
        match &self.path {
            Path::Tiled(plan) => plan.kernel,
            Path::Skinny(plan, _) => plan.kernel(),
        }
    }

    /// Blocks in the grid and blocks per cluster.
    pub fn grid(&self) -> (u32, u32) {
        match &self.path {
            Path::Tiled(plan) => (plan.launch.grid_dim.0, plan.launch.cluster_dim.0),
            Path::Skinny(plan, _) => (plan.split().grid(), 1),
        }
    }

    /// Prepares a launch into `d` so that the launch pays nothing but the launch: encodes D's tensor map for the
    /// kernels with the TMA-store epilogue (a launch into another D than the one before encodes the map itself, which
    /// adds a 128-byte copy to the stream, one a timed loop should not see), and allocates the workspace of a
    /// stream-K or split skinny plan if no launch did yet.
    pub fn bind_output(&self, gpu: &Gpu, d: &mut impl DevicePtrMut<O>) -> Result<()> {
        let (d_address, _d_use) = output_ptr(OP, "D", d, gpu.stream(), self.shape.m * self.shape.n, 16)?;
        self.check_output_disjoint(d_address)?;
        match &self.path {
            Path::Tiled(plan) => plan.bind_output(gpu, d_address),
            Path::Skinny(plan, _) => plan.workspace(gpu).map(drop),
        }
    }

    /// D = alpha·A·B + beta·D with the A and B the plan was made for. A, B and D must belong to the GPU's context
    /// ([`Error::WrongContext`]) and D must share no byte with A or B ([`Error::Overlap`]), checked before the launch.
    pub fn launch(
        &self,
        gpu: &Gpu,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
        d: &mut impl DevicePtrMut<O>,
    ) -> Result<()> {
        let GemmShape { m, n, k } = self.shape;
        // The guards keep A, B and D's uses recorded on the stream until the launch is queued.
        let element = std::mem::size_of::<T>() as u64;
        let (a_address, _a_use) = input_ptr(OP, "A", a, gpu.stream(), m * k, element)?;
        let (b_address, _b_use) = input_ptr(OP, "B", b, gpu.stream(), k * n, element)?;
        if (a_address, b_address) != (self.a_address, self.b_address) {
            return Err(Error::bad_argument(OP, "A or B is not the buffer this plan was made for"));
        }
        let (d_address, _d_use) = output_ptr(OP, "D", d, gpu.stream(), m * n, 16)?;
        self.check_output_disjoint(d_address)?;
        match &self.path {
            Path::Tiled(plan) => plan.launch(gpu, d_address),
            Path::Skinny(plan, _) => plan.launch(gpu, a_address, b_address, d_address),
        }
    }

    /// Refuses a D at `d_address` that shares a byte with the plan's A or B: the kernels read those while they write
    /// D.
    fn check_output_disjoint(&self, d_address: u64) -> Result<()> {
        let GemmShape { m, n, k } = self.shape;
        let (input, output) = (std::mem::size_of::<T>(), std::mem::size_of::<O>());
        let inputs = [("A", self.a_address, m * k * input), ("B", self.b_address, k * n * input)];
        super::check_disjoint(OP, ("D", d_address, m * n * output), &inputs)
    }
}

/// Where a tiled kernel reads A or B: where it lies, or a staged copy (TMA cannot read the operand in place).
enum ReadFrom<T> {
    InPlace { address: u64, row_elements: usize },
    Copy(StagedMatrix<T>),
}

impl<T: GemmElement> ReadFrom<T> {
    /// The address and row pitch, in elements, that the operand's tensor map describes.
    fn storage(&self) -> (u64, usize) {
        match self {
            ReadFrom::InPlace { address, row_elements } => (*address, *row_elements),
            ReadFrom::Copy(staged) => (staged.address(), staged.pitch()),
        }
    }
}

/// A [`GemmPlan`] on the wgmma tiles.
struct TiledPlan<T: GemmElement, O: GemmOutput<T>> {
    shape: GemmShape,
    options: GemmOptions,
    /// A and B as the tensor maps describe them.
    operands: [ReadFrom<T>; 2],
    kernel: Kernel,
    function: CudaFunction,
    /// A's and B's tensor maps and A's for its last tile row, passed to the kernel by value (kernel parameters, as
    /// CUDA C++'s grid constants).
    tensor_maps: [CUtensorMap; 3],
    /// D's, when the kernel stores through TMA ([`tma_store_epilogue`]).
    d_tensor_map: Option<Mutex<DeviceOutputMap>>,
    tile: GemmTile,
    launch: ClusterLaunch,
    /// Plain for single blocks unless the options ask for the cluster path; clusters for cluster kernels.
    launch_shape: ClusterShape,
    /// The schedule of a stream-K kernel; `None` for the others.
    stream_k: Option<StreamK>,
    /// Its workspace, allocated at the first launch (or `bind_output`) when the schedule has a tail.
    workspace: Mutex<Option<StreamKWorkspace>>,
    _types: std::marker::PhantomData<(T, O)>,
}

/// D's tensor map in device memory. D comes with each launch, so the map describes the D of the last launch and is
/// encoded and copied again (128 bytes, ordered on the stream before the kernel) only when a launch brings another.
struct DeviceOutputMap {
    /// The D the device copy describes; 0 before the first launch.
    address: u64,
    words: CudaSlice<u64>,
}

impl<T: GemmElement, O: GemmOutput<T>> TiledPlan<T, O> {
    /// The plan of `options.variant` (Auto: the tune cache's or the heuristic's choice) for A and B read from
    /// `operands`, checked by [`GemmPlan::new`].
    fn new(gpu: &Gpu, shape: GemmShape, options: GemmOptions, operands: [ReadFrom<T>; 2]) -> Result<Self> {
        let cached = match options.variant {
            Variant::Auto => tune_cache::cached_gemm_variant(gpu, T::NAME, O::NAME, options.layout, shape),
            _ => None,
        };
        let variant = tiled_variant(shape, options, (T::NAME, O::NAME), gpu.sm_count(), cached);
        let kernel = kernels::find_gemm(T::NAME, O::NAME, options.layout, variant)
            .ok_or_else(|| {
                Error::unsupported(
                    OP,
                    format!("no {variant:?} kernel for {} → {} in layout {}", T::NAME, O::NAME, options.layout),
                )
            })?
            .kernel;
        let (tile, cluster) = (variant.tile(), variant.cluster_size());
        // In a cluster each block loads (and multicasts) its share of the tile in common. A K-major A whose rows end
        // inside a box has a second map for that box: only as many rows as are left, rounded up to a swizzle atom.
        let (a_k_major, a_box) = (options.layout.a_order() == Order::RowMajor, tile.tile_m / variant.a_sharers());
        let [a_storage, b_storage] = [0, 1].map(|i| operands[i].storage());
        let a_map = |box_rows| operand_map(T::TENSOR_MAP_TYPE, a_storage, a_k_major, shape.m, shape.k, box_rows);
        let a_tail = a_map(if a_k_major { last_box_rows(shape.m, a_box) } else { a_box });
        let tensor_maps = [
            a_map(a_box).encode(OP)?,
            operand_map(
                T::TENSOR_MAP_TYPE,
                b_storage,
                options.layout.b_order() == Order::ColMajor,
                shape.n,
                shape.k,
                tile.tile_n / variant.b_sharers(),
            )
            .encode(OP)?,
            a_tail.encode(OP)?,
        ];
        let d_tensor_map = if tma_store_epilogue(variant, shape.n, std::mem::size_of::<O>()) {
            let words = gpu.stream().alloc_zeros::<u64>(std::mem::size_of::<CUtensorMap>() / 8)?;
            Some(Mutex::new(DeviceOutputMap { address: 0, words }))
        } else {
            None
        };

        let function = gpu.function(kernel)?;
        function.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            tile.smem_bytes() as i32,
        )?;
        // Persistent: at most one block per SM, whole clusters, each cluster walking cluster tiles.
        let (cluster_m, cluster_n) = variant.cluster_shape();
        let cluster_tiles =
            shape.m.div_ceil((tile.tile_m * cluster_m) as usize) * shape.n.div_ceil((tile.tile_n * cluster_n) as usize);
        let mut launch = ClusterLaunch {
            grid_dim: (gpu.sm_count() / cluster * cluster, 1, 1),
            block_dim: (tile.threads(), 1, 1),
            cluster_dim: (cluster, 1, 1),
            shared_mem_bytes: tile.smem_bytes(),
            dependent_launch: options.dependent_launch,
        };
        let resident = if cluster > 1 { gpu.max_active_clusters(&function, &launch)? } else { gpu.sm_count() };
        launch.grid_dim.0 = cluster_tiles.min(resident.max(1) as usize) as u32 * cluster;
        let output_bytes = std::mem::size_of::<O>() as u32;
        let shares = variant.config().is_some_and(|config| config.shares_split_k(output_bytes));
        let stream_k = variant.is_stream_k().then(|| stream_k_schedule(shape, tile, cluster, resident, shares));
        if let Some(schedule) = stream_k.filter(|s| s.sk_tiles() > 0) {
            // The co-residency guard. With a tail, blocks wait for flags other blocks set: that ends only if every
            // block of the grid is resident at once (oxtile_abi::stream_k), which the hardware guarantees for a grid
            // no larger than the occupancy API says fits at once: blocks per SM × SMs for single blocks,
            // cuOccupancyMaxActiveClusters × the cluster size in clusters. (Blocks that other work keeps waiting
            // start as that work ends, since none of this grid's blocks holds their SMs then.) A grid past it would
            // rely on the order the hardware dispatches blocks in: Auto then runs what it runs kept off stream-K,
            // an explicitly requested stream-K variant is refused before any launch.
            let blocks = schedule.grid() * cluster;
            let capacity = if cluster > 1 {
                resident.saturating_mul(cluster)
            } else {
                let per_sm = function.occupancy_max_active_blocks_per_multiprocessor(
                    tile.threads(),
                    tile.smem_bytes() as usize,
                    None,
                )?;
                per_sm.saturating_mul(gpu.sm_count())
            };
            let auto_fallback = (options.variant == Variant::Auto)
                .then(|| variant.data_parallel_for(shape, gpu.sm_count(), (T::NAME, O::NAME), options.layout));
            let guarded = guard_stream_k(variant, auto_fallback, kernel.name, blocks, capacity)?;
            if guarded != variant {
                return TiledPlan::new(gpu, shape, GemmOptions { variant: guarded, ..options }, operands);
            }
            launch.grid_dim.0 = blocks;
        } else if let Some(schedule) = &stream_k {
            // No tail: the kernel runs the plain data-parallel schedule and never waits.
            launch.grid_dim.0 = schedule.grid() * cluster;
        }
        Ok(TiledPlan {
            shape,
            options,
            operands,
            kernel,
            function,
            tensor_maps,
            d_tensor_map,
            tile,
            launch,
            launch_shape: if cluster > 1 { ClusterShape::Clusters } else { options.single_block_launch },
            stream_k,
            workspace: Mutex::new(None),
            _types: std::marker::PhantomData,
        })
    }

    fn stream_k_flags(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        let workspace = self.workspace.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(match &*workspace {
            Some(buffers) => gpu.stream().clone_dtoh(&buffers.flags)?,
            None => Vec::new(),
        })
    }

    /// The stream-K workspace, allocated on first use; `None` when the plan needs none (no stream-K kernel, or no
    /// tail: then the kernel runs the plain schedule and never touches it).
    fn workspace(&self, gpu: &Gpu) -> Result<Option<MutexGuard<'_, Option<StreamKWorkspace>>>> {
        let Some(schedule) = self.stream_k.filter(|s| s.sk_tiles() > 0) else { return Ok(None) };
        let mut workspace = self.workspace.lock().unwrap_or_else(PoisonError::into_inner);
        if workspace.is_none() {
            *workspace = Some(StreamKWorkspace::new(gpu, &schedule, self.tile, self.launch.cluster_dim.0)?);
        }
        Ok(Some(workspace))
    }

    /// [`GemmPlan::bind_output`] for the D at `d_address`, checked there.
    fn bind_output(&self, gpu: &Gpu, d_address: u64) -> Result<()> {
        self.workspace(gpu)?;
        self.d_tensor_map_for(gpu, d_address).map(drop)
    }

    /// D's tensor map in device memory, describing the D at `d_address` (encoded and copied first if it described
    /// another); `None` when the kernel stores from registers.
    fn d_tensor_map_for(&self, gpu: &Gpu, d_address: u64) -> Result<Option<MutexGuard<'_, DeviceOutputMap>>> {
        let Some(map) = &self.d_tensor_map else { return Ok(None) };
        let mut bound = map.lock().unwrap_or_else(PoisonError::into_inner);
        if bound.address != d_address {
            let tile = output_map(O::TENSOR_MAP_TYPE, d_address, self.shape, std::mem::size_of::<O>());
            gpu.stream().memcpy_htod(&tma::as_words(&[tile.encode(OP)?]), &mut bound.words)?;
            bound.address = d_address;
        }
        Ok(Some(bound))
    }

    /// [`GemmPlan::launch`] into the D at `d_address`, the operands checked there (A and B the plan's, read through
    /// the tensor maps where they lie or from their staged copies, refreshed here first; D of M×N output elements,
    /// 16-byte aligned, disjoint from them, all in the GPU's context).
    fn launch(&self, gpu: &Gpu, d_address: u64) -> Result<()> {
        let GemmShape { m, n, k } = self.shape;
        let d_tensor_map = self.d_tensor_map_for(gpu, d_address)?;
        // 0 tells the kernel to store from registers.
        let map_d = d_tensor_map.as_ref().map(|bound| bound.words.device_ptr(gpu.stream()));
        // Stream-K kernels read the workspace and the tail's tile count; without a tail they do not (null, 0).
        // Both with write intent: the kernel writes the partials and sets and resets the flags, so cudarc's event
        // tracking makes this launch wait for every earlier use of the workspace (on any stream: a plan launched
        // through two `Gpu` handles of one context), and later uses wait for it.
        let mut workspace = self.workspace(gpu)?;
        // Staged operands are refreshed from A and B first (the caller holds their guards), their buffers locked
        // until the kernel is queued and their uses recorded after it.
        let mut copies = self.operands.each_ref().map(|operand| match operand {
            ReadFrom::Copy(staged) => Some((staged, staged.lock())),
            ReadFrom::InPlace { .. } => None,
        });
        let [a_copy, b_copy] =
            copies.each_mut().map(|copy| copy.as_mut().map(|(staged, buffer)| (*staged, &mut **buffer)));
        let _copy_uses = staging::refresh(gpu, [a_copy, b_copy])?;
        let (partials, flags) = match workspace.as_deref_mut().and_then(Option::as_mut) {
            Some(StreamKWorkspace { partials, flags }) => {
                (Some(partials.device_ptr_mut(gpu.stream())), Some(flags.device_ptr_mut(gpu.stream())))
            }
            None => (None, None),
        };
        let [map_a, map_b, map_a_tail] = self.tensor_maps.map(|map| TensorMapBytes(map.opaque));
        let mut params = GemmParams {
            tensor_map_a: map_a,
            tensor_map_b: map_b,
            tensor_map_a_tail: map_a_tail,
            tensor_map_d: map_d.as_ref().map_or(0, |(address, _)| *address),
            tensor_map_d_mirror: 0,
            d: d_address,
            // beta·C blends D's old contents.
            c: d_address,
            m: m as u32,
            n: n as u32,
            k: k as u32,
            ldd: n as u32,
            alpha: self.options.alpha,
            beta: self.options.beta,
            diagonal: 0.0,
            partials: partials.as_ref().map_or(0, |(address, _)| *address),
            flags: flags.as_ref().map_or(0, |(address, _)| *address),
            sk_tiles: self.stream_k.map_or(0, |s| s.sk_tiles()),
            split_pieces: self.stream_k.map_or(0, |s| s.pieces()),
            batch: 1,
        };
        // SAFETY: the arguments are the kernel's, one per field of `GemmParams` (the list in oxtile-abi that the
        // kernel's signature is declared from). The tensor maps describe A and B in the layout the kernel reads
        // (checked in `GemmPlan::launch`), each where it lies or as its staged copy (16-byte aligned, rows 128 bytes
        // apart; refreshed above on this stream from the checked A or B, locked until this launch is queued, its use
        // recorded after it), and D (encoded for this D above) with the boxes its tile stores; D holds M×N elements of
        // the kernel's output type, 16-byte aligned, sharing no byte with A or B, and all three belong to the GPU's
        // context (checked in `GemmPlan::launch`); block, cluster and shared-memory sizes are the kernel's own. A
        // stream-K kernel gets the schedule's tail and grid and a workspace sized from that schedule (a slot per
        // block, the flags at zero: zeroed at allocation, left at zero by every launch), which this plan's launches
        // take with write intent, so they run one after another whatever stream they are on; with a tail, every block
        // of the grid can be resident at once (the co-residency guard in `new`). The other kernels never read the
        // (null) workspace.
        let mut args = params.kernel_args();
        unsafe { gpu.launch_as(self.launch_shape, self.kernel.name, &self.function, &self.launch, &mut args) }?;
        if self.stream_k.is_some_and(|s| s.sk_tiles() > 0) {
            gpu.note_stream_k_launch(self.kernel.name);
        }
        Ok(())
    }
}

/// D = alpha·A·B + beta·D, in one call (encodes the tensor maps each time; keep a [`GemmPlan`] to repeat). D's
/// type picks the output: the input type, or f32.
pub fn gemm<T: GemmElement, O: GemmOutput<T>>(
    gpu: &Gpu,
    shape: GemmShape,
    a: &impl DevicePtr<T>,
    b: &impl DevicePtr<T>,
    d: &mut impl DevicePtrMut<O>,
    options: GemmOptions,
) -> Result<()> {
    GemmPlan::<T, O>::new(gpu, shape, options, a, b)?.launch(gpu, a, b, d)
}

fn check_shape(shape: GemmShape) -> Result<()> {
    let GemmShape { m, n, k } = shape;
    if m == 0 || n == 0 || k == 0 {
        return Err(Error::bad_argument(OP, format!("M, N and K must be at least 1, got {m}×{n}×{k}")));
    }
    // TMA coordinates are signed 32-bit; element offsets are computed in 64 bits.
    let limit = i32::MAX as usize;
    if m > limit || n > limit || k > limit {
        return Err(Error::bad_argument(OP, format!("{m}×{n}×{k} has a dimension past 2^31 - 1")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_tiles_by_how_many_fill_the_gpu() {
        let pick = |m, n, k| Variant::Auto.resolve(GemmShape::new(m, n, k), 132);
        // One row of 128×64 tiles: 64×128 ones instead, stream-K where they leave SMs idle for long: 64 tiles on 132
        // SMs 224 k-tiles deep (115 idle k-tiles per SM), 32 tiles (170); not 64 tiles 128 deep (66), nor 128 (3.9).
        assert_eq!(pick(128, 4096, 14336), Variant::FlatStreamK);
        // ... on 64×64 tiles where they are at most half as many as SMs: 64 of them here, 128 above.
        assert_eq!(pick(64, 4096, 14336), Variant::FlatNarrowStreamK);
        assert_eq!(pick(64, 4352, 14336), Variant::FlatStreamK);
        assert_eq!(pick(64, 8192, 8192), Variant::Flat);
        assert_eq!(pick(96, 4096, 4096), Variant::Flat);
        assert_eq!(pick(128, 8192, 8192), Variant::Flat);
        assert_eq!(pick(129, 4096, 4096), Variant::Flat);
        assert_eq!(pick(1024, 1024, 1024), Variant::Flat);
        assert_eq!(pick(256, 4096, 4096), Variant::Flat);
        // Above one row of them, from 64 idle k-tiles: 48 tiles 112 deep (71), 30 (86), 24 (91), 20 (95); one row
        // still from 100: not 32 tiles 112 deep (84), nor 64 deep (48), nor 40 tiles 128 deep (89).
        // Split on 64×64 tiles where those are at most 66: 54 (333×576), 48 (128×1536), 36 (256×576); not 96.
        assert_eq!(pick(256, 1536, 7168), Variant::FlatStreamK);
        assert_eq!(pick(333, 576, 7168), Variant::FlatNarrowStreamK);
        assert_eq!(pick(128, 1536, 7168), Variant::FlatNarrowStreamK);
        assert_eq!(pick(256, 576, 7168), Variant::FlatNarrowStreamK);
        // One row of 64 tiles of 64×64, K deep enough for three pieces of 14 k-tiles: split (not 32 tiles of 64×128,
        // which leave too few SMs idle for their stream-K); with under 42 k-tiles, or 80 tiles, the 64×128 tiles.
        assert_eq!(pick(16, 4096, 7168), Variant::FlatNarrowStreamK);
        assert_eq!(pick(64, 4096, 4096), Variant::FlatNarrowStreamK);
        assert_eq!(pick(64, 4096, 2688), Variant::FlatNarrowStreamK);
        assert_eq!(pick(64, 4096, 2624), Variant::Flat);
        assert_eq!(pick(1, 5120, 8192), Variant::Flat);
        // More rows but 80 tiles (over half the SMs: stream-K ranges, not split-K), 88 idle k-tiles.
        assert_eq!(pick(77, 5120, 14336), Variant::Flat);
        // 128 tiles of 64×128 in one wave, however deep: not 64 tiles of 128×128 split-K.
        assert_eq!(pick(256, 4096, 14336), Variant::Flat);
        assert_eq!(pick(200, 4096, 8192), Variant::Flat);
        // 256 narrow tiles would take two waves, 128 of 128×128 take one.
        assert_eq!(pick(256, 8192, 8192), Variant::Square);
        assert_eq!(pick(128, 14336, 4096), Variant::Square);
        // Where the 128×128 tiles leave SMs idle and K is deep: 54 tiles of 128×192 on 400 k-tiles, each cut in two
        // pieces that walk K in step (the busiest block 200 of them: 166 wide k-tiles with the fixup, against 225 for
        // the 128×128 tiles with their consumer's weight); 2048×576×7168: 48 tiles in two pieces of 56 k-tiles, 58
        // against 63...
        assert_eq!(pick(256, 5120, 25600), Variant::Wide192StreamK);
        assert_eq!(pick(333, 4096, 14336), Variant::Wide192StreamK);
        assert_eq!(pick(2048, 576, 7168), Variant::Wide192StreamK);
        assert_eq!(pick(1000, 1536, 7168), Variant::Wide192StreamK);
        // ... not where K is shallow (256×5120×4096: 40 against 36), nor with more than half a wave of them (81: their
        // ranges would start across K), nor on one row of tiles (128 rows: the 128×128 tiles stream B once already).
        assert_eq!(pick(256, 5120, 4096), Variant::Square);
        // Nor, among the wide tiles' schedules, on one row (1×31296×14336: 223 against the wide tiles' 224).
        assert_eq!(pick(1, 31296, 14336), Variant::Wide);
        assert_eq!(pick(333, 5120, 14336), Variant::Square);
        assert_eq!(pick(128, 10240, 8192), Variant::Square);
        // Not with at most 64 rows: the same 80 tiles along N on 64×128 tiles, without the padding rows.
        assert_eq!(pick(65, 10240, 8192), Variant::Square);
        assert_eq!(pick(64, 10240, 8192), Variant::Flat);
        assert_eq!(pick(1, 10240, 5120), Variant::Flat);
        // Nor ping-pong tiles: 256 tiles of 64×128, 8 k-tiles deep.
        assert_eq!(pick(1, 32768, 512), Variant::Flat);
        assert_eq!(pick(65, 32768, 512), Variant::PingPong);
        // One row of wide tiles with a last wave worth stream-K (96 wide tiles of 64 k-tiles: 36 SMs idle, 17 k-tiles
        // per SM): 64×128 tiles, stream-K by their own waves — not for 192 of them (34 idle k-tiles per SM), 448 (77)
        // or 288 (91), but for 160 of 128 k-tiles (100); the wide tiles without stream-K stay (112 of 64: 13 per SM).
        assert_eq!(pick(16, 24576, 4096), Variant::Flat);
        assert_eq!(pick(128, 24576, 4096), Variant::Flat);
        assert_eq!(pick(1, 57344, 8192), Variant::Flat);
        assert_eq!(pick(16, 36864, 7168), Variant::Flat);
        assert_eq!(pick(16, 20480, 8192), Variant::FlatStreamK);
        // More than one row and more than half a wave of 64×128 tiles: never their stream-K (77×5120×25600: 80 tiles,
        // 157 idle k-tiles per SM); up to half a wave, by the rows' threshold (128×4096×12288: 64 tiles, 99).
        assert_eq!(pick(77, 5120, 25600), Variant::Flat);
        assert_eq!(pick(128, 5120, 25600), Variant::Flat);
        assert_eq!(pick(128, 4096, 12288), Variant::FlatStreamK);
        assert_eq!(pick(16, 28672, 4096), Variant::Wide);
        // Two rows: 192 wide tiles in two waves (128; stream-K is not weighed for 2 to 4 rows), 256 of 128×192 take two
        // waves (96), 128 of 192×192 one (72, in wide k-tiles).
        assert_eq!(pick(129, 24576, 4096), Variant::Square192);
        // 8192×576×7168: 129 tiles of 192×192, one wave of 112 k-tiles (126), against 192 of 128×192 split by
        // stream-K (138) and the wide tiles' stream-K (179). 3000×1536×7168 likewise: 128 tiles, one wave.
        assert_eq!(pick(8192, 576, 7168), Variant::Square192);
        assert_eq!(pick(3000, 1536, 7168), Variant::Square192);
        // Not where they do not end sooner: 333×6144×5120 keeps the 128×192 tiles (64 tiles of 192×192 take 90 wide
        // k-tiles per SM data-parallel, 96 of 128×192 take 60).
        assert_eq!(pick(333, 6144, 5120), Variant::Wide192);
        // 2 to 4 rows of tiles under two waves: data-parallel only, whichever ends first (STREAM_K_MAX_FEW_ROWS_M).
        // 333×7168×18432: 114 tiles of 128×192 (216 wide k-tiles), not the wide tiles' stream-K (200); 512×7168×16384:
        // 112 wide tiles in one wave, not their stream-K; 1024×5120×8192 (8 rows) keeps it.
        assert_eq!(pick(333, 7168, 18432), Variant::Wide192);
        assert_eq!(pick(512, 10240, 5120), Variant::Wide192);
        assert_eq!(pick(512, 7168, 16384), Variant::Wide);
        assert_eq!(pick(1024, 5120, 8192), Variant::StreamK);
        // From two waves on, 256-row cluster pairs only where they compute at most an eighth more rows than 128-row
        // tiles: 333×28672×5120 (336 wide tiles; pairs would compute 512 rows for 384) on single blocks, stream-K.
        assert_eq!(pick(333, 28672, 5120), Variant::StreamK);
        assert_eq!(pick(1000, 28672, 5120), Variant::StreamKCluster2);
        assert_eq!(pick(512, 8192, 8192), Variant::Wide);
        // Data-parallel wide tiles in no fewer waves than 128×192 ones: those. 1536³: 72 wide tiles (one wave, 10
        // idle k-tiles per SM), 96 of 128×192 (one wave); 1024×3072×1024: 96 against 128. Not 512×8192×8192 (128
        // wide tiles, 172 narrower ones: two waves), nor 1792×2048×2048 (112 against 154).
        assert_eq!(pick(1536, 1536, 1536), Variant::Wide192);
        assert_eq!(pick(1024, 3072, 1024), Variant::Wide192);
        let wide_192 =
            |layout| Variant::Auto.resolve_for(GemmShape::new(1536, 1536, 1536), 132, ("bf16", "bf16"), layout);
        assert_eq!(wide_192(GemmLayout::Nt), Variant::Wide192);
        // bf16 → bf16 only: the wide tiles for the other types.
        let other = Variant::Auto.resolve_for(GemmShape::new(1536, 1536, 1536), 132, ("f16", "f16"), GemmLayout::Tn);
        assert_eq!(other, Variant::Wide);
        // A last wave of cluster tiles that leaves 20 k-tiles or more of idle time per cluster: stream-K over the
        // clusters. 4096³: 58 of 66 cluster tiles in the last wave, 8 idle for 64 k-tiles (7.8 per cluster).
        assert_eq!(pick(4096, 4096, 4096), Variant::WideCluster2);
        assert_eq!(pick(4096, 4096, 16384), Variant::StreamKCluster2);
        assert_eq!(pick(8192, 4096, 14336), Variant::StreamKCluster2);
        assert_eq!(pick(6144, 4096, 8192), Variant::StreamKCluster2);
        assert_eq!(pick(8192, 8192, 8192), Variant::StreamKCluster2);
        assert_eq!(pick(16384, 16384, 16384), Variant::StreamKCluster2);
        assert_eq!(pick(4096, 14336, 4096), Variant::StreamKCluster2);
        // 1.9 waves of 128×128 tiles or more, at most 32 k-tiles deep: ping-pong. 256 tiles on 132 SMs (2048², 1.94
        // waves), 324 (2.5), 576 (4.4), 1024 (7.8), 3584 (27.2); not 224 (1792×2048, 1.7 waves), nor K = 4096.
        assert_eq!(pick(2048, 2048, 2048), Variant::PingPong);
        assert_eq!(pick(1792, 2048, 2048), Variant::Wide);
        assert_eq!(pick(2304, 2304, 2048), Variant::PingPong);
        assert_eq!(pick(3072, 3072, 1024), Variant::PingPong);
        assert_eq!(pick(4096, 4096, 1024), Variant::PingPong);
        assert_eq!(pick(4096, 4096, 2048), Variant::PingPong);
        assert_eq!(pick(4096, 14336, 2048), Variant::PingPong);
        assert_eq!(pick(2048, 2048, 1024), Variant::PingPong);
        assert_eq!(pick(3072, 4096, 4096), Variant::WideCluster2);
        assert_eq!(pick(8192, 8192, 4096), Variant::StreamKCluster2);
        // Half the clusters idle, but for 16 k-tiles only: ping-pong tiles, which take any short K from two waves on.
        assert_eq!(pick(8192, 8192, 1024), Variant::PingPong);
        assert_eq!(pick(2048, 4096, 1024), Variant::PingPong);
        // Single blocks by the estimated end of each schedule, in k-tiles per SM (`Variant::wide`). 1536×1536×4096:
        // 72 wide tiles of 64 k-tiles leave 60 SMs idle for 29 k-tiles per SM, so stream-K would end at 51; its 96
        // tiles of 128×192 in one wave at 48. 1536³ (24 k-tiles, 11 idle: no stream-K): the wide tiles' 24 against
        // 18. 2048×1536×2048: 96 wide tiles against 128 of 128×192, one wave each. 2560³: 200 wide tiles of 40 leave
        // 19 idle (stream-K 77); 280 of 128×192 take three waves (90). (3072×1536 is 288 tiles of 128×128:
        // ping-pong.)
        assert_eq!(pick(1536, 1536, 4096), Variant::Wide192);
        assert_eq!(pick(1536, 1536, 1536), Variant::Wide192);
        assert_eq!(pick(3072, 1536, 1536), Variant::PingPong);
        assert_eq!(pick(2048, 1536, 2048), Variant::Wide192);
        assert_eq!(pick(2560, 2560, 2560), Variant::StreamK);
        // No last wave: 4 × 66 cluster tiles.
        assert_eq!(pick(256 * 12, 256 * 22, 8192), Variant::WideCluster2);
        // 8192² output tiles on 60 clusters: 1024 = 17 × 60 + 4.
        assert_eq!(pick(8192, 8192, 8192), Variant::Auto.resolve(GemmShape::new(8192, 8192, 8192), 120));
        assert_eq!(Variant::Wide.resolve(GemmShape::new(1, 1, 8), 132), Variant::Wide);
        // Only bf16 → bf16 has stream-K kernels in clusters: the others keep the plain cluster kernel.
        let big = GemmShape::new(8192, 8192, 8192);
        assert_eq!(Variant::Auto.resolve_for(big, 132, ("bf16", "bf16"), GemmLayout::Tn), Variant::StreamKCluster2);
        assert_eq!(Variant::Auto.resolve_for(big, 132, ("bf16", "f32"), GemmLayout::Tn), Variant::WideCluster2);
        assert_eq!(Variant::Auto.resolve_for(big, 132, ("f16", "f16"), GemmLayout::Tt), Variant::WideCluster2);
        // Ping-pong for many short tiles exists for same-type outputs, single blocks: else the wide tiles' choice.
        let short = GemmShape::new(4096, 4096, 2048);
        assert_eq!(Variant::Auto.resolve_for(short, 132, ("f16", "f16"), GemmLayout::Tn), Variant::PingPong);
        assert_eq!(Variant::Auto.resolve_for(short, 132, ("bf16", "f32"), GemmLayout::Tn), Variant::WideCluster2);
        let mid = GemmShape::new(1536, 1536, 4096);
        assert_eq!(Variant::Auto.resolve_for(mid, 132, ("f16", "f16"), GemmLayout::Tn), Variant::StreamK);
        assert_eq!(Variant::Auto.resolve_for(mid, 132, ("f16", "f32"), GemmLayout::Tn), Variant::Wide);
        // The cooperative 128×128 tiles are bf16 → bf16 only: the ping-pong ones for f16, and for f32 outputs (no
        // ping-pong kernel) the 64×128 tiles.
        let decode = GemmShape::new(256, 8192, 8192);
        assert_eq!(Variant::Auto.resolve_for(decode, 132, ("bf16", "bf16"), GemmLayout::Tn), Variant::Square);
        assert_eq!(Variant::Auto.resolve_for(decode, 132, ("f16", "f16"), GemmLayout::Tn), Variant::PingPong);
        assert_eq!(Variant::Auto.resolve_for(decode, 132, ("bf16", "f32"), GemmLayout::Tn), Variant::Flat);
        let deep = GemmShape::new(256, 4096, 14336);
        assert_eq!(Variant::Auto.resolve_for(deep, 132, ("bf16", "bf16"), GemmLayout::Tn), Variant::Flat);
        assert_eq!(
            Variant::SquareStreamK.resolve_for(deep, 132, ("bf16", "bf16"), GemmLayout::Tn),
            Variant::SquareStreamK
        );
        assert_eq!(Variant::SquareStreamK.resolve_for(deep, 132, ("f16", "f16"), GemmLayout::Tn), Variant::Flat);
        assert_eq!(Variant::Auto.resolve_for(deep, 132, ("f16", "f16"), GemmLayout::Tn), Variant::Flat);
        assert_eq!(Variant::Auto.resolve_for(deep, 132, ("f16", "f16"), GemmLayout::Tt), Variant::Flat);
        assert_eq!(Variant::Auto.resolve_for(deep, 132, ("f16", "f32"), GemmLayout::Tt), Variant::Flat);
        // Small problems: the 64×128 tile in every layout and for every output.
        let small = GemmShape::new(1024, 1024, 1024);
        assert_eq!(Variant::Auto.resolve(small, 132), Variant::Flat);
        for layout in GemmLayout::ALL {
            assert_eq!(Variant::Auto.resolve_for(small, 132, ("bf16", "bf16"), layout), Variant::Flat);
        }
        assert_eq!(Variant::Auto.resolve_for(small, 132, ("bf16", "f32"), GemmLayout::Tn), Variant::Flat);
        let few_rows = GemmShape::new(128, 8192, 8192);
        assert_eq!(Variant::Auto.resolve_for(few_rows, 132, ("f16", "f16"), GemmLayout::Nn), Variant::Flat);
        assert_eq!(Variant::Auto.resolve_for(few_rows, 132, ("f16", "f32"), GemmLayout::Nn), Variant::Flat);
        // Stream-K on 64×128 tiles is bf16 → bf16 only: the data-parallel 64×128 tile for the other types.
        let idle_rows = GemmShape::new(128, 4096, 14336);
        assert_eq!(Variant::Auto.resolve_for(idle_rows, 132, ("bf16", "bf16"), GemmLayout::Nn), Variant::FlatStreamK);
        assert_eq!(Variant::Auto.resolve_for(idle_rows, 132, ("f16", "f16"), GemmLayout::Nn), Variant::Flat);
        assert_eq!(Variant::Auto.resolve_for(idle_rows, 132, ("bf16", "f32"), GemmLayout::Nn), Variant::Flat);
        // So is it on 64×64 tiles: the 64×128 tiles' choice for the other types.
        let few_columns = GemmShape::new(128, 1536, 7168);
        assert_eq!(
            Variant::Auto.resolve_for(few_columns, 132, ("bf16", "bf16"), GemmLayout::Nn),
            Variant::FlatNarrowStreamK
        );
        assert_eq!(Variant::Auto.resolve_for(few_columns, 132, ("f16", "f16"), GemmLayout::Nn), Variant::Flat);
        assert_eq!(Variant::Auto.resolve_for(few_columns, 132, ("bf16", "f32"), GemmLayout::Nn), Variant::Flat);
    }

    #[test]
    fn tma_reads_an_operand_in_place_where_its_contiguous_dimension_is_a_multiple_of_8() {
        use GemmLayout::{Nn, Nt, Tn, Tt};
        let ok = |m, n, k, layout| check_tma_rows(GemmShape::new(m, n, k), layout);
        // tn: K contiguous in both.
        ok(4097, 4095, 4104, Tn).unwrap();
        assert!(ok(64, 64, 63, Tn).unwrap_err().to_string().contains("K = 63"));
        // tt: A by K, B by N.
        ok(4097, 4088, 4104, Tt).unwrap();
        let err = ok(4097, 4095, 4104, Tt).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
        assert!(err.to_string().contains("B is row-major, so N = 4095") && err.to_string().contains("multiple of 8"));
        // nt: M and N; K is free.
        ok(4104, 4088, 4097, Nt).unwrap();
        ok(8, 8, 1, Nt).unwrap();
        assert!(ok(4097, 4088, 8, Nt).unwrap_err().to_string().contains("A is column-major, so M = 4097"));
        assert!(ok(8, 1, 8, Nt).unwrap_err().to_string().contains("N = 1"));
        // nn: A by M, B by K.
        ok(4104, 4095, 4104, Nn).unwrap();
        assert!(ok(4104, 4095, 4097, Nn).unwrap_err().to_string().contains("B is column-major, so K = 4097"));
        assert!(ok(1, 8, 8, Nn).unwrap_err().to_string().contains("M = 1"));
    }

    #[test]
    fn stored_rows_are_the_contiguous_dimension_long() {
        let shape = GemmShape::new(300, 200, 100);
        assert_eq!(stored_rows(shape, GemmLayout::Tn), [(300, 100), (200, 100)]);
        assert_eq!(stored_rows(shape, GemmLayout::Tt), [(300, 100), (100, 200)]);
        assert_eq!(stored_rows(shape, GemmLayout::Nt), [(100, 300), (100, 200)]);
        assert_eq!(stored_rows(shape, GemmLayout::Nn), [(100, 300), (200, 100)]);
    }

    #[test]
    fn operand_rows_straddle_lines_where_their_bytes_are_no_multiple_of_128() {
        let straddle = |m, n, k, layout| operand_rows_straddle_lines(GemmShape::new(m, n, k), layout);
        // tn: A's and B's rows are both K long.
        assert!(straddle(4096, 4096, 4040, GemmLayout::Tn));
        assert!(!straddle(4096, 4040, 4096, GemmLayout::Tn), "N only sets D's rows");
        // tt: A's rows K, B's rows N.
        assert!(straddle(4096, 4096, 4040, GemmLayout::Tt));
        assert!(straddle(4096, 4040, 4096, GemmLayout::Tt));
        assert!(!straddle(4040, 4096, 4096, GemmLayout::Tt), "M sets no operand row in tt");
        // nt: A's rows M, B's rows N; nn: A's rows M, B's rows K.
        assert!(straddle(4040, 4096, 4096, GemmLayout::Nt));
        assert!(!straddle(4096, 4096, 4040, GemmLayout::Nt));
        assert!(straddle(4096, 4096, 4040, GemmLayout::Nn));
        // 64 elements are 128 bytes: multiples of 64 never straddle.
        assert!(!straddle(64 * 47, 64 * 95, 64 * 33, GemmLayout::Tn));
        // Rows no multiple of 16 bytes are staged at a 128-byte pitch: those never straddle.
        assert!(!straddle(1500, 1500, 1500, GemmLayout::Tn) && !straddle(1500, 1500, 1500, GemmLayout::Tt));
        assert!(straddle(1500, 1504, 1500, GemmLayout::Tt), "B's rows of 1504 are read in place");
    }

    #[test]
    fn auto_runs_wide_clusters_where_operand_rows_straddle_lines() {
        let bf16 = ("bf16", "bf16");
        let auto = |m, n, k, layout| Variant::Auto.resolve_for(GemmShape::new(m, n, k), 132, bf16, layout);
        // Many short tiles: ping-pong when the rows are aligned, the wide clusters when they are not.
        assert_eq!(auto(3072, 5120, 2048, GemmLayout::Tn), Variant::PingPong);
        assert_eq!(auto(3001, 5000, 2008, GemmLayout::Tn), Variant::WideCluster2);
        assert_eq!(auto(3001, 5000, 2008, GemmLayout::Tt), Variant::WideCluster2);
        // Only D's rows off the lines (tn: N sets no operand row): still ping-pong.
        assert_eq!(auto(3072, 5000, 2048, GemmLayout::Tn), Variant::PingPong);
        // Single wide blocks become clusters.
        assert_eq!(Variant::Auto.resolve(GemmShape::new(1234, 5680, 2344), 132), Variant::Wide);
        assert_eq!(auto(1234, 5680, 2344, GemmLayout::Tn), Variant::WideCluster2);
        // Stream-K or not by the clusters' own idle-time rule: 2047×2056×2040 leaves the clusters' last wave idle
        // long enough; where that kernel does not exist (f16), the clusters' data-parallel one.
        assert_eq!(auto(2047, 2056, 2040, GemmLayout::Tn), Variant::StreamKCluster2);
        let f16 = Variant::Auto.resolve_for(GemmShape::new(2047, 2056, 2040), 132, ("f16", "f16"), GemmLayout::Tn);
        assert_eq!(f16, Variant::WideCluster2);
        // One row of tiles (M ≤ 128) would leave a cluster's second block idle: single blocks stay (here 107 of
        // 128×192, one wave, as 80 of 128×256).
        let one_row = GemmShape::new(128, 20480, 1000);
        assert_eq!(Variant::Auto.resolve(one_row, 132), Variant::Wide192);
        assert_eq!(Variant::Auto.resolve_for(one_row, 132, bf16, GemmLayout::Tn), Variant::Wide192);
        // The few-tile region keeps its choice.
        let few = GemmShape::new(1000, 1000, 1000);
        assert_eq!(Variant::Auto.resolve_for(few, 132, bf16, GemmLayout::Tn), Variant::Auto.resolve(few, 132));
        // So does its 128×192 stream-K (K = 25000: A's rows 50000 bytes apart).
        let split = GemmShape::new(256, 5120, 25000);
        assert_eq!(Variant::Auto.resolve(split, 132), Variant::Wide192StreamK);
        assert_eq!(Variant::Auto.resolve_for(split, 132, bf16, GemmLayout::Tn), Variant::Wide192StreamK);
        // A variant asked for by name is run as asked.
        assert_eq!(
            Variant::PingPong.resolve_for(GemmShape::new(3001, 5000, 2008), 132, bf16, GemmLayout::Tn),
            Variant::PingPong
        );
    }

    #[test]
    fn auto_resolves_to_a_kernel_that_exists_for_every_type_pair_and_layout() {
        // Whatever the table instantiates, Auto's choice (and its fallback without stream-K) must exist.
        let shapes = [
            (64, 4096, 14336),
            (128, 4096, 14336),
            (200, 4096, 8192),
            (256, 8192, 8192),
            (512, 8192, 8192),
            (1024, 1024, 1024),
            (1536, 1536, 4096),
            (2048, 2048, 2048),
            (4096, 4096, 4096),
            (8192, 8192, 8192),
            // Rows off 128-byte boundaries in some layouts (the clusters' rule).
            (2000, 2000, 2000),
            (3001, 5000, 2008),
            (1234, 5680, 2344),
            // The 192×192 tiles (bf16 → bf16 only), the few-row rule and the unpaired clusters.
            (8192, 576, 7168),
            (333, 7168, 18432),
            (333, 28672, 5120),
        ];
        for (input, output) in [("bf16", "bf16"), ("bf16", "f32"), ("f16", "f16"), ("f16", "f32")] {
            for layout in GemmLayout::ALL {
                for (m, n, k) in shapes {
                    let variant = Variant::Auto.resolve_for(GemmShape::new(m, n, k), 132, (input, output), layout);
                    let plain = variant.data_parallel();
                    assert!(variant.available(input, output, layout), "{variant:?} {input} → {output} {layout}");
                    assert!(plain.available(input, output, layout), "{plain:?} {input} → {output} {layout}");
                }
            }
        }
        assert!(kernels::find_gemm("bf16", "f16", GemmLayout::Tn, Variant::Wide).is_none());
        assert!(kernels::find_gemm("bf16", "bf16", GemmLayout::Tn, Variant::Auto).is_none());
        let ablation = kernels::find_gemm("bf16", "bf16", GemmLayout::Tn, Variant::WideCluster2Unshared);
        assert_eq!(ablation.unwrap().kernel.name, "gemm_bf16_tn_128x256_c2_nomc_sm90");
    }

    #[test]
    fn operand_maps_follow_the_contiguous_dimension() {
        let data_type = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
        // K-major: stored M rows of K, one box of 64 k × the tile's rows.
        let k_major = operand_map(data_type, (0, 520), true, 300, 520, 128);
        assert_eq!((k_major.rows, k_major.cols, k_major.row_stride), (300, 520, 520));
        assert_eq!((k_major.box_rows, k_major.box_cols), (128, 64));
        // MN-major: stored K rows of M, boxes of 64 k × 64 M whatever the tile.
        let mn_major = operand_map(data_type, (0, 304), false, 304, 520, 128);
        assert_eq!((mn_major.rows, mn_major.cols, mn_major.row_stride), (520, 304, 304));
        assert_eq!((mn_major.box_rows, mn_major.box_cols), (64, 64));
        // A staged copy: the operand's extents, the copy's pitch.
        let staged = operand_map(data_type, (0, 576), true, 300, 520, 128);
        assert_eq!((staged.rows, staged.cols, staged.row_stride), (300, 520, 576));
    }

    #[test]
    fn the_tma_store_epilogue_needs_16_byte_rows_and_staging_buffers() {
        // 16-bit D: N a multiple of 8; f32 D: of 4.
        assert!(tma_store_epilogue(Variant::Wide, 1000, 2));
        assert!(!tma_store_epilogue(Variant::Wide, 4095, 2));
        assert!(!tma_store_epilogue(Variant::Narrow, 1004, 2));
        assert!(tma_store_epilogue(Variant::Narrow, 1004, 4));
        assert!(tma_store_epilogue(Variant::WideCluster2, 776, 4));
        assert!(!tma_store_epilogue(Variant::WideCluster2, 777, 4));
        assert!(tma_store_epilogue(Variant::WideCluster2Unshared, 256, 2));
        // The ping-pong consumers stage their 128 rows 64 at a time.
        assert!(tma_store_epilogue(Variant::PingPong, 1024, 2));
        assert!(!tma_store_epilogue(Variant::PingPongCluster2, 1004, 2));
    }

    #[test]
    fn output_maps_store_one_warps_rows_of_a_staging_buffer_per_box() {
        let f32_type = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
        let map = output_map(f32_type, 0, GemmShape::new(300, 1004, 64), 4);
        assert_eq!((map.rows, map.cols, map.row_stride), (300, 1004, 1004));
        // 16 rows × 128 bytes: 32 f32, 64 bf16.
        assert_eq!((map.box_rows, map.box_cols), (16, 32));
        let bf16_type = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
        let map = output_map(bf16_type, 0, GemmShape::new(300, 1000, 64), 2);
        assert_eq!((map.box_rows, map.box_cols), (16, 64));
    }

    #[test]
    fn the_last_tile_rows_box_holds_the_rows_left_rounded_to_a_swizzle_atom() {
        assert_eq!([200, 192, 256, 1, 129].map(|m| last_box_rows(m, 128)), [72, 64, 128, 8, 8]);
        assert_eq!([72, 1000, 64].map(|m| last_box_rows(m, 64)), [8, 40, 64]);
    }

    #[test]
    fn stream_k_plans_fill_the_sms_and_split_the_tail() {
        // Enough work: one block per SM, the partial wave stream-K (oxtile_abi::stream_k's tests simulate these).
        let s = stream_k_schedule(GemmShape::new(8192, 8192, 8192), GEMM_SM90_128X256, 1, 132, true);
        assert_eq!((s.grid(), s.tiles(), s.k_tiles(), s.sk_tiles()), (132, 2048, 128, 68));
        let s = stream_k_schedule(GemmShape::new(2048, 2048, 2048), GEMM_SM90_128X256, 1, 132, true);
        assert_eq!((s.grid(), s.sk_tiles()), (132, 128));
        // Fewer k-tiles of work than SMs, K too short for shared pieces: one block per k-tile, no block idle, the
        // stream-K ranges' reducer.
        let s = stream_k_schedule(GemmShape::new(333, 777, 264), GEMM_SM90_128X256, 1, 132, true);
        assert_eq!((s.grid(), s.tiles(), s.k_tiles(), s.sk_tiles(), s.pieces()), (60, 12, 5, 12, 0));
        // At most half as many tiles as SMs: split-K, each tile in as many pieces (the same), starting at as many
        // places of K. Shared from 3 pieces: 128×8192×8192 on 128×256 tiles, 32 tiles in 4 pieces of 32 k-tiles;
        // 256×256×16384, 4 tiles in 18 (of 14 or 15 k-tiles, the shortest piece); 1×576×7168 on 64×128 tiles, 5
        // tiles in 8 (of 14). Two pieces, one reducer: 128×8192×8192 on 128×128 tiles, 64 tiles; 128×4096×14336 on
        // 64×128 tiles, 64 of 112.
        let split = |(m, n, k), tile| {
            let s = stream_k_schedule(GemmShape::new(m, n, k), tile, 1, 132, true);
            let pieces = s.grid() / s.tiles();
            let shared = if pieces >= MIN_SHARED_PIECES as u32 { pieces } else { 0 };
            assert_eq!((s.sk_tiles(), s.grid() % s.tiles(), s.pieces()), (s.tiles(), 0, shared));
            for block in 0..s.grid() {
                let offset = (block % pieces) * s.k_tiles() / pieces + (block / pieces) * s.k_tiles();
                assert_eq!(s.range(block).0, offset, "block {block}");
            }
            (s.tiles(), pieces, s.range(0).1)
        };
        assert_eq!(split((128, 8192, 8192), GEMM_SM90_128X256), (32, 4, 32));
        assert_eq!(split((128, 8192, 8192), GEMM_SM90_128X128), (64, 2, 64));
        assert_eq!(split((128, 4096, 14336), GEMM_SM90_64X128), (64, 2, 112));
        assert_eq!(split((256, 256, 16384), GEMM_SM90_128X128), (4, 18, 14));
        assert_eq!(split((1, 576, 7168), GEMM_SM90_64X128), (5, 8, 14));
        // K too short for shared pieces of 14 k-tiles: the stream-K ranges, 1000³'s 32 tiles of 16 k-tiles on 4
        // blocks each, one reducer.
        let s = stream_k_schedule(GemmShape::new(1000, 1000, 1000), GEMM_SM90_128X256, 1, 132, true);
        assert_eq!((s.grid(), s.tiles(), s.sk_tiles(), s.pieces()), (128, 32, 32, 0));
        // A kernel that does not share (f32 output, clusters) keeps the reducer's cap.
        let s = stream_k_schedule(GemmShape::new(1, 576, 7168), GEMM_SM90_64X128, 1, 132, false);
        assert_eq!((s.grid(), s.pieces()), (40, 0));
        // Over half as many: every SM (1536×1536×4096, 72 tiles of 64 k-tiles).
        let s = stream_k_schedule(GemmShape::new(1536, 1536, 4096), GEMM_SM90_128X256, 1, 132, true);
        assert_eq!((s.grid(), s.tiles(), s.sk_tiles()), (132, 72, 72));
        let s = stream_k_schedule(GemmShape::new(1, 1, 8), GEMM_SM90_128X256, 1, 132, true);
        assert_eq!((s.grid(), s.sk_tiles(), s.partial_slots(), s.flags(2)), (1, 0, 0, 0));
        // Whole waves only: no tail, no workspace (the kernel runs the plain schedule).
        let s = stream_k_schedule(GemmShape::new(4097, 4095, 4104), GEMM_SM90_128X256, 1, 132, true);
        assert_eq!((s.tiles(), s.sk_tiles(), s.partial_slots()), (528, 0, 0));
        // The workspace of 8192³: a 128 KiB slot per block, 8 flags per tail tile.
        let s = stream_k_schedule(GemmShape::new(8192, 8192, 8192), GEMM_SM90_128X256, 1, 132, true);
        assert_eq!((s.partial_slots(), s.flags(GEMM_SM90_128X256.tile_sharers())), (132, 68 * 8));
        assert!(tma_store_epilogue(Variant::StreamK, 8192, 2) && !tma_store_epilogue(Variant::StreamK, 777, 2));
    }

    #[test]
    fn cluster_stream_k_plans_schedule_cluster_tiles_on_the_resident_clusters() {
        // 8192³ in clusters of two on 66 clusters: 1024 cluster tiles of 256×256, 15 whole waves and 34 tail tiles
        // (over half a wave, so no extra wave), each cluster's range 65–66 k-tiles: a tail tile in two or three pieces.
        let s = stream_k_schedule(GemmShape::new(8192, 8192, 8192), GEMM_SM90_128X256, 2, 66, false);
        assert_eq!((s.grid(), s.tiles(), s.k_tiles(), s.sk_tiles()), (66, 1024, 128, 34));
        assert_eq!(s.range(0), (0, 66));
        // 4096³: 256 cluster tiles, 3 waves + 58; 8192×4096×14336: 512, 7 waves + 50.
        assert_eq!(stream_k_schedule(GemmShape::new(4096, 4096, 4096), GEMM_SM90_128X256, 2, 66, false).sk_tiles(), 58);
        assert_eq!(
            stream_k_schedule(GemmShape::new(8192, 4096, 14336), GEMM_SM90_128X256, 2, 66, false).sk_tiles(),
            50
        );
        // M = 128 still makes cluster tiles of 256 rows (the second block's rows lie outside D); 32 of them on 66
        // clusters is split-K, each tile on two clusters.
        let s = stream_k_schedule(GemmShape::new(128, 8192, 8192), GEMM_SM90_128X256, 2, 66, false);
        assert_eq!((s.tiles(), s.sk_tiles(), s.grid()), (32, 32, 64));
        assert_eq!((s.range(0), s.range(1), s.range(2)), ((0, 64), (64, 128), (128, 192)));
        // Fewer resident clusters (another context holds SMs): the grid follows, never past the resident count.
        assert_eq!(stream_k_schedule(GemmShape::new(8192, 8192, 8192), GEMM_SM90_128X256, 2, 60, false).grid(), 60);
        assert!(tma_store_epilogue(Variant::StreamKCluster2, 8192, 2));
        assert_eq!((Variant::StreamKCluster2.cluster_size(), Variant::StreamKCluster2.b_sharers()), (2, 2));
    }

    #[test]
    fn stream_k_variants_have_a_data_parallel_kernel_on_the_same_tiles() {
        for variant in Variant::CANDIDATES {
            let fallback = variant.data_parallel();
            if !variant.is_stream_k() {
                assert_eq!(fallback, variant);
                continue;
            }
            assert!(!fallback.is_stream_k(), "{variant:?}");
            assert_eq!((fallback.tile(), fallback.cluster_size()), (variant.tile(), variant.cluster_size()));
            for (input, output) in [("bf16", "bf16"), ("bf16", "f32"), ("f16", "f16"), ("f16", "f32")] {
                for layout in GemmLayout::ALL {
                    if variant.available(input, output, layout) {
                        assert!(fallback.available(input, output, layout), "{variant:?} {input} → {output}");
                    }
                }
            }
        }
    }

    #[test]
    fn planned_kernels_name_what_auto_and_explicit_variants_run() {
        let tn = GemmOptions { layout: GemmLayout::Tn, ..GemmOptions::default() };
        let bf16 = ("bf16", "bf16");
        let plan = |(m, n, k), options| planned_kernel(GemmShape::new(m, n, k), options, bf16, 132);
        // Decode-sized, few columns and K too short to split 64×64 tiles: the skinny kernel, unless the options keep
        // Auto off it; with K deep enough, those tiles split.
        assert_eq!(plan((1, 4096, 1024), tn), Some("gemm_bf16_tn_skinny_sm90"));
        let never = GemmOptions { skinny: SkinnyChoice::Never, ..tn };
        assert_eq!(plan((1, 4096, 1024), never), Some("gemm_bf16_tn_64x128_sm90"));
        // (OXTILE_NO_STREAM_K in the environment keeps every plan of this process off stream-K, and so on the skinny
        // kernel here.)
        let narrow_split = if options_allow_stream_k() {
            Some("gemm_bf16_tn_64x64_sk_sm90")
        } else {
            Some("gemm_bf16_tn_skinny_sm90")
        };
        assert_eq!(plan((1, 4096, 4096), tn), narrow_split);
        // K of 41 k-tiles: the split's pieces would be thinner than 14 k-tiles; the skinny kernel stays.
        assert_eq!(plan((16, 576, 2624), tn), Some("gemm_bf16_tn_skinny_sm90"));
        // The 64×64 split is bf16 → bf16 only: f16 keeps the skinny kernel there.
        let f16 = planned_kernel(GemmShape::new(1, 4096, 4096), tn, ("f16", "f16"), 132);
        assert_eq!(f16, Some("gemm_f16_tn_skinny_sm90"));
        // Nor where an operand's rows are staged (K = 4095: 8190-byte rows in tn).
        assert_ne!(plan((1, 4096, 4095), tn), Some("gemm_bf16_tn_skinny_sm90"));
        // Auto's tiles, and what it runs kept off stream-K.
        let (split, square) = (Some("gemm_bf16_tn_128x192_sk_sm90"), Some("gemm_bf16_tn_128x128_sm90"));
        // (OXTILE_NO_STREAM_K in the environment keeps every plan of this process off stream-K.)
        assert_eq!(plan((256, 5120, 25600), tn), if options_allow_stream_k() { split } else { square });
        let off = GemmOptions { auto_stream_k: false, ..tn };
        assert_eq!(plan((256, 5120, 25600), off), square);
        // An explicit variant runs as asked, or names no kernel where it has none (the 128×192 tiles are bf16 only).
        let wide = GemmOptions { variant: Variant::Wide, ..tn };
        assert_eq!(plan((256, 5120, 25600), wide), Some("gemm_bf16_tn_128x256_sm90"));
        // No SMs is taken as one, not a division by zero (128×8192×8192 weighs the wide tiles' waves); no plan takes
        // an empty shape.
        assert!(planned_kernel(GemmShape::new(128, 8192, 8192), tn, bf16, 0).is_some());
        assert_eq!(planned_kernel(GemmShape::new(0, 8192, 8192), tn, bf16, 132), None);
        let wide192 = GemmOptions { variant: Variant::Wide192, ..tn };
        assert_eq!(planned_kernel(GemmShape::new(256, 5120, 25600), wide192, ("f16", "f16"), 132), None);
    }

    /// Whether this process lets Auto take stream-K at all (`OXTILE_NO_STREAM_K` unset).
    fn options_allow_stream_k() -> bool {
        GemmOptions::default().auto_may_stream_k()
    }

    #[test]
    fn the_co_residency_guard_falls_back_for_auto_and_refuses_explicit_stream_k() {
        let kernel = "gemm_bf16_tn_128x256_sk_sm90";
        // The whole grid fits: the kernel as asked.
        let auto =
            |variant: Variant, shape| Some(variant.data_parallel_for(shape, 132, ("bf16", "bf16"), GemmLayout::Tn));
        let shape = GemmShape::new(4096, 4096, 4096);
        assert_eq!(guard_stream_k(Variant::StreamK, None, kernel, 132, 132).unwrap(), Variant::StreamK);
        let cluster2 = Variant::StreamKCluster2;
        assert_eq!(guard_stream_k(cluster2, auto(cluster2, shape), kernel, 132, 264).unwrap(), cluster2);
        // One block too many (or none fits at all): Auto's choice loses stream-K, keeping its tiles...
        assert_eq!(guard_stream_k(cluster2, auto(cluster2, shape), kernel, 132, 120).unwrap(), Variant::WideCluster2);
        let flat = Variant::FlatStreamK;
        assert_eq!(guard_stream_k(flat, auto(flat, shape), kernel, 128, 0).unwrap(), Variant::Flat);
        // ... or other tiles, where Auto kept off stream-K picks them: 1280×3840×4096's wide stream-K gives way to the
        // 128×192 tiles data-parallel (96 wide k-tiles per SM against the wide tiles' 128)...
        let (wide_split, mid) = (Variant::StreamK, GemmShape::new(1280, 3840, 4096));
        assert_eq!(guard_stream_k(wide_split, auto(wide_split, mid), kernel, 132, 131).unwrap(), Variant::Wide192);
        // ... and for the 128×192 tiles' stream-K of a few-tile problem, the 128×128 tiles it was weighed against...
        let split = Variant::Wide192StreamK;
        let few = GemmShape::new(256, 5120, 25600);
        assert_eq!(Variant::Auto.resolve(few, 132), split);
        assert_eq!(guard_stream_k(split, auto(split, few), kernel, 132, 131).unwrap(), Variant::Square);
        // ... and an explicit request is a typed error that says why.
        let err = guard_stream_k(Variant::SquareStreamK, None, kernel, 132, 66).unwrap_err();
        assert!(matches!(err, Error::StreamKNotResident { blocks: 132, resident: 66, .. }), "{err}");
        assert!(err.to_string().contains(kernel) && err.to_string().contains("resident at once"), "{err}");
    }

    #[test]
    fn auto_kept_off_stream_k_weighs_the_data_parallel_tiles() {
        // 1280×3840×4096: stream-K on 200 tiles of 128×192 (88 k-tiles of a wide tile per SM) edges out stream-K on
        // 150 wide tiles (89) and 200 tiles of 128×192 data-parallel (96); without stream-K those beat the wide
        // tiles' two waves (128). Without the 128×192 kernels (f16), the wide stream-K.
        let shape = GemmShape::new(1280, 3840, 4096);
        let bf16 = ("bf16", "bf16");
        assert_eq!(Variant::Auto.resolve_for(shape, 132, bf16, GemmLayout::Tn), Variant::Wide192StreamK);
        assert_eq!(Variant::Auto.resolve_for(shape, 132, ("f16", "f16"), GemmLayout::Tn), Variant::StreamK);
        assert_eq!(Variant::Wide192StreamK.data_parallel_for(shape, 132, bf16, GemmLayout::Tn), Variant::Wide192);
        assert_eq!(Variant::StreamK.data_parallel_for(shape, 132, bf16, GemmLayout::Tn), Variant::Wide192);
        assert_eq!(Variant::StreamK.data_parallel_for(shape, 132, ("f16", "f16"), GemmLayout::Tn), Variant::Wide);
        assert_eq!(Variant::FlatStreamK.data_parallel_for(shape, 132, bf16, GemmLayout::Tn), Variant::Flat);
        assert_eq!(Variant::StreamKCluster2.data_parallel_for(shape, 132, bf16, GemmLayout::Tn), Variant::WideCluster2);
        // The 64×64 split kept off stream-K: the same tiles data-parallel (1.07–1.20× the 64×128 tiles' speed on the
        // 44 rows of at most 66 such tiles in docs/perf-notes.md "Session 64", an H100).
        let few_columns = GemmShape::new(128, 1536, 7168);
        assert_eq!(Variant::Auto.resolve_for(few_columns, 132, bf16, GemmLayout::Tn), Variant::FlatNarrowStreamK);
        assert_eq!(
            Variant::FlatNarrowStreamK.data_parallel_for(few_columns, 132, bf16, GemmLayout::Tn),
            Variant::FlatNarrow
        );
    }

    #[test]
    fn stream_k_can_be_kept_off_auto() {
        use std::ffi::OsStr;
        assert!(!no_stream_k(None));
        assert!(!no_stream_k(Some(OsStr::new(""))));
        assert!(!no_stream_k(Some(OsStr::new("0"))));
        assert!(no_stream_k(Some(OsStr::new("1"))));
        assert!(no_stream_k(Some(OsStr::new("yes"))));
        let off = GemmOptions { auto_stream_k: false, ..GemmOptions::default() };
        assert!(!off.auto_may_stream_k());
        assert!(GemmOptions::default().auto_stream_k);
    }

    #[test]
    fn rejects_empty_and_oversized_shapes() {
        assert!(check_shape(GemmShape::new(0, 8, 8)).unwrap_err().to_string().contains("at least 1"));
        assert!(check_shape(GemmShape::new(1 << 31, 8, 8)).unwrap_err().to_string().contains("2^31"));
        check_shape(GemmShape::new(4097, 4095, 4104)).unwrap();
    }
}
