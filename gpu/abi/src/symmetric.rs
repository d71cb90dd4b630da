//! How the symmetric GEMM's epilogue makes D exactly symmetric, shared by the kernel and its tests.
//!
//! The symmetric GEMM computes only the tiles on and above the diagonal. An off-diagonal tile is stored twice: as
//! itself and transposed. A diagonal tile is computed whole, and its two halves differ by rounding, since
//! D(i, j) and D(j, i) are different dot products unless A·B is a Gram matrix. A consumer of D that reads it
//! transposed (the tn GEMM reads its B operand that way) then multiplies by Dᵀ ≠ D, and Gram Newton-Schulz amplifies
//! the skew part. So the epilogue writes every element below the diagonal from its partner above it.
//!
//! The epilogue stores in *strips*: each warp has TMA store its `strip_rows` rows of a staged chunk, which is
//! `chunk_rows` rows × `chunk_columns` columns of the tile, and for an off-diagonal tile also the transpose of the
//! strip at the transposed place ("mirror"). In a diagonal tile each strip plays one of three parts
//! ([`strip_part`]), and a chunk crossed by the diagonal is first made symmetric where it holds both an element and
//! its partner ([`symmetric_square`]). The simulation in the tests checks, for every chunk width the kernels
//! use, that each element of a diagonal tile is written exactly once and that an element below the diagonal
//! receives its partner's value.

/// What a warp does with its strip of a chunk in the symmetric GEMM's epilogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripPart {
    /// Store the strip at its own place.
    pub store: bool,
    /// Also store its transpose at the transposed place.
    pub mirror: bool,
}

/// The part of the strip whose rows start at `strip_row` and whose chunk's columns start at `chunk_column` (both
/// relative to the tile; `strip_rows` and `chunk_columns` its extent), in a `diagonal` tile or an off-diagonal one.
///
/// In a diagonal tile: a strip wholly above the diagonal is stored and mirrored; a strip wholly below it is not
/// stored, as the mirror of a strip above writes it; a strip the diagonal crosses is stored, after
/// [`symmetric_square`] has made its chunk symmetric.
#[inline(always)]
pub const fn strip_part(
    diagonal: bool,
    strip_row: u32,
    strip_rows: u32,
    chunk_column: u32,
    chunk_columns: u32,
) -> StripPart {
    if !diagonal {
        return StripPart { store: true, mirror: true };
    }
    StripPart { store: chunk_column + chunk_columns > strip_row, mirror: chunk_column >= strip_row + strip_rows }
}

/// Where the diagonal of a diagonal tile crosses the chunk at (`chunk_row`, `chunk_column`) (relative to the tile)
/// of `chunk_rows` × `chunk_columns`: the first of the chunk's rows of the `chunk_columns`-square whose lower
/// triangle must be written from its upper triangle before the chunk is stored, or `None` where the diagonal misses
/// the chunk.
///
/// The chunks' columns are a multiple of their width and the rows of their height, and the width divides the
/// height, so a crossed chunk holds the whole square (checked in the tests).
#[inline(always)]
pub const fn symmetric_square(chunk_row: u32, chunk_rows: u32, chunk_column: u32, chunk_columns: u32) -> Option<u32> {
    if chunk_column >= chunk_row && chunk_column + chunk_columns <= chunk_row + chunk_rows {
        Some(chunk_column - chunk_row)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern crate std;
    use std::vec;

    /// A diagonal tile of `tile` rows stored through chunks of `chunk_rows` × `chunk_columns` and strips of
    /// `strip_rows`, simulated: element (i, j) computes the distinct value `i·tile + j`; returns what D holds and
    /// how often each element was written.
    fn simulate(tile: u32, chunk_rows: u32, chunk_columns: u32, strip_rows: u32) -> (vec::Vec<u32>, vec::Vec<u32>) {
        let n = tile as usize;
        let mut d = vec![u32::MAX; n * n];
        let mut writes = vec![0u32; n * n];
        for chunk_row in (0..tile).step_by(chunk_rows as usize) {
            for chunk_column in (0..tile).step_by(chunk_columns as usize) {
                // The staged chunk, as computed.
                let staged = |i: u32, j: u32| i * tile + j;
                let square = symmetric_square(chunk_row, chunk_rows, chunk_column, chunk_columns);
                let symmetrized = |i: u32, j: u32| -> u32 {
                    if let Some(first) = square {
                        let (r, c) = (i - chunk_row, j - chunk_column);
                        let in_square = r >= first && r < first + chunk_columns;
                        if in_square && r - first > c {
                            // Written from the partner: row `first + c`, column `r - first` of the chunk.
                            return staged(chunk_row + first + c, chunk_column + (r - first));
                        }
                    }
                    staged(i, j)
                };
                for strip_row in (chunk_row..chunk_row + chunk_rows).step_by(strip_rows as usize) {
                    let part = strip_part(true, strip_row, strip_rows, chunk_column, chunk_columns);
                    for i in strip_row..strip_row + strip_rows {
                        for j in chunk_column..chunk_column + chunk_columns {
                            let value = symmetrized(i, j);
                            if part.store {
                                d[(i * tile + j) as usize] = value;
                                writes[(i * tile + j) as usize] += 1;
                            }
                            if part.mirror {
                                d[(j * tile + i) as usize] = value;
                                writes[(j * tile + i) as usize] += 1;
                            }
                        }
                    }
                }
            }
        }
        (d, writes)
    }

    #[test]
    fn a_diagonal_tile_is_written_once_per_element_and_below_the_diagonal_from_above() {
        // 16-bit outputs stage 64 columns a chunk, f32 ones 32; a warp's strip is 16 rows of a 64-row chunk. Wider and
        // narrower chunks too, to see that the rule does not depend on the kernels' particular sizes.
        for (tile, chunk_rows, chunk_columns, strip_rows) in [
            (128, 64, 64, 16),
            (128, 64, 32, 16),
            (128, 64, 16, 16),
            (64, 64, 64, 16),
            (128, 128, 64, 16),
            (256, 64, 32, 8),
        ] {
            let (d, writes) = simulate(tile, chunk_rows, chunk_columns, strip_rows);
            for i in 0..tile {
                for j in 0..tile {
                    let at = (i * tile + j) as usize;
                    assert_eq!(writes[at], 1, "({i}, {j}) of a {tile} tile, chunks {chunk_rows}×{chunk_columns}");
                    let (upper_i, upper_j) = if i <= j { (i, j) } else { (j, i) };
                    assert_eq!(
                        d[at],
                        upper_i * tile + upper_j,
                        "({i}, {j}) must hold the value computed at ({upper_i}, {upper_j})"
                    );
                }
            }
        }
    }

    #[test]
    fn an_off_diagonal_tile_stores_every_strip_twice() {
        assert_eq!(strip_part(false, 48, 16, 0, 64), StripPart { store: true, mirror: true });
    }

    #[test]
    fn the_square_is_found_where_the_diagonal_crosses_a_chunk() {
        assert_eq!(symmetric_square(64, 64, 64, 64), Some(0));
        assert_eq!(symmetric_square(64, 64, 96, 32), Some(32));
        assert_eq!(symmetric_square(0, 64, 64, 64), None);
        assert_eq!(symmetric_square(64, 64, 32, 32), None);
    }
}
