//! axpy and exp2: the end-to-end proof of the Rust → PTX → launch chain.

use cudarc::driver::{DevicePtr, DevicePtrMut, PushKernelArg};
use half::bf16;

use super::{input_ptr, output_ptr};
use crate::error::{Error, Result};
use crate::kernels::{self, Kernel};
use crate::runtime::Gpu;

/// The kernels load and store 16 bytes at a time.
const VECTOR_BYTES: u64 = 16;
const THREADS: u32 = 256;

/// y ← alpha·x + y, f32.
pub fn axpy_f32(gpu: &Gpu, alpha: f32, x: &impl DevicePtr<f32>, y: &mut impl DevicePtrMut<f32>) -> Result<()> {
    axpy(gpu, kernels::AXPY_F32, alpha, x, y)
}

/// y ← alpha·x + y, bf16 storage, f32 arithmetic, rounded to nearest even.
pub fn axpy_bf16(gpu: &Gpu, alpha: f32, x: &impl DevicePtr<bf16>, y: &mut impl DevicePtrMut<bf16>) -> Result<()> {
    axpy(gpu, kernels::AXPY_BF16, alpha, x, y)
}

fn axpy<T>(gpu: &Gpu, kernel: Kernel, alpha: f32, x: &impl DevicePtr<T>, y: &mut impl DevicePtrMut<T>) -> Result<()> {
    let n = y.len();
    let (x_ptr, _x_use) = input_ptr(kernel.name, "x", x, gpu.stream(), n, VECTOR_BYTES)?;
    let (y_ptr, _y_use) = output_ptr(kernel.name, "y", y, gpu.stream(), n, VECTOR_BYTES)?;
    if n == 0 {
        return Ok(());
    }
    let function = gpu.function(kernel)?;
    let mut launch = gpu.stream().launch_builder(&function);
    launch.arg(&n).arg(&alpha).arg(&x_ptr).arg(&y_ptr);
    // SAFETY: the argument list matches the kernel's signature, both buffers hold n elements and are aligned.
    unsafe { launch.launch(gpu.grid_1d(n.div_ceil(4), THREADS)) }
        .map(drop)
        .map_err(|source| Error::Launch { kernel: kernel.name, source })
}

/// y ← 2^x through the MUFU (`ex2.approx.ftz`: subnormals flush to zero).
pub fn exp2_f32(gpu: &Gpu, x: &impl DevicePtr<f32>, y: &mut impl DevicePtrMut<f32>) -> Result<()> {
    let kernel = kernels::EXP2_F32;
    let n = y.len();
    let (x_ptr, _x_use) = input_ptr(kernel.name, "x", x, gpu.stream(), n, VECTOR_BYTES)?;
    let (y_ptr, _y_use) = output_ptr(kernel.name, "y", y, gpu.stream(), n, VECTOR_BYTES)?;
    if n == 0 {
        return Ok(());
    }
    let function = gpu.function(kernel)?;
    let mut launch = gpu.stream().launch_builder(&function);
    launch.arg(&n).arg(&x_ptr).arg(&y_ptr);
    // SAFETY: as in `axpy`.
    unsafe { launch.launch(gpu.grid_1d(n.div_ceil(4), THREADS)) }
        .map(drop)
        .map_err(|source| Error::Launch { kernel: kernel.name, source })
}
