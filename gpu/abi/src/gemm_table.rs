//! The table of Hopper GEMM configurations: one row per configuration, from which the device crate instantiates its
//! kernels and the host crate builds its registry and `Variant` (a key into this table). Adding a configuration of an
//! existing tile is one row here; a new tile shape also needs its `GemmTile` constant and, in gpu/kernels, the wgmma
//! and fragment of its `config!`.

use crate::GemmTile;

/// Which operand tile the blocks of a cluster share by TMA multicast, each loading its half: none (every block loads
/// both operands whole; all single blocks, and the multicast ablation), B (the blocks stacked along M, computing tiles
/// (2i, j) and (2i + 1, j)), or A (side by side along N: tiles (i, 2j) and (i, 2j + 1)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmShare {
    None,
    A,
    B,
}

/// One row of the table as both crates read it: the tile (shape, ring, consumers and their schedule), the cluster,
/// the operand its blocks share, and whether the last partial wave is split by k-tiles (stream-K).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmConfig {
    pub tile: GemmTile,
    /// Blocks per cluster (1 or 2).
    pub cluster: u32,
    pub share: GemmShare,
    /// The hybrid data-parallel + stream-K schedule ([`crate::stream_k`]).
    pub stream_k: bool,
    /// The symmetric GEMM ([`for_each_gemm_sm90_symmetric!`]): the upper-triangle tiles of a stack of square outputs
    /// ([`crate::raster::TriangularScheduler`]), each off-diagonal one stored again transposed.
    pub symmetric: bool,
}

impl GemmConfig {
    /// Threads per block: the producer warpgroup and the consumers.
    pub const fn threads(&self) -> u32 {
        self.tile.threads()
    }

    /// Whether the kernel of this row with `output_bytes`-byte outputs reduces split-K tiles with all of their pieces
    /// together ([`crate::stream_k::Role::Share`]): stream-K rows without clusters and with 16-bit outputs. The
    /// symmetric epilogue stores each tile twice, and the cluster and f32-output kernels had no registers to spare
    /// for the reduction (they spilled): those reduce through the stream-K ranges' one reducer.
    pub const fn shares_split_k(&self, output_bytes: u32) -> bool {
        self.stream_k && !self.symmetric && self.cluster == 1 && output_bytes == 2
    }

    /// Blocks that share one A tile by multicast (side by side along N).
    pub const fn a_sharers(&self) -> u32 {
        if matches!(self.share, GemmShare::A) { self.cluster } else { 1 }
    }

    /// Blocks that share one B tile by multicast (stacked along M).
    pub const fn b_sharers(&self) -> u32 {
        if matches!(self.share, GemmShare::B) { self.cluster } else { 1 }
    }

    /// The cluster's blocks along M and along N: side by side where they share A, else stacked.
    pub const fn cluster_shape(&self) -> (u32, u32) {
        if matches!(self.share, GemmShare::A) { (1, self.cluster) } else { (self.cluster, 1) }
    }

    /// What the kernels assume of every row, checked where each crate expands the table: a block alone shares
    /// nothing; stream-K in clusters runs cooperative tiles sharing B (both blocks load every unit's k-tiles); the
    /// launch bound covers the block; and a shared tile splits into whole 128-byte swizzle atoms (8 rows) per block.
    /// What the shares ask of an MN-major operand is [`GemmConfig::check_layout`]'s.
    pub const fn check(&self) {
        assert!(self.cluster == 1 || self.cluster == 2);
        assert!(self.cluster > 1 || matches!(self.share, GemmShare::None));
        let cooperative = matches!(self.tile.schedule, crate::GemmSchedule::Cooperative);
        assert!(!self.stream_k || self.cluster == 1 || (cooperative && matches!(self.share, GemmShare::B)));
        assert!(self.threads() <= self.tile.launch_bound());
        // A K-major share starts a box of its own rows in shared memory, on a 1024-byte swizzle atom.
        assert!((self.tile.tile_n / self.b_sharers()).is_multiple_of(GemmTile::SWIZZLE_ATOM_ROWS));
        assert!((self.tile.tile_m / self.a_sharers()).is_multiple_of(GemmTile::SWIZZLE_ATOM_ROWS));
        // The symmetric GEMM: square tiles (a tile's transpose is a tile of the same order), one block each (the
        // cluster pairings share an operand between tiles the triangle does not pair).
        assert!(
            !self.symmetric
                || (self.tile.tile_m == self.tile.tile_n && self.cluster == 1 && self.tile.stores_through_tma())
        );
    }

    /// What a row's shares ask of a layout, checked for each layout a kernel of the row is instantiated in (A and B
    /// MN-major or not): a block's share of an MN-major operand tile its cluster shares is whole 64-index boxes. Such
    /// an operand is loaded in boxes of 64 M/N indices, and a share of 96 (128×192 tiles sharing B) would load one
    /// box and wait on the bytes of one and a half, forever (docs/perf-notes.md, "Session 60"); a K-major share is
    /// one box of its own rows, so 96 rows of K-major A are one box.
    pub const fn check_layout(&self, a_mn_major: bool, b_mn_major: bool) {
        assert!(
            !b_mn_major || (self.tile.tile_n / self.b_sharers()).is_multiple_of(GemmTile::MN_BOX),
            "a block's share of a shared MN-major B tile is not whole 64-index boxes"
        );
        assert!(
            !a_mn_major || (self.tile.tile_m / self.a_sharers()).is_multiple_of(GemmTile::MN_BOX),
            "a block's share of a shared MN-major A tile is not whole 64-index boxes"
        );
    }
}

/// Calls `$callback! { rows }` with the table of Hopper GEMM configurations, one row per configuration:
///
/// `Variant { label: "…", kernel: "…", tile: GEMM_SM90_…, cluster: 1|2, share: none|a|b, stream_k: bool,
/// tune: bool, types: [input -> output, …], layouts: [tn|tt|nt|nn, …] }`
///
/// - `Variant`: the host's `Variant` (a key into this table), documented by the row's doc comment;
/// - `label`: the short name tables and benchmark contenders use (`oxtile-` + it);
/// - `kernel`: the part of the kernel names that says the configuration:
///   `gemm_{input}[_{output}out]_{layout}_{kernel}_sm90` ([`gemm_sm90_kernel_name!`]);
/// - `tile`, `cluster`, `share`, `stream_k`: the [`GemmConfig`];
/// - `tune`: whether `oxtile tune gemm` times it (an ablation is not a candidate);
/// - `types` × `layouts`: the kernels instantiated, every input → output pair in every layout (BLAS letters, A then
///   B: t = row-major, n = column-major; D row-major).
///
/// Every kernel adds to the build's ptxas time and to the cubin, so a configuration is instantiated only for the types
/// and layouts something runs (docs/perf-notes.md weighs the build cost).
#[macro_export]
macro_rules! for_each_gemm_sm90 {
    ($callback:path $(, $arg:tt)*) => {
        $callback! {
            $($arg)*
            /// 128×256 tiles, one block each: large problems.
            Wide { label: "wide", kernel: "128x256", tile: GEMM_SM90_128X256, cluster: 1, share: none, stream_k: false, tune: true, types: [bf16 -> bf16, bf16 -> f32, f16 -> f16, f16 -> f32], layouts: [tn, tt, nt, nn] }
            /// 128×256 tiles in clusters of two blocks on vertically adjacent tiles, B shared by TMA multicast.
            WideCluster2 { label: "wide-c2", kernel: "128x256_c2", tile: GEMM_SM90_128X256, cluster: 2, share: b, stream_k: false, tune: true, types: [bf16 -> bf16, bf16 -> f32, f16 -> f16, f16 -> f32], layouts: [tn, tt, nt, nn] }
            /// Ablation of `WideCluster2` (bf16, layout tn only): the same clusters and barriers, each block loading
            /// all of B itself — separates the cost of multicast from the cost of coupling the blocks.
            WideCluster2Unshared { label: "wide-c2-unshared", kernel: "128x256_c2_nomc", tile: GEMM_SM90_128X256, cluster: 2, share: none, stream_k: false, tune: false, types: [bf16 -> bf16], layouts: [tn] }
            /// 128×192 tiles, one block each: problems under two waves of 128×256 tiles where their waves are
            /// estimated to end sooner than those tiles', with or without stream-K (`Variant::resolve`). bf16 → bf16
            /// only.
            Wide192 { label: "wide-192", kernel: "128x192", tile: GEMM_SM90_128X192, cluster: 1, share: none, stream_k: false, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
            /// `Wide192`'s tiles with the hybrid data-parallel + stream-K schedule of `StreamK`: problems whose 128×192
            /// tiles leave the last wave idle for long and fit N better than 128×256 tiles (N = 576: three 192-column
            /// tiles against 2¼ wide ones; `Variant::resolve`). bf16 → bf16 only.
            Wide192StreamK { label: "wide-192-sk", kernel: "128x192_sk", tile: GEMM_SM90_128X192, cluster: 1, share: none, stream_k: true, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
            /// 192×192 tiles, one block of three consumers each: problems whose 192×192 tiles fill their waves where the
            /// 128-row tiles do not (`Variant::resolve`), such as 8192×576×7168 (129 tiles, one wave). bf16 → bf16
            /// only; its stream-K measured no faster than the 128-row tiles' (docs/perf-notes.md, "Session 63").
            Square192 { label: "square-192", kernel: "192x192", tile: GEMM_SM90_192X192, cluster: 1, share: none, stream_k: false, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
            /// `Square192` in clusters of two blocks side by side along N, the A tile shared by TMA multicast (each
            /// block loads 96 of its rows: K-major A only, so layouts tn and tt). bf16 → bf16 only; a tune candidate,
            /// not yet `Variant::Auto`'s choice.
            Square192Cluster2 { label: "square-192-c2", kernel: "192x192_c2", tile: GEMM_SM90_192X192, cluster: 2, share: a, stream_k: false, tune: true, types: [bf16 -> bf16], layouts: [tn, tt] }
            /// 128×64 tiles with an 8-stage ring: problems with too few 128×256 tiles to fill the GPU.
            Narrow { label: "narrow", kernel: "128x64", tile: GEMM_SM90_128X64, cluster: 1, share: none, stream_k: false, tune: true, types: [bf16 -> bf16, bf16 -> f32, f16 -> f16, f16 -> f32], layouts: [tn, tt, nt, nn] }
            /// `Narrow` in clusters of two blocks side by side along N, the A tile shared by TMA multicast (a third
            /// less L2 → SM traffic per k-tile: 16 KiB instead of 24). bf16 → bf16 only; a tune candidate: 7–9% slower
            /// than `Narrow` where the heuristic picks that (docs/perf-notes.md, GEMM sm90 v8).
            NarrowCluster2 { label: "narrow-c2", kernel: "128x64_c2", tile: GEMM_SM90_128X64, cluster: 2, share: a, stream_k: false, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
            /// 64×128 tiles, one consumer issuing m64n128k16, with the narrow tile's 8-stage ring: problems of few
            /// rows, where the 128×64 tile's ring holds more A than the B streamed from DRAM (or M ≤ 64 leaves half of
            /// its rows empty), and the narrow tile's problems (`Variant::resolve`).
            Flat { label: "flat", kernel: "64x128", tile: GEMM_SM90_64X128, cluster: 1, share: none, stream_k: false, tune: true, types: [bf16 -> bf16, bf16 -> f32, f16 -> f16, f16 -> f32], layouts: [tn, tt, nt, nn] }
            /// `Flat`'s tiles with the hybrid data-parallel + stream-K schedule of `StreamK`: problems of few rows
            /// whose 64×128 tiles leave SMs idle for long (128×4096×14336: 64 tiles on 132 SMs, each 224 k-tiles
            /// deep). bf16 → bf16 only.
            FlatStreamK { label: "flat-sk", kernel: "64x128_sk", tile: GEMM_SM90_64X128, cluster: 1, share: none, stream_k: true, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
            /// 64×64 tiles, one consumer issuing m64n64k16, a 12-stage ring: the data-parallel row of
            /// `FlatNarrowStreamK` (what Auto runs for it where it keeps off stream-K), and a tune candidate. bf16 →
            /// bf16 only.
            FlatNarrow { label: "flat-64", kernel: "64x64", tile: GEMM_SM90_64X64, cluster: 1, share: none, stream_k: false, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
            /// `FlatNarrow`'s tiles split over K: few-row problems with few columns and deep K, where the 64×128
            /// tiles' split-K engages too few SMs (64×576×7168: 5 column tiles); `Variant::Auto` takes it wherever
            /// these tiles are at most half as many as SMs and K is deep, ahead of the 64×128 tiles and the skinny
            /// kernel (`Variant::splits_narrow_tiles`). bf16 → bf16 only.
            FlatNarrowStreamK { label: "flat-64-sk", kernel: "64x64_sk", tile: GEMM_SM90_64X64, cluster: 1, share: none, stream_k: true, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
            /// 128×128 tiles, one consumer issuing two m64n128k16 per k16 step: problems of few rows (64 < M ≤ 256)
            /// where the 64×128 tile reads B twice and the 128×64 tile reads A once per 64 columns. bf16 → bf16 only.
            Square { label: "square", kernel: "128x128", tile: GEMM_SM90_128X128, cluster: 1, share: none, stream_k: false, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
            /// `Square` in clusters of two blocks on vertically adjacent tiles, B shared by TMA multicast: the two row
            /// tiles of 128 < M ≤ 256 fetch each B k-tile once. bf16 → bf16 only.
            SquareCluster2 { label: "square-c2", kernel: "128x128_c2", tile: GEMM_SM90_128X128, cluster: 2, share: b, stream_k: false, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
            /// `Square`'s tiles with the hybrid data-parallel + stream-K schedule of `StreamK`: few-row problems with
            /// fewer 128×128 tiles than SMs (128×8192×8192: 64 tiles of 128 k-tiles). bf16 → bf16 only; a tune
            /// candidate, not `Variant::Auto`'s choice: one wave of 64×128 tiles is faster (`Variant::resolve`).
            SquareStreamK { label: "square-sk", kernel: "128x128_sk", tile: GEMM_SM90_128X128, cluster: 1, share: none, stream_k: true, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
            /// 128×128 tiles, each computed by one consumer warpgroup while the other runs its epilogue (ping-pong),
            /// so the tensor cores keep working through epilogues. Same-type outputs only.
            PingPong { label: "pingpong", kernel: "128x128_pp", tile: GEMM_SM90_128X128_PINGPONG, cluster: 1, share: none, stream_k: false, tune: true, types: [bf16 -> bf16, f16 -> f16], layouts: [tn, tt, nt, nn] }
            /// `PingPong` in clusters of two blocks on vertically adjacent tiles, B shared by TMA multicast. bf16 →
            /// bf16 only.
            PingPongCluster2 { label: "pingpong-c2", kernel: "128x128_pp_c2", tile: GEMM_SM90_128X128_PINGPONG, cluster: 2, share: b, stream_k: false, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
            /// 128×256 tiles, one block each, with the last partial wave (the tail) stream-K: its k-tiles are split
            /// evenly between all blocks, several blocks summing a tile through a workspace (`oxtile_abi::stream_k`),
            /// so no SM idles through the tail. bf16 and f16 to their own type, bf16 to f32.
            StreamK { label: "streamk", kernel: "128x256_sk", tile: GEMM_SM90_128X256, cluster: 1, share: none, stream_k: true, tune: true, types: [bf16 -> bf16, bf16 -> f32, f16 -> f16], layouts: [tn, tt, nt, nn] }
            /// `StreamK` over clusters of two blocks on vertically adjacent tiles, B shared by TMA multicast (the
            /// `WideCluster2` pairing): whole waves of cluster tiles data-parallel, the tail split by k-tiles between
            /// the clusters. bf16 → bf16 only.
            StreamKCluster2 { label: "streamk-c2", kernel: "128x256_sk_c2", tile: GEMM_SM90_128X256, cluster: 2, share: b, stream_k: true, tune: true, types: [bf16 -> bf16], layouts: [tn, tt, nt, nn] }
        }
    };
}

/// Calls `$callback! { rows }` with the table of Hopper *symmetric* GEMM configurations, in the grammar of
/// [`for_each_gemm_sm90!`]: D = alpha·A·B + beta·C for an n×n D that the caller promises is symmetric (A·B and C
/// both), stacked `batch` deep. Each block computes the tiles (i, j) with i ≤ j of the triangular order
/// ([`crate::raster::TriangularScheduler`]) and stores each at (i, j) and, for i < j, transposed at (j, i) (a second
/// TMA store of the tile staged transposed by `stmatrix.trans`). Layouts: `tn` (A row-major, B column-major: X·Xᵀ
/// from one row-major X, both operands K-major, and A·B of two symmetric matrices) and `nt` (Xᵀ·X from one
/// row-major X: A = Xᵀ column-major, B = X row-major, both MN-major). Square tiles, one block each
/// (`GemmConfig::check`).
#[macro_export]
macro_rules! for_each_gemm_sm90_symmetric {
    ($callback:path $(, $arg:tt)*) => {
        $callback! {
            $($arg)*
            /// The ping-pong 128×128 tile: each consumer's epilogue, twice as long here (the tile and its transpose),
            /// runs under the other's main loop. 16-bit outputs (the ping-pong tile's).
            SymmetricPingPong { label: "sym-pingpong", kernel: "128x128_pp_sym", tile: GEMM_SM90_128X128_PINGPONG, cluster: 1, share: none, stream_k: false, tune: false, types: [bf16 -> bf16, f16 -> f16], layouts: [tn, nt] }
            /// The cooperative 128×128 tile (one consumer for all 128 rows): every output type, f32 included.
            SymmetricSquare { label: "sym-square", kernel: "128x128_sym", tile: GEMM_SM90_128X128, cluster: 1, share: none, stream_k: false, tune: false, types: [bf16 -> bf16, bf16 -> f32, f16 -> f16, f16 -> f32], layouts: [tn, nt] }
            /// `SymmetricSquare` with the hybrid stream-K schedule (`crate::stream_k`): whole waves of triangle tiles
            /// data-parallel, the rest split by k-tiles over every block, for stacks whose tiles fill the last wave
            /// poorly (136 tiles at n = 2048 on 132 SMs: two waves of tiles, or 1.03 tiles of work per block).
            /// 16-bit outputs.
            SymmetricStreamK { label: "sym-streamk", kernel: "128x128_sk_sym", tile: GEMM_SM90_128X128, cluster: 1, share: none, stream_k: true, tune: false, types: [bf16 -> bf16, f16 -> f16], layouts: [tn, nt] }
            /// `SymmetricPingPong` with the hybrid stream-K schedule: the consumers take the block's units in turn, so
            /// one's epilogue (or partial store) runs under the other's main loop. For stacks whose tiles fill the
            /// last wave poorly, where the epilogue weighs most: shallow products (few k-tiles per tile) and products
            /// that read C. 16-bit outputs.
            SymmetricStreamKPingPong { label: "sym-pingpong-sk", kernel: "128x128_pp_sk_sym", tile: GEMM_SM90_128X128_PINGPONG, cluster: 1, share: none, stream_k: true, tune: false, types: [bf16 -> bf16, f16 -> f16], layouts: [tn, nt] }
        }
    };
}

/// Calls `$callback! { kernels }` with every kernel of the symmetric table, as [`for_each_gemm_sm90_kernel!`] does
/// for the general one.
#[macro_export]
macro_rules! for_each_gemm_sm90_symmetric_kernel {
    ($callback:path) => {
        $crate::for_each_gemm_sm90_symmetric! { $crate::__gemm_sm90_kernels, ($callback) }
    };
}

/// The kernel name of a table row's configuration for one type pair and layout:
/// `gemm_{input}[_{output}out]_{layout}_{kernel}_sm90` (the output type is named only where it is not the input's).
#[macro_export]
macro_rules! gemm_sm90_kernel_name {
    (bf16 -> bf16, $layout:ident, $kernel:literal) => {
        concat!("gemm_bf16_", stringify!($layout), "_", $kernel, "_sm90")
    };
    (f16 -> f16, $layout:ident, $kernel:literal) => {
        concat!("gemm_f16_", stringify!($layout), "_", $kernel, "_sm90")
    };
    ($input:ident -> f32, $layout:ident, $kernel:literal) => {
        concat!("gemm_", stringify!($input), "_f32out_", stringify!($layout), "_", $kernel, "_sm90")
    };
}

/// The PTX module (gpu/kernels family) holding a layout's GEMM kernels, passed to `$callback!` as its first token:
/// `gemm` for A row-major (tn, tt; the skinny kernels too), `gemm_column_a` for A column-major (nt, nn). The GEMM
/// kernels are two crates compiled from one source so that two rustc run at once (each kernel is one large function
/// LLVM optimizes on one core); the device crates instantiate the kernels of their own module, and the host looks
/// each kernel up in its module, both through this.
#[macro_export]
macro_rules! gemm_sm90_module {
    (tn, $callback:ident!($($arg:tt)*)) => {
        $callback! { gemm, $($arg)* }
    };
    (tt, $callback:ident!($($arg:tt)*)) => {
        $callback! { gemm, $($arg)* }
    };
    (nt, $callback:ident!($($arg:tt)*)) => {
        $callback! { gemm_column_a, $($arg)* }
    };
    (nn, $callback:ident!($($arg:tt)*)) => {
        $callback! { gemm_column_a, $($arg)* }
    };
}

/// Calls `$callback! { kernels }` with every kernel of the table, one per row, type pair and layout, each as
/// `(Variant, "kernel", TILE, cluster, share, stream_k) input output layout`, in table order.
#[macro_export]
macro_rules! for_each_gemm_sm90_kernel {
    ($callback:path) => {
        $crate::for_each_gemm_sm90! { $crate::__gemm_sm90_kernels, ($callback) }
    };
}

/// [`for_each_gemm_sm90_kernel!`]'s expansion: each row's type pairs one at a time (the layouts of one pair at once),
/// collecting the kernels, then one call with all of them. Recursion depth: rows + type pairs.
#[doc(hidden)]
#[macro_export]
macro_rules! __gemm_sm90_kernels {
    // The rows as the table gives them: normalized into (row) [types] [layouts];
    (($callback:path)
        $($(#[$meta:meta])* $variant:ident { label: $label:literal, kernel: $kernel:literal, tile: $tile:ident, cluster: $cluster:literal, share: $share:ident, stream_k: $stream_k:tt, tune: $tune:literal, types: [$($types:tt)*], layouts: [$($layout:ident),*] })*
    ) => {
        $crate::__gemm_sm90_kernels! { @expand $callback; []; $( ($variant, $kernel, $tile, $cluster, $share, $stream_k) [$($types)*] [$($layout),*]; )* }
    };
    (@expand $callback:path; [$($done:tt)*];) => {
        $callback! { $($done)* }
    };
    (@expand $callback:path; [$($done:tt)*]; $row:tt [] $layouts:tt; $($rest:tt)*) => {
        $crate::__gemm_sm90_kernels! { @expand $callback; [$($done)*]; $($rest)* }
    };
    (@expand $callback:path; [$($done:tt)*]; $row:tt [$input:ident -> $output:ident $(, $more_input:ident -> $more_output:ident)*] [$($layout:ident),*]; $($rest:tt)*) => {
        $crate::__gemm_sm90_kernels! { @expand $callback; [$($done)* $($row $input $output $layout)*]; $row [$($more_input -> $more_output),*] [$($layout),*]; $($rest)* }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GEMM_SM90_128X128, GEMM_SM90_128X192, GEMM_SM90_128X256, GEMM_SM90_192X192};

    fn config(tile: GemmTile, cluster: u32, share: GemmShare) -> GemmConfig {
        GemmConfig { tile, cluster, share, stream_k: false, symmetric: false }
    }

    #[test]
    fn the_table_pairs_blocks_on_whole_boxes() {
        config(GEMM_SM90_128X256, 2, GemmShare::B).check();
        config(GEMM_SM90_128X128, 2, GemmShare::A).check();
    }

    #[test]
    #[should_panic(expected = "a block's share of a shared MN-major B tile is not whole 64-index boxes")]
    fn a_cluster_sharing_half_a_192_column_mn_major_tile_is_refused() {
        // Each block's share of B would be 96 columns: one and a half MN-major boxes.
        let pairs = config(GEMM_SM90_128X192, 2, GemmShare::B);
        pairs.check();
        pairs.check_layout(false, true);
    }

    #[test]
    fn a_cluster_sharing_half_a_192_row_k_major_tile_is_whole_boxes() {
        // 96 rows of K-major A: one box of 96 rows, 12 swizzle atoms.
        let pairs = config(GEMM_SM90_192X192, 2, GemmShare::A);
        pairs.check();
        pairs.check_layout(false, false);
        pairs.check_layout(false, true);
    }
}
