//! Hopper GEMM: D = alpha·A·B + beta·D with A (M×K) and B (K×N) both K-major (BLAS "TN": A row-major, B
//! column-major), bf16 or f16 in, f32 accumulate, same type out, D row-major.
//!
//! Data path, per persistent block (one per SM):
//! - warpgroup 0, the producer, drops to 40 registers; one thread walks the tiles and k-tiles, waits for a
//!   free stage of the shared-memory ring (`empty` barrier), and has TMA load the A and B boxes into it,
//!   128-byte swizzled, signalling the stage's `full` barrier with their byte count;
//! - warpgroups 1 and 2, the consumers, rise to 232 registers; each owns 64 rows of the tile, waits for
//!   `full`, issues four m64nNk16 wgmma from shared-memory descriptors, keeps one wgmma group in flight and
//!   frees the stage that the previous group read;
//! - after the last k-tile the consumers scale their fragments, convert them and store them to global memory,
//!   while the producer is already loading the next tile's stages.
//!
//! Configurations: 128×256 tiles (N = 256 per wgmma, 128 accumulators per thread) for large problems, 128×64
//! tiles with a deeper ring for problems with few large tiles. The `_c2` kernels run in clusters of two blocks
//! that share the B tile: each block's producer loads half of it and multicasts that half into both rings.

use oxtile_abi::{GEMM_SM90_128X64, GEMM_SM90_128X256, GemmTile};
use oxtile_layout::StaticLayout;
use seq_macro::seq;

use super::schedule::TileScheduler;
use crate::arch::mbarrier::{self, RingState};
use crate::arch::sreg::{block_idx_x, grid_dim_x, thread_idx_x};
use crate::arch::{barrier, cluster, convert, setmaxnreg, smem, tma, wgmma};

/// A 16-bit input type of the tensor cores and its conversions.
trait Element {
    fn to_f32(bits: u16) -> f32;
    fn pack2(lo: f32, hi: f32) -> u32;
}

struct Bf16;
struct F16;

impl Element for Bf16 {
    #[inline(always)]
    fn to_f32(bits: u16) -> f32 {
        convert::bf16_to_f32(bits)
    }
    #[inline(always)]
    fn pack2(lo: f32, hi: f32) -> u32 {
        convert::pack_bf16x2(lo, hi)
    }
}

impl Element for F16 {
    #[inline(always)]
    fn to_f32(bits: u16) -> f32 {
        convert::f16_to_f32(bits)
    }
    #[inline(always)]
    fn pack2(lo: f32, hi: f32) -> u32 {
        convert::pack_f16x2(lo, hi)
    }
}

/// One kernel configuration: the tile and ring (shared with the host through oxtile-abi), the element type,
/// and the wgmma of width `tile_n` whose accumulator fragment each consumer thread holds.
trait Config {
    const TILE: GemmTile;
    type Element: Element;
    /// `tile_n / 2` f32 per thread: the m64nNk16 accumulator fragment.
    type Fragment: Copy;
    const ZERO: Self::Fragment;
    /// One m64nNk16 wgmma, both operands K-major in shared memory.
    unsafe fn mma(acc: &mut Self::Fragment, desc_a: u64, desc_b: u64, accumulate: bool);
    /// Writes the fragment of the warpgroup whose 64 × N block starts at (`row0`, `col0`).
    unsafe fn store(acc: &Self::Fragment, out: &Output, row0: u32, col0: u32, thread: u32);
}

/// Implements [`Config`]. The store is unrolled by `seq!` so the fragment is only indexed by constants and stays
/// in registers; where each value lands is the layout algebra's wgmma accumulator TV layout
/// `((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))`, (thread, value) → column-major index in the 64×N block. Values
/// 2i and 2i + 1 are neighbours in a row, so they are stored as one pair.
macro_rules! config {
    ($name:ident, $tile:path, $element:ty, $mma:ident, fragment = $regs:literal, column_blocks = $blocks:literal) => {
        struct $name;

        impl $name {
            const ACCUMULATOR: StaticLayout<6> =
                StaticLayout::expect(StaticLayout::wgmma_accumulator_tv(8 * $blocks));
        }

        impl Config for $name {
            const TILE: GemmTile = $tile;
            type Element = $element;
            type Fragment = [f32; $regs];
            const ZERO: Self::Fragment = [0.0; $regs];

            #[inline(always)]
            unsafe fn mma(acc: &mut Self::Fragment, desc_a: u64, desc_b: u64, accumulate: bool) {
                unsafe { wgmma::$mma::<0, 0>(acc, desc_a, desc_b, accumulate) }
            }

            #[inline(always)]
            unsafe fn store(acc: &Self::Fragment, out: &Output, row0: u32, col0: u32, thread: u32) {
                seq!(PAIR in 0..$blocks {
                    seq!(HALF in 0..2 {
                        let index = Self::ACCUMULATOR.crd2idx_u32(&[thread, 4 * PAIR + 2 * HALF]);
                        let (row, col) = (index % 64, index / 64);
                        let (v0, v1) = (acc[4 * PAIR + 2 * HALF], acc[4 * PAIR + 2 * HALF + 1]);
                        unsafe { out.store_pair::<$element>(row0 + row, col0 + col, v0, v1) };
                    });
                });
            }
        }
    };
}

config!(Bf16Wide, GEMM_SM90_128X256, Bf16, mma_m64n256k16_f32_bf16, fragment = 128, column_blocks = 32);
config!(F16Wide, GEMM_SM90_128X256, F16, mma_m64n256k16_f32_f16, fragment = 128, column_blocks = 32);
config!(Bf16Narrow, GEMM_SM90_128X64, Bf16, mma_m64n64k16_f32_bf16, fragment = 32, column_blocks = 8);
config!(F16Narrow, GEMM_SM90_128X64, F16, mma_m64n64k16_f32_f16, fragment = 32, column_blocks = 8);

/// Where everything lives in dynamic shared memory: the (A, B) ring, then the full and empty barriers.
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
    fn empty(&self, stage: u32) -> u32 {
        self.full(self.tile.stages) + 8 * stage
    }
}

/// Defines one exported kernel over [`gemm_tn`]; the host pushes the arguments in this order.
macro_rules! gemm_kernel {
    ($(#[$doc:meta])* $name:ident, $config:ty, cluster = $cluster:literal) => {
        gemm_kernel!($(#[$doc])* $name, $config, cluster = $cluster, multicast = true);
    };
    ($(#[$doc:meta])* $name:ident, $config:ty, cluster = $cluster:literal, multicast = $multicast:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `tensor_map_a` / `tensor_map_b` are tensor maps over A (dims K, M) and B (dims K, N), 128-byte
        /// swizzled, with boxes of 64×`tile_m` and 64×(`tile_n` / cluster); `d` holds M×N elements row-major with
        /// leading dimension `ldd` (4-byte aligned base); launched with the configuration's threads and dynamic
        /// shared memory (oxtile-abi), clusters of (cluster, 1, 1) and a grid that is a multiple of the cluster.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(
            tensor_map_a: u64,
            tensor_map_b: u64,
            d: *mut u16,
            m: u32,
            n: u32,
            k: u32,
            ldd: u32,
            alpha: f32,
            beta: f32,
        ) {
            let out = Output { d, ldd, m, n, alpha, beta };
            unsafe { gemm_tn::<$config, $cluster, $multicast>(tensor_map_a, tensor_map_b, k, out) }
        }
        crate::launch_bounds!($name, max_threads = 384, min_blocks = 1);
    };
}

gemm_kernel!(
    /// bf16 GEMM, 128×256 tiles, one block per tile.
    gemm_bf16_tn_128x256_sm90, Bf16Wide, cluster = 1
);
gemm_kernel!(
    /// f16 GEMM, 128×256 tiles, one block per tile.
    gemm_f16_tn_128x256_sm90, F16Wide, cluster = 1
);
gemm_kernel!(
    /// bf16 GEMM, 128×256 tiles, clusters of two blocks on vertically adjacent tiles sharing B by multicast.
    gemm_bf16_tn_128x256_c2_sm90, Bf16Wide, cluster = 2
);
gemm_kernel!(
    /// f16 GEMM, 128×256 tiles, clusters of two blocks on vertically adjacent tiles sharing B by multicast.
    gemm_f16_tn_128x256_c2_sm90, F16Wide, cluster = 2
);
gemm_kernel!(
    /// Ablation of the cluster kernel: the same pairing and barriers, but each block loads all of B itself.
    gemm_bf16_tn_128x256_c2_nomc_sm90, Bf16Wide, cluster = 2, multicast = false
);
gemm_kernel!(
    /// bf16 GEMM, 128×64 tiles: four times as many blocks for problems with few wide tiles.
    gemm_bf16_tn_128x64_sm90, Bf16Narrow, cluster = 1
);
gemm_kernel!(
    /// f16 GEMM, 128×64 tiles: four times as many blocks for problems with few wide tiles.
    gemm_f16_tn_128x64_sm90, F16Narrow, cluster = 1
);

/// Bytes between the k16 slices of one swizzled 128-byte row.
const K_STEP_BYTES: u32 = 32;

/// The data path. With `CLUSTER` = 2 the blocks of a cluster compute tiles (2i, j) and (2i + 1, j): each loads
/// its own A box and half of the shared B box, multicast into both blocks; a stage is refilled only after the
/// consumers of both blocks released it, so every consumer arrives on the `empty` barrier of every block.
#[inline(always)]
unsafe fn gemm_tn<C: Config, const CLUSTER: u32, const MULTICAST: bool>(
    tensor_map_a: u64,
    tensor_map_b: u64,
    k: u32,
    out: Output,
) {
    let tile = C::TILE;
    let smem = SmemMap { base: smem::dynamic_smem_base(), tile };
    let warpgroup = thread_idx_x() / GemmTile::WARPGROUP_THREADS;
    let thread = thread_idx_x() % GemmTile::WARPGROUP_THREADS;
    let rank = if CLUSTER > 1 { cluster::block_rank() } else { 0 };
    if thread_idx_x() == 0 {
        for stage in 0..tile.stages {
            unsafe {
                mbarrier::init(smem.full(stage), 1);
                mbarrier::init(smem.empty(stage), tile.consumers * CLUSTER);
            }
        }
        mbarrier::fence_init();
    }
    // Peers multicast into this block's ring and arrive on its barriers: all must be initialized first.
    if CLUSTER > 1 {
        cluster::sync();
    } else {
        barrier::sync_threads();
    }

    // Work items are cluster tiles: CLUSTER vertically adjacent output tiles.
    let scheduler = TileScheduler::new(out.m, out.n, tile.tile_m * CLUSTER, tile.tile_n);
    let k_tiles = k.div_ceil(tile.tile_k);
    let (first, stride) = (block_idx_x() / CLUSTER, grid_dim_x() / CLUSTER);
    let b_share = if MULTICAST { CLUSTER } else { 1 };
    let b_rows_per_block = tile.tile_n / b_share;

    if warpgroup == 0 {
        setmaxnreg::dec::<40>();
        if thread == 0 {
            tma::prefetch_tensormap(tensor_map_a);
            tma::prefetch_tensormap(tensor_map_b);
            let mut ring = RingState::new(tile.stages);
            for work in scheduler.tiles_from(first, stride) {
                let a_row = ((work.m * CLUSTER + rank) * tile.tile_m) as i32;
                let b_rank = if MULTICAST { rank } else { 0 };
                let b_row = (work.n * tile.tile_n + b_rank * b_rows_per_block) as i32;
                for k_tile in 0..k_tiles {
                    let x = (k_tile * tile.tile_k) as i32;
                    let (full, stage) = (smem.full(ring.stage), ring.stage);
                    unsafe {
                        mbarrier::wait(smem.empty(stage), ring.phase ^ 1);
                        mbarrier::arrive_expect_tx(full, tile.stage_bytes());
                        tma::load_2d(smem.a(stage), tensor_map_a, x, a_row, full);
                        let b_part = smem.b(stage) + b_rank * b_rows_per_block * tile.tile_k * tile.element_bytes;
                        if CLUSTER > 1 && MULTICAST {
                            tma::load_2d_multicast(b_part, tensor_map_b, x, b_row, full, (1 << CLUSTER) - 1);
                        } else {
                            tma::load_2d(b_part, tensor_map_b, x, b_row, full);
                        }
                    }
                    ring.advance();
                }
            }
        }
    } else {
        setmaxnreg::inc::<232>();
        let consumer = warpgroup - 1;
        let a_rows_offset = consumer * tile.consumer_rows() * tile.tile_k * tile.element_bytes;
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
        let mut acc = C::ZERO;
        let mut ring = RingState::new(tile.stages);
        for work in scheduler.tiles_from(first, stride) {
            let mut reading: Option<u32> = None;
            for k_tile in 0..k_tiles {
                unsafe { mbarrier::wait(smem.full(ring.stage), ring.phase) };
                wgmma::fence();
                for k_step in 0..tile.tile_k / 16 {
                    let desc_a = wgmma::desc_k_major_sw128(smem.a(ring.stage) + a_rows_offset + k_step * K_STEP_BYTES);
                    let desc_b = wgmma::desc_k_major_sw128(smem.b(ring.stage) + k_step * K_STEP_BYTES);
                    unsafe { C::mma(&mut acc, desc_a, desc_b, k_tile > 0 || k_step > 0) };
                }
                wgmma::commit_group();
                // The group before this one has finished reading its stage: hand that stage back.
                wgmma::wait_group::<1>();
                if let Some(stage) = reading.replace(ring.stage) {
                    release(stage);
                }
                ring.advance();
            }
            wgmma::wait_group::<0>();
            if let Some(stage) = reading {
                release(stage);
            }
            let row0 = (work.m * CLUSTER + rank) * tile.tile_m + consumer * tile.consumer_rows();
            unsafe { C::store(&acc, &out, row0, work.n * tile.tile_n, thread) };
        }
    }
    // No block may leave while a peer can still multicast into it or arrive on its barriers.
    if CLUSTER > 1 {
        cluster::sync();
    }
}

/// Where and how the epilogue writes: D (row-major, leading dimension `ldd`) clipped to M×N,
/// D ← alpha·acc + beta·D.
struct Output {
    d: *mut u16,
    ldd: u32,
    m: u32,
    n: u32,
    alpha: f32,
    beta: f32,
}

impl Output {
    /// Writes columns `c` and `c + 1` of row `r` (whichever lie inside D).
    #[inline(always)]
    unsafe fn store_pair<E: Element>(&self, r: u32, c: u32, v0: f32, v1: f32) {
        if r >= self.m || c >= self.n {
            return;
        }
        let at = unsafe { self.d.add(r as usize * self.ldd as usize + c as usize) };
        let second = c + 1 < self.n;
        let (mut v0, mut v1) = (self.alpha * v0, self.alpha * v1);
        if self.beta != 0.0 {
            v0 += self.beta * E::to_f32(unsafe { *at });
            if second {
                v1 += self.beta * E::to_f32(unsafe { *at.add(1) });
            }
        }
        let packed = E::pack2(v0, v1);
        if second && self.ldd.is_multiple_of(2) {
            unsafe { *(at as *mut u32) = packed };
        } else {
            unsafe { *at = packed as u16 };
            if second {
                unsafe { *at.add(1) = (packed >> 16) as u16 };
            }
        }
    }
}
