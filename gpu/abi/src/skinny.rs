//! The skinny GEMM (few rows of A: decode-sized M), shared by the kernel (gpu/kernels/gemm/src/skinny.rs), which walks
//! this split of the work, and the host, which sizes the grid and the workspace from it.
//!
//! With M ≤ [`MAX_M`] the GEMM is a stream of B past a few rows of A: 2·M FLOPs per element of B, so the time is B's
//! bytes over the DRAM bandwidth plus what it costs to get every SM streaming. The wgmma kernels' 64×128 tiles give
//! one block per 128 columns, which leaves most SMs idle below N ≈ 17k, and their stream-K and split-K fixups cost
//! microseconds that a 10 µs problem does not have. This kernel instead gives each block [`COLUMNS`] columns and a
//! contiguous range of K, no shared-memory ring and no warp specialization: each warp keeps its loads of B in
//! registers and multiplies them by warp-level `mma.sync` (A padded to 16 rows), then the block's warps and the
//! blocks of one column group (the *splits*) add up their sums.
//!
//! The split: the `chunks` = ⌈K / [`CHUNK_K`]⌉ k-chunks of a column group are cut into `splits` contiguous ranges of
//! `chunks_per_split` (the last may be shorter), one per block; block `b` computes column group `b / splits`, range
//! `b % splits`. Warp `w` of a block takes the range's chunk pairs `2w, 2w + 1`, then `2w + 2·WARPS, …`: two adjacent
//! chunks in flight, so a column of a column-major B is read 128 bytes at a time. Where `splits > 1`, every block stores
//! its sum (f32) to its own slot of the workspace and counts itself in its column group's counter; the block that
//! counts last adds up the slots in range order (so the result does not depend on which block came last) and writes D,
//! then sets the counter back to 0. No block waits for another, so the grid needs no co-residency.

/// Rows of A the kernel takes: one `mma.sync` m16n8k16 row block.
pub const MAX_M: u32 = 16;
/// Warps per block.
pub const WARPS: u32 = 8;
/// Threads per block.
pub const THREADS: u32 = WARPS * 32;
/// Columns of D per block (and per warp: the warps of a block split K): eight m16n8 fragments.
pub const COLUMNS: u32 = 64;
/// Depth of a k-chunk: each lane loads 16 bytes (8 elements of K) of each of its columns or rows of B per chunk.
pub const CHUNK_K: u32 = 32;
/// f32 elements of one block's sum (the workspace slot): [`MAX_M`] × [`COLUMNS`], in the order of the warp's
/// accumulator fragments (lane-major within each of the 32 accumulator registers).
pub const SLOT_FLOATS: u32 = MAX_M * COLUMNS;
/// Bytes of shared memory: each warp's accumulators, for the block's sum over its warps.
pub const SMEM_BYTES: u32 = WARPS * SLOT_FLOATS * 4;
/// Blocks per SM the split aims for: two blocks of 256 threads keep ~128 KiB of loads in flight per SM.
pub const BLOCKS_PER_SM: u32 = 2;
/// Most blocks per column group: the last block reads every slot of its group, 16 loads in flight per thread.
pub const MAX_SPLITS: u32 = 16;

/// How the work of an M×N×K skinny GEMM is split between blocks (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkinnySplit {
    /// Column groups of [`COLUMNS`].
    pub groups: u32,
    /// Blocks per column group.
    pub splits: u32,
    /// K-chunks per block (the last block of a group may have fewer, never none).
    pub chunks_per_split: u32,
}

impl SkinnySplit {
    /// The split for N×K on `sms` SMs: as many blocks per column group as fit in one wave of [`BLOCKS_PER_SM`] blocks
    /// per SM (rounded down: a second, small wave would cost a whole block's time for a few blocks' work), at most
    /// [`MAX_SPLITS`], and no more than leave each block [`WARPS`] chunks. Warps take chunks in pairs, so a block with
    /// fewer than 2·[`WARPS`] chunks leaves some warps idle (576×7168: 14 chunks a block, warp 7 idle); whether
    /// fewer, fuller blocks are faster there has not been measured.
    pub const fn new(n: u32, k: u32, sms: u32) -> SkinnySplit {
        let groups = n.div_ceil(COLUMNS);
        let chunks = k.div_ceil(CHUNK_K);
        let mut splits = (BLOCKS_PER_SM * sms) / groups;
        if chunks / WARPS < splits {
            splits = chunks / WARPS;
        }
        if splits > MAX_SPLITS {
            splits = MAX_SPLITS;
        }
        if splits == 0 {
            splits = 1;
        }
        SkinnySplit::with_splits(groups, chunks, splits)
    }

    /// `splits` (≥ 1) blocks per group over `chunks` k-chunks, fewer where ranges of ⌈chunks / splits⌉ leave some
    /// empty.
    pub const fn with_splits(groups: u32, chunks: u32, splits: u32) -> SkinnySplit {
        let chunks_per_split = chunks.div_ceil(splits);
        SkinnySplit { groups, splits: chunks.div_ceil(chunks_per_split), chunks_per_split }
    }

    /// Blocks in the grid.
    pub const fn grid(&self) -> u32 {
        self.groups * self.splits
    }

    /// Workspace slots ([`SLOT_FLOATS`] f32 each): one per block where groups are split, else none.
    pub const fn slots(&self) -> u32 {
        if self.splits > 1 { self.grid() } else { 0 }
    }

    /// Block `block`'s column group and its range of k-chunks, `first .. end`, of `chunks` in all.
    pub const fn block(&self, block: u32, chunks: u32) -> (u32, u32, u32) {
        let (group, split) = (block / self.splits, block % self.splits);
        let first = split * self.chunks_per_split;
        let end = if first + self.chunks_per_split < chunks { first + self.chunks_per_split } else { chunks };
        (group, first, end)
    }
}

/// Calls `$callback! { kernels }` with every skinny GEMM kernel, `input -> output, layout;` each (BLAS letters: A
/// row-major, B column-major (tn) or row-major (tt)); its name is
/// `oxtile_abi::gemm_sm90_kernel_name!(input -> output, layout, "skinny")`.
#[macro_export]
macro_rules! for_each_gemm_skinny_kernel {
    ($callback:path $(, $arg:tt)*) => {
        $callback! {
            $($arg)*
            bf16 -> bf16, tn; bf16 -> bf16, tt; bf16 -> f32, tn; bf16 -> f32, tt;
            f16 -> f16, tn; f16 -> f16, tt; f16 -> f32, tn; f16 -> f32, tt;
        }
    };
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// Every k-chunk of every column group is computed by exactly one block, and no block is empty.
    fn covers_every_chunk_once(n: u32, k: u32, sms: u32) {
        let split = SkinnySplit::new(n, k, sms);
        let chunks = k.div_ceil(CHUNK_K);
        let mut seen = std::vec![0u32; (split.groups * chunks) as usize];
        for block in 0..split.grid() {
            let (group, first, end) = split.block(block, chunks);
            assert!(group < split.groups && first < end && end <= chunks, "{n}×{k}: block {block} {first}..{end}");
            for chunk in first..end {
                seen[(group * chunks + chunk) as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&count| count == 1), "{n}×{k} on {sms} SMs: {split:?}");
        assert!(split.splits <= MAX_SPLITS);
    }

    #[test]
    fn blocks_cover_every_chunk_of_every_column_group_once() {
        for n in [1, 8, 63, 64, 65, 576, 1536, 4096, 57344] {
            for k in [8, 32, 40, 256, 4096, 7168, 14336] {
                for sms in [1, 132] {
                    covers_every_chunk_once(n, k, sms);
                }
            }
        }
    }

    #[test]
    fn narrow_deep_problems_split_k_and_wide_ones_do_not() {
        // 576 columns: 9 groups, split to fill two blocks per SM (capped).
        let narrow = SkinnySplit::new(576, 7168, 132);
        assert_eq!((narrow.groups, narrow.splits), (9, 16));
        assert_eq!(narrow.slots(), 144);
        // 4096 columns: 64 groups × 4 (one wave of 264 blocks; 5 would leave a second wave of 56).
        assert_eq!(SkinnySplit::new(4096, 4096, 132).splits, 4);
        // 6144 columns: 96 groups × 2, not × 3 (288 blocks: 1.09 waves).
        assert_eq!(SkinnySplit::new(6144, 4096, 132).grid(), 192);
        // Wide: as many groups as two blocks per SM, no split, no workspace.
        let wide = SkinnySplit::new(57344, 8192, 132);
        assert_eq!((wide.splits, wide.slots()), (1, 0));
        // Shallow K: a chunk per warp at least.
        assert_eq!(SkinnySplit::new(64, 64, 132).splits, 1);
    }
}
