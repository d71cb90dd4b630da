//! Shared-memory tile layouts the kernels share, built with the layout algebra in `const` items (no run-time cost:
//! see layout_demo.rs, whose CI test compares the machine code with hand-written addressing).

use oxtile_layout::{StaticComposedLayout, StaticLayout, Swizzle};

use crate::arch::wgmma::SWIZZLE_128B;

/// Element index to byte offset of a 16-bit element over a 64×64 tile: `4096:2`.
const ELEMENT_BYTES: StaticLayout<4> = StaticLayout::new(&[64 * 64], &[2]);
/// (row, column) to element index, row-major: `(64,64):(64,1)`.
const ROW_MAJOR: StaticLayout<4> = StaticLayout::row_major(&[64, 64]);
/// (row, column) to byte offset: `4096:2 ∘ (64,64):(64,1)` = `(64,64):(128,2)`, one 128-byte row per tile row.
const TILE_BYTES: StaticLayout<4> = StaticLayout::expect(ELEMENT_BYTES.composition(&ROW_MAJOR));

/// A 64×64 tile of 16-bit elements as TMA reads and writes it with the 128-byte swizzle:
/// `Sw<3,4,3> ∘ (64,64):(128,2)`, (row, column) → byte offset. The 16-byte chunk (bits 4..6) of each offset is
/// XORed with the row modulo 8 (bits 7..9), which also makes the eight rows of an accumulator fragment's store
/// land in eight different bank groups.
pub const SW128_64X64_B16: StaticComposedLayout<4> = TILE_BYTES.swizzled(SWIZZLE_128B, 0);

const _: () = assert!(SW128_64X64_B16.layout.cosize() == 2 * 64 * 64 - 1);

/// Element index to byte offset of an f32 element over a 64×32 tile: `2048:4`.
const ELEMENT_BYTES_B32: StaticLayout<4> = StaticLayout::new(&[64 * 32], &[4]);
/// (row, column) to element index, row-major: `(64,32):(32,1)`.
const ROW_MAJOR_64X32: StaticLayout<4> = StaticLayout::row_major(&[64, 32]);

/// A 64×32 tile of f32 as TMA reads and writes it with the 128-byte swizzle: `Sw<3,4,3> ∘ (64,32):(128,4)`,
/// (row, column) → byte offset. The same bytes as [`SW128_64X64_B16`] (128-byte rows, 16-byte chunks XORed with
/// the row modulo 8), holding half as many columns.
pub const SW128_64X32_B32: StaticComposedLayout<4> =
    StaticLayout::expect(ELEMENT_BYTES_B32.composition(&ROW_MAJOR_64X32)).swizzled(SWIZZLE_128B, 0);

const _: () = assert!(SW128_64X32_B32.layout.cosize() == 4 * 64 * 32 - 3);

/// Element index to byte offset of an f32 element over a 64×64 tile: `4096:4`.
const ELEMENT_BYTES_64X64_B32: StaticLayout<4> = StaticLayout::new(&[64 * 64], &[4]);

/// A 64×64 tile of f32 in 256-byte rows whose 32-byte units (8 f32) are permuted by the row:
/// `Sw<3,5,3> ∘ (64,64):(256,4)`, (row, column) → byte offset; bits 5..7 (the unit) are XORed with bits 8..10 (the
/// row modulo 8). The attention backward stages its dQ partials in it: a warp's 8-byte store of an m64 accumulator
/// fragment covers 8 rows × 4 column pairs of one 8-column block, which a plain row-major tile would put in the
/// same 8 banks of every row (4 wavefronts per 16 lanes); permuted, the 4 rows of each half-warp land in 4
/// different 32-byte units, i.e. all 32 banks once (the minimum, 2 wavefronts per store). A row stays one 256-byte
/// run, so the bulk reduce-add that moves the tile to global memory moves whole rows, and the reader of the global
/// copy applies the same permutation.
pub const SW32_64X64_B32: StaticComposedLayout<4> =
    StaticLayout::expect(ELEMENT_BYTES_64X64_B32.composition(&ROW_MAJOR)).swizzled(Swizzle::new(3, 5, 3), 0);

const _: () = assert!(SW32_64X64_B32.layout.cosize() == 4 * 64 * 64 - 3);

// The bank claim, checked: each half-warp's 8-byte stores of one 8-column block of an m64 fragment (lane l holds
// rows l / 4 and l / 4 + 8 of its warp's 16, columns 2 · (l % 4) and the next) touch every one of the 32 banks.
const _: () = {
    let mut block = 0;
    while block < 8 {
        let mut half = 0;
        while half < 2 {
            let mut row_half = 0;
            while row_half < 2 {
                let mut banks = 0u32;
                let mut lane = 16 * half;
                while lane < 16 * half + 16 {
                    let (row, column) = (lane / 4 + 8 * row_half, 8 * block + 2 * (lane % 4));
                    let bank = SW32_64X64_B32.crd2idx_u32(&[row, column]) / 4 % 32;
                    banks |= 3 << bank;
                    lane += 1;
                }
                assert!(banks == u32::MAX);
                row_half += 1;
            }
            half += 1;
        }
        block += 1;
    }
};

/// An operand tile of 16-bit elements as wgmma reads it MN-major, (M/N index, k index) → byte offset: each 64-index
/// block is a TMA box whose rows are the `k_extent` k indices (128 bytes each: 64 M/N indices, swizzled as TMA's
/// 128-byte swizzle writes them), and the `blocks` blocks follow each other `k_extent × 128` bytes apart:
/// `Sw<3,4,3> ∘ ((64,blocks),k_extent):((2,k_extent·128),128)`. `wgmma::sw128_fields` derives the descriptor
/// from it.
pub const fn sw128_mn_major(blocks: u32, k_extent: u32) -> StaticComposedLayout<4> {
    let (blocks, k_extent) = (blocks as i64, k_extent as i64);
    StaticLayout::grouped(&[64, blocks, k_extent], &[2, k_extent * 128, 128], &[2, 1]).swizzled(SWIZZLE_128B, 0)
}
