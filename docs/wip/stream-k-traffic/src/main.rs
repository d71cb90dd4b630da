//! The operand traffic of a GEMM schedule (docs/perf-notes.md, "Session 61"; how to run: Cargo.toml beside this).
//!
//! Every block walks its units (oxtile_abi's `StreamK::units`, tiles in `TileScheduler`'s order) one k-tile per step,
//! all blocks in step; a k-tile of B (column tile n, k) or of A (row tile m, k) comes from DRAM unless the same k-tile
//! was read within the last `window` steps: an L2 keeping half of its 50 MB of what the grid loaded last. The time is
//! the larger of the DRAM bytes at 3.0 TB/s and the busiest block's k-tiles at 0.78 µs per 128×256×64 (scaled by tile
//! area), plus stream-K's fixup as `Variant::wide` counts it (16 such k-tiles). Not modelled: padding's cost beyond
//! its k-tiles, the pipeline's fill, L2 set conflicts, launch latency.

use oxtile_abi::raster::TileScheduler;
use oxtile_abi::stream_k::StreamK;
use std::collections::HashMap;

/// B's and A's DRAM reads over their sizes, and the busiest block's k-tiles, for M×N×K on `tm`×`tn` tiles and `grid`
/// blocks, data-parallel or with the tail stream-K as `StreamK::split` cuts it.
fn sim(m: u32, n: u32, k: u32, tm: u32, tn: u32, grid: u32, stream_k: bool) -> (f64, f64, u32) {
    let order = TileScheduler::new(m, n, tm, tn);
    let tiles = order.tiles();
    let k_tiles = k.div_ceil(64);
    let s = if stream_k { StreamK::split(tiles, k_tiles, grid) } else { StreamK::new(tiles, k_tiles, grid, 0) };
    sim_schedule(m, n, k, tm, tn, &order, &s)
}

fn sim_schedule(m: u32, n: u32, k: u32, tm: u32, tn: u32, order: &TileScheduler, s: &StreamK) -> (f64, f64, u32) {
    let k_tiles = k.div_ceil(64);
    let grid = s.grid();
    // bytes per step: grid blocks × (tm + tn) × 64 × 2; L2 50 MB, half of it for operands.
    let window = ((25u64 << 20) / (grid as u64 * (tm + tn) as u64 * 128)).max(1) as i64;
    let seqs: Vec<Vec<(u32, u32, u32)>> = (0..grid)
        .map(|b| {
            let mut v = Vec::new();
            for u in s.units(b) {
                let t = order.tile(u.tile);
                for kk in u.k_begin..u.k_end {
                    v.push((t.m, t.n, kk));
                }
            }
            v
        })
        .collect();
    let steps = seqs.iter().map(Vec::len).max().unwrap_or(0);
    let (mut last_a, mut last_b): (HashMap<(u32, u32), i64>, HashMap<(u32, u32), i64>) = Default::default();
    let (mut miss_a, mut miss_b) = (0u64, 0u64);
    for t in 0..steps {
        for seq in &seqs {
            if let Some(&(tmi, tni, kk)) = seq.get(t) {
                let t = t as i64;
                if last_b.get(&(tni, kk)).is_none_or(|&l| t - l > window) {
                    miss_b += 1;
                }
                last_b.insert((tni, kk), t);
                if last_a.get(&(tmi, kk)).is_none_or(|&l| t - l > window) {
                    miss_a += 1;
                }
                last_a.insert((tmi, kk), t);
            }
        }
    }
    let b_tiles = (n.div_ceil(tn) * k_tiles) as f64;
    let a_tiles = (m.div_ceil(tm) * k_tiles) as f64;
    (miss_b as f64 / b_tiles, miss_a as f64 / a_tiles, steps as u32)
}

/// The host's `stream_k_schedule` (host/src/ops/gemm.rs) for single blocks sharing split-K tiles (pieces of at least
/// `MIN_SPLIT_K_PIECE_K_TILES` = 14 k-tiles).
fn host_schedule(tiles: u32, k_tiles: u32, resident: u32, shares: bool) -> StreamK {
    let pieces = (resident / tiles.max(1)).min(k_tiles / 14);
    if shares && pieces >= 3 {
        return StreamK::split_k(tiles, k_tiles, pieces);
    }
    let grid = if 2 * tiles <= resident {
        tiles * (resident / tiles).min(k_tiles).min(8)
    } else {
        (tiles * k_tiles).clamp(1, resident)
    };
    StreamK::split(tiles, k_tiles, grid)
}

/// `sim` on the host's schedules: data-parallel over min(tiles, grid) blocks, stream-K as the host cuts it.
fn sim_host(m: u32, n: u32, k: u32, tm: u32, tn: u32, grid: u32, stream_k: bool) -> (f64, f64, u32) {
    let order = TileScheduler::new(m, n, tm, tn);
    let tiles = order.tiles();
    let k_tiles = k.div_ceil(64);
    let s = if stream_k {
        host_schedule(tiles, k_tiles, grid, true)
    } else {
        StreamK::new(tiles, k_tiles, grid.min(tiles), 0)
    };
    sim_schedule(m, n, k, tm, tn, &order, &s)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--variants") {
        // One line per shape and variant: shape variant b_reads a_reads busiest_k_tiles.
        let variants = [
            ("oxtile-wide", 128, 256, 1, false),
            ("oxtile-streamk", 128, 256, 1, true),
            ("oxtile-wide-c2", 256, 256, 2, false),
            ("oxtile-streamk-c2", 256, 256, 2, true),
            ("oxtile-wide-192", 128, 192, 1, false),
            ("oxtile-wide-192-sk", 128, 192, 1, true),
            ("oxtile-square", 128, 128, 1, false),
            ("oxtile-square-sk", 128, 128, 1, true),
            ("oxtile-pingpong", 128, 128, 1, false),
            ("oxtile-square-c2", 256, 128, 2, false),
            ("oxtile-pingpong-c2", 256, 128, 2, false),
            ("oxtile-flat", 64, 128, 1, false),
            ("oxtile-flat-sk", 64, 128, 1, true),
            ("oxtile-narrow", 128, 64, 1, false),
        ];
        for line in std::io::stdin().lines() {
            let line = line.unwrap();
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let shape = line.split_whitespace().last().unwrap();
            let v: Vec<u32> = shape.split('x').map(|x| x.parse().unwrap()).collect();
            for (name, tm, tn, cluster, sk) in variants {
                let (b, a, steps) = sim_host(v[0], v[1], v[2], tm, tn, 132 / cluster, sk);
                println!("{shape} {name} {b:.3} {a:.3} {steps}");
            }
        }
        return;
    }
    for spec in &args[1..] {
        let v: Vec<u32> = spec.split(['x', ',']).map(|x| x.parse().unwrap()).collect();
        let (m, n, k, tm, tn) = (v[0], v[1], v[2], v[3], v[4]);
        for sk in [false, true] {
            let (b, a, steps) = sim(m, n, k, tm, tn, 132, sk);
            // DRAM: the operands as read, D once, at 3.0 TB/s; compute: the busiest block's k-tiles at 0.78 µs per
            // 128×256×64 (1024×7168×18432's stream-K), scaled by the tile's area.
            let bytes = 2.0 * (b * (n as f64) * (k as f64) + a * (m as f64) * (k as f64) + (m as f64) * (n as f64));
            let dram = bytes / 3.0e12 * 1e6;
            // Stream-K's fixup: the 16 wide k-tiles of `STREAM_K_MIN_IDLE_K_TILES` (host/src/ops/gemm.rs).
            let fixup = if sk { 16.0 * 0.78 } else { 0.0 };
            let compute = steps as f64 * 0.78 * (tm * tn) as f64 / (128.0 * 256.0) + fixup;
            println!(
                "{m}x{n}x{k} tile {tm}x{tn} {}: B read {b:.2}x, A read {a:.2}x, {steps} k-tiles on the busiest block; DRAM {dram:.0} µs, compute {compute:.0} µs",
                if sk { "stream-K" } else { "data-par" }
            );
        }
    }
}
