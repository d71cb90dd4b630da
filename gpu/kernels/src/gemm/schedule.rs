//! Persistent tile scheduling with grouped rasterization.
//!
//! Output tiles are numbered so that consecutive work items sweep `GROUP_M` tile rows before moving one tile
//! column right: the blocks resident at one time then share a few B column panels and A row panels in L2
//! instead of streaming all of B per row.

/// Tile rows per rasterization group.
const GROUP_M: u32 = 8;

#[derive(Clone, Copy)]
pub struct TileScheduler {
    tiles_m: u32,
    tiles_n: u32,
}

/// One output tile, in tile units.
#[derive(Clone, Copy)]
pub struct Tile {
    pub m: u32,
    pub n: u32,
}

impl TileScheduler {
    pub const fn new(m: u32, n: u32, tile_m: u32, tile_n: u32) -> Self {
        TileScheduler { tiles_m: m.div_ceil(tile_m), tiles_n: n.div_ceil(tile_n) }
    }

    pub const fn tiles(&self) -> u32 {
        self.tiles_m * self.tiles_n
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

    /// The `index`-th tile of the grouped order.
    #[inline(always)]
    pub const fn tile(&self, index: u32) -> Tile {
        let per_group = GROUP_M * self.tiles_n;
        let group = index / per_group;
        let first_m = group * GROUP_M;
        let group_rows = if self.tiles_m - first_m < GROUP_M { self.tiles_m - first_m } else { GROUP_M };
        let in_group = index % per_group;
        Tile { m: first_m + in_group % group_rows, n: in_group / group_rows }
    }
}
