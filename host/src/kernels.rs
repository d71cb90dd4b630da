//! The kernels the device crate exports, with the PTX modules that embed them.

pub use oxtile_builder::Target;

/// PTX of gpu/kernels for each target, built by build.rs.
pub const MODULES: &[(Target, &str)] =
    &[(Target::Sm90a, include_str!(concat!(env!("OUT_DIR"), "/kernels_sm_90a.ptx")))];

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

    /// A kernel off every hot path (a reference the tests compare with): spills would only cost time.
    const fn hopper_cold(name: &'static str) -> Kernel {
        Kernel { name, target: Target::Sm90a, hot: false }
    }

    /// The PTX module this kernel lives in.
    pub fn ptx(&self) -> &'static str {
        module_ptx(self.target).expect("every registered kernel's target has a module")
    }
}

pub fn module_ptx(target: Target) -> Option<&'static str> {
    MODULES.iter().find(|(t, _)| *t == target).map(|(_, ptx)| *ptx)
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

pub const GEMM_BF16_TN_SM90: Kernel = Kernel::hopper("gemm_bf16_tn_128x256_sm90");
pub const GEMM_F16_TN_SM90: Kernel = Kernel::hopper("gemm_f16_tn_128x256_sm90");
pub const GEMM_BF16_TN_C2_SM90: Kernel = Kernel::hopper("gemm_bf16_tn_128x256_c2_sm90");
pub const GEMM_F16_TN_C2_SM90: Kernel = Kernel::hopper("gemm_f16_tn_128x256_c2_sm90");
pub const GEMM_BF16_TN_C2_UNSHARED_SM90: Kernel = Kernel::hopper("gemm_bf16_tn_128x256_c2_nomc_sm90");
pub const GEMM_BF16_TN_NARROW_SM90: Kernel = Kernel::hopper("gemm_bf16_tn_128x64_sm90");
pub const GEMM_F16_TN_NARROW_SM90: Kernel = Kernel::hopper("gemm_f16_tn_128x64_sm90");

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
pub const ATTN_FWD_BF16_D64_NOPOLY_SM90: Kernel = Kernel::hopper("attn_fwd_bf16_d64_nopoly_sm90");
pub const ATTN_FWD_BF16_D128_EAGER_SM90: Kernel = Kernel::hopper("attn_fwd_bf16_d128_eager_sm90");
pub const ATTN_FWD_BF16_D128_NOPINGPONG_SM90: Kernel = Kernel::hopper("attn_fwd_bf16_d128_nopingpong_sm90");

/// The plain attention reference (gpu/kernels/src/attention/reference.rs): one warp per query row, f32.
pub const ATTN_REFERENCE_BF16_D128: Kernel = Kernel::hopper_cold("attn_reference_bf16_d128");
pub const ATTN_REFERENCE_F16_D128: Kernel = Kernel::hopper_cold("attn_reference_f16_d128");
pub const ATTN_REFERENCE_BF16_D64: Kernel = Kernel::hopper_cold("attn_reference_bf16_d64");
pub const ATTN_REFERENCE_F16_D64: Kernel = Kernel::hopper_cold("attn_reference_f16_d64");

/// A 64×64 u16 tile transpose through swizzled shared memory addressed by a const composed layout.
pub const SWIZZLED_TRANSPOSE_U16: Kernel = Kernel::hopper("swizzled_transpose_u16");
/// [`SWIZZLED_TRANSPOSE_U16`] with the same shared addresses written by hand, to compare the machine code.
pub const SWIZZLED_TRANSPOSE_U16_BY_HAND: Kernel = Kernel::hopper("swizzled_transpose_u16_by_hand");

/// Every kernel, for the static checks and `oxtile kernels`.
pub const ALL: &[Kernel] = &[
    AXPY_F32,
    AXPY_BF16,
    EXP2_F32,
    EXP2_POLY_F32,
    EXP2_THROUGHPUT_MUFU,
    EXP2_THROUGHPUT_POLY,
    EXP2_THROUGHPUT_MIXED_1_4,
    EXP2_THROUGHPUT_MIXED_3_8,
    EXP2_THROUGHPUT_MIXED_1_2,
    GEMM_BF16_TN_SM90,
    GEMM_F16_TN_SM90,
    GEMM_BF16_TN_C2_SM90,
    GEMM_F16_TN_C2_SM90,
    GEMM_BF16_TN_C2_UNSHARED_SM90,
    GEMM_BF16_TN_NARROW_SM90,
    GEMM_F16_TN_NARROW_SM90,
    ATTN_FWD_BF16_D128_SM90,
    ATTN_FWD_F16_D128_SM90,
    ATTN_FWD_BF16_D64_SM90,
    ATTN_FWD_F16_D64_SM90,
    ATTN_FWD_BF16_D128_POLY_SM90,
    ATTN_FWD_BF16_D64_NOPOLY_SM90,
    ATTN_FWD_BF16_D128_EAGER_SM90,
    ATTN_FWD_BF16_D128_NOPINGPONG_SM90,
    ATTN_REFERENCE_BF16_D128,
    ATTN_REFERENCE_F16_D128,
    ATTN_REFERENCE_BF16_D64,
    ATTN_REFERENCE_F16_D64,
    SWIZZLED_TRANSPOSE_U16,
    SWIZZLED_TRANSPOSE_U16_BY_HAND,
];

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
    fn every_module_entry_is_registered() {
        for (target, ptx) in MODULES {
            for line in ptx.lines().filter(|l| l.contains(".entry ")) {
                let name = line.split(".entry ").nth(1).unwrap().split('(').next().unwrap();
                assert!(ALL.iter().any(|k| k.name == name && k.target == *target), "kernel {name} is not registered");
            }
        }
    }
}
