//! The kernels the device crate exports, with the PTX modules that embed them, and what each GEMM kernel computes:
//! its types, layout and [`Variant`] (the tile, cluster and operand sharing of its configuration). The launch
//! wrappers (crate::ops) choose among these; `Variant::Auto`'s heuristic is in crate::ops::gemm.

pub use oxtile_builder::Target;

use oxtile_abi::{
    GEMM_SM90_64X128, GEMM_SM90_128X64, GEMM_SM90_128X128, GEMM_SM90_128X128_PINGPONG, GEMM_SM90_128X256, GemmTile,
};

use crate::types::GemmLayout;

/// gpu/kernels compiled for one target by build.rs.
#[derive(Clone, Copy, Debug)]
pub struct Module {
    pub target: Target,
    pub ptx: &'static str,
    /// The PTX assembled by ptxas for exactly this target; empty where the build found no ptxas.
    pub cubin: &'static [u8],
}

/// The modules, one per target.
pub const MODULES: &[Module] = &[Module {
    target: Target::Sm90a,
    ptx: include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_90a.ptx")),
    cubin: include_bytes!(concat!(env!("OUT_DIR"), "/kernels_sm_90a.cubin")),
}];

/// A kernel as the host knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// Its symbol in the PTX (`#[unsafe(no_mangle)]` in gpu/kernels).
    pub name: &'static str,
    pub target: Target,
    /// On a hot path: must keep every value in registers (no spills, no local memory), checked in CI.
    pub hot: bool,
}

impl Kernel {
    const fn hopper(name: &'static str) -> Kernel {
        Kernel { name, target: Target::Sm90a, hot: true }
    }

    /// A kernel off every hot path (a reference the tests compare with, the benchmark's stream hold): spills would
    /// only cost time.
    const fn hopper_cold(name: &'static str) -> Kernel {
        Kernel { name, target: Target::Sm90a, hot: false }
    }

    /// The PTX module this kernel lives in.
    pub fn ptx(&self) -> &'static str {
        module_ptx(self.target).expect("every registered kernel's target has a module")
    }
}

pub fn module_ptx(target: Target) -> Option<&'static str> {
    MODULES.iter().find(|m| m.target == target).map(|m| m.ptx)
}

pub const AXPY_F32: Kernel = Kernel::hopper("axpy_f32");
pub const AXPY_BF16: Kernel = Kernel::hopper("axpy_bf16");
pub const EXP2_F32: Kernel = Kernel::hopper("exp2_f32");

/// The software exp2 of the attention softmax (gpu/kernels/src/softmax/exp2.rs) over a buffer: accuracy.
pub const EXP2_POLY_F32: Kernel = Kernel::hopper("exp2_poly_f32");
/// Exponential throughput with the values in registers: MUFU.EX2 only, the polynomial only, and mixes.
pub const EXP2_THROUGHPUT_MUFU: Kernel = Kernel::hopper("exp2_throughput_mufu");
pub const EXP2_THROUGHPUT_POLY: Kernel = Kernel::hopper("exp2_throughput_poly");
pub const EXP2_THROUGHPUT_MIXED_1_4: Kernel = Kernel::hopper("exp2_throughput_mixed_1_4");
pub const EXP2_THROUGHPUT_MIXED_3_8: Kernel = Kernel::hopper("exp2_throughput_mixed_3_8");
pub const EXP2_THROUGHPUT_MIXED_1_2: Kernel = Kernel::hopper("exp2_throughput_mixed_1_2");

/// Which sm90 kernel runs a problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub enum Variant {
    /// The heuristic's choice for the shape.
    #[default]
    Auto,
    /// 128×256 tiles, one block each: large problems.
    Wide,
    /// 128×256 tiles in clusters of two blocks on vertically adjacent tiles, B shared by TMA multicast.
    WideCluster2,
    /// Ablation of [`Variant::WideCluster2`] (bf16, layout tn only): the same clusters and barriers, each block loading all
    /// of B itself — separates the cost of multicast from the cost of coupling the blocks.
    WideCluster2Unshared,
    /// 128×64 tiles with an 8-stage ring: problems with too few 128×256 tiles to fill the GPU.
    Narrow,
    /// [`Variant::Narrow`] in clusters of two blocks side by side along N, the A tile shared by TMA multicast (a third
    /// less L2 → SM traffic per k-tile). bf16 → bf16 only; a tune candidate: slower than [`Variant::Narrow`] where
    /// the heuristic picks that (docs/perf-notes.md, GEMM sm90 v8).
    NarrowCluster2,
    /// 64×128 tiles, one consumer issuing m64n128k16, with the narrow tile's 8-stage ring: problems of few rows, where
    /// the 128×64 tile's ring holds more A than the B streamed from DRAM (or M ≤ 64 leaves half of its rows empty), and
    /// the narrow tile's problems ([`Variant::resolve`]).
    Flat,
    /// [`Variant::Flat`]'s tiles with the hybrid data-parallel + stream-K schedule of [`Variant::StreamK`]: problems of
    /// few rows whose 64×128 tiles leave SMs idle for long (128×4096×14336: 64 tiles on 132 SMs, each 224 k-tiles
    /// deep). bf16 → bf16 only.
    FlatStreamK,
    /// 128×128 tiles, one consumer issuing two m64n128k16 per k16 step: problems of few rows (64 < M ≤ 256) where the
    /// 64×128 tile reads B twice and the 128×64 tile reads A once per 64 columns. bf16 → bf16 only.
    Square,
    /// [`Variant::Square`] in clusters of two blocks on vertically adjacent tiles, B shared by TMA multicast: the two
    /// row tiles of 128 < M ≤ 256 fetch each B k-tile once. bf16 → bf16 only.
    SquareCluster2,
    /// [`Variant::Square`]'s tiles with the hybrid data-parallel + stream-K schedule of [`Variant::StreamK`]: few-row
    /// problems with fewer 128×128 tiles than SMs (128×8192×8192: 64 tiles of 128 k-tiles). bf16 → bf16 only; a tune
    /// candidate, not [`Variant::Auto`]'s choice: one wave of 64×128 tiles is faster (see [`Variant::resolve`]).
    SquareStreamK,
    /// 128×128 tiles, each computed by one consumer warpgroup while the other runs its epilogue (ping-pong), so
    /// the tensor cores keep working through epilogues. Same-type outputs only ([`Variant::available`]).
    PingPong,
    /// [`Variant::PingPong`] in clusters of two blocks on vertically adjacent tiles, B shared by TMA multicast.
    /// bf16 → bf16 only.
    PingPongCluster2,
    /// 128×256 tiles, one block each, with the last partial wave (the tail) stream-K: its k-tiles are split evenly
    /// between all blocks, several blocks summing a tile through a workspace ([`oxtile_abi::stream_k`]), so no SM
    /// idles through the tail. bf16 and f16 to their own type, bf16 to f32 ([`Variant::available`]).
    StreamK,
    /// [`Variant::StreamK`] over clusters of two blocks on vertically adjacent tiles, B shared by TMA multicast (the
    /// [`Variant::WideCluster2`] pairing): whole waves of cluster tiles data-parallel, the tail split by k-tiles
    /// between the clusters. bf16 → bf16 only.
    StreamKCluster2,
}

impl Variant {
    /// The kernels `oxtile tune gemm` chooses among, where they exist ([`Variant::available`]).
    pub const CANDIDATES: [Variant; 13] = [
        Variant::Wide,
        Variant::WideCluster2,
        Variant::Narrow,
        Variant::NarrowCluster2,
        Variant::Flat,
        Variant::FlatStreamK,
        Variant::Square,
        Variant::SquareCluster2,
        Variant::SquareStreamK,
        Variant::PingPong,
        Variant::PingPongCluster2,
        Variant::StreamK,
        Variant::StreamKCluster2,
    ];

    /// The short name tables and contenders use (`oxtile-` + it in `oxtile bench`).
    pub fn label(self) -> &'static str {
        match self {
            Variant::Auto => "auto",
            Variant::Wide => "wide",
            Variant::WideCluster2 => "wide-c2",
            Variant::WideCluster2Unshared => "wide-c2-unshared",
            Variant::Narrow => "narrow",
            Variant::NarrowCluster2 => "narrow-c2",
            Variant::Flat => "flat",
            Variant::FlatStreamK => "flat-sk",
            Variant::Square => "square",
            Variant::SquareCluster2 => "square-c2",
            Variant::SquareStreamK => "square-sk",
            Variant::PingPong => "pingpong",
            Variant::PingPongCluster2 => "pingpong-c2",
            Variant::StreamK => "streamk",
            Variant::StreamKCluster2 => "streamk-c2",
        }
    }

    /// Whether a kernel of this (concrete) variant computes `input` → `output` GEMMs in `layout`: the cooperative
    /// tile configurations exist for every type pair and layout; the ping-pong and stream-K ones for fewer (see
    /// [`GEMM_SM90`]), and the multicast ablation only for bf16 tn.
    pub fn available(self, input: &str, output: &str, layout: GemmLayout) -> bool {
        find_gemm(input, output, layout, self).is_some()
    }

    pub(crate) fn tile(self) -> GemmTile {
        match self {
            Variant::Narrow | Variant::NarrowCluster2 => GEMM_SM90_128X64,
            Variant::Flat | Variant::FlatStreamK => GEMM_SM90_64X128,
            Variant::Square | Variant::SquareCluster2 | Variant::SquareStreamK => GEMM_SM90_128X128,
            Variant::PingPong | Variant::PingPongCluster2 => GEMM_SM90_128X128_PINGPONG,
            _ => GEMM_SM90_128X256,
        }
    }

    pub(crate) fn cluster_size(self) -> u32 {
        match self {
            Variant::WideCluster2
            | Variant::WideCluster2Unshared
            | Variant::NarrowCluster2
            | Variant::PingPongCluster2
            | Variant::SquareCluster2
            | Variant::StreamKCluster2 => 2,
            _ => 1,
        }
    }

    /// Blocks that share one A tile by multicast (side by side along N).
    pub(crate) fn a_sharers(self) -> u32 {
        if self == Variant::NarrowCluster2 { 2 } else { 1 }
    }

    /// The cluster's blocks along M and along N.
    pub(crate) fn cluster_shape(self) -> (u32, u32) {
        if self.a_sharers() > 1 { (1, self.cluster_size()) } else { (self.cluster_size(), 1) }
    }

    /// Blocks that share one B tile by multicast (stacked along M).
    pub(crate) fn b_sharers(self) -> u32 {
        if matches!(
            self,
            Variant::WideCluster2 | Variant::PingPongCluster2 | Variant::SquareCluster2 | Variant::StreamKCluster2
        ) {
            2
        } else {
            1
        }
    }

    /// Whether the kernel runs the hybrid data-parallel + stream-K schedule (and its plan owns a workspace).
    pub fn is_stream_k(self) -> bool {
        matches!(self, Variant::StreamK | Variant::StreamKCluster2 | Variant::FlatStreamK | Variant::SquareStreamK)
    }

    /// The same tiles and clusters without stream-K: what [`Variant::Auto`] runs instead of a stream-K kernel when
    /// stream-K is off ([`crate::ops::gemm::GemmOptions::auto_stream_k`]) or its blocks cannot all be resident at
    /// once. Each exists for every type pair and layout its stream-K kernel exists for. Other variants are returned as
    /// they are.
    pub fn data_parallel(self) -> Variant {
        match self {
            Variant::StreamK => Variant::Wide,
            Variant::StreamKCluster2 => Variant::WideCluster2,
            Variant::FlatStreamK => Variant::Flat,
            Variant::SquareStreamK => Variant::Square,
            other => other,
        }
    }
}

/// An sm90 GEMM kernel and the problems it computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmKernel {
    pub kernel: Kernel,
    /// Element type of A and B, as `GemmElement::NAME` writes it.
    pub input: &'static str,
    /// Element type of D (and of the C it reads when beta ≠ 0), as `GemmOutput::NAME` writes it.
    pub output: &'static str,
    pub layout: GemmLayout,
    pub variant: Variant,
}

/// The kernel computing `input` → `output` GEMMs in `layout` with this (concrete) variant.
pub fn find_gemm(input: &str, output: &str, layout: GemmLayout, variant: Variant) -> Option<GemmKernel> {
    GEMM_SM90.iter().copied().find(|g| (g.input, g.output, g.layout, g.variant) == (input, output, layout, variant))
}

/// Declares [`GEMM_SM90`], one line per kernel: `name: input -> output, layout, variant`, the layout in BLAS
/// letters (A then B; t = row-major, n = column-major).
macro_rules! gemm_sm90 {
    ($($name:literal: $input:literal -> $output:literal, $layout:ident, $variant:ident;)*) => {
        /// Every sm90 GEMM kernel (gpu/kernels/src/gemm/sm90.rs): for each input type, output type (the input's
        /// or f32) and layout, the three tile configurations `Variant::Auto` chooses among; the multicast
        /// ablation; the 64×128 kernels; the ping-pong kernels, for same-type outputs only (clusters for bf16
        /// only); and the stream-K kernels (wide tiles; bf16 and f16 to their own type, bf16 to f32).
        pub const GEMM_SM90: &[GemmKernel] = &[$(GemmKernel {
            kernel: Kernel::hopper($name),
            input: $input,
            output: $output,
            layout: gemm_sm90!(@layout $layout),
            variant: Variant::$variant,
        }),*];
    };
    (@layout tn) => { GemmLayout::Tn };
    (@layout tt) => { GemmLayout::Tt };
    (@layout nt) => { GemmLayout::Nt };
    (@layout nn) => { GemmLayout::Nn };
}

gemm_sm90! {
    "gemm_bf16_tn_128x256_sm90": "bf16" -> "bf16", tn, Wide;
    "gemm_bf16_tn_128x256_c2_sm90": "bf16" -> "bf16", tn, WideCluster2;
    "gemm_bf16_tn_128x64_sm90": "bf16" -> "bf16", tn, Narrow;
    "gemm_bf16_tt_128x256_sm90": "bf16" -> "bf16", tt, Wide;
    "gemm_bf16_tt_128x256_c2_sm90": "bf16" -> "bf16", tt, WideCluster2;
    "gemm_bf16_tt_128x64_sm90": "bf16" -> "bf16", tt, Narrow;
    "gemm_bf16_nt_128x256_sm90": "bf16" -> "bf16", nt, Wide;
    "gemm_bf16_nt_128x256_c2_sm90": "bf16" -> "bf16", nt, WideCluster2;
    "gemm_bf16_nt_128x64_sm90": "bf16" -> "bf16", nt, Narrow;
    "gemm_bf16_nn_128x256_sm90": "bf16" -> "bf16", nn, Wide;
    "gemm_bf16_nn_128x256_c2_sm90": "bf16" -> "bf16", nn, WideCluster2;
    "gemm_bf16_nn_128x64_sm90": "bf16" -> "bf16", nn, Narrow;
    "gemm_bf16_f32out_tn_128x256_sm90": "bf16" -> "f32", tn, Wide;
    "gemm_bf16_f32out_tn_128x256_c2_sm90": "bf16" -> "f32", tn, WideCluster2;
    "gemm_bf16_f32out_tn_128x64_sm90": "bf16" -> "f32", tn, Narrow;
    "gemm_bf16_f32out_tt_128x256_sm90": "bf16" -> "f32", tt, Wide;
    "gemm_bf16_f32out_tt_128x256_c2_sm90": "bf16" -> "f32", tt, WideCluster2;
    "gemm_bf16_f32out_tt_128x64_sm90": "bf16" -> "f32", tt, Narrow;
    "gemm_bf16_f32out_nt_128x256_sm90": "bf16" -> "f32", nt, Wide;
    "gemm_bf16_f32out_nt_128x256_c2_sm90": "bf16" -> "f32", nt, WideCluster2;
    "gemm_bf16_f32out_nt_128x64_sm90": "bf16" -> "f32", nt, Narrow;
    "gemm_bf16_f32out_nn_128x256_sm90": "bf16" -> "f32", nn, Wide;
    "gemm_bf16_f32out_nn_128x256_c2_sm90": "bf16" -> "f32", nn, WideCluster2;
    "gemm_bf16_f32out_nn_128x64_sm90": "bf16" -> "f32", nn, Narrow;
    "gemm_f16_tn_128x256_sm90": "f16" -> "f16", tn, Wide;
    "gemm_f16_tn_128x256_c2_sm90": "f16" -> "f16", tn, WideCluster2;
    "gemm_f16_tn_128x64_sm90": "f16" -> "f16", tn, Narrow;
    "gemm_f16_tt_128x256_sm90": "f16" -> "f16", tt, Wide;
    "gemm_f16_tt_128x256_c2_sm90": "f16" -> "f16", tt, WideCluster2;
    "gemm_f16_tt_128x64_sm90": "f16" -> "f16", tt, Narrow;
    "gemm_f16_nt_128x256_sm90": "f16" -> "f16", nt, Wide;
    "gemm_f16_nt_128x256_c2_sm90": "f16" -> "f16", nt, WideCluster2;
    "gemm_f16_nt_128x64_sm90": "f16" -> "f16", nt, Narrow;
    "gemm_f16_nn_128x256_sm90": "f16" -> "f16", nn, Wide;
    "gemm_f16_nn_128x256_c2_sm90": "f16" -> "f16", nn, WideCluster2;
    "gemm_f16_nn_128x64_sm90": "f16" -> "f16", nn, Narrow;
    "gemm_f16_f32out_tn_128x256_sm90": "f16" -> "f32", tn, Wide;
    "gemm_f16_f32out_tn_128x256_c2_sm90": "f16" -> "f32", tn, WideCluster2;
    "gemm_f16_f32out_tn_128x64_sm90": "f16" -> "f32", tn, Narrow;
    "gemm_f16_f32out_tt_128x256_sm90": "f16" -> "f32", tt, Wide;
    "gemm_f16_f32out_tt_128x256_c2_sm90": "f16" -> "f32", tt, WideCluster2;
    "gemm_f16_f32out_tt_128x64_sm90": "f16" -> "f32", tt, Narrow;
    "gemm_f16_f32out_nt_128x256_sm90": "f16" -> "f32", nt, Wide;
    "gemm_f16_f32out_nt_128x256_c2_sm90": "f16" -> "f32", nt, WideCluster2;
    "gemm_f16_f32out_nt_128x64_sm90": "f16" -> "f32", nt, Narrow;
    "gemm_f16_f32out_nn_128x256_sm90": "f16" -> "f32", nn, Wide;
    "gemm_f16_f32out_nn_128x256_c2_sm90": "f16" -> "f32", nn, WideCluster2;
    "gemm_f16_f32out_nn_128x64_sm90": "f16" -> "f32", nn, Narrow;
    "gemm_bf16_tn_128x256_c2_nomc_sm90": "bf16" -> "bf16", tn, WideCluster2Unshared;
    "gemm_bf16_tn_128x128_pp_sm90": "bf16" -> "bf16", tn, PingPong;
    "gemm_bf16_tn_128x128_pp_c2_sm90": "bf16" -> "bf16", tn, PingPongCluster2;
    "gemm_bf16_tt_128x128_pp_sm90": "bf16" -> "bf16", tt, PingPong;
    "gemm_bf16_tt_128x128_pp_c2_sm90": "bf16" -> "bf16", tt, PingPongCluster2;
    "gemm_bf16_nt_128x128_pp_sm90": "bf16" -> "bf16", nt, PingPong;
    "gemm_bf16_nt_128x128_pp_c2_sm90": "bf16" -> "bf16", nt, PingPongCluster2;
    "gemm_bf16_nn_128x128_pp_sm90": "bf16" -> "bf16", nn, PingPong;
    "gemm_bf16_nn_128x128_pp_c2_sm90": "bf16" -> "bf16", nn, PingPongCluster2;
    "gemm_f16_tn_128x128_pp_sm90": "f16" -> "f16", tn, PingPong;
    "gemm_f16_tt_128x128_pp_sm90": "f16" -> "f16", tt, PingPong;
    "gemm_f16_nt_128x128_pp_sm90": "f16" -> "f16", nt, PingPong;
    "gemm_f16_nn_128x128_pp_sm90": "f16" -> "f16", nn, PingPong;
    "gemm_bf16_tn_128x256_sk_sm90": "bf16" -> "bf16", tn, StreamK;
    "gemm_bf16_tt_128x256_sk_sm90": "bf16" -> "bf16", tt, StreamK;
    "gemm_bf16_nt_128x256_sk_sm90": "bf16" -> "bf16", nt, StreamK;
    "gemm_bf16_nn_128x256_sk_sm90": "bf16" -> "bf16", nn, StreamK;
    "gemm_bf16_f32out_tn_128x256_sk_sm90": "bf16" -> "f32", tn, StreamK;
    "gemm_bf16_f32out_tt_128x256_sk_sm90": "bf16" -> "f32", tt, StreamK;
    "gemm_bf16_f32out_nt_128x256_sk_sm90": "bf16" -> "f32", nt, StreamK;
    "gemm_bf16_f32out_nn_128x256_sk_sm90": "bf16" -> "f32", nn, StreamK;
    "gemm_f16_tn_128x256_sk_sm90": "f16" -> "f16", tn, StreamK;
    "gemm_f16_tt_128x256_sk_sm90": "f16" -> "f16", tt, StreamK;
    "gemm_f16_nt_128x256_sk_sm90": "f16" -> "f16", nt, StreamK;
    "gemm_f16_nn_128x256_sk_sm90": "f16" -> "f16", nn, StreamK;
    "gemm_bf16_tn_64x128_sm90": "bf16" -> "bf16", tn, Flat;
    "gemm_bf16_tt_64x128_sm90": "bf16" -> "bf16", tt, Flat;
    "gemm_bf16_nt_64x128_sm90": "bf16" -> "bf16", nt, Flat;
    "gemm_bf16_nn_64x128_sm90": "bf16" -> "bf16", nn, Flat;
    "gemm_f16_tn_64x128_sm90": "f16" -> "f16", tn, Flat;
    "gemm_f16_tt_64x128_sm90": "f16" -> "f16", tt, Flat;
    "gemm_f16_nt_64x128_sm90": "f16" -> "f16", nt, Flat;
    "gemm_f16_nn_64x128_sm90": "f16" -> "f16", nn, Flat;
    "gemm_bf16_f32out_tn_64x128_sm90": "bf16" -> "f32", tn, Flat;
    "gemm_bf16_f32out_tt_64x128_sm90": "bf16" -> "f32", tt, Flat;
    "gemm_bf16_f32out_nt_64x128_sm90": "bf16" -> "f32", nt, Flat;
    "gemm_bf16_f32out_nn_64x128_sm90": "bf16" -> "f32", nn, Flat;
    "gemm_f16_f32out_tn_64x128_sm90": "f16" -> "f32", tn, Flat;
    "gemm_f16_f32out_tt_64x128_sm90": "f16" -> "f32", tt, Flat;
    "gemm_f16_f32out_nt_64x128_sm90": "f16" -> "f32", nt, Flat;
    "gemm_f16_f32out_nn_64x128_sm90": "f16" -> "f32", nn, Flat;
    "gemm_bf16_tn_64x128_sk_sm90": "bf16" -> "bf16", tn, FlatStreamK;
    "gemm_bf16_tt_64x128_sk_sm90": "bf16" -> "bf16", tt, FlatStreamK;
    "gemm_bf16_nt_64x128_sk_sm90": "bf16" -> "bf16", nt, FlatStreamK;
    "gemm_bf16_nn_64x128_sk_sm90": "bf16" -> "bf16", nn, FlatStreamK;
    "gemm_bf16_tn_128x128_sm90": "bf16" -> "bf16", tn, Square;
    "gemm_bf16_tt_128x128_sm90": "bf16" -> "bf16", tt, Square;
    "gemm_bf16_nt_128x128_sm90": "bf16" -> "bf16", nt, Square;
    "gemm_bf16_nn_128x128_sm90": "bf16" -> "bf16", nn, Square;
    "gemm_bf16_tn_128x128_c2_sm90": "bf16" -> "bf16", tn, SquareCluster2;
    "gemm_bf16_tt_128x128_c2_sm90": "bf16" -> "bf16", tt, SquareCluster2;
    "gemm_bf16_nt_128x128_c2_sm90": "bf16" -> "bf16", nt, SquareCluster2;
    "gemm_bf16_nn_128x128_c2_sm90": "bf16" -> "bf16", nn, SquareCluster2;
    "gemm_bf16_tn_128x128_sk_sm90": "bf16" -> "bf16", tn, SquareStreamK;
    "gemm_bf16_tt_128x128_sk_sm90": "bf16" -> "bf16", tt, SquareStreamK;
    "gemm_bf16_nt_128x128_sk_sm90": "bf16" -> "bf16", nt, SquareStreamK;
    "gemm_bf16_nn_128x128_sk_sm90": "bf16" -> "bf16", nn, SquareStreamK;
    "gemm_bf16_tn_128x64_c2_sm90": "bf16" -> "bf16", tn, NarrowCluster2;
    "gemm_bf16_tt_128x64_c2_sm90": "bf16" -> "bf16", tt, NarrowCluster2;
    "gemm_bf16_nt_128x64_c2_sm90": "bf16" -> "bf16", nt, NarrowCluster2;
    "gemm_bf16_nn_128x64_c2_sm90": "bf16" -> "bf16", nn, NarrowCluster2;
    "gemm_bf16_tn_128x256_sk_c2_sm90": "bf16" -> "bf16", tn, StreamKCluster2;
    "gemm_bf16_tt_128x256_sk_c2_sm90": "bf16" -> "bf16", tt, StreamKCluster2;
    "gemm_bf16_nt_128x256_sk_c2_sm90": "bf16" -> "bf16", nt, StreamKCluster2;
    "gemm_bf16_nn_128x256_sk_c2_sm90": "bf16" -> "bf16", nn, StreamKCluster2;
}

/// Hopper attention forward (gpu/kernels/src/attention/sm90.rs), per element type and head dim.
pub const ATTN_FWD_BF16_D128_SM90: Kernel = Kernel::hopper("attn_fwd_bf16_d128_sm90");
pub const ATTN_FWD_F16_D128_SM90: Kernel = Kernel::hopper("attn_fwd_f16_d128_sm90");
pub const ATTN_FWD_BF16_D64_SM90: Kernel = Kernel::hopper("attn_fwd_bf16_d64_sm90");
pub const ATTN_FWD_F16_D64_SM90: Kernel = Kernel::hopper("attn_fwd_f16_d64_sm90");
/// Ablations: the bf16 d128 kernel with a quarter of its exponentials on the polynomial (its default is MUFU
/// only), with a rescale whenever a row maximum grows (no lazy rescaling), with both consumer warpgroups
/// issuing at will (no ping-pong); the bf16 d64 kernel with MUFU only (its default puts an eighth on the
/// polynomial).
pub const ATTN_FWD_BF16_D128_POLY_SM90: Kernel = Kernel::hopper("attn_fwd_bf16_d128_poly_sm90");
pub const ATTN_FWD_BF16_D64_MUFU_SM90: Kernel = Kernel::hopper("attn_fwd_bf16_d64_mufu_sm90");
pub const ATTN_FWD_BF16_D128_EAGER_SM90: Kernel = Kernel::hopper("attn_fwd_bf16_d128_eager_sm90");
pub const ATTN_FWD_BF16_D128_NOPINGPONG_SM90: Kernel = Kernel::hopper("attn_fwd_bf16_d128_nopingpong_sm90");
/// Ablation: the bf16 d128 kernel with each tile's exponentials taken beside its row maximum, against the
/// maximum already applied. Not on a hot path: no variant Auto takes runs it, and since its recompute decision
/// became a warpgroup vote (`bar.red.or`, issue 24) ptxas spills 44 bytes in it (docs/perf-notes.md), which its
/// bench rows pay for.
pub const ATTN_FWD_BF16_D128_SPEC_SM90: Kernel = Kernel::hopper_cold("attn_fwd_bf16_d128_spec_sm90");

/// The plain attention reference (gpu/kernels/src/attention/reference.rs): one warp per query row, f32.
pub const ATTN_REFERENCE_BF16_D128: Kernel = Kernel::hopper_cold("attn_reference_bf16_d128");
pub const ATTN_REFERENCE_F16_D128: Kernel = Kernel::hopper_cold("attn_reference_f16_d128");
pub const ATTN_REFERENCE_BF16_D64: Kernel = Kernel::hopper_cold("attn_reference_bf16_d64");
pub const ATTN_REFERENCE_F16_D64: Kernel = Kernel::hopper_cold("attn_reference_f16_d64");
/// The plain attention backward reference (gpu/kernels/src/attention/reference_backward.rs).
pub const ATTN_BWD_REFERENCE_BF16_D128: Kernel = Kernel::hopper_cold("attn_bwd_reference_bf16_d128");
pub const ATTN_BWD_REFERENCE_F16_D128: Kernel = Kernel::hopper_cold("attn_bwd_reference_f16_d128");
pub const ATTN_BWD_REFERENCE_BF16_D64: Kernel = Kernel::hopper_cold("attn_bwd_reference_bf16_d64");
pub const ATTN_BWD_REFERENCE_F16_D64: Kernel = Kernel::hopper_cold("attn_bwd_reference_f16_d64");

/// A 64×64 u16 tile transpose through swizzled shared memory addressed by a const composed layout.
pub const SWIZZLED_TRANSPOSE_U16: Kernel = Kernel::hopper("swizzled_transpose_u16");
/// [`SWIZZLED_TRANSPOSE_U16`] with the same shared addresses written by hand, to compare the machine code.
pub const SWIZZLED_TRANSPOSE_U16_BY_HAND: Kernel = Kernel::hopper("swizzled_transpose_u16_by_hand");

/// The benchmark's stream hold (gpu/kernels/src/bench.rs): one thread that keeps everything queued behind it waiting
/// until the host releases it; see `bench::hold`.
pub const HOLD_STREAM: Kernel = Kernel::hopper_cold("hold_stream");

/// Where each block of a grid lands (gpu/kernels/src/bench.rs); see `bench::device::block_placement`.
pub const BLOCK_PLACEMENT: Kernel = Kernel::hopper_cold("block_placement");

/// The kernels other than the GEMMs of [`GEMM_SM90`].
const OTHERS: &[Kernel] = &[
    AXPY_F32,
    AXPY_BF16,
    EXP2_F32,
    EXP2_POLY_F32,
    EXP2_THROUGHPUT_MUFU,
    EXP2_THROUGHPUT_POLY,
    EXP2_THROUGHPUT_MIXED_1_4,
    EXP2_THROUGHPUT_MIXED_3_8,
    EXP2_THROUGHPUT_MIXED_1_2,
    ATTN_FWD_BF16_D128_SM90,
    ATTN_FWD_F16_D128_SM90,
    ATTN_FWD_BF16_D64_SM90,
    ATTN_FWD_F16_D64_SM90,
    ATTN_FWD_BF16_D128_POLY_SM90,
    ATTN_FWD_BF16_D64_MUFU_SM90,
    ATTN_FWD_BF16_D128_EAGER_SM90,
    ATTN_FWD_BF16_D128_SPEC_SM90,
    ATTN_FWD_BF16_D128_NOPINGPONG_SM90,
    ATTN_REFERENCE_BF16_D128,
    ATTN_REFERENCE_F16_D128,
    ATTN_REFERENCE_BF16_D64,
    ATTN_REFERENCE_F16_D64,
    ATTN_BWD_REFERENCE_BF16_D128,
    ATTN_BWD_REFERENCE_F16_D128,
    ATTN_BWD_REFERENCE_BF16_D64,
    ATTN_BWD_REFERENCE_F16_D64,
    SWIZZLED_TRANSPOSE_U16,
    SWIZZLED_TRANSPOSE_U16_BY_HAND,
    HOLD_STREAM,
    BLOCK_PLACEMENT,
];

/// Every kernel, for the static checks and `oxtile kernels`: [`OTHERS`], then the GEMMs.
pub const ALL: &[Kernel] = &{
    let mut all = [AXPY_F32; OTHERS.len() + GEMM_SM90.len()];
    let mut i = 0;
    while i < OTHERS.len() {
        all[i] = OTHERS[i];
        i += 1;
    }
    while i < all.len() {
        all[i] = GEMM_SM90[i - OTHERS.len()].kernel;
        i += 1;
    }
    all
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_kernel_is_in_its_module() {
        for kernel in ALL {
            let entry = format!(".entry {}(", kernel.name);
            assert!(kernel.ptx().contains(&entry), "{} missing from the {} PTX", kernel.name, kernel.target.cpu());
        }
    }

    #[test]
    fn gemm_kernel_names_say_what_they_compute() {
        // gemm_{input}[_f32out]_{layout}_{tile}[_pp|_sk][_c2[_nomc]]_sm90, as gpu/kernels/src/gemm/sm90.rs exports them.
        for gemm in GEMM_SM90 {
            let output = if gemm.output == gemm.input { String::new() } else { format!("_{}out", gemm.output) };
            let tile = match gemm.variant {
                Variant::Wide => "128x256",
                Variant::WideCluster2 => "128x256_c2",
                Variant::WideCluster2Unshared => "128x256_c2_nomc",
                Variant::Narrow => "128x64",
                Variant::NarrowCluster2 => "128x64_c2",
                Variant::Flat => "64x128",
                Variant::FlatStreamK => "64x128_sk",
                Variant::Square => "128x128",
                Variant::SquareCluster2 => "128x128_c2",
                Variant::SquareStreamK => "128x128_sk",
                Variant::PingPong => "128x128_pp",
                Variant::PingPongCluster2 => "128x128_pp_c2",
                Variant::StreamK => "128x256_sk",
                Variant::StreamKCluster2 => "128x256_sk_c2",
                Variant::Auto => panic!("{} is registered as Auto", gemm.kernel.name),
            };
            assert_eq!(gemm.kernel.name, format!("gemm_{}{output}_{}_{tile}_sm90", gemm.input, gemm.layout));
        }
        let mut names: Vec<&str> = GEMM_SM90.iter().map(|g| g.kernel.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), GEMM_SM90.len(), "a GEMM kernel is registered twice");
        assert_eq!(ALL.len(), OTHERS.len() + GEMM_SM90.len());
    }

    #[test]
    fn every_module_entry_is_registered() {
        for module in MODULES {
            for line in module.ptx.lines().filter(|l| l.contains(".entry ")) {
                let name = line.split(".entry ").nth(1).unwrap().split('(').next().unwrap();
                let registered = ALL.iter().any(|k| k.name == name && k.target == module.target);
                assert!(registered, "kernel {name} is not registered");
            }
        }
    }

    #[test]
    fn an_embedded_cubin_is_an_elf_image_with_every_kernel() {
        // Empty where the build found no ptxas (it warned); otherwise ptxas's image of the same PTX.
        for module in MODULES.iter().filter(|m| !m.cubin.is_empty()) {
            assert!(module.cubin.starts_with(b"\x7fELF"), "the {} cubin is no ELF image", module.target.cpu());
            for kernel in ALL.iter().filter(|k| k.target == module.target) {
                let symbol = format!("\0{}\0", kernel.name);
                let found = module.cubin.windows(symbol.len()).any(|w| w == symbol.as_bytes());
                assert!(found, "{} is not in the {} cubin", kernel.name, module.target.cpu());
            }
        }
    }
}
