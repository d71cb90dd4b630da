//! Tensor maps for the tensor memory accelerator, encoded on the host (`cuTensorMapEncodeTiled`).

use cudarc::driver::sys::{
    self, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};

use crate::error::{Error, Result};

/// A 2-D box over a row-major matrix of 16-bit elements, `rows × cols` with `row_stride` elements between
/// rows, loaded as `box_rows × box_cols` tiles with the 128-byte swizzle. Out-of-bounds elements read as zero.
#[derive(Clone, Copy, Debug)]
pub struct Tile2d {
    pub data_type: CUtensorMapDataType,
    pub address: u64,
    pub rows: u64,
    pub cols: u64,
    pub row_stride: u64,
    pub box_rows: u32,
    pub box_cols: u32,
}

impl Tile2d {
    /// Encodes the tensor map; fails with a clear message when TMA's rules rule it out.
    pub fn encode(&self, op: &'static str) -> Result<CUtensorMap> {
        const ELEMENT_BYTES: u64 = 2;
        let bad = |message: String| Err(Error::bad_argument(op, message));
        if !self.address.is_multiple_of(16) {
            return bad(format!("TMA needs a 16-byte aligned base address, got {:#x}", self.address));
        }
        if !(self.row_stride * ELEMENT_BYTES).is_multiple_of(16) {
            return bad(format!("TMA needs rows {} elements apart to be a multiple of 16 bytes", self.row_stride));
        }
        if self.box_cols as u64 * ELEMENT_BYTES != 128 {
            return bad(format!("a 128-byte swizzled box must be 128 bytes wide, not {} elements", self.box_cols));
        }
        let dims = [self.cols, self.rows];
        let strides = [self.row_stride * ELEMENT_BYTES];
        let boxes = [self.box_cols, self.box_rows];
        let element_strides = [1u32, 1];
        let mut map = std::mem::MaybeUninit::<CUtensorMap>::zeroed();
        // SAFETY: every pointer refers to a live local array of the rank the call is told.
        let status = unsafe {
            sys::cuTensorMapEncodeTiled(
                map.as_mut_ptr(),
                self.data_type,
                2,
                self.address as *mut std::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                element_strides.as_ptr(),
                CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
                CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        status.result().map_err(Error::Driver)?;
        // SAFETY: the encode call succeeded and filled the map.
        Ok(unsafe { map.assume_init() })
    }
}

/// The 128 raw bytes of tensor maps, as u64 words, ready to copy to the device.
pub fn as_words(maps: &[CUtensorMap]) -> Vec<u64> {
    maps.iter().flat_map(|map| map.opaque).collect()
}
