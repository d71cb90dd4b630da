//! Typed, checked launch wrappers: arguments are validated before any launch.

pub mod elementwise;
pub mod gemm;
pub mod layout_demo;
pub mod softmax;

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

use crate::error::{Error, Result};

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
