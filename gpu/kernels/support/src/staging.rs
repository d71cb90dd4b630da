//! The copy that stages a GEMM operand TMA cannot read in place (host/src/ops/staging.rs): a packed matrix of 16-bit
//! elements whose rows are no multiple of 16 bytes long, or whose data is not 16-byte aligned, copied into rows
//! `pitch` elements apart that TMA can read.

use crate::arch::sreg::grid_stride;

/// 16 bytes, so one `st.global.v4` writes it.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Chunk([u32; 4]);

/// 16-bit elements per chunk.
const LANES: u32 = 8;

/// Copies `rows` rows of `cols` 16-bit elements packed at `src` into rows `pitch` elements apart at `dst`, one 16-byte
/// chunk of a row per thread and step: eight 2-byte loads (a source row may start at any element; a warp's loads
/// cover 512 contiguous bytes, which L1 serves after the first) and one 16-byte store. The elements of a row's last
/// chunk past `cols` are written as zeros; the chunks past it, up to `pitch`, are not written.
///
/// # Safety
/// `src` holds `rows · cols` elements, 2-byte aligned; `dst` holds `rows · pitch`, 16-byte aligned, `pitch` a multiple
/// of 8 and at least `cols`; the two do not overlap; `rows · ⌈cols / 8⌉` is below 2³².
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn stage_rows_b16(src: *const u16, dst: *mut u16, rows: u32, cols: u32, pitch: u32) {
    let chunks_per_row = cols.div_ceil(LANES);
    for i in grid_stride((rows * chunks_per_row) as usize) {
        let i = i as u32;
        let (row, first) = (i / chunks_per_row, i % chunks_per_row * LANES);
        // SAFETY: row < rows and first < cols, so the row's elements from `first` on are inside `src`.
        let from = unsafe { src.add(row as usize * cols as usize + first as usize) };
        let mut chunk = Chunk([0; 4]);
        for e in 0..LANES {
            if first + e < cols {
                // SAFETY: first + e < cols: an element of the row.
                let bits = unsafe { *from.add(e as usize) } as u32;
                chunk.0[(e / 2) as usize] |= bits << (16 * (e % 2));
            }
        }
        // SAFETY: first + 8 ≤ pitch (pitch is a multiple of 8 above first), and row · pitch + first is a multiple
        // of 8 elements from a 16-byte aligned base.
        unsafe { *(dst.add(row as usize * pitch as usize + first as usize) as *mut Chunk) = chunk };
    }
}
