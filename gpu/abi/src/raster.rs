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

/// One output tile, in tile units, of matrix `batch` of a stack (0 for a single matrix).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tile {
    pub m: u32,
    pub n: u32,
    pub batch: u32,
}

/// An order of output tiles that persistent blocks walk: block `b` of a grid of `g` visits items `b, b + g, …`.
/// Host and device share each order, so the host can reason about which tiles run side by side.
pub trait TileOrder: Copy {
    /// The order over a stack of `batch` outputs of `m × n` elements in `tile_m × tile_n` tiles.
    fn for_output(m: u32, n: u32, tile_m: u32, tile_n: u32, batch: u32) -> Self;
    /// Work items in the order.
    fn items(&self) -> u32;
    /// The `index`-th tile (`index < items()`).
    fn item(&self, index: u32) -> Tile;

    /// The tiles a persistent block visits: `first`, `first + stride`, … (block index, grid size).
    #[inline(always)]
    fn visit(self, first: u32, stride: u32) -> impl Iterator<Item = Tile> {
        let mut next = first;
        core::iter::from_fn(move || {
            let index = next;
            next += stride;
            (index < self.items()).then(|| self.item(index))
        })
    }

    /// How many tiles [`visit`](Self::visit) visits.
    #[inline(always)]
    fn visit_count(&self, first: u32, stride: u32) -> u32 {
        if first < self.items() { (self.items() - first).div_ceil(stride) } else { 0 }
    }
}

impl TileOrder for TileScheduler {
    /// One matrix: the batch is ignored (the general GEMM is not batched).
    #[inline(always)]
    fn for_output(m: u32, n: u32, tile_m: u32, tile_n: u32, _batch: u32) -> Self {
        TileScheduler::new(m, n, tile_m, tile_n)
    }
    #[inline(always)]
    fn items(&self) -> u32 {
        self.tiles()
    }
    #[inline(always)]
    fn item(&self, index: u32) -> Tile {
        self.tile(index)
    }
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

    /// The `index`-th tile of the order (`index < tiles()`): the tile whose id [`full_groups`](Self::full_groups) (or
    /// [`last_group`](Self::last_group)) gives at `index`, decoded into (m, n) from the item's place in its group
    /// rather than through the id: one division by a run-time value (a group's items, or the last group's rows)
    /// where the layout's index and the id's split into m and n take two, each a chain of an I2F, a MUFU.RCP and a
    /// dozen integer steps in front of every tile's main loop. The tests hold it to the layouts. Past `tiles()` the
    /// result is meaningless, and where tiles_m is a multiple of `GROUP_M` the last group's division is by zero:
    /// every caller bounds the index first.
    #[inline(always)]
    pub const fn tile(&self, index: u32) -> Tile {
        let in_full_groups = self.full_rows() * self.tiles_n;
        if index < in_full_groups {
            let group_items = GROUP_M * self.tiles_n;
            let (group, in_group) = (index / group_items, index % group_items);
            Tile { m: group * GROUP_M + in_group % GROUP_M, n: in_group / GROUP_M, batch: 0 }
        } else {
            // Past the full groups there are tiles only where tiles_m is not a multiple of GROUP_M: rows ≥ 1.
            let (rows, in_group) = (self.tiles_m % GROUP_M, index - in_full_groups);
            Tile { m: self.full_rows() + in_group % rows, n: in_group / rows, batch: 0 }
        }
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

/// The tiles on and above the diagonal of a stack of `batch` square `n × n` outputs in square tiles, for a product
/// whose result is symmetric (the symmetric GEMM computes tile (i, j) for i ≤ j and stores it at (i, j) and, for
/// i < j, transposed at (j, i)). Work item → tile: matrix by matrix (the batch outermost), and within a matrix the
/// grouped rasterization of [`TileScheduler`] cut to the upper triangle: [`GROUP_M`] tile rows at a time (the last
/// group possibly shorter), each group swept column by column from its first row's diagonal tile on, the group's
/// rows on or above the diagonal fastest. In group rows `r .. r + h` column `r + d` (d < h) holds the `d + 1` tiles of
/// rows `r ..= r + d`; every column past `r + h` holds all `h`. Blocks resident at one time then share a few row
/// panels (A's rows) and column panels (B's columns), as in the full order.
///
/// Every tile takes the same k-loop, so the persistent blocks visiting items `b, b + g, …` get within one tile of
/// each other; a diagonal tile stores once, the others twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TriangularScheduler {
    /// Tiles per side of one matrix.
    side: u32,
    batch: u32,
}

impl TriangularScheduler {
    /// The upper-triangle tiles of `batch` `n × n` outputs in `tile × tile` tiles (partial tiles at the edges count).
    pub const fn new(n: u32, tile: u32, batch: u32) -> Self {
        TriangularScheduler { side: n.div_ceil(tile), batch }
    }

    /// Tiles on and above the diagonal of one matrix.
    pub const fn per_matrix(&self) -> u32 {
        self.side * (self.side + 1) / 2
    }

    pub const fn tiles(&self) -> u32 {
        self.per_matrix() * self.batch
    }

    /// Tiles of the group of `rows` tile rows from `first_row` on: the triangle at its head, then full columns.
    const fn group_tiles(&self, first_row: u32, rows: u32) -> u32 {
        rows * (rows + 1) / 2 + (self.side - first_row - rows) * rows
    }

    /// The `index`-th tile of the order (`index < tiles()`). A loop over at most `side / GROUP_M` groups and one over
    /// at most `GROUP_M` columns: a few dozen instructions per tile of a whole k-loop.
    #[inline(always)]
    pub const fn tile(&self, index: u32) -> Tile {
        let per_matrix = self.per_matrix();
        let batch = index / per_matrix;
        let mut item = index % per_matrix;
        let mut first_row = 0;
        let mut rows = if self.side < GROUP_M { self.side } else { GROUP_M };
        loop {
            let count = self.group_tiles(first_row, rows);
            if item < count {
                break;
            }
            item -= count;
            first_row += rows;
            let left = self.side - first_row;
            rows = if left < GROUP_M { left } else { GROUP_M };
        }
        let head = rows * (rows + 1) / 2;
        if item < head {
            // Column `first_row + d` of the head holds d + 1 tiles.
            let mut d = 0;
            while item > d {
                item -= d + 1;
                d += 1;
            }
            Tile { m: first_row + item, n: first_row + d, batch }
        } else {
            let item = item - head;
            Tile { m: first_row + item % rows, n: first_row + rows + item / rows, batch }
        }
    }
}

impl TileOrder for TriangularScheduler {
    /// `m` must equal `n` and `tile_m` equal `tile_n` (the symmetric GEMM's square outputs and tiles).
    #[inline(always)]
    fn for_output(_m: u32, n: u32, _tile_m: u32, tile_n: u32, batch: u32) -> Self {
        TriangularScheduler::new(n, tile_n, batch)
    }
    #[inline(always)]
    fn items(&self) -> u32 {
        self.tiles()
    }
    #[inline(always)]
    fn item(&self, index: u32) -> Tile {
        self.tile(index)
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
                    order.push(Tile { m, n, batch: 0 });
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
    fn the_decode_is_the_layouts_value() {
        for tiles_m in 1..=70 {
            for tiles_n in 1..=40 {
                let scheduler = TileScheduler::new(tiles_m * 64, tiles_n * 128, 64, 128);
                let in_full_groups = scheduler.full_rows() * tiles_n;
                for index in 0..scheduler.tiles() {
                    let id = if index < in_full_groups {
                        scheduler.full_groups().index_u32(index)
                    } else {
                        scheduler.full_rows() + scheduler.last_group().index_u32(index - in_full_groups)
                    };
                    let tile = scheduler.tile(index);
                    assert_eq!((tile.m, tile.n), (id % tiles_m, id / tiles_m), "{tiles_m} × {tiles_n}, item {index}");
                }
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
        assert_eq!(scheduler.tile(9), Tile { m: 1, n: 1, batch: 0 });
        assert_eq!(scheduler.tile(128), Tile { m: 8, n: 0, batch: 0 });
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

    /// The triangular order spelled out: per matrix, groups of GROUP_M rows, columns from the group's first row on,
    /// the group's rows on or above the diagonal fastest.
    fn triangle_spelled_out(side: u32, batch: u32) -> Vec<Tile> {
        let mut order = Vec::new();
        for b in 0..batch {
            for first_row in (0..side).step_by(GROUP_M as usize) {
                for n in first_row..side {
                    for m in first_row..(first_row + GROUP_M).min(side).min(n + 1) {
                        order.push(Tile { m, n, batch: b });
                    }
                }
            }
        }
        order
    }

    #[test]
    fn the_triangle_visits_every_upper_tile_once_in_grouped_order() {
        for side in 1..=70 {
            for batch in [1, 3] {
                let scheduler = TriangularScheduler::new(side * 128 - 5, 128, batch);
                let order: Vec<Tile> = (0..scheduler.tiles()).map(|i| scheduler.tile(i)).collect();
                assert_eq!(order, triangle_spelled_out(side, batch), "{side} tiles a side, {batch} matrices");
                // Every (i, j) with i ≤ j of every matrix exactly once, nothing below the diagonal.
                let mut seen = std::collections::HashSet::new();
                for tile in &order {
                    assert!(tile.m <= tile.n && tile.n < side && tile.batch < batch, "{tile:?}");
                    assert!(seen.insert(*tile), "{tile:?} twice");
                }
                assert_eq!(seen.len() as u32, side * (side + 1) / 2 * batch);
            }
        }
    }

    #[test]
    fn the_triangle_is_balanced_across_persistent_blocks() {
        // n = 4096 in 128-tiles: 528 tiles, exactly 4 per block of 132; n = 8192: 2080, 15 or 16 each.
        for (n, batch, grid, expected) in [(4096, 1, 132, 528), (8192, 1, 132, 2080), (1000, 5, 132, 180)] {
            let scheduler = TriangularScheduler::new(n, 128, batch);
            assert_eq!(scheduler.items(), expected);
            let counts: Vec<u32> = (0..grid).map(|b| scheduler.visit(b, grid).count() as u32).collect();
            assert!((0..grid).all(|b| scheduler.visit_count(b, grid) == counts[b as usize]));
            let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            assert!(max - min <= 1, "{counts:?}");
            assert_eq!(counts.iter().sum::<u32>(), expected);
            // The blocks together visit every tile once.
            let mut all: Vec<Tile> = (0..grid).flat_map(|b| scheduler.visit(b, grid)).collect();
            all.sort_by_key(|t| (t.batch, t.m, t.n));
            all.dedup();
            assert_eq!(all.len() as u32, expected);
        }
    }

    #[test]
    fn the_triangle_keeps_few_panels_resident() {
        // The 132 tiles of one wave at n = 8192 touch few distinct row and column panels (each a 128-row panel of
        // X for X·Xᵀ): the grouped order's L2 reuse, against a row-by-row walk of the triangle.
        let scheduler = TriangularScheduler::new(8192, 128, 1);
        let side = 64;
        let row_by_row: Vec<Tile> = (0..side).flat_map(|m| (m..side).map(move |n| Tile { m, n, batch: 0 })).collect();
        let panels = |tiles: &[Tile]| {
            let mut set = std::collections::HashSet::new();
            for t in tiles {
                set.insert(t.m);
                set.insert(t.n);
            }
            set.len()
        };
        for wave in 0..scheduler.tiles() / 132 {
            let tiles: Vec<Tile> = (wave * 132..(wave + 1) * 132).map(|i| scheduler.tile(i)).collect();
            let naive = &row_by_row[(wave * 132) as usize..((wave + 1) * 132) as usize];
            assert!(panels(&tiles) <= 8 + 64, "wave {wave}: {}", panels(&tiles));
            assert!(panels(&tiles) <= panels(naive) + 8, "wave {wave}: {} vs {}", panels(&tiles), panels(naive));
        }
    }
}
