//! The swizzled tile transpose of gpu/kernels/support/src/layout_demo.rs: proof that indexing through a const composed
//! layout costs what hand-written index arithmetic costs. Two entry points, one per address function.

use cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use oxtile_abi::{TRANSPOSE_SMEM_BYTES, TRANSPOSE_THREADS, TRANSPOSE_TILE};

use super::{check_disjoint, input_ptr, output_ptr};
use crate::error::{Error, Result};
use crate::kernels::{self, Kernel};
use crate::runtime::Gpu;

/// `dst = srcᵀ`: `src` is `rows`×`cols` row-major u16, `dst` the `cols`×`rows` row-major result. Both sides must
/// be multiples of 64; shared memory is addressed through the kernel's const `Sw<3,4,3> ∘ (64,64):(128,2)`.
pub fn swizzled_transpose_u16(
    gpu: &Gpu,
    src: &impl DevicePtr<u16>,
    dst: &mut impl DevicePtrMut<u16>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    transpose(gpu, kernels::SWIZZLED_TRANSPOSE_U16, src, dst, rows, cols)
}

/// As [`swizzled_transpose_u16`], with the shared addresses computed by the hand-written function.
pub fn swizzled_transpose_u16_by_hand(
    gpu: &Gpu,
    src: &impl DevicePtr<u16>,
    dst: &mut impl DevicePtrMut<u16>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    transpose(gpu, kernels::SWIZZLED_TRANSPOSE_U16_BY_HAND, src, dst, rows, cols)
}

/// Grid `y` is limited to 65535 blocks.
const MAX_GRID_Y: usize = 65535;

fn transpose(
    gpu: &Gpu,
    kernel: Kernel,
    src: &impl DevicePtr<u16>,
    dst: &mut impl DevicePtrMut<u16>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let tile = TRANSPOSE_TILE as usize;
    if !rows.is_multiple_of(tile) || !cols.is_multiple_of(tile) {
        return Err(Error::bad_argument(kernel.name, format!("{rows}x{cols} is not a multiple of {tile}x{tile}")));
    }
    if rows > u32::MAX as usize || cols > u32::MAX as usize || rows / tile > MAX_GRID_Y {
        return Err(Error::bad_argument(kernel.name, format!("{rows}x{cols} is too large for one launch")));
    }
    let n = rows
        .checked_mul(cols)
        .ok_or_else(|| Error::bad_argument(kernel.name, format!("{rows}x{cols} elements overflow")))?;
    let (src_ptr, _src_use) = input_ptr(kernel.name, "src", src, gpu.stream(), n, 2)?;
    let (dst_ptr, _dst_use) = output_ptr(kernel.name, "dst", dst, gpu.stream(), n, 2)?;
    check_disjoint(kernel.name, ("dst", dst_ptr, 2 * n), &[("src", src_ptr, 2 * n)])?;
    if n == 0 {
        return Ok(());
    }
    let (rows_arg, cols_arg) = (rows as u32, cols as u32);
    let function = gpu.function(kernel)?;
    let config = LaunchConfig {
        grid_dim: ((cols / tile) as u32, (rows / tile) as u32, 1),
        block_dim: (TRANSPOSE_THREADS, 1, 1),
        shared_mem_bytes: TRANSPOSE_SMEM_BYTES,
    };
    let mut launch = gpu.stream().launch_builder(&function);
    launch.arg(&src_ptr).arg(&dst_ptr).arg(&rows_arg).arg(&cols_arg);
    // SAFETY: the arguments match the kernel's signature; both buffers hold rows*cols elements, both sides are
    // multiples of the tile, and the grid, block and shared memory are what the kernel expects.
    unsafe { launch.launch(config) }.map(drop).map_err(|source| Error::Launch { kernel: kernel.name, source })
}
