//! Tensor maps for the tensor memory accelerator, encoded on the host (`cuTensorMapEncodeTiled`).

use cudarc::driver::sys::{
    self, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};

use crate::error::{Error, Result};

/// A 2-D box over a row-major matrix of 16-bit or f32 elements, `rows × cols` with `row_stride` elements between
/// rows, loaded or stored as `box_rows × box_cols` tiles with the 128-byte swizzle. Out-of-bounds elements read as
/// zero and are not written.
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
        encode_tiled(
            op,
            self.data_type,
            self.address,
            &[self.cols, self.rows],
            &[self.row_stride],
            &[self.box_cols, self.box_rows],
            true,
        )
    }
}

/// A 4-D box over a strided tensor of 16-bit elements, e.g. an attention operand [batch, seq, head, dim] seen
/// innermost first as (dim, head, seq, batch). The innermost dimension is contiguous; `strides` are the
/// element strides of the other three. Loaded as `boxes` tiles with the 128-byte swizzle; out-of-bounds elements
/// read as zero.
#[derive(Clone, Copy, Debug)]
pub struct Tile4d {
    pub data_type: CUtensorMapDataType,
    pub address: u64,
    /// Extents, innermost first.
    pub dims: [u64; 4],
    /// Element strides of dims 1, 2, 3.
    pub strides: [u64; 3],
    /// Box extents, innermost first; the innermost must be 128 bytes.
    pub boxes: [u32; 4],
}

impl Tile4d {
    /// Encodes the tensor map; fails with a clear message when TMA's rules rule it out.
    pub fn encode(&self, op: &'static str) -> Result<CUtensorMap> {
        encode_tiled(op, self.data_type, self.address, &self.dims, &self.strides, &self.boxes, true)
    }
}

/// A 3-D box over a stack of row-major matrices, innermost first (columns, rows, matrix), e.g. the symmetric GEMM's
/// operands and outputs. The innermost dimension is contiguous; `strides` are the element strides of the other two.
#[derive(Clone, Copy, Debug)]
pub struct Tile3d {
    pub data_type: CUtensorMapDataType,
    pub address: u64,
    /// Extents, innermost first.
    pub dims: [u64; 3],
    /// Element strides of dims 1 and 2.
    pub strides: [u64; 2],
    /// Box extents, innermost first.
    pub boxes: [u32; 3],
}

impl Tile3d {
    /// Encodes the tensor map with the 128-byte swizzle (the innermost box extent must be 128 bytes).
    pub fn encode(&self, op: &'static str) -> Result<CUtensorMap> {
        encode_tiled(op, self.data_type, self.address, &self.dims, &self.strides, &self.boxes, true)
    }

    /// As [`Tile3d::encode`] without the swizzle: the box lies in shared memory as plain rows of its innermost
    /// extent, which need only be a multiple of 16 bytes.
    pub fn encode_unswizzled(&self, op: &'static str) -> Result<CUtensorMap> {
        encode_tiled(op, self.data_type, self.address, &self.dims, &self.strides, &self.boxes, false)
    }
}

/// TMA's limits (CUDA driver API, `cuTensorMapEncodeTiled`): a dimension holds 1 to 2^32 elements, a byte
/// stride is below 2^40, a box extent is 1 to 256.
const MAX_DIM: u64 = 1 << 32;
const MAX_STRIDE_BYTES: u64 = 1 << 40;
const MAX_BOX: u32 = 256;

/// Bytes per element of the tensor-map types the kernels use.
fn element_bytes(data_type: CUtensorMapDataType) -> u64 {
    match data_type {
        CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
        | CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16 => 2,
        CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32 => 4,
        other => unimplemented!("tensor maps of {other:?}"),
    }
}

/// `cuTensorMapEncodeTiled` for 16-bit or f32 elements with the 128-byte swizzle (or none) and zero fill, rank
/// `dims.len()`:
/// the innermost dimension contiguous, `strides` the element strides of the others. Checks every rule the driver
/// would reject (and 128-byte box rows, which the kernels' shared layouts assume) first, so the caller gets a
/// message that names the problem instead of CUDA_ERROR_INVALID_VALUE.
fn encode_tiled(
    op: &'static str,
    data_type: CUtensorMapDataType,
    address: u64,
    dims: &[u64],
    strides: &[u64],
    boxes: &[u32],
    swizzle: bool,
) -> Result<CUtensorMap> {
    let element_bytes = element_bytes(data_type);
    let rank = dims.len();
    assert!(
        (1..=5).contains(&rank) && strides.len() + 1 == rank && boxes.len() == rank,
        "tensor map rank {rank} with {} strides and {} box extents",
        strides.len(),
        boxes.len()
    );
    let bad = |message: String| Err(Error::bad_argument(op, message));
    if !address.is_multiple_of(16) {
        return bad(format!("TMA needs a 16-byte aligned base address, got {address:#x}"));
    }
    if let Some(d) = dims.iter().position(|&d| d == 0 || d > MAX_DIM) {
        return bad(format!("TMA dimension {d} has {} elements; it must have 1 to 2^32", dims[d]));
    }
    for (d, &stride) in strides.iter().enumerate() {
        let bytes = stride.saturating_mul(element_bytes);
        if !bytes.is_multiple_of(16) {
            return bad(format!(
                "TMA needs strides that are multiples of 16 bytes; dimension {} is {stride} elements apart",
                d + 1
            ));
        }
        if bytes >= MAX_STRIDE_BYTES {
            return bad(format!("TMA strides must be below 2^40 bytes; dimension {} is {bytes} bytes apart", d + 1));
        }
    }
    if swizzle && boxes[0] as u64 * element_bytes != 128 {
        return bad(format!("a 128-byte swizzled box must be 128 bytes wide, not {} elements", boxes[0]));
    }
    if !swizzle && !(boxes[0] as u64 * element_bytes).is_multiple_of(16) {
        return bad(format!("an unswizzled box's rows must be multiples of 16 bytes, not {} elements", boxes[0]));
    }
    if let Some(d) = boxes.iter().position(|&b| b == 0 || b > MAX_BOX) {
        return bad(format!("TMA box extent {} (dimension {d}) is outside 1..=256", boxes[d]));
    }
    let byte_strides: Vec<u64> = strides.iter().map(|s| s * element_bytes).collect();
    let element_strides = vec![1u32; rank];
    let mut map = std::mem::MaybeUninit::<CUtensorMap>::zeroed();
    // SAFETY: every pointer refers to a live array of the rank the call is told (asserted above).
    let status = unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            data_type,
            rank as u32,
            address as *mut std::ffi::c_void,
            dims.as_ptr(),
            byte_strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            if swizzle {
                CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B
            } else {
                CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE
            },
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            // NONE fills out-of-bounds elements with zeros (the alternative fills NaN).
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    status.result().map_err(Error::Driver)?;
    // SAFETY: the encode call succeeded and filled the map.
    Ok(unsafe { map.assume_init() })
}

/// The 128 raw bytes of tensor maps, as u64 words, ready to copy to the device.
pub fn as_words(maps: &[CUtensorMap]) -> Vec<u64> {
    maps.iter().flat_map(|map| map.opaque).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(address: u64, strides: [u64; 3], boxes: [u32; 4]) -> Tile4d {
        Tile4d {
            data_type: CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            address,
            dims: [128, 8, 1000, 2],
            strides,
            boxes,
        }
    }

    // The checks run before the driver is called, so they need no GPU.
    #[test]
    fn rule_breaking_maps_are_refused_before_the_driver() {
        let message = |t: Tile4d| t.encode("test").unwrap_err().to_string();
        let good = ([128, 1024, 1024 * 1000], [64, 1, 128, 1]);
        assert!(message(tile(0x1008, good.0, good.1)).contains("16-byte aligned"));
        assert!(message(tile(0x1000, [132, 1056, 1056 * 1000], good.1)).contains("dimension 1 is 132 elements"));
        assert!(message(tile(0x1000, [128, 1 << 40, 1 << 41], good.1)).contains("below 2^40"));
        assert!(message(tile(0x1000, good.0, [32, 1, 128, 1])).contains("128 bytes wide"));
        assert!(message(tile(0x1000, good.0, [64, 1, 512, 1])).contains("outside 1..=256"));
        let empty = Tile4d { dims: [128, 0, 1000, 2], ..tile(0x1000, good.0, good.1) };
        assert!(message(empty).contains("1 to 2^32"));
        let two = Tile2d {
            data_type: CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            address: 0x1000,
            rows: 10,
            cols: 12,
            row_stride: 12,
            box_rows: 64,
            box_cols: 64,
        };
        assert!(two.encode("test").unwrap_err().to_string().contains("multiples of 16 bytes"));
        // f32: 128-byte box rows are 32 elements, and rows 4 elements apart are 16 bytes apart.
        let f32_tile = Tile2d { data_type: CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32, ..two };
        assert!(f32_tile.encode("test").unwrap_err().to_string().contains("128 bytes wide, not 64 elements"));
        let f32_tile = Tile2d { box_cols: 32, row_stride: 10, ..f32_tile };
        assert!(f32_tile.encode("test").unwrap_err().to_string().contains("is 10 elements apart"));
    }
}
