//! The order of the attention backward's dQ additions (issue #26), shared by the kernels (which walk it) and the
//! host (which picks it and simulates it in its tests). The plain backward kernels' deterministic mode (a kernel
//! parameter) adds in the ascending order (outside it their walks are the same and take no turns); the
//! `_staggered` kernels, deterministic only, walk and take turns in the staggered order, so that the plain kernels
//! carry none of its arithmetic (wired into them, it slowed the default mode: docs/perf-notes.md, session 22).
//!
//! One (batch, key/value head) has `key_blocks` blocks, block j owning keys `j·tile_kv ..`; each walks the query
//! tiles that see one of its keys (causal: from `first_q_tile(j)` on; else all `q_tiles`) and adds its dS·K to each
//! tile's dQ accumulator (the tile's first writer stores instead). Without the deterministic mode the additions
//! race (f32 sums in any order; the first block to claim a tile stores). With it, each dQ tile takes the additions
//! of its visitors in a fixed order, the *turns*: a block's dQ writer waits until the tile's semaphore counts every
//! consumer of the earlier turns (`consumers · turn`), issues its consumers' additions (their disjoint parts of the
//! tile; stores at turn 0), and counts them in once they are complete.
//!
//! Two orders:
//! - [`DqOrder::Ascending`]: every block walks its tiles in ascending order and the turns go by key block,
//!   ascending. A block waits only for lower-numbered blocks, which the GPU dispatched before it, so this needs no
//!   co-residency: the fallback. But at the first tile every block waits for all before it, one addition's
//!   latency (its bulk reduce completed, the release seen) each: a serial chain of `consumers · key_blocks`
//!   latencies at the start of every wave, measured at 2.1× the non-deterministic time (2.8× causal).
//! - [`DqOrder::Staggered`]: the order in which the blocks reach each tile. Full attention: block j starts at tile
//!   `s_j = ⌊j · q_tiles / key_blocks⌋` and wraps around, so at any moment the blocks are spread over the tiles;
//!   each tile's turns go from the block that reached it first (the largest `s_j ≤ t`) downwards, cyclically. Causal:
//!   every block walks its tiles ascending from its first, so block j + 1 (whose first tile is later) reaches any
//!   tile before block j: the turns go by key block, descending (where seq_k > seq_q, the blocks whose keys every
//!   query sees share tile 0 as their first and still queue there, a shorter chain than ascending's). Either way a
//!   block's turn at a tile comes after blocks that reached it at the same or an earlier step of their walk, so
//!   waiting is rare. But the waits point to blocks launched later too, so every block of one (batch, head) must
//!   be resident at once: `key_blocks` ≤ the blocks the GPU holds (the host checks; otherwise Ascending). Except
//!   causal with `tile_kv < 2 · tile_q` ([`DqSchedule::launches_descending`]): there the grid launches the key
//!   blocks in descending order ([`DqSchedule::key_block`]), so a block waits only for blocks launched before
//!   it, as in the ascending order: no residency condition, and no block waits for one the GPU has not
//!   dispatched yet. A block waiting longer than the bounded wait allows traps (an error, never a hang).
//!
//! What the simulation below does not model: a grid of several groups. In full attention a group dispatched partly
//! at the end of a wave has its first blocks wait for turns of blocks not yet on the GPU, which arrive as earlier
//! groups finish: a stall the ascending order does not have, up to a block's lifetime, paid where groups do not
//! fill waves evenly. (Causal groups, whose blocks' walks range from one tile to all of them, straddled waves
//! everywhere before their launch order was reversed: docs/perf-notes.md, session 40.)
//! `oxtile bench attn --backward` times both orders on one problem (rows `oxtile-bwd-det` and
//! `oxtile-bwd-det-asc`), which is what decides the host's rule.
//!
//! Why no deadlock (Staggered, all blocks of a group resident): every wait is for a turn taken at the same or an
//! earlier step of the other block's walk ([`DqSchedule::step`]), and at equal steps for a block ahead in the turn
//! order; so waits follow (step, turn) pairs downwards and cannot close a cycle. Groups: in-order dispatch puts a
//! group's blocks on the GPU before any later group's; once earlier groups finish, the whole group is resident.

/// Which order the dQ additions of the deterministic mode follow (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum DqOrder {
    Ascending = 0,
    Staggered = 1,
}

/// The walk and the turns of one (batch, key/value head)'s blocks over one query head's tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DqSchedule {
    pub order: DqOrder,
    pub causal: bool,
    pub key_blocks: u32,
    /// Query tiles per head (seq_q padded to whole tiles).
    pub q_tiles: u32,
    pub tile_q: u32,
    pub tile_kv: u32,
    pub seq_q: u32,
    pub seq_k: u32,
}

impl DqSchedule {
    /// The first query tile block `block` sees: bottom-right causal, query row i sees key j when
    /// j ≤ i + seq_k − seq_q; 0 without the mask.
    #[inline(always)]
    pub fn first_q_tile(&self, block: u32) -> u32 {
        if !self.causal {
            return 0;
        }
        let first_row = (block * self.tile_kv + self.seq_q).saturating_sub(self.seq_k);
        (first_row / self.tile_q).min(self.q_tiles)
    }

    /// The key block that the grid's block `x` (its x index) owns: descending where [`Self::launches_descending`],
    /// else `x`.
    #[inline(always)]
    pub fn key_block(&self, x: u32) -> u32 {
        if self.launches_descending() { self.key_blocks - 1 - x } else { x }
    }

    /// Causal staggered with neighbouring blocks' walks starting less than two query tiles apart (`tile_kv <
    /// 2 · tile_q`: head dims 64 and 256): the grid launches the key blocks in descending order, the order of the
    /// turns, so a block waits only for blocks launched before it. There a group dispatched over a spread of times
    /// (as the previous group's short walks end) would otherwise chain its blocks' additions behind the latest
    /// dispatch; with two tiles of slack (head dim 128) the ascending launch, longest walks first, is the faster
    /// one (docs/perf-notes.md, session 40).
    #[inline(always)]
    pub const fn launches_descending(&self) -> bool {
        matches!(self.order, DqOrder::Staggered) && self.causal && self.tile_kv < 2 * self.tile_q
    }

    /// Whether every block waits only for blocks launched before it (then the order needs no residency: in-order
    /// dispatch puts those blocks on the GPU first); else all blocks of a (batch, key/value head) must be resident
    /// at once.
    pub const fn waits_only_for_earlier_launches(&self) -> bool {
        matches!(self.order, DqOrder::Ascending) || self.launches_descending()
    }

    /// Rows of the query tiles no block visits, all before the first any does: under the causal mask the tiles
    /// whose rows see no key (every walk starts at or after key block 0's first tile); 0 without the mask. A
    /// visited tile's first writer stores its dQ parts and the others add to them, so only these rows' dQ is
    /// written without them (zeros, by the preprocessing kernel).
    #[inline(always)]
    pub fn unvisited_rows(&self) -> u32 {
        self.first_q_tile(0) * self.tile_q
    }

    /// How many blocks visit query tile `q_tile` (< `q_tiles`), in either order: all key blocks without the mask;
    /// under it those whose first tile is at or before `q_tile`, a prefix of the key blocks (the first tile grows
    /// with the block), those whose first key some row of the tile sees: `block · tile_kv < (q_tile + 1) · tile_q +
    /// seq_k − seq_q`. (The staggered kernels at full attention convert a tile at its last turn.)
    #[inline(always)]
    pub fn visitor_count(&self, q_tile: u32) -> u32 {
        if !self.causal {
            return self.key_blocks;
        }
        let end = (q_tile as u64 + 1) * self.tile_q as u64 + self.seq_k as u64;
        let seen = end.saturating_sub(self.seq_q as u64).div_ceil(self.tile_kv as u64);
        seen.min(self.key_blocks as u64) as u32
    }

    /// How many query tiles block `block` walks.
    #[inline(always)]
    pub fn visits(&self, block: u32) -> u32 {
        self.q_tiles - self.first_q_tile(block)
    }

    /// The query tile of block `block`'s walk at step `step` (< [`DqSchedule::visits`]).
    #[inline(always)]
    pub fn q_tile(&self, block: u32, step: u32) -> u32 {
        match (self.order, self.causal) {
            (DqOrder::Staggered, false) => (self.start(block) + step) % self.q_tiles,
            _ => self.first_q_tile(block) + step,
        }
    }

    /// The query tile block `block`'s walk starts at, [`Self::q_tile`] at step 0: both orders' first tiles computed
    /// and one selected rather than branched to, so that on the GPU the value stays warp-uniform to the compiler
    /// (behind a branch on the mask, ptxas held it in a vector register).
    #[inline(always)]
    pub fn first_visit(&self, block: u32) -> u32 {
        let (first, start) = (self.first_q_tile(block), self.start(block));
        if matches!(self.order, DqOrder::Staggered) && !self.causal { start } else { first }
    }

    /// The step at which block `block` reaches query tile `q_tile` (which it visits).
    #[inline(always)]
    pub fn step(&self, block: u32, q_tile: u32) -> u32 {
        match (self.order, self.causal) {
            (DqOrder::Staggered, false) => (q_tile + self.q_tiles - self.start(block)) % self.q_tiles,
            _ => q_tile - self.first_q_tile(block),
        }
    }

    /// Block `block`'s place in the order of the additions to query tile `q_tile`: 0 for the first, up to the
    /// tile's visitors less one.
    #[inline(always)]
    pub fn turn(&self, block: u32, q_tile: u32) -> u32 {
        match (self.order, self.causal) {
            (DqOrder::Ascending, _) => block,
            (DqOrder::Staggered, true) => self.last_visitor(q_tile) - block,
            (DqOrder::Staggered, false) => {
                let first = self.first_to_reach(q_tile);
                (first + self.key_blocks - block) % self.key_blocks
            }
        }
    }

    /// Whether every intermediate of this schedule's arithmetic fits in 32 bits, as the kernels compute it (a GPU
    /// divides 32-bit integers in a few instructions, 64-bit ones in a call): key blocks × query tiles (the full
    /// order's starts and first visitors), the keys of all blocks plus seq_q (the first tiles), and the rows of
    /// all query tiles plus seq_k (the causal order's last visitors). The host takes the staggered order only
    /// where this holds (with both sequences near 5.9 million tokens and beyond, it does not).
    pub const fn fits_u32(&self) -> bool {
        let max = u32::MAX as u64;
        (self.key_blocks as u64) * (self.q_tiles as u64) <= max
            && (self.key_blocks as u64) * (self.tile_kv as u64) + (self.seq_q as u64) <= max
            && (self.q_tiles as u64) * (self.tile_q as u64) + (self.seq_k as u64) <= max
    }

    /// Full attention, staggered: where block `block`'s walk starts, spreading the blocks evenly over the tiles.
    #[inline(always)]
    fn start(&self, block: u32) -> u32 {
        block * self.q_tiles / self.key_blocks
    }

    /// Full attention, staggered: the block with the largest start at or before `q_tile`, so the first to reach it
    /// (start(j) ≤ t ⟺ j < ⌈(t + 1) · key_blocks / q_tiles⌉).
    #[inline(always)]
    fn first_to_reach(&self, q_tile: u32) -> u32 {
        let bound = ((q_tile + 1) * self.key_blocks).div_ceil(self.q_tiles);
        bound.min(self.key_blocks) - 1
    }

    /// Causal: the last block that sees query tile `q_tile` (blocks `0 ..=` it do: first tiles grow with the block).
    #[inline(always)]
    fn last_visitor(&self, q_tile: u32) -> u32 {
        // first_q_tile(j) ≤ t ⟺ j·tile_kv + seq_q − seq_k ≤ (t + 1)·tile_q − 1.
        let reach = (q_tile + 1) * self.tile_q - 1 + self.seq_k;
        let last = reach.saturating_sub(self.seq_q) / self.tile_kv;
        last.min(self.key_blocks - 1)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec;
    use std::vec::Vec;

    use super::*;

    /// (query rows, keys) of every backward tile: 64 × 128 (head dim 128), 128 × 128 (64), 64 × 64 (256).
    const TILES: [(u32, u32); 3] = {
        let tiles = crate::ATTN_BWD_SM90_TILES;
        [(tiles[0].tile_q, tiles[0].tile_kv), (tiles[1].tile_q, tiles[1].tile_kv), (tiles[2].tile_q, tiles[2].tile_kv)]
    };

    fn schedule(order: DqOrder, causal: bool, seq_q: u32, seq_k: u32) -> DqSchedule {
        schedule_with(order, causal, seq_q, seq_k, (64, 128))
    }

    fn schedule_with(
        order: DqOrder,
        causal: bool,
        seq_q: u32,
        seq_k: u32,
        (tile_q, tile_kv): (u32, u32),
    ) -> DqSchedule {
        DqSchedule {
            order,
            causal,
            key_blocks: seq_k.div_ceil(tile_kv),
            q_tiles: seq_q.div_ceil(tile_q),
            tile_q,
            tile_kv,
            seq_q,
            seq_k,
        }
    }

    /// The visitors of each query tile, in block order.
    fn visitors(s: &DqSchedule) -> Vec<Vec<u32>> {
        let mut by_tile = vec![Vec::new(); s.q_tiles as usize];
        for block in 0..s.key_blocks {
            for step in 0..s.visits(block) {
                by_tile[s.q_tile(block, step) as usize].push(block);
            }
        }
        by_tile
    }

    /// Simulates one group with every block resident: a step's dS·K takes one unit of time, an addition waits for
    /// the turn before it at its tile and then `latency` units (the reduce completed, the release seen) during
    /// which the block waits. Returns the time the last addition completes, or None on a deadlock.
    fn simulate(s: &DqSchedule, latency: u64) -> Option<u64> {
        let blocks = s.key_blocks as usize;
        let mut step = vec![0u32; blocks];
        let mut free_at = vec![0u64; blocks];
        // Per tile: turns completed, and when the last one did.
        let mut done = vec![(0u32, 0u64); s.q_tiles as usize];
        let mut end = 0;
        loop {
            let mut progress = false;
            let mut finished = true;
            for block in 0..blocks {
                let j = block as u32;
                while step[block] < s.visits(j) {
                    finished = false;
                    let t = s.q_tile(j, step[block]) as usize;
                    if done[t].0 != s.turn(j, t as u32) {
                        break;
                    }
                    let start = (free_at[block] + 1).max(done[t].1);
                    free_at[block] = start + latency;
                    done[t] = (done[t].0 + 1, free_at[block]);
                    end = end.max(free_at[block]);
                    step[block] += 1;
                    progress = true;
                }
            }
            if finished {
                return Some(end);
            }
            if !progress {
                return None;
            }
        }
    }

    const SHAPES: [(u32, u32); 9] = [
        (4096, 4096),
        (1024, 1024),
        (16384, 16384),
        (2048, 4096),
        (4096, 2048),
        (100, 1000),
        (1000, 100),
        (1, 1),
        (777, 4095),
    ];

    /// Every schedule the tests walk: both orders, full and causal, each tile against each of `SHAPES`.
    fn every_schedule() -> impl Iterator<Item = DqSchedule> {
        [DqOrder::Ascending, DqOrder::Staggered].into_iter().flat_map(|order| {
            [false, true].into_iter().flat_map(move |causal| {
                TILES
                    .into_iter()
                    .flat_map(move |tile| SHAPES.map(|(seq_q, seq_k)| schedule_with(order, causal, seq_q, seq_k, tile)))
            })
        })
    }

    #[test]
    fn every_tile_takes_each_visitor_once_in_turns_zero_to_its_visitors() {
        for s in every_schedule() {
            for block in 0..s.key_blocks {
                let walk: Vec<u32> = (0..s.visits(block)).map(|step| s.q_tile(block, step)).collect();
                let mut sorted = walk.clone();
                sorted.sort_unstable();
                let first = s.first_q_tile(block);
                assert_eq!(sorted, (first..s.q_tiles).collect::<Vec<_>>(), "{s:?} block {block}");
                // The kernel's walk starts where the schedule's does (`first_visit`, computed without a branch).
                if s.q_tiles > 0 {
                    assert_eq!(s.first_visit(block), s.q_tile(block, 0), "{s:?} block {block}");
                }
                for (step, &t) in (0..).zip(&walk) {
                    assert_eq!(s.step(block, t), step, "{s:?} block {block}");
                    // What the kernel's `Block` walks: its start plus the step, wrapped once.
                    let wrapped = (walk[0] + step) % s.q_tiles.max(1);
                    assert_eq!(t, wrapped, "{s:?} block {block} step {step}");
                }
            }
            for (t, blocks) in (0..).zip(visitors(&s)) {
                // The tiles before `unvisited_rows` have no visitor, every other tile one at least, and the
                // kernels count them without walking.
                assert_eq!(blocks.is_empty(), t * s.tile_q < s.unvisited_rows(), "{s:?} tile {t}");
                assert_eq!(blocks.len() as u32, s.visitor_count(t), "{s:?} tile {t}");
                let mut turns: Vec<u32> = blocks.iter().map(|&b| s.turn(b, t)).collect();
                turns.sort_unstable();
                assert_eq!(turns, (0..blocks.len() as u32).collect::<Vec<_>>(), "{s:?} tile {t}");
            }
        }
    }

    /// Where the schedule says so, a tile's turns follow the grid's launch order: each block's predecessor at a
    /// tile was launched before it, so with in-order dispatch no wait can be for a block not yet on the GPU. The
    /// launch order is a permutation of the key blocks.
    #[test]
    fn where_no_residency_is_needed_every_turn_follows_the_launch_order() {
        for s in every_schedule() {
            let mut blocks: Vec<u32> = (0..s.key_blocks).map(|x| s.key_block(x)).collect();
            blocks.sort_unstable();
            assert_eq!(blocks, (0..s.key_blocks).collect::<Vec<_>>(), "{s:?}");
            if !s.waits_only_for_earlier_launches() {
                continue;
            }
            let launch = |block: u32| (0..s.key_blocks).find(|&x| s.key_block(x) == block).unwrap();
            for (t, visitors) in (0..).zip(visitors(&s)) {
                let mut by_turn: Vec<(u32, u32)> = visitors.iter().map(|&b| (s.turn(b, t), b)).collect();
                by_turn.sort_unstable();
                for pair in by_turn.windows(2) {
                    let (before, after) = (pair[0].1, pair[1].1);
                    assert!(launch(before) < launch(after), "{s:?} tile {t}: {before} after {after}");
                }
            }
        }
        // And the other way: full attention's staggered turns do wait for later launches.
        let full = schedule(DqOrder::Staggered, false, 4096, 4096);
        assert!(!full.waits_only_for_earlier_launches());
    }

    /// Simulates a grid of `groups` (batch, key/value head) groups on `resident` block slots, dispatched in
    /// launch order as slots free up: per block, a consumer computes each tile of its walk in `tile` units once the
    /// writer has taken the tile before the previous one (one staging buffer), and the writer adds each tile in
    /// `latency` units once the consumer is done with it, the writer's previous addition is, and (deterministic)
    /// the tile's previous turn is. One pass in launch order, so it needs every turn to come after blocks launched
    /// before it; returns None where one does not. The time the last block finishes.
    fn simulate_grid(
        s: &DqSchedule,
        groups: u32,
        resident: usize,
        tile: u64,
        latency: u64,
        deterministic: bool,
    ) -> Option<u64> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut slots: BinaryHeap<Reverse<u64>> = (0..resident).map(|_| Reverse(0)).collect();
        let (mut dispatched, mut end) = (0, 0);
        for _ in 0..groups {
            let mut done = vec![(0u32, 0u64); s.q_tiles as usize];
            for x in 0..s.key_blocks {
                let Reverse(free) = slots.pop().unwrap();
                dispatched = dispatched.max(free);
                let block = s.key_block(x);
                // The consumer's and the writer's last finish, and the writer's one before it.
                let (mut consumer, mut writer, mut writer_before) = (dispatched, dispatched, dispatched);
                for step in 0..s.visits(block) {
                    let t = s.q_tile(block, step);
                    consumer = consumer.max(writer_before) + tile;
                    let mut start = consumer.max(writer);
                    let turn = &mut done[t as usize];
                    if deterministic {
                        if turn.0 != s.turn(block, t) {
                            return None;
                        }
                        start = start.max(turn.1);
                    }
                    (writer_before, writer) = (writer, start + latency);
                    *turn = (turn.0 + 1, writer);
                }
                end = end.max(writer);
                slots.push(Reverse(writer));
            }
        }
        Some(end)
    }

    /// Causal, over a GPU's worth of resident blocks and waves of groups: where the staggered order launches its
    /// key blocks in its turns' order, it costs little over the same walks with no turns at all (the default mode,
    /// launched ascending), with an addition's latency most of a tile's time. (Launched ascending, the same model
    /// gives 1.57× at 16k keys of head dim 64's tile, 64 groups: docs/perf-notes.md, session 40.) Where it
    /// launches ascending (head dim 128's tile), its turns wait for later launches and the one-pass model cannot
    /// run it.
    #[test]
    fn causal_staggered_turns_cost_little_over_waves_of_groups() {
        let (tile, latency, resident) = (5, 4, 132);
        for (tile_q, tile_kv) in TILES {
            // (keys, groups, the bound): the tables' 32k tokens a batch at 32 heads, and a short batch at 16k, where
            // the longest walks, now launched last in each group, leave a tail.
            for (seq, groups, bound) in [(4096, 256, 1.05), (16384, 64, 1.05), (16384, 8, 1.16)] {
                let staggered = schedule_with(DqOrder::Staggered, true, seq, seq, (tile_q, tile_kv));
                let plain = DqSchedule { order: DqOrder::Ascending, ..staggered };
                let turns = simulate_grid(&staggered, groups, resident, tile, latency, true);
                assert_eq!(turns.is_some(), staggered.launches_descending(), "{staggered:?}");
                let Some(turns) = turns else { continue };
                let free = simulate_grid(&plain, groups, resident, tile, latency, false).unwrap();
                let cost = turns as f64 / free as f64;
                std::println!("{tile_q}×{tile_kv}, {seq} keys, {groups} groups: {free} without turns, ×{cost:.3}");
                assert!(cost <= bound, "{staggered:?}, {groups} groups: ×{cost:.3}");
            }
        }
        // Full attention's staggered turns wait for later launches too.
        let full = schedule(DqOrder::Staggered, false, 4096, 4096);
        assert_eq!(simulate_grid(&full, 2, 132, 5, 4, true), None);
    }

    /// The kernels' 32-bit arithmetic gives the 64-bit formulas' walk and turns wherever `fits_u32` holds, up to
    /// its edge; past it `fits_u32` says no.
    #[test]
    fn the_32_bit_arithmetic_holds_wherever_the_host_takes_it() {
        let (tile_q, tile_kv) = (64u64, 128u64);
        // (seq_q, seq_k): key blocks × query tiles just under 2^32, and just over it.
        for (seq_q, seq_k, fits) in [(4_194_304, 8_388_480, true), (4_194_304, 8_388_736, false)] {
            for causal in [false, true] {
                let s = DqSchedule { causal, ..schedule(DqOrder::Staggered, causal, seq_q, seq_k) };
                assert_eq!(s.fits_u32(), fits, "{s:?}");
                if !fits {
                    continue;
                }
                let (blocks, tiles) = (s.key_blocks as u64, s.q_tiles as u64);
                let last_visitor = |t: u64| {
                    (((t + 1) * tile_q - 1 + seq_k as u64).saturating_sub(seq_q as u64) / tile_kv).min(blocks - 1)
                };
                let first_to_reach = |t: u64| ((t + 1) * blocks).div_ceil(tiles).min(blocks) - 1;
                for block in [0, 1, blocks / 3, blocks - 2, blocks - 1] {
                    let start = block * tiles / blocks;
                    if !causal {
                        assert_eq!(s.q_tile(block as u32, 0) as u64, start, "{s:?} block {block}");
                    }
                    for t in [0, 1, tiles / 2, tiles - 2, tiles - 1] {
                        if s.first_q_tile(block as u32) as u64 > t {
                            continue;
                        }
                        let turn = if causal {
                            last_visitor(t) - block
                        } else {
                            (first_to_reach(t) + blocks - block) % blocks
                        };
                        assert_eq!(s.turn(block as u32, t as u32) as u64, turn, "{s:?} block {block} tile {t}");
                    }
                }
            }
        }
    }

    /// With every block resident both orders finish, the staggered one never later; within two steps of the time
    /// with no waiting beyond a tile's own additions, except causal with more keys than queries.
    #[test]
    fn staggered_turns_hardly_wait_and_neither_order_deadlocks() {
        for causal in [false, true] {
            for (tile, (seq_q, seq_k)) in TILES.into_iter().flat_map(|t| SHAPES.map(|s| (t, s))) {
                for latency in [0, 1, 3] {
                    let ascending = schedule_with(DqOrder::Ascending, causal, seq_q, seq_k, tile);
                    let staggered = DqSchedule { order: DqOrder::Staggered, ..ascending };
                    // No waiting: the longest walk; or where a tile has more visitors than there are steps, its
                    // additions one after another.
                    let walk = (0..ascending.key_blocks).map(|b| ascending.visits(b)).max().unwrap() as u64;
                    let visitors = visitors(&ascending).iter().map(Vec::len).max().unwrap() as u64;
                    let ideal = (walk * (1 + latency)).max(visitors * latency + 1);
                    let slow = simulate(&ascending, latency).expect("ascending deadlocked");
                    let fast = simulate(&staggered, latency).expect("staggered deadlocked");
                    std::println!(
                        "{causal} {seq_q}×{seq_k} latency {latency}: ideal {ideal}, ascending {slow}, staggered {fast}"
                    );
                    assert!(fast <= slow, "{staggered:?}: {fast} > {slow}");
                    // Causal with seq_k > seq_q: the blocks whose keys every query sees all start at tile 0 and
                    // take their turns there one after another (a shorter chain than ascending's, not none).
                    if !causal || seq_q >= seq_k {
                        assert!(fast <= ideal + 2 * (1 + latency), "{staggered:?}: {fast} against {ideal}");
                    }
                }
            }
        }
    }
}
