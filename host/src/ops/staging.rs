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

use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr, SyncOnDrop, ValidAsZeroBits};
use oxtile_abi::StageRowsParams;

use crate::error::{Error, Result};
use crate::kernels;
use crate::runtime::{ClusterLaunch, ClusterShape, Gpu};

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
    /// `stage_rows_b16`, loaded with the plan so that a launch only launches it ([`refresh`]).
    function: CudaFunction,
}

impl<T: DeviceRepr + ValidAsZeroBits> StagedMatrix<T> {
    /// Allocates the copy of the matrix at `source` (`what` names it in errors). The padding is zeroed once so the
    /// whole buffer is defined; nothing reads it. [`Error::Unsupported`] for elements other than 16-bit ones (the copy
    /// kernel's) and for matrices of 2³¹ or more 16-byte chunks, [`Error::Workspace`] if the allocation fails.
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
        // Each operand's chunks below 2³¹, so that both add up to less than 2³² (`refresh`).
        if rows * row_elements.div_ceil(8) >= 1 << 31 || u32::try_from(pitch).is_err() {
            let message = format!(
                "{what} ({rows} rows of {row_elements}) is staged (TMA cannot read it in place), and the copy takes \
                 fewer than 2^31 chunks of 16 bytes"
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
        let function = gpu.function(kernels::STAGE_ROWS_B16)?;
        Ok(StagedMatrix { source, rows, row_elements, pitch, address, copy: Mutex::new(copy), function })
    }

    /// The copy's address, for its tensor map.
    pub(crate) fn address(&self) -> u64 {
        self.address
    }

    /// The elements between the copy's row starts, for its tensor map.
    pub(crate) fn pitch(&self) -> usize {
        self.pitch
    }

    /// The copy's buffer, held until the launch that reads it is queued ([`refresh`]).
    pub(crate) fn lock(&self) -> MutexGuard<'_, CudaSlice<T>> {
        self.copy.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Queues one launch of `stage_rows_b16` on `gpu`'s stream that copies the current contents of every staged operand
/// of a GEMM (A's and B's; `None` where the operand is read in place) into its buffer (from [`StagedMatrix::lock`]).
/// The returned guards record the copies' uses, with write intent, when dropped: drop them after the launch that
/// reads the copies is queued, so that a later refresh on another stream waits for that launch. The caller holds the
/// sources' own guards (it checked each source is the buffer the plan was made for). Launches nothing when neither
/// operand is staged.
pub(crate) fn refresh<'a, T: DeviceRepr + ValidAsZeroBits>(
    gpu: &'a Gpu,
    operands: [Option<(&StagedMatrix<T>, &'a mut CudaSlice<T>)>; 2],
) -> Result<Vec<SyncOnDrop<'a>>> {
    const THREADS: u32 = 256;
    let Some(function) = operands.iter().flatten().map(|(staged, _)| staged.function.clone()).next() else {
        return Ok(Vec::new());
    };
    let kernel = kernels::STAGE_ROWS_B16;
    let mut guards = Vec::new();
    // (src, dst, rows, cols, pitch) of A and B, all 0 for an operand read in place (no rows).
    let mut rows = [(0, 0, 0, 0, 0); 2];
    for (operand, rows) in operands.into_iter().zip(&mut rows) {
        if let Some((staged, copy)) = operand {
            let (destination, guard) = copy.device_ptr_mut(gpu.stream());
            debug_assert_eq!(destination, staged.address);
            guards.push(guard);
            // Checked in `StagedMatrix::new`: each fits in 32 bits, and each operand's chunks in 31.
            let narrow = |n: usize| n as u32;
            *rows =
                (staged.source, destination, narrow(staged.rows), narrow(staged.row_elements), narrow(staged.pitch));
        }
    }
    let [a, b] = rows;
    let mut params = StageRowsParams {
        a_src: a.0,
        a_dst: a.1,
        a_rows: a.2,
        a_cols: a.3,
        a_pitch: a.4,
        b_src: b.0,
        b_dst: b.1,
        b_rows: b.2,
        b_cols: b.3,
        b_pitch: b.4,
    };
    let chunks = [a, b].iter().map(|&(_, _, rows, cols, _)| rows as usize * cols.div_ceil(8) as usize).sum();
    let grid = gpu.grid_1d(chunks, THREADS);
    let launch = ClusterLaunch {
        grid_dim: grid.grid_dim,
        block_dim: grid.block_dim,
        cluster_dim: (1, 1, 1),
        shared_mem_bytes: 0,
        dependent_launch: false,
    };
    let mut args = params.kernel_args();
    // SAFETY: the arguments are the kernel's, one per field of `StageRowsParams` (the list in oxtile-abi its signature
    // is declared from). Each staged operand's source holds `rows` packed rows of `cols` 16-bit elements (the caller
    // checked its length), element-aligned; its copy `rows` rows `pitch` elements apart, pitch a multiple of 8 (128
    // bytes) and at least `cols`, 16-byte aligned (an allocation); all are device memory of the stream's context, and
    // no copy overlaps anything (each is its plan's own); the chunks add up to less than 2³² (each below 2³¹). An
    // operand read in place has no rows, and the kernel touches none of its (null) pointers. The kernel is ordered on
    // the stream after every earlier use of the copies (the guards' event tracking) and before the GEMM that reads
    // them.
    unsafe { gpu.launch_as(ClusterShape::Plain, kernel.name, &function, &launch, &mut args)? };
    Ok(guards)
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
