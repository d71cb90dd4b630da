//! Device memory another library allocated (PyTorch tensors, for the Python package), handed to the ops as it is:
//! an address and a length, checked against what the driver knows of the address before any op sees it.
//!
//! The ops take buffers through cudarc's [`DevicePtr`] / [`DevicePtrMut`] and check each one's context, length and
//! alignment before launch. [`ExternalBuffer`] is such a buffer over memory cudarc did not allocate: its
//! constructor asks the driver (`cuPointerGetAttributes`) where the address lives and refuses host memory, memory of
//! another GPU or context ([`Error::WrongContext`]) and a length that runs past the end of the allocation, so the ops'
//! own checks then hold for it as for a `CudaSlice`.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUmemorytype, CUpointer_attribute};
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};

use crate::error::{Error, Result};
use crate::runtime::Gpu;

/// `len` elements of `T` from `address`, in memory another library owns, for launches on one [`Gpu`] handle.
///
/// It records no events: ordering with work on other streams is the owner's (PyTorch orders its tensors' uses by
/// stream, and the Python package launches on PyTorch's current stream).
pub struct ExternalBuffer<T> {
    address: u64,
    len: usize,
    stream: Arc<CudaStream>,
    _element: PhantomData<T>,
}

/// What the driver says of a device address ([`ExternalBuffer::new`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointerInfo {
    /// `CU_MEMORYTYPE_*` (2 = device); 0 when the driver does not know the address.
    pub memory_type: u32,
    /// The context the memory was allocated in; null for memory not bound to one (virtual-memory mappings,
    /// which PyTorch's expandable segments use).
    pub context: sys::CUcontext,
    pub device_ordinal: i32,
    /// The allocation holding the address: its start and size in bytes (0 when unknown).
    pub range_start: u64,
    pub range_bytes: usize,
}

impl PointerInfo {
    /// Asks the driver about `address` (`cuPointerGetAttributes`, which reports an unknown address as all zeros
    /// rather than failing).
    pub fn query(address: u64) -> Result<PointerInfo> {
        let mut memory_type: u32 = 0;
        let mut context: sys::CUcontext = std::ptr::null_mut();
        let mut device_ordinal: i32 = -1;
        let mut range_start: u64 = 0;
        let mut range_bytes: usize = 0;
        let mut attributes = [
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_CONTEXT,
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        ];
        let mut data: [*mut c_void; 5] = [
            (&raw mut memory_type).cast(),
            (&raw mut context).cast(),
            (&raw mut device_ordinal).cast(),
            (&raw mut range_start).cast(),
            (&raw mut range_bytes).cast(),
        ];
        // SAFETY: each data pointer points at a value of the type its attribute writes (CUmemorytype is a u32
        // enum, the ordinal an int, the range start a CUdeviceptr, its size a size_t), all alive for the call.
        unsafe {
            sys::cuPointerGetAttributes(attributes.len() as u32, attributes.as_mut_ptr(), data.as_mut_ptr(), address)
        }
        .result()?;
        Ok(PointerInfo { memory_type, context, device_ordinal, range_start, range_bytes })
    }
}

impl<T> ExternalBuffer<T> {
    /// `len` elements of `T` at `address`, for launches on `gpu`'s stream. `what` names the buffer in errors
    /// (e.g. `"q"`), `op` the operation. Refused before any launch ([`Error::BadArgument`]): an address the driver
    /// does not know as device memory (host memory, a freed or made-up address) or whose allocation ends before
    /// `len` elements do; ([`Error::WrongContext`]) memory of another GPU or context than `gpu`'s.
    ///
    /// # Safety
    /// The memory stays allocated, and is not written by work unordered with `gpu`'s stream, until every launch
    /// that uses the buffer has finished.
    pub unsafe fn new(gpu: &Gpu, op: &'static str, what: &str, address: u64, len: usize) -> Result<Self> {
        gpu.context().bind_to_thread()?;
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| Error::BadArgument {
            op,
            message: format!("{what}: {len} elements overflow the address space"),
        })?;
        check_pointer(op, what, address, bytes, gpu, &PointerInfo::query(address)?)?;
        Ok(ExternalBuffer { address, len, stream: gpu.stream().clone(), _element: PhantomData })
    }

    pub fn address(&self) -> u64 {
        self.address
    }
}

/// [`ExternalBuffer::new`]'s checks of `bytes` bytes at `address` against what the driver said of it (`info`).
fn check_pointer(
    op: &'static str,
    what: &str,
    address: u64,
    bytes: usize,
    gpu: &Gpu,
    info: &PointerInfo,
) -> Result<()> {
    let ctx = gpu.context();
    let describe_gpu = || format!("context {:p} on GPU {}", ctx.cu_ctx(), ctx.ordinal());
    check_info(op, what, address, bytes, (ctx.cu_ctx(), ctx.ordinal()), info).map_err(|error| match error {
        Error::WrongContext { op, what, found, .. } => {
            Error::WrongContext { op, what, found, expected: describe_gpu() }
        }
        other => other,
    })
}

/// The checks of [`check_pointer`] against a context handle and device ordinal (`gpu`): no GPU needed.
fn check_info(
    op: &'static str,
    what: &str,
    address: u64,
    bytes: usize,
    (context, ordinal): (sys::CUcontext, usize),
    info: &PointerInfo,
) -> Result<()> {
    let bad = |message: String| Err(Error::BadArgument { op, message });
    if info.memory_type != CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 {
        return bad(format!(
            "{what} at {address:#x} is not GPU device memory (the driver reports memory type {}: {})",
            info.memory_type,
            match info.memory_type {
                0 => "an address no CUDA allocation holds",
                1 => "host memory",
                4 => "unified memory",
                _ => "not device memory",
            }
        ));
    }
    let on_other_gpu = usize::try_from(info.device_ordinal).ok() != Some(ordinal);
    let in_other_context = !info.context.is_null() && !std::ptr::eq(info.context, context);
    if on_other_gpu || in_other_context {
        return Err(Error::WrongContext {
            op,
            what: what.to_string(),
            found: format!("context {:p} on GPU {}", info.context, info.device_ordinal),
            expected: String::new(),
        });
    }
    if info.range_bytes > 0 {
        let end = info.range_start.saturating_add(info.range_bytes as u64);
        if address < info.range_start || address.saturating_add(bytes as u64) > end {
            return bad(format!(
                "{what}: {bytes} bytes from {address:#x} run past the end of its allocation ({} bytes from {:#x})",
                info.range_bytes, info.range_start
            ));
        }
    }
    Ok(())
}

impl<T> DeviceSlice<T> for ExternalBuffer<T> {
    fn len(&self) -> usize {
        self.len
    }

    fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

impl<T> DevicePtr<T> for ExternalBuffer<T> {
    fn device_ptr<'a>(&'a self, _stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        // No event to wait for or record: see the type's note on ordering.
        (self.address, SyncOnDrop::Sync(None))
    }
}

impl<T> DevicePtrMut<T> for ExternalBuffer<T> {
    fn device_ptr_mut<'a>(&'a mut self, _stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        (self.address, SyncOnDrop::Sync(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: usize = 0x1000;

    fn handle(address: usize) -> sys::CUcontext {
        std::ptr::without_provenance_mut::<sys::CUctx_st>(address)
    }

    fn device(context: usize, ordinal: i32) -> PointerInfo {
        PointerInfo {
            memory_type: CUmemorytype::CU_MEMORYTYPE_DEVICE as u32,
            context: handle(context),
            device_ordinal: ordinal,
            range_start: 0x10_0000,
            range_bytes: 0x1000,
        }
    }

    fn check(address: u64, bytes: usize, info: &PointerInfo) -> Result<()> {
        check_info("gemm", "A", address, bytes, (handle(CTX), 0), info)
    }

    #[test]
    fn device_memory_of_the_gpu_inside_its_allocation_passes() {
        assert!(check(0x10_0000, 0x1000, &device(CTX, 0)).is_ok());
        assert!(check(0x10_0800, 0x800, &device(CTX, 0)).is_ok());
        // Memory bound to no context (virtual-memory mappings) on the same GPU.
        assert!(check(0x10_0000, 16, &device(0, 0)).is_ok());
        // An unknown range is not checked.
        assert!(check(0x10_0000, 1 << 40, &PointerInfo { range_bytes: 0, ..device(CTX, 0) }).is_ok());
    }

    #[test]
    fn host_unknown_and_unified_memory_are_refused() {
        for (memory_type, says) in [(0, "no CUDA allocation"), (1, "host memory"), (4, "unified memory")] {
            let error = check(0x10_0000, 16, &PointerInfo { memory_type, ..device(CTX, 0) }).unwrap_err();
            assert!(matches!(error, Error::BadArgument { op: "gemm", .. }), "{error}");
            assert!(error.to_string().contains(says), "{error}");
        }
    }

    #[test]
    fn memory_of_another_gpu_or_context_is_refused() {
        for info in [device(CTX, 1), device(0x2000, 0), device(0, 3)] {
            let error = check(0x10_0000, 16, &info).unwrap_err();
            assert!(matches!(&error, Error::WrongContext { what, .. } if what == "A"), "{error}");
        }
    }

    #[test]
    fn lengths_past_the_allocation_are_refused() {
        for (address, bytes) in [(0x10_0000, 0x1001), (0x10_0ff0, 32), (0xf_fff0, 16), (u64::MAX - 8, 16)] {
            let error = check(address, bytes, &device(CTX, 0)).unwrap_err();
            assert!(error.to_string().contains("past the end of its allocation"), "{address:#x} {bytes}: {error}");
        }
    }
}
