//! The order in which the attention backward's main kernels take their walks (issue #26), shared by the host (which
//! picks it) and the kernels (which map their block index through it).
//!
//! The walks are (key blocks, key/value heads, batch), the key block fastest, and the GPU dispatches a launch's
//! blocks in linear order as slots free up. Under the causal mask a key block's walk is shorter the later its keys
//! (block j sees the query tiles from about `j · tile_kv / tile_q` on), so the walks' own order puts each (batch,
//! kv head) group's longest walk first and its shortest last, group after group: the last groups' longest walks start when the GPU is
//! nearly done with everything else and leave a tail (a one-slot-per-SM list-scheduling model: 1.4–3.5% at the
//! issue tables' shapes, 12–27% at shapes with few groups; [`tests`]).
//!
//! Longest first across all groups removes the tail in the model but not on the GPU: the blocks running at once
//! then belong to as many groups as there are blocks, each streaming its own Q, dO and dQ accumulator through
//! the L2, and the causal rows ran at 0.60–0.83 of the grid order's speed (docs/perf-notes.md, session 51). So
//! only the **tail** changes: the last `tail_groups` groups, about one GPU's worth of blocks, are dispatched
//! longest first among themselves (key block by key block, the groups inside), and every group before them in the
//! grid's order. The blocks resident at any moment then span as many groups as in the grid's order, twice as many
//! where the tail begins.
//!
//! Walks only get shorter with the key block, so the deterministic ascending order (a block waits for the lower
//! key blocks of its group at each tile) still waits only for blocks dispatched before it.
//!
//! The launch is one-dimensional: block `b` of `launched` walks the order's blocks `b, b + launched, …`
//! ([`BwdLaunchOrder::launched_blocks`], and for persistent launches [`WalkSplit::for_launch`], which may split
//! the last round). Full attention's walks are all equally long, so a GPU's worth of
//! persistent blocks, each taking every `launched`-th walk, ends when the hardware's dispatch of one block per
//! walk would, and each block loads its next K and V while its consumers store the last dK and dV instead of
//! after a new block's start; in the staggered deterministic order the GPU's worth is whole groups, whose blocks
//! wait for one another. Causal walks differ in length, and the hardware's dispatch balances them as they end:
//! one walk per block. So does the ascending deterministic order, whose blocks wait for walks before theirs, which
//! only the hardware's in-order dispatch guarantees to be running or done.

use crate::dq_order::DqOrder;

/// The key-block order of one launch of a backward main kernel (the staggered kernels': the grid's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BwdLaunchOrder {
    /// Key blocks per (batch, kv head) group.
    pub key_blocks: u32,
    /// (batch, kv head) groups, the kv head fastest.
    pub groups: u32,
    /// The last groups, dispatched longest walk first among themselves; 0 or 1: the grid's own order.
    pub tail_groups: u32,
}

impl BwdLaunchOrder {
    /// The host's rule: causal launches take as many tail groups as fill the `resident` blocks the GPU holds at
    /// once, where the grid's block count fits the kernel's 32-bit index arithmetic; otherwise (full attention,
    /// whose walks are all equally long, or a grid past 2^32 blocks) the grid's own order.
    pub fn for_launch(causal: bool, key_blocks: u32, groups: u32, resident: u32) -> BwdLaunchOrder {
        let fits = (key_blocks as u64) * (groups as u64) <= u32::MAX as u64;
        let tail_groups = if causal && fits && key_blocks > 1 { resident.div_ceil(key_blocks).min(groups) } else { 0 };
        BwdLaunchOrder { key_blocks, groups, tail_groups }
    }

    /// Blocks of the launch, each walking every `launched`-th walk of the order from its own index.
    ///
    /// - Full attention outside the deterministic mode (equally long walks, no block waiting for another): a GPU's
    ///   worth (`resident`, the blocks it holds at once) of persistent blocks.
    /// - Full attention in the staggered deterministic order, whose blocks wait for every other block of their
    ///   (batch, key/value head) group: whole groups, as many as are resident at once, so that the walks of one
    ///   round are always whole groups on blocks that all run (`launched` a multiple of the key blocks: block `b`'s
    ///   walks are key block `b mod key_blocks` of a group). Where whole groups take more rounds than walks spread
    ///   over every resident block would (a group of nearly half the GPU's blocks or more leaves SMs idle every
    ///   round), one block per walk instead.
    /// - Otherwise one block per walk: causal walks differ in length, which the hardware's dispatch balances as they
    ///   end, and the ascending deterministic order waits for walks before its own, which only the hardware's
    ///   in-order dispatch guarantees to be running or done.
    pub fn launched_blocks(&self, causal: bool, order: Option<DqOrder>, resident: u32) -> u32 {
        let walks = self.key_blocks.saturating_mul(self.groups);
        let resident = resident.max(1);
        match (causal, order) {
            (false, None) => walks.min(resident),
            (false, Some(DqOrder::Staggered)) => {
                let groups = (resident / self.key_blocks.max(1)).min(self.groups);
                let whole_groups_fit = groups > 0 && self.groups.div_ceil(groups) <= walks.div_ceil(resident);
                if whole_groups_fit { groups * self.key_blocks } else { walks }
            }
            _ => walks,
        }
    }

    /// Whether a launch's blocks are persistent with equally long walks that wait for no turn (only for a tile's
    /// first claimant, which is running): full attention outside the deterministic mode, whose last round
    /// [`WalkSplit::for_launch`] may split.
    pub fn persistent(causal: bool, deterministic: bool) -> bool {
        !causal && !deterministic
    }

    /// Whether the order is the grid's own (no mapping needed).
    #[inline(always)]
    pub fn is_grid_order(&self) -> bool {
        self.tail_groups <= 1
    }

    /// The (key block, group) of the walk dispatched `linear`-th; the group's kv head is `group % heads_kv`, its
    /// batch `group / heads_kv`. `linear < key_blocks · groups`, which [`Self::for_launch`] keeps within 32 bits
    /// wherever the order is not the grid's.
    #[inline(always)]
    pub fn block(&self, linear: u32) -> (u32, u32) {
        let grid = (linear % self.key_blocks, linear / self.key_blocks);
        if self.is_grid_order() {
            return grid;
        }
        let head = (self.groups - self.tail_groups) * self.key_blocks;
        if linear < head {
            return grid;
        }
        let tail = linear - head;
        (tail / self.tail_groups, self.groups - self.tail_groups + tail % self.tail_groups)
    }
}

/// The last round of a persistent full-attention launch split across the launch's blocks (issue #26).
///
/// `launched` blocks each walking every `launched`-th walk end together only where `launched` divides the walks:
/// otherwise the last `walks mod launched` walks run on that many blocks while the others idle for a whole walk
/// (3% of every head-dim-128 row of issue 26's tables: 4096 walks on 132 blocks, 31.03 rounds). So the last
/// `split_walks` walks are each cut into `pieces` runs of their query tiles (`q_tiles` per query head, every head of
/// the group taking the same run), and after its whole walks block `b < split_walks · pieces` takes piece
/// `b mod pieces` of split walk `b / pieces`: in the kernel's index space the whole walks end at a multiple of
/// `launched`, so block `b`'s index past them is `whole_walks + b` and its slot is `b` ([`Self::slot`]). Every
/// piece stores its partial dK and dV (f32) to its own slot of a workspace; after the main kernel a small kernel
/// adds each walk's partials in piece order (the same sum in every launch: dK and dV stay bit-identical between
/// launches) and stores them. No block waits for another.
///
/// Each piece costs a store of its partial and the sum a read of it (at head dim 128 a consumer's 64 KB, about
/// half a query tile's time at the L2's bandwidth per SM), so a walk of `items` tiles (over the group's heads) is
/// cut into about √(2 · items) pieces, the minimum of `items / pieces + pieces / 2`; splitting pays where that plus
/// a piece's own store is below a whole walk. (A model: the measured gain was about half the last round's cost,
/// docs/perf-notes.md, session 53.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkSplit {
    /// Walks of the launch (`BwdLaunchOrder`'s key blocks × groups).
    pub walks: u32,
    /// Blocks launched.
    pub launched: u32,
    /// Query tiles of every walk per query head (full attention: all walks equally long).
    pub q_tiles: u32,
    /// The last walks, split; 0: every walk whole.
    pub split_walks: u32,
    /// Pieces of each split walk (`split_walks · pieces ≤ launched`, `pieces ≤ q_tiles`).
    pub pieces: u32,
}

impl WalkSplit {
    /// The host's rule for a persistent launch ([`BwdLaunchOrder::launched_blocks`]: full attention outside the
    /// deterministic mode) of `walks` walks of `q_tiles` query tiles for each of `group` query heads, on a GPU
    /// holding `resident` blocks at once: a GPU's worth of blocks (or one per walk where that is fewer), and where
    /// the kernel can split walks (`splittable`: its consumers split the keys) the last `walks mod resident` walks
    /// split where that pays (above).
    pub fn for_launch(walks: u32, q_tiles: u32, group: u32, resident: u32, splittable: bool) -> WalkSplit {
        let resident = resident.max(1);
        let whole = WalkSplit { walks, launched: walks.min(resident), q_tiles, split_walks: 0, pieces: 1 };
        let split_walks = walks % resident;
        if !splittable || split_walks == 0 {
            return whole;
        }
        let items = q_tiles as u64 * group as u64;
        let pieces = (2 * items).isqrt().min((resident / split_walks) as u64).min(q_tiles as u64);
        let phase = group as u64 * (q_tiles as u64).div_ceil(pieces.max(1)) + pieces / 2 + 1;
        // The kernel's piece boundaries in 32-bit arithmetic ([`Self::tiles`]).
        let fits = pieces * q_tiles as u64 <= u32::MAX as u64;
        if pieces < 2 || phase >= items || !fits {
            return whole;
        }
        WalkSplit { walks, launched: resident, q_tiles, split_walks, pieces: pieces as u32 }
    }

    /// Walks every block takes whole, the launch order's first: block `b` those `b + k · launched`.
    #[inline(always)]
    pub fn whole_walks(&self) -> u32 {
        self.walks - self.split_walks
    }

    /// Block `block`'s piece after its whole walks, as its slot `walk · pieces + piece` among the split walks'
    /// pieces, or None.
    #[inline(always)]
    pub fn slot(&self, block: u32) -> Option<u32> {
        if block < self.split_walks * self.pieces { Some(block) } else { None }
    }

    /// The query tiles of the piece in slot `slot`: (first, count), `piece · q_tiles / pieces` on (below 2^32:
    /// [`Self::for_launch`] splits only there).
    #[inline(always)]
    pub fn tiles(&self, slot: u32) -> (u32, u32) {
        let piece = slot % self.pieces;
        let at = |p: u32| p * self.q_tiles / self.pieces;
        (at(piece), at(piece + 1) - at(piece))
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    /// Every (key block, group) exactly once, and within a group the key blocks in ascending dispatch order.
    #[test]
    fn every_block_once_and_each_group_ascending() {
        for (key_blocks, groups) in [(1, 1), (1, 7), (7, 1), (8, 512), (33, 12), (128, 3), (5, 5)] {
            for tail_groups in 0..=groups {
                let order = BwdLaunchOrder { key_blocks, groups, tail_groups };
                let mut seen = std::vec![false; (key_blocks * groups) as usize];
                let mut last = std::vec![None::<u32>; groups as usize];
                for linear in 0..key_blocks * groups {
                    let (x, g) = order.block(linear);
                    assert!(x < key_blocks && g < groups, "{order:?} {linear}");
                    let i = (g * key_blocks + x) as usize;
                    assert!(!seen[i], "{order:?}: ({x}, {g}) twice");
                    seen[i] = true;
                    assert!(last[g as usize].is_none_or(|l| l < x), "{order:?}: group {g} not ascending");
                    last[g as usize] = Some(x);
                }
            }
        }
        // Full attention: the grid's order.
        let grid = BwdLaunchOrder::for_launch(false, 16, 9, 132);
        assert!((0..16 * 9).all(|l| grid.block(l) == (l % 16, l / 16)));
    }

    /// Persistent blocks only where the walks are equally long and none waits for another, and never more blocks
    /// than walks; the ascending deterministic order and causal launches one block per walk.
    #[test]
    fn full_attention_launches_a_gpus_worth_of_persistent_blocks() {
        let order = |causal| BwdLaunchOrder::for_launch(causal, 16, 512, 132);
        let ascending = Some(DqOrder::Ascending);
        assert_eq!(order(false).launched_blocks(false, None, 132), 132);
        assert_eq!(order(false).launched_blocks(false, ascending, 132), 16 * 512);
        assert_eq!(order(true).launched_blocks(true, None, 132), 16 * 512);
        assert_eq!(order(true).launched_blocks(true, Some(DqOrder::Staggered), 132), 16 * 512);
        assert_eq!(BwdLaunchOrder::for_launch(false, 8, 4, 132).launched_blocks(false, None, 132), 32);
        assert_eq!(order(false).launched_blocks(false, None, 0), 1);
    }

    /// The staggered deterministic order's persistent launches: whole groups per round, every block's walks the
    /// same key block of successive groups, never more blocks than are resident, and one block per walk where
    /// whole groups would take more rounds than the walks spread over every block.
    #[test]
    fn staggered_full_attention_launches_whole_groups() {
        let staggered = Some(DqOrder::Staggered);
        let launched = |key_blocks, groups, resident| {
            BwdLaunchOrder::for_launch(false, key_blocks, groups, resident).launched_blocks(false, staggered, resident)
        };
        // Issue 26's head-dim-128 rows on 132 SMs: 16, 8, 4, 2, 1 groups a round, 32 rounds as with one block a walk.
        for (key_blocks, groups) in [(8, 512), (16, 256), (32, 128), (64, 64), (128, 32)] {
            assert_eq!(launched(key_blocks, groups, 132), 128, "{key_blocks} × {groups}");
        }
        assert_eq!(launched(64, 3, 132), 128);
        assert_eq!(launched(5, 2, 132), 10);
        // 100 key blocks: one group a round (100 blocks) takes 10 rounds for 10 groups, against 8 spread over 132.
        assert_eq!(launched(100, 10, 132), 1000);
        assert_eq!(launched(200, 2, 132), 400);
        for (key_blocks, groups, resident) in [(8, 512, 132), (7, 100, 132), (33, 12, 114), (16, 9, 264), (3, 1, 2)] {
            let n = launched(key_blocks, groups, resident);
            let walks = key_blocks * groups;
            assert!(
                n <= walks && (n == walks || n <= resident && n.is_multiple_of(key_blocks)),
                "{key_blocks} × {groups}: {n}"
            );
            // Every round (the walks `r · n ..`) holds whole groups, each on blocks `b` with `b mod key_blocks` its
            // key block.
            if n < walks {
                for walk in 0..walks {
                    assert_eq!(walk % n % key_blocks, walk % key_blocks);
                    assert_eq!((walk / n) * n / key_blocks, (walk - walk % n) / key_blocks);
                }
            }
        }
    }

    /// The rule: a GPU's worth of tail groups for causal launches that fit 32 bits, the grid's order otherwise.
    #[test]
    fn the_rule_takes_a_gpus_worth_of_tail_groups() {
        assert_eq!(BwdLaunchOrder::for_launch(true, 32, 128, 132).tail_groups, 5);
        assert_eq!(BwdLaunchOrder::for_launch(true, 8, 512, 132).tail_groups, 17);
        assert_eq!(BwdLaunchOrder::for_launch(true, 64, 2, 132).tail_groups, 2);
        assert!(BwdLaunchOrder::for_launch(true, 1, 128, 132).is_grid_order());
        assert!(BwdLaunchOrder::for_launch(false, 32, 128, 132).is_grid_order());
        assert!(BwdLaunchOrder::for_launch(true, 1 << 17, 1 << 16, 132).is_grid_order());
    }

    /// Any `resident` blocks dispatched one after another (those that can run side by side) span at most twice as
    /// many groups as in the grid's order (the most is where the tail begins: the last groups before it finish
    /// their short walks beside the tail's long ones).
    #[test]
    fn blocks_side_by_side_span_as_few_groups_as_the_grid_order() {
        let resident = 132;
        for (key_blocks, groups) in [(8, 512), (16, 256), (32, 128), (64, 8), (24, 48), (4, 128), (128, 3)] {
            let order = BwdLaunchOrder::for_launch(true, key_blocks, groups, resident);
            let blocks: Vec<u32> = (0..key_blocks * groups).map(|l| order.block(l).1).collect();
            let grid_span = resident.div_ceil(key_blocks) + 1;
            for window in blocks.windows((resident as usize).min(blocks.len())) {
                let mut span: Vec<u32> = window.to_vec();
                span.sort_unstable();
                span.dedup();
                assert!(span.len() as u32 <= 2 * grid_span, "{order:?}: {} groups side by side", span.len());
            }
        }
    }

    /// The time the last block ends when blocks of these lengths are dispatched in this order onto `slots`
    /// slots as they free up.
    fn makespan(lengths: impl Iterator<Item = u64>, slots: usize) -> u64 {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut free: BinaryHeap<Reverse<u64>> = (0..slots).map(|_| Reverse(0)).collect();
        let mut end = 0;
        for length in lengths {
            let Reverse(start) = free.pop().unwrap();
            end = end.max(start + length);
            free.push(Reverse(start + length));
        }
        end
    }

    /// Causal walks on 132 slots (an H100's or H200's SMs, one block each), a block's length its query tiles plus
    /// two tiles of prologue and epilogue: the rule's order ends within 1.5% of the bound (the work over the slots,
    /// or the longest block) on the issue's shapes, where the grid's order is 1.4–3.5% over it, and never later
    /// than the grid's order; at shapes with few groups, where the grid's order is 12–27% over, within 11%.
    #[test]
    fn causal_launches_end_near_the_bound_with_the_tail_longest_first() {
        // (seq, tile_q, tile_kv, groups): the issue tables' 32k tokens at head dims 128 and 64, then fewer groups.
        let shapes = [
            (1024, 64, 128, 512),
            (2048, 64, 128, 256),
            (4096, 64, 128, 128),
            (8192, 64, 128, 64),
            (16384, 64, 128, 32),
            (1024, 128, 128, 1024),
            (4096, 128, 128, 256),
            (8192, 64, 128, 8),
            (3000, 64, 128, 48),
            (5000, 128, 128, 12),
            (2048, 64, 128, 40),
            (512, 64, 128, 128),
        ];
        for (seq, tile_q, tile_kv, groups) in shapes {
            let (key_blocks, q_tiles) = (u32::div_ceil(seq, tile_kv), u32::div_ceil(seq, tile_q));
            let length = |x: u32| (q_tiles - x * tile_kv / tile_q) as u64 + 2;
            let work: u64 = (0..key_blocks).map(length).sum::<u64>() * groups as u64;
            let bound = (work as f64 / 132.0).max(length(0) as f64);
            let run = |order: BwdLaunchOrder| {
                let blocks: Vec<u32> = (0..key_blocks * groups).map(|l| order.block(l).0).collect();
                makespan(blocks.into_iter().map(length), 132) as f64 / bound
            };
            let rule = run(BwdLaunchOrder::for_launch(true, key_blocks, groups, 132));
            let grid = run(BwdLaunchOrder { key_blocks, groups, tail_groups: 0 });
            std::println!("{seq} keys, {tile_q}×{tile_kv}, {groups} groups: grid order ×{grid:.3}, tail ×{rule:.3}");
            let issue_table = seq * groups / (if tile_q == 64 { 16 } else { 32 }) == 32768;
            assert!(rule <= if issue_table { 1.015 } else { 1.11 }, "{seq}, {groups} groups: ×{rule:.3}");
            assert!(rule <= grid + 0.001, "{seq}, {groups} groups: ×{rule:.3} against ×{grid:.3}");
        }
    }

    /// Every query tile of every walk in exactly one whole walk or piece, no empty piece, at most one piece a
    /// block and never more pieces than blocks.
    #[test]
    fn split_walks_are_covered_once() {
        for (walks, q_tiles, group, resident) in [
            (4096, 16, 1, 132),
            (4096, 256, 1, 132),
            (8192, 8, 1, 264),
            (64, 16, 1, 132),
            (133, 16, 1, 132),
            (7, 3, 1, 132),
            (1, 40, 1, 132),
            (300, 50, 2, 132),
            (133, 4, 2, 264),
            (160, 16, 2, 132),
        ] {
            let split = WalkSplit::for_launch(walks, q_tiles, group, resident, true);
            assert!(split.split_walks * split.pieces <= split.launched && split.launched <= resident.max(walks));
            let whole = split.whole_walks();
            assert!(split.split_walks == 0 || whole.is_multiple_of(split.launched), "{split:?}");
            let mut seen = std::vec![0u32; (walks * q_tiles) as usize];
            // The kernel's walk sequence: block `b` takes `b, b + launched, …` below the whole walks and the pieces,
            // a piece where the index is past the whole walks, its slot the block index.
            let end = whole + split.split_walks * split.pieces;
            for block in 0..split.launched {
                for linear in (block..end).step_by(split.launched as usize) {
                    if linear < whole {
                        for tile in 0..q_tiles {
                            seen[(linear * q_tiles + tile) as usize] += 1;
                        }
                        continue;
                    }
                    let slot = linear - whole;
                    assert_eq!(split.slot(block), Some(slot), "{split:?}: block {block}");
                    let (first, tiles) = split.tiles(slot);
                    assert!(tiles > 0 && first + tiles <= q_tiles, "{split:?}");
                    let walk = whole + slot / split.pieces;
                    for tile in first..first + tiles {
                        seen[(walk * q_tiles + tile) as usize] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{split:?}: a query tile not seen exactly once");
        }
    }

    /// The rule: the last round split where it is short (4096 walks on 132 blocks: 4 walks left over, cut in
    /// about √(2 · items) pieces), whole where it is more than half full or the walks are short or the kernel
    /// cannot split; small problems (fewer walks than blocks) spread over the blocks.
    #[test]
    fn the_rule_splits_short_last_rounds() {
        let rule = |walks, q_tiles| WalkSplit::for_launch(walks, q_tiles, 1, 132, true);
        assert_eq!(rule(4096, 16), WalkSplit { walks: 4096, launched: 132, q_tiles: 16, split_walks: 4, pieces: 5 });
        assert_eq!(rule(4096, 256).pieces, 22);
        assert_eq!(rule(64, 16), WalkSplit { walks: 64, launched: 132, q_tiles: 16, split_walks: 64, pieces: 2 });
        assert_eq!(WalkSplit::for_launch(4096, 4, 4, 132, true).pieces, 4);
        assert_eq!(rule(130 * 132 + 70, 16).split_walks, 0);
        assert_eq!(rule(4096, 3).split_walks, 0);
        assert_eq!(rule(4096, 3).launched, 132);
        assert_eq!(rule(128, 16).launched, 128);
        assert_eq!(rule(132 * 8, 16).split_walks, 0);
        let whole = WalkSplit { walks: 4096, launched: 132, q_tiles: 16, split_walks: 0, pieces: 1 };
        assert_eq!(WalkSplit::for_launch(4096, 16, 1, 132, false), whole);
    }
}
