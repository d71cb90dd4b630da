//! Typed, checked launch wrappers: arguments are validated before any launch.

pub mod attention;
pub mod attention_backward;
pub mod elementwise;
pub mod gemm;
pub mod gemm_skinny;
pub mod gemm_symmetric;
pub mod layout_demo;
pub mod newton_schulz;
pub mod softmax;
pub(crate) mod staging;

use cudarc::driver::{CudaContext, CudaStream, DevicePtr, DevicePtrMut, PushKernelArg, SyncOnDrop, sys};

use crate::error::{Error, Result};
use crate::kernels::Kernel;
use crate::runtime::Gpu;

/// Device address of a read-only operand, after checking that it belongs to `stream`'s context ([`check_context`]),
/// its length and alignment. Keep the guard alive until the launch is enqueued: dropping it records the buffer's use
/// on the stream.
pub(crate) fn input_ptr<'a, T>(
    op: &'static str,
    what: &str,
    buf: &'a impl DevicePtr<T>,
    stream: &'a CudaStream,
    len: usize,
    align: u64,
) -> Result<(u64, SyncOnDrop<'a>)> {
    check_context(op, what, buf.stream().context(), stream.context())?;
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
    check_context(op, what, buf.stream().context(), stream.context())?;
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
    check_context(op, what, buf.stream().context(), stream.context())?;
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
    check_context(op, what, buf.stream().context(), stream.context())?;
    check_extent(op, what, buf.len(), extent)?;
    let (ptr, guard) = buf.device_ptr_mut(stream);
    check_align(op, what, ptr, align)?;
    Ok((ptr, guard))
}

/// Refuses a buffer of another CUDA context than the GPU handle's (`gpu`, the context of its stream): its address
/// means nothing, or another allocation, in the context the kernel runs in. Contexts are told apart by their driver
/// handle, so two `CudaContext`s on one device's primary context (what `CudaContext::new` retains) are one context.
pub(crate) fn check_context(op: &'static str, what: &str, buffer: &CudaContext, gpu: &CudaContext) -> Result<()> {
    let describe = |ctx: &CudaContext| format!("context {:p} on GPU {}", ctx.cu_ctx(), ctx.ordinal());
    if same_context(buffer.cu_ctx(), gpu.cu_ctx()) {
        Ok(())
    } else {
        Err(Error::WrongContext { op, what: what.to_string(), found: describe(buffer), expected: describe(gpu) })
    }
}

/// Whether two driver context handles are the same context ([`check_context`]).
fn same_context(a: sys::CUcontext, b: sys::CUcontext) -> bool {
    std::ptr::eq(a, b)
}

/// Byte ranges `[start, start + bytes)` of two buffers share a byte. An empty range shares none.
pub(crate) fn overlaps(a: (u64, usize), b: (u64, usize)) -> bool {
    let end = |(start, bytes): (u64, usize)| start.saturating_add(bytes as u64);
    a.1 > 0 && b.1 > 0 && a.0 < end(b) && b.0 < end(a)
}

/// Refuses an output that shares bytes with any other operand (`(name, address, bytes)`: the whole range the
/// kernel may touch, e.g. a strided view's extent): the kernel would read what it overwrites, or two outputs race.
/// The rule compares address ranges, so it also refuses interleaved views that never touch the same element; sound
/// and simple, and no kernel here is meant for such operands.
pub(crate) fn check_disjoint(
    op: &'static str,
    output: (&str, u64, usize),
    others: &[(&str, u64, usize)],
) -> Result<()> {
    for &(name, start, bytes) in others {
        if overlaps((output.1, output.2), (start, bytes)) {
            return Err(Error::Overlap { op, output: output.0.to_string(), other: name.to_string() });
        }
    }
    Ok(())
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
    // Threads read x and write y in vectors over a grid-stride loop: y sharing bytes with x would race.
    check_disjoint(
        kernel.name,
        ("y", y_ptr, n * std::mem::size_of::<U>()),
        &[("x", x_ptr, n * std::mem::size_of::<T>())],
    )?;
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
    // SAFETY: the caller names a kernel of this signature; both buffers belong to the GPU's context, hold n elements
    // with the alignment its vector accesses need, and share no byte.
    unsafe { launch.launch(gpu.grid_1d(n.div_ceil(per_thread), THREADS)) }
        .map(drop)
        .map_err(|source| Error::Launch { kernel: kernel.name, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ranges_overlap_when_they_share_a_byte() {
        assert!(overlaps((100, 10), (105, 10)));
        assert!(overlaps((105, 10), (100, 10)));
        assert!(overlaps((100, 10), (100, 10)));
        // One inside the other.
        assert!(overlaps((100, 100), (150, 2)));
        assert!(overlaps((150, 2), (100, 100)));
        // Touching ends share nothing.
        assert!(!overlaps((100, 10), (110, 10)));
        assert!(!overlaps((110, 10), (100, 10)));
        // Empty ranges share nothing, even inside another.
        assert!(!overlaps((105, 0), (100, 10)));
        assert!(!overlaps((100, 10), (105, 0)));
        // Ranges near the top of the address space do not wrap.
        assert!(overlaps((u64::MAX - 4, 8), (u64::MAX - 1, 1)));
        assert!(!overlaps((u64::MAX - 4, 8), (0, 16)));
    }

    #[test]
    fn outputs_overlapping_any_operand_are_refused_by_name() {
        assert!(check_disjoint("gemm", ("D", 0, 64), &[("A", 64, 64), ("B", 128, 8)]).is_ok());
        let err = check_disjoint("gemm", ("D", 0, 65), &[("A", 192, 64), ("B", 64, 64)]).unwrap_err();
        assert!(matches!(&err, Error::Overlap { op: "gemm", output, other } if output == "D" && other == "B"), "{err}");
        assert!(err.to_string().contains("D overlaps B"), "{err}");
    }

    #[test]
    fn contexts_are_compared_by_their_driver_handle() {
        let handle = |address: usize| std::ptr::without_provenance_mut::<sys::CUctx_st>(address);
        assert!(same_context(handle(0x1000), handle(0x1000)));
        assert!(!same_context(handle(0x1000), handle(0x2000)));
        assert!(!same_context(std::ptr::null_mut(), handle(0x1000)));
    }
}
