//! The contract between the host crate and the device kernels, compiled into both, so a tile size or a
//! shared-memory budget cannot drift between the launch and the kernel.

#![no_std]

pub mod bwd_launch;
pub mod divisor;
pub mod dq_order;
mod gemm_table;
mod params;
pub mod raster;
pub mod skinny;
pub mod stream_k;
pub mod symmetric;

pub use gemm_table::{GemmConfig, GemmShare};
pub use params::{
    AttnBwdConvertParams, AttnBwdParams, AttnBwdPreprocessParams, AttnBwdSumPiecesParams, AttnParams, GemmParams,
    SkinnyGemmParams, StageRowsParams, TensorMapBytes,
};

/// How the math warpgroups of a Hopper GEMM share the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmSchedule {
    /// All consumers work on every tile, `tile_m / consumers` rows each, and run their epilogues together.
    Cooperative,
    /// Each consumer owns whole tiles, the consumers taking alternate tiles of the block; their main loops take
    /// turns on the tensor cores, so one's epilogue runs while the other's main loop does.
    PingPong,
}

/// Shape and resources of one warp-specialized Hopper GEMM kernel: a producer warpgroup feeding `consumers`
/// math warpgroups through a `stages`-deep shared-memory ring of (A, B) tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmTile {
    pub tile_m: u32,
    pub tile_n: u32,
    pub tile_k: u32,
    pub stages: u32,
    /// Math warpgroups.
    pub consumers: u32,
    /// Bytes per element of A and B.
    pub element_bytes: u32,
    pub schedule: GemmSchedule,
    /// Staging buffers per consumer warpgroup for the TMA-store epilogue (one 64-row, 128-byte-wide chunk of its
    /// block of D each, see [`GemmTile::staging_buffer_bytes`]); 0 where they do not fit beside the ring, and the
    /// epilogue always stores straight from registers.
    pub staging_buffers: u32,
}

impl GemmTile {
    pub const WARPGROUP_THREADS: u32 = 128;
    /// The largest block of a Hopper GEMM kernel: the producer and three consumers.
    pub const MAX_THREADS: u32 = 512;
    /// The registers the producer warpgroup keeps (`setmaxnreg.dec`): enough for its loop of TMA loads.
    pub const PRODUCER_REGISTERS: u32 = 40;
    /// M/N extent of the TMA box of an MN-major operand (A column-major, B row-major): one 128-byte swizzled row
    /// of 16-bit elements. Its k extent is `tile_k`, so an operand tile takes `tile_mn / MN_BOX` boxes.
    pub const MN_BOX: u32 = 64;
    /// Rows of one 128-byte swizzle atom (1024 bytes): a K-major box's rows come in whole atoms.
    pub const SWIZZLE_ATOM_ROWS: u32 = 8;
    /// Each mbarrier is 8 bytes; the ring has a full and an empty barrier per stage.
    const BARRIER_BYTES: u32 = 8;
    /// Bytes of one row of an epilogue staging buffer: one 128-byte swizzle row, the TMA box's inner extent
    /// (64 columns of a 16-bit D, 32 of an f32 one).
    pub const STAGING_ROW_BYTES: u32 = 128;
    /// Rows of an epilogue staging buffer: one wgmma accumulator fragment's 64 rows. A consumer that owns more rows
    /// (the ping-pong tile's 128) stages them 64 at a time.
    pub const STAGING_ROWS: u32 = 64;
    /// Rows of D's TMA store box: one warp's 16 rows of a wgmma accumulator fragment. Each warp stores its own rows
    /// of a staging buffer, so the warps of a consumer never wait for each other in the epilogue.
    pub const STORE_BOX_ROWS: u32 = 16;

    pub const fn threads(&self) -> u32 {
        Self::WARPGROUP_THREADS * (1 + self.consumers)
    }

    /// The kernel's launch bound (`.maxntid`): 384 for up to two consumers (the one-consumer tiles' 256 threads
    /// included, so they share the two-consumer register plan), 512 for three. It caps the registers at entry
    /// (65,536 over it, rounded down to 8: 168, or 128), which ptxas needs before it honours `setmaxnreg` at all.
    pub const fn launch_bound(&self) -> u32 {
        if self.threads() <= Self::TWO_CONSUMER_THREADS { Self::TWO_CONSUMER_THREADS } else { Self::MAX_THREADS }
    }

    /// The producer and two consumers: the launch bound of every tile of up to two consumers.
    const TWO_CONSUMER_THREADS: u32 = 3 * Self::WARPGROUP_THREADS;

    /// The registers each consumer thread rises to (`setmaxnreg.inc`): what the register file (65,536) leaves once
    /// the producer keeps [`GemmTile::PRODUCER_REGISTERS`], shared by the consumers the launch bound allows, rounded
    /// down to 8 — 232 with two consumers, 152 with three (against 96 accumulators of an m64n192 fragment).
    pub const fn consumer_registers(&self) -> u32 {
        let consumer_threads = self.launch_bound() - Self::WARPGROUP_THREADS;
        let left = 65_536 - Self::WARPGROUP_THREADS * Self::PRODUCER_REGISTERS;
        (left / consumer_threads) / 8 * 8
    }

    pub const fn smem_a_bytes(&self) -> u32 {
        self.tile_m * self.tile_k * self.element_bytes
    }

    pub const fn smem_b_bytes(&self) -> u32 {
        self.tile_n * self.tile_k * self.element_bytes
    }

    /// Bytes one stage receives from the tensor-memory accelerator: what the full barrier waits for.
    pub const fn stage_bytes(&self) -> u32 {
        self.smem_a_bytes() + self.smem_b_bytes()
    }

    /// Whether the kernel has the TMA-store epilogue (it still stores from registers when D's rows cannot be
    /// described by a tensor map).
    pub const fn stores_through_tma(&self) -> bool {
        self.staging_buffers > 0
    }

    /// One staging buffer: 64 rows × one 128-byte column chunk of D, the TMA store's box.
    pub const fn staging_buffer_bytes(&self) -> u32 {
        Self::STAGING_ROWS * Self::STAGING_ROW_BYTES
    }

    /// Offset of the epilogue staging buffers, after the operand ring: consumer `c`'s buffers are
    /// `staging_buffers` consecutive ones from `staging_offset() + c × staging_buffers × staging_buffer_bytes()`.
    pub const fn staging_offset(&self) -> u32 {
        self.stages * self.stage_bytes()
    }

    /// All consumers' staging buffers.
    pub const fn staging_bytes(&self) -> u32 {
        self.consumers * self.staging_buffers * self.staging_buffer_bytes()
    }

    /// Offset of the barriers, after the operand ring and the staging buffers.
    pub const fn barriers_offset(&self) -> u32 {
        self.staging_offset() + self.staging_bytes()
    }

    /// Dynamic shared memory the kernel needs: the ring, the staging buffers, then `2 × stages` mbarriers.
    pub const fn smem_bytes(&self) -> u32 {
        self.barriers_offset() + 2 * self.stages * Self::BARRIER_BYTES
    }

    /// Rows of a tile each consumer warpgroup computes (of all `tile_n` columns): its share, or all of them when it
    /// owns whole tiles.
    pub const fn consumer_rows(&self) -> u32 {
        match self.schedule {
            GemmSchedule::Cooperative => self.tile_m / self.consumers,
            GemmSchedule::PingPong => self.tile_m,
        }
    }

    /// Consumer warpgroups that compute parts of one tile (its rows split between them), so a stream-K partial of
    /// the tile is theirs together: every consumer of a cooperative tile, one of a ping-pong tile.
    pub const fn tile_sharers(&self) -> u32 {
        self.tile_m / self.consumer_rows()
    }

    /// Consumer warpgroups (of one block) that read each stage, and so arrive on its `empty` barrier.
    pub const fn stage_readers(&self) -> u32 {
        match self.schedule {
            GemmSchedule::Cooperative => self.consumers,
            GemmSchedule::PingPong => 1,
        }
    }
}

/// Hopper GEMM, 128×256×64 tiles, 4 stages, 2 consumer warpgroups of m64n256k16 wgmma each. Shared memory:
/// 4 × 48 KiB of ring + 2 consumers × 2 staging buffers × 8 KiB + 64 bytes of barriers = 229,440 of 232,448 bytes.
pub const GEMM_SM90_128X256: GemmTile = GemmTile {
    tile_m: 128,
    tile_n: 256,
    tile_k: 64,
    stages: 4,
    consumers: 2,
    element_bytes: 2,
    schedule: GemmSchedule::Cooperative,
    staging_buffers: 2,
};

/// Hopper GEMM, 128×192×64 tiles, 4 stages, 2 consumer warpgroups of m64n192k16 wgmma each: where its waves are
/// estimated to end before the 128×256 tiles' (`Variant::resolve` in the host crate), as cuBLAS picks 192- and
/// 216-column tiles for such shapes (docs/perf-notes.md, "Session 60"). Shared memory: 4 × 40 KiB of
/// ring + 2 consumers × 2 staging buffers × 8 KiB + 64 bytes of barriers = 196,672 bytes (a fifth stage would need
/// 237,648 of the 232,448).
pub const GEMM_SM90_128X192: GemmTile = GemmTile { tile_n: 192, ..GEMM_SM90_128X256 };

/// Hopper GEMM, 192×192×64 tiles, 3 stages, 3 consumer warpgroups of m64n192k16 wgmma each (512 threads): where its
/// waves are estimated to end before the 128-row tiles' (`Variant::resolve` in the host crate). 192-row tiles fit
/// shapes whose 128-row tiles leave a ragged last wave (8192×576: 129 tiles of 192×192 against 192 of 128×192 on
/// 132 SMs), and it computes 96 outputs per operand row it loads against the 128×256 tile's 85; cuBLAS runs 192×192
/// tiles there (docs/perf-notes.md, "Session 62"). Shared memory: 3 × 48 KiB of ring + 3 consumers × 2 staging
/// buffers × 8 KiB + 48 bytes of barriers = 196,656 bytes (a fourth stage would need 245,824).
pub const GEMM_SM90_192X192: GemmTile = GemmTile {
    tile_m: 192,
    tile_n: 192,
    tile_k: 64,
    stages: 3,
    consumers: 3,
    element_bytes: 2,
    schedule: GemmSchedule::Cooperative,
    staging_buffers: 2,
};

/// Hopper GEMM for problems with few 128×256 tiles: 128×64×64 tiles, 8 stages, one consumer warpgroup issuing two
/// m64n64k16 wgmma per k16 step for all 128 rows (cuBLAS's own design at these shapes). Two consumers of 64 rows each
/// measured 2–4% slower where this tile runs (docs/perf-notes.md, GEMM sm90 v17). Shared memory: 8 × 24 KiB of ring
/// + 2 × 8 KiB of staging + 128 bytes of barriers = 213,120 bytes.
pub const GEMM_SM90_128X64: GemmTile = GemmTile {
    tile_m: 128,
    tile_n: 64,
    tile_k: 64,
    stages: 8,
    consumers: 1,
    element_bytes: 2,
    schedule: GemmSchedule::Cooperative,
    staging_buffers: 2,
};

/// Hopper GEMM for problems of few rows (M ≤ 64, or few tiles of 128 rows), and the small ones the 128×64 tile had:
/// 64×128×64 tiles, 8 stages, one consumer warpgroup issuing m64n128k16 wgmma. Against the 128×64 tile, the same
/// ring (8 × 24 KiB) holds twice the B bytes in flight, the operand such problems stream from DRAM, and no half-empty
/// wgmma is issued where M ≤ 64. One consumer issues one wgmma as wide as the tile rather than two consumers
/// splitting the columns, which is faster (docs/perf-notes.md, GEMM sm90 v17). Shared memory as the 128×64 tile's:
/// 213,120 bytes.
pub const GEMM_SM90_64X128: GemmTile = GemmTile {
    tile_m: 64,
    tile_n: 128,
    tile_k: 64,
    stages: 8,
    consumers: 1,
    element_bytes: 2,
    schedule: GemmSchedule::Cooperative,
    staging_buffers: 2,
};

/// Hopper GEMM for few-row problems with few columns and deep K (DeepSeek-V3's N = 576 and 1536 projections at
/// K = 7168, M ≤ 128), split over K: 64×64×64 tiles, 12 stages, one consumer warpgroup issuing m64n64k16 wgmma.
/// Against the 64×128 tile it covers N in twice the tiles, so its split-K engages twice the SMs with pieces of the same
/// depth (64×576×7168: 72 blocks against 40), and each keeps 12 stages of 16 KiB in flight against 8 of 24 KiB;
/// cuBLAS splits such shapes over K on 64×32 and 64×8 tiles (docs/perf-notes.md, "Session 62"). Shared memory:
/// 12 × 16 KiB of ring + 2 × 8 KiB of staging + 192 bytes of barriers = 213,184 bytes.
pub const GEMM_SM90_64X64: GemmTile = GemmTile { tile_n: 64, stages: 12, ..GEMM_SM90_64X128 };

/// Hopper GEMM for problems of few rows that a 64-row tile would read B twice for (64 < M ≤ 256): 128×128×64 tiles, 6
/// stages, one consumer warpgroup issuing two m64n128k16 wgmma per k16 step (one consumer rather than two of 64 rows
/// each: as fast data-parallel, faster split by stream-K; docs/perf-notes.md, GEMM sm90 v17). Against the 64×128 tile
/// it reads each B element into shared memory once per 128 rows, and against the 128×64 one each A element once per 128
/// columns; its stream-K form splits the few tiles such problems have by k-tiles over every SM. Shared memory: 6 × 32
/// KiB of ring + 2 × 8 KiB of staging + 96 bytes of barriers = 213,088 bytes (a 7th stage would need 245,872).
pub const GEMM_SM90_128X128: GemmTile = GemmTile {
    tile_m: 128,
    tile_n: 128,
    tile_k: 64,
    stages: 6,
    consumers: 1,
    element_bytes: 2,
    schedule: GemmSchedule::Cooperative,
    staging_buffers: 2,
};

/// Hopper GEMM with ping-pong consumers: each of the 2 consumer warpgroups owns whole 128×128 tiles (two
/// m64n128k16 wgmma per k16 step, the same 128 accumulators per thread as the 128×256 kernel's 64 rows). While one
/// consumer runs its main loop the producer already fills stages with the next tile's k-tiles, so the other consumer
/// starts on loaded data when its turn comes. The ring is the one-consumer 128×128 tile's (6 stages), with staging for
/// each consumer (its 128 rows staged 64 at a time) rather than a 7th stage: an epilogue that stores D from registers
/// is so long that the last tile's, exposed, costs more than the hidden ones save (docs/perf-notes.md, GEMM sm90
/// v16).
pub const GEMM_SM90_128X128_PINGPONG: GemmTile =
    GemmTile { schedule: GemmSchedule::PingPong, consumers: 2, ..GEMM_SM90_128X128 };

/// Shared memory one block may use on sm_90 (227 KiB of the SM's 228 KiB).
pub const SM90_MAX_SMEM_PER_BLOCK: u32 = 227 * 1024;

const _: () = assert!(GEMM_SM90_128X256.smem_bytes() <= SM90_MAX_SMEM_PER_BLOCK);
const _: () = assert!(GEMM_SM90_128X192.smem_bytes() <= SM90_MAX_SMEM_PER_BLOCK);
const _: () = assert!(GEMM_SM90_192X192.smem_bytes() <= SM90_MAX_SMEM_PER_BLOCK);
const _: () = assert!(GEMM_SM90_128X64.smem_bytes() <= SM90_MAX_SMEM_PER_BLOCK);
const _: () = assert!(GEMM_SM90_64X128.smem_bytes() == GEMM_SM90_128X64.smem_bytes());
const _: () = assert!(GEMM_SM90_64X64.smem_bytes() == 12 * 16 * 1024 + 2 * 8 * 1024 + 192);
const _: () = assert!(GEMM_SM90_64X64.smem_bytes() <= SM90_MAX_SMEM_PER_BLOCK);
// The 64×64 tile: A and B one MN-major box each, stages on swizzle atoms.
const _: () = assert!(
    GEMM_SM90_64X64.tile_m == GemmTile::MN_BOX
        && GEMM_SM90_64X64.tile_n == GemmTile::MN_BOX
        && GEMM_SM90_64X64.stage_bytes().is_multiple_of(1024)
);
const _: () = assert!(GEMM_SM90_128X128_PINGPONG.smem_bytes() <= SM90_MAX_SMEM_PER_BLOCK);
const _: () = assert!(GEMM_SM90_128X128.smem_bytes() <= SM90_MAX_SMEM_PER_BLOCK);
// The budgets above, to the byte: a change to a tile or to the staging shows up here first.
const _: () = assert!(GEMM_SM90_128X256.smem_bytes() == 4 * 48 * 1024 + 2 * 2 * 8 * 1024 + 64);
const _: () = assert!(GEMM_SM90_128X192.smem_bytes() == 4 * 40 * 1024 + 2 * 2 * 8 * 1024 + 64);
const _: () = assert!(GEMM_SM90_192X192.smem_bytes() == 3 * 48 * 1024 + 3 * 2 * 8 * 1024 + 48);
// The register plans: two consumers at 232, three at 152; the producer and the consumers fill the register file.
const _: () = assert!(GEMM_SM90_128X256.consumer_registers() == 232 && GEMM_SM90_192X192.consumer_registers() == 152);
const _: () = assert!(GEMM_SM90_128X64.launch_bound() == 384 && GEMM_SM90_192X192.launch_bound() == 512);
const _: () = assert!(GEMM_SM90_128X64.smem_bytes() == 8 * 24 * 1024 + 2 * 8 * 1024 + 128);
const _: () = assert!(GEMM_SM90_128X128_PINGPONG.smem_bytes() == 6 * 32 * 1024 + 2 * 2 * 8 * 1024 + 96);
const _: () = assert!(GEMM_SM90_128X128.smem_bytes() == 6 * 32 * 1024 + 2 * 8 * 1024 + 96);
// The TMA-store epilogue's staging buffers are 64 rows (its swizzled staging layouts' height; a consumer's rows are
// whole buffers), start on 1024-byte swizzle atoms, and split the tile's columns into whole 128-byte chunks for
// every output type (64 columns of 16 bits, 32 of f32).
const _: () = {
    let tiles = [
        GEMM_SM90_128X256,
        GEMM_SM90_128X192,
        GEMM_SM90_192X192,
        GEMM_SM90_128X64,
        GEMM_SM90_64X128,
        GEMM_SM90_64X64,
        GEMM_SM90_128X128,
        GEMM_SM90_128X128_PINGPONG,
    ];
    let mut i = 0;
    while i < tiles.len() {
        let tile = tiles[i];
        assert!(tile.stores_through_tma() && tile.consumer_rows().is_multiple_of(GemmTile::STAGING_ROWS));
        assert!(tile.staging_offset().is_multiple_of(1024) && tile.staging_buffer_bytes().is_multiple_of(1024));
        assert!(tile.tile_n.is_multiple_of(GemmTile::STAGING_ROW_BYTES / 2));
        i += 1;
    }
};
// 128-byte swizzled tiles must start on 1024-byte boundaries.
const _: () = assert!(
    GEMM_SM90_128X256.smem_a_bytes().is_multiple_of(1024) && GEMM_SM90_128X256.smem_b_bytes().is_multiple_of(1024)
);
// One k-tile row of a K-major operand, and one MN-major box row, is one 128-byte swizzle atom row; MN-major
// operand tiles (and a cluster block's half of B) are whole boxes.
const _: () = assert!(GEMM_SM90_128X256.tile_k * GEMM_SM90_128X256.element_bytes == 128);
const _: () = assert!(GEMM_SM90_128X64.tile_k * GEMM_SM90_128X64.element_bytes == 128);
const _: () = assert!(GEMM_SM90_128X128_PINGPONG.tile_k * GEMM_SM90_128X128_PINGPONG.element_bytes == 128);
const _: () = assert!(GemmTile::MN_BOX * GEMM_SM90_128X256.element_bytes == 128);
const _: () = assert!(
    GEMM_SM90_128X256.tile_m.is_multiple_of(GemmTile::MN_BOX)
        && (GEMM_SM90_128X256.tile_n / 2).is_multiple_of(GemmTile::MN_BOX)
        && GEMM_SM90_128X256.consumer_rows().is_multiple_of(GemmTile::MN_BOX)
);
// The cooperative 128×128 tile: each consumer's rows and B whole boxes, stages on swizzle atoms, 128-byte k-tile rows.
const _: () = assert!(
    GEMM_SM90_128X128.consumer_rows().is_multiple_of(GemmTile::MN_BOX)
        && GEMM_SM90_128X128.tile_n.is_multiple_of(GemmTile::MN_BOX)
        && GEMM_SM90_128X128.tile_k * GEMM_SM90_128X128.element_bytes == 128
        && GEMM_SM90_128X128.smem_a_bytes().is_multiple_of(1024)
        && GEMM_SM90_128X128.stage_bytes().is_multiple_of(1024)
);
// The ping-pong tile in clusters of two shares B in halves, like the 128×256 one; its stages start on swizzle atoms.
const _: () = assert!(
    GEMM_SM90_128X128_PINGPONG.tile_m.is_multiple_of(GemmTile::MN_BOX)
        && (GEMM_SM90_128X128_PINGPONG.tile_n / 2).is_multiple_of(GemmTile::MN_BOX)
        && GEMM_SM90_128X128_PINGPONG.consumer_rows().is_multiple_of(GemmTile::MN_BOX)
        && GEMM_SM90_128X128_PINGPONG.stage_bytes().is_multiple_of(1024)
);
// The 64-row tile: A one MN-major box high, B whole boxes, 128-byte k-tile rows.
const _: () = assert!(
    GEMM_SM90_64X128.tile_m == GemmTile::MN_BOX
        && GEMM_SM90_64X128.tile_n.is_multiple_of(GemmTile::MN_BOX)
        && GEMM_SM90_64X128.tile_k * GEMM_SM90_64X128.element_bytes == 128
        && GEMM_SM90_64X128.smem_a_bytes().is_multiple_of(1024)
        && GEMM_SM90_64X128.stage_bytes().is_multiple_of(1024)
);
// The narrow tile in clusters of two shares A in halves: each a whole number of MN-major boxes.
const _: () = assert!(
    GEMM_SM90_128X64.tile_m.is_multiple_of(GemmTile::MN_BOX)
        && (GEMM_SM90_128X64.tile_m / 2).is_multiple_of(GemmTile::MN_BOX)
        && GEMM_SM90_128X64.tile_n.is_multiple_of(GemmTile::MN_BOX)
        && GEMM_SM90_128X64.consumer_rows().is_multiple_of(GemmTile::MN_BOX)
);

/// Shape and resources of one Hopper attention-forward kernel (gpu/kernels/attention/src/sm90.rs): a producer
/// warpgroup feeding `consumers` math warpgroups. Each block owns `tile_q` query rows of one (batch, head): Q
/// stays in shared memory, K and V tiles of `tile_kv` keys stream through a `stages`-deep ring. Operands are
/// stored as `head_dim / 64` column blocks of 128-byte swizzled rows (one TMA box each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttnTile {
    pub tile_q: u32,
    pub tile_kv: u32,
    pub head_dim: u32,
    pub stages: u32,
    /// Q tiles in shared memory: with two, the producer loads the next work item's Q while the consumers still
    /// compute the current one, so a consumer finds it there when its epilogue ends.
    pub q_buffers: u32,
    /// Math warpgroups; each owns `tile_q / consumers` query rows.
    pub consumers: u32,
    pub element_bytes: u32,
    /// The output is staged for its TMA store in the Q buffer of its own work item (each consumer warpgroup over its
    /// own rows, which only it reads) instead of a buffer of its own: where Q, K and V leave no room for one. The
    /// consumers then hand Q back only once the store has read it, after the epilogue rather than after the last
    /// Q·Kᵀ, and the producer loads the next item's first K and V tiles before its Q.
    pub o_in_q: bool,
    /// The consumers' main loop is two loops over one body: the key tiles every query row sees, then those with
    /// masked scores (the causal diagonal, the tile past seq_k). The first then holds no masking code to branch
    /// around. The kernel's `spec` and `nopingpong` ablations keep one loop.
    pub masked_loop: bool,
    /// The softmax's row sums come from the tensor cores instead of FADDs: P·V runs 8 columns wider
    /// (m64n{head_dim + 8}), its B operand's extra columns read ones from shared memory, so O's extra columns
    /// accumulate Σ P, rescaled with O. At head dim 64 one 2 KiB block after the V stages
    /// ([`AttnTile::smem_ones_offset`]), which each k-step's descriptor reaches by its leading byte offset; above,
    /// where that offset steps between V's own column blocks, each V stage has one more column block, of ones
    /// ([`AttnTile::smem_v_stage_bytes`]).
    pub mma_row_sums: bool,
}

impl AttnTile {
    pub const WARPGROUP_THREADS: u32 = 128;
    /// Elements of one 128-byte swizzled row: the TMA box width and the column block of the shared layouts.
    pub const BOX_COLS: u32 = 64;
    const BARRIER_BYTES: u32 = 8;

    pub const fn threads(&self) -> u32 {
        Self::WARPGROUP_THREADS * (1 + self.consumers)
    }

    /// 64-column blocks per row of Q, K and V.
    pub const fn column_blocks(&self) -> u32 {
        self.head_dim / Self::BOX_COLS
    }

    /// One Q tile.
    pub const fn smem_q_bytes(&self) -> u32 {
        self.tile_q * self.head_dim * self.element_bytes
    }

    pub const fn smem_q_offset(&self, buffer: u32) -> u32 {
        buffer * self.smem_q_bytes()
    }

    /// One K (or V) tile.
    pub const fn smem_kv_bytes(&self) -> u32 {
        self.tile_kv * self.head_dim * self.element_bytes
    }

    pub const fn smem_k_offset(&self, stage: u32) -> u32 {
        self.smem_q_offset(self.q_buffers) + stage * self.smem_kv_bytes()
    }

    /// Where P·V's row-sum columns read their ones ([`AttnTile::mma_row_sums`]): in each V stage, as one more column
    /// block after V's own, where V has more than one (the descriptor's leading byte offset steps between them);
    /// otherwise in the one block after the V stages ([`AttnTile::smem_ones_offset`]).
    pub const fn ones_in_v_stages(&self) -> bool {
        self.mma_row_sums && self.head_dim > Self::BOX_COLS
    }

    /// One V stage: the V tile, and its column block of ones ([`AttnTile::ones_in_v_stages`]).
    pub const fn smem_v_stage_bytes(&self) -> u32 {
        self.smem_kv_bytes() + if self.ones_in_v_stages() { self.tile_kv * 128 } else { 0 }
    }

    pub const fn smem_v_offset(&self, stage: u32) -> u32 {
        self.smem_k_offset(self.stages) + stage * self.smem_v_stage_bytes()
    }

    /// The output tile of the item whose Q is in `q_buffer`, staged for the TMA store: same layout as Q. A buffer of
    /// its own after V, or that Q buffer itself ([`AttnTile::o_in_q`]).
    pub const fn smem_o_offset(&self, q_buffer: u32) -> u32 {
        if self.o_in_q { self.smem_q_offset(q_buffer) } else { self.smem_v_offset(self.stages) }
    }

    /// Whether a consumer stores a work item's output only under the next item's first Q·Kᵀ, so that the epilogue
    /// overlaps the tensor cores' work: where the next item's Q has a buffer of its own to arrive in while the
    /// current one is computed (with one, the next Q could load only after this item's last Q·Kᵀ, and the next first
    /// Q·Kᵀ would wait for it), and the output one of its own (the first item stages zeros there, with no item before
    /// it).
    pub const fn overlaps_items(&self) -> bool {
        self.q_buffers > 1 && !self.o_in_q
    }

    /// Bytes of the output's own staging buffer: none when it is staged in Q's.
    pub const fn smem_o_bytes(&self) -> u32 {
        if self.o_in_q { 0 } else { self.smem_q_bytes() }
    }

    /// The block of ones that P·V's extra columns read ([`AttnTile::mma_row_sums`]): after every V stage, so that
    /// the descriptors' leading byte offset reaches it from each of them, on a swizzle-atom boundary.
    pub const fn smem_ones_offset(&self) -> u32 {
        self.smem_v_offset(self.stages) + self.smem_o_bytes()
    }

    /// Bytes of the block of ones: one k16 slice of an MN-major 128-byte-swizzled operand (16 k rows of 128 bytes),
    /// the most an m64n{..}k16 wgmma reads of one 64-column block; none without [`AttnTile::mma_row_sums`].
    pub const fn smem_ones_bytes(&self) -> u32 {
        if self.mma_row_sums && !self.ones_in_v_stages() { 16 * 128 } else { 0 }
    }

    /// Barriers after the operands: Q full and Q empty per Q buffer, then K full, K empty, V full, V empty per
    /// stage.
    pub const fn barriers_offset(&self) -> u32 {
        self.smem_ones_offset() + self.smem_ones_bytes()
    }

    /// The work item the producer publishes to the consumers with the Q of `buffer`, after the barriers.
    pub const fn work_slot_offset(&self, buffer: u32) -> u32 {
        self.barriers_offset() + (2 * self.q_buffers + 4 * self.stages) * Self::BARRIER_BYTES + 4 * buffer
    }

    pub const fn smem_bytes(&self) -> u32 {
        self.work_slot_offset(self.q_buffers)
    }

    /// Query rows each consumer warpgroup computes.
    pub const fn consumer_rows(&self) -> u32 {
        self.tile_q / self.consumers
    }
}

/// Hopper attention forward, head dim 128: 128 query rows × 128 keys per step, 2 stages of K and V, one Q tile. A
/// second one (224 KB of shared memory in all) measured no faster: an item here runs twice as long as at head dim
/// 64, so the wait for its Q at the start weighs half as much. The masked key tiles get a main loop of their own
/// (+1.0–2.4% over one loop on 8,16,4096,128 and 32,16,1024,128 rows; docs/perf-notes.md, session 32). The row sums
/// by the tensor cores (each V stage 48 KiB with its column block of ones; 224 KiB in all).
pub const ATTN_SM90_D128: AttnTile = AttnTile {
    tile_q: 128,
    tile_kv: 128,
    head_dim: 128,
    stages: 2,
    q_buffers: 1,
    consumers: 2,
    element_bytes: 2,
    o_in_q: false,
    masked_loop: true,
    mma_row_sums: true,
};

/// Hopper attention forward, head dim 64: as [`ATTN_SM90_D128`] with a deeper ring and two Q tiles (work items are
/// short at this head dim: the next item's Q arrives while the current one is computed). One main loop: the
/// masked tiles' own loop measured 2.5–5% slower here (docs/perf-notes.md, session 32). The row sums by the tensor
/// cores: here the softmax's issue slots, not the tensor cores, bound the loop.
pub const ATTN_SM90_D64: AttnTile = AttnTile {
    tile_q: 128,
    tile_kv: 128,
    head_dim: 64,
    stages: 4,
    q_buffers: 2,
    consumers: 2,
    element_bytes: 2,
    o_in_q: false,
    masked_loop: false,
    mma_row_sums: true,
};

/// Hopper attention forward, head dim 256 (FlashAttention-3's tile for it): 128 query rows × 80 keys per step, 2
/// stages. A consumer's O fragment is 128 f32 per thread (m64n256), so S stays narrow: m64n80, 40 f32, and P·V takes
/// 5 k16 steps. Shared memory: Q 64 KiB + K and V 2 × 2 × 40 KiB = 224 KiB of the 227 KiB, no room for a 64 KiB
/// output buffer, so O is staged in Q's ([`AttnTile::o_in_q`]). One main loop: with a loop of its own for the masked
/// tiles, memcheck corrupts O (its instrumentation of the K hand-back made while P·V is in flight), and the form that
/// avoids it gained only within noise (docs/perf-notes.md, sessions 33 and 34).
pub const ATTN_SM90_D256: AttnTile = AttnTile {
    tile_q: 128,
    tile_kv: 80,
    head_dim: 256,
    stages: 2,
    q_buffers: 1,
    consumers: 2,
    element_bytes: 2,
    o_in_q: true,
    masked_loop: false,
    mma_row_sums: false,
};

/// Every Hopper attention tile, for the checks below and the host's lookups.
pub const ATTN_SM90_TILES: [AttnTile; 3] = [ATTN_SM90_D64, ATTN_SM90_D128, ATTN_SM90_D256];

// The budgets, to the byte (operands, own O staging, 8-byte barriers, 4-byte work slots).
const _: () =
    assert!(ATTN_SM90_D128.smem_bytes() == 32 * 1024 + 2 * 32 * 1024 + 2 * 48 * 1024 + 32 * 1024 + 10 * 8 + 4);
const _: () =
    assert!(ATTN_SM90_D64.smem_bytes() == 2 * 16 * 1024 + 8 * 16 * 1024 + 16 * 1024 + 2 * 1024 + 20 * 8 + 2 * 4);
const _: () = assert!(ATTN_SM90_D256.smem_bytes() == 64 * 1024 + 4 * 40 * 1024 + 10 * 8 + 4);
const _: () = {
    let mut i = 0;
    while i < ATTN_SM90_TILES.len() {
        let tile = ATTN_SM90_TILES[i];
        assert!(tile.smem_bytes() <= SM90_MAX_SMEM_PER_BLOCK);
        // Every operand tile, and each 64-column block of one, starts on a 1024-byte swizzle-atom boundary: whole
        // 8-row atoms of 128-byte rows.
        assert!(tile.tile_q.is_multiple_of(8) && tile.tile_kv.is_multiple_of(8));
        assert!(tile.smem_q_bytes().is_multiple_of(1024) && tile.smem_kv_bytes().is_multiple_of(1024));
        assert!(tile.head_dim.is_multiple_of(AttnTile::BOX_COLS));
        // wgmma: S is m64n{tile_kv} (n a multiple of 8 up to 256) and P·V takes k16 steps of keys; O is
        // m64n{head_dim}; each consumer owns whole 64-row fragments.
        assert!(tile.tile_kv.is_multiple_of(16) && tile.tile_kv <= 256 && tile.head_dim <= 256);
        assert!(tile.consumer_rows() == 64 && tile.threads() == 384);
        // TMA boxes are at most 256 rows.
        assert!(tile.tile_q <= 256 && tile.tile_kv <= 256);
        // The output's staging takes the whole tile's rows, as Q's.
        assert!(tile.smem_o_offset(0).is_multiple_of(1024));
        // The row sums' block of ones: P·V at most m64n{64 + 8} (one 64-column block of V), the block on a swizzle
        // atom after every V stage, each k-step of each stage reaching it by a leading byte offset the descriptor's
        // 14-bit field (in 16-byte units) holds.
        if tile.smem_ones_bytes() > 0 {
            assert!(tile.head_dim == AttnTile::BOX_COLS);
            let ones = tile.smem_ones_offset();
            assert!(ones.is_multiple_of(1024));
            assert!(ones >= tile.smem_v_offset(tile.stages) && ones - tile.smem_v_offset(0) < 1 << 18);
        }
        // Above head dim 64 the ones are V's last column block: P·V at most m64n{192 + 8}.
        assert!(!tile.mma_row_sums || tile.head_dim <= 192);
        i += 1;
    }
};

/// Shape and resources of one Hopper attention-backward kernel (gpu/kernels/attention_backward/src/backward_sm90.rs): a
/// producer warpgroup feeding `consumers` math warpgroups. Each block owns `tile_kv` keys of one (batch, key/value
/// head), which its consumers split as `split` says ([`BwdSplit`]); K and V stay in shared memory while query
/// tiles of `tile_q` rows (Q, dO and their rows' log-sum-exp and dO·O) stream through a `stages`-deep ring, for
/// every query head of the key/value head. Operands are `head_dim / 64` column blocks of 128-byte swizzled rows
/// (one TMA box each).
///
/// Shared memory, in order: K, V, then per stage Q and dO, then the score tiles ([`Self::score_tiles`], each
/// [`Self::consumer_keys`] keys × `tile_q` queries, 16-bit, each 64 queries a 128-byte swizzled tile with a row
/// per key: a set of one dSᵀ per consumer per stage where the consumers split the keys, the shared Pᵀ and dSᵀ
/// where they split the head dim), then the dQ staging slots ([`Self::dq_slots`], each consumer's own, each
/// [`Self::dq_pieces`] pieces of [`Self::DQ_PIECE_BYTES`]: 64 queries × 64 columns of f32 each, the consumer's
/// share of the tile's pieces), then per stage the `tile_q` log2-unit LSE and the `tile_q` dO·O (f32), then the
/// barriers: K/V full, then Q full and Q empty per stage, then dQ full and dQ empty per staging slot (handed to the
/// dQ writer warp and back), then K/V empty, then the convert queue's full and empty per slot
/// ([`Self::CONVERT_SLOTS`]), then the queue's entries ([`Self::smem_convert_offset`]; the `_staggered` kernels'
/// dQ writer hands tiles to their converter warps through it).
///
/// The f32 dQ accumulator in global memory is tiled to match, whatever the tile: per (batch, head) its padded
/// rows ([`Self::padded_rows`]) in units of [`Self::DQ_UNIT_ROWS`] rows, each unit `head_dim / 64` runs of one
/// piece (one per column block), each run a staging piece's bytes: 64 rows of 64 f32, whose 32-byte units are
/// permuted within each row (gpu/device/src/smem_layout.rs, `SW32_64X64_B32`). A unit starts where it would in a
/// row-major [rows, head_dim] array, so the accumulator's size is unchanged, and a query tile's pieces, in
/// staging order, are one contiguous run of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttnBwdTile {
    pub tile_q: u32,
    pub tile_kv: u32,
    pub head_dim: u32,
    pub stages: u32,
    pub consumers: u32,
    pub element_bytes: u32,
    pub split: BwdSplit,
    /// Where the consumers split the keys: each issues its dQ piece's products before dK's, in a group of their
    /// own, and stages the piece for the writer warp while dK's products run (but in the staggered deterministic
    /// kernels, whose writer frees a staging slot only at the tile's turn: waiting for one with dK in flight would
    /// hold the stage back from the producer). Otherwise dK and the piece are one group, staged after both.
    pub dq_under_dk: bool,
}

/// How the consumer warpgroups of an attention-backward block share its work. Either way each consumer's keys are
/// the M (64) of every wgmma it issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BwdSplit {
    /// Each consumer owns `tile_kv / consumers` keys, all their head-dim columns of dK and dV, and the scores of
    /// its keys against the whole query tile (kept in registers as the A operands of dV and dK).
    Keys,
    /// The consumers share the block's keys: each owns `head_dim / consumers` columns of dK, dV and dQ, and the
    /// scores of the keys against `tile_q / consumers` of the tile's queries, which go to the shared Pᵀ and dSᵀ
    /// tiles that every consumer's dV, dK and dQ products read (FlashAttention-3's arrangement at head dim 256,
    /// where one consumer's dK and dV of 64 keys would take 256 registers per thread).
    HeadDim,
}

impl AttnBwdTile {
    pub const WARPGROUP_THREADS: u32 = 128;
    /// Elements of one 128-byte swizzled row: the TMA box width and the column block of the shared layouts.
    pub const BOX_COLS: u32 = 64;
    /// Rows of one unit of the dQ accumulator's layout, and of one flag (the deterministic mode's semaphore, or a
    /// claim): whole query tiles of every tile are whole units.
    pub const DQ_UNIT_ROWS: u32 = 64;
    /// One staging piece, and one run of the dQ accumulator: 64 queries × 64 columns of head dim, f32.
    pub const DQ_PIECE_BYTES: u32 = Self::DQ_UNIT_ROWS * Self::BOX_COLS * 4;
    const BARRIER_BYTES: u32 = 8;
    /// Slots of the queue through which the dQ writer hands each query tile whose last addition it made to the
    /// converter warps (the producer warpgroup's last two), which write the tile's dQ in the input type.
    pub const CONVERT_SLOTS: u32 = 2;
    /// One entry of that queue: the 64-row unit of the tile's first row (over every (batch, head) pair's padded
    /// rows), a u32.
    pub const CONVERT_ENTRY_BYTES: u32 = 4;
    /// The converter warps' threads.
    pub const CONVERTER_THREADS: u32 = 64;

    pub const fn threads(&self) -> u32 {
        Self::WARPGROUP_THREADS * (1 + self.consumers)
    }

    /// 64-column blocks per row of Q, K, V and dO.
    pub const fn column_blocks(&self) -> u32 {
        self.head_dim / Self::BOX_COLS
    }

    /// Keys each consumer warpgroup works on (the M of its wgmma: 64).
    pub const fn consumer_keys(&self) -> u32 {
        match self.split {
            BwdSplit::Keys => self.tile_kv / self.consumers,
            BwdSplit::HeadDim => self.tile_kv,
        }
    }

    /// Queries of each tile whose scores (Sᵀ, dPᵀ) each consumer computes.
    pub const fn consumer_queries(&self) -> u32 {
        match self.split {
            BwdSplit::Keys => self.tile_q,
            BwdSplit::HeadDim => self.tile_q / self.consumers,
        }
    }

    /// Head-dim columns of dK, dV and dQ each consumer computes.
    pub const fn consumer_columns(&self) -> u32 {
        match self.split {
            BwdSplit::Keys => self.head_dim,
            BwdSplit::HeadDim => self.head_dim / self.consumers,
        }
    }

    /// The first column block (of 64 head-dim columns) of consumer `consumer`'s dK, dV and dQ.
    pub const fn consumer_first_block(&self, consumer: u32) -> u32 {
        match self.split {
            BwdSplit::Keys => 0,
            BwdSplit::HeadDim => consumer * self.consumer_columns() / Self::BOX_COLS,
        }
    }

    /// 16-bit score tiles in shared memory: a set of one dSᵀ per consumer per stage (split keys: a consumer stores
    /// a tile's while the other may still read the previous one's), or the shared Pᵀ (0) and dSᵀ (1).
    pub const fn score_tiles(&self) -> u32 {
        match self.split {
            BwdSplit::Keys => self.stages * self.consumers,
            BwdSplit::HeadDim => 2,
        }
    }

    /// One Q (or dO) tile.
    pub const fn smem_q_bytes(&self) -> u32 {
        self.tile_q * self.head_dim * self.element_bytes
    }

    /// The K (or V) tile.
    pub const fn smem_kv_bytes(&self) -> u32 {
        self.tile_kv * self.head_dim * self.element_bytes
    }

    pub const fn smem_k_offset(&self) -> u32 {
        0
    }

    pub const fn smem_v_offset(&self) -> u32 {
        self.smem_kv_bytes()
    }

    pub const fn smem_q_offset(&self, stage: u32) -> u32 {
        2 * self.smem_kv_bytes() + stage * self.smem_q_bytes()
    }

    pub const fn smem_do_offset(&self, stage: u32) -> u32 {
        self.smem_q_offset(self.stages) + stage * self.smem_q_bytes()
    }

    /// One score tile: [`Self::consumer_keys`] keys × `tile_q` queries, 16-bit.
    pub const fn smem_ds_bytes(&self) -> u32 {
        self.consumer_keys() * self.tile_q * self.element_bytes
    }

    /// Score tile `index` (see [`Self::score_tiles`]).
    pub const fn smem_ds_offset(&self, index: u32) -> u32 {
        self.smem_do_offset(self.stages) + index * self.smem_ds_bytes()
    }

    /// Column blocks of each consumer's dK and dV.
    pub const fn consumer_blocks(&self) -> u32 {
        self.consumer_columns() / Self::BOX_COLS
    }

    /// dQ pieces of a query tile: one per 64-row unit and column block, unit-major (the accumulator's runs).
    pub const fn tile_dq_pieces(&self) -> u32 {
        self.tile_q / Self::DQ_UNIT_ROWS * self.column_blocks()
    }

    /// Whether the consumers, which split the keys for the scores, dK and dV, split the query tile's dQ pieces
    /// instead (every key-split tile does; the table's check): each computes whole pieces (64 queries × 64
    /// columns, [`Self::dq_run`]) over all the block's keys, from every consumer's dSᵀ (FlashAttention-3's
    /// arrangement: at head dim 128 a column block each, at head dim 64 a 64-row unit each). Each element of a
    /// tile's dQ then has one partial per block, for one barrier among the consumers per tile (every dSᵀ stored
    /// before any product reads them; a set of score tiles per stage, so that a consumer stores a tile's while
    /// another may still read the previous one's). It takes the consumers sharing the pieces evenly and a ring of at
    /// least two stages.
    pub const fn splits_dq_pieces(&self) -> bool {
        matches!(self.split, BwdSplit::Keys) && self.tile_dq_pieces().is_multiple_of(self.consumers) && self.stages >= 2
    }

    /// Keys a consumer's dQ product runs over (its k extent).
    pub const fn dq_keys(&self) -> u32 {
        if self.splits_dq_pieces() { self.tile_kv } else { self.consumer_keys() }
    }

    /// dQ staging pieces per consumer, 64 × 64 f32 products: its share of the tile's where the consumers split the
    /// keys ([`Self::splits_dq_pieces`]), or where they split the head dim one per 64-row unit of the query tile
    /// and column block of the consumer's columns, unit-major (the accumulator's order).
    pub const fn dq_pieces(&self) -> u32 {
        if self.splits_dq_pieces() {
            self.tile_dq_pieces() / self.consumers
        } else {
            self.tile_q / Self::DQ_UNIT_ROWS * self.consumer_blocks()
        }
    }

    /// Staging slots per consumer: two where the consumers split dQ's pieces (a slot is one piece, and a consumer
    /// stages a tile while the writer still reads its previous one), one where they split the head dim (its two
    /// pieces a slot; no room for a second).
    pub const fn dq_slots_per_consumer(&self) -> u32 {
        if self.splits_dq_pieces() { 2 } else { 1 }
    }

    /// Staging slots in all.
    pub const fn dq_slots(&self) -> u32 {
        self.consumers * self.dq_slots_per_consumer()
    }

    /// Piece `piece` of staging slot `slot` (its run of the accumulator: [`Self::dq_run`]).
    pub const fn smem_dq_offset(&self, slot: u32, piece: u32) -> u32 {
        self.smem_ds_offset(self.score_tiles()) + (slot * self.dq_pieces() + piece) * Self::DQ_PIECE_BYTES
    }

    /// The run of a query tile's dQ accumulator (in units of [`Self::DQ_PIECE_BYTES`] from the tile's first row)
    /// that consumer `consumer` adds its staging piece `piece` to, and so the piece's 64-row unit (`run /
    /// column_blocks`) and column block (`run % column_blocks`): where the consumers split the pieces, its share's
    /// `piece`th; where they split the head dim, the piece's unit's runs, one per column block of the head dim,
    /// then the consumer's column block.
    pub const fn dq_run(&self, consumer: u32, piece: u32) -> u32 {
        if self.splits_dq_pieces() {
            return consumer * self.dq_pieces() + piece;
        }
        let (unit, block) = (piece / self.consumer_blocks(), piece % self.consumer_blocks());
        unit * self.column_blocks() + self.consumer_first_block(consumer) + block
    }

    /// Rows of the backward's per-row workspaces (log2-unit LSE, dO·O, the f32 dQ accumulator) per (batch, head):
    /// seq_q rounded up to whole query tiles, so every tile the kernel reads or adds to is in bounds.
    pub const fn padded_rows(&self, seq_q: u32) -> u32 {
        seq_q.div_ceil(self.tile_q) * self.tile_q
    }

    /// A stage's row statistics: `tile_q` f32.
    pub const fn smem_rows_bytes(&self) -> u32 {
        self.tile_q * 4
    }

    /// The log2-unit LSE of a stage's query rows.
    pub const fn smem_lse_offset(&self, stage: u32) -> u32 {
        self.smem_dq_offset(self.dq_slots(), 0) + stage * self.smem_rows_bytes()
    }

    /// dO·O of a stage's query rows.
    pub const fn smem_dsum_offset(&self, stage: u32) -> u32 {
        self.smem_lse_offset(self.stages) + stage * self.smem_rows_bytes()
    }

    /// Barriers: K/V full, then Q full and Q empty per stage, then dQ full and dQ empty per slot.
    pub const fn barriers_offset(&self) -> u32 {
        self.smem_dsum_offset(self.stages)
    }

    /// How many barriers there are: K/V full, Q full and empty per stage, dQ full and empty per slot
    /// ([`Self::dq_slots`]), then K/V empty (a block walking several key blocks reloads K and V once the consumers
    /// are done with them), then the convert queue's full and empty per slot ([`Self::CONVERT_SLOTS`]).
    pub const fn barriers(&self) -> u32 {
        2 + 2 * self.stages + 2 * self.dq_slots() + 2 * Self::CONVERT_SLOTS
    }

    /// The convert queue's entries ([`Self::CONVERT_ENTRY_BYTES`] each), after the barriers.
    pub const fn smem_convert_offset(&self) -> u32 {
        self.barriers_offset() + self.barriers() * Self::BARRIER_BYTES
    }

    pub const fn smem_bytes(&self) -> u32 {
        self.smem_convert_offset() + Self::CONVERT_SLOTS * Self::CONVERT_ENTRY_BYTES
    }

    /// Bytes one stage receives: Q, dO, LSE and dO·O of a query tile.
    pub const fn stage_bytes(&self) -> u32 {
        2 * self.smem_q_bytes() + 2 * self.smem_rows_bytes()
    }

    /// Rows each converter thread converts per query tile (8 columns a row: two 16-byte loads of the accumulator
    /// from the L2 and one store, one L2 round trip a row): 16 at head dims 64 and 128, 32 at 256.
    pub const fn convert_steps(&self) -> u32 {
        self.tile_q * self.head_dim / AttnBwdRows::COLUMNS_PER_THREAD / Self::CONVERTER_THREADS
    }

    /// Whether a `_staggered` kernel at full attention converts each dQ tile at its last turn, given the visits
    /// (key blocks) a query tile takes; else the conversion kernel does after it. Not at head dim 64, where it
    /// measured slower than the conversion kernel (docs/perf-notes.md, sessions 56 and 57). Elsewhere a model, not
    /// a measurement, of when the converter warps keep up: a converter step is about one L2 round trip (~0.3 µs),
    /// a tile's visit about 3 µs of tensor work (five products of 10.5 MFLOP at a GPU's share of ~470 TFLOP/s),
    /// and the converter warps keep up with half their time to spare where `steps · 0.3 ≤ 0.5 · visits · 3` µs,
    /// i.e. `5 · visits ≥ steps`: 4 visits at head dim 128, 7 at 256. Below it (seq_k up to ~384, e.g. ViT's 197
    /// or 257 tokens) they would hold the writer back, and with it the consumers.
    pub const fn converts_in_kernel(&self, visits_per_tile: u32) -> bool {
        self.head_dim >= 128 && 5 * visits_per_tile >= self.convert_steps()
    }
}

/// The attention backward's two row kernels (gpu/kernels/attention_backward): the preprocessing, over
/// every padded query row, and the dQ conversion, over the real ones. Each thread takes
/// [`Self::COLUMNS_PER_THREAD`] adjacent head-dim columns of one row (16 bytes of a 16-bit tensor, 32 of the f32
/// accumulator: one vector access each), so a row is [`Self::row_threads`] adjacent lanes of one warp (8, 16 or 32);
/// blocks of [`Self::THREADS`]. The grid's x covers the rows of one (batch, head), its y the (batch, head) pairs, up
/// to [`Self::MAX_GRID_Y`] of them, each block looping over the pairs `grid.y` apart: the per-element index
/// arithmetic is shifts and masks (head dims are powers of two), with one division per block and pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttnBwdRows {
    /// seq_q (the conversion) or the padded rows (the preprocessing) of one (batch, head).
    pub rows: u32,
    pub head_dim: u32,
    /// batch · heads_q.
    pub batch_heads: u64,
}

impl AttnBwdRows {
    pub const THREADS: u32 = 256;
    pub const COLUMNS_PER_THREAD: u32 = 8;
    /// The grid's y dimension is 16-bit.
    pub const MAX_GRID_Y: u32 = 65535;

    /// Threads per row: a power of two that divides 32 for the backward's head dims (64, 128, 256).
    pub const fn row_threads(head_dim: u32) -> u32 {
        head_dim / Self::COLUMNS_PER_THREAD
    }

    /// Whether the x index of every thread (rows · row threads) fits the kernels' 32-bit arithmetic.
    pub const fn fits_u32(&self) -> bool {
        (self.rows as u64) * (Self::row_threads(self.head_dim) as u64) <= u32::MAX as u64
    }

    /// (x, y, 1) blocks. For the padded rows (a multiple of 64) x is exact: 64 rows of at least 8 threads are whole
    /// blocks, so no thread of the preprocessing falls outside its rows (its row sums shuffle across whole warps).
    pub const fn grid(&self) -> (u32, u32, u32) {
        let threads = self.rows as u64 * Self::row_threads(self.head_dim) as u64;
        let x = threads.div_ceil(Self::THREADS as u64);
        let y = if self.batch_heads < Self::MAX_GRID_Y as u64 { self.batch_heads } else { Self::MAX_GRID_Y as u64 };
        (x as u32, y as u32, 1)
    }
}

// A row's threads are adjacent lanes of one warp, and 64 rows fill whole blocks, for every backward head dim.
const _: () = {
    let mut i = 0;
    while i < ATTN_BWD_SM90_TILES.len() {
        let row_threads = AttnBwdRows::row_threads(ATTN_BWD_SM90_TILES[i].head_dim);
        assert!(row_threads.is_power_of_two() && 32 % row_threads == 0);
        assert!((AttnBwdTile::DQ_UNIT_ROWS * row_threads).is_multiple_of(AttnBwdRows::THREADS));
        i += 1;
    }
};

/// Hopper attention backward, head dim 128: 128 keys per block (64 per consumer warpgroup) against query tiles of
/// 64 rows, 2 stages; each consumer's dQ piece staged while its dK products run (+3.5–3.9% over one group,
/// docs/perf-notes.md, session 50).
pub const ATTN_BWD_SM90_D128: AttnBwdTile = AttnBwdTile {
    tile_q: 64,
    tile_kv: 128,
    head_dim: 128,
    stages: 2,
    consumers: 2,
    element_bytes: 2,
    split: BwdSplit::Keys,
    dq_under_dk: true,
};

/// Hopper attention backward, head dim 64: 128 keys per block against query tiles of 128 rows (FlashAttention-3's
/// tile there: Sᵀ and dPᵀ are m64n128, and a query tile's fixed costs are spread over twice the products), 2 stages
/// (a third does not fit). dK and the dQ piece in one group: the piece under dK measured 0.96–1.00 here.
pub const ATTN_BWD_SM90_D64: AttnBwdTile = AttnBwdTile {
    tile_q: 128,
    tile_kv: 128,
    head_dim: 64,
    stages: 2,
    consumers: 2,
    element_bytes: 2,
    split: BwdSplit::Keys,
    dq_under_dk: false,
};

/// Hopper attention backward, head dim 256: 64 keys per block shared by both consumer warpgroups, each owning 128
/// columns of dK, dV and dQ and the scores of 32 of the tile's 64 queries (Sᵀ, dPᵀ m64n32); one stage, as
/// FlashAttention-3 has at this head dim: K and V (64 KB), a stage's Q and dO (64 KB), the shared Pᵀ and dSᵀ
/// (16 KB) and four dQ staging pieces (64 KB) leave no room for a second stage (another 64 KB).
pub const ATTN_BWD_SM90_D256: AttnBwdTile = AttnBwdTile {
    tile_q: 64,
    tile_kv: 64,
    head_dim: 256,
    stages: 1,
    consumers: 2,
    element_bytes: 2,
    split: BwdSplit::HeadDim,
    dq_under_dk: false,
};

/// Every Hopper attention-backward tile.
pub const ATTN_BWD_SM90_TILES: [AttnBwdTile; 3] = [ATTN_BWD_SM90_D128, ATTN_BWD_SM90_D64, ATTN_BWD_SM90_D256];

// Every operand tile starts on a 1024-byte swizzle-atom boundary; each consumer's keys are the M of one m64 wgmma
// and the score tiles' rows are one 128-byte swizzled row per 64 queries.
const _: () = {
    let mut i = 0;
    while i < ATTN_BWD_SM90_TILES.len() {
        let t = ATTN_BWD_SM90_TILES[i];
        assert!(t.smem_bytes() <= SM90_MAX_SMEM_PER_BLOCK);
        assert!(t.smem_kv_bytes().is_multiple_of(1024) && t.smem_q_bytes().is_multiple_of(1024));
        assert!(t.smem_ds_bytes().is_multiple_of(1024) && t.smem_ds_offset(0).is_multiple_of(1024));
        // Query tiles of one or two 64-row units (the kernel's score fragments are m64n32, m64n64 or m64n128).
        assert!(t.tile_q == AttnBwdTile::DQ_UNIT_ROWS || t.tile_q == 2 * AttnBwdTile::DQ_UNIT_ROWS);
        assert!(t.consumer_keys() == 64 && t.smem_rows_bytes().is_multiple_of(16));
        assert!(t.threads() == 384);
        // Each consumer's columns are whole column blocks, and its queries whole 8-row swizzle atoms of Q and dO
        // (the B operands of its scores start at its first query) and of the score tiles' 16-byte units.
        assert!(t.consumer_columns().is_multiple_of(AttnBwdTile::BOX_COLS));
        assert!(t.consumer_queries().is_multiple_of(8) && t.consumer_queries() * t.consumers >= t.tile_q);
        // Consumers that split the head dim share one 64-query block of the score tiles (their queries are
        // columns of one 128-byte row per key), and one 64-row unit of dQ per tile; consumers that split the keys
        // split dQ's pieces (the kernel has no other path for them).
        assert!(matches!(t.split, BwdSplit::Keys) || t.tile_q == AttnBwdTile::DQ_UNIT_ROWS);
        assert!(matches!(t.split, BwdSplit::HeadDim) || t.splits_dq_pieces());
        // dQ staging: the bulk reduce-add wants 16-byte aligned runs of a multiple of 16 bytes; the consumers
        // stage at most two pieces (one while the next one's product runs).
        assert!(t.smem_dq_offset(0, 0).is_multiple_of(1024) && AttnBwdTile::DQ_PIECE_BYTES.is_multiple_of(1024));
        assert!(t.dq_pieces() >= 1 && t.dq_pieces() <= 2);
        // Where the consumers split dQ's pieces the kernel issues one piece per consumer and tile
        // (`Warpgroup::issue_dq_piece`; its second-piece path is the key split's).
        assert!(!t.splits_dq_pieces() || t.dq_pieces() == 1);
        // The dQ piece under dK is the key split's order (`consume`; `consume_columns` has one group).
        assert!(!t.dq_under_dk || matches!(t.split, BwdSplit::Keys));
        i += 1;
    }
};

// The in-kernel dQ conversion's thresholds as `AttnBwdTile::converts_in_kernel` documents them: from 4 key blocks at
// head dim 128, from 7 at 256, never at 64.
const _: () = {
    assert!(ATTN_BWD_SM90_D128.converts_in_kernel(4) && !ATTN_BWD_SM90_D128.converts_in_kernel(3));
    assert!(ATTN_BWD_SM90_D256.converts_in_kernel(7) && !ATTN_BWD_SM90_D256.converts_in_kernel(6));
    assert!(!ATTN_BWD_SM90_D64.converts_in_kernel(1 << 20));
};

/// Rescaling statistics the attention kernels add up when given a counter buffer: per (warp, key tile after the
/// first), whether the warp rescaled its output, and how many such warp-tiles there were; and per (thread, key
/// tile after the first), whether the thread had to recompute its scores because a row maximum grew past
/// [`ATTN_SPECULATION_LIMIT_LOG2`].
pub const ATTN_STATS_RESCALED: usize = 0;
pub const ATTN_STATS_WARP_TILES: usize = 1;
pub const ATTN_STATS_RECOMPUTED: usize = 2;
pub const ATTN_STATS_LEN: usize = 3;

/// The attention kernels exponentiate a key tile's scores against the row maximum already applied, before the
/// tile's own maximum is known; this is the largest growth of a row maximum (log2 units) those terms absorb:
/// they stay ≤ 2^120, so a thread's 32-term partial sums stay finite in f32. Beyond it the thread recomputes
/// its scores and takes the exact path.
pub const ATTN_SPECULATION_LIMIT_LOG2: f32 = 120.0;

/// Lazy rescaling threshold in log2 units (FA4's choice): the output and running sum are rescaled only when a
/// row's maximum grew by more than this since the maximum last applied, so unnormalized terms stay ≤ 2^8.
pub const ATTN_RESCALE_THRESHOLD_LOG2: f32 = 8.0;

/// The benchmark's stream hold (gpu/kernels/support/src/bench.rs): the kernel spins until the host writes a nonzero
/// release word, or until its timeout passes, then writes one of these to its status word, which the host set to
/// [`HOLD_PENDING`] before the launch.
pub const HOLD_PENDING: u32 = 0;
/// The host's release arrived within the timeout: everything queued behind the hold ran back to back.
pub const HOLD_RELEASED: u32 = 1;
/// The timeout passed first: the stream ran on while the host was still queueing.
pub const HOLD_TIMED_OUT: u32 = 2;

/// The swizzled-transpose kernels of gpu/kernels/support/src/layout_demo.rs: each block of `TRANSPOSE_THREADS` threads
/// moves one `TRANSPOSE_TILE`×`TRANSPOSE_TILE` tile of u16 through `TRANSPOSE_SMEM_BYTES` of dynamic shared memory.
pub const TRANSPOSE_TILE: u32 = 64;
pub const TRANSPOSE_THREADS: u32 = 256;
pub const TRANSPOSE_SMEM_BYTES: u32 = TRANSPOSE_TILE * TRANSPOSE_TILE * 2;

// Every thread moves the same number of elements.
const _: () = assert!((TRANSPOSE_TILE * TRANSPOSE_TILE).is_multiple_of(TRANSPOSE_THREADS));

/// The software exp2 of the attention softmax (gpu/device/src/softmax/exp2.rs): 2^x = 2^⌊x⌋ · p(x − ⌊x⌋) with
/// p(f) = 1 + f·(c1 + f·(c2 + f·c3)) ≈ 2^f on [0, 1], evaluated by three FMAs; ⌊x⌋ is added into the exponent
/// bits. The host mirrors it bit for bit (host/src/exp2.rs), so both read these constants.
pub mod exp2 {
    /// c1, c2, c3 of p(f) = 1 + c1·f + c2·f² + c3·f³ (the constant term is exactly 1, so p is exact at integers:
    /// exp2(0) = 1 and the row maximum of a softmax contributes exactly 1).
    ///
    /// Derived here, not copied: a Remez exchange in float64 for the minimax *relative* error of
    /// 1 + c1·f + c2·f² + c3·f³ against 2^f on [0, 1] (four reference points, equioscillation), then each
    /// coefficient rounded to the nearest f32. The exchange is re-run by host/src/exp2.rs's tests, which also
    /// check the levelled error. Max relative error of the f32 Horner evaluation over every fraction the kernel
    /// can see (all multiples of 2^-24 in [0, 1]): 8.57e-5 ≈ 2^-13.5, against the 2^-10 the attention kernel
    /// needs (bf16 keeps 8 significant bits; its rounding is 2^-9). Degree 2 levels at 2.05e-3 ≈ 2^-8.9, too much.
    pub const POLY: [f32; 3] = [f32::from_bits(0x3f31_f32c), f32::from_bits(0x3e69_1bc5), f32::from_bits(0x3d9d_d553)];

    /// The levelled relative error of [`POLY`] in float64 (before rounding the coefficients to f32).
    pub const POLY_MAX_REL_ERROR: f64 = 8.56e-5;

    /// Inputs are clamped to at least this: x ≤ −127 (and −∞) gives exactly 0. Results for x in (−127, −126)
    /// are below f32's normal range and come out as approximate subnormals (absolute error < 2^-126);
    /// `ex2.approx.ftz` flushes them to 0.
    pub const MIN_INPUT: f32 = -127.0;

    /// Values each thread of the throughput kernels keeps in registers, and the kernels' block size.
    pub const THROUGHPUT_VALUES: u32 = 32;
    pub const THROUGHPUT_THREADS: u32 = 256;

    /// The value `value` of thread `thread` of a throughput kernel starts from, in [−3.9375, 0]; it depends on
    /// the thread's parity only.
    #[inline(always)]
    pub fn throughput_start(thread: u32, value: u32) -> f32 {
        -(((thread.wrapping_mul(THROUGHPUT_VALUES).wrapping_add(value)) % 64) as f32) * 0.0625
    }
}
