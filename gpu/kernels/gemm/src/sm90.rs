//! Hopper GEMM: D = alpha·A·B + beta·D with A (M×K) and B (K×N) each stored row- or column-major (all four BLAS
//! layouts), bf16 or f16 in, f32 accumulate, D (and the C it reads when beta ≠ 0, D's old contents) in the input
//! type or in f32, row-major.
//!
//! Data path, per persistent block (one per SM), after a prologue (barriers, tensor-map prefetches) that may overlap
//! the previous kernel's tail under programmatic dependent launch ([`griddep`]; nothing global is touched before its
//! wait):
//! - warpgroup 0, the producer, drops to 40 registers; its first warp walks the tiles and k-tiles, waits for a
//!   free stage of the shared-memory ring (`empty` barrier), and one elected lane has TMA load the A and B boxes
//!   into it, 128-byte swizzled, signalling the stage's `full` barrier with their byte count;
//! - the consumers (warpgroups 1 to 3) rise to what the producer leaves them: 232 registers with one or two, 152 with
//!   three (`GemmTile::consumer_registers`); each owns its share of the tile's rows,
//!   waits for `full`, issues four k16 steps of m64nNk16 wgmma (one per 64 of its rows) from shared-memory
//!   descriptors, keeps one wgmma group in flight and frees the stage that the previous group read;
//! - after the last k-tile the consumers scale their fragments and convert them to D's type, while the producer is
//!   already loading the next tile's stages. Where the host gives a tensor map for D, each consumer writes them
//!   into shared memory in 128-byte column chunks (`stmatrix` for 16-bit outputs), laid out as TMA's 128-byte
//!   swizzled box, and each warp has TMA store its 16 rows of each chunk ([`Staging`]): the consumers go on to the
//!   next tile's main loop while the stores drain. Otherwise (D's rows not 16 bytes apart) they store straight from
//!   registers to global memory.
//!
//! That is the cooperative schedule: the tensor cores idle while both consumers run their epilogues. With the
//! ping-pong schedule ([`GemmSchedule::PingPong`], 128×128 tiles) each consumer owns whole tiles, the block's even
//! tiles for consumer 0 and its odd ones for consumer 1; the producer fills the ring with every tile's k-tiles in
//! order, and each consumer waits only for the stages of its own tiles, stepping its ring position past the
//! other's. A named-barrier hand-over orders the main loops: a consumer issues its main loop, passes the turn, and
//! runs its epilogue (its 128 rows staged 64 at a time) while the other's main loop keeps the tensor cores busy.
//!
//! Operand majorness. An operand is K-major when K is its contiguous dimension (A row-major, B column-major) and
//! MN-major otherwise (A column-major: M contiguous; B row-major: N contiguous). wgmma reads either from shared
//! memory (its transpose flags), so both are loaded by TMA as they lie in global memory, with no transpose pass:
//! - K-major: one box of 64 k × `rows` M/N indices; each 128-byte row holds one index's 64 k values;
//! - MN-major: one box of 64 M/N indices × 64 k per 64 indices, stored one after another (8 KiB each); each
//!   128-byte row holds one k's 64 consecutive M/N values, eight k-rows per 1024-byte swizzle atom.
//!
//! Either way a block of 64 M/N indices starting at index `r` (a multiple of 64) begins at byte `r·128` of the
//! tile, so each consumer's A rows and each cluster block's half of B sit at the same offsets in both; only the
//! TMA coordinates, the descriptors and the wgmma flag differ, all fixed at compile time by `MN_MAJOR_A` and
//! `MN_MAJOR_B`.
//!
//! Configurations: 128×256 tiles (N = 256 per wgmma, 128 accumulators per thread) for large problems, 128×192 tiles
//! (two consumers of m64n192k16) and 192×192 tiles (three, 512 threads) where their waves fit the SMs better, 128×64
//! tiles with a deeper ring and one consumer for problems with few large tiles, 64×128 tiles with the same ring and
//! one consumer (m64n128k16) for problems of few rows, 128×128 tiles with one consumer (two m64n128k16 per k16
//! step, 128 accumulators per thread) for few rows that the 64-row tile would read B twice for, and 128×128 tiles
//! with two ping-pong consumers of that shape to hide the epilogue. The `_c2` kernels run in clusters of two blocks
//! that share an operand tile: each block's producer loads half of it and multicasts that half into both rings — the
//! B tile for the wide and both 128×128 tiles (blocks stacked along M), the A tile for the narrow one (side by side
//! along N).

use core::marker::PhantomData;

use oxtile_abi::raster::{Tile, TileOrder, TileScheduler, TriangularScheduler};
use oxtile_abi::stream_k::{FLAGS_PER_CONSUMER, Role, StreamK, Unit};
use oxtile_abi::symmetric;
use oxtile_abi::{
    GEMM_SM90_64X64, GEMM_SM90_64X128, GEMM_SM90_128X64, GEMM_SM90_128X128, GEMM_SM90_128X128_PINGPONG,
    GEMM_SM90_128X192, GEMM_SM90_128X256, GEMM_SM90_192X192, GemmSchedule, GemmShare, GemmTile,
};
use oxtile_layout::{StaticComposedLayout, StaticLayout};
use seq_macro::seq;

use oxtile_device::arch::mbarrier::{self, RingState};
use oxtile_device::arch::sreg::{block_idx_x, grid_dim_x, thread_idx_x};
use oxtile_device::arch::{
    atomic, barrier, cluster, convert, global, griddep, setmaxnreg, smem, stmatrix, tma, warp, wgmma,
};
use oxtile_device::bounded_wait;
use oxtile_device::opaque::opaque_here;
use oxtile_device::smem_layout::{SW128_64X32_B32, SW128_64X64_B16};

/// Operand majorness as wgmma's transpose flag takes it: K-major (0) or MN-major (1).
const K: u32 = 0;
const MN: u32 = 1;

/// Which operand tile the blocks of a cluster share by TMA multicast, as [`gemm`]'s `SHARE` ([`GemmShare`]: none, B
/// or A).
const SHARE_NONE: u32 = 0;
const SHARE_B: u32 = 1;
const SHARE_A: u32 = 2;

/// A 16-bit input type of the tensor cores: the wgmma each tile width issues for it.
trait Input {
    unsafe fn mma_n256<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 128],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    );
    unsafe fn mma_n192<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 96],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    );
    unsafe fn mma_n128<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 64],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    );
    unsafe fn mma_n64<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 32],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    );
}

/// A type the epilogue writes D in, and reads the old D in when beta ≠ 0.
trait OutputElement {
    /// How one element is stored.
    type Bits: Copy;
    /// A 16-column slice's eight values of one thread as [`OutputElement::stage_slice`] takes them: converted, and
    /// packed in pairs where the type is 16-bit.
    type Packed: Copy;
    /// Columns of D in one 128-byte row of a staging buffer: the width of the TMA-store epilogue's box and chunk.
    const BOX_COLUMNS: u32;
    fn to_f32(value: Self::Bits) -> f32;
    /// Writes `v0` at `at` and, when `second`, `v1` after it. `at` is aligned to two elements when `ldd_even`
    /// (see [`Epilogue::store_pair`]): then a pair goes out as one store of twice the element's width.
    unsafe fn store(at: *mut Self::Bits, v0: f32, v1: f32, second: bool, ldd_even: bool);
    /// This thread's values 0..8 of a slice's m64n16 accumulator fragment ([`SLICE_ACCUMULATOR`]), scaled, as the
    /// staging functions take them.
    fn pack(values: [f32; 8]) -> Self::Packed;
    /// Writes a 16-column slice of a consumer warpgroup's 64 rows into a staging buffer (64 rows × 128 bytes in
    /// the 128-byte swizzled layout TMA stores from): `values` are [`OutputElement::pack`]'s, and `column` (a
    /// multiple of 16) is where the slice starts in the buffer.
    ///
    /// # Safety
    /// The whole warpgroup calls it together, `thread` being the caller's index in it; `buffer` is a
    /// 1024-byte aligned staging buffer that no TMA store still reads.
    unsafe fn stage_slice(buffer: u32, values: Self::Packed, thread: u32, column: u32);
    /// The symmetric GEMM's mirrored tile: writes the transpose of this thread's warp's 16 rows of the slice into
    /// the warp's part of a staging buffer, `part`: [`Self::BOX_COLUMNS`] rows (the chunk's columns) of 16 elements
    /// (the warp's rows), unswizzled, 32 or 64 bytes apart — the box of D's mirror map. `column` (a multiple of 16) is
    /// where the slice starts in the chunk.
    ///
    /// # Safety
    /// The whole warp calls it together, `thread` being the caller's index in its warpgroup; `part` is 256-byte
    /// aligned with 2 KiB that no TMA store still reads.
    unsafe fn stage_slice_transposed(part: u32, values: Self::Packed, thread: u32, column: u32);
}

/// The m64n16k16 accumulator fragment, (thread, value) → column-major index in the 64×16 block: the layout of
/// one 16-column slice of any wider fragment (its values 8s .. 8s + 8 are slice s's values 0..8).
const SLICE_ACCUMULATOR: StaticLayout<6> = StaticLayout::expect(StaticLayout::wgmma_accumulator_tv(16));

/// Writes a 16-bit output slice with one `stmatrix.x4` per thread: its four matrices are the slice's 8×8 blocks
/// in the order of the fragment's value pairs, which `stmatrix`'s register layout matches (checked below).
#[inline(always)]
unsafe fn stage_slice_16bit(buffer: u32, pairs: [u32; 4], thread: u32, column: u32) {
    let (warp, lane) = (thread / 32, thread % 32);
    let (row, column_in_slice) = stmatrix::x4_row_of_16x16(lane);
    let address = buffer + SW128_64X64_B16.crd2idx_u32(&[16 * warp + row, column + column_in_slice]);
    unsafe { stmatrix::store_x4(address, pairs) };
}

/// Writes the transpose of a warp's 16×16 block of a 16-bit slice with one `stmatrix.x4.trans`: matrix `i` covers
/// the block's rows 8·(i % 2) .. and columns 8·(i / 2) .. (see [`stage_slice_16bit`]); stored transposed, memory row
/// `r` of it receives the matrix's column `r`, so lane `8i + r` gives the address of row `column + 8·(i / 2) + r` of
/// the transposed part (32-byte rows), at its 16-byte half `i % 2`.
#[inline(always)]
unsafe fn stage_slice_16bit_transposed(part: u32, pairs: [u32; 4], thread: u32, column: u32) {
    let lane = thread % 32;
    let (matrix, row) = (lane / 8, lane % 8);
    let address = part + (column + 8 * (matrix / 2) + row) * MIRROR_ROW_BYTES_16BIT + 16 * (matrix % 2);
    unsafe { stmatrix::store_x4_trans(address, pairs) };
}

/// Bytes of one row of a warp's transposed part for a 16-bit output: its 16 elements (the warp's rows).
const MIRROR_ROW_BYTES_16BIT: u32 = 2 * GemmTile::STORE_BOX_ROWS;

// `stmatrix.x4` puts register `i` of lane `l` at (row l / 4, columns 2·(l % 4), +1) of matrix `i`, matrix `i`
// covering rows 8·(i % 2) .. and columns 8·(i / 2) .. of the warp's 16×16 block: for every lane of warp 0 this is
// where the slice accumulator puts the thread's values 2i and 2i + 1.
const _: () = {
    let mut lane = 0;
    while lane < 32 {
        let mut i = 0;
        while i < 4 {
            let index = SLICE_ACCUMULATOR.crd2idx_u32(&[lane, 2 * i]);
            let (row, column) = (index % 64, index / 64);
            assert!(row == 8 * (i % 2) + lane / 4 && column == 8 * (i / 2) + 2 * (lane % 4));
            // The value after it is its row neighbour, the high half of the register.
            assert!(SLICE_ACCUMULATOR.crd2idx_u32(&[lane, 2 * i + 1]) == index + 64);
            i += 1;
        }
        lane += 1;
    }
};

struct Bf16;
struct F16;
struct F32;

/// Bytes of one row of a warp's transposed part for an f32 output: its 16 elements (the warp's rows).
const MIRROR_ROW_BYTES_F32: u32 = 4 * GemmTile::STORE_BOX_ROWS;
// A warp's transposed part of a chunk fills its quarter of a staging buffer, for either element size: 64 rows of 32
// bytes (16-bit), 32 rows of 64 bytes (f32).
const _: () = assert!(64 * MIRROR_ROW_BYTES_16BIT == GemmTile::STORE_BOX_ROWS * GemmTile::STAGING_ROW_BYTES);
const _: () = assert!(32 * MIRROR_ROW_BYTES_F32 == GemmTile::STORE_BOX_ROWS * GemmTile::STAGING_ROW_BYTES);

impl Input for Bf16 {
    #[inline(always)]
    unsafe fn mma_n256<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 128],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    ) {
        unsafe { wgmma::mma_m64n256k16_f32_bf16::<MN_MAJOR_A, MN_MAJOR_B>(acc, desc_a, desc_b, accumulate) }
    }
    #[inline(always)]
    unsafe fn mma_n192<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 96],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    ) {
        unsafe { wgmma::mma_m64n192k16_f32_bf16::<MN_MAJOR_A, MN_MAJOR_B>(acc, desc_a, desc_b, accumulate) }
    }
    #[inline(always)]
    unsafe fn mma_n128<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 64],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    ) {
        unsafe { wgmma::mma_m64n128k16_f32_bf16::<MN_MAJOR_A, MN_MAJOR_B>(acc, desc_a, desc_b, accumulate) }
    }
    #[inline(always)]
    unsafe fn mma_n64<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 32],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    ) {
        unsafe { wgmma::mma_m64n64k16_f32_bf16::<MN_MAJOR_A, MN_MAJOR_B>(acc, desc_a, desc_b, accumulate) }
    }
}

impl Input for F16 {
    #[inline(always)]
    unsafe fn mma_n256<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 128],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    ) {
        unsafe { wgmma::mma_m64n256k16_f32_f16::<MN_MAJOR_A, MN_MAJOR_B>(acc, desc_a, desc_b, accumulate) }
    }
    #[inline(always)]
    unsafe fn mma_n192<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 96],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    ) {
        unsafe { wgmma::mma_m64n192k16_f32_f16::<MN_MAJOR_A, MN_MAJOR_B>(acc, desc_a, desc_b, accumulate) }
    }
    #[inline(always)]
    unsafe fn mma_n128<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 64],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    ) {
        unsafe { wgmma::mma_m64n128k16_f32_f16::<MN_MAJOR_A, MN_MAJOR_B>(acc, desc_a, desc_b, accumulate) }
    }
    #[inline(always)]
    unsafe fn mma_n64<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut [f32; 32],
        desc_a: u64,
        desc_b: u64,
        accumulate: bool,
    ) {
        unsafe { wgmma::mma_m64n64k16_f32_f16::<MN_MAJOR_A, MN_MAJOR_B>(acc, desc_a, desc_b, accumulate) }
    }
}

/// Stores two 16-bit results packed by `pack`: one 4-byte store when aligned, else one or two 2-byte stores.
#[inline(always)]
unsafe fn store_16bit(at: *mut u16, packed: u32, second: bool, ldd_even: bool) {
    if second && ldd_even {
        unsafe { *(at as *mut u32) = packed };
    } else {
        unsafe { *at = packed as u16 };
        if second {
            unsafe { *at.add(1) = (packed >> 16) as u16 };
        }
    }
}

impl OutputElement for Bf16 {
    type Bits = u16;
    type Packed = [u32; 4];
    const BOX_COLUMNS: u32 = 64;
    #[inline(always)]
    fn to_f32(value: u16) -> f32 {
        convert::bf16_to_f32(value)
    }
    #[inline(always)]
    unsafe fn store(at: *mut u16, v0: f32, v1: f32, second: bool, ldd_even: bool) {
        unsafe { store_16bit(at, convert::pack_bf16x2(v0, v1), second, ldd_even) }
    }
    #[inline(always)]
    fn pack(v: [f32; 8]) -> [u32; 4] {
        [0, 1, 2, 3].map(|i| convert::pack_bf16x2(v[2 * i], v[2 * i + 1]))
    }
    #[inline(always)]
    unsafe fn stage_slice(buffer: u32, pairs: [u32; 4], thread: u32, column: u32) {
        unsafe { stage_slice_16bit(buffer, pairs, thread, column) }
    }
    #[inline(always)]
    unsafe fn stage_slice_transposed(part: u32, pairs: [u32; 4], thread: u32, column: u32) {
        unsafe { stage_slice_16bit_transposed(part, pairs, thread, column) }
    }
}

impl OutputElement for F16 {
    type Bits = u16;
    type Packed = [u32; 4];
    const BOX_COLUMNS: u32 = 64;
    #[inline(always)]
    fn to_f32(value: u16) -> f32 {
        convert::f16_to_f32(value)
    }
    #[inline(always)]
    unsafe fn store(at: *mut u16, v0: f32, v1: f32, second: bool, ldd_even: bool) {
        unsafe { store_16bit(at, convert::pack_f16x2(v0, v1), second, ldd_even) }
    }
    #[inline(always)]
    fn pack(v: [f32; 8]) -> [u32; 4] {
        [0, 1, 2, 3].map(|i| convert::pack_f16x2(v[2 * i], v[2 * i + 1]))
    }
    #[inline(always)]
    unsafe fn stage_slice(buffer: u32, pairs: [u32; 4], thread: u32, column: u32) {
        unsafe { stage_slice_16bit(buffer, pairs, thread, column) }
    }
    #[inline(always)]
    unsafe fn stage_slice_transposed(part: u32, pairs: [u32; 4], thread: u32, column: u32) {
        unsafe { stage_slice_16bit_transposed(part, pairs, thread, column) }
    }
}

impl OutputElement for F32 {
    type Bits = f32;
    type Packed = [f32; 8];
    const BOX_COLUMNS: u32 = 32;
    #[inline(always)]
    fn to_f32(value: f32) -> f32 {
        value
    }
    /// No `stmatrix` for 32-bit elements: each pair is one 8-byte `st.shared.v2`. A warp's store covers 8 rows ×
    /// 32 bytes, which the swizzle spreads over all 32 banks twice: two wavefronts, the least 256 bytes take.
    #[inline(always)]
    unsafe fn stage_slice(buffer: u32, v: [f32; 8], thread: u32, column: u32) {
        seq!(PAIR in 0..4 {
            let index = SLICE_ACCUMULATOR.crd2idx_u32(&[thread, 2 * PAIR]);
            let (row, column_in_slice) = (index % 64, index / 64);
            let address = buffer + SW128_64X32_B32.crd2idx_u32(&[row, column + column_in_slice]);
            unsafe { smem::store_f32x2(address, v[2 * PAIR], v[2 * PAIR + 1]) };
        });
    }
    #[inline(always)]
    fn pack(values: [f32; 8]) -> [f32; 8] {
        values
    }
    /// No transposing `stmatrix` for 32-bit elements: one 4-byte store per value at (its column, its row within the
    /// warp's 16) of the part's 64-byte rows. A warp's store touches 8 rows × 4 columns: 4-way bank conflicts, on the
    /// f32 symmetric epilogue only.
    #[inline(always)]
    unsafe fn stage_slice_transposed(part: u32, v: [f32; 8], thread: u32, column: u32) {
        seq!(VALUE in 0..8 {
            let index = SLICE_ACCUMULATOR.crd2idx_u32(&[thread, VALUE]);
            let (row, column_in_slice) = (index % GemmTile::STORE_BOX_ROWS, index / 64);
            let address = part + (column + column_in_slice) * MIRROR_ROW_BYTES_F32 + 4 * row;
            unsafe { smem::store_u32(address, v[VALUE].to_bits()) };
        });
    }
    /// A pair is one 8-byte store: the f32 epilogue writes twice the bytes of the 16-bit one, in as many
    /// instructions.
    #[inline(always)]
    unsafe fn store(at: *mut f32, v0: f32, v1: f32, second: bool, ldd_even: bool) {
        if second && ldd_even {
            let bits = v0.to_bits() as u64 | (v1.to_bits() as u64) << 32;
            unsafe { *(at as *mut u64) = bits };
        } else {
            unsafe { *at = v0 };
            if second {
                unsafe { *at.add(1) = v1 };
            }
        }
    }
}

/// One kernel configuration: the tile, ring and schedule (shared with the host through oxtile-abi), the output
/// type, and the wgmma of width `tile_n` whose accumulator fragments each consumer thread holds: one per 64 rows
/// of the tile that its warpgroup computes (`consumer_rows / 64`).
trait Config {
    const TILE: GemmTile;
    type Output: OutputElement;
    /// `consumer_rows / 64` m64nNk16 accumulator fragments of `tile_n / 2` f32 per thread.
    type Fragment: Copy;
    const ZERO: Self::Fragment;
    /// One k16 step of a consumer warpgroup: an m64nNk16 wgmma from shared memory per 64 of its rows. `desc_a` and
    /// `desc_b` describe the k-tile's first k16 slice of A (at the warpgroup's first row) and of B, each operand
    /// K-major (0) or MN-major (1); the step's slices are reached by [`wgmma::desc_advance`], one add each.
    unsafe fn mma_step<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
        acc: &mut Self::Fragment,
        desc_a: u64,
        desc_b: u64,
        k_step: u32,
        accumulate: bool,
    );
    /// Pins every accumulator after a `wgmma::wait_group` ([`wgmma::fence_operands`]).
    fn fence(acc: &mut Self::Fragment);
    /// Writes the fragments of the warpgroup whose `consumer_rows` × N block starts at (`row0`, `col0`) straight
    /// from registers to D. `SYMMETRIC`: only the values on and above the diagonal are written, each also at its
    /// transposed place, so that D is exactly symmetric ([`Epilogue::store_pair_upper`]).
    unsafe fn store<const SYMMETRIC: bool>(
        acc: &Self::Fragment,
        out: &Epilogue<Self::Output>,
        row0: u32,
        col0: u32,
        thread: u32,
    );
    /// Writes the same block through the TMA-store epilogue: 128-byte column chunks of 64 rows, each staged in
    /// shared memory by the warpgroup and stored by TMA ([`Staging`]). `tile_index` counts the tiles this
    /// warpgroup has written before, which keeps the staging buffers alternating across tiles. `SYMMETRIC`: D is a
    /// stack (3-D tensor maps) and every chunk is followed by its transposed store; in a `diagonal` tile each warp's
    /// strip is stored, mirrored or left to a mirror as `oxtile_abi::symmetric` says, which makes D exactly
    /// symmetric.
    #[allow(clippy::too_many_arguments)]
    unsafe fn store_staged<const SYMMETRIC: bool>(
        acc: &Self::Fragment,
        out: &Epilogue<Self::Output>,
        staging: &Staging,
        row0: u32,
        col0: u32,
        thread: u32,
        tile_index: u32,
        diagonal: bool,
    );
    /// Stream-K: stores the warpgroup's f32 accumulators, unscaled, to its part of a workspace slot at `part`
    /// ([`StreamKArgs`]), in the fragment's own order: vector `j` (accumulators 4j .. 4j + 4 of the fragments one after
    /// another) of thread `thread` at float [`partial_offset`]`(j, thread)`. Each warp instruction then writes 512
    /// contiguous bytes, 16 per thread, and the partial of a tile needs no layout: the reducing block's thread of the
    /// same index holds the same elements.
    unsafe fn store_partial(acc: &Self::Fragment, part: *mut f32, thread: u32);
    /// Adds a partial that [`Config::store_partial`] wrote at `part` (the same thread of the same consumer in another
    /// block, on the same tile) to the accumulators.
    unsafe fn add_partial(acc: &mut Self::Fragment, part: *const f32, thread: u32);
    /// Vectors of four accumulators per thread (its fragments one after another), as [`Config::store_partial`]
    /// numbers them.
    const VECTORS: u32;
    /// Where the pair `half` (0 or 1: accumulators 4·`vector` + 2·`half` and the next) of thread `thread`'s vector
    /// `vector` lies in the warpgroup's `consumer_rows` × N block: (row, column of the first).
    fn pair_position(vector: u32, thread: u32, half: u32) -> (u32, u32);
}

/// Where vector `vector` (four accumulators) of thread `thread` of a consumer warpgroup lies in its part of a
/// stream-K workspace slot, in floats: the warpgroup's threads side by side for each vector.
#[inline(always)]
const fn partial_offset(vector: u32, thread: u32) -> usize {
    ((vector * GemmTile::WARPGROUP_THREADS + thread) * 4) as usize
}

/// Defines a tile configuration generic over the input type `I` and the output type `O`, whose consumers each
/// compute `row_blocks` × 64 rows. The store is unrolled by `seq!` so the fragments are only indexed by constants
/// and stay in registers; where each value lands is the layout algebra's wgmma accumulator TV layout
/// `((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))`, (thread, value) → column-major index in the 64×N block. Values
/// 2i and 2i + 1 are neighbours in a row, so they are stored as one pair.
macro_rules! config {
    ($(#[$doc:meta])* $name:ident, $tile:path, $mma:ident, fragment = $regs:literal, column_blocks = $blocks:literal, row_blocks = $rows:literal) => {
        $(#[$doc])*
        struct $name<I, O>(PhantomData<(I, O)>);

        impl<I, O: OutputElement> $name<I, O> {
            const ACCUMULATOR: StaticLayout<6> =
                StaticLayout::expect(StaticLayout::wgmma_accumulator_tv(8 * $blocks));

            /// [`Config::store_staged`] with the scaling fixed ([`Scaling`]).
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn stage_tile<const SCALING: u32, const SYMMETRIC: bool>(
                acc: &[[f32; $regs]; $rows],
                out: &Epilogue<O>,
                staging: &Staging,
                row0: u32,
                col0: u32,
                thread: u32,
                tile_index: u32,
                diagonal: bool,
            ) {
                const SLICE_COLUMNS: u32 = 16;
                let slices_per_chunk = O::BOX_COLUMNS / SLICE_COLUMNS;
                let chunks_per_row_block = 8 * $blocks / O::BOX_COLUMNS;
                // The symmetric GEMM keeps a chunk's slices until its own store is issued, then stages their
                // transpose into the other buffer (the previous transposed chunk's store is done reading it by then).
                let mut kept = [O::pack([0.0; 8]); 4];
                seq!(ROWS in 0..$rows {
                    seq!(SLICE in 0..16 {
                        if SLICE < $blocks / 2 {
                            let chunk_index =
                                (tile_index * $rows + ROWS) * chunks_per_row_block + SLICE / slices_per_chunk;
                            // With a mirror, chunk c goes through buffer 2c's and its transpose through 2c + 1's.
                            let chunk = if SYMMETRIC { 2 * chunk_index } else { chunk_index };
                            let fragment = &acc[ROWS];
                            let mut values = [0.0f32; 8];
                            seq!(PAIR in 0..4 {
                                let (v0, v1) = (fragment[8 * SLICE + 2 * PAIR], fragment[8 * SLICE + 2 * PAIR + 1]);
                                (values[2 * PAIR], values[2 * PAIR + 1]) = match SCALING {
                                    Scaling::COPY => (v0, v1),
                                    Scaling::ALPHA => (out.alpha * v0, out.alpha * v1),
                                    _ => {
                                        let index = Self::ACCUMULATOR.crd2idx_u32(&[thread, 8 * SLICE + 2 * PAIR]);
                                        let (row, col) = (row0 + 64 * ROWS + index % 64, col0 + index / 64);
                                        let scaled = unsafe { out.scaled(row, col, v0, v1) };
                                        if SYMMETRIC && diagonal { out.add_diagonal(row, col, scaled) } else { scaled }
                                    }
                                };
                            });
                            let column_in_chunk = (SLICE % slices_per_chunk) * SLICE_COLUMNS;
                            let packed = O::pack(values);
                            unsafe { O::stage_slice(staging.buffer(chunk), packed, thread, column_in_chunk) };
                            if SYMMETRIC {
                                kept[(SLICE % slices_per_chunk) as usize] = packed;
                            }
                            if SLICE % slices_per_chunk == slices_per_chunk - 1 {
                                // Where the chunk and this warp's strip of it lie in the tile.
                                let (tile_row, tile_column) = (GemmTile::STAGING_ROWS * ROWS, (SLICE / slices_per_chunk) * O::BOX_COLUMNS);
                                let (chunk_row, chunk_column) = (row0 + tile_row, col0 + tile_column);
                                let strip_row = tile_row + GemmTile::STORE_BOX_ROWS * staging.warp;
                                let part = symmetric::strip_part(
                                    SYMMETRIC && diagonal,
                                    strip_row,
                                    GemmTile::STORE_BOX_ROWS,
                                    tile_column,
                                    O::BOX_COLUMNS,
                                );
                                if SYMMETRIC && diagonal {
                                    if let Some(square) = symmetric::symmetric_square(tile_row, GemmTile::STAGING_ROWS, tile_column, O::BOX_COLUMNS) {
                                        unsafe { staging.symmetrize::<O>(chunk, square, thread) };
                                    }
                                }
                                unsafe { staging.store::<O, SYMMETRIC>(chunk, out, chunk_row, chunk_column, part.store) };
                                if SYMMETRIC {
                                    if part.mirror {
                                        let transposed = staging.warp_part(chunk + 1);
                                        seq!(KEPT in 0..4 {
                                            if KEPT < slices_per_chunk {
                                                let column = KEPT * SLICE_COLUMNS;
                                                unsafe { O::stage_slice_transposed(transposed, kept[KEPT as usize], thread, column) };
                                            }
                                        });
                                    }
                                    unsafe { staging.store_mirror(chunk + 1, out, chunk_row, chunk_column, part.mirror) };
                                }
                            }
                        }
                    });
                });
            }
        }

        impl<I: Input, O: OutputElement> Config for $name<I, O> {
            const TILE: GemmTile = $tile;
            type Output = O;
            type Fragment = [[f32; $regs]; $rows];
            const ZERO: Self::Fragment = [[0.0; $regs]; $rows];

            #[inline(always)]
            unsafe fn mma_step<const MN_MAJOR_A: u32, const MN_MAJOR_B: u32>(
                acc: &mut Self::Fragment,
                desc_a: u64,
                desc_b: u64,
                k_step: u32,
                accumulate: bool,
            ) {
                let desc_b = wgmma::desc_advance(desc_b, k_step * Operand::<MN_MAJOR_B>::K_STEP_BYTES);
                // 64 rows of A are one block in either majorness (see the module documentation); the wgmma of
                // the row blocks share B's descriptor.
                seq!(ROWS in 0..$rows {
                    let offset = ROWS * Operand::<MN_MAJOR_A>::BLOCK_BYTES + k_step * Operand::<MN_MAJOR_A>::K_STEP_BYTES;
                    let desc_rows = wgmma::desc_advance(desc_a, offset);
                    unsafe { I::$mma::<MN_MAJOR_A, MN_MAJOR_B>(&mut acc[ROWS], desc_rows, desc_b, accumulate) };
                });
            }

            #[inline(always)]
            fn fence(acc: &mut Self::Fragment) {
                seq!(ROWS in 0..$rows {
                    wgmma::fence_operands(&mut acc[ROWS]);
                });
            }

            #[inline(always)]
            unsafe fn store<const SYMMETRIC: bool>(
                acc: &Self::Fragment,
                out: &Epilogue<O>,
                row0: u32,
                col0: u32,
                thread: u32,
            ) {
                seq!(ROWS in 0..$rows {
                    seq!(PAIR in 0..$blocks {
                        seq!(HALF in 0..2 {
                            let index = Self::ACCUMULATOR.crd2idx_u32(&[thread, 4 * PAIR + 2 * HALF]);
                            let (row, col) = (64 * ROWS + index % 64, index / 64);
                            let fragment = &acc[ROWS];
                            let (v0, v1) = (fragment[4 * PAIR + 2 * HALF], fragment[4 * PAIR + 2 * HALF + 1]);
                            if SYMMETRIC {
                                unsafe { out.store_pair_upper(row0 + row, col0 + col, v0, v1) };
                            } else {
                                unsafe { out.store_pair(row0 + row, col0 + col, v0, v1) };
                            }
                        });
                    });
                });
            }

            /// Slice by slice (16 columns: a `stmatrix.x4` or four `st.shared.v2` per thread); after the last slice
            /// of each 128-byte chunk the chunk goes to TMA. The fragment is still only indexed by constants.
            #[inline(always)]
            unsafe fn store_staged<const SYMMETRIC: bool>(
                acc: &Self::Fragment,
                out: &Epilogue<O>,
                staging: &Staging,
                row0: u32,
                col0: u32,
                thread: u32,
                tile_index: u32,
                diagonal: bool,
            ) {
                // One branch per tile on the scaling, none per value: TMA clips at D's edges, so without beta or a
                // diagonal no value needs its coordinates, and with alpha = 1 none needs a multiply.
                let (index, m) = (tile_index, diagonal);
                unsafe {
                    match (out.blends(), out.alpha != 1.0) {
                        (false, false) => Self::stage_tile::<{ Scaling::COPY }, SYMMETRIC>(
                            acc, out, staging, row0, col0, thread, index, m,
                        ),
                        (false, true) => Self::stage_tile::<{ Scaling::ALPHA }, SYMMETRIC>(
                            acc, out, staging, row0, col0, thread, index, m,
                        ),
                        (true, _) => Self::stage_tile::<{ Scaling::BLEND }, SYMMETRIC>(
                            acc, out, staging, row0, col0, thread, index, m,
                        ),
                    }
                }
            }

            /// One 16-byte store per vector, indexed by constants: the fragment stays in registers.
            #[inline(always)]
            unsafe fn store_partial(acc: &Self::Fragment, part: *mut f32, thread: u32) {
                seq!(ROWS in 0..$rows {
                    seq!(V in 0..64 {
                        if V < $regs / 4 {
                            let fragment = &acc[ROWS];
                            let values = [fragment[4 * V], fragment[4 * V + 1], fragment[4 * V + 2], fragment[4 * V + 3]];
                            let at = unsafe { part.add(partial_offset(ROWS * ($regs / 4) + V, thread)) };
                            unsafe { global::store_f32x4(at, values) };
                        }
                    });
                });
            }

            const VECTORS: u32 = $rows * $regs / 4;

            #[inline(always)]
            fn pair_position(vector: u32, thread: u32, half: u32) -> (u32, u32) {
                let (row_block, in_fragment) = (vector / ($regs / 4), vector % ($regs / 4));
                let index = Self::ACCUMULATOR.crd2idx_u32(&[thread, 4 * in_fragment + 2 * half]);
                (64 * row_block + index % 64, index / 64)
            }

            #[inline(always)]
            unsafe fn add_partial(acc: &mut Self::Fragment, part: *const f32, thread: u32) {
                seq!(ROWS in 0..$rows {
                    seq!(V in 0..64 {
                        if V < $regs / 4 {
                            let at = unsafe { part.add(partial_offset(ROWS * ($regs / 4) + V, thread)) };
                            let values = unsafe { global::load_f32x4_cg(at) };
                            let fragment = &mut acc[ROWS];
                            seq!(I in 0..4 {
                                fragment[4 * V + I] += values[I];
                            });
                        }
                    });
                });
            }
        }
    };
}

config!(
    /// 128×256 tiles, 64 rows per consumer, m64n256k16.
    Wide, GEMM_SM90_128X256, mma_n256, fragment = 128, column_blocks = 32, row_blocks = 1
);
config!(
    /// 128×192 tiles, 64 rows per consumer, m64n192k16.
    Wide192, GEMM_SM90_128X192, mma_n192, fragment = 96, column_blocks = 24, row_blocks = 1
);
config!(
    /// 192×192 tiles, 64 rows per consumer (three), m64n192k16.
    Square192, GEMM_SM90_192X192, mma_n192, fragment = 96, column_blocks = 24, row_blocks = 1
);
config!(
    /// 128×64 tiles, one consumer for all 128 rows: two m64n64k16 per k16 step.
    Narrow, GEMM_SM90_128X64, mma_n64, fragment = 32, column_blocks = 8, row_blocks = 2
);
config!(
    /// 64×128 tiles, one consumer: m64n128k16.
    Flat, GEMM_SM90_64X128, mma_n128, fragment = 64, column_blocks = 16, row_blocks = 1
);
config!(
    /// 64×64 tiles, one consumer: m64n64k16.
    FlatNarrow, GEMM_SM90_64X64, mma_n64, fragment = 32, column_blocks = 8, row_blocks = 1
);
config!(
    /// 128×128 tiles, one consumer for all 128 rows: two m64n128k16 per k16 step.
    Square, GEMM_SM90_128X128, mma_n128, fragment = 64, column_blocks = 16, row_blocks = 2
);
config!(
    /// 128×128 tiles, each owned by one consumer (ping-pong): two m64n128k16 per k16 step.
    PingPong, GEMM_SM90_128X128_PINGPONG, mma_n128, fragment = 64, column_blocks = 16, row_blocks = 2
);

/// Where everything lives in dynamic shared memory: the (A, B) ring, the epilogue's staging buffers, then the full
/// and empty barriers.
#[derive(Clone, Copy)]
struct SmemMap {
    base: u32,
    tile: GemmTile,
}

impl SmemMap {
    fn a(&self, stage: u32) -> u32 {
        self.base + stage * self.tile.stage_bytes()
    }
    fn b(&self, stage: u32) -> u32 {
        self.a(stage) + self.tile.smem_a_bytes()
    }
    fn full(&self, stage: u32) -> u32 {
        self.base + self.tile.barriers_offset() + 8 * stage
    }
    /// Consumer `consumer`'s first staging buffer (the TMA-store epilogue's).
    fn staging(&self, consumer: u32) -> u32 {
        self.base + self.tile.staging_offset() + consumer * self.tile.staging_buffers * self.tile.staging_buffer_bytes()
    }
    fn empty(&self, stage: u32) -> u32 {
        self.full(self.tile.stages) + 8 * stage
    }
}

/// One operand's k-tile in shared memory, K-major (`MN_MAJOR` = 0) or MN-major (1); see the module documentation.
/// Every configuration has 64-element (128-byte) k-tiles and M/N extents in whole MN-major boxes (asserted in
/// oxtile-abi).
struct Operand<const MN_MAJOR: u32>;

impl<const MN_MAJOR: u32> Operand<MN_MAJOR> {
    /// Elements in one 128-byte swizzled row: a k-tile of a K-major box, the M/N width of an MN-major one.
    const ROW_ELEMENTS: u32 = GemmTile::MN_BOX;
    /// Bytes of 64 M/N indices × one k-tile: an MN-major box, or 64 rows of a K-major one.
    const BLOCK_BYTES: u32 = Self::ROW_ELEMENTS * 128;
    /// 64 M/N indices of the k-tile as TMA writes them, (M/N index, k index) → byte offset: K-major the 64×64 tile
    /// itself (`Sw<3,4,3> ∘ (64,64):(128,2)`, a row per index), MN-major its transpose (`Sw<3,4,3> ∘
    /// (64,64):(2,128)`: the box's rows are k). Further blocks of 64 indices follow [`Operand::BLOCK_BYTES`] apart.
    const TILE: StaticComposedLayout<4> = if MN_MAJOR == K {
        SW128_64X64_B16
    } else {
        StaticLayout::expect(SW128_64X64_B16.layout.composition(&TRANSPOSE_64X64)).swizzled(wgmma::SWIZZLE_128B, 0)
    };
    /// Every field of the tile's wgmma descriptors but the address, derived from [`Operand::TILE`] (which
    /// `sw128_fields` checks is a layout wgmma reads).
    const DESC_FIELDS: u64 = wgmma::sw128_fields(&Self::TILE);
    /// Bytes between the k16 slices: 32 along a K-major row; 16 k-rows of 128 bytes in an MN-major block.
    const K_STEP_BYTES: u32 = wgmma::k16_step_bytes(&Self::TILE);

    /// Has TMA load M/N indices `mn0 .. mn0 + rows`, of which the first `valid` lie inside the matrix, and k indices
    /// `k0 .. k0 + 64` into `dst`, signalling `bar` (at the same offsets in every block of `multicast`, when given)
    /// with [`Operand::bytes`]`(rows, valid)` bytes. Parts outside the matrix along K arrive as zeros. Indices past
    /// `valid` are not loaded where a box can leave them out — K-major: a box of `valid` rows rounded up to a
    /// swizzle atom's 8, from `tail_map`; MN-major: whole 64-index boxes — and their shared memory keeps what it
    /// held: the rows of D they feed lie outside D and are never stored. (TMA's zero fill of rows past the
    /// matrix is not free: at M = 192 it slowed the 128×128 tile by a third, docs/perf-notes.md, GEMM sm90 v14.)
    ///
    /// With `matrix`, the maps are 3-D (a stack of matrices, the symmetric GEMM's) and the boxes come from that
    /// matrix; the rows and k indices past its edges arrive as zeros, none from its neighbour.
    ///
    /// # Safety
    /// `map` is this operand's tensor map, with boxes of 64 k × `rows` (K-major) or 64 × 64 (MN-major); for a K-major
    /// operand with `valid` < `rows`, `tail_map` is the same map with boxes of `valid` rows rounded up to 8; `dst`
    /// has room for `rows × 128` bytes, 1024-byte aligned; `bar` expects [`Operand::bytes`]`(rows, valid)`. With
    /// `matrix` the maps are 3-D with boxes one matrix deep and `multicast` is `None`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn load(
        dst: u32,
        map: u64,
        tail_map: u64,
        mn0: u32,
        k0: u32,
        rows: u32,
        valid: u32,
        bar: u32,
        multicast: Option<u16>,
        matrix: Option<u32>,
    ) {
        let load_box = |dst: u32, map: u64, x: u32, y: u32| match (multicast, matrix) {
            (Some(mask), _) => unsafe { tma::load_2d_multicast(dst, map, x as i32, y as i32, bar, mask) },
            (None, Some(z)) => unsafe { tma::load_3d(dst, map, x as i32, y as i32, z as i32, bar) },
            (None, None) => unsafe { tma::load_2d(dst, map, x as i32, y as i32, bar) },
        };
        if MN_MAJOR == K {
            if valid >= rows {
                load_box(dst, map, k0, mn0);
            } else if valid > 0 {
                load_box(dst, tail_map, k0, mn0);
            }
        } else {
            for block in 0..rows / Self::ROW_ELEMENTS {
                if block * Self::ROW_ELEMENTS < valid {
                    load_box(dst + block * Self::BLOCK_BYTES, map, mn0 + block * Self::ROW_ELEMENTS, k0);
                }
            }
        }
    }

    /// The bytes [`Operand::load`] brings for `rows` indices of which the first `valid` lie inside the matrix.
    #[inline(always)]
    const fn bytes(rows: u32, valid: u32) -> u32 {
        let loaded = if valid >= rows {
            rows
        } else if MN_MAJOR == K {
            valid.next_multiple_of(8)
        } else {
            valid.next_multiple_of(Self::ROW_ELEMENTS)
        };
        loaded * 128
    }

    /// The wgmma descriptor of the first k16 slice of the tile at `base` (whose first 64 M/N indices are one
    /// block). For MN-major tiles the leading byte offset steps between 64-index blocks, [`Operand::BLOCK_BYTES`].
    #[inline(always)]
    fn desc(base: u32) -> u64 {
        wgmma::desc(base, Self::DESC_FIELDS)
    }
}

/// (M/N index, k index) → the tile's 1-D index, whose rows are k: `(64,64):(64,1)`, to view an MN-major box by M/N
/// index first.
const TRANSPOSE_64X64: StaticLayout<4> = StaticLayout::new(&[64, 64], &[64, 1]);

// An MN-major block's leading byte offset, as the descriptor derives it for a one-block tile, is the block's size.
const _: () =
    assert!(wgmma::sw128_fields(&Operand::<1>::TILE) == wgmma::desc_mn_major_sw128(0, Operand::<1>::BLOCK_BYTES));

/// The device configuration of a table tile: the `config!` type of that tile for input `I` and output `O`.
macro_rules! tile_config {
    (GEMM_SM90_128X256, $input:ty, $output:ty) => { Wide<$input, $output> };
    (GEMM_SM90_128X192, $input:ty, $output:ty) => { Wide192<$input, $output> };
    (GEMM_SM90_192X192, $input:ty, $output:ty) => { Square192<$input, $output> };
    (GEMM_SM90_128X64, $input:ty, $output:ty) => { Narrow<$input, $output> };
    (GEMM_SM90_64X128, $input:ty, $output:ty) => { Flat<$input, $output> };
    (GEMM_SM90_64X64, $input:ty, $output:ty) => { FlatNarrow<$input, $output> };
    (GEMM_SM90_128X128, $input:ty, $output:ty) => { Square<$input, $output> };
    (GEMM_SM90_128X128_PINGPONG, $input:ty, $output:ty) => { PingPong<$input, $output> };
}

/// A table type's element type.
macro_rules! element {
    (bf16) => {
        Bf16
    };
    (f16) => {
        F16
    };
    (f32) => {
        F32
    };
}

/// A table layout's operand majorness (A, B), as wgmma's transpose flags: t = row-major, n = column-major; A row-major
/// is K-major, B row-major is N-major.
macro_rules! majorness {
    (tn) => {
        (K, K)
    };
    (tt) => {
        (K, MN)
    };
    (nt) => {
        (MN, MN)
    };
    (nn) => {
        (MN, K)
    };
}

/// Defines every kernel of the GEMM table (`oxtile_abi::for_each_gemm_sm90!`) that belongs in this crate's module
/// (`oxtile_abi::gemm_sm90_module!`), one per row, type pair and layout, each exported under the name
/// `oxtile_abi::gemm_sm90_kernel_name!` gives it, which the host registry uses too.
macro_rules! gemm_kernels {
    ($(($variant:ident, $kernel:literal, $tile:ident, $cluster:literal, $share:ident, $stream_k:tt) $input:ident $output:ident $layout:ident)*) => {
        $(oxtile_abi::gemm_sm90_module! { $layout, in_this_module!(gemm_kernel!(
            tile = $tile,
            oxtile_abi::gemm_sm90_kernel_name!($input -> $output, $layout, $kernel),
            tile_config!($tile, element!($input), element!($output)),
            majorness!($layout),
            TileScheduler,
            config = oxtile_abi::GemmConfig {
                tile: oxtile_abi::$tile,
                cluster: $cluster,
                share: share_of!($share),
                stream_k: $stream_k,
                symmetric: false,
            }
        );) })*
    };
}

/// Defines every kernel of the symmetric GEMM table (`oxtile_abi::for_each_gemm_sm90_symmetric!`) as
/// [`gemm_kernels!`] does the general one's: the same data path over the triangular tile order.
macro_rules! symmetric_gemm_kernels {
    ($(($variant:ident, $kernel:literal, $tile:ident, $cluster:literal, $share:ident, $stream_k:tt) $input:ident $output:ident $layout:ident)*) => {
        $(oxtile_abi::gemm_sm90_module! { $layout, in_this_module!(gemm_kernel!(
            tile = $tile,
            oxtile_abi::gemm_sm90_kernel_name!($input -> $output, $layout, $kernel),
            tile_config!($tile, element!($input), element!($output)),
            majorness!($layout),
            TriangularScheduler,
            config = oxtile_abi::GemmConfig {
                tile: oxtile_abi::$tile,
                cluster: $cluster,
                share: share_of!($share),
                stream_k: $stream_k,
                symmetric: true,
            }
        );) })*
    };
}

/// A table row's shared operand as [`oxtile_abi::GemmShare`].
macro_rules! share_of {
    (none) => {
        oxtile_abi::GemmShare::None
    };
    (a) => {
        oxtile_abi::GemmShare::A
    };
    (b) => {
        oxtile_abi::GemmShare::B
    };
}

/// Defines one exported kernel over [`gemm`], its parameters those of `oxtile_abi::gemm_sm90_params!`.
macro_rules! gemm_kernel {
    // The launch bound of the row's tile ([`GemmTile::launch_bound`]) as a literal: 512 for the three-consumer tile,
    // 384 for every other.
    (tile = GEMM_SM90_192X192, $($rest:tt)*) => {
        gemm_kernel!(@bound 512, $($rest)*);
    };
    (tile = $tile:ident, $($rest:tt)*) => {
        gemm_kernel!(@bound 384, $($rest)*);
    };
    (@bound $bound:literal, $name:expr, $config:ty, $majorness:expr, $order:ty, config = $table:expr) => {
        const _: () = {
            const CONFIG: oxtile_abi::GemmConfig = $table;
            oxtile_abi::gemm_sm90_params! { gemm_kernel_fn, ($name, $config, $majorness, $order) }
            // The builder reads the bound from the marker's name, so it is a literal here, asserted to be the tile's.
            oxtile_device::launch_bounds!(name = $name, max_threads = $bound, min_blocks = 1);
            assert!(CONFIG.tile.launch_bound() == $bound, "the launch bound literal is not the tile's");
            check_config::<$config>(CONFIG, $majorness);
        };
    };
}

/// [`gemm_kernel!`]'s function: one parameter per field of the list, in its order, gathered into a local struct of the
/// same names (tensor maps left out: they are never read in Rust, see [`tma::TensorMap`]).
macro_rules! gemm_kernel_fn {
    (($name:expr, $config:ty, $majorness:expr, $order:ty) $($(#[$doc:meta])* $field:ident: $kind:ident($($ty:ty)?),)*) => {
        /// See [`gemm`]: this instantiation's configuration, operand majorness (a, b) and cluster size are those of its
        /// row of the GEMM table.
        ///
        /// # Safety
        /// The parameters are as `oxtile_abi::gemm_sm90_params!` documents them, the tensor maps by value; a
        /// stream-K kernel's `sk_tiles` is `StreamK::split(cluster_tiles, k_tiles, clusters).sk_tiles()` or any count
        /// of cluster tiles that keeps `sk_tiles × k_tiles` within u32, and every block of its grid is resident at
        /// once (at most one block per SM and, in clusters, at most as many clusters as the GPU holds at once); the
        /// data-parallel kernels never read the stream-K parameters. Launched with the configuration's threads and
        /// dynamic shared memory (oxtile-abi), clusters of (cluster, 1, 1) and a grid that is a multiple of the
        /// cluster.
        #[unsafe(export_name = $name)]
        #[allow(unused_variables)]
        unsafe extern "ptx-kernel" fn kernel($($field: device_param!($kind($($ty)?)),)*) {
            #[allow(dead_code)]
            struct Params {
                $($field: device_field!($kind($($ty)?)),)*
            }
            let params = Params { $($field: device_value!($kind, $field),)* };
            let maps = OperandMaps {
                a: tma::param_address!(name = $name, 0),
                b: tma::param_address!(name = $name, 1),
                a_tail: tma::param_address!(name = $name, 2),
            };
            let (m, n, ldd, alpha, beta) = (params.m, params.n, params.ldd, params.alpha, params.beta);
            let out = Epilogue {
                d: params.d.cast(),
                c: params.c.cast(),
                tensor_map: params.tensor_map_d,
                mirror_map: if CONFIG.symmetric { params.tensor_map_d_mirror } else { 0 },
                ldd,
                m,
                n,
                alpha,
                beta,
                // Folded to 0 in the general GEMM's kernels, so their epilogues keep no diagonal test.
                diagonal: if CONFIG.symmetric { params.diagonal } else { 0.0 },
                matrix: 0,
            };
            // The general GEMM is one matrix whatever the parameter says.
            let batch = if CONFIG.symmetric { params.batch } else { 1 };
            let stream_k = if CONFIG.stream_k {
                let output_bytes = size_of::<<<$config as Config>::Output as OutputElement>::Bits>();
                let pieces = if CONFIG.shares_split_k(output_bytes as u32) { params.split_pieces } else { 0 };
                StreamKArgs { partials: params.partials, flags: params.flags, sk_tiles: params.sk_tiles, pieces }
            } else {
                StreamKArgs::NONE
            };
            const MAJORNESS: (u32, u32) = $majorness;
            const SHARE: u32 = share_value(CONFIG.share);
            unsafe {
                gemm::<
                    $config,
                    $order,
                    { MAJORNESS.0 },
                    { MAJORNESS.1 },
                    { CONFIG.cluster },
                    SHARE,
                    { CONFIG.stream_k },
                    { CONFIG.symmetric },
                >(maps, params.k, batch, out, stream_k)
            }
        }
    };
}

/// [`gemm`]'s `SHARE` for a table row's shared operand.
const fn share_value(share: GemmShare) -> u32 {
    match share {
        GemmShare::None => SHARE_NONE,
        GemmShare::A => SHARE_A,
        GemmShare::B => SHARE_B,
    }
}

/// Checks a table row against the device configuration its tile maps to, at compile time: the same tile, the row's
/// own invariants ([`oxtile_abi::GemmConfig::check`]) and those of its shares in this kernel's operand majorness
/// (`majorness`: A's and B's, [`K`] or [`MN`]; [`oxtile_abi::GemmConfig::check_layout`]); the launch bound covers its
/// block.
const fn check_config<C: Config>(config: oxtile_abi::GemmConfig, majorness: (u32, u32)) {
    config.check();
    config.check_layout(majorness.0 == MN, majorness.1 == MN);
    let (row, device) = (config.tile, C::TILE);
    assert!(row.tile_m == device.tile_m && row.tile_n == device.tile_n && row.tile_k == device.tile_k);
    assert!(row.stages == device.stages && row.consumers == device.consumers);
    assert!(matches!(
        (row.schedule, device.schedule),
        (GemmSchedule::Cooperative, GemmSchedule::Cooperative) | (GemmSchedule::PingPong, GemmSchedule::PingPong)
    ));
    assert!(row.threads() <= row.launch_bound());
    // The symmetric epilogue's transposed parts fill a staging buffer's warp quarters ([`Staging::warp_part`]).
    assert!(!config.symmetric || (device.stores_through_tma() && device.staging_buffers == STAGING_BUFFERS));
}

oxtile_abi::for_each_gemm_sm90_kernel! { gemm_kernels }
oxtile_abi::for_each_gemm_sm90_symmetric_kernel! { symmetric_gemm_kernels }

/// Generic addresses of the operand tensor maps a kernel was launched with (kernel parameters): A's, B's, and A's
/// with the boxes of its last tile row ([`Operand::load`]).
#[derive(Clone, Copy)]
struct OperandMaps {
    a: u64,
    b: u64,
    a_tail: u64,
}

/// The stream-K arguments of a kernel ([`StreamK`]: the last `sk_tiles` tiles are split into equal k-tile ranges, one
/// per block). Unused (null, 0) by the data-parallel kernels.
#[derive(Clone, Copy)]
struct StreamKArgs {
    /// The f32 partial sums: one slot of `tile_m × tile_n` per block of the grid (a block stores at most one partial
    /// per launch), consumer `c`'s part (its rows, in the fragment order of [`Config::store_partial`]) at
    /// `c × consumer_rows × tile_n` in it.
    partials: *mut f32,
    /// One u32 per (stream-K tile, consumer, warp of the consumer), 0 between launches: that warp of each block storing
    /// a partial of the tile adds 32 once its part of the partial is stored; the reducing warp waits for 32 per peer
    /// block, then sets it back to 0 (split-K pieces count themselves out first, [`Fixup::share`]).
    flags: *mut u32,
    sk_tiles: u32,
    /// Split-K's pieces per tile ([`StreamK::split_k`]), or 0.
    pieces: u32,
}

impl StreamKArgs {
    const NONE: StreamKArgs =
        StreamKArgs { partials: core::ptr::null_mut(), flags: core::ptr::null_mut(), sk_tiles: 0, pieces: 0 };
}

/// Warps of a consumer warpgroup: each has its own stream-K flag per tile (a warp's lanes read exactly what the same
/// warp of each peer block wrote, so warps need not wait for each other); the host sizes the flags by the abi's count.
const WARPS_PER_WARPGROUP: u32 = GemmTile::WARPGROUP_THREADS / 32;
const _: () = assert!(WARPS_PER_WARPGROUP == FLAGS_PER_CONSUMER);

/// One work unit as the consumers walk it: k-tiles `k_begin .. k_end` of `tile` (index `tile_index` in the
/// scheduler's order), and what to do with the accumulators after them.
#[derive(Clone, Copy)]
struct Work {
    tile: Tile,
    tile_index: u32,
    k_begin: u32,
    k_end: u32,
    role: Role,
}

/// The data path. With `CLUSTER` = 2 the blocks of a cluster compute two adjacent tiles and share the operand tile
/// they have in common ([`SHARE_B`], [`SHARE_A`]): each loads half of it, multicast into both blocks, and its other
/// operand tile whole. A stage is refilled only after the consumers of both blocks released it, so every consumer
/// arrives on the `empty` barrier of every block.
///
/// With `STREAM_K` the block walks the units of the hybrid data-parallel + stream-K schedule ([`StreamK::units`],
/// which argues why it cannot deadlock): producer and consumers iterate the same units, so the producer loads exactly
/// each unit's k-tiles. Ping-pong consumers take the units in turn as they take tiles; the argument holds, since a
/// consumer's turn waits only for the other's main loop to be issued, never for a fixup, and the one unit that
/// waits (the reducer) is the block's last. In clusters the schedule's units are cluster tiles and its
/// "blocks" are clusters: both blocks of a cluster walk the same units in the same order, as the data-parallel
/// cluster kernels walk the same tiles, each block computing (and storing partials of) its own tile of the pair.
/// Without `STREAM_K` the loops are the plain persistent ones, with no stream-K code in them.
///
/// `S` is the order of the tiles: the full grouped one ([`TileScheduler`]), or with `SYMMETRIC` the upper triangle of
/// each of `batch` square outputs ([`TriangularScheduler`]). Then every operand and output map is 3-D (a stack of
/// matrices, the box one matrix deep) and a tile above the diagonal is stored twice: as it is and transposed (D is
/// symmetric, by the caller's promise, so D(j, i) = D(i, j)ᵀ for tiles (i, j)). A diagonal tile's lower half is
/// written from its upper half ([`oxtile_abi::symmetric`]), so D comes out exactly symmetric.
#[inline(always)]
unsafe fn gemm<
    C: Config,
    S: TileOrder,
    const MN_MAJOR_A: u32,
    const MN_MAJOR_B: u32,
    const CLUSTER: u32,
    const SHARE: u32,
    const STREAM_K: bool,
    const SYMMETRIC: bool,
>(
    maps: OperandMaps,
    k: u32,
    batch: u32,
    out: Epilogue<C::Output>,
    stream_k: StreamKArgs,
) {
    // Stream-K: a partial is a whole tile's, of all the consumers that share it (a cooperative block's, or one
    // ping-pong consumer's); in a cluster both blocks must load every unit's k-tiles, so B is shared by multicast,
    // never reloaded per block, and the tiles are cooperative.
    const {
        let cooperative = matches!(C::TILE.schedule, GemmSchedule::Cooperative);
        assert!(!STREAM_K || CLUSTER == 1 || (cooperative && SHARE == SHARE_B));
        assert!(SHARE == SHARE_NONE || SHARE == SHARE_B || SHARE == SHARE_A);
        // The symmetric epilogue places its strips relative to the tile: a consumer's rows start at the tile's.
        assert!(
            !SYMMETRIC
                || (CLUSTER == 1 && C::TILE.tile_m == C::TILE.tile_n && C::TILE.consumer_rows() == C::TILE.tile_m)
        );
    }
    let tile = C::TILE;
    let smem = SmemMap { base: smem::dynamic_smem_base(), tile };
    let warpgroup = thread_idx_x() / GemmTile::WARPGROUP_THREADS;
    let thread = thread_idx_x() % GemmTile::WARPGROUP_THREADS;
    let rank = if CLUSTER > 1 { cluster::block_rank() } else { 0 };
    // A's and B's maps come with the launch (kernel parameters); D's lives in global memory and, behind a launch's
    // inputs, rarely in L2. An otherwise idle producer warp brings all three into the descriptor cache while thread 0
    // sets up the barriers, so neither the first load nor the first store of D waits for its map.
    if thread_idx_x() == 32 {
        tma::prefetch_tensormap(maps.a);
        tma::prefetch_tensormap(maps.b);
        if out.tensor_map != 0 {
            tma::prefetch_tensormap(out.tensor_map);
        }
    }
    if thread_idx_x() == 0 {
        for stage in 0..tile.stages {
            unsafe {
                mbarrier::init(smem.full(stage), 1);
                mbarrier::init(smem.empty(stage), tile.stage_readers() * CLUSTER);
            }
        }
        mbarrier::fence_init();
    }
    // Peers multicast into this block's ring and arrive on its barriers: all must be initialized first. In a cluster
    // the wait comes after the wait for the grid before, so that the two latencies overlap.
    if CLUSTER > 1 {
        cluster::arrive();
    } else {
        barrier::sync_threads();
    }
    // Programmatic dependent launch: the grid after this one in the stream may be scheduled from here on (it gets an
    // SM only as these blocks leave, for its prologue), and everything above overlapped the tail of the grid before.
    // From here on global memory is touched, so first wait for that grid to finish. The tensor maps are no grid's
    // output: the host writes them, ahead of the launch in the stream.
    griddep::launch_dependents();
    griddep::wait();
    if CLUSTER > 1 {
        cluster::wait();
    }

    // Work items are cluster tiles: CLUSTER adjacent output tiles.
    let Sharing { cluster_m, cluster_n, .. } = Sharing::of::<CLUSTER, SHARE>(tile, rank);
    let scheduler = S::for_output(out.m, out.n, tile.tile_m * cluster_m, tile.tile_n * cluster_n, batch);
    let k_tiles = k.div_ceil(tile.tile_k);
    let (first, stride) = (block_idx_x() / CLUSTER, grid_dim_x() / CLUSTER);
    // The host computed `sk_tiles` from the same cluster tiles, k-tiles and clusters (`StreamK::split`).
    // With split pieces, the grid is `sk_tiles × pieces` (`StreamK::split_k`).
    let schedule = if stream_k.pieces > 0 {
        StreamK::split_k(scheduler.items(), k_tiles, stream_k.pieces)
    } else {
        StreamK::new(scheduler.items(), k_tiles, stride, stream_k.sk_tiles)
    };

    let block = Block { smem, maps, out, stream_k, scheduler, schedule, k_tiles, first, stride, rank };
    if warpgroup == 0 {
        const { assert!(GemmTile::PRODUCER_REGISTERS == 40) };
        setmaxnreg::dec::<40>();
        // The producer is warp 0, all of its lanes walking the same loop, and one lane issuing. A loop that one lane
        // runs alone is divergent code to ptxas: every TMA operand then sits in vector registers and each copy is
        // issued through an elect-and-move loop (about 50 instructions per k-tile, a single warp's dependent chain:
        // slower than a 128×64 tile's 256 cycles of tensor work). Run by the whole warp (the warp index broadcast,
        // so that the branch is known to be uniform), the coordinates and addresses are warp-uniform and TMA takes
        // them from uniform registers; `elect.sync` tells ptxas that one lane issues, so no loop over lanes is left.
        if warp::broadcast_first(thread / 32) == 0 {
            unsafe { produce::<C, S, MN_MAJOR_A, MN_MAJOR_B, CLUSTER, SHARE, STREAM_K, SYMMETRIC>(&block) };
        }
    } else {
        // The tile's register plan (`GemmTile::consumer_registers`), a literal per plan: one instruction either way.
        const { assert!(matches!(C::TILE.consumer_registers(), 152 | 232)) };
        if C::TILE.consumer_registers() == 152 {
            setmaxnreg::inc::<152>();
        } else {
            setmaxnreg::inc::<232>();
        }
        unsafe {
            consume::<C, S, MN_MAJOR_A, MN_MAJOR_B, CLUSTER, SHARE, STREAM_K, SYMMETRIC>(&block, warpgroup, thread)
        };
    }
    // No block may leave while a peer can still multicast into it or arrive on its barriers.
    if CLUSTER > 1 {
        cluster::sync();
    }
}

/// What the producer and the consumers of one block share, set once by [`gemm`]'s prologue: the kernel's arguments,
/// the block's place in its cluster and the order of the tiles (or stream-K units) it walks.
#[derive(Clone, Copy)]
struct Block<S: TileOrder, O: OutputElement> {
    smem: SmemMap,
    maps: OperandMaps,
    out: Epilogue<O>,
    stream_k: StreamKArgs,
    /// The order of the cluster tiles (CLUSTER adjacent output tiles each).
    scheduler: S,
    /// The units of the hybrid data-parallel + stream-K schedule over those tiles (walked with `STREAM_K` only).
    schedule: StreamK,
    k_tiles: u32,
    /// The schedule's block (cluster) this block computes for, and the grid's count of them.
    first: u32,
    stride: u32,
    /// This block's rank in its cluster ([`Sharing`] places it).
    rank: u32,
}

/// Where a block of a cluster sits in the cluster's tile and which share of each operand tile it loads: what the
/// kernel's `CLUSTER` and `SHARE` and the block's rank imply, recomputed where used (constants but for the rank).
#[derive(Clone, Copy)]
struct Sharing {
    /// The cluster's blocks in its tile, `cluster_m` × `cluster_n`: stacked along M (the B tile in common) or side
    /// by side along N (the A tile in common); this block at (`rank_m`, `rank_n`).
    cluster_m: u32,
    cluster_n: u32,
    rank_m: u32,
    rank_n: u32,
    /// How many blocks load a share of each operand tile (the cluster for the one in common), and the rows of a share.
    a_share: u32,
    b_share: u32,
    a_rows_per_block: u32,
    b_rows_per_block: u32,
}

impl Sharing {
    #[inline(always)]
    const fn of<const CLUSTER: u32, const SHARE: u32>(tile: GemmTile, rank: u32) -> Self {
        let (cluster_m, cluster_n) = if SHARE == SHARE_A { (1, CLUSTER) } else { (CLUSTER, 1) };
        let (rank_m, rank_n) = if SHARE == SHARE_A { (0, rank) } else { (rank, 0) };
        let a_share = if SHARE == SHARE_A { CLUSTER } else { 1 };
        let b_share = if SHARE == SHARE_B { CLUSTER } else { 1 };
        let (a_rows_per_block, b_rows_per_block) = (tile.tile_m / a_share, tile.tile_n / b_share);
        Self { cluster_m, cluster_n, rank_m, rank_n, a_share, b_share, a_rows_per_block, b_rows_per_block }
    }
}

/// Bytes of one M/N index's k-tile in the ring: a K-major row, or its share of an MN-major block (see the module docs).
const fn row_bytes(tile: GemmTile) -> u32 {
    tile.tile_k * tile.element_bytes
}

/// The producer warp: TMA loads of each tile's (or unit's) k-tiles of A and B into the ring, one elected lane
/// issuing.
#[inline(always)]
unsafe fn produce<
    C: Config,
    S: TileOrder,
    const MN_MAJOR_A: u32,
    const MN_MAJOR_B: u32,
    const CLUSTER: u32,
    const SHARE: u32,
    const STREAM_K: bool,
    const SYMMETRIC: bool,
>(
    block: &Block<S, C::Output>,
) {
    let tile = C::TILE;
    let Block { smem, maps, out, scheduler, schedule, k_tiles, first, stride, rank, .. } = *block;
    let Sharing { cluster_m, cluster_n, rank_m, rank_n, a_share, b_share, a_rows_per_block, b_rows_per_block } =
        Sharing::of::<CLUSTER, SHARE>(tile, rank);
    let row_bytes = row_bytes(tile);
    let leader = warp::elect_one();
    let mut ring = RingState::new(tile.stages);
    // The block's share of the operand tile in common, and the mask that multicasts it to the whole cluster.
    let (a_rank, b_rank) = (if a_share > 1 { rank } else { 0 }, if b_share > 1 { rank } else { 0 });
    let everyone = Some((1u16 << CLUSTER) - 1);
    let (a_multicast, b_multicast) =
        (if a_share > 1 { everyone } else { None }, if b_share > 1 { everyone } else { None });
    // Inlined by force: a stream-K kernel has two loops over it before the dead one is removed, and LLVM
    // would otherwise keep it a function (for the consumers' accumulators that means local memory).
    let mut load = #[inline(always)]
    |work: Tile, k_begin: u32, k_end: u32| {
        // The tile's first A row (of the block's share) and the rows of each share inside A: a tile row past
        // M brings fewer A bytes, the same for every k-tile of the tile. With A shared, both shares arrive.
        let a_tile_row = (work.m * cluster_m + rank_m) * tile.tile_m;
        let a_valid = |share: u32| out.m.saturating_sub(a_tile_row + share * a_rows_per_block);
        let (a_row, a_rows) = (a_tile_row + a_rank * a_rows_per_block, a_valid(a_rank));
        let mut a_bytes = 0;
        for share in 0..a_share {
            a_bytes += Operand::<MN_MAJOR_A>::bytes(a_rows_per_block, a_valid(share));
        }
        let stage_bytes = a_bytes + tile.smem_b_bytes();
        let b_row = (work.n * cluster_n + rank_n) * tile.tile_n + b_rank * b_rows_per_block;
        let matrix = if SYMMETRIC { Some(work.batch) } else { None };
        for k_tile in k_begin..k_end {
            let k0 = k_tile * tile.tile_k;
            let (full, stage) = (smem.full(ring.stage), ring.stage);
            unsafe { mbarrier::wait(smem.empty(stage), ring.phase ^ 1) };
            if leader {
                unsafe {
                    mbarrier::arrive_expect_tx(full, stage_bytes);
                    let a_part = smem.a(stage) + a_rank * a_rows_per_block * row_bytes;
                    let (map, tail, rows) = (maps.a, maps.a_tail, a_rows_per_block);
                    let (valid, multicast) = (a_rows, a_multicast);
                    Operand::<MN_MAJOR_A>::load(a_part, map, tail, a_row, k0, rows, valid, full, multicast, matrix);
                    let b_part = smem.b(stage) + b_rank * b_rows_per_block * row_bytes;
                    let (map, rows) = (maps.b, b_rows_per_block);
                    Operand::<MN_MAJOR_B>::load(b_part, map, map, b_row, k0, rows, rows, full, b_multicast, matrix);
                }
            }
            ring.advance();
        }
    };
    if STREAM_K {
        for unit in schedule.units(first) {
            load(scheduler.item(unit.tile), unit.k_begin, unit.k_end);
        }
    } else {
        for work in scheduler.visit(first, stride) {
            load(work, 0, k_tiles);
        }
    }
}

/// A consumer warpgroup (`warpgroup` 1 or 2 of the block, `thread` its thread): per tile or unit, the main loop over
/// the ring, then the stream-K [`Fixup`] and the epilogue ([`Config::store_staged`], [`Config::store`]).
#[inline(always)]
unsafe fn consume<
    C: Config,
    S: TileOrder,
    const MN_MAJOR_A: u32,
    const MN_MAJOR_B: u32,
    const CLUSTER: u32,
    const SHARE: u32,
    const STREAM_K: bool,
    const SYMMETRIC: bool,
>(
    block: &Block<S, C::Output>,
    warpgroup: u32,
    thread: u32,
) {
    let tile = C::TILE;
    let Block { smem, out, stream_k, scheduler, schedule, k_tiles, first, stride, rank, .. } = *block;
    let Sharing { cluster_m, cluster_n, rank_m, rank_n, .. } = Sharing::of::<CLUSTER, SHARE>(tile, rank);
    let row_bytes = row_bytes(tile);
    let consumer = warpgroup - 1;
    let ping_pong = matches!(tile.schedule, GemmSchedule::PingPong);
    // Where this consumer's rows start in each tile: its share, or the top when it owns whole tiles. 64 M/N
    // indices are one block at byte `index × 128` of an operand tile in either majorness, so a share's descriptor
    // is a byte offset.
    let consumer_row0 = if tile.consumer_rows() == tile.tile_m { 0 } else { consumer * tile.consumer_rows() };
    // Descriptors of stage 0's first k16 slices; every other stage and slice is a fixed byte offset from them.
    let desc_a0 = Operand::<MN_MAJOR_A>::desc(smem.a(0) + consumer_row0 * row_bytes);
    let desc_b0 = Operand::<MN_MAJOR_B>::desc(smem.b(0));
    let release = |stage: u32| {
        if thread == 0 {
            for peer in 0..CLUSTER {
                if CLUSTER > 1 {
                    unsafe { mbarrier::arrive_cluster(cluster::map_shared(smem.empty(stage), peer)) };
                } else {
                    unsafe { mbarrier::arrive(smem.empty(stage)) };
                }
            }
        }
    };
    // The units the consumers alternate over: the block's tiles, or with stream-K its units.
    let block_tiles = if STREAM_K { schedule.unit_count(first) } else { scheduler.visit_count(first, stride) };
    let turns = Turns { consumer, block_tiles };
    // The configuration has the TMA-store epilogue and the host could describe D by a tensor map.
    const { assert!(!C::TILE.stores_through_tma() || C::TILE.staging_buffers == STAGING_BUFFERS) };
    let staged = tile.stores_through_tma() && out.tensor_map != 0;
    let staging = Staging::new(&smem, consumer, thread);
    if ping_pong && consumer == 1 && turns.block_tiles > 0 {
        // The block's first tile is consumer 0's: it may start at once.
        turns.hand_over();
    }
    // The consumer's share of a tile's partial: its rows of a cooperative tile; a ping-pong consumer's is the whole
    // tile, whichever consumer of the peer block stored it.
    let sharer = if ping_pong { 0 } else { consumer };
    let fixup = Fixup { args: stream_k, schedule, tile, owner: first, cluster: CLUSTER, rank, sharer, thread };
    let mut acc = C::ZERO;
    let mut ring = RingState::new(tile.stages);
    // The split-K piece this warpgroup published, if any, whose share it reduces once its units are done.
    let mut shared: Option<(u32, Share)> = None;
    // One unit: its main loop, then per its role the epilogue, a partial for another block, or the other
    // blocks' partials and the epilogue. `index` counts the block's tiles (ping-pong turns); `epilogue_index` the
    // epilogues this warpgroup ran before (the staging buffers alternate). Whether it ran an epilogue.
    // Inlined by force, as the producer's `load`: called from two loops, LLVM kept it a function and the
    // accumulators went to local memory.
    let mut run = #[inline(always)]
    |index: u32, epilogue_index: u32, work: Work| -> bool {
        if ping_pong {
            if index % 2 != consumer {
                // The other consumer's unit: its k-tiles pass through the ring without this one.
                ring.advance_by(work.k_end - work.k_begin);
                return false;
            }
            // Wait until the other consumer has issued its whole main loop: the tensor cores are this one's
            // until it hands them back, and it waits for the ring's stages in the order the producer fills
            // them, which keeps every `full` wait within one phase of its barrier (a parity wait cannot tell
            // a phase from the one two after it).
            turns.take();
        }
        let mut reading: Option<u32> = None;
        for k_tile in work.k_begin..work.k_end {
            unsafe { mbarrier::wait(smem.full(ring.stage), ring.phase) };
            wgmma::fence();
            let stage_offset = ring.stage * tile.stage_bytes();
            let (desc_a, desc_b) =
                (wgmma::desc_advance(desc_a0, stage_offset), wgmma::desc_advance(desc_b0, stage_offset));
            for k_step in 0..tile.tile_k / 16 {
                let accumulate = k_tile > work.k_begin || k_step > 0;
                unsafe { C::mma_step::<MN_MAJOR_A, MN_MAJOR_B>(&mut acc, desc_a, desc_b, k_step, accumulate) };
            }
            wgmma::commit_group();
            // The group before this one has finished reading its stage: hand that stage back.
            wgmma::wait_group::<1>();
            if let Some(stage) = reading.replace(ring.stage) {
                release(stage);
            }
            ring.advance();
        }
        // Everything is issued: the other consumer's main loop may start while this one's last group drains
        // and its epilogue runs. Only a tile it will take is handed over, so no arrival is left at exit.
        if ping_pong && index + 1 < turns.block_tiles {
            turns.hand_over();
        }
        wgmma::wait_group::<0>();
        C::fence(&mut acc);
        if let Some(stage) = reading {
            release(stage);
        }
        let row0 = (work.tile.m * cluster_m + rank_m) * tile.tile_m + consumer_row0;
        let col0 = (work.tile.n * cluster_n + rank_n) * tile.tile_n;
        match work.role {
            Role::Whole => {}
            Role::Partial | Role::Share { .. } => {
                unsafe { fixup.publish::<C>(&acc, work.tile_index) };
                // A split-K piece is its block's only unit: it adds up its share of the tile after the loop,
                // where the accumulators are dead and leave their registers to the reduction.
                if let Role::Share { first_peer, pieces } = work.role {
                    shared = Some((work.tile_index, Share { first_peer, pieces, row0, col0 }));
                }
                return false;
            }
            Role::Reduce { first_peer } => unsafe { fixup.gather::<C>(&mut acc, work.tile_index, first_peer) },
        }
        // Whether a symmetric tile is on the diagonal (else above it, and stored transposed too); its matrix of the
        // stack. The triangular order's loops leave ptxas unsure that the tile is the same in every lane, and the
        // epilogue's `stmatrix.trans`, warp and warpgroup barriers branch on it: broadcast from lane 0, it is
        // provably warp-uniform (else ptxas guards every warp barrier of the epilogue with a divergence check).
        let diagonal = SYMMETRIC && warp::broadcast_first((work.tile.m == work.tile.n) as u32) != 0;
        let out = if SYMMETRIC { Epilogue { matrix: work.tile.batch, ..out } } else { out };
        if staged {
            let index = epilogue_index;
            unsafe { C::store_staged::<SYMMETRIC>(&acc, &out, &staging, row0, col0, thread, index, diagonal) };
        } else {
            unsafe { C::store::<SYMMETRIC>(&acc, &out, row0, col0, thread) };
        }
        true
    };
    let unit_work = |unit: Unit| {
        let (k_begin, k_end, role) = (unit.k_begin, unit.k_end, unit.role);
        Work { tile: scheduler.item(unit.tile), tile_index: unit.tile, k_begin, k_end, role }
    };
    if STREAM_K && ping_pong {
        // Each consumer walks every unit (the other's to keep its ring position); the staging buffers follow
        // the unit index as in the plain ping-pong loop.
        // A counter, not `zip` or `enumerate`: those change these kernels' PTX (measured speed is this form's).
        let mut index = 0;
        #[allow(clippy::explicit_counter_loop)]
        for unit in schedule.units(first) {
            run(index, index, unit_work(unit));
            index += 1;
        }
    } else if STREAM_K {
        let mut epilogues = 0;
        for unit in schedule.units(first) {
            if run(0, epilogues, unit_work(unit)) {
                epilogues += 1;
            }
        }
    } else {
        for (index, tile) in (0u32..).zip(scheduler.visit(first, stride)) {
            run(index, index, Work { tile, tile_index: 0, k_begin: 0, k_end: k_tiles, role: Role::Whole });
        }
    }
    // Only the kernels that share split-K tiles get pieces (`GemmConfig::shares_split_k`; 0 is a constant in the
    // others, which so keep no code for it).
    if let Some((tile_index, share)) = shared {
        unsafe { fixup.share::<C>(tile_index, share, &out) };
    }
    if staged {
        staging.drain();
    }
}

/// The stream-K fixup of one consumer warpgroup: handing a partial tile to the block that reduces it, and adding the
/// partials of other blocks. Memory ordering (arch/atomic.rs, bounded_wait.rs): each warp stores its part of a
/// partial, meets at a warp barrier, and lane 0 releases the warp's stores by adding 32 to the warp's flag; the
/// reducing warp's lane 0 acquires the flag once it counts every peer, the warp meets at a warp barrier, then every
/// lane loads. One adder and one poller per warp: with a lane each, the 32·pieces lanes of a split-K tile contended
/// for the flag's L2 line (docs/perf-notes.md, "Session 29"). The flag goes back to 0 after the waiting warps have
/// seen the count, for the next launch (kernel boundaries order that store before the next launch's additions).
///
/// In clusters the schedule's units belong to clusters (`owner` is this block's cluster) and each block of a cluster
/// hands over its own tile of the cluster tile: partials and flags are per (cluster, rank), and a block only ever
/// waits for the blocks of the same rank in lower clusters.
struct Fixup {
    args: StreamKArgs,
    schedule: StreamK,
    tile: GemmTile,
    /// The schedule's block (a cluster, in clusters) this block computes for.
    owner: u32,
    cluster: u32,
    rank: u32,
    /// Which of the tile's sharers ([`GemmTile::tile_sharers`]) this warpgroup is: its rows of the partial.
    sharer: u32,
    thread: u32,
}

impl Fixup {
    /// This warpgroup's part of the workspace slot of the block of this rank in `owner`.
    #[inline(always)]
    fn part(&self, owner: u32) -> *mut f32 {
        let slot = (owner * self.cluster + self.rank) as usize * (self.tile.tile_m * self.tile.tile_n) as usize;
        // Each sharer's accumulators fill its rows of the slot.
        let part = (self.sharer * self.tile.consumer_rows() * self.tile.tile_n) as usize;
        self.args.partials.wrapping_add(slot + part)
    }

    /// This thread's warp's flag for (cluster) tile `tile_index`, a stream-K tile, and this block's rank.
    #[inline(always)]
    fn flag(&self, tile_index: u32) -> *mut u32 {
        let sk_tile = tile_index - self.schedule.dp_tiles();
        let warpgroup = (sk_tile * self.cluster + self.rank) * self.tile.tile_sharers() + self.sharer;
        let warp = warpgroup * WARPS_PER_WARPGROUP + self.thread / 32;
        self.args.flags.wrapping_add(warp as usize)
    }

    /// Stores the accumulators of a partial of tile `tile_index` to this block's slot and signals the tile's flag.
    ///
    /// # Safety
    /// The whole warpgroup calls it, for the block's one partial unit of this launch.
    #[inline(always)]
    unsafe fn publish<C: Config>(&self, acc: &C::Fragment, tile_index: u32) {
        unsafe {
            C::store_partial(acc, self.part(self.owner), self.thread);
            // The warp barrier orders every lane's stores before lane 0's release of them all: one addition per warp
            // on the flag instead of 32.
            warp::sync();
            if self.thread.is_multiple_of(32) {
                atomic::red_release_gpu_add(self.flag(tile_index), 32);
            }
        }
    }

    /// Split-K, after [`Fixup::publish`]: waits until every piece of tile `tile_index` has stored its partial, then
    /// writes this piece's share of the tile to D: of each warp's part of a partial (`Config::VECTORS` vectors × 32
    /// lanes), piece `p` of `P` takes vectors `p·n/P .. (p+1)·n/P`, sums each over the pieces in their order (the same
    /// sum every launch) and stores its two pairs. The warps of a piece each wait only for the same warp of the
    /// others, as [`Fixup::gather`] does. The lanes keep [`SHARE_LOADS`] loads in flight, over vectors and pieces
    /// alike (a lane's share is about `VECTORS` loads whatever `P` is), so the reduction costs a few L2 round trips
    /// where the serial reducer paid one per partial. Last, lane 0 of each warp counts the piece out; the last of
    /// them resets the flag for the next launch (every lane of every piece has then seen the count).
    ///
    /// # Safety
    /// The whole warpgroup calls it, for the block's one unit, a split-K piece whose partial it published and whose
    /// peers run at the same time.
    #[inline(always)]
    unsafe fn share<C: Config>(&self, tile_index: u32, share: Share, out: &Epilogue<C::Output>) {
        let flag = self.flag(tile_index);
        let Share { first_peer, pieces, row0, col0 } = share;
        // Bounded, and left by the whole warp at once (converged for the loads and the count below).
        unsafe { bounded_wait::wait_at_least_from_first_lane(flag, pieces * 32) };
        let (warp, lane) = (self.thread / 32, self.thread % 32);
        let vectors = C::VECTORS * 32;
        let piece = self.owner - first_peer;
        let (begin, end) = (piece * vectors / pieces, (piece + 1) * vectors / pieces);
        // This lane's vectors: begin + lane, + 32, … below end; a job is one (vector, piece) load.
        let mine = if end > begin + lane { (end - begin - lane).div_ceil(32) } else { 0 };
        let jobs = mine * pieces;
        // The cursor of the next load and of the next addition, each as (vector of mine, piece).
        let (mut load_vector, mut load_piece) = (0u32, 0u32);
        let (mut add_vector, mut add_piece) = (0u32, 0u32);
        let mut sum = [0.0f32; 4];
        let mut job = 0;
        while job < jobs {
            let mut loaded = [[0.0f32; 4]; SHARE_LOADS as usize];
            seq!(J in 0..8 {
                if job + J < jobs {
                    let vector = (begin + lane) / 32 + load_vector;
                    let at = self.part(first_peer + load_piece).wrapping_add(partial_offset(vector, warp * 32 + (begin + lane) % 32));
                    loaded[J] = unsafe { global::load_f32x4_cg(at) };
                    load_piece += 1;
                    if load_piece == pieces {
                        (load_vector, load_piece) = (load_vector + 1, 0);
                    }
                }
            });
            seq!(J in 0..8 {
                if job + J < jobs {
                    seq!(I in 0..4 {
                        sum[I] += loaded[J][I];
                    });
                    add_piece += 1;
                    if add_piece == pieces {
                        let vector = (begin + lane) / 32 + add_vector;
                        let thread = warp * 32 + (begin + lane) % 32;
                        seq!(HALF in 0..2 {
                            let (row, col) = C::pair_position(vector, thread, HALF);
                            unsafe { out.store_pair(row0 + row, col0 + col, sum[2 * HALF], sum[2 * HALF + 1]) };
                        });
                        (add_vector, add_piece, sum) = (add_vector + 1, 0, [0.0; 4]);
                    }
                }
            });
            job += SHARE_LOADS;
        }
        if lane == 0 && unsafe { atomic::atom_relaxed_gpu_add(flag, 1) } == 33 * pieces - 1 {
            unsafe { atomic::store_relaxed_gpu(flag, 0) };
        }
    }

    /// Waits for the partials of (the blocks of this rank in) `first_peer .. owner` on tile `tile_index`, adds them
    /// to the accumulators (in order, so the sum is the same every launch) and resets the tile's flag.
    ///
    /// # Safety
    /// The whole warpgroup calls it, for the reducing unit of tile `tile_index`, whose partials
    /// `first_peer .. owner` store in this launch.
    #[inline(always)]
    unsafe fn gather<C: Config>(&self, acc: &mut C::Fragment, tile_index: u32, first_peer: u32) {
        let flag = self.flag(tile_index);
        let expected = (self.owner - first_peer) * 32;
        // Bounded, and left by the whole warp at once (converged for the partial loads and the epilogue's barriers).
        unsafe { bounded_wait::wait_at_least_from_first_lane(flag, expected) };
        for peer in first_peer..self.owner {
            unsafe { C::add_partial(acc, self.part(peer), self.thread) };
        }
        // A lane that still spun after another reset the flag would never see the count.
        warp::sync();
        unsafe { atomic::store_relaxed_gpu(flag, 0) };
    }
}

/// A split-K piece's place ([`Role::Share`]): its tile's pieces are on blocks `first_peer .. first_peer + pieces`, and
/// the warpgroup's block of the tile starts at (`row0`, `col0`) of D.
#[derive(Clone, Copy)]
struct Share {
    first_peer: u32,
    pieces: u32,
    row0: u32,
    col0: u32,
}

/// Loads a split-K reducer keeps in flight per lane ([`Fixup::share`]; its unrolled loops are written for 8).
const SHARE_LOADS: u32 = 8;
const _: () = assert!(SHARE_LOADS == 8);

/// Named barriers of the ping-pong hand-over: consumer `c` may run its main loop once barrier `TURN_BASE + c`
/// completes, with the 128 threads of the other consumer arriving and its own 128 waiting. Barrier 0 is
/// `bar.sync 0`'s.
const TURN_BASE: u32 = 1;
const TURN_THREADS: u32 = 2 * GemmTile::WARPGROUP_THREADS;

/// Named barriers of the symmetric epilogue's diagonal squares ([`Staging::symmetrize`]): consumer `c`'s warpgroup
/// meets at `SYMMETRIZE_BASE + c`, past the hand-over's.
const SYMMETRIZE_BASE: u32 = TURN_BASE + 2;

/// The ping-pong's order of main loops: consumer 0 takes the block's even tiles (stream-K units), consumer 1 the odd
/// ones, and each hands the tensor cores to the other after issuing a main loop. Strict alternation means a barrier
/// never holds two arrivals: the other consumer arrives again only after its next turn, which this one grants.
struct Turns {
    consumer: u32,
    /// Tiles (stream-K units) this block computes.
    block_tiles: u32,
}

impl Turns {
    #[inline(always)]
    fn take(&self) {
        barrier::named_sync_id(TURN_BASE + self.consumer, TURN_THREADS);
    }

    #[inline(always)]
    fn hand_over(&self) {
        barrier::named_arrive_id(TURN_BASE + (1 - self.consumer), TURN_THREADS);
    }
}

/// Where and how the epilogue writes: D (row-major, leading dimension `ldd`) clipped to M×N,
/// D ← alpha·acc + beta·C, C of D's shape (D itself, or another buffer); for the symmetric GEMM, matrix `matrix` of
/// a stack of them, `m·ldd` elements apart.
struct Epilogue<O: OutputElement> {
    d: *mut O::Bits,
    c: *const O::Bits,
    /// D's tensor map for the TMA-store epilogue, or 0 (3-D for the symmetric GEMM).
    tensor_map: u64,
    /// The symmetric GEMM's map for the transposed tiles (with `tensor_map`), else 0.
    mirror_map: u64,
    ldd: u32,
    m: u32,
    n: u32,
    alpha: f32,
    beta: f32,
    /// Added to each matrix's diagonal (the symmetric GEMM's; 0 in the general GEMM's kernels).
    diagonal: f32,
    /// The matrix of the stack the current tile belongs to (0 for the general GEMM).
    matrix: u32,
}

impl<O: OutputElement> Clone for Epilogue<O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O: OutputElement> Copy for Epilogue<O> {}

impl<O: OutputElement> Epilogue<O> {
    /// The address of D[r, c] (of matrix `matrix`).
    ///
    /// # Safety
    /// (`r`, `c`) lies inside D.
    #[inline(always)]
    unsafe fn at(&self, r: u32, c: u32) -> *mut O::Bits {
        unsafe { self.d.add(self.offset(r, c)) }
    }

    /// D[r, c]'s offset from D's start, in elements, which is C[r, c]'s from C's.
    #[inline(always)]
    fn offset(&self, r: u32, c: u32) -> usize {
        let matrix = self.matrix as usize * self.m as usize * self.ldd as usize;
        matrix + r as usize * self.ldd as usize + c as usize
    }

    /// alpha·(v0, v1) + beta·(C[r, c], and C[r, c + 1] when `second`).
    ///
    /// # Safety
    /// (`r`, `c`) (and (`r`, `c + 1`) when `second`) lies inside D.
    #[inline(always)]
    unsafe fn blend(&self, r: u32, c: u32, second: bool, v0: f32, v1: f32) -> (f32, f32) {
        let (mut v0, mut v1) = (self.alpha * v0, self.alpha * v1);
        if self.beta != 0.0 {
            let at = unsafe { self.c.add(self.offset(r, c)) };
            v0 += self.beta * O::to_f32(unsafe { *at });
            if second {
                v1 += self.beta * O::to_f32(unsafe { *at.add(1) });
            }
        }
        (v0, v1)
    }

    /// (v0, v1), the results for columns `c` (even) and `c + 1` of row `r`, with `diagonal` added at (r, r). Only
    /// the symmetric GEMM's diagonal tiles call it, so the other tiles' epilogues keep no comparison per value.
    #[inline(always)]
    fn add_diagonal(&self, r: u32, c: u32, (v0, v1): (f32, f32)) -> (f32, f32) {
        let on = |column: u32| if r == column { self.diagonal } else { 0.0 };
        (v0 + on(c), v1 + on(c + 1))
    }

    /// Whether values need their coordinates: a C to read or a diagonal to add.
    #[inline(always)]
    fn blends(&self) -> bool {
        self.beta != 0.0 || self.diagonal != 0.0
    }

    /// Writes columns `c` (even) and `c + 1` of row `r` (whichever lie inside D).
    #[inline(always)]
    unsafe fn store_pair(&self, r: u32, c: u32, v0: f32, v1: f32) {
        if r >= self.m || c >= self.n {
            return;
        }
        let at = unsafe { self.at(r, c) };
        let second = c + 1 < self.n;
        let (v0, v1) = unsafe { self.blend(r, c, second, v0, v1) };
        // c is even and the base is aligned, so with an even `ldd` the pair is aligned to twice the element size.
        unsafe { O::store(at, v0, v1, second, self.ldd.is_multiple_of(2)) };
    }

    /// The symmetric GEMM's [`Epilogue::store_pair`]: of the results for (`r`, `c`) and (`r`, `c + 1`), those on or
    /// above the diagonal and inside D are written at their place and, above the diagonal, the same value again at
    /// the transposed place; those below it (in a diagonal tile) are left to their partners, so D is exactly
    /// symmetric. Scalar stores, 2 or 4 bytes each: the register path runs only where D's rows cannot be described
    /// by a tensor map (n·bytes not a multiple of 16).
    #[inline(always)]
    unsafe fn store_pair_upper(&self, r: u32, c: u32, v0: f32, v1: f32) {
        unsafe { self.store_upper(r, c, v0) };
        unsafe { self.store_upper(r, c + 1, v1) };
    }

    /// [`Epilogue::store_pair_upper`] for one value.
    #[inline(always)]
    unsafe fn store_upper(&self, r: u32, c: u32, value: f32) {
        if r <= c && c < self.n {
            let (value, _) = self.add_diagonal(r, c, unsafe { self.blend(r, c, false, value, 0.0) });
            unsafe { O::store(self.at(r, c), value, 0.0, false, false) };
            if r < c {
                unsafe { O::store(self.at(c, r), value, 0.0, false, false) };
            }
        }
    }

    /// The results for columns `c` (even) and `c + 1` of row `r`, which may lie past D's edge: the TMA-store
    /// epilogue stages whole boxes and TMA writes only their part inside D, so only the old D is read in bounds.
    #[inline(always)]
    unsafe fn scaled(&self, r: u32, c: u32, v0: f32, v1: f32) -> (f32, f32) {
        if r >= self.m || c >= self.n {
            return (self.alpha * v0, self.alpha * v1);
        }
        unsafe { self.blend(r, c, c + 1 < self.n, v0, v1) }
    }
}

/// How the TMA-store epilogue turns accumulators into D's values: a const parameter, so each case is its own
/// straight-line code.
struct Scaling;

impl Scaling {
    /// alpha = 1, beta = 0: the accumulators as they are.
    const COPY: u32 = 0;
    /// beta = 0: alpha times the accumulators.
    const ALPHA: u32 = 1;
    /// beta ≠ 0 or a diagonal: alpha times the accumulators plus beta times C, read where it lies inside D, plus the
    /// diagonal on it.
    const BLEND: u32 = 2;
}

/// Staging buffers per consumer warpgroup: one chunk is written while TMA reads the one before.
const STAGING_BUFFERS: u32 = 2;

/// The TMA-store epilogue of one consumer warpgroup. The warpgroup writes D chunk by chunk (its 64 rows × one
/// 128-byte column chunk) into two shared-memory buffers in turn, laid out as TMA's 128-byte swizzled box. Each warp
/// writes only its own 16 rows of a chunk (a wgmma fragment's rows), so each warp hands them to TMA itself, one
/// 16-row box per chunk from one elected lane, and meets only its own lanes: no barrier across the warpgroup. The
/// warps go on with the next chunk, then with the next tile's main loop, while the stores drain. A buffer is written
/// again only after the store that read it has finished reading (`cp.async.bulk.wait_group.read`).
struct Staging {
    /// Shared address of the warpgroup's first buffer; the second follows it.
    buffers: u32,
    buffer_bytes: u32,
    /// This warp's index in the warpgroup (warp-uniform): its rows of each chunk are `16·warp ..` of the 64.
    warp: u32,
    /// The lane that issues, commits and waits for every store of this warp, elected once: bulk groups belong to
    /// the thread that commits them, so a wait counts chunks only if one lane commits them all.
    issuer: bool,
    /// The warpgroup's named barrier for [`Staging::symmetrize`].
    barrier: u32,
}

impl Staging {
    #[inline(always)]
    fn new(smem: &SmemMap, consumer: u32, thread: u32) -> Self {
        Staging {
            buffers: smem.staging(consumer),
            buffer_bytes: smem.tile.staging_buffer_bytes(),
            warp: warp::broadcast_first(thread / 32),
            issuer: warp::elect_one(),
            barrier: SYMMETRIZE_BASE + consumer,
        }
    }

    /// The buffer of the warpgroup's `chunk`-th chunk, counted over all its tiles: the buffers alternate.
    #[inline(always)]
    fn buffer(&self, chunk: u32) -> u32 {
        self.buffers + (chunk % STAGING_BUFFERS) * self.buffer_bytes
    }

    /// This warp's quarter of the buffer of chunk `chunk`: its 16 rows of a chunk, or its transposed part.
    #[inline(always)]
    fn warp_part(&self, chunk: u32) -> u32 {
        self.buffer(chunk) + self.warp * GemmTile::STORE_BOX_ROWS * GemmTile::STAGING_ROW_BYTES
    }

    /// Hands this warp's rows of chunk `chunk`, just written into [`Staging::buffer`] by its lanes, to TMA: the
    /// 16-row box at (`row` + 16·warp, `column`) of D, clipped at M×N, when `issue`; a box wholly outside D is not
    /// issued. A group is committed either way.
    /// `STACKED`: D's map is 3-D and the box goes to matrix `out.matrix`.
    ///
    /// # Safety
    /// The whole warp calls it together, after writing its rows of the chunk.
    #[inline(always)]
    unsafe fn store<O: OutputElement, const STACKED: bool>(
        &self,
        chunk: u32,
        out: &Epilogue<O>,
        row: u32,
        column: u32,
        issue: bool,
    ) {
        let warp_row = row + GemmTile::STORE_BOX_ROWS * self.warp;
        let inside = issue && warp_row < out.m && column < out.n;
        unsafe { self.issue::<STACKED>(chunk, out.tensor_map, column, warp_row, out.matrix, inside) };
    }

    /// The symmetric GEMM's transposed store of chunk `chunk - 1` (at (`row`, `column`) of D): this warp's part of
    /// chunk `chunk`, just written by [`OutputElement::stage_slice_transposed`], holds the transpose of its 16 rows,
    /// which TMA stores at (`column`, `row` + 16·warp) of matrix `out.matrix` through the mirror map — when `issue`
    /// (a tile above the diagonal) and the box is not wholly outside D. A group is committed either way, so chunk
    /// numbers stay those of the buffers.
    ///
    /// # Safety
    /// As [`Staging::store`].
    #[inline(always)]
    unsafe fn store_mirror<O: OutputElement>(&self, chunk: u32, out: &Epilogue<O>, row: u32, column: u32, issue: bool) {
        let mirror_column = row + GemmTile::STORE_BOX_ROWS * self.warp;
        let inside = issue && mirror_column < out.n && column < out.m;
        unsafe { self.issue::<true>(chunk, out.mirror_map, mirror_column, column, out.matrix, inside) };
    }

    /// Has TMA store this warp's part of chunk `chunk` to (`x`, `y`) of `map` (of matrix `z` when `STACKED`) when
    /// `inside`, commits a group either way and waits until the previous chunk's buffer is read.
    ///
    /// # Safety
    /// As [`Staging::store`].
    #[inline(always)]
    unsafe fn issue<const STACKED: bool>(&self, chunk: u32, map: u64, x: u32, y: u32, z: u32, inside: bool) {
        // Each lane's writes must be visible to TMA (the async proxy) before the elected lane issues the store.
        smem::fence_proxy_async_shared();
        warp::sync();
        if self.issuer {
            if inside {
                let src = self.warp_part(chunk);
                if STACKED {
                    unsafe { tma::store_3d(map, x as i32, y as i32, z as i32, src) };
                } else {
                    unsafe { tma::store_2d(map, x as i32, y as i32, src) };
                }
            }
            // A group per chunk, empty where the box lies outside D, so that the wait below counts chunks.
            tma::commit_group();
        }
        // The next chunk overwrites the other buffer: the store that read it (the previous chunk's) must be done
        // reading first. Every lane executes the wait (only the issuing lane has bulk groups; the others return at
        // once), and the warp meets again so that no lane writes before it is done.
        tma::wait_group_read::<1>();
        warp::sync();
    }

    /// Makes the `O::BOX_COLUMNS`-square of chunk `chunk` whose first row is `square` symmetric: each element below
    /// its diagonal is overwritten by its partner above it (the symmetric GEMM's diagonal tiles,
    /// `oxtile_abi::symmetric::symmetric_square`). The partners lie in other warps' rows, so the warpgroup meets before
    /// (every warp has staged its rows) and after (the writes are visible to the TMA stores of every warp).
    ///
    /// # Safety
    /// The whole warpgroup calls it together, `thread` being the caller's index in it, after staging its rows of
    /// the chunk and before storing them.
    #[inline(always)]
    unsafe fn symmetrize<O: OutputElement>(&self, chunk: u32, square: u32, thread: u32) {
        let side = O::BOX_COLUMNS;
        let buffer = self.buffer(chunk);
        let wide = core::mem::size_of::<O::Bits>() == 4;
        let element = |row: u32, column: u32| {
            if wide {
                buffer + SW128_64X32_B32.crd2idx_u32(&[square + row, column])
            } else {
                buffer + SW128_64X64_B16.crd2idx_u32(&[square + row, column])
            }
        };
        barrier::named_sync_id(self.barrier, GemmTile::WARPGROUP_THREADS);
        // The addresses depend on the thread alone: computed here, not hoisted out of the tile loop, where they would
        // hold registers through every main loop (and spill the f32 kernels).
        let thread = opaque_here(thread);
        // A few elements of the square per thread and batch, loaded together and then stored (the upper elements
        // read and the lower ones written are different bytes): eight of 16 bits, four of 32, which is as many as the
        // f32 epilogue has registers for beside its accumulators without spilling.
        let batch_len = if wide { 4 } else { 8 };
        let batches = side * side / (GemmTile::WARPGROUP_THREADS * batch_len);
        for batch in 0..batches {
            let mut values = [0u32; 8];
            seq!(I in 0..8 {
                let index = (batch * batch_len + I) * GemmTile::WARPGROUP_THREADS + thread;
                let (row, column) = (index / side, index % side);
                if I < batch_len && row > column {
                    let from = element(column, row);
                    values[I] = unsafe { if wide { smem::load_u32(from) } else { smem::load_u16(from) as u32 } };
                }
            });
            seq!(I in 0..8 {
                let index = (batch * batch_len + I) * GemmTile::WARPGROUP_THREADS + thread;
                let (row, column) = (index / side, index % side);
                if I < batch_len && row > column {
                    let to = element(row, column);
                    unsafe { if wide { smem::store_u32(to, values[I]) } else { smem::store_u16(to, values[I] as u16) } };
                }
            });
        }
        smem::fence_proxy_async_shared();
        barrier::named_sync_id(self.barrier, GemmTile::WARPGROUP_THREADS);
    }

    /// Waits until TMA has read the warp's last chunks: shared memory must not be released while TMA may still read
    /// it. Their writes to global memory need no wait; they are done by the end of the grid, and waiting for them here
    /// would put a global write's latency on the block's exit.
    #[inline(always)]
    fn drain(&self) {
        tma::wait_group_read::<0>();
    }
}
