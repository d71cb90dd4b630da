//! Shared-memory tile layouts the kernels share, built with the layout algebra in `const` items (no run-time cost:
//! see layout_demo.rs, whose CI test compares the machine code with hand-written addressing).

use oxtile_layout::{StaticComposedLayout, StaticLayout, Swizzle};

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
pub const SW128_64X64_B16: StaticComposedLayout<4> = TILE_BYTES.swizzled(Swizzle::new(3, 4, 3), 0);

const _: () = assert!(SW128_64X64_B16.layout.cosize() == 2 * 64 * 64 - 1);

/// Element index to byte offset of an f32 element over a 64×32 tile: `2048:4`.
const ELEMENT_BYTES_B32: StaticLayout<4> = StaticLayout::new(&[64 * 32], &[4]);
/// (row, column) to element index, row-major: `(64,32):(32,1)`.
const ROW_MAJOR_64X32: StaticLayout<4> = StaticLayout::row_major(&[64, 32]);

/// A 64×32 tile of f32 as TMA reads and writes it with the 128-byte swizzle: `Sw<3,4,3> ∘ (64,32):(128,4)`,
/// (row, column) → byte offset. The same bytes as [`SW128_64X64_B16`] (128-byte rows, 16-byte chunks XORed with
/// the row modulo 8), holding half as many columns.
pub const SW128_64X32_B32: StaticComposedLayout<4> =
    StaticLayout::expect(ELEMENT_BYTES_B32.composition(&ROW_MAJOR_64X32)).swizzled(Swizzle::new(3, 4, 3), 0);

const _: () = assert!(SW128_64X32_B32.layout.cosize() == 4 * 64 * 32 - 3);
