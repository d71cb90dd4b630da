//! The layout algebra costs nothing at run time: a tile transpose through 128-byte-swizzled shared memory whose
//! every shared address comes from a `const` [`StaticComposedLayout`], built with the algebra in `const` items.
//!
//! Two kernels share one body and differ only in the shared-memory address function: [`swizzled_transpose_u16`]
//! calls the composed layout, [`swizzled_transpose_u16_by_hand`] spells the same permutation out in shifts and
//! masks. CI (tests/layout_demo.rs) checks that the layout version's PTX and SASS hold no integer division,
//! remainder or local memory and that both compile to the same number of instructions (today the same PTX, up
//! to register names).
//!
//! Each block transposes one 64×64 tile of u16: its 256 threads read the tile's rows from global memory (each
//! warp reads 64 consecutive bytes) into shared memory, then read it back by columns and write the rows of the
//! transposed tile (again consecutive bytes per warp). The swizzle spreads a column over the 8 16-byte chunks of
//! the 128-byte rows, so a warp's column read touches 8 banks instead of 1 (4-way conflicts instead of 32-way).

use oxtile_abi::{TRANSPOSE_THREADS as THREADS, TRANSPOSE_TILE as TILE};
use oxtile_layout::{StaticComposedLayout, StaticLayout};
use seq_macro::seq;

use crate::arch::barrier::sync_threads;
use crate::arch::smem;
use crate::arch::sreg::{block_idx_x, block_idx_y, thread_idx_x};

const N: i64 = TILE as i64;

/// Element index to byte offset of a u16: `4096:2`.
const ELEMENT_BYTES: StaticLayout<4> = StaticLayout::new(&[N * N], &[2]);
/// The tile's (row, column) to its element index, row-major: `(64,64):(64,1)`.
const ROW_MAJOR: StaticLayout<4> = StaticLayout::row_major(&[N, N]);
/// (row, column) to byte offset: `4096:2 ∘ (64,64):(64,1)` = `(64,64):(128,2)`, one 128-byte row per tile row.
const TILE_BYTES: StaticLayout<4> = StaticLayout::expect(ELEMENT_BYTES.composition(&ROW_MAJOR));
/// `Sw<3,4,3> ∘ (64,64):(128,2)`: the 16-byte chunk (bits 4..6) of each byte offset is XORed with the row
/// modulo 8 (bits 7..9), the pattern of TMA's and wgmma's 128-byte swizzle (the kernels' shared
/// [`crate::smem_layout::SW128_64X64_B16`], checked equal below).
pub const SMEM_TILE: StaticComposedLayout<4> = crate::smem_layout::SW128_64X64_B16;

/// The shared byte offset of tile element (row, col): [`SMEM_TILE`] at that coordinate, in 32-bit arithmetic.
#[inline(always)]
pub const fn smem_offset_layout(row: u32, col: u32) -> u32 {
    SMEM_TILE.crd2idx_u32(&[row, col])
}

/// The same offset as CUDA code writes the 128-byte swizzle by hand: the row-major byte offset with its bits
/// 7..9 (the row modulo 8) XORed into bits 4..6 (the 16-byte chunk).
#[inline(always)]
pub const fn smem_offset_by_hand(row: u32, col: u32) -> u32 {
    let byte = row * 128 + col * 2;
    byte ^ ((byte >> 3) & 0x70)
}

// The algebra's result, checked at compile time against its definition and the hand-written function on
// every element of the tile.
const _: () = {
    assert!(SMEM_TILE.layout.crd2idx(&[3, 5]) == TILE_BYTES.crd2idx(&[3, 5]));
    assert!(TILE_BYTES.rank() == 2 && TILE_BYTES.mode_size(0) == N && TILE_BYTES.mode_size(1) == N);
    assert!(TILE_BYTES.crd2idx(&[1, 0]) == 128 && TILE_BYTES.crd2idx(&[0, 1]) == 2);
    // The last element starts at byte 8190: the tile fills its 8192 bytes.
    assert!(SMEM_TILE.layout.cosize() == 2 * N * N - 1);
    let mut row = 0;
    while row < TILE {
        let mut col = 0;
        while col < TILE {
            let layout = smem_offset_layout(row, col);
            assert!(layout == smem_offset_by_hand(row, col));
            assert!(layout as i64 == SMEM_TILE.crd2idx(&[row as i64, col as i64]));
            assert!(layout == SMEM_TILE.index_u32(row + TILE * col));
            // Row `row` is 128 bytes; its 16-byte chunk `col / 8` moves to chunk `(col / 8) ^ (row % 8)`, and the
            // element sits at byte `2 * (col % 8)` of its chunk.
            assert!(layout == row * 128 + ((((col >> 3) ^ (row & 7)) << 4) | ((col & 7) << 1)));
            col += 1;
        }
        row += 1;
    }
};

// `seq!` below unrolls 16 elements per thread.
const _: () = assert!(TILE * TILE / THREADS == 16);

/// Block (`bx`, `by`) moves source tile (`by`, `bx`) to destination tile (`bx`, `by`).
///
/// # Safety
/// As the kernels.
#[inline(always)]
unsafe fn transpose_tile(src: *const u16, dst: *mut u16, rows: u32, cols: u32, smem_offset: impl Fn(u32, u32) -> u32) {
    let base = smem::dynamic_smem_base();
    let tid = thread_idx_x();
    let (tile_row, tile_col) = ((block_idx_y() * TILE) as usize, (block_idx_x() * TILE) as usize);
    let (rows, cols) = (rows as usize, cols as usize);
    seq!(K in 0..16 {
        // Consecutive threads take consecutive columns of a source row.
        let e = K * THREADS + tid;
        let (row, col) = (e / TILE, e % TILE);
        unsafe {
            let value = *src.add((tile_row + row as usize) * cols + tile_col + col as usize);
            smem::store_u16(base + smem_offset(row, col), value);
        }
    });
    sync_threads();
    seq!(K in 0..16 {
        // Consecutive threads take consecutive rows of a source column: one destination row.
        let e = K * THREADS + tid;
        let (col, row) = (e / TILE, e % TILE);
        unsafe {
            let value = smem::load_u16(base + smem_offset(row, col));
            *dst.add((tile_col + col as usize) * rows + tile_row + row as usize) = value;
        }
    });
}

/// `dst = srcᵀ` for a `rows`×`cols` row-major u16 matrix `src` and the `cols`×`rows` row-major `dst`, every
/// shared-memory address computed through [`SMEM_TILE`].
///
/// # Safety
/// `rows` and `cols` are multiples of 64; `src` and `dst` hold `rows * cols` elements each and do not overlap;
/// launched with a (`cols / 64`, `rows / 64`) grid of 256-thread blocks and 8192 bytes of dynamic shared memory.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn swizzled_transpose_u16(src: *const u16, dst: *mut u16, rows: u32, cols: u32) {
    unsafe { transpose_tile(src, dst, rows, cols, smem_offset_layout) }
}

/// [`swizzled_transpose_u16`] with the shared-memory addresses from [`smem_offset_by_hand`], for comparing the
/// machine code.
///
/// # Safety
/// As [`swizzled_transpose_u16`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn swizzled_transpose_u16_by_hand(src: *const u16, dst: *mut u16, rows: u32, cols: u32) {
    unsafe { transpose_tile(src, dst, rows, cols, smem_offset_by_hand) }
}
