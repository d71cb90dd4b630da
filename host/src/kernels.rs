//! The kernels the device crates export, with the PTX modules that embed them, and what each GEMM kernel computes:
//! its types, layout and [`Variant`] (the tile, cluster and operand sharing of its configuration). The launch
//! wrappers (crate::ops) choose among these; `Variant::Auto`'s heuristic is in crate::ops::gemm.

pub use oxtile_builder::{Family, Target};

use oxtile_abi::{GemmConfig, GemmShare, GemmTile};

use crate::types::GemmLayout;

/// One family of gpu/kernels (a crate of its own) compiled for one target by build.rs.
#[derive(Clone, Copy, Debug)]
pub struct Module {
    pub family: Family,
    pub target: Target,
    pub ptx: &'static str,
    /// The PTX assembled by ptxas for exactly this target; empty where the build found no ptxas.
    pub cubin: &'static [u8],
    /// What the build's ptxas reported as it made [`Module::cubin`]: a first line `ptxas: <ptxas --version>`, then
    /// its `-v` report (registers, stack, spills per function). Empty with the cubin.
    pub ptxas_report: &'static str,
}

impl Module {
    /// The `ptxas --version` line of the ptxas that made the cubin; `None` where there is no cubin.
    pub fn assembled_by(&self) -> Option<&'static str> {
        self.ptxas_report.lines().next().and_then(|line| line.strip_prefix("ptxas: "))
    }
}

// `MODULES`: every family for every target, as build.rs built them.
include!(concat!(env!("OUT_DIR"), "/modules.rs"));

/// The module of `family` for `target`, where the build made one.
pub fn module(family: Family, target: Target) -> Option<&'static Module> {
    MODULES.iter().find(|m| m.family == family && m.target == target)
}

/// A kernel as the host knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// Its symbol in the PTX (`#[unsafe(no_mangle)]` in gpu/kernels).
    pub name: &'static str,
    /// The crate, and so the module, it is in.
    pub family: Family,
    pub target: Target,
    /// On a hot path: must keep every value in registers (no spills, no local memory), checked in CI.
    pub hot: bool,
}

impl Kernel {
    const fn hopper(family: Family, name: &'static str) -> Kernel {
        Kernel { name, family, target: Target::Sm90a, hot: true }
    }

    const fn attention(name: &'static str) -> Kernel {
        Kernel::hopper(Family::Attention, name)
    }

    const fn attention_ablation(name: &'static str) -> Kernel {
        Kernel::hopper(Family::AttentionAblations, name)
    }

    const fn attention_backward(name: &'static str) -> Kernel {
        Kernel::hopper(Family::AttentionBackward, name)
    }

    const fn support(name: &'static str) -> Kernel {
        Kernel::hopper(Family::Support, name)
    }

    /// The same kernel, off every hot path (a reference the tests compare with, the benchmark's stream hold): spills
    /// would only cost time.
    const fn cold(self) -> Kernel {
        Kernel { hot: false, ..self }
    }

    /// The module this kernel lives in.
    pub fn module(&self) -> &'static Module {
        module(self.family, self.target).expect("every registered kernel's family and target have a module")
    }

    /// Its module's PTX.
    pub fn ptx(&self) -> &'static str {
        self.module().ptx
    }
}

pub const AXPY_F32: Kernel = Kernel::support("axpy_f32");
pub const AXPY_BF16: Kernel = Kernel::support("axpy_bf16");
pub const EXP2_F32: Kernel = Kernel::support("exp2_f32");

/// The copy of a GEMM operand of 16-bit elements TMA cannot read in place into rows it can
/// (gpu/kernels/support/src/staging.rs; host/src/ops/staging.rs).
pub const STAGE_ROWS_B16: Kernel = Kernel::support("stage_rows_b16");

/// The software exp2 of the attention softmax (gpu/device/src/softmax/exp2.rs) over a buffer: accuracy
/// (gpu/kernels/support/src/exp2.rs).
pub const EXP2_POLY_F32: Kernel = Kernel::support("exp2_poly_f32");
/// Exponential throughput with the values in registers: MUFU.EX2 only, the polynomial only, and mixes.
pub const EXP2_THROUGHPUT_MUFU: Kernel = Kernel::support("exp2_throughput_mufu");
pub const EXP2_THROUGHPUT_POLY: Kernel = Kernel::support("exp2_throughput_poly");
pub const EXP2_THROUGHPUT_MIXED_1_4: Kernel = Kernel::support("exp2_throughput_mixed_1_4");
pub const EXP2_THROUGHPUT_MIXED_3_8: Kernel = Kernel::support("exp2_throughput_mixed_3_8");
pub const EXP2_THROUGHPUT_MIXED_1_2: Kernel = Kernel::support("exp2_throughput_mixed_1_2");

/// Defines [`Variant`] from the GEMM table (`oxtile_abi::for_each_gemm_sm90!`): `Auto`, then one variant per row,
/// documented by the row, and what the host reads of each row.
macro_rules! gemm_variants {
    ($($(#[$doc:meta])* $variant:ident { label: $label:literal, kernel: $kernel:literal, tile: $tile:ident, cluster: $cluster:literal, share: $share:ident, stream_k: $stream_k:literal, tune: $tune:literal, types: $types:tt, layouts: $layouts:tt })*) => {
        /// Which sm90 kernel runs a problem: [`Variant::Auto`], or a row of the GEMM table (gpu/abi's
        /// `for_each_gemm_sm90!`: its tile, cluster, shared operand and schedule, [`Variant::config`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
        pub enum Variant {
            /// The heuristic's choice for the shape.
            #[default]
            Auto,
            $($(#[$doc])* $variant,)*
        }

        impl Variant {
            /// Every configuration of the table, in its order.
            pub const CONFIGURED: &[Variant] = &[$(Variant::$variant),*];

            /// The row's configuration; `None` for [`Variant::Auto`].
            pub const fn config(self) -> Option<GemmConfig> {
                match self {
                    Variant::Auto => None,
                    $(Variant::$variant => Some(GemmConfig {
                        tile: oxtile_abi::$tile,
                        cluster: $cluster,
                        share: gemm_share!($share),
                        stream_k: $stream_k,
                        symmetric: false,
                    }),)*
                }
            }

            /// The short name tables and contenders use (`oxtile-` + it in `oxtile bench`, [`Variant::contender`]).
            pub const fn label(self) -> &'static str {
                match self {
                    Variant::Auto => "auto",
                    $(Variant::$variant => $label,)*
                }
            }

            /// The name of the benchmark contender that runs this variant forced: `oxtile-` + its label.
            pub const fn contender(self) -> &'static str {
                match self {
                    Variant::Auto => "oxtile",
                    $(Variant::$variant => concat!("oxtile-", $label),)*
                }
            }

            /// Whether `oxtile tune gemm` times it (an ablation is no candidate).
            const fn is_candidate(self) -> bool {
                match self {
                    Variant::Auto => false,
                    $(Variant::$variant => $tune,)*
                }
            }
        }
    };
}

/// A table row's shared operand.
macro_rules! gemm_share {
    (none) => {
        GemmShare::None
    };
    (a) => {
        GemmShare::A
    };
    (b) => {
        GemmShare::B
    };
}

oxtile_abi::for_each_gemm_sm90! { gemm_variants }

// Every row holds what the kernels assume of it (the device crate checks the same when it instantiates them).
const _: () = {
    let mut i = 0;
    while i < Variant::CONFIGURED.len() {
        match Variant::CONFIGURED[i].config() {
            Some(config) => config.check(),
            None => panic!("a configured variant without a configuration"),
        }
        i += 1;
    }
};

impl Variant {
    /// The kernels `oxtile tune gemm` chooses among, where they exist ([`Variant::available`]): the table's rows
    /// marked `tune`, in its order.
    pub const CANDIDATES: [Variant; CANDIDATE_COUNT] = {
        let mut candidates = [Variant::Auto; CANDIDATE_COUNT];
        let (mut i, mut n) = (0, 0);
        while i < Variant::CONFIGURED.len() {
            if Variant::CONFIGURED[i].is_candidate() {
                candidates[n] = Variant::CONFIGURED[i];
                n += 1;
            }
            i += 1;
        }
        candidates
    };

    /// Whether a kernel of this (concrete) variant computes `input` → `output` GEMMs in `layout`: the table lists the
    /// type pairs and layouts each configuration is instantiated for.
    pub fn available(self, input: &str, output: &str, layout: GemmLayout) -> bool {
        find_gemm(input, output, layout, self).is_some()
    }

    /// The row's configuration.
    ///
    /// # Panics
    /// For [`Variant::Auto`], which has none: resolve it first ([`Variant::resolve`]).
    fn concrete(self) -> GemmConfig {
        self.config().expect("Variant::Auto has no configuration; resolve it to a concrete variant first")
    }

    pub(crate) fn tile(self) -> GemmTile {
        self.concrete().tile
    }

    pub(crate) fn cluster_size(self) -> u32 {
        self.concrete().cluster
    }

    /// Blocks that share one A tile by multicast (side by side along N).
    pub(crate) fn a_sharers(self) -> u32 {
        self.concrete().a_sharers()
    }

    /// The cluster's blocks along M and along N.
    pub(crate) fn cluster_shape(self) -> (u32, u32) {
        self.concrete().cluster_shape()
    }

    /// Blocks that share one B tile by multicast (stacked along M).
    pub(crate) fn b_sharers(self) -> u32 {
        self.concrete().b_sharers()
    }

    /// Whether the kernel runs the hybrid data-parallel + stream-K schedule (and its plan owns a workspace).
    pub fn is_stream_k(self) -> bool {
        self.config().is_some_and(|config| config.stream_k)
    }

    /// The same tiles and clusters without stream-K: what [`Variant::Auto`] runs instead of a stream-K kernel when
    /// stream-K is off ([`crate::ops::gemm::GemmOptions::auto_stream_k`]) or its blocks cannot all be resident at
    /// once: the row with the same tile, cluster and shared operand whose `stream_k` is false. Each exists for every
    /// type pair and layout its stream-K kernel exists for (a test checks it). Other variants are returned as they
    /// are.
    pub fn data_parallel(self) -> Variant {
        let Some(config) = self.config().filter(|config| config.stream_k) else { return self };
        let plain = GemmConfig { stream_k: false, ..config };
        Variant::CONFIGURED
            .iter()
            .copied()
            .find(|variant| variant.config() == Some(plain))
            .expect("every stream-K row has a data-parallel row of the same tile, cluster and shared operand")
    }
}

/// How many of the table's rows are tune candidates.
const CANDIDATE_COUNT: usize = {
    let (mut i, mut n) = (0, 0);
    while i < Variant::CONFIGURED.len() {
        if Variant::CONFIGURED[i].is_candidate() {
            n += 1;
        }
        i += 1;
    }
    n
};

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

/// The [`Family`] a module name of `oxtile_abi::gemm_sm90_module!` stands for.
macro_rules! gemm_family {
    (gemm,) => {
        Family::Gemm
    };
    (gemm_column_a,) => {
        Family::GemmColumnA
    };
}

/// Declares [`GEMM_SM90`] from the GEMM table's kernels (`oxtile_abi::for_each_gemm_sm90_kernel!`), named as the
/// device crate exports them (`oxtile_abi::gemm_sm90_kernel_name!`).
macro_rules! gemm_kernels {
    ($(($variant:ident, $kernel:literal, $tile:ident, $cluster:literal, $share:ident, $stream_k:tt) $input:ident $output:ident $layout:ident)*) => {
        /// Every sm90 GEMM kernel (gpu/kernels/gemm/src/sm90.rs, in two modules): each row of the GEMM table for
        /// each of its type pairs and layouts, in table order.
        pub const GEMM_SM90: &[GemmKernel] = &[$(GemmKernel {
            kernel: Kernel::hopper(
                oxtile_abi::gemm_sm90_module! { $layout, gemm_family!() },
                oxtile_abi::gemm_sm90_kernel_name!($input -> $output, $layout, $kernel),
            ),
            input: stringify!($input),
            output: stringify!($output),
            layout: gemm_layout!($layout),
            variant: Variant::$variant,
        }),*];
    };
}

/// A table layout.
macro_rules! gemm_layout {
    (tn) => {
        GemmLayout::Tn
    };
    (tt) => {
        GemmLayout::Tt
    };
    (nt) => {
        GemmLayout::Nt
    };
    (nn) => {
        GemmLayout::Nn
    };
}

oxtile_abi::for_each_gemm_sm90_kernel! { gemm_kernels }

/// Defines [`SymmetricVariant`] from the symmetric GEMM table (`oxtile_abi::for_each_gemm_sm90_symmetric!`).
macro_rules! symmetric_variants {
    ($($(#[$doc:meta])* $variant:ident { label: $label:literal, kernel: $kernel:literal, tile: $tile:ident, cluster: $cluster:literal, share: $share:ident, stream_k: $stream_k:literal, tune: $tune:literal, types: $types:tt, layouts: $layouts:tt })*) => {
        /// Which sm90 symmetric GEMM kernel runs a problem: [`SymmetricVariant::Auto`], or a row of the symmetric
        /// table (gpu/abi's `for_each_gemm_sm90_symmetric!`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
        pub enum SymmetricVariant {
            /// The ping-pong tile for 16-bit outputs, the cooperative one for f32.
            #[default]
            Auto,
            $($(#[$doc])* $variant,)*
        }

        impl SymmetricVariant {
            /// Every configuration of the table, in its order.
            pub const CONFIGURED: &[SymmetricVariant] = &[$(SymmetricVariant::$variant),*];

            /// The row's configuration; `None` for [`SymmetricVariant::Auto`].
            pub const fn config(self) -> Option<GemmConfig> {
                match self {
                    SymmetricVariant::Auto => None,
                    $(SymmetricVariant::$variant => Some(GemmConfig {
                        tile: oxtile_abi::$tile,
                        cluster: $cluster,
                        share: gemm_share!($share),
                        stream_k: $stream_k,
                        symmetric: true,
                    }),)*
                }
            }

            /// The short name tables and contenders use.
            pub const fn label(self) -> &'static str {
                match self {
                    SymmetricVariant::Auto => "sym-auto",
                    $(SymmetricVariant::$variant => $label,)*
                }
            }
        }
    };
}

oxtile_abi::for_each_gemm_sm90_symmetric! { symmetric_variants }

// Every symmetric row holds what the kernels assume of it.
const _: () = {
    let mut i = 0;
    while i < SymmetricVariant::CONFIGURED.len() {
        match SymmetricVariant::CONFIGURED[i].config() {
            Some(config) => config.check(),
            None => panic!("a configured variant without a configuration"),
        }
        i += 1;
    }
};

impl SymmetricVariant {
    /// The narrowest tile side of any symmetric kernel: the most tiles a stack can take.
    pub const NARROWEST_TILE: u32 = {
        let (mut i, mut narrowest) = (0, u32::MAX);
        while i < SymmetricVariant::CONFIGURED.len() {
            if let Some(config) = SymmetricVariant::CONFIGURED[i].config()
                && config.tile.tile_n < narrowest
            {
                narrowest = config.tile.tile_n;
            }
            i += 1;
        }
        narrowest
    };

    /// The k-tile depth of every symmetric kernel (checked here for each configuration): [`SymmetricVariant::Auto`]
    /// weighs a product's depth in these.
    pub const K_TILE: u32 = {
        let k_tile = SymmetricVariant::CONFIGURED[0].config().expect("configured").tile.tile_k;
        let mut i = 0;
        while i < SymmetricVariant::CONFIGURED.len() {
            match SymmetricVariant::CONFIGURED[i].config() {
                Some(config) => assert!(config.tile.tile_k == k_tile),
                None => panic!("a configured variant without a configuration"),
            }
            i += 1;
        }
        k_tile
    };
}

/// An sm90 symmetric GEMM kernel and the problems it computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmSymmetricKernel {
    pub kernel: Kernel,
    pub input: &'static str,
    pub output: &'static str,
    pub layout: GemmLayout,
    pub variant: SymmetricVariant,
}

/// The symmetric kernel computing `input` → `output` in `layout` with this (concrete) variant.
pub fn find_gemm_symmetric(
    input: &str,
    output: &str,
    layout: GemmLayout,
    variant: SymmetricVariant,
) -> Option<GemmSymmetricKernel> {
    GEMM_SYMMETRIC_SM90
        .iter()
        .copied()
        .find(|g| (g.input, g.output, g.layout, g.variant) == (input, output, layout, variant))
}

/// Declares [`GEMM_SYMMETRIC_SM90`] from the symmetric table's kernels.
macro_rules! symmetric_kernels {
    ($(($variant:ident, $kernel:literal, $tile:ident, $cluster:literal, $share:ident, $stream_k:tt) $input:ident $output:ident $layout:ident)*) => {
        /// Every sm90 symmetric GEMM kernel (gpu/kernels/gemm/src/sm90.rs), in table order.
        pub const GEMM_SYMMETRIC_SM90: &[GemmSymmetricKernel] = &[$(GemmSymmetricKernel {
            kernel: Kernel::hopper(
                oxtile_abi::gemm_sm90_module! { $layout, gemm_family!() },
                oxtile_abi::gemm_sm90_kernel_name!($input -> $output, $layout, $kernel),
            ),
            input: stringify!($input),
            output: stringify!($output),
            layout: gemm_layout!($layout),
            variant: SymmetricVariant::$variant,
        }),*];
    };
}

oxtile_abi::for_each_gemm_sm90_symmetric_kernel! { symmetric_kernels }

/// A skinny GEMM kernel (gpu/kernels/gemm/src/skinny.rs: M ≤ 16) and the problems it computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkinnyGemmKernel {
    pub kernel: Kernel,
    /// Element type of A and B, as `GemmElement::NAME` writes it.
    pub input: &'static str,
    /// Element type of D, as `GemmOutput::NAME` writes it.
    pub output: &'static str,
    pub layout: GemmLayout,
}

/// Declares [`GEMM_SKINNY`] from `oxtile_abi::for_each_gemm_skinny_kernel!`.
macro_rules! skinny_kernels {
    ($($input:ident -> $output:ident, $layout:ident;)*) => {
        /// Every skinny GEMM kernel, in the order of `oxtile_abi::for_each_gemm_skinny_kernel!`.
        pub const GEMM_SKINNY: &[SkinnyGemmKernel] = &[$(SkinnyGemmKernel {
            kernel: Kernel::hopper(
                oxtile_abi::gemm_sm90_module! { $layout, gemm_family!() },
                oxtile_abi::gemm_sm90_kernel_name!($input -> $output, $layout, "skinny"),
            ),
            input: stringify!($input),
            output: stringify!($output),
            layout: gemm_layout!($layout),
        }),*];
    };
}

oxtile_abi::for_each_gemm_skinny_kernel! { skinny_kernels }

/// The skinny kernel computing `input` → `output` GEMMs in `layout`, where there is one (A row-major: tn and tt).
pub fn find_gemm_skinny(input: &str, output: &str, layout: GemmLayout) -> Option<SkinnyGemmKernel> {
    GEMM_SKINNY.iter().copied().find(|g| (g.input, g.output, g.layout) == (input, output, layout))
}

/// Newton-Schulz's small kernels on stacks of matrices (gpu/kernels/support/src/matrix.rs): squared Frobenius norms, the
/// scaled conversion (normalization) between bf16 and f16.
pub const SUM_SQUARES_BF16: Kernel = Kernel::support("sum_squares_bf16");
pub const SUM_SQUARES_F16: Kernel = Kernel::support("sum_squares_f16");
pub const SUM_PARTIALS_F32: Kernel = Kernel::support("sum_partials_f32");
pub const SCALE_BF16_TO_BF16: Kernel = Kernel::support("scale_bf16_to_bf16");
pub const SCALE_BF16_TO_F16: Kernel = Kernel::support("scale_bf16_to_f16");
pub const SCALE_F16_TO_F16: Kernel = Kernel::support("scale_f16_to_f16");
pub const SCALE_F16_TO_BF16: Kernel = Kernel::support("scale_f16_to_bf16");

/// Hopper attention forward (gpu/kernels/attention/src/sm90.rs), per element type and head dim.
pub const ATTN_FWD_BF16_D128_SM90: Kernel = Kernel::attention("attn_fwd_bf16_d128_sm90");
pub const ATTN_FWD_F16_D128_SM90: Kernel = Kernel::attention("attn_fwd_f16_d128_sm90");
pub const ATTN_FWD_BF16_D64_SM90: Kernel = Kernel::attention("attn_fwd_bf16_d64_sm90");
pub const ATTN_FWD_F16_D64_SM90: Kernel = Kernel::attention("attn_fwd_f16_d64_sm90");
pub const ATTN_FWD_BF16_D256_SM90: Kernel = Kernel::attention("attn_fwd_bf16_d256_sm90");
pub const ATTN_FWD_F16_D256_SM90: Kernel = Kernel::attention("attn_fwd_f16_d256_sm90");
/// Ablations (the same source, compiled into gpu/kernels/attention_ablations's module): the bf16 d128 kernel with
/// a quarter of its exponentials on the polynomial (its default is MUFU only), with a rescale whenever a row maximum
/// grows (no lazy rescaling), with both consumer warpgroups issuing at will (no ping-pong); the bf16 d64 kernel with
/// MUFU only (its default puts an eighth on the polynomial).
pub const ATTN_FWD_BF16_D128_POLY_SM90: Kernel = Kernel::attention_ablation("attn_fwd_bf16_d128_poly_sm90");
pub const ATTN_FWD_BF16_D64_MUFU_SM90: Kernel = Kernel::attention_ablation("attn_fwd_bf16_d64_mufu_sm90");
pub const ATTN_FWD_BF16_D128_EAGER_SM90: Kernel = Kernel::attention_ablation("attn_fwd_bf16_d128_eager_sm90");
pub const ATTN_FWD_BF16_D128_NOPINGPONG_SM90: Kernel = Kernel::attention_ablation("attn_fwd_bf16_d128_nopingpong_sm90");
/// Ablation: the bf16 d128 kernel with each tile's exponentials taken beside its row maximum, against the
/// maximum already applied. Not on a hot path: no variant Auto takes runs it, and since its recompute decision
/// became a warpgroup vote (`bar.red.or`, issue 24) ptxas spills 44 bytes in it (docs/perf-notes.md), which its
/// bench rows pay for.
pub const ATTN_FWD_BF16_D128_SPEC_SM90: Kernel = Kernel::attention_ablation("attn_fwd_bf16_d128_spec_sm90").cold();

/// The plain attention reference (gpu/kernels/attention/src/reference.rs): one warp per query row, f32.
pub const ATTN_REFERENCE_BF16_D128: Kernel = Kernel::attention("attn_reference_bf16_d128").cold();
pub const ATTN_REFERENCE_F16_D128: Kernel = Kernel::attention("attn_reference_f16_d128").cold();
pub const ATTN_REFERENCE_BF16_D64: Kernel = Kernel::attention("attn_reference_bf16_d64").cold();
pub const ATTN_REFERENCE_F16_D64: Kernel = Kernel::attention("attn_reference_f16_d64").cold();
pub const ATTN_REFERENCE_BF16_D256: Kernel = Kernel::attention("attn_reference_bf16_d256").cold();
pub const ATTN_REFERENCE_F16_D256: Kernel = Kernel::attention("attn_reference_f16_d256").cold();
/// The plain attention backward reference (gpu/kernels/attention_backward/src/reference_backward.rs).
pub const ATTN_BWD_REFERENCE_BF16_D128: Kernel = Kernel::attention_backward("attn_bwd_reference_bf16_d128").cold();
pub const ATTN_BWD_REFERENCE_F16_D128: Kernel = Kernel::attention_backward("attn_bwd_reference_f16_d128").cold();
pub const ATTN_BWD_REFERENCE_BF16_D64: Kernel = Kernel::attention_backward("attn_bwd_reference_bf16_d64").cold();
pub const ATTN_BWD_REFERENCE_F16_D64: Kernel = Kernel::attention_backward("attn_bwd_reference_f16_d64").cold();
pub const ATTN_BWD_REFERENCE_BF16_D256: Kernel = Kernel::attention_backward("attn_bwd_reference_bf16_d256").cold();
pub const ATTN_BWD_REFERENCE_F16_D256: Kernel = Kernel::attention_backward("attn_bwd_reference_f16_d256").cold();

/// Hopper attention backward (gpu/kernels/attention_backward, backward_sm90.rs): the main kernel per element type and
/// head dim, and the preprocessing (dO·O, log2-unit LSE, the dQ accumulator zeroed) and dQ conversion per element
/// type.
pub const ATTN_BWD_BF16_D128_SM90: Kernel = Kernel::attention_backward("attn_bwd_bf16_d128_sm90");
pub const ATTN_BWD_F16_D128_SM90: Kernel = Kernel::attention_backward("attn_bwd_f16_d128_sm90");
pub const ATTN_BWD_BF16_D64_SM90: Kernel = Kernel::attention_backward("attn_bwd_bf16_d64_sm90");
pub const ATTN_BWD_F16_D64_SM90: Kernel = Kernel::attention_backward("attn_bwd_f16_d64_sm90");
pub const ATTN_BWD_BF16_D256_SM90: Kernel = Kernel::attention_backward("attn_bwd_bf16_d256_sm90");
pub const ATTN_BWD_F16_D256_SM90: Kernel = Kernel::attention_backward("attn_bwd_f16_d256_sm90");
/// The main kernels in the deterministic mode's staggered order (gpu/abi/src/dq_order.rs).
pub const ATTN_BWD_BF16_D128_STAGGERED_SM90: Kernel = Kernel::attention_backward("attn_bwd_bf16_d128_staggered_sm90");
pub const ATTN_BWD_F16_D128_STAGGERED_SM90: Kernel = Kernel::attention_backward("attn_bwd_f16_d128_staggered_sm90");
pub const ATTN_BWD_BF16_D64_STAGGERED_SM90: Kernel = Kernel::attention_backward("attn_bwd_bf16_d64_staggered_sm90");
pub const ATTN_BWD_F16_D64_STAGGERED_SM90: Kernel = Kernel::attention_backward("attn_bwd_f16_d64_staggered_sm90");
pub const ATTN_BWD_BF16_D256_STAGGERED_SM90: Kernel = Kernel::attention_backward("attn_bwd_bf16_d256_staggered_sm90");
pub const ATTN_BWD_F16_D256_STAGGERED_SM90: Kernel = Kernel::attention_backward("attn_bwd_f16_d256_staggered_sm90");
pub const ATTN_BWD_PREPROCESS_BF16: Kernel = Kernel::attention_backward("attn_bwd_preprocess_bf16");
pub const ATTN_BWD_PREPROCESS_F16: Kernel = Kernel::attention_backward("attn_bwd_preprocess_f16");
pub const ATTN_BWD_CONVERT_DQ_BF16: Kernel = Kernel::attention_backward("attn_bwd_convert_dq_bf16");
pub const ATTN_BWD_CONVERT_DQ_F16: Kernel = Kernel::attention_backward("attn_bwd_convert_dq_f16");
/// dK and dV of the split walks' pieces ([`oxtile_abi::bwd_launch::WalkSplit`]).
pub const ATTN_BWD_SUM_PIECES_BF16: Kernel = Kernel::attention_backward("attn_bwd_sum_pieces_bf16");
pub const ATTN_BWD_SUM_PIECES_F16: Kernel = Kernel::attention_backward("attn_bwd_sum_pieces_f16");

/// A 64×64 u16 tile transpose through swizzled shared memory addressed by a const composed layout.
pub const SWIZZLED_TRANSPOSE_U16: Kernel = Kernel::support("swizzled_transpose_u16");
/// [`SWIZZLED_TRANSPOSE_U16`] with the same shared addresses written by hand, to compare the machine code.
pub const SWIZZLED_TRANSPOSE_U16_BY_HAND: Kernel = Kernel::support("swizzled_transpose_u16_by_hand");

/// The benchmark's stream hold (gpu/kernels/support/src/bench.rs): one thread that keeps everything queued behind it waiting
/// until the host releases it; see `bench::hold`.
pub const HOLD_STREAM: Kernel = Kernel::support("hold_stream").cold();

/// Where each block of a grid lands (gpu/kernels/support/src/bench.rs); see `bench::device::block_placement`.
pub const BLOCK_PLACEMENT: Kernel = Kernel::support("block_placement").cold();

/// The kernels other than the GEMMs of [`GEMM_SM90`].
const OTHERS: &[Kernel] = &[
    AXPY_F32,
    AXPY_BF16,
    EXP2_F32,
    STAGE_ROWS_B16,
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
    ATTN_FWD_BF16_D256_SM90,
    ATTN_FWD_F16_D256_SM90,
    ATTN_FWD_BF16_D128_POLY_SM90,
    ATTN_FWD_BF16_D64_MUFU_SM90,
    ATTN_FWD_BF16_D128_EAGER_SM90,
    ATTN_FWD_BF16_D128_SPEC_SM90,
    ATTN_FWD_BF16_D128_NOPINGPONG_SM90,
    ATTN_REFERENCE_BF16_D128,
    ATTN_REFERENCE_F16_D128,
    ATTN_REFERENCE_BF16_D64,
    ATTN_REFERENCE_F16_D64,
    ATTN_REFERENCE_BF16_D256,
    ATTN_REFERENCE_F16_D256,
    ATTN_BWD_REFERENCE_BF16_D128,
    ATTN_BWD_REFERENCE_F16_D128,
    ATTN_BWD_REFERENCE_BF16_D64,
    ATTN_BWD_REFERENCE_F16_D64,
    ATTN_BWD_REFERENCE_BF16_D256,
    ATTN_BWD_REFERENCE_F16_D256,
    ATTN_BWD_BF16_D128_SM90,
    ATTN_BWD_F16_D128_SM90,
    ATTN_BWD_BF16_D64_SM90,
    ATTN_BWD_F16_D64_SM90,
    ATTN_BWD_BF16_D256_SM90,
    ATTN_BWD_F16_D256_SM90,
    ATTN_BWD_BF16_D128_STAGGERED_SM90,
    ATTN_BWD_F16_D128_STAGGERED_SM90,
    ATTN_BWD_BF16_D64_STAGGERED_SM90,
    ATTN_BWD_F16_D64_STAGGERED_SM90,
    ATTN_BWD_BF16_D256_STAGGERED_SM90,
    ATTN_BWD_F16_D256_STAGGERED_SM90,
    ATTN_BWD_PREPROCESS_BF16,
    ATTN_BWD_PREPROCESS_F16,
    ATTN_BWD_CONVERT_DQ_BF16,
    ATTN_BWD_CONVERT_DQ_F16,
    ATTN_BWD_SUM_PIECES_BF16,
    ATTN_BWD_SUM_PIECES_F16,
    SUM_SQUARES_BF16,
    SUM_SQUARES_F16,
    SUM_PARTIALS_F32,
    SCALE_BF16_TO_BF16,
    SCALE_BF16_TO_F16,
    SCALE_F16_TO_F16,
    SCALE_F16_TO_BF16,
    SWIZZLED_TRANSPOSE_U16,
    SWIZZLED_TRANSPOSE_U16_BY_HAND,
    HOLD_STREAM,
    BLOCK_PLACEMENT,
];

/// Every kernel, for the static checks and `oxtile kernels`: [`OTHERS`], then the GEMMs, then the symmetric GEMMs, then
/// the skinny GEMMs.
pub const ALL: &[Kernel] = &{
    let mut all = [AXPY_F32; OTHERS.len() + GEMM_SM90.len() + GEMM_SYMMETRIC_SM90.len() + GEMM_SKINNY.len()];
    let mut i = 0;
    while i < OTHERS.len() {
        all[i] = OTHERS[i];
        i += 1;
    }
    while i < OTHERS.len() + GEMM_SM90.len() {
        all[i] = GEMM_SM90[i - OTHERS.len()].kernel;
        i += 1;
    }
    while i < OTHERS.len() + GEMM_SM90.len() + GEMM_SYMMETRIC_SM90.len() {
        all[i] = GEMM_SYMMETRIC_SM90[i - OTHERS.len() - GEMM_SM90.len()].kernel;
        i += 1;
    }
    while i < all.len() {
        all[i] = GEMM_SKINNY[i - OTHERS.len() - GEMM_SM90.len() - GEMM_SYMMETRIC_SM90.len()].kernel;
        i += 1;
    }
    all
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_gemm_shares_whole_boxes_of_its_layouts_operands() {
        // The device crate checks the same for each kernel it instantiates (`check_config`).
        for gemm in GEMM_SM90.iter() {
            let config = gemm.variant.config().expect("a registered GEMM has a row");
            let (a_mn_major, b_mn_major) = (
                gemm.layout.a_order() == crate::types::Order::ColMajor,
                gemm.layout.b_order() == crate::types::Order::RowMajor,
            );
            config.check_layout(a_mn_major, b_mn_major);
        }
    }

    #[test]
    fn every_registered_kernel_is_in_its_module() {
        for kernel in ALL {
            let entry = format!(".entry {}(", kernel.name);
            let (family, cpu) = (kernel.family.name(), kernel.target.cpu());
            assert!(kernel.ptx().contains(&entry), "{} missing from the {family} {cpu} PTX", kernel.name);
        }
    }

    /// Each parameter of `kernel`'s PTX entry as (alignment, bytes): `.param .align A .b8 name[N]` for a by-value
    /// struct, `.param .u64 [.ptr …] name` and the like for a scalar or a pointer (its own size and alignment).
    fn entry_parameters(kernel: &Kernel) -> Vec<(usize, usize)> {
        let ptx = kernel.ptx();
        let start = ptx.find(&format!(".entry {}(", kernel.name)).expect("registered kernels are in their module");
        let list = &ptx[start..start + ptx[start..].find(')').expect("a parameter list")];
        list.lines()
            .filter_map(|line| line.trim().strip_prefix(".param "))
            .map(|param| {
                let words: Vec<&str> = param.trim_end_matches(',').split_whitespace().collect();
                match words.as_slice() {
                    [".align", align, ".b8", array] => {
                        let bytes = array.split('[').nth(1).and_then(|n| n.strip_suffix(']')).expect("an array");
                        (align.parse().unwrap(), bytes.parse().unwrap())
                    }
                    [scalar, ..] => {
                        let bytes = scalar[2..].parse::<usize>().expect("a sized scalar type") / 8;
                        (bytes, bytes)
                    }
                    _ => panic!("`{}`: unexpected parameter `{param}`", kernel.name),
                }
            })
            .collect()
    }

    #[test]
    fn kernels_take_the_params_the_host_passes() {
        // The launch passes one parameter per field of oxtile-abi's params struct, from the field's address; the
        // kernel's signature is declared from the same list. Here the compiled signatures are held to the fields'
        // sizes, in order, and the by-value tensor maps to the 64-byte alignment TMA needs.
        use oxtile_abi::{AttnParams, GemmParams};
        let check = |kernel: &Kernel, sizes: &[usize]| {
            let params = entry_parameters(kernel);
            let found: Vec<usize> = params.iter().map(|&(_, bytes)| bytes).collect();
            assert_eq!(found, sizes, "`{}`: {params:?}", kernel.name);
            for (align, bytes) in params {
                assert!(bytes != 128 || align == 64, "`{}`: a tensor map aligned to {align}", kernel.name);
            }
        };
        for gemm in GEMM_SM90 {
            check(&gemm.kernel, &GemmParams::SIZES);
        }
        for gemm in GEMM_SYMMETRIC_SM90 {
            check(&gemm.kernel, &GemmParams::SIZES);
        }
        let attention: Vec<&Kernel> = ALL.iter().filter(|k| k.name.starts_with("attn_fwd_")).collect();
        assert!(!attention.is_empty());
        for kernel in attention {
            check(kernel, &AttnParams::SIZES);
        }
        let backward: Vec<&Kernel> =
            ALL.iter().filter(|k| k.name.starts_with("attn_bwd_") && k.name.ends_with("_sm90")).collect();
        assert_eq!(backward.len(), 12);
        for kernel in backward {
            check(kernel, &oxtile_abi::AttnBwdParams::SIZES);
        }
        for kernel in [ATTN_BWD_PREPROCESS_BF16, ATTN_BWD_PREPROCESS_F16] {
            check(&kernel, &oxtile_abi::AttnBwdPreprocessParams::SIZES);
        }
        for kernel in [ATTN_BWD_CONVERT_DQ_BF16, ATTN_BWD_CONVERT_DQ_F16] {
            check(&kernel, &oxtile_abi::AttnBwdConvertParams::SIZES);
        }
        for kernel in [ATTN_BWD_SUM_PIECES_BF16, ATTN_BWD_SUM_PIECES_F16] {
            check(&kernel, &oxtile_abi::AttnBwdSumPiecesParams::SIZES);
        }
        check(&STAGE_ROWS_B16, &oxtile_abi::StageRowsParams::SIZES);
    }

    #[test]
    fn every_module_entry_is_registered() {
        for module in MODULES {
            for line in module.ptx.lines().filter(|l| l.contains(".entry ")) {
                let name = line.split(".entry ").nth(1).unwrap().split('(').next().unwrap();
                let registered =
                    ALL.iter().any(|k| k.name == name && k.family == module.family && k.target == module.target);
                assert!(registered, "kernel {name} of the {} module is not registered as such", module.family.name());
            }
        }
    }

    #[test]
    fn an_embedded_cubin_is_an_elf_image_with_every_kernel() {
        // Empty where the build found no ptxas (it warned); otherwise ptxas's image of the same PTX, with its report.
        for module in MODULES.iter().filter(|m| !m.cubin.is_empty()) {
            let (family, cpu) = (module.family.name(), module.target.cpu());
            assert!(module.cubin.starts_with(b"\x7fELF"), "the {family} {cpu} cubin is no ELF image");
            assert!(
                module.assembled_by().is_some_and(|v| !v.is_empty()),
                "the {family} {cpu} cubin has no ptxas report"
            );
            for kernel in ALL.iter().filter(|k| k.family == module.family && k.target == module.target) {
                let symbol = format!("\0{}\0", kernel.name);
                let found = module.cubin.windows(symbol.len()).any(|w| w == symbol.as_bytes());
                assert!(found, "{} is not in the {family} {cpu} cubin", kernel.name);
            }
        }
    }

    #[test]
    fn every_family_has_a_module_per_target() {
        for family in Family::ALL {
            assert!(module(family, Target::Sm90a).is_some(), "no {} module for sm_90a", family.name());
        }
        assert_eq!(MODULES.len(), Family::ALL.len(), "one module per family and target");
    }
}
