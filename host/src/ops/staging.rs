//! Copies of matrices that TMA cannot read where they lie.
//!
//! A tensor map needs a 16-byte aligned base and rows a multiple of 16 bytes apart (CUDA driver API,
//! `cuTensorMapEncodeTiled`). A row-major 1500×1500 bf16 matrix has rows 3000 bytes apart, and a view that starts at
//! an odd element is 2-byte aligned: both are ordinary inputs. [`StagedMatrix`] gives such a matrix a copy in a buffer
//! of the plan's own, each row starting a multiple of 128 bytes from the first (a swizzled box row: rows whose bytes
//! are no multiple of 128 straddle L2 lines and slow the kernels, docs/perf-notes.md "Session 59"), refreshed on the
//! launch's stream before each launch by `stage_rows_b16` (gpu/kernels/support/src/staging.rs). The GEMM then reads
//! the copy through a tensor map of the matrix's own extents with the copy's row pitch: TMA never reads the padding
//! between a row's end and the next row.
//!
//! The copy costs a read and a write of the matrix per launch (2 × 4.5 MB at 1500×1500 bf16) and the buffer's memory
//! for the plan's life (docs/perf-notes.md, "Session 60").

use std::sync::{Mutex, MutexGuard, PoisonError};

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr, PushKernelArg, SyncOnDrop, ValidAsZeroBits};

use crate::error::{Error, Result};
use crate::kernels;
use crate::runtime::Gpu;

/// Bytes TMA needs between row starts, and of a tensor map's base address.
const TMA_ALIGN: usize = 16;

/// Bytes between the staged rows' starts are a multiple of this: one 128-byte swizzled row, an L2 line.
const STAGED_ROW_ALIGN: usize = 128;

/// Whether TMA can read a matrix of `T` at `address` whose stored rows hold `row_elements` each, packed: its base
/// 16-byte aligned and its rows a multiple of 16 bytes long. Otherwise the plan stages it ([`StagedMatrix`]).
pub(crate) fn tma_reads_in_place<T>(address: u64, row_elements: usize) -> bool {
    address.is_multiple_of(TMA_ALIGN as u64) && (row_elements * size_of::<T>()).is_multiple_of(TMA_ALIGN)
}

/// The elements between a staged copy's row starts for rows of `row_elements`: rounded up to 128 bytes.
pub(crate) fn staged_pitch<T>(row_elements: usize) -> usize {
    (row_elements * size_of::<T>()).next_multiple_of(STAGED_ROW_ALIGN) / size_of::<T>()
}

/// A copy of a packed `rows` × `row_elements` matrix of `T` at `source`, rows [`staged_pitch`] elements apart.
pub(crate) struct StagedMatrix<T> {
    source: u64,
    rows: usize,
    row_elements: usize,
    pitch: usize,
    /// The copy's device address, fixed for its life: tensor maps are encoded over it once.
    address: u64,
    /// Locked from the copy until the kernel reading it is queued, so launches of one plan from several threads
    /// refresh and read it one after another; its uses are recorded on the launch's stream like any operand's.
    copy: Mutex<CudaSlice<T>>,
}

impl<T: DeviceRepr + ValidAsZeroBits> StagedMatrix<T> {
    /// Allocates the copy of the matrix at `source` (`what` names it in errors). The padding is zeroed once so the
    /// whole buffer is defined; nothing reads it. [`Error::Unsupported`] for elements other than 16-bit ones (the copy
    /// kernel's) and for matrices of 2³² or more 16-byte chunks, [`Error::Workspace`] if the allocation fails.
    pub(crate) fn new(
        gpu: &Gpu,
        op: &'static str,
        what: &'static str,
        source: u64,
        (rows, row_elements): (usize, usize),
    ) -> Result<Self> {
        let pitch = staged_pitch::<T>(row_elements);
        if size_of::<T>() != 2 {
            return Err(Error::unsupported(op, format!("{what} is staged, and only 16-bit elements are")));
        }
        if u32::try_from(rows * row_elements.div_ceil(8)).is_err() || u32::try_from(pitch).is_err() {
            let message = format!(
                "{what} ({rows} rows of {row_elements}) is staged (TMA cannot read it in place), and the copy takes \
                 fewer than 2^32 chunks of 16 bytes"
            );
            return Err(Error::unsupported(op, message));
        }
        let elements = rows * pitch;
        let bytes = elements * size_of::<T>();
        let copy = gpu.stream().alloc_zeros::<T>(elements).map_err(|source| Error::Workspace {
            op,
            what: "a staged copy of an operand with unaligned rows",
            bytes,
            source,
        })?;
        let address = copy.device_ptr(gpu.stream()).0;
        Ok(StagedMatrix { source, rows, row_elements, pitch, address, copy: Mutex::new(copy) })
    }

    /// The copy's address, for its tensor map.
    pub(crate) fn address(&self) -> u64 {
        self.address
    }

    /// The elements between the copy's row starts, for its tensor map.
    pub(crate) fn pitch(&self) -> usize {
        self.pitch
    }

    /// The copy's buffer, held until the launch that reads it is queued ([`StagedMatrix::refresh`]).
    pub(crate) fn lock(&self) -> MutexGuard<'_, CudaSlice<T>> {
        self.copy.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues the copy of the source's current contents on `gpu`'s stream into `copy` (this matrix's buffer, from
    /// [`StagedMatrix::lock`]). The returned guard records the copy's use, with write intent, when dropped: drop it
    /// after the launch that reads the copy is queued, so a later refresh on another stream waits for that launch.
    /// The caller holds the source's own guard (it checked the source is the buffer the plan was made for).
    pub(crate) fn refresh<'a>(&self, gpu: &'a Gpu, copy: &'a mut CudaSlice<T>) -> Result<SyncOnDrop<'a>> {
        const THREADS: u32 = 256;
        let kernel = kernels::STAGE_ROWS_B16;
        let function = gpu.function(kernel)?;
        let (destination, guard) = copy.device_ptr_mut(gpu.stream());
        debug_assert_eq!(destination, self.address);
        // Checked in `new`: each fits in 32 bits, and so does the chunk count.
        let [rows, cols, pitch] = [self.rows, self.row_elements, self.pitch].map(|n| n as u32);
        let chunks = self.rows * self.row_elements.div_ceil(8);
        let mut launch = gpu.stream().launch_builder(&function);
        launch.arg(&self.source).arg(&destination).arg(&rows).arg(&cols).arg(&pitch);
        // SAFETY: the kernel's signature is (src, dst, rows, cols, pitch). The source holds `rows` packed rows of
        // `cols` 16-bit elements (the caller checked its length), element-aligned; the copy `rows` rows `pitch`
        // elements apart, pitch a multiple of 8 (128 bytes) and at least `cols`, 16-byte aligned (an allocation);
        // both are device memory of the stream's context and do not overlap (the copy is this plan's own). The
        // kernel is ordered on the stream after every earlier use of the copy (the guard's event tracking) and before
        // the GEMM that reads it.
        unsafe { launch.launch(gpu.grid_1d(chunks, THREADS)) }
            .map_err(|source| Error::Launch { kernel: kernel.name, source })?;
        Ok(guard)
    }
}

#[cfg(test)]
mod tests {
    use half::bf16;

    use super::*;

    #[test]
    fn tma_reads_16_byte_aligned_bases_with_rows_a_multiple_of_16_bytes() {
        assert!(tma_reads_in_place::<bf16>(0x1000, 8) && tma_reads_in_place::<bf16>(0x1010, 4040));
        assert!(!tma_reads_in_place::<bf16>(0x1000, 1500), "rows 3000 bytes apart");
        assert!(!tma_reads_in_place::<bf16>(0x1002, 64), "a view starting one element in");
        assert!(tma_reads_in_place::<f32>(0x1000, 4) && !tma_reads_in_place::<f32>(0x1000, 6));
    }

    #[test]
    fn staged_rows_start_128_bytes_apart() {
        assert_eq!(staged_pitch::<bf16>(1500), 1536);
        assert_eq!(staged_pitch::<bf16>(1), 64);
        assert_eq!(staged_pitch::<bf16>(64), 64);
        assert_eq!(staged_pitch::<bf16>(65), 128);
        assert_eq!(staged_pitch::<f32>(33), 64);
    }
}
