//! axpy and exp2: the end-to-end proof of the Rust → PTX → launch chain.

use cudarc::driver::{DevicePtr, DevicePtrMut};
use half::bf16;

use super::launch_map;
use crate::error::Result;
use crate::kernels::{self, Kernel};
use crate::runtime::Gpu;

/// The kernels load and store 16 bytes at a time.
const VECTOR_BYTES: u64 = 16;

/// y ← alpha·x + y, f32.
pub fn axpy_f32(gpu: &Gpu, alpha: f32, x: &impl DevicePtr<f32>, y: &mut impl DevicePtrMut<f32>) -> Result<()> {
    axpy(gpu, kernels::AXPY_F32, alpha, x, y)
}

/// y ← alpha·x + y, bf16 storage, f32 arithmetic, rounded to nearest even.
pub fn axpy_bf16(gpu: &Gpu, alpha: f32, x: &impl DevicePtr<bf16>, y: &mut impl DevicePtrMut<bf16>) -> Result<()> {
    axpy(gpu, kernels::AXPY_BF16, alpha, x, y)
}

fn axpy<T>(gpu: &Gpu, kernel: Kernel, alpha: f32, x: &impl DevicePtr<T>, y: &mut impl DevicePtrMut<T>) -> Result<()> {
    launch_map(gpu, kernel, Some(alpha), x, y, VECTOR_BYTES, 4)
}

/// y ← 2^x through the MUFU (`ex2.approx.ftz`: subnormals flush to zero).
pub fn exp2_f32(gpu: &Gpu, x: &impl DevicePtr<f32>, y: &mut impl DevicePtrMut<f32>) -> Result<()> {
    launch_map(gpu, kernels::EXP2_F32, None, x, y, VECTOR_BYTES, 4)
}
