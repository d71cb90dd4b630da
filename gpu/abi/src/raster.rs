//! The order in which a persistent GEMM's blocks visit output tiles (host and device share it, so the host can
//! reason about which tiles run side by side), defined by layouts.
//!
//! Tiles are numbered M-fastest, id = `m + tiles_m · n`. Work item `i` is the tile whose id is the value at `i` of
//! the grouped rasterization: [`GROUP_M`] tile rows at a time, swept column by column with the rows fastest,
//!
//! ```text
//! (GROUP_M, tiles_n, groups) : (1, tiles_m, GROUP_M)
//! ```
//!
//! so that the blocks resident at one time share a few A row panels and B column panels in L2 instead of
//! streaming all of B per tile row. Where `tiles_m` is not a multiple of [`GROUP_M`], the remaining rows form one
//! shorter group after the full ones, `(rows, tiles_n) : (1, tiles_m)` from its first row on. A persistent block
//! `b` of a grid of `g` visits items `b, b + g, …`.

use oxtile_layout::StaticLayout;

/// Tile rows per rasterization group (measured against 2, 4 and 16 on the H200: docs/perf-notes.md, GEMM sm90 v12).
pub const GROUP_M: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileScheduler {
    tiles_m: u32,
    tiles_n: u32,
}

/// One output tile, in tile units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    pub m: u32,
    pub n: u32,
}

const fn at_least_one(value: u32) -> i64 {
    if value == 0 { 1 } else { value as i64 }
}

impl TileScheduler {
    /// The tiles of an `m × n` output in `tile_m × tile_n` tiles (partial tiles at the edges count).
    pub const fn new(m: u32, n: u32, tile_m: u32, tile_n: u32) -> Self {
        TileScheduler { tiles_m: m.div_ceil(tile_m), tiles_n: n.div_ceil(tile_n) }
    }

    pub const fn tiles(&self) -> u32 {
        self.tiles_m * self.tiles_n
    }

    /// Tile rows in full groups.
    const fn full_rows(&self) -> u32 {
        self.tiles_m / GROUP_M * GROUP_M
    }

    /// The full groups' rasterization, work item → tile id: `(GROUP_M, tiles_n, groups) : (1, tiles_m, GROUP_M)`.
    /// Meaningful for the first `full_rows × tiles_n` items (a layout of one group where there is none).
    pub const fn full_groups(&self) -> StaticLayout<3> {
        let (tiles_m, tiles_n) = (self.tiles_m as i64, at_least_one(self.tiles_n));
        let groups = at_least_one(self.tiles_m / GROUP_M);
        StaticLayout::new(&[GROUP_M as i64, tiles_n, groups], &[1, tiles_m, GROUP_M as i64])
    }

    /// The last, shorter group's rasterization, work item past the full groups → tile id less the group's first
    /// row: `(rows, tiles_n) : (1, tiles_m)` (a layout of one row where there is no such group).
    pub const fn last_group(&self) -> StaticLayout<2> {
        let rows = at_least_one(self.tiles_m % GROUP_M);
        StaticLayout::new(&[rows, at_least_one(self.tiles_n)], &[1, self.tiles_m as i64])
    }

    /// The `index`-th tile of the order (`index < tiles()`).
    #[inline(always)]
    pub const fn tile(&self, index: u32) -> Tile {
        let in_full_groups = self.full_rows() * self.tiles_n;
        let id = if index < in_full_groups {
            self.full_groups().index_u32(index)
        } else {
            self.full_rows() + self.last_group().index_u32(index - in_full_groups)
        };
        Tile { m: id % self.tiles_m, n: id / self.tiles_m }
    }

    /// The tiles a persistent block visits: `first`, `first + stride`, … (block index, grid size).
    #[inline(always)]
    pub fn tiles_from(self, first: u32, stride: u32) -> impl Iterator<Item = Tile> {
        let mut next = first;
        core::iter::from_fn(move || {
            let index = next;
            next += stride;
            (index < self.tiles()).then(|| self.tile(index))
        })
    }

    /// How many tiles [`tiles_from`](Self::tiles_from) visits.
    #[inline(always)]
    pub const fn tiles_from_count(&self, first: u32, stride: u32) -> u32 {
        if first < self.tiles() { (self.tiles() - first).div_ceil(stride) } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    /// The order spelled out: groups of GROUP_M rows (the last possibly shorter), columns, rows fastest.
    fn spelled_out(tiles_m: u32, tiles_n: u32) -> Vec<Tile> {
        let mut order = Vec::new();
        for first_row in (0..tiles_m).step_by(GROUP_M as usize) {
            for n in 0..tiles_n {
                for m in first_row..(first_row + GROUP_M).min(tiles_m) {
                    order.push(Tile { m, n });
                }
            }
        }
        order
    }

    #[test]
    fn the_layouts_visit_every_tile_once_in_grouped_order() {
        for tiles_m in 1..=40 {
            for tiles_n in 1..=24 {
                let scheduler = TileScheduler::new(tiles_m * 128, tiles_n * 256, 128, 256);
                let order: Vec<Tile> = (0..scheduler.tiles()).map(|i| scheduler.tile(i)).collect();
                assert_eq!(order, spelled_out(tiles_m, tiles_n), "{tiles_m} × {tiles_n} tiles");
            }
        }
    }

    #[test]
    fn the_full_groups_are_one_layout() {
        // 4096² in 256 × 256 cluster tiles: two groups of 8 rows, 16 columns each.
        let scheduler = TileScheduler::new(4096, 4096, 256, 256);
        let layout = scheduler.full_groups();
        assert_eq!((layout.size(), layout.rank()), (256, 3));
        assert_eq!(layout.leaf_shapes(), &[8, 16, 2]);
        assert_eq!(layout.leaf_strides(), &[1, 16, 8]);
        // Item 9 is the second row of the second column of the first group; item 128 starts the second group.
        assert_eq!(scheduler.tile(9), Tile { m: 1, n: 1 });
        assert_eq!(scheduler.tile(128), Tile { m: 8, n: 0 });
    }

    #[test]
    fn partial_edge_tiles_count_and_blocks_split_the_order() {
        let scheduler = TileScheduler::new(1000, 1000, 128, 256);
        assert_eq!(scheduler.tiles(), 8 * 4);
        let visited: Vec<u32> = (0..5).map(|block| scheduler.tiles_from(block, 5).count() as u32).collect();
        assert_eq!(visited, [7, 7, 6, 6, 6]);
        assert!((0..5).all(|block| scheduler.tiles_from_count(block, 5) == visited[block as usize]));
        assert_eq!(scheduler.tiles_from_count(40, 5), 0);
    }
}
