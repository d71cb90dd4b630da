//! Typed, checked launch wrappers: arguments are validated before any launch.

pub mod attention;
pub mod elementwise;
pub mod gemm;
pub mod layout_demo;
pub mod softmax;

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, PushKernelArg, SyncOnDrop};

use crate::error::{Error, Result};
use crate::kernels::Kernel;
use crate::runtime::Gpu;

/// Device address of a read-only operand, after checking its length and alignment. Keep the guard alive
/// until the launch is enqueued: dropping it records the buffer's use on the stream.
pub(crate) fn input_ptr<'a, T>(
    op: &'static str,
    what: &str,
    buf: &'a impl DevicePtr<T>,
    stream: &'a CudaStream,
    len: usize,
    align: u64,
) -> Result<(u64, SyncOnDrop<'a>)> {
    check_len(op, what, buf.len(), len)?;
    let (ptr, guard) = buf.device_ptr(stream);
    check_align(op, what, ptr, align)?;
    Ok((ptr, guard))
}

/// Device address of an output operand, after checking its length and alignment; as [`input_ptr`].
pub(crate) fn output_ptr<'a, T>(
    op: &'static str,
    what: &str,
    buf: &'a mut impl DevicePtrMut<T>,
    stream: &'a CudaStream,
    len: usize,
    align: u64,
) -> Result<(u64, SyncOnDrop<'a>)> {
    check_len(op, what, buf.len(), len)?;
    let (ptr, guard) = buf.device_ptr_mut(stream);
    check_align(op, what, ptr, align)?;
    Ok((ptr, guard))
}

/// Device address of a read-only strided operand whose elements span `extent` elements from its start: the buffer
/// must hold at least that many (a view into a larger tensor may hold more). As [`input_ptr`] otherwise.
pub(crate) fn strided_ptr<'a, T>(
    op: &'static str,
    what: &str,
    buf: &'a impl DevicePtr<T>,
    stream: &'a CudaStream,
    extent: usize,
    align: u64,
) -> Result<(u64, SyncOnDrop<'a>)> {
    check_extent(op, what, buf.len(), extent)?;
    let (ptr, guard) = buf.device_ptr(stream);
    check_align(op, what, ptr, align)?;
    Ok((ptr, guard))
}

/// As [`strided_ptr`] for an output operand.
pub(crate) fn strided_ptr_mut<'a, T>(
    op: &'static str,
    what: &str,
    buf: &'a mut impl DevicePtrMut<T>,
    stream: &'a CudaStream,
    extent: usize,
    align: u64,
) -> Result<(u64, SyncOnDrop<'a>)> {
    check_extent(op, what, buf.len(), extent)?;
    let (ptr, guard) = buf.device_ptr_mut(stream);
    check_align(op, what, ptr, align)?;
    Ok((ptr, guard))
}

fn check_extent(op: &'static str, what: &str, have: usize, extent: usize) -> Result<()> {
    if have >= extent {
        Ok(())
    } else {
        Err(Error::bad_argument(op, format!("{what} has {have} elements, its shape and strides reach {extent}")))
    }
}

fn check_len(op: &'static str, what: &str, have: usize, want: usize) -> Result<()> {
    if have == want {
        Ok(())
    } else {
        Err(Error::bad_argument(op, format!("{what} has {have} elements, expected {want}")))
    }
}

fn check_align(op: &'static str, what: &str, ptr: u64, align: u64) -> Result<()> {
    if ptr.is_multiple_of(align) {
        Ok(())
    } else {
        Err(Error::bad_argument(op, format!("{what} at {ptr:#x} is not {align}-byte aligned")))
    }
}

/// Launches an elementwise kernel with the signature `(n, [alpha,] x, y)` over `y.len()` elements, after checking
/// that `x` matches `y` and both are `align`-byte aligned; each thread of the grid handles `per_thread` elements.
pub(crate) fn launch_map<T, U>(
    gpu: &Gpu,
    kernel: Kernel,
    alpha: Option<f32>,
    x: &impl DevicePtr<T>,
    y: &mut impl DevicePtrMut<U>,
    align: u64,
    per_thread: usize,
) -> Result<()> {
    const THREADS: u32 = 256;
    let n = y.len();
    let (x_ptr, _x_use) = input_ptr(kernel.name, "x", x, gpu.stream(), n, align)?;
    let (y_ptr, _y_use) = output_ptr(kernel.name, "y", y, gpu.stream(), n, align)?;
    if n == 0 {
        return Ok(());
    }
    let function = gpu.function(kernel)?;
    let mut launch = gpu.stream().launch_builder(&function);
    launch.arg(&n);
    if let Some(alpha) = &alpha {
        launch.arg(alpha);
    }
    launch.arg(&x_ptr).arg(&y_ptr);
    // SAFETY: the caller names a kernel of this signature; both buffers hold n elements with the alignment its
    // vector accesses need.
    unsafe { launch.launch(gpu.grid_1d(n.div_ceil(per_thread), THREADS)) }
        .map(drop)
        .map_err(|source| Error::Launch { kernel: kernel.name, source })
}
