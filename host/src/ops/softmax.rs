//! Launch wrappers of the attention softmax's building blocks (gpu/device/src/softmax, their kernels in
//! gpu/kernels/support/src/exp2.rs): the software exp2 over a buffer, and the exponential-throughput kernels of
//! `oxtile bench exp2`.

use cudarc::driver::{CudaFunction, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use oxtile_abi::exp2::{THROUGHPUT_THREADS, THROUGHPUT_VALUES};

use super::{launch_map, output_ptr};
use crate::error::{Error, Result};
use crate::kernels::{self, Kernel};
use crate::runtime::Gpu;

/// f32 elements, loaded one at a time.
const ELEMENT_BYTES: u64 = 4;

/// y ← 2^x by the polynomial alone (`exp2_poly`: no MUFU). Accurate to 2^-10 relative for −126 ≤ x ≤ 0, the
/// range the attention kernel feeds it; x ≤ −127 gives 0. See [`crate::exp2`] for its CPU mirror.
pub fn exp2_poly_f32(gpu: &Gpu, x: &impl DevicePtr<f32>, y: &mut impl DevicePtrMut<f32>) -> Result<()> {
    launch_map(gpu, kernels::EXP2_POLY_F32, None, x, y, ELEMENT_BYTES, 1)
}

/// The bias of [`Exp2Throughput::launch`] the benchmark and the checks use: the values settle near 0.31, the
/// arguments near −1.7.
pub const THROUGHPUT_BIAS: f32 = 2.0;

/// Which unit computes a throughput kernel's exponentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exp2Mode {
    /// MUFU.EX2 (`ex2.approx.ftz.f32`) only.
    Mufu,
    /// The polynomial on the FMA pipe only.
    Poly,
    /// `num` of every `den` by the polynomial, the rest by MUFU.EX2.
    Mixed { num: u32, den: u32 },
}

impl Exp2Mode {
    /// Every mode with a kernel, MUFU-only (the baseline) first.
    pub const ALL: [Exp2Mode; 5] = [
        Exp2Mode::Mufu,
        Exp2Mode::Poly,
        Exp2Mode::Mixed { num: 1, den: 4 },
        Exp2Mode::Mixed { num: 3, den: 8 },
        Exp2Mode::Mixed { num: 1, den: 2 },
    ];

    /// This mode's kernel; `None` for a mix without one.
    pub fn kernel(self) -> Option<Kernel> {
        match self {
            Exp2Mode::Mufu => Some(kernels::EXP2_THROUGHPUT_MUFU),
            Exp2Mode::Poly => Some(kernels::EXP2_THROUGHPUT_POLY),
            Exp2Mode::Mixed { num: 1, den: 4 } => Some(kernels::EXP2_THROUGHPUT_MIXED_1_4),
            Exp2Mode::Mixed { num: 3, den: 8 } => Some(kernels::EXP2_THROUGHPUT_MIXED_3_8),
            Exp2Mode::Mixed { num: 1, den: 2 } => Some(kernels::EXP2_THROUGHPUT_MIXED_1_2),
            Exp2Mode::Mixed { .. } => None,
        }
    }

    /// Share of the exponentials computed by the polynomial.
    pub fn poly_fraction(self) -> f64 {
        match self {
            Exp2Mode::Mufu => 0.0,
            Exp2Mode::Poly => 1.0,
            Exp2Mode::Mixed { num, den } => num as f64 / den as f64,
        }
    }

    pub fn name(self) -> String {
        match self {
            Exp2Mode::Mufu => "mufu".into(),
            Exp2Mode::Poly => "poly".into(),
            Exp2Mode::Mixed { num, den } => format!("mixed {num}/{den} poly"),
        }
    }
}

/// A throughput kernel ready to launch: one full wave of 256-thread blocks at the kernel's occupancy, each
/// thread keeping [`THROUGHPUT_VALUES`] values in registers and writing one sum.
pub struct Exp2Throughput {
    pub mode: Exp2Mode,
    kernel: Kernel,
    function: CudaFunction,
    /// Blocks of the grid: SMs × blocks resident per SM.
    pub blocks: u32,
}

impl Exp2Throughput {
    pub fn new(gpu: &Gpu, mode: Exp2Mode) -> Result<Exp2Throughput> {
        let kernel = mode
            .kernel()
            .ok_or_else(|| Error::bad_argument("exp2_throughput", format!("no kernel for mode {}", mode.name())))?;
        let function = gpu.function(kernel)?;
        let per_sm = function.occupancy_max_active_blocks_per_multiprocessor(THROUGHPUT_THREADS, 0, None)?.max(1);
        Ok(Exp2Throughput { mode, kernel, function, blocks: gpu.sm_count() * per_sm })
    }

    /// Threads of the grid: the length `out` must have.
    pub fn threads(&self) -> usize {
        self.blocks as usize * THROUGHPUT_THREADS as usize
    }

    /// Exponentials one launch of `iters` iterations computes.
    pub fn exponentials(&self, iters: u32) -> f64 {
        self.threads() as f64 * THROUGHPUT_VALUES as f64 * iters as f64
    }

    /// Each thread applies v ← 2^(v − bias) `iters` times to its values and writes their sum to `out[thread]`.
    /// `bias` ≥ 1 keeps the values in (0, 1] and the arguments in the attention range (x ≤ 0).
    pub fn launch(&self, gpu: &Gpu, iters: u32, bias: f32, out: &mut impl DevicePtrMut<f32>) -> Result<()> {
        let name = self.kernel.name;
        if !(1.0..=64.0).contains(&bias) {
            return Err(Error::bad_argument(name, format!("bias {bias} is outside [1, 64]")));
        }
        let (out_ptr, _out_use) = output_ptr(name, "out", out, gpu.stream(), self.threads(), ELEMENT_BYTES)?;
        let mut launch = gpu.stream().launch_builder(&self.function);
        launch.arg(&iters).arg(&bias).arg(&out_ptr);
        let config =
            LaunchConfig { grid_dim: (self.blocks, 1, 1), block_dim: (THROUGHPUT_THREADS, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the argument list matches the kernel's signature; `out` holds one f32 per thread of the grid.
        unsafe { launch.launch(config) }.map(drop).map_err(|source| Error::Launch { kernel: name, source })
    }
}
