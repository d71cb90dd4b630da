//! The hybrid data-parallel + stream-K schedule of the persistent cooperative GEMM (issue #5), shared by the kernel
//! (which walks it) and the host (which sizes the workspace from it and simulates it in its tests).
//!
//! A persistent grid of `grid` blocks computes `tiles` output tiles of `k_tiles` k-tiles each. Whole waves of tiles
//! stay data-parallel: tile `i < dp_tiles` is computed whole by block `i % grid`, as in the plain kernel. The last
//! `sk_tiles` tiles (the tail) are stream-K: their `sk_tiles × k_tiles` k-tile iterations, numbered tile by tile, are
//! cut into `grid` contiguous ranges, block `b` taking range `b` (⌊W / grid⌋ or ⌈W / grid⌉ iterations, the first
//! `W mod grid` blocks one more), so every block finishes the tail at about the same time. A range splits into one
//! piece per tile it touches; a tile may be cut between several blocks.
//!
//! Who reduces, and in which order a block walks its pieces (the deadlock and waiting argument):
//! - The piece holding a tile's last k-tile *reduces* ([`Role::Reduce`]): it adds the other pieces' f32 partial sums
//!   to its accumulators and runs the epilogue. Every other piece of a split tile is a [`Role::Partial`]: it stores
//!   its accumulators to its block's workspace slot and signals the tile's flag.
//! - A piece that does not hold its tile's last k-tile ends where its block's range ends (otherwise the range would
//!   go on into the same tile's next k-tile). So each block has at most one partial piece — the one at the end of its
//!   range — and one workspace slot per block suffices. The partials of a tile come from the blocks just before its
//!   reducer (ranges are contiguous), `first_peer .. reducer`.
//! - Each block walks its pieces from the end of its range to its start (highest tile first). Its partial piece, if
//!   any, is then the first stream-K unit it processes, and its reducing piece (the start of its range), if any, the
//!   last. So a reducer only ever waits for the *first* stream-K unit of lower-numbered blocks.
//! - No cycles: waits go from a block to lower-numbered blocks only. By induction on the block index, every block's
//!   first stream-K unit completes (it is a partial, which waits for nobody, or a reducer waiting for lower blocks'
//!   first units), hence every wait completes — provided every block of the grid is resident at once, which the host
//!   checks before each stream-K launch with a tail: the grid is at most what the occupancy API says the GPU holds at
//!   once (blocks per SM × SMs, or for clusters `cuOccupancyMaxActiveClusters`), or the plan does not run stream-K
//!   (host/src/ops/gemm.rs, `GemmPlan::new`).
//! - How long: all blocks own the same number of data-parallel tiles (`dp_tiles` is a multiple of `grid` in
//!   [`StreamK::split`]), so they enter the tail together. A reducer reaches its fixup after its whole range
//!   (≥ ⌊W / grid⌋ k-tiles); a partial it waits for is done after at most its block's whole range (≤ ⌈W / grid⌉). The
//!   reducer waits for at most one k-tile of work plus the partial's store (checked by the simulation in the tests).

/// How long a reducer waits for its peers' partials before it gives up: it traps, so a grid whose
/// blocks are not all resident (a launch the host's co-residency check did not cover, another process holding SMs
/// under MPS, a smaller green context) fails with an error instead of hanging. A legitimate wait is about one k-tile
/// of work: microseconds, and under compute-sanitizer's racecheck, which instruments every shared-memory access and
/// barrier poll, a thousand times that; ten seconds leaves a wide margin above both.
pub const WAIT_LIMIT_NS: u64 = 10_000_000_000;

/// How many polls of a peer's flag a reducer makes between reads of `%globaltimer` for [`WAIT_LIMIT_NS`]. A poll is
/// an acquire load from L2 (hundreds of nanoseconds), so the limit is noticed well within a millisecond of passing,
/// while the clock read (a special-register read, slower than the load) stays off the common path: a reducer whose
/// peers are already done makes one poll and no clock read.
pub const POLLS_PER_CLOCK_READ: u32 = 64;

/// Flags per (stream-K tile, consumer warpgroup sharing it) in the workspace: one per warp of the warpgroup, since each
/// warp of the reducing block reads exactly what the same warp of each peer block stored (in a ping-pong block the
/// peer's warpgroup may be the other consumer: the fragment layout is the same).
pub const FLAGS_PER_CONSUMER: u32 = 4;

/// What a block does with the accumulators of one unit after its main loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The unit covers its whole tile: it runs the epilogue alone (every data-parallel tile, and stream-K tiles that
    /// one block's range covers entirely).
    Whole,
    /// The first or a middle part of a split tile: the block stores its f32 accumulators to its workspace slot and
    /// signals the tile's flag. No epilogue.
    Partial,
    /// The part holding the tile's last k-tile: the block waits for the partials of blocks `first_peer ..` itself,
    /// adds them, resets the tile's flag and runs the epilogue.
    Reduce { first_peer: u32 },
    /// One of the `pieces` pieces of a split-K tile ([`StreamK::split_k`]), on blocks `first_peer .. first_peer +
    /// pieces`, the block's only unit: it stores its partial, waits for the other pieces' and adds up its share of
    /// the tile (the `block − first_peer`-th of `pieces`) from all of them, in piece order, into D. The reduction is
    /// spread over every piece instead of read by one block partial after partial.
    Share { first_peer: u32, pieces: u32 },
}

/// One work unit of a block: k-tiles `k_begin .. k_end` of tile `tile` (an index in the tile scheduler's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    pub tile: u32,
    pub k_begin: u32,
    pub k_end: u32,
    pub role: Role,
}

/// The schedule: which tiles are data-parallel, and how the stream-K iterations are split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamK {
    tiles: u32,
    k_tiles: u32,
    grid: u32,
    sk_tiles: u32,
    /// Split-K ([`StreamK::split_k`]): the pieces of every tile; 0 for the stream-K ranges.
    pieces: u32,
}

impl StreamK {
    /// The schedule with the last `sk_tiles` tiles stream-K. The host picks `sk_tiles` ([`StreamK::split`]) and
    /// passes it to the kernel, which rebuilds the same schedule from it; [`StreamK::is_valid`] says whether the
    /// arguments make a schedule (the kernel does not check: it has nowhere to report).
    pub const fn new(tiles: u32, k_tiles: u32, grid: u32, sk_tiles: u32) -> StreamK {
        StreamK { tiles, k_tiles, grid, sk_tiles, pieces: 0 }
    }

    /// Split-K: every one of the `tiles` tiles cut into `pieces` pieces of (within one) `k_tiles / pieces` k-tiles,
    /// piece `p` of tile `t` on block `t · pieces + p` (a grid of `tiles × pieces` blocks), each block's only unit
    /// ([`Role::Share`]). Unlike the stream-K ranges, no piece crosses a tile, so the pieces of a tile can reduce it
    /// together: each stores its partial, waits for the others' (which are done at about the same time: the pieces
    /// are within one k-tile of each other) and adds up its `1 / pieces` of the tile. Every block waits for blocks of
    /// its own tile, so all of the grid must be resident at once, as for a stream-K tail. The kernel rebuilds this
    /// from its grid's tile count, the k-tiles and `pieces` (a kernel parameter); the product is the host's to check.
    pub const fn split_k(tiles: u32, k_tiles: u32, pieces: u32) -> StreamK {
        StreamK { tiles, k_tiles, grid: tiles.wrapping_mul(pieces), sk_tiles: tiles, pieces }
    }

    /// Split-K's pieces per tile ([`StreamK::split_k`]), or 0.
    pub const fn pieces(&self) -> u32 {
        self.pieces
    }

    /// The host's choice of boundary for `tiles` tiles of `k_tiles` k-tiles on `grid` blocks:
    /// - whole waves (`grid` tiles each) stay data-parallel, the last partial wave is stream-K;
    /// - when that partial wave has fewer than `grid / 2` tiles and there is a whole wave before it, that wave is
    ///   stream-K too. The time is the same either way in k-tiles (the tail's work spread evenly over all blocks),
    ///   but with under half a wave each block's range would be under half a tile, and a tile would be cut between
    ///   up to ⌈2·grid / rem⌉ + 1 blocks, its reducer reading all their partials in turn; with ½ to 1½ waves a range
    ///   is at least half a tile, so a tile has at most 3 pieces (2 partials to read);
    /// - no tail (`tiles` a multiple of `grid`): all data-parallel, the plain kernel's schedule.
    ///
    /// The stream-K iterations are counted in u32: should `sk_tiles × k_tiles` not fit (K in the millions), the extra
    /// wave is dropped, and then the tail (all data-parallel if it still does not fit).
    pub const fn split(tiles: u32, k_tiles: u32, grid: u32) -> StreamK {
        let rem = if grid == 0 { 0 } else { tiles % grid };
        let mut sk_tiles = if rem == 0 {
            0
        } else if 2 * rem < grid && tiles >= rem + grid {
            rem + grid
        } else {
            rem
        };
        if (sk_tiles as u64) * (k_tiles as u64) > u32::MAX as u64 {
            sk_tiles = rem;
        }
        if (sk_tiles as u64) * (k_tiles as u64) > u32::MAX as u64 {
            sk_tiles = 0;
        }
        StreamK::new(tiles, k_tiles, grid, sk_tiles)
    }

    /// Whether the arguments make a schedule: a grid, at least one k-tile, no more stream-K tiles than tiles, and the
    /// stream-K iterations countable in u32.
    pub const fn is_valid(&self) -> bool {
        self.grid > 0
            && self.k_tiles > 0
            && self.sk_tiles <= self.tiles
            && (self.sk_tiles as u64) * (self.k_tiles as u64) <= u32::MAX as u64
            && (self.pieces == 0
                || (self.pieces <= self.k_tiles
                    && self.sk_tiles == self.tiles
                    && (self.tiles as u64) * (self.pieces as u64) == self.grid as u64))
    }

    pub const fn tiles(&self) -> u32 {
        self.tiles
    }

    pub const fn k_tiles(&self) -> u32 {
        self.k_tiles
    }

    pub const fn grid(&self) -> u32 {
        self.grid
    }

    pub const fn sk_tiles(&self) -> u32 {
        self.sk_tiles
    }

    /// Tiles `0 .. dp_tiles` are data-parallel.
    pub const fn dp_tiles(&self) -> u32 {
        self.tiles - self.sk_tiles
    }

    /// k-tile iterations of the stream-K tiles, all blocks together.
    pub const fn sk_iterations(&self) -> u32 {
        self.sk_tiles * self.k_tiles
    }

    /// The stream-K iterations of `block`: `start .. end`, numbered from the first stream-K tile's first k-tile.
    pub const fn range(&self, block: u32) -> (u32, u32) {
        // Split-K (pieces > 0): piece `block mod pieces` of tile `block / pieces`.
        if let Some(tile) = block.checked_div(self.pieces) {
            let (start, piece) = (tile * self.k_tiles, block % self.pieces);
            return (start + self.piece_start(piece), start + self.piece_start(piece + 1));
        }
        let (q, r) = (self.sk_iterations() / self.grid, self.sk_iterations() % self.grid);
        let start = block * q + if block < r { block } else { r };
        (start, start + q + (block < r) as u32)
    }

    /// The block whose range holds stream-K iteration `iteration`.
    pub const fn block_of(&self, iteration: u32) -> u32 {
        if self.pieces > 0 {
            // The last piece of the tile that starts at or before the iteration.
            let (tile, k_tile) = (iteration / self.k_tiles, iteration % self.k_tiles);
            let mut piece = ((k_tile as u64 * self.pieces as u64) / self.k_tiles as u64) as u32;
            while piece + 1 < self.pieces && self.piece_start(piece + 1) <= k_tile {
                piece += 1;
            }
            while piece > 0 && self.piece_start(piece) > k_tile {
                piece -= 1;
            }
            return tile * self.pieces + piece;
        }
        let (q, r) = (self.sk_iterations() / self.grid, self.sk_iterations() % self.grid);
        // The first r blocks take q + 1 iterations each; when q is 0 every iteration lies among them.
        let long = r * (q + 1);
        if iteration < long { iteration / (q + 1) } else { r + (iteration - long) / q }
    }

    /// Split-K: the first k-tile of piece `piece` (of [`StreamK::pieces`]) in its tile; `pieces` gives `k_tiles`.
    const fn piece_start(&self, piece: u32) -> u32 {
        ((piece as u64 * self.k_tiles as u64) / self.pieces as u64) as u32
    }

    /// Blocks that store a partial (one workspace slot each, indexed by block): every block may, so a slot per block
    /// of the grid when there is a stream-K tail, none otherwise.
    pub const fn partial_slots(&self) -> u32 {
        if self.sk_tiles == 0 { 0 } else { self.grid }
    }

    /// u32 flags the workspace needs for a kernel whose tiles are each computed by `sharers` consumer warpgroups
    /// together ([`crate::GemmTile::tile_sharers`], [`FLAGS_PER_CONSUMER`] each).
    pub const fn flags(&self, sharers: u32) -> u32 {
        self.sk_tiles * sharers * FLAGS_PER_CONSUMER
    }

    /// How many units [`StreamK::units`] yields for `block`: its data-parallel tiles and one piece per stream-K tile
    /// its range touches. The ping-pong kernel needs the count up front (its consumers alternate units, and only a
    /// unit that follows is handed over).
    pub const fn unit_count(&self, block: u32) -> u32 {
        let dp = self.dp_tiles();
        let dp_units = if block < dp && self.grid > 0 { (dp - block).div_ceil(self.grid) } else { 0 };
        if self.sk_tiles == 0 || block >= self.grid {
            return dp_units;
        }
        if self.pieces > 0 {
            return 1;
        }
        let (start, end) = self.range(block);
        let pieces = if end > start { (end - 1) / self.k_tiles - start / self.k_tiles + 1 } else { 0 };
        dp_units + pieces
    }

    /// The units of `block` in the order it processes them: its data-parallel tiles, then its stream-K pieces from
    /// the end of its range to the start (see the module documentation for why).
    pub const fn units(&self, block: u32) -> Units {
        let (sk_begin, sk_end) = if self.sk_tiles == 0 || block >= self.grid { (0, 0) } else { self.range(block) };
        Units { schedule: *self, next_dp: block, sk_begin, sk_end }
    }
}

/// The units of one block ([`StreamK::units`]).
#[derive(Clone, Copy, Debug)]
pub struct Units {
    schedule: StreamK,
    /// The next data-parallel tile (block, block + grid, …).
    next_dp: u32,
    /// The stream-K iterations still to be walked: `sk_begin .. sk_end`, taken from the end.
    sk_begin: u32,
    sk_end: u32,
}

impl Iterator for Units {
    type Item = Unit;

    #[inline(always)]
    fn next(&mut self) -> Option<Unit> {
        let s = &self.schedule;
        if self.next_dp < s.dp_tiles() {
            let tile = self.next_dp;
            self.next_dp += s.grid;
            return Some(Unit { tile, k_begin: 0, k_end: s.k_tiles, role: Role::Whole });
        }
        if self.sk_end <= self.sk_begin {
            return None;
        }
        // The piece of the highest tile left: from the later of the tile's start and the range's start to the end.
        let end = self.sk_end;
        let sk_tile = (end - 1) / s.k_tiles;
        let tile_start = sk_tile * s.k_tiles;
        let begin = if tile_start > self.sk_begin { tile_start } else { self.sk_begin };
        self.sk_end = begin;
        let (k_begin, k_end) = (begin - tile_start, end - tile_start);
        let role = if s.pieces > 0 {
            Role::Share { first_peer: sk_tile * s.pieces, pieces: s.pieces }
        } else if k_end < s.k_tiles {
            Role::Partial
        } else if k_begin == 0 {
            Role::Whole
        } else {
            Role::Reduce { first_peer: s.block_of(tile_start) }
        };
        Some(Unit { tile: s.dp_tiles() + sk_tile, k_begin, k_end, role })
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;
    use std::{format, vec};

    use super::*;

    /// Tiles of 128×256 and k-tiles of 64 for an M×N×K problem, and the grid the host launches on 132 SMs.
    fn wide(m: u32, n: u32, k: u32) -> StreamK {
        let (tiles, k_tiles) = (m.div_ceil(128) * n.div_ceil(256), k.div_ceil(64));
        let grid = 132u32.min(tiles.saturating_mul(k_tiles));
        StreamK::split(tiles, k_tiles, grid)
    }

    /// Checks everything the kernel relies on, and simulates the schedule with one time unit per k-tile; returns
    /// the longest wait of a reducer for its partials.
    fn check(s: &StreamK) -> u32 {
        let what = format!("{s:?}");
        assert!(s.is_valid(), "{what}");
        let units: Vec<Vec<Unit>> = (0..s.grid()).map(|b| s.units(b).collect()).collect();
        for (b, us) in (0u32..).zip(&units) {
            assert_eq!(s.unit_count(b), us.len() as u32, "{what}: block {b}'s unit count");
        }
        assert_eq!(s.unit_count(s.grid()), s.units(s.grid()).count() as u32, "{what}: a block past the grid");

        // Every (tile, k-tile) exactly once; every unit non-empty.
        let mut covered = vec![0u8; (s.tiles() * s.k_tiles()) as usize];
        for unit in units.iter().flatten() {
            assert!(unit.k_begin < unit.k_end && unit.k_end <= s.k_tiles() && unit.tile < s.tiles(), "{what} {unit:?}");
            for k in unit.k_begin..unit.k_end {
                covered[(unit.tile * s.k_tiles() + k) as usize] += 1;
            }
        }
        assert!(covered.iter().all(|&c| c == 1), "{what}: some k-tile not covered exactly once");
        if s.pieces() > 0 {
            check_split(s, &units);
            return 0;
        }

        // Per tile: one whole unit, or one reducer whose peers each hold exactly one partial of it, and nothing else.
        let mut by_tile: Vec<Vec<(u32, Unit)>> = vec![Vec::new(); s.tiles() as usize];
        for (b, us) in units.iter().enumerate() {
            for unit in us {
                by_tile[unit.tile as usize].push((b as u32, *unit));
            }
        }
        for (tile, of_tile) in (0u32..).zip(&by_tile) {
            let reducers: Vec<&(u32, Unit)> =
                of_tile.iter().filter(|(_, u)| matches!(u.role, Role::Reduce { .. })).collect();
            let wholes = of_tile.iter().filter(|(_, u)| u.role == Role::Whole).count();
            if of_tile.len() == 1 {
                assert_eq!(wholes, 1, "{what} tile {tile}");
                continue;
            }
            assert!(tile >= s.dp_tiles(), "{what}: data-parallel tile {tile} is split");
            assert_eq!((reducers.len(), wholes), (1, 0), "{what} tile {tile}: {of_tile:?}");
            let &(reducer, unit) = reducers[0];
            let Role::Reduce { first_peer } = unit.role else { unreachable!() };
            assert_eq!(unit.k_end, s.k_tiles(), "{what}: the reducer holds the last k-tile");
            let mut partials: Vec<u32> = of_tile.iter().filter(|(_, u)| u.role == Role::Partial).map(|p| p.0).collect();
            partials.sort_unstable();
            assert_eq!(partials, (first_peer..reducer).collect::<Vec<_>>(), "{what} tile {tile}");
        }

        // At most one partial per block (its workspace slot), and it is the block's first stream-K unit; the reducer
        // is its last: every wait is on a unit its block processes before anything else of the tail.
        let dp_units = |b: u32| (b..s.dp_tiles()).step_by(s.grid() as usize).count();
        for (b, us) in units.iter().enumerate() {
            assert_eq!(us.iter().take_while(|u| u.tile < s.dp_tiles()).count(), dp_units(b as u32), "{what}");
            let sk: Vec<&Unit> = us.iter().skip(dp_units(b as u32)).collect();
            for (i, unit) in sk.iter().enumerate() {
                match unit.role {
                    Role::Partial => assert_eq!(i, 0, "{what} block {b}: a partial after another unit"),
                    Role::Reduce { .. } => assert_eq!(i, sk.len() - 1, "{what} block {b}: a reducer before the end"),
                    Role::Whole => {}
                    Role::Share { .. } => unreachable!("{what}: split-K is checked apart"),
                }
            }
            assert!(s.partial_slots() > b as u32 || !sk.iter().any(|u| u.role == Role::Partial), "{what}");
        }

        // Run it: each block processes its units in order (one time unit per k-tile); a reducer then waits until
        // its partials are stored. A round in which no block can move with blocks unfinished is a deadlock.
        let mut position = vec![0usize; units.len()];
        let mut clock = vec![0u32; units.len()];
        let mut done_at = std::collections::HashMap::new();
        let mut longest_wait = 0;
        loop {
            let mut moved = false;
            for b in 0..units.len() {
                while let Some(unit) = units[b].get(position[b]) {
                    let mut end = clock[b] + (unit.k_end - unit.k_begin);
                    if let Role::Reduce { first_peer } = unit.role {
                        let peers: Option<Vec<u32>> =
                            (first_peer..b as u32).map(|p| done_at.get(&(p, unit.tile)).copied()).collect();
                        let Some(peers) = peers else { break };
                        let ready = peers.into_iter().max().unwrap_or(0);
                        longest_wait = longest_wait.max(ready.saturating_sub(end));
                        end = end.max(ready);
                    }
                    if unit.role == Role::Partial {
                        done_at.insert((b as u32, unit.tile), end);
                    }
                    clock[b] = end;
                    position[b] += 1;
                    moved = true;
                }
            }
            if position.iter().zip(&units).all(|(&p, us)| p == us.len()) {
                break;
            }
            assert!(moved, "{what}: deadlock at positions {position:?}");
        }
        // Balance: every block ends within one tile (uneven data-parallel tiles), one iteration (uneven ranges) and
        // its wait of the best possible finish.
        let total: u32 = units.iter().flatten().map(|u| u.k_end - u.k_begin).sum();
        let ideal = total.div_ceil(s.grid());
        assert!(*clock.iter().max().unwrap() <= ideal + s.k_tiles() + 1 + longest_wait, "{what}: {clock:?}");
        longest_wait
    }

    /// Split-K: each block one piece of one tile, the pieces of tile t on blocks t·pieces .. (t + 1)·pieces in K order,
    /// each within one k-tile of the others, all naming that tile's blocks.
    fn check_split(s: &StreamK, units: &[Vec<Unit>]) {
        let what = format!("{s:?}");
        assert_eq!(s.grid(), s.tiles() * s.pieces(), "{what}");
        for (b, us) in (0u32..).zip(units) {
            let [unit] = us.as_slice() else { panic!("{what}: block {b} has {} units", us.len()) };
            let (tile, piece) = (b / s.pieces(), b % s.pieces());
            assert_eq!(
                unit.role,
                Role::Share { first_peer: tile * s.pieces(), pieces: s.pieces() },
                "{what} block {b}"
            );
            assert_eq!(unit.tile, tile, "{what} block {b}");
            let length = unit.k_end - unit.k_begin;
            assert!(length == s.k_tiles() / s.pieces() || length == s.k_tiles().div_ceil(s.pieces()), "{what} {b}");
            if piece > 0 {
                assert_eq!(units[b as usize - 1][0].k_end, unit.k_begin, "{what}: block {b} follows its neighbour");
            }
            let (start, end) = s.range(b);
            assert_eq!((start, end), (tile * s.k_tiles() + unit.k_begin, tile * s.k_tiles() + unit.k_end), "{what}");
            assert!((start..end).all(|i| s.block_of(i) == b), "{what}: block_of inverts block {b}'s range");
        }
    }

    #[test]
    fn split_k_cuts_each_tile_into_its_pieces_and_nothing_else() {
        for (tiles, k_tiles, pieces) in [(5, 112, 26), (12, 112, 11), (32, 64, 4), (1, 7, 7), (3, 10, 3), (66, 2, 2)] {
            let s = StreamK::split_k(tiles, k_tiles, pieces);
            assert!(s.is_valid(), "{s:?}");
            assert_eq!(
                (s.grid(), s.sk_tiles(), s.dp_tiles(), s.partial_slots()),
                (tiles * pieces, tiles, 0, tiles * pieces)
            );
            check(&s);
        }
        // More pieces than k-tiles, or a grid that is not tiles × pieces, is not a schedule.
        assert!(!StreamK::split_k(4, 3, 4).is_valid());
        assert!(!StreamK { grid: 9, ..StreamK::split_k(4, 8, 2) }.is_valid());
        // The stream-K ranges of the same grid cross tiles where K is not a multiple of the pieces; split-K's do not.
        let (stream, split) = (StreamK::split(5, 10, 15), StreamK::split_k(5, 10, 3));
        assert!((0..15).any(|b| stream.unit_count(b) == 2));
        assert!((0..15).all(|b| split.unit_count(b) == 1));
    }

    /// The benchmark suite and the GPU tests' stream-K shapes (docs/perf-notes.md), with the host's grid.
    const SHAPES: [(u32, u32, u32); 16] = [
        (2048, 2048, 2048),
        (4096, 4096, 4096),
        (8192, 8192, 8192),
        (16384, 16384, 16384),
        (4096, 14336, 4096),
        (8192, 4096, 14336),
        (128, 8192, 8192),
        (1024, 1024, 1024),
        (1000, 1000, 1000),
        (4097, 4095, 4104),
        (333, 777, 264),
        (1000, 1000, 64),
        (2048, 2048, 64),
        (64, 64, 64),
        (1, 1, 8),
        (8192, 8192, 64),
    ];

    #[test]
    fn suite_schedules_cover_every_k_tile_once_and_cannot_deadlock() {
        for (m, n, k) in SHAPES {
            let s = wide(m, n, k);
            let wait = check(&s);
            // With the host's boundary every block enters the tail together, so a reducer waits at most one k-tile
            // (a partial's range may be one iteration longer than the reducer's).
            assert!(wait <= 1, "{m}x{n}x{k} {s:?}: a reducer waits {wait} k-tiles");
        }
    }

    #[test]
    fn the_boundary_takes_the_last_partial_wave_or_one_more() {
        // 8192³: 2048 tiles = 15 waves + 68; 68 ≥ 66, so only the tail.
        assert_eq!((wide(8192, 8192, 8192).sk_tiles(), wide(8192, 8192, 8192).dp_tiles()), (68, 1980));
        // 16384³: 8192 = 62 waves + 8: the last whole wave joins (140 tiles over 132 blocks).
        assert_eq!(wide(16384, 16384, 16384).sk_tiles(), 140);
        // 4096³: 512 = 3 waves + 116.
        assert_eq!(wide(4096, 4096, 4096).sk_tiles(), 116);
        // 2048³: 128 tiles on 132 blocks: all stream-K, ~31 of 32 k-tiles per block.
        let s = wide(2048, 2048, 2048);
        assert_eq!((s.sk_tiles(), s.grid(), s.range(0), s.range(131)), (128, 132, (0, 32), (4065, 4096)));
        // 128×8192×8192: 32 tiles, fewer than half a wave and no whole wave before them.
        assert_eq!(wide(128, 8192, 8192).sk_tiles(), 32);
        // A whole number of waves: the plain schedule.
        let s = StreamK::split(264, 10, 132);
        assert_eq!(s.sk_tiles(), 0);
        assert_eq!(s.partial_slots(), 0);
        assert!(s.units(5).all(|u| u.role == Role::Whole && (u.k_begin, u.k_end) == (0, 10)));
        assert_eq!(s.units(5).map(|u| u.tile).collect::<Vec<_>>(), [5, 137]);
        // K so large that the iterations do not fit in u32: drop the extra wave, then the tail.
        assert_eq!(StreamK::split(132 + 8, 1 << 26, 132).sk_tiles(), 8);
        assert_eq!(StreamK::split(132 + 100, 1 << 26, 132).sk_tiles(), 0);
    }

    #[test]
    fn tiles_are_split_between_two_and_three_blocks_from_half_a_wave_on() {
        for (m, n, k) in SHAPES {
            let s = wide(m, n, k);
            if 2 * s.tiles() < s.grid() || s.sk_tiles() == 0 {
                continue;
            }
            for tile in s.dp_tiles()..s.tiles() {
                let pieces = (0..s.grid()).flat_map(|b| s.units(b)).filter(|u| u.tile == tile).count();
                assert!(pieces <= 3, "{m}x{n}x{k}: tile {tile} in {pieces} pieces");
            }
        }
        // 8192³ (68 tiles of 128 k-tiles, 65 or 66 per block) cuts every tail tile in two or three. 2048³: blocks 0..4 take 32 k-tiles, a whole tile each; the others take
        // 31, so every later tile is cut in two. 1000³ (32 tiles of 16 k-tiles on 132 blocks, 3 or 4 each): into four
        // to six, the case the host's boundary cannot avoid without idling SMs. 4096³ (116 tail tiles of 64 k-tiles,
        // 56 or 57 per block): two or three.
        let pieces = |s: StreamK, tile| (0..s.grid()).flat_map(|b| s.units(b)).filter(|u| u.tile == tile).count();
        let s = wide(2048, 2048, 2048);
        assert!((0..4).all(|t| pieces(s, t) == 1) && (4..128).all(|t| pieces(s, t) == 2));
        let s = wide(1000, 1000, 1000);
        assert!((0..32).all(|t| (4..=6).contains(&pieces(s, t))));
        let s = wide(4096, 4096, 4096);
        assert!((s.dp_tiles()..s.tiles()).all(|t| (2..=3).contains(&pieces(s, t))));
        assert!((s.dp_tiles()..s.tiles()).any(|t| pieces(s, t) == 3));
        // 4097×4095×4104 (33 × 16 = 528 tiles = 4 waves exactly): no tail at all.
        assert_eq!(wide(4097, 4095, 4104).sk_tiles(), 0);
        let s = wide(8192, 8192, 8192);
        assert!((s.dp_tiles()..s.tiles()).all(|t| (2..=3).contains(&pieces(s, t))));
    }

    #[test]
    fn random_schedules_cover_every_k_tile_once_and_cannot_deadlock() {
        // A small xorshift: the abi crate has no dependencies.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |bound: u32| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as u32
        };
        for _ in 0..3000 {
            let (tiles, k_tiles, grid) = (1 + next(300), 1 + next(70), 1 + next(140));
            // The host's boundary, with the grid it would launch (never more blocks than k-tiles of work).
            let grid_used = grid.min(tiles * k_tiles);
            let s = StreamK::split(tiles, k_tiles, grid_used);
            let wait = check(&s);
            assert!(wait <= 1, "{s:?}: a reducer waits {wait} k-tiles");
            // Any boundary is deadlock-free (a reducer may wait longer when blocks enter the tail unevenly).
            check(&StreamK::new(tiles, k_tiles, grid, next(tiles + 1)));
        }
        // Degenerate ones: one block, one k-tile, everything stream-K with more blocks than iterations.
        check(&StreamK::new(7, 5, 1, 7));
        check(&StreamK::new(7, 1, 132, 7));
        check(&StreamK::new(3, 2, 132, 3));
    }

    #[test]
    fn block_of_inverts_range() {
        for (iterations_per_tile, tiles, grid) in [(32, 128, 132), (7, 3, 5), (1, 2, 7), (64, 124, 132)] {
            let s = StreamK::new(tiles, iterations_per_tile, grid, tiles);
            for b in 0..grid {
                let (start, end) = s.range(b);
                assert!(end - start == s.sk_iterations() / grid || end - start == s.sk_iterations().div_ceil(grid));
                for i in start..end {
                    assert_eq!(s.block_of(i), b);
                }
            }
            assert_eq!(s.range(grid - 1).1, s.sk_iterations());
        }
    }
}
