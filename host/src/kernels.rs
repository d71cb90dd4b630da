//! The kernels the device crate exports, with the PTX modules that embed them.

pub use oxtile_builder::Target;

use crate::ops::gemm::{Order, Variant};

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

/// An sm90 GEMM kernel and the problems it computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmKernel {
    pub kernel: Kernel,
    /// Element type of A and B, as `GemmElement::NAME` writes it.
    pub input: &'static str,
    /// Element type of D (and of the C it reads when beta ≠ 0), as `GemmOutput::NAME` writes it.
    pub output: &'static str,
    pub a_order: Order,
    pub b_order: Order,
    pub variant: Variant,
}

/// Declares [`GEMM_SM90`], one line per kernel: `name: input -> output, layout, variant`, the layout in BLAS
/// letters (A then B; t = row-major, n = column-major).
macro_rules! gemm_sm90 {
    ($($name:literal: $input:literal -> $output:literal, $layout:ident, $variant:ident;)*) => {
        /// Every sm90 GEMM kernel (gpu/kernels/src/gemm/sm90.rs): for each input type, output type (the input's
        /// or f32) and layout, the three tile configurations `Variant::Auto` chooses among; the multicast
        /// ablation; the 64×128 kernels; the ping-pong kernels, for same-type outputs only (clusters for bf16
        /// only); and the stream-K kernels (wide tiles; bf16 and f16 to their own type, bf16 to f32).
        pub const GEMM_SM90: &[GemmKernel] = &[$({
            let (a_order, b_order) = gemm_sm90!(@orders $layout);
            GemmKernel {
                kernel: Kernel::hopper($name),
                input: $input,
                output: $output,
                a_order,
                b_order,
                variant: Variant::$variant,
            }
        }),*];
    };
    (@orders tn) => { (Order::RowMajor, Order::ColMajor) };
    (@orders tt) => { (Order::RowMajor, Order::RowMajor) };
    (@orders nt) => { (Order::ColMajor, Order::RowMajor) };
    (@orders nn) => { (Order::ColMajor, Order::ColMajor) };
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
pub const ATTN_FWD_BF16_D64_POLY_SM90: Kernel = Kernel::hopper("attn_fwd_bf16_d64_poly_sm90");
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
    ATTN_FWD_BF16_D64_POLY_SM90,
    ATTN_FWD_BF16_D128_EAGER_SM90,
    ATTN_FWD_BF16_D128_SPEC_SM90,
    ATTN_FWD_BF16_D128_NOPINGPONG_SM90,
    ATTN_REFERENCE_BF16_D128,
    ATTN_REFERENCE_F16_D128,
    ATTN_REFERENCE_BF16_D64,
    ATTN_REFERENCE_F16_D64,
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
            let layout = crate::ops::gemm::layout_name(gemm.a_order, gemm.b_order);
            assert_eq!(gemm.kernel.name, format!("gemm_{}{output}_{layout}_{tile}_sm90", gemm.input));
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
