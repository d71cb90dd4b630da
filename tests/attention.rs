//! Attention forward on the GPU: the Hopper kernel against the float64 CPU reference on small odd shapes and
//! against the plain GPU reference kernel on large ones; the GPU reference against float64; rescaling statistics;
//! argument checks (those that need no buffer run without a GPU).
//!
//! The error bounds are derived in `oxtile::verify::attention` (module documentation): per element of O,
//! (3u + 2·e_exp + 2ε + accumulation)·Σ_j p_j|v_jd|, u the 16-bit rounding (P is rounded to bf16/f16 before P·V,
//! and O once more on store: 2^-8 bf16, 2^-11 f16), e_exp the exponential's error, ε the f32 score error, plus the
//! f16 subnormal term; LSE within u + e_exp + ε and the log's rounding. Each check poisons O (and the padding
//! around it) and LSE first and fails on any element left unwritten or written outside O; rows that see no key
//! must be exactly O = 0 and LSE = −∞.

use half::{bf16, f16};
use oxtile::ops::attention::{
    self, AttnOptions, AttnPlan, AttnShape, AttnStrides, AttnVariant, CheckedProblem, RescaleStats, Strides,
};
use oxtile::reference::fresh_seed;
use oxtile::verify::attention::{
    Against, AttnCase, AttnCheck, AttnInputs, CaseLayout, check, check_gpu_reference, check_inputs,
};
use oxtile::verify::{CheckElement, CheckReport, CheckValue};
use oxtile::{Error, Gpu};

/// Set by scripts/gpu-run.sh --memcheck: kernels run tens of times slower under compute-sanitizer, so the large
/// problems shrink and speed is not asserted.
fn under_sanitizer() -> bool {
    std::env::var_os("OXTILE_UNDER_SANITIZER").is_some()
}

fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
}

fn case(batch: usize, seq_q: usize, seq_k: usize, heads_q: usize, heads_kv: usize, head_dim: usize) -> AttnCase {
    AttnCase::new(AttnShape::new(batch, seq_q, seq_k, heads_q, heads_kv, head_dim))
}

/// Prints every check as a table and fails, with the seed, if any did not pass.
fn assert_all_pass(seed: u64, checks: &[AttnCheck]) {
    let reports: Vec<CheckReport> = checks.iter().flat_map(AttnCheck::reports).collect();
    let table = CheckReport::table(&reports);
    println!("{table}");
    let failed: Vec<String> = checks.iter().filter(|c| !c.passed()).map(ToString::to_string).collect();
    assert!(failed.is_empty(), "seed {seed}\n{table}\n{}", failed.join("\n"));
}

/// Each case in full and causal form against float64.
fn full_and_causal<T: CheckElement + attention::AttnElement>(
    gpu: &Gpu,
    seed: u64,
    cases: &[AttnCase],
) -> Vec<AttnCheck> {
    let mut checks = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        for causal in [false, true] {
            let seed = seed + 2 * i as u64 + causal as u64;
            checks.push(check::<T>(gpu, &case.causal(causal), Against::Float64, seed).unwrap());
        }
    }
    checks
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sequence_lengths_off_the_tile_grid() {
    let gpu = gpu();
    let seed = fresh_seed();
    let cases: Vec<AttnCase> = [1, 77, 128, 129, 200, 383].iter().map(|&s| case(2, s, s, 4, 4, 128)).collect();
    assert_all_pass(seed, &full_and_causal::<bf16>(&gpu, seed, &cases));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn seq_q_and_seq_k_differ_both_ways() {
    // Causal with seq_q > seq_k leaves the first seq_q − seq_k rows without keys: O = 0, LSE = −∞.
    let gpu = gpu();
    let seed = fresh_seed();
    let pairs = [(77, 300), (300, 77), (1, 383), (383, 1), (128, 129), (129, 128), (200, 1000)];
    let cases: Vec<AttnCase> = pairs.iter().map(|&(sq, sk)| case(1, sq, sk, 2, 2, 128)).collect();
    assert_all_pass(seed, &full_and_causal::<bf16>(&gpu, seed, &cases));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn grouped_and_multi_query_heads() {
    let gpu = gpu();
    let seed = fresh_seed();
    let cases = [case(2, 200, 129, 8, 2, 128), case(1, 129, 300, 8, 1, 128), case(2, 77, 77, 6, 3, 64)];
    assert_all_pass(seed, &full_and_causal::<bf16>(&gpu, seed, &cases));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn head_dim_64() {
    let gpu = gpu();
    let seed = fresh_seed();
    let cases =
        [case(2, 1, 1, 2, 2, 64), case(1, 383, 383, 4, 2, 64), case(2, 129, 200, 4, 4, 64), case(1, 300, 77, 2, 1, 64)];
    assert_all_pass(seed, &full_and_causal::<bf16>(&gpu, seed, &cases));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn head_dim_256_on_lengths_off_the_80_key_tile_grid() {
    // Key tiles of 80 at head dim 256: 80 and 160 end on a tile, 77, 129, 200 and 383 end inside one (TMA zero-fills
    // the keys past seq_k, the mask hides them); 1 is a single key; 129 and 383 also end inside a 128-row query tile.
    let gpu = gpu();
    let seed = fresh_seed();
    let cases: Vec<AttnCase> = [1, 77, 80, 129, 160, 200, 383].iter().map(|&s| case(2, s, s, 4, 4, 256)).collect();
    assert_all_pass(seed, &full_and_causal::<bf16>(&gpu, seed, &cases));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn head_dim_256_with_seq_q_and_seq_k_apart_and_grouped_heads() {
    // Causal bottom-right with seq_q ≠ seq_k: the diagonal crosses 80-key tiles at offsets that are not multiples of
    // 80 (or of 128); with seq_q > seq_k whole query tiles see no key (O = 0, LSE = −∞). GQA and MQA.
    let gpu = gpu();
    let seed = fresh_seed();
    let cases = [
        case(1, 77, 300, 8, 2, 256),
        case(1, 300, 77, 4, 1, 256),
        case(2, 1, 383, 2, 2, 256),
        case(1, 383, 1, 2, 1, 256),
        case(1, 200, 81, 6, 3, 256),
        case(1, 129, 1000, 4, 2, 256),
    ];
    assert_all_pass(seed, &full_and_causal::<bf16>(&gpu, seed, &cases));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn head_dim_256_in_f16_with_scales_and_strided_layouts() {
    let gpu = gpu();
    let seed = fresh_seed();
    let mut checks = full_and_causal::<f16>(&gpu, seed, &[case(2, 77, 77, 4, 2, 256), case(1, 383, 129, 2, 2, 256)]);
    let scaled: Vec<AttnCase> = [0.01, 2.0].iter().map(|&s| case(1, 200, 129, 4, 2, 256).scale(s)).collect();
    checks.extend(full_and_causal::<bf16>(&gpu, seed + 10, &scaled));
    for (i, layout) in [CaseLayout::Qkv, CaseLayout::Padded].into_iter().enumerate() {
        let cases = [case(2, 200, 200, 4, 2, 256).layout(layout)];
        checks.extend(full_and_causal::<bf16>(&gpu, seed + 20 + 10 * i as u64, &cases));
        checks.extend(full_and_causal::<f16>(&gpu, seed + 25 + 10 * i as u64, &cases));
    }
    assert_all_pass(seed, &checks);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_matches_float64() {
    let gpu = gpu();
    let seed = fresh_seed();
    let cases = [
        case(2, 77, 77, 4, 2, 128),
        case(1, 383, 129, 2, 2, 128),
        case(2, 129, 300, 4, 1, 64),
        case(1, 1, 1, 1, 1, 64),
    ];
    assert_all_pass(seed, &full_and_causal::<f16>(&gpu, seed, &cases));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn strided_layouts_qkv_views_and_padding() {
    // q, k, v as views of one packed qkv tensor with O head-major (BHSD); and every tensor with padded rows, whose
    // gaps hold NaN in the inputs and must keep their poison in O.
    let gpu = gpu();
    let seed = fresh_seed();
    let mut checks = Vec::new();
    for (i, layout) in [CaseLayout::Qkv, CaseLayout::Padded].into_iter().enumerate() {
        let cases = [case(2, 200, 200, 8, 2, 128).layout(layout), case(1, 129, 129, 4, 1, 64).layout(layout)];
        checks.extend(full_and_causal::<bf16>(&gpu, seed + 10 * i as u64, &cases));
        checks.extend(full_and_causal::<f16>(&gpu, seed + 10 * i as u64 + 5, &cases[..1]));
    }
    let uneven = case(1, 383, 77, 4, 2, 128).layout(CaseLayout::Padded);
    checks.extend(full_and_causal::<bf16>(&gpu, seed + 30, &[uneven]));
    assert_all_pass(seed, &checks);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ablation_kernels_match_float64() {
    let gpu = gpu();
    let seed = fresh_seed();
    let mut checks = Vec::new();
    // Every variant at the head dim whose kernels have it (the ablations are bf16).
    for variant in AttnVariant::ALL {
        for d in [64, 128] {
            if attention::kernel_for::<bf16>(d, variant).is_err() {
                continue;
            }
            let cases = [case(1, 383, 383, 2, 2, d).variant(variant), case(2, 77, 300, 4, 2, d).variant(variant)];
            checks.extend(full_and_causal::<bf16>(&gpu, seed + variant as u64 * 10 + d as u64, &cases));
        }
    }
    assert!(checks.len() >= 2 * 2 * AttnVariant::ALL.len(), "every variant ran somewhere");
    assert_all_pass(seed, &checks);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn explicit_softmax_scales() {
    // Small: nearly uniform weights over the visible keys; large: nearly one-hot rows.
    let gpu = gpu();
    let seed = fresh_seed();
    let cases: Vec<AttnCase> = [0.01, 0.5, 2.0].iter().map(|&s| case(1, 200, 129, 4, 2, 128).scale(s)).collect();
    assert_all_pass(seed, &full_and_causal::<bf16>(&gpu, seed, &cases));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_shapes_match_the_gpu_reference() {
    let gpu = gpu();
    let seed = fresh_seed();
    // (batch, seq, heads) per case; a sixteenth of the work under the sanitizer.
    let (long, longer, qkv_seq) = if under_sanitizer() { (1024, 2048, 512) } else { (4096, 8192, 2048) };
    let mut checks = Vec::new();
    for causal in [false, true] {
        let d128 = case(2, long, long, 4, 4, 128).causal(causal);
        checks.push(check::<bf16>(&gpu, &d128, Against::GpuReference, seed).unwrap());
        let d64 = case(1, longer, longer, 2, 2, 64).causal(causal);
        checks.push(check::<bf16>(&gpu, &d64, Against::GpuReference, seed + 1).unwrap());
    }
    let gqa = case(1, long, long, 8, 2, 128).causal(true);
    checks.push(check::<f16>(&gpu, &gqa, Against::GpuReference, seed + 2).unwrap());
    let qkv = case(2, qkv_seq, qkv_seq, 8, 2, 128).causal(true).layout(CaseLayout::Qkv);
    checks.push(check::<bf16>(&gpu, &qkv, Against::GpuReference, seed + 3).unwrap());
    // Head dim 256 with several work items per block (512 and 256 of them over at most 132 blocks): each item's O is
    // staged in its Q buffer, which goes back to the producer only after the store. In the causal case with
    // seq_q > seq_k, the first six query tiles of every head see no key: items without keys between items with.
    for causal in [false, true] {
        let d256 = case(2, long / 2, long / 2, 8, 2, 256).causal(causal);
        checks.push(check::<bf16>(&gpu, &d256, Against::GpuReference, seed + 4).unwrap());
    }
    let ragged = case(2, 1000, 200, 32, 8, 256).causal(true);
    checks.push(check::<f16>(&gpu, &ragged, Against::GpuReference, seed + 5).unwrap());
    assert_all_pass(seed, &checks);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_reference_matches_float64() {
    let gpu = gpu();
    let seed = fresh_seed();
    let mut checks = Vec::new();
    let cases = [
        case(2, 77, 300, 8, 2, 128),
        case(1, 300, 77, 4, 1, 64),
        case(1, 1, 1, 1, 1, 128),
        case(1, 129, 200, 4, 2, 256),
    ];
    for (i, c) in cases.iter().enumerate() {
        for causal in [false, true] {
            checks.push(check_gpu_reference::<bf16>(&gpu, &c.causal(causal), None, seed + i as u64).unwrap());
            checks.push(check_gpu_reference::<f16>(&gpu, &c.causal(causal), None, seed + 10 + i as u64).unwrap());
        }
    }
    for layout in [CaseLayout::Qkv, CaseLayout::Padded] {
        checks.push(
            check_gpu_reference::<bf16>(&gpu, &case(2, 129, 129, 4, 2, 128).causal(true).layout(layout), None, seed)
                .unwrap(),
        );
    }
    // Large: sampled rows (each costs seq_k · head_dim in float64), the first and last included.
    checks.push(
        check_gpu_reference::<bf16>(&gpu, &case(2, 4096, 4096, 4, 4, 128).causal(true), Some(200), seed).unwrap(),
    );
    checks.push(check_gpu_reference::<bf16>(&gpu, &case(1, 8192, 8192, 2, 2, 64), Some(100), seed).unwrap());
    assert_all_pass(seed, &checks);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_reference_handles_long_sequences_quickly() {
    // B·H·S = 16·8192 query rows of 8192 keys, D = 128: what the large-shape tests lean on.
    let gpu = gpu();
    let shape = if under_sanitizer() {
        AttnShape::new(1, 1024, 1024, 2, 2, 128)
    } else {
        AttnShape::new(2, 8192, 8192, 8, 8, 128)
    };
    let stream = gpu.stream();
    let len = shape.batch * shape.seq_q * shape.heads_q * shape.head_dim;
    let inputs = oxtile::bench::inputs::InputPool::with_len(1 << 20, fresh_seed());
    let q = stream.clone_htod(&inputs.fill::<bf16>(len, 0)).unwrap();
    let k = stream.clone_htod(&inputs.fill::<bf16>(len, 1_000_003)).unwrap();
    let v = stream.clone_htod(&inputs.fill::<bf16>(len, 2_000_003)).unwrap();
    let mut o = stream.alloc_zeros::<f32>(len).unwrap();
    let mut lse = stream.alloc_zeros::<f32>(shape.rows()).unwrap();
    let clock = oxtile::bench::timing::GpuClock::new(&gpu);
    let options = AttnOptions::default();
    attention::attention_reference(&gpu, shape, &q, &k, &v, &mut o, None, &mut lse, options).unwrap();
    let start = clock.start().unwrap();
    attention::attention_reference(&gpu, shape, &q, &k, &v, &mut o, None, &mut lse, options).unwrap();
    let ms = clock.stop_ms(&start).unwrap();
    println!("GPU reference, {shape}, full: {ms:.1} ms");
    assert!(ms < 3000.0 || under_sanitizer(), "the GPU reference took {ms:.1} ms");
    let lse = stream.clone_dtoh(&lse).unwrap();
    assert!(lse.iter().all(|x| x.is_finite()));
}

/// Inputs whose every key tile's scores exceed the previous tile's by `step` in log2 units (scale = ln 2 makes
/// scale·log2 e = 1, so a score in log2 units is q·k): q = e_0, key j = step·⌊j / 128⌋ in component 0, random
/// elsewhere (q does not see it). With step 16, every row's maximum grows past the lazy threshold (8) on every
/// tile; with step 200, also past the kernels' speculation limit (120), so every thread recomputes its scores.
fn peaked_inputs(shape: AttnShape, seed: u64, step: f32) -> AttnInputs {
    let mut inputs = AttnInputs::random(shape, seed);
    let d = shape.head_dim;
    for q in inputs.q.chunks_mut(d) {
        q.fill(0.0);
        q[0] = 1.0;
    }
    let kv_heads = shape.heads_kv;
    for (row, k) in inputs.k.chunks_mut(d).enumerate() {
        let key = (row / kv_heads) % shape.seq_k;
        k[0] = step * (key / 128) as f32;
    }
    inputs
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rescale_statistics_lazy_and_eager() {
    let gpu = gpu();
    let seed = fresh_seed();
    // One 128-row query tile per (batch, head), 8 key tiles: 7 warp-tiles after the first per warp.
    let shape = AttnShape::new(2, 256, 1024, 2, 2, 128);
    let blocks = shape.batch * shape.heads_q * shape.seq_q.div_ceil(128);
    let warps_per_block = 8; // two consumer warpgroups of four warps
    let expected_warp_tiles = (blocks * warps_per_block * (shape.seq_k.div_ceil(128) - 1)) as u64;
    let base = AttnCase::new(shape);
    let mut checks = Vec::new();
    let mut stats = |variant: AttnVariant, inputs: &AttnInputs, scale: Option<f32>| -> RescaleStats {
        let mut case = base.variant(variant);
        case.scale = scale;
        let result = check_inputs::<bf16>(&gpu, &case, inputs, Against::Float64, true).unwrap();
        let stats = result.stats.unwrap();
        checks.push(result);
        stats
    };
    let random = AttnInputs::random(shape, seed);
    let peaked = peaked_inputs(shape, seed + 1, 16.0);
    let steep = peaked_inputs(shape, seed + 2, 200.0);
    let ln2 = Some(std::f32::consts::LN_2);
    let mut table = String::new();
    let mut row = |name: &str, variant: AttnVariant, s: RescaleStats| {
        table += &format!(
            "{name:<8} {:<7} {:>8}/{:<8} = {:.4}, recomputed {}\n",
            variant.name(),
            s.rescaled,
            s.warp_tiles,
            s.fraction(),
            s.recomputed
        );
    };
    let random_lazy = stats(AttnVariant::Auto, &random, None);
    let random_poly = stats(AttnVariant::Poly, &random, None);
    let random_eager = stats(AttnVariant::Eager, &random, None);
    let peaked_lazy = stats(AttnVariant::Auto, &peaked, ln2);
    let peaked_poly = stats(AttnVariant::Poly, &peaked, ln2);
    let peaked_eager = stats(AttnVariant::Eager, &peaked, ln2);
    let steep_lazy = stats(AttnVariant::Auto, &steep, ln2);
    let steep_spec = stats(AttnVariant::Speculate, &steep, ln2);
    let peaked_spec = stats(AttnVariant::Speculate, &peaked, ln2);
    for (name, variant, s) in [
        ("random", AttnVariant::Auto, random_lazy),
        ("random", AttnVariant::Poly, random_poly),
        ("random", AttnVariant::Eager, random_eager),
        ("peaked", AttnVariant::Auto, peaked_lazy),
        ("peaked", AttnVariant::Poly, peaked_poly),
        ("peaked", AttnVariant::Eager, peaked_eager),
        ("peaked", AttnVariant::Speculate, peaked_spec),
        ("steep", AttnVariant::Auto, steep_lazy),
        ("steep", AttnVariant::Speculate, steep_spec),
    ] {
        row(name, variant, s);
    }
    println!("rescaled warp-tiles (seed {seed}):\n{table}");
    // The launch without counters on the input that rescales every tile.
    let mut plain = base;
    plain.scale = ln2;
    checks.push(check_inputs::<bf16>(&gpu, &plain, &peaked, Against::Float64, false).unwrap());
    assert_all_pass(seed, &checks);

    let all = [
        random_lazy,
        random_poly,
        random_eager,
        peaked_lazy,
        peaked_poly,
        peaked_eager,
        peaked_spec,
        steep_lazy,
        steep_spec,
    ];
    for s in all {
        assert_eq!(s.warp_tiles, expected_warp_tiles, "one count per warp and key tile after the first\n{table}");
    }
    // Speculation: growth up to its limit is absorbed by the exponentials taken against the old maximum; past it
    // (steep: 200 per tile), every thread recomputes every tile after the first, and the result still checks.
    // The other kernels never recompute.
    for s in all.into_iter().filter(|s| *s != steep_spec) {
        assert_eq!(s.recomputed, 0, "{table}");
    }
    assert_eq!(steep_spec.recomputed, 32 * expected_warp_tiles, "one per thread and key tile after the first\n{table}");
    for s in [peaked_spec, steep_spec, steep_lazy] {
        assert_eq!(s.rescaled, s.warp_tiles, "{table}");
    }
    // The peaked maximum grows by 16 > 8 on every tile: lazy rescaling must rescale every time, as eager does.
    assert_eq!(peaked_lazy.rescaled, peaked_lazy.warp_tiles, "{table}");
    assert_eq!(peaked_eager.rescaled, peaked_eager.warp_tiles, "{table}");
    // Random scores are N(0, 1): a maximum growing by 8 log2 units (5.5 standard deviations) past the first tile's
    // is all but impossible, while some row of every warp sets a new (small) maximum on most tiles.
    assert!(random_lazy.fraction() <= 0.01, "{table}");
    assert!(random_eager.rescaled >= random_lazy.rescaled && random_eager.rescaled > 0, "{table}");
    // The exponential's unit does not change when the maximum grows.
    assert_eq!(random_poly, random_lazy, "{table}");
    assert_eq!(peaked_poly, peaked_lazy, "{table}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn scores_past_the_speculation_limit_are_recomputed_exactly() {
    let gpu = gpu();
    let seed = fresh_seed();
    let ln2 = Some(std::f32::consts::LN_2);
    let mut checks = Vec::new();
    let mut recomputed = Vec::new();
    // The speculative ablation: causal with sq ≠ sk (rows of one warp disagree on masked diagonal tiles: the
    // warp must still recompute together), GQA, ragged edges.
    let cases = [
        (AttnShape::new(1, 200, 700, 4, 2, 128), true),
        (AttnShape::new(2, 130, 515, 2, 2, 128), false),
        (AttnShape::new(1, 96, 389, 2, 1, 128), true),
    ];
    for (index, (shape, causal)) in cases.into_iter().enumerate() {
        let mut case = AttnCase::new(shape).causal(causal).variant(AttnVariant::Speculate);
        case.scale = ln2;
        let inputs = peaked_inputs(shape, seed + index as u64, 200.0);
        let check = check_inputs::<bf16>(&gpu, &case, &inputs, Against::Float64, true).unwrap();
        recomputed.push((shape, check.stats.unwrap().recomputed));
        checks.push(check);
    }
    assert_all_pass(seed, &checks);
    for (shape, count) in recomputed {
        assert!(count > 0, "{shape}: no thread took the recompute path");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bench_times_checks_and_counts_rescales() {
    use oxtile::bench::attention::{self as bench, AttnBenchConfig, AttnBenchProblem};
    use oxtile::bench::inputs::InputPool;
    use oxtile::bench::{DeviceInfo, TimingConfig, TimingMode};
    use oxtile::types::Dtype;
    let gpu = gpu();
    let info = DeviceInfo::query(&gpu).unwrap();
    let pool = InputPool::with_len(1 << 20, fresh_seed());
    // Unblocked: the other tests of this binary share the context, and a driver call of theirs that waits for the GPU
    // (an allocation, a module load) would block this thread's launches behind a stream hold until it timed out. The
    // rows' plumbing is what this test checks; tests/gpu_bench.rs checks the hold, one test at a time.
    let timing = TimingConfig { warmup: 2, runs: 5, mode: TimingMode::Unblocked, ..TimingConfig::default() };
    let config = AttnBenchConfig { timing, ..AttnBenchConfig::default() };
    for (shape, dtype) in
        [("1,4,1024,128,causal", Dtype::Bf16), ("2,2,512,64,full", Dtype::Bf16), ("1,2,640,128,full", Dtype::F16)]
    {
        let problem = AttnBenchProblem { shape: shape.parse().unwrap(), dtype };
        let rows =
            bench::bench_attn(&gpu, &info, &pool, &problem, &bench::CONTENDERS, &config, &mut |_: &str| {}).unwrap();
        println!("{}", oxtile::bench::report::render_table(&rows, bench::BASELINE));
        assert_eq!(rows.len(), bench::CONTENDERS.len());
        for row in &rows {
            let contender = bench::CONTENDERS.iter().find(|c| c.name == row.implementation).unwrap();
            if problem.supports(contender).is_err() {
                assert!(row.error.as_deref().unwrap().starts_with("unsupported"), "{row:?}");
                continue;
            }
            assert!(row.error.is_none() && row.check.as_deref() == Some("ok"), "{row:?}");
            assert!(
                row.tflops.is_some_and(|t| t > 0.0) && row.rescale.is_some_and(|r| (0.0..=1.0).contains(&r)),
                "{row:?}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_buffers_are_rejected_before_launch() {
    let gpu = gpu();
    let stream = gpu.stream();
    let shape = AttnShape::new(1, 100, 100, 2, 2, 64);
    let len = 100 * 2 * 64;
    let q = stream.clone_htod(&vec![bf16::ONE; len + 8]).unwrap();
    let k = stream.clone_htod(&vec![bf16::ONE; len]).unwrap();
    let v = stream.clone_htod(&vec![bf16::ONE; len]).unwrap();
    let poison = <bf16 as CheckValue>::POISON;
    let mut o = stream.clone_htod(&vec![poison; len + 8]).unwrap();
    let mut lse = stream.clone_htod(&vec![f32::NAN; 200]).unwrap();
    let options = AttnOptions::default();
    let message = |err: Error| {
        assert!(matches!(err, Error::BadArgument { .. } | Error::Unsupported { .. }), "{err}");
        err.to_string()
    };

    let short = k.slice(0..len - 1);
    let err = attention::attention(&gpu, shape, &q, &short, &v, &mut o, &mut lse, options).unwrap_err();
    assert!(message(err).contains("k has 12799 elements, its shape and strides reach 12800"));
    let misaligned = q.slice(1..len + 1);
    let err = attention::attention(&gpu, shape, &misaligned, &k, &v, &mut o, &mut lse, options).unwrap_err();
    assert!(message(err).contains("aligned"));
    let mut o_misaligned = o.slice_mut(4..len + 4);
    let err = attention::attention(&gpu, shape, &q, &k, &v, &mut o_misaligned, &mut lse, options).unwrap_err();
    assert!(message(err).contains("o at"));
    let mut lse_short = lse.slice_mut(0..199);
    let err = attention::attention(&gpu, shape, &q, &k, &v, &mut o, &mut lse_short, options).unwrap_err();
    assert!(message(err).contains("lse has 199 elements, expected 200"));
    let eager = AttnOptions { variant: AttnVariant::Eager, ..options };
    let err = attention::attention(&gpu, shape, &q, &k, &v, &mut o, &mut lse, eager).unwrap_err();
    assert!(message(err).contains("ablations"));
    let err = attention::attention(&gpu, AttnShape { heads_kv: 3, ..shape }, &q, &k, &v, &mut o, &mut lse, options)
        .unwrap_err();
    assert!(message(err).contains("multiple of heads_kv"));
    let err = attention::attention(&gpu, AttnShape { head_dim: 192, ..shape }, &q, &k, &v, &mut o, &mut lse, options)
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }) && message(err).contains("64, 128 or 256"));

    // A plan is bound to its inputs: other buffers of the same size are refused.
    let plan = AttnPlan::new(&gpu, shape, options, &q, &k, &v, &mut o).unwrap();
    let other = stream.clone_htod(&vec![bf16::ONE; len]).unwrap();
    let err = plan.launch(&gpu, &q, &other, &v, &mut o, &mut lse).unwrap_err();
    assert!(message(err).contains("not the buffer"));
    let mut stats = stream.alloc_zeros::<u32>(2).unwrap();
    let err = plan.launch_with_stats(&gpu, &q, &k, &v, &mut o, &mut lse, &mut stats).unwrap_err();
    assert!(message(err).contains("stats has 2 counters"));

    // Nothing ran: O and LSE still hold their poison.
    assert!(stream.clone_dtoh(&o).unwrap().iter().all(|x| x.to_bits() == poison.to_bits()));
    assert!(stream.clone_dtoh(&lse).unwrap().iter().all(|x| x.is_nan()));
}

// The checks below need no buffer, so no GPU: they run everywhere.

#[test]
fn unsupported_shapes_are_typed_errors_without_a_gpu() {
    let shape = AttnShape::new(2, 100, 100, 8, 2, 128);
    let refused = |shape: AttnShape, options: AttnOptions| CheckedProblem::new(shape, &options).unwrap_err();
    let o = AttnOptions::default();
    // Head dims 64, 128 and 256 have kernels; any other is refused before a launch, as unsupported.
    for head_dim in [32, 96, 192, 512] {
        let err = refused(AttnShape { head_dim, ..shape }, o);
        assert!(matches!(err, Error::Unsupported { .. }) && err.to_string().contains("64, 128 or 256"), "{err}");
    }
    for head_dim in [64, 128, 256] {
        CheckedProblem::new(AttnShape { head_dim, ..shape }, &o).unwrap();
    }
    for bad in [
        AttnShape { batch: 0, ..shape },
        AttnShape { seq_q: 0, ..shape },
        AttnShape { seq_k: 0, ..shape },
        AttnShape { heads_q: 0, ..shape },
        AttnShape { heads_kv: 0, ..shape },
        AttnShape { heads_kv: 3, ..shape },
        // More than 2^32 query rows (batch × heads_q × seq_q).
        AttnShape { batch: 70_000, seq_q: 1 << 16, ..shape },
        AttnShape { seq_k: 1 << 31, ..shape },
    ] {
        assert!(matches!(refused(bad, o), Error::BadArgument { .. }), "{bad}");
    }
    assert!(matches!(attention::kernel_for::<f16>(128, AttnVariant::Poly), Err(Error::Unsupported { .. })));
    assert!(matches!(attention::kernel_for::<bf16>(64, AttnVariant::Eager), Err(Error::Unsupported { .. })));
    assert!(matches!(attention::kernel_for::<bf16>(256, AttnVariant::Poly), Err(Error::Unsupported { .. })));
}

#[test]
fn bad_strides_are_typed_errors_without_a_gpu() {
    let shape = AttnShape::new(2, 100, 100, 8, 2, 128);
    let with = |edit: fn(&mut AttnStrides)| {
        let mut strides = AttnStrides::packed(shape);
        edit(&mut strides);
        let err =
            CheckedProblem::new(shape, &AttnOptions { strides: Some(strides), ..AttnOptions::default() }).unwrap_err();
        assert!(matches!(err, Error::BadArgument { .. }), "{err}");
        err.to_string()
    };
    assert!(with(|s| s.k.seq = 260).contains("not a multiple of 8"));
    assert!(with(|s| s.q.batch += 1).contains("not a multiple of 8"));
    assert!(with(|s| s.o.head = 64).contains("two output elements"));
    assert!(with(|s| s.o = Strides { batch: 0, ..s.o }).contains("two output elements"));
    assert!(with(|s| s.o.seq = 1 << 40).contains("2^40 bytes"));
    let scale = CheckedProblem::new(shape, &AttnOptions { scale: Some(f32::INFINITY), ..AttnOptions::default() });
    assert!(scale.unwrap_err().to_string().contains("not finite"));
}
