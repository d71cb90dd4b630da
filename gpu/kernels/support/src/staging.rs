//! The copy that stages the GEMM operands TMA cannot read in place (host/src/ops/staging.rs): packed matrices of
//! 16-bit elements whose rows are no multiple of 16 bytes long, or whose data is not 16-byte aligned, copied into
//! rows `pitch` elements apart that TMA can read. One launch copies every staged operand of a GEMM.

use oxtile_device::{device_field, device_param, device_value};

use crate::arch::global::store_u32x4;
use crate::arch::sreg::grid_stride;

/// 16-bit elements per chunk.
const LANES: u32 = 8;

/// One matrix to copy, as `oxtile_abi::stage_rows_params!` lists it.
struct Rows {
    src: *const u16,
    dst: *mut u16,
    rows: u32,
    cols: u32,
    pitch: u32,
}

impl Rows {
    fn chunks_per_row(&self) -> u32 {
        self.cols.div_ceil(LANES)
    }

    fn chunks(&self) -> u32 {
        self.rows * self.chunks_per_row()
    }

    /// Copies chunk `i` (row-major over the rows' chunks): eight 2-byte loads, since a source row may start at any
    /// element (a warp's loads cover 512 contiguous bytes, which L1 serves after the first), and one 16-byte store.
    /// The elements of a row's last chunk past `cols` are written as zeros; the chunks past it, up to `pitch`, are
    /// not written.
    ///
    /// # Safety
    /// `i < self.chunks()`, and the matrix is as [`stage_rows_b16`] requires.
    unsafe fn copy_chunk(&self, i: u32) {
        let (row, first) = (i / self.chunks_per_row(), i % self.chunks_per_row() * LANES);
        // SAFETY: row < rows and first < cols, so the row's elements from `first` on are inside `src`.
        let from = unsafe { self.src.add(row as usize * self.cols as usize + first as usize) };
        let mut chunk = [0u32; 4];
        for e in 0..LANES {
            if first + e < self.cols {
                // SAFETY: first + e < cols: an element of the row.
                let bits = unsafe { *from.add(e as usize) } as u32;
                chunk[(e / 2) as usize] |= bits << (16 * (e % 2));
            }
        }
        // SAFETY: first + 8 ≤ pitch (pitch is a multiple of 8 above first), and row · pitch + first is a multiple of
        // 8 elements from a 16-byte aligned base; no other thread writes this chunk.
        unsafe { store_u32x4(self.dst.add(row as usize * self.pitch as usize + first as usize) as *mut u32, chunk) };
    }
}

/// [`stage_rows_b16`]'s signature: one parameter per field of `oxtile_abi::stage_rows_params!`, in its order.
macro_rules! stage_kernel_fn {
    ($($(#[$field_doc:meta])* $field:ident: $kind:ident($($ty:ty)?),)*) => {
        /// Copies A's and B's rows (`rows` = 0: that operand is not staged) into their staged copies, one 16-byte
        /// chunk of a row per thread and step, over one grid-stride loop spanning A's chunks then B's.
        ///
        /// # Safety
        /// Each staged operand's `src` holds `rows · cols` elements, 2-byte aligned; its `dst` holds `rows · pitch`,
        /// 16-byte aligned, `pitch` a multiple of 8 and at least `cols`; no two of them overlap; the chunks of both,
        /// `rows · ⌈cols / 8⌉` each, add up to less than 2³².
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn stage_rows_b16($($field: device_param!($kind($($ty)?)),)*) {
            struct Params {
                $($field: device_field!($kind($($ty)?)),)*
            }
            let p = Params { $($field: device_value!($kind, $field),)* };
            let a = Rows { src: p.a_src, dst: p.a_dst, rows: p.a_rows, cols: p.a_cols, pitch: p.a_pitch };
            let b = Rows { src: p.b_src, dst: p.b_dst, rows: p.b_rows, cols: p.b_cols, pitch: p.b_pitch };
            let a_chunks = a.chunks();
            for i in grid_stride((a_chunks + b.chunks()) as usize) {
                let i = i as u32;
                // SAFETY: i is below the two matrices' chunks together, so below its own matrix's.
                unsafe {
                    if i < a_chunks {
                        a.copy_chunk(i)
                    } else {
                        b.copy_chunk(i - a_chunks)
                    }
                }
            }
        }
    };
}

oxtile_abi::stage_rows_params! { stage_kernel_fn }
