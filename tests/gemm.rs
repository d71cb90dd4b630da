//! The Hopper GEMM on the GPU in every layout (tn, tt, nt, nn), input type (bf16, f16) and output type (the
//! input's, f32): against float64 references on odd and edge shapes with every tile configuration, alpha and
//! beta, poisoned outputs; against cuBLAS on the same inputs; and its argument checks.

use std::sync::atomic::{AtomicUsize, Ordering};

use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use oxtile::bench::gemm::{BenchElement, GemmContender, GemmProblem};
use oxtile::bench::outputs::compare_outputs;
use oxtile::bench::peers::cublas::CublasGemmEx;
use oxtile::ops::gemm::{
    self, GemmElement, GemmLayout, GemmOptions, GemmOutput, GemmPlan, GemmShape, SkinnyChoice, Variant,
};
use oxtile::reference::{self, fresh_seed};
use oxtile::verify::{self, CheckElement, CheckReport, CheckValue, GEMM_SHAPES};
use oxtile::{Error, Gpu};

fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
}

/// Set by scripts/gpu-run.sh --sanitize: kernels run tens of times slower under compute-sanitizer, so each test
/// keeps its small problems (see [`sanitizer_sized`]).
fn under_sanitizer() -> bool {
    std::env::var_os("OXTILE_UNDER_SANITIZER").is_some()
}

/// Problems up to this many multiply-adds stay in a test under compute-sanitizer: the odd and edge shapes (1×1×8,
/// 100×3000×64, 3000×100×512, 128×256×8, 333×777×264, 50×776×640, …), which reach every kernel's partial tiles,
/// partial boxes and register epilogue, and the stream-K edge cases that split tiles between blocks.
const SANITIZER_MAX_MULTIPLY_ADDS: usize = 1 << 28;

/// `cases` as the test runs them: all of them normally; under compute-sanitizer the small ones, and for each
/// options (variant, layout, alpha/beta, launch) that would lose all its cases the smallest of them, so that every
/// kernel still runs under each tool.
fn sanitizer_sized(cases: Vec<(GemmShape, GemmOptions)>) -> Vec<(GemmShape, GemmOptions)> {
    if !under_sanitizer() {
        return cases;
    }
    let size = |shape: &GemmShape| shape.m * shape.n * shape.k;
    let mut kept: Vec<(GemmShape, GemmOptions)> =
        cases.iter().filter(|(shape, _)| size(shape) <= SANITIZER_MAX_MULTIPLY_ADDS).copied().collect();
    for (_, options) in &cases {
        if !kept.iter().any(|(_, kept)| kept == options) {
            let same = cases.iter().filter(|(_, other)| other == options);
            kept.extend(same.min_by_key(|(shape, _)| size(shape)));
        }
    }
    kept
}

/// Workers that check the cases of one [`assert_pass`] side by side, each on its own stream: the float64 references
/// take most of a check's time, and the largest tests hold a few hundred cases.
const CHECK_WORKERS: usize = 4;

/// Checks `T` → `O` GEMMs on each shape with each of `options` against float64, then fails if any did not pass,
/// printing the whole table (and the seed to replay it) either way.
fn assert_pass<T: CheckElement, O: GemmOutput<T> + CheckValue>(
    gpu: &Gpu,
    cases: impl IntoIterator<Item = (GemmShape, GemmOptions)>,
) {
    let seed = fresh_seed();
    let cases = sanitizer_sized(cases.into_iter().collect());
    let next = AtomicUsize::new(0);
    // Takes the next unchecked case until none is left.
    let check = |gpu: &Gpu| {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&(shape, options)) = cases.get(i) else { return done };
            let report = verify::gemm_check::<T, O>(gpu, shape, options, seed + i as u64)
                .unwrap_or_else(|e| panic!("{shape:?} {options:?}: {e}"));
            done.push((i, report));
        }
    };
    let mut reports = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..CHECK_WORKERS).map(|_| scope.spawn(|| check(&self::gpu()))).collect();
        let mut reports = check(gpu);
        for helper in helpers {
            reports.extend(helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        }
        reports
    });
    reports.sort_by_key(|&(i, _)| i);
    let reports: Vec<CheckReport> = reports.into_iter().map(|(_, report)| report).collect();
    let table = CheckReport::table(&reports);
    println!("{table}");
    assert!(reports.iter().all(CheckReport::passed), "seed {seed}\n{table}");
}

/// Every layout × each of `variants` that has a `T` → `O` kernel in the layout ([`Variant::available`]: the
/// ping-pong kernels exist for same-type outputs only) × the layout's shapes (from `shapes`).
fn cases<T: GemmElement, O: GemmOutput<T>>(
    variants: &[Variant],
    shapes: impl Fn(GemmLayout) -> Vec<(usize, usize, usize)>,
) -> Vec<(GemmShape, GemmOptions)> {
    let mut cases = Vec::new();
    for layout in GemmLayout::ALL {
        let available = |v: &&Variant| v.available(<T as GemmElement>::NAME, O::NAME, layout);
        for &variant in variants.iter().filter(available) {
            let options = GemmOptions { layout, variant, ..GemmOptions::default() };
            cases.extend(shapes(layout).into_iter().map(|(m, n, k)| (GemmShape::new(m, n, k), options)));
        }
    }
    cases
}

fn all_shapes(layout: GemmLayout) -> Vec<(usize, usize, usize)> {
    verify::gemm_shapes(layout).to_vec()
}

/// The layout's shapes but the 4096³ one: f16 takes the same data path as bf16 (another wgmma type and conversion),
/// so the several-wave shape that bf16 covers adds time, not coverage.
fn f16_shapes(layout: GemmLayout) -> Vec<(usize, usize, usize)> {
    all_shapes(layout).into_iter().filter(|&shape| shape != (4096, 4096, 4096)).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_matches_reference_in_every_layout_on_odd_and_edge_shapes() {
    let gpu = gpu();
    assert_pass::<bf16, bf16>(&gpu, cases::<bf16, bf16>(&Variant::CANDIDATES, all_shapes));
    // The multicast ablation exists in layout tn only.
    let ablation = GemmOptions { variant: Variant::WideCluster2Unshared, ..GemmOptions::default() };
    assert_pass::<bf16, bf16>(&gpu, GEMM_SHAPES.iter().map(|&(m, n, k)| (GemmShape::new(m, n, k), ablation)));
}

/// The three-consumer 192×192 tile at its edges, in every layout, unscaled and with alpha and beta: one whole tile;
/// one row and column past a tile (the third consumer's rows and the last columns wholly or partly outside D); odd
/// rows and a 16-byte-row N; and 8192×576×7168, the shape Auto gives it (129 tiles, one wave).
#[test]
#[ignore = "needs a CUDA GPU"]
fn three_consumer_tiles_match_reference_at_their_edges() {
    let gpu = gpu();
    let shapes = [(192, 192, 64), (193, 385, 200), (333, 776, 1000), (8192, 576, 7168)];
    // The pairs sharing A exist in tn and tt (K-major A) only; `cases` keeps each variant to its layouts.
    let mut cases = cases::<bf16, bf16>(&[Variant::Square192, Variant::Square192Cluster2], |_| shapes.to_vec());
    let scaled: Vec<_> =
        cases.iter().map(|&(shape, options)| (shape, GemmOptions { alpha: -0.5, beta: 0.75, ..options })).collect();
    cases.extend(scaled);
    assert_pass::<bf16, bf16>(&gpu, cases);
}

/// Shapes aimed at the ping-pong schedule's bookkeeping, every dimension a multiple of 8 so each layout reads them
/// in place: one k-tile per tile with ~31 tiles per block (each consumer skips the other's stage every turn);
/// exactly as many k-tiles as ring stages (7); one more (8: the ring wraps inside a tile); 4–5 tiles per block
/// (blocks with an odd count, whose consumer 1 ends a turn early); a single tile (consumer 1 never runs).
const PING_PONG_SHAPES: [(usize, usize, usize); 5] =
    [(8192, 8192, 64), (1024, 1024, 448), (2000, 1000, 456), (3000, 2992, 1000), (64, 128, 64)];

#[test]
#[ignore = "needs a CUDA GPU"]
fn ping_pong_kernels_match_reference_on_their_schedule_edges() {
    let gpu = gpu();
    let variants = [Variant::PingPong, Variant::PingPongCluster2];
    assert_pass::<bf16, bf16>(&gpu, cases::<bf16, bf16>(&variants, |_| PING_PONG_SHAPES.to_vec()));
    assert_pass::<f16, f16>(&gpu, cases::<f16, f16>(&variants, |_| PING_PONG_SHAPES.to_vec()));
}

/// Shapes for the stream-K schedule (wide tiles, one block per SM; the piece counts are an H200's, 132 SMs):
/// - 2048³: 128 tiles of 32 k-tiles on 132 blocks: all stream-K, tiles whole (blocks 0..4) or in two pieces;
/// - 4096³: 3 waves data-parallel, then 116 tiles of 64 k-tiles in two or three pieces (2 partials to add);
/// - 1000³: 32 tiles of 16 k-tiles, at most half as many as blocks: split-K, each tile in 4 pieces of 4, partial
///   tiles at both edges;
/// - 128×8192×8192: one row of 32 tiles of 128 k-tiles: split-K, every tile in 4 pieces of 32;
/// - 2000×3000×64: a single k-tile per tile (192 tiles, a wave and a half): every piece a whole tile, no partials;
/// - 1000×1000×64 (one k-tile, 32 tiles: fewer blocks than SMs, one tile each).
///
/// Each dimension is a multiple of 8, so every layout reads them in place; the odd-N shapes are in
/// [`stream_k_edge_cases`].
// (4096³ split the same way as 2048³ but its float64 references took minutes of the test's time.)
const STREAM_K_SHAPES: [(usize, usize, usize); 5] =
    [(2048, 2048, 2048), (1000, 1000, 1000), (128, 8192, 8192), (2000, 3000, 64), (1000, 1000, 64)];

/// GemmLayout tn with N free: odd N writes D from registers (333×777×264: 12 tiles of 5 k-tiles on 60 blocks, one k-tile
/// each, so every tile in five pieces; 4097×4095×4104: 528 tiles, exactly 4 waves, so no tail: the plain schedule
/// in the stream-K kernel), and a 16-byte-row N with partial chunks (1000×1000×1000 above; 50×776×640: one tile row,
/// consumer 1's rows wholly outside D, 4 tiles of 10 k-tiles on 40 blocks).
fn stream_k_edge_cases(variant: Variant) -> Vec<(GemmShape, GemmOptions)> {
    let mut cases = Vec::new();
    for (m, n, k) in [(333, 777, 264), (4097, 4095, 4104), (50, 776, 640)] {
        for (alpha, beta) in [(1.0, 0.0), (-0.5, 0.75)] {
            let options = GemmOptions { variant, alpha, beta, ..GemmOptions::default() };
            cases.push((GemmShape::new(m, n, k), options));
        }
    }
    cases
}

/// Every layout × the stream-K shapes, unscaled and with alpha and beta (C read back, scaled once by the reducer), for
/// one stream-K variant. In clusters of two the same shapes cut cluster tiles of 256×256 between 66 clusters (2048³:
/// 64 tiles of 32 k-tiles, ~31 per cluster; split-K on 128×8192×8192: 32 tiles in 2 pieces each, every second
/// block's rows outside D; 1000³: 16 tiles in 4 pieces).
fn stream_k_cases<T: GemmElement, O: GemmOutput<T>>(variant: Variant) -> Vec<(GemmShape, GemmOptions)> {
    let mut cases = cases::<T, O>(&[variant], |_| STREAM_K_SHAPES.to_vec());
    let scaled: Vec<_> =
        cases.iter().map(|&(shape, options)| (shape, GemmOptions { alpha: -0.5, beta: 0.75, ..options })).collect();
    cases.extend(scaled);
    cases.extend(stream_k_edge_cases(variant));
    cases
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn stream_k_matches_reference_where_tiles_are_split_between_blocks() {
    let gpu = gpu();
    // The shapes split tiles as documented only with enough SMs; on fewer the schedule differs but must still hold.
    for (m, n, k) in [(2048, 2048, 2048), (128, 8192, 8192)] {
        let schedule = stream_k_plan_schedule(&gpu, GemmShape::new(m, n, k), Variant::StreamK);
        println!("{m}x{n}x{k}: {schedule:?}");
        assert!(schedule.sk_tiles() > 0 && schedule.partial_slots() > 0);
    }
    assert_pass::<bf16, bf16>(&gpu, stream_k_cases::<bf16, bf16>(Variant::StreamK));
    assert_pass::<bf16, f32>(&gpu, stream_k_cases::<bf16, f32>(Variant::StreamK));
    assert_pass::<f16, f16>(&gpu, stream_k_cases::<f16, f16>(Variant::StreamK));
    // The 128×192 tiles: 3000×576×7168 is 72 tiles of 112 k-tiles, all of them stream-K.
    let schedule = stream_k_plan_schedule(&gpu, GemmShape::new(3000, 576, 7168), Variant::Wide192StreamK);
    println!("Wide192StreamK 3000x576x7168: {schedule:?}");
    assert!(schedule.sk_tiles() > 0 && schedule.partial_slots() > 0);
    let mut cases = stream_k_cases::<bf16, bf16>(Variant::Wide192StreamK);
    let options = GemmOptions { variant: Variant::Wide192StreamK, alpha: -0.5, beta: 0.75, ..GemmOptions::default() };
    cases.push((GemmShape::new(3000, 576, 7168), options));
    assert_pass::<bf16, bf16>(&gpu, cases);
}

/// The stream-K schedule of a plan of `variant` for `shape` (bf16, layout tn).
fn stream_k_plan_schedule(gpu: &Gpu, shape: GemmShape, variant: Variant) -> oxtile_abi::stream_k::StreamK {
    let options = GemmOptions { variant, ..GemmOptions::default() };
    let draw = |len| gpu.stream().alloc_zeros::<bf16>(len).unwrap();
    let (a, b) = (draw(shape.m * shape.k), draw(shape.k * shape.n));
    let plan = GemmPlan::<bf16, bf16>::new(gpu, shape, options, &a, &b).unwrap();
    plan.stream_k().expect("a stream-K plan has a schedule")
}

/// Stream-K on the few-row tiles, 64×128, 64×64 and cooperative 128×128: the suite's stream-K shapes and edge cases, and
/// problems of few rows that leave most SMs idle without it. On an H200's 132 SMs, split-K: 64×128 tiles split
/// 128×4096×14336 (64 tiles of 224 k-tiles) in 2 pieces each and 72×1024×8192 (16 tiles) in 8, while 128×8192×8192
/// (128 tiles, over half as many as SMs) is stream-K over every SM, each tile about whole; 128×128 tiles split 128×8192×8192 (64 tiles of 128
/// k-tiles) in 2 pieces, 128×4096×14336 (32 of 224) in 4, and 72×1024×8192 (8 tiles, rows 72..128 outside D) in 16; from 3
/// pieces on they reduce their tiles together ([`split_k_pieces_reduce_their_tile_together`]).
#[test]
#[ignore = "needs a CUDA GPU"]
fn stream_k_on_few_row_tiles_matches_reference_where_tiles_are_split() {
    let gpu = gpu();
    for variant in [Variant::FlatStreamK, Variant::SquareStreamK, Variant::FlatNarrowStreamK] {
        for (m, n, k) in [(128, 4096, 14336), (72, 1024, 8192)] {
            let schedule = stream_k_plan_schedule(&gpu, GemmShape::new(m, n, k), variant);
            println!("{variant:?} {m}x{n}x{k}: {schedule:?}");
            assert!(schedule.sk_tiles() > 0 && schedule.partial_slots() > 0);
        }
        let mut cases = stream_k_cases::<bf16, bf16>(variant);
        for (m, n, k) in [(128, 4096, 14336), (72, 1024, 8192)] {
            for (alpha, beta) in [(1.0, 0.0), (-0.5, 0.75)] {
                let options = GemmOptions { variant, alpha, beta, ..GemmOptions::default() };
                cases.push((GemmShape::new(m, n, k), options));
            }
        }
        assert_pass::<bf16, bf16>(&gpu, cases);
    }
}

/// A test of its own so that the test harness runs it beside the single-block one (each checks its cases in turn).
#[test]
#[ignore = "needs a CUDA GPU"]
fn stream_k_in_clusters_matches_reference_where_cluster_tiles_are_split() {
    let gpu = gpu();
    for (m, n, k) in [(2048, 2048, 2048), (128, 8192, 8192)] {
        let options = GemmOptions { variant: Variant::StreamKCluster2, ..GemmOptions::default() };
        let draw = |len| gpu.stream().alloc_zeros::<bf16>(len).unwrap();
        let (a, b) = (draw(m * k), draw(k * n));
        let plan = GemmPlan::<bf16, bf16>::new(&gpu, GemmShape::new(m, n, k), options, &a, &b).unwrap();
        let schedule = plan.stream_k().unwrap();
        println!("{m}x{n}x{k}: {schedule:?}, grid {:?}", plan.grid());
        assert!(schedule.sk_tiles() > 0 && plan.grid() == (2 * schedule.grid(), 2));
    }
    assert_pass::<bf16, bf16>(&gpu, stream_k_cases::<bf16, bf16>(Variant::StreamKCluster2));
}

/// Split-K shapes (at most half a wave of tiles, no clusters): on an H200's 132 SMs, 1×576×7168 on 64×128 tiles is 5
/// tiles in 26 pieces of 4 or 5 of the 112 k-tiles; 16×1536×7168, 12 in 11; 7×1000×4104 (N odd: D from registers),
/// 8 tiles of 65 k-tiles in 16; 72×1024×8192 on 128×128 tiles, 8 in 16 (rows 72..128 outside D); 128×8192×8192 on
/// 128×256 tiles, 32 in 4 (two consumers per tile, each reducing its own rows).
const SPLIT_K_CASES: [(Variant, (usize, usize, usize)); 5] = [
    (Variant::FlatStreamK, (1, 576, 7168)),
    (Variant::FlatStreamK, (16, 1536, 7168)),
    (Variant::FlatStreamK, (7, 1000, 4104)),
    (Variant::SquareStreamK, (72, 1024, 8192)),
    (Variant::StreamK, (128, 8192, 8192)),
];

#[test]
#[ignore = "needs a CUDA GPU"]
fn split_k_pieces_reduce_their_tile_together() {
    // Each piece adds up its share of the tile from every piece's partial: the product, alpha and beta·C, every
    // output type; three launches of one plan on new inputs (a flag left counting would hand the next launch's
    // pieces stale partials).
    let gpu = gpu();
    let seed = fresh_seed();
    let mut reports = Vec::new();
    for (i, &(variant, (m, n, k))) in SPLIT_K_CASES.iter().enumerate() {
        let shape = GemmShape::new(m, n, k);
        let schedule = stream_k_plan_schedule(&gpu, shape, variant);
        println!("{variant:?} {m}x{n}x{k}: {schedule:?}");
        if gpu.sm_count() >= 132 {
            assert!(schedule.pieces() >= 4 && schedule.grid() == schedule.tiles() * schedule.pieces(), "{schedule:?}");
        }
        if under_sanitizer() && m * n * k > SANITIZER_MAX_MULTIPLY_ADDS {
            continue;
        }
        for (alpha, beta) in [(1.0, 0.0), (-0.5, 0.75)] {
            let options = GemmOptions { variant, alpha, beta, ..GemmOptions::default() };
            let seed = seed + 10 * i as u64;
            reports.extend(verify::gemm_check_launches::<bf16, bf16>(&gpu, shape, options, seed, 3).unwrap());
            // The 128×256 tile has f16 and f32-output kernels too.
            if variant == Variant::StreamK {
                reports.extend(verify::gemm_check_launches::<f16, f16>(&gpu, shape, options, seed + 3, 2).unwrap());
                reports.extend(verify::gemm_check_launches::<bf16, f32>(&gpu, shape, options, seed + 5, 2).unwrap());
            }
        }
    }
    let table = CheckReport::table(&reports);
    println!("{table}");
    assert!(reports.iter().all(CheckReport::passed), "seed {seed}\n{table}");

    // The flags all 0 after every launch, and the launches of one plan equal bit for bit (each element is summed over
    // the pieces in their order).
    launches_reset_their_flags_and_agree(
        &gpu,
        GemmShape::new(1, 576, 7168),
        GemmOptions::default(),
        &[Variant::FlatStreamK],
        seed,
    );
}

/// Decode-sized problems for the skinny kernel (M ≤ 16, A row-major), per layout (in tt, N is B's contiguous
/// dimension and a multiple of 8): one column and one element; rows 2–16 around the fragment's 8-row halves; N
/// ending inside a column group, inside a fragment and inside a lane's 8 columns (tn); K ending inside a chunk;
/// column groups split 16 ways (576×7168, 128×14336), 4 ways (4096², 65×1000), 11 and 8 ways with a shorter last
/// range (328×3000: 9 chunks a block, 4 in the last; 136×2056: 2 in the last), and too many groups to split (20000).
fn skinny_shapes(layout: GemmLayout) -> Vec<(usize, usize, usize)> {
    let column_major_b = [(1, 1, 8), (16, 1, 8), (3, 100, 40), (9, 65, 1000), (5, 8201, 136)];
    let row_major_b = [(1, 8, 8), (16, 8, 8), (3, 104, 40), (9, 72, 1000), (5, 8200, 136)];
    let both = [
        (1, 576, 7168),
        (7, 1000, 264),
        (8, 64, 4096),
        (16, 4096, 4096),
        (4, 128, 14336),
        (5, 328, 3000),
        (2, 136, 2056),
        (2, 20000, 512),
    ];
    let odd = if layout == GemmLayout::Tn { column_major_b } else { row_major_b };
    odd.into_iter().chain(both).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn skinny_kernel_matches_reference_for_decode_sized_problems() {
    // Auto with the skinny kernel wherever it applies (M ≤ 16, A row-major; where it pays is narrower): every input and
    // output type, alpha and beta·C; bf16 → bf16 with two launches of each plan on new inputs (a counter left counting
    // would hand the next launch's last block stale slots).
    let gpu = gpu();
    let seed = fresh_seed();
    let mut reports = Vec::new();
    for (l, layout) in [GemmLayout::Tn, GemmLayout::Tt].into_iter().enumerate() {
        for (i, (m, n, k)) in skinny_shapes(layout).into_iter().enumerate() {
            let shape = GemmShape::new(m, n, k);
            if under_sanitizer() && m * n * k > SANITIZER_MAX_MULTIPLY_ADDS {
                continue;
            }
            for (j, (alpha, beta)) in [(1.0, 0.0), (-0.5, 0.75)].into_iter().enumerate() {
                let skinny = SkinnyChoice::WhereApplies;
                let options = GemmOptions { layout, alpha, beta, skinny, ..GemmOptions::default() };
                let seed = seed + 100 * l as u64 + 10 * i as u64 + 5 * j as u64;
                reports.extend(verify::gemm_check_launches::<bf16, bf16>(&gpu, shape, options, seed, 2).unwrap());
                reports.extend(verify::gemm_check_launches::<f16, f16>(&gpu, shape, options, seed + 1, 1).unwrap());
                reports.extend(verify::gemm_check_launches::<bf16, f32>(&gpu, shape, options, seed + 2, 1).unwrap());
                reports.extend(verify::gemm_check_launches::<f16, f32>(&gpu, shape, options, seed + 3, 1).unwrap());
            }
        }
    }
    let table = CheckReport::table(&reports);
    println!("{table}");
    assert!(reports.iter().all(|r| r.kernel.contains("skinny")), "Auto ran another kernel:\n{table}");
    assert!(reports.iter().all(CheckReport::passed), "seed {seed}\n{table}");

    // The counters all 0 after every launch, and the launches of one plan equal bit for bit (each element is summed
    // over the warps and the split's blocks in their order). Auto runs the skinny kernel at 3×576×1536 (split 6 ways;
    // K too short for the 64×64 tiles' split); at K = 7168, where Auto splits the 64×64 tiles instead, the skinny
    // kernel wherever it applies splits each column group the most ways it can (`skinny::MAX_SPLITS`).
    let everywhere = GemmOptions { skinny: SkinnyChoice::WhereApplies, ..GemmOptions::default() };
    for (shape, options, splits) in [
        (GemmShape::new(3, 576, 1536), GemmOptions::default(), 6),
        (GemmShape::new(3, 576, 7168), everywhere, oxtile_abi::skinny::MAX_SPLITS),
    ] {
        let a = gpu.stream().alloc_zeros::<bf16>(shape.m * shape.k).unwrap();
        let b = gpu.stream().alloc_zeros::<bf16>(shape.k * shape.n).unwrap();
        let split = GemmPlan::<bf16, bf16>::new(&gpu, shape, options, &a, &b).unwrap().skinny_split();
        assert!(split.is_some_and(|s| s.splits == splits), "{shape:?}: {split:?}");
        launches_reset_their_flags_and_agree(&gpu, shape, options, &[Variant::Auto], seed);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn auto_runs_the_skinny_kernel_only_where_it_applies() {
    let gpu = gpu();
    let stream = gpu.stream();
    let plan = |shape: GemmShape, options: GemmOptions| {
        let a = stream.alloc_zeros::<bf16>(shape.m * shape.k).unwrap();
        let b = stream.alloc_zeros::<bf16>(shape.k * shape.n).unwrap();
        let plan = GemmPlan::<bf16, bf16>::new(&gpu, shape, options, &a, &b).unwrap();
        (plan.kernel().name, plan.skinny_split())
    };
    let tn = GemmOptions::default();
    let (kernel, split) = plan(GemmShape::new(16, 576, 1536), tn);
    assert!(kernel.contains("skinny") && split.is_some_and(|s| s.splits > 1), "{kernel} {split:?}");
    // K deep enough to split 64×64 tiles: those, not the skinny kernel (`Variant::splits_narrow_tiles`), unless Auto is
    // kept off stream-K (OXTILE_NO_STREAM_K in the environment).
    let (kernel, split) = plan(GemmShape::new(16, 576, 7168), tn);
    if tn.auto_may_stream_k() {
        assert!(kernel.contains("64x64_sk") && split.is_none(), "{kernel} {split:?}");
    } else {
        assert!(kernel.contains("skinny"), "{kernel} {split:?}");
    }
    let everywhere = GemmOptions { skinny: SkinnyChoice::WhereApplies, ..tn };
    let (kernel, split) = plan(GemmShape::new(1, 57344, 8192), everywhere);
    assert!(kernel.contains("skinny") && split.is_some_and(|s| s.splits == 1), "{kernel} {split:?}");
    // 17 rows, A column-major, too many columns for it to pay, an explicit variant, or the ablation: the wgmma tiles.
    for (shape, options) in [
        (GemmShape::new(17, 576, 7168), tn),
        (GemmShape::new(16, 576, 7168), GemmOptions { layout: GemmLayout::Nt, ..tn }),
        (GemmShape::new(1, 57344, 8192), tn),
        (GemmShape::new(16, 576, 7168), GemmOptions { variant: Variant::Flat, ..tn }),
        (GemmShape::new(16, 576, 7168), GemmOptions { skinny: SkinnyChoice::Never, ..tn }),
    ] {
        let (kernel, split) = plan(shape, options);
        assert!(!kernel.contains("skinny") && split.is_none(), "{shape:?} {options:?}: {kernel}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn stream_k_plans_reset_their_flags_for_the_next_launch() {
    // Three launches of one plan, each on new inputs in the same buffers (outputs poisoned, or a new C): a flag left
    // counting, or a partial read before it is stored, would hand a reducer the previous launch's sums.
    let gpu = gpu();
    let seed = fresh_seed();
    let mut reports = Vec::new();
    let shapes = [(2048, 2048, 2048), (1000, 1000, 1000), (333, 777, 264), (128, 8192, 8192), (64, 576, 7168)];
    let small = |&(_, (m, n, k)): &(usize, (usize, usize, usize))| m * n * k <= SANITIZER_MAX_MULTIPLY_ADDS;
    for (i, (m, n, k)) in shapes.into_iter().enumerate().filter(|case| !under_sanitizer() || small(case)) {
        let shape = GemmShape::new(m, n, k);
        for (alpha, beta) in [(1.0, 0.0), (-0.5, 0.75)] {
            let options = GemmOptions { variant: Variant::StreamK, alpha, beta, ..GemmOptions::default() };
            let seed = seed + 10 * i as u64;
            reports.extend(verify::gemm_check_launches::<bf16, bf16>(&gpu, shape, options, seed, 3).unwrap());
            reports.extend(verify::gemm_check_launches::<bf16, f32>(&gpu, shape, options, seed + 5, 2).unwrap());
            let options = GemmOptions { variant: Variant::StreamKCluster2, ..options };
            reports.extend(verify::gemm_check_launches::<bf16, bf16>(&gpu, shape, options, seed + 7, 3).unwrap());
            let options = GemmOptions { variant: Variant::FlatStreamK, ..options };
            reports.extend(verify::gemm_check_launches::<bf16, bf16>(&gpu, shape, options, seed + 9, 3).unwrap());
            let options = GemmOptions { variant: Variant::SquareStreamK, ..options };
            reports.extend(verify::gemm_check_launches::<bf16, bf16>(&gpu, shape, options, seed + 11, 3).unwrap());
            let options = GemmOptions { variant: Variant::FlatNarrowStreamK, ..options };
            reports.extend(verify::gemm_check_launches::<bf16, bf16>(&gpu, shape, options, seed + 13, 3).unwrap());
        }
    }
    let table = CheckReport::table(&reports);
    println!("{table}");
    assert!(reports.iter().all(CheckReport::passed), "seed {seed}\n{table}");

    // The flags themselves: all 0 after every launch, and the same plan's outputs equal bit for bit (the reducer adds
    // the partials in block order, so a launch is deterministic).
    let variants = [Variant::StreamK, Variant::StreamKCluster2, Variant::FlatStreamK, Variant::SquareStreamK];
    launches_reset_their_flags_and_agree(
        &gpu,
        GemmShape::new(2048, 2048, 2048),
        GemmOptions::default(),
        &variants,
        seed,
    );
    // The 64×64 tiles split over K (Auto's choice here), and the same tiles' stream-K over every SM.
    let narrow = [Variant::Auto, Variant::FlatNarrowStreamK];
    launches_reset_their_flags_and_agree(&gpu, GemmShape::new(64, 576, 7168), GemmOptions::default(), &narrow, seed);
    launches_reset_their_flags_and_agree(
        &gpu,
        GemmShape::new(128, 8192, 8192),
        GemmOptions::default(),
        &narrow[1..],
        seed,
    );
}

/// Three launches of a bf16 plan of each of `variants` (on `options` otherwise) for `shape` on the same inputs: the
/// stream-K flags or the skinny kernel's counters all 0 after every launch (the workspace allocated at the first),
/// and the outputs equal bit for bit.
fn launches_reset_their_flags_and_agree(
    gpu: &Gpu,
    shape: GemmShape,
    options: GemmOptions,
    variants: &[Variant],
    seed: u64,
) {
    let stream = gpu.stream();
    let draw = |len, seed| -> Vec<bf16> { reference::randn(len, 1.0, seed).into_iter().map(bf16::from_f32).collect() };
    let a = stream.clone_htod(&draw(shape.m * shape.k, seed)).unwrap();
    let b = stream.clone_htod(&draw(shape.k * shape.n, seed + 1)).unwrap();
    for &variant in variants {
        let options = GemmOptions { variant, ..options };
        let plan = GemmPlan::<bf16, bf16>::new(gpu, shape, options, &a, &b).unwrap();
        assert!(plan.stream_k_flags(gpu).unwrap().is_empty(), "the workspace is allocated at the first launch");
        let mut outputs = Vec::new();
        for _ in 0..3 {
            let mut d = stream.clone_htod(&vec![<bf16 as CheckValue>::POISON; shape.m * shape.n]).unwrap();
            plan.launch(gpu, &a, &b, &mut d).unwrap();
            let flags = plan.stream_k_flags(gpu).unwrap();
            assert!(
                !flags.is_empty() && flags.iter().all(|&f| f == 0),
                "seed {seed}: {variant:?} flags left {flags:?}"
            );
            outputs.push(stream.clone_dtoh(&d).unwrap().iter().map(|v| v.to_bits()).collect::<Vec<u16>>());
        }
        assert!(outputs.windows(2).all(|w| w[0] == w[1]), "seed {seed}: {variant:?} launches of one plan differ");
    }
}

#[test]
fn the_candidates_include_the_ping_pong_and_64x128_kernels_where_they_exist() {
    let one = |_: GemmLayout| vec![(64, 64, 64)];
    let variants = |cases: Vec<(GemmShape, GemmOptions)>| cases.into_iter().map(|(_, o)| o.variant).collect::<Vec<_>>();
    let bf16_cases = variants(cases::<bf16, bf16>(&Variant::CANDIDATES, one));
    for variant in [Variant::PingPong, Variant::PingPongCluster2, Variant::Flat] {
        assert_eq!(bf16_cases.iter().filter(|&&v| v == variant).count(), GemmLayout::ALL.len(), "{variant:?}");
    }
    let f16_cases = variants(cases::<f16, f16>(&Variant::CANDIDATES, one));
    for variant in [Variant::PingPong, Variant::Flat] {
        assert_eq!(f16_cases.iter().filter(|&&v| v == variant).count(), GemmLayout::ALL.len(), "{variant:?}");
    }
    assert!(!f16_cases.contains(&Variant::PingPongCluster2));
    // f32 outputs keep the wide, wide-c2, narrow and 64×128 configurations in every layout, and stream-K from bf16.
    for (output_cases, expected) in [
        (variants(cases::<bf16, f32>(&Variant::CANDIDATES, one)), 5),
        (variants(cases::<f16, f32>(&Variant::CANDIDATES, one)), 4),
    ] {
        assert_eq!(output_cases.len(), expected * GemmLayout::ALL.len());
        assert_eq!(output_cases.iter().filter(|&&v| v == Variant::Flat).count(), GemmLayout::ALL.len());
    }
    for cases in [
        variants(cases::<bf16, bf16>(&Variant::CANDIDATES, one)),
        variants(cases::<f16, f16>(&Variant::CANDIDATES, one)),
    ] {
        assert_eq!(cases.iter().filter(|&&v| v == Variant::StreamK).count(), GemmLayout::ALL.len());
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_with_f32_output_matches_reference_in_every_layout() {
    assert_pass::<bf16, f32>(&gpu(), cases::<bf16, f32>(&Variant::CANDIDATES, all_shapes));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_matches_reference_in_every_layout_with_both_outputs() {
    let gpu = gpu();
    assert_pass::<f16, f16>(&gpu, cases::<f16, f16>(&Variant::CANDIDATES, f16_shapes));
    assert_pass::<f16, f32>(&gpu, cases::<f16, f32>(&Variant::CANDIDATES, f16_shapes));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn alpha_and_beta_scale_product_and_existing_output() {
    let gpu = gpu();
    let odd = |layout| {
        let s = verify::odd_shape(layout);
        vec![(s.m, s.n, s.k)]
    };
    for (alpha, beta) in [(2.0, 0.0), (1.0, 1.0), (-0.5, 0.75)] {
        let scaled = |cases: Vec<(GemmShape, GemmOptions)>| {
            cases.into_iter().map(move |(shape, options)| (shape, GemmOptions { alpha, beta, ..options }))
        };
        assert_pass::<bf16, bf16>(&gpu, scaled(cases::<bf16, bf16>(&Variant::CANDIDATES, odd)));
        assert_pass::<bf16, f32>(&gpu, scaled(cases::<bf16, f32>(&Variant::CANDIDATES, odd)));
        assert_pass::<f16, f16>(&gpu, scaled(cases::<f16, f16>(&[Variant::Wide, Variant::PingPong], odd)));
        assert_pass::<f16, f32>(&gpu, scaled(cases::<f16, f32>(&[Variant::Wide], odd)));
    }
}

/// Shapes for the two epilogue paths of the cooperative kernels (layout tn, where N is free): D through shared
/// memory and TMA stores where its rows are 16 bytes apart, from registers elsewhere.
/// - 1000×1000: TMA for every output type; partial tiles in M and N, the last wide tile's last 128-byte chunk
///   partly inside D (1000 = 3·256 + 3·64 + 40), the last narrow tile 40 columns wide.
/// - 50×776: TMA; consumer 1's rows wholly below D (its stores are skipped), the last wide tile 8 columns wide
///   (one chunk partly inside, three outside).
/// - 333×1004: f32 through TMA (4016-byte rows), 16-bit outputs from registers (2008-byte rows).
/// - 333×777: odd N, registers for every type.
/// - 4096×4104×64: TMA; several tiles per block (the staging buffers alternate across tiles) and a last column of
///   tiles 8 wide.
const EPILOGUE_SHAPES: [(usize, usize, usize); 5] =
    [(1000, 1000, 200), (50, 776, 64), (333, 1004, 136), (333, 777, 264), (4096, 4104, 64)];

/// The cooperative variants (the ones with the TMA-store epilogue), unscaled and with alpha and beta (C read back).
fn epilogue_cases<O>() -> Vec<(GemmShape, GemmOptions)> {
    let mut cases = Vec::new();
    for variant in [Variant::Wide, Variant::WideCluster2, Variant::Narrow] {
        for (alpha, beta) in [(1.0, 0.0), (-0.5, 0.75)] {
            for (m, n, k) in EPILOGUE_SHAPES {
                cases.push((GemmShape::new(m, n, k), GemmOptions { variant, alpha, beta, ..GemmOptions::default() }));
            }
        }
    }
    // Each variant writes this output type both ways.
    for variant in [Variant::Wide, Variant::WideCluster2, Variant::Narrow] {
        let staged = |(shape, options): &(GemmShape, GemmOptions)| {
            options.variant == variant && gemm::tma_store_epilogue(variant, shape.n, std::mem::size_of::<O>())
        };
        let in_variant = cases.iter().filter(|(_, options)| options.variant == variant).count();
        let through_tma = cases.iter().filter(|case| staged(case)).count();
        assert!(through_tma > 0 && through_tma < in_variant, "{variant:?}: {through_tma} of {in_variant} staged");
    }
    cases
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tma_store_and_register_epilogues_match_reference_at_the_edges() {
    let gpu = gpu();
    assert_pass::<bf16, bf16>(&gpu, epilogue_cases::<bf16>());
    assert_pass::<bf16, f32>(&gpu, epilogue_cases::<f32>());
    assert_pass::<f16, f16>(&gpu, epilogue_cases::<f16>());
    assert_pass::<f16, f32>(&gpu, epilogue_cases::<f32>());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_plan_stores_through_tma_into_whichever_d_each_launch_brings() {
    // D's tensor map is encoded for the D of a launch (or ahead of it by `bind_output`): a second buffer, then the
    // first again, must each get the whole product (outputs start poisoned).
    let gpu = gpu();
    let stream = gpu.stream();
    let shape = GemmShape::new(1000, 1000, 200);
    let options = GemmOptions { variant: Variant::Wide, ..GemmOptions::default() };
    assert!(gemm::tma_store_epilogue(options.variant, shape.n, 2));
    let draw = |len, seed| -> Vec<bf16> { reference::randn(len, 1.0, seed).into_iter().map(bf16::from_f32).collect() };
    let seed = fresh_seed();
    let a = stream.clone_htod(&draw(shape.m * shape.k, seed)).unwrap();
    let b = stream.clone_htod(&draw(shape.k * shape.n, seed + 1)).unwrap();
    let plan = GemmPlan::<bf16, bf16>::new(&gpu, shape, options, &a, &b).unwrap();
    let poison = <bf16 as CheckValue>::POISON;
    let poisoned = || stream.clone_htod(&vec![poison; shape.m * shape.n]).unwrap();
    let bits =
        |d: &CudaSlice<bf16>| -> Vec<u16> { stream.clone_dtoh(d).unwrap().iter().map(|v| v.to_bits()).collect() };
    let (mut first, mut second) = (poisoned(), poisoned());
    plan.launch(&gpu, &a, &b, &mut first).unwrap();
    let expected = bits(&first);
    assert!(expected.iter().all(|&v| v != poison.to_bits()), "seed {seed}: D not wholly written");
    plan.bind_output(&gpu, &mut second).unwrap();
    plan.launch(&gpu, &a, &b, &mut second).unwrap();
    assert!(bits(&second) == expected, "seed {seed}: the second D differs");
    stream.memcpy_htod(&vec![poison; shape.m * shape.n], &mut first).unwrap();
    plan.launch(&gpu, &a, &b, &mut first).unwrap();
    assert!(bits(&first) == expected, "seed {seed}: the first D, again, differs");
}

/// Row-major A (m × k) times column-major B (k × n) in float64, with the magnitude Σ|a·b| the rounding error of each
/// element scales with.
fn product_tn(a: &[bf16], b: &[bf16], (m, n, k): (usize, usize, usize)) -> Vec<(f64, f64)> {
    let (a, b): (Vec<f64>, Vec<f64>) = (a.iter().map(|v| v.to_f64()).collect(), b.iter().map(|v| v.to_f64()).collect());
    (0..m)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| {
            let terms = (0..k).map(|p| a[i * k + p] * b[j * k + p]);
            terms.fold((0.0, 0.0), |(sum, magnitude), t| (sum + t, magnitude + t.abs()))
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_dependent_launch_waits_for_the_gemm_before_it() {
    // Programmatic dependent launch: the second GEMM reads the first's D as its A, queued right behind it with no
    // synchronization and nothing else between them. The first keeps 8 blocks busy for a long K and lets dependents
    // be scheduled from its start, so the second's 64 blocks find free SMs at once: they would read D1 still
    // poisoned (and write NaN) had they not waited for the first grid to finish.
    let gpu = gpu();
    let stream = gpu.stream();
    let seed = fresh_seed();
    let (first, second) = (GemmShape::new(256, 256, 16384), GemmShape::new(256, 2048, 256));
    let draw = |len, seed| -> Vec<bf16> { reference::randn(len, 1.0, seed).into_iter().map(bf16::from_f32).collect() };
    let poison = <bf16 as CheckValue>::POISON;
    let (a1, b1, b2) = (draw(256 * 16384, seed), draw(16384 * 256, seed + 1), draw(256 * 2048, seed + 2));
    let (a1_dev, b1_dev, b2_dev) =
        (stream.clone_htod(&a1).unwrap(), stream.clone_htod(&b1).unwrap(), stream.clone_htod(&b2).unwrap());
    let mut d1 = stream.clone_htod(&vec![poison; 256 * 256]).unwrap();
    let mut d2 = stream.clone_htod(&vec![poison; 256 * 2048]).unwrap();
    // The narrow tile, whatever Auto picks: it makes the grids the test reasons about.
    let options = GemmOptions { variant: Variant::Narrow, ..GemmOptions::default() };
    assert!(options.dependent_launch);
    let plan1 = GemmPlan::<bf16, bf16>::new(&gpu, first, options, &a1_dev, &b1_dev).unwrap();
    let plan2 = GemmPlan::<bf16, bf16>::new(&gpu, second, options, &d1, &b2_dev).unwrap();
    assert_eq!((plan1.grid().0, plan2.grid().0), (8, 64), "the grids this test reasons about");
    // D's tensor maps encoded now, so that no copy sits between the two launches.
    plan1.bind_output(&gpu, &mut d1).unwrap();
    plan2.bind_output(&gpu, &mut d2).unwrap();
    stream.synchronize().unwrap();
    plan1.launch(&gpu, &a1_dev, &b1_dev, &mut d1).unwrap();
    plan2.launch(&gpu, &d1, &b2_dev, &mut d2).unwrap();
    let (d1, d2) = (stream.clone_dtoh(&d1).unwrap(), stream.clone_dtoh(&d2).unwrap());
    let check = |name: &str, got: &[bf16], want: Vec<(f64, f64)>| {
        let comparison = reference::Comparison::of(got.iter().map(|v| v.to_f64()), want);
        assert!(comparison.passes(1e-2), "seed {seed}: {name}: {comparison:?}");
    };
    check("D1", &d1, product_tn(&a1, &b1, (256, 256, 16384)));
    // The second GEMM's reference takes D1 as the GPU wrote it: exactly what the second kernel should have read.
    check("D2", &d2, product_tn(&d1, &b2, (256, 2048, 256)));
}

/// Ours and cublasGemmEx on the same inputs: same-type output against cuBLAS's same-type output, f32 output against
/// cuBLAS's f32 output, every element written (outputs start poisoned).
fn agree_with_cublas<T>(gpu: &Gpu, cublas: &mut CublasGemmEx, shape: GemmShape, options: GemmOptions, seed: u64)
where
    T: BenchElement + GemmOutput<T>,
{
    let problem = GemmProblem { shape, dtype: T::DTYPE, layout: options.layout };
    let stream = gpu.stream();
    let draw = |len, seed| -> Vec<T> { reference::randn(len, 1.0, seed).into_iter().map(T::from_f32).collect() };
    let a = stream.clone_htod(&draw(problem.a_len(), seed)).unwrap();
    let b = stream.clone_htod(&draw(problem.b_len(), seed + 1)).unwrap();
    let poisoned = |len| stream.clone_htod(&vec![<T as CheckValue>::POISON; len]).unwrap();
    let poisoned_f32 = |len| stream.clone_htod(&vec![f32::NAN; len]).unwrap();
    let widen = |c: &CudaSlice<T>| -> Vec<f32> {
        stream.clone_dtoh(c).unwrap().into_iter().map(|v| v.to_f64() as f32).collect()
    };

    let (mut ours, mut theirs) = (poisoned(problem.c_len()), poisoned(problem.c_len()));
    GemmPlan::<T, T>::new(gpu, shape, options, &a, &b).unwrap().launch(gpu, &a, &b, &mut ours).unwrap();
    cublas.launch(gpu, &problem, T::operands(&a, &b, &mut theirs)).unwrap();
    let same = compare_outputs(&widen(&ours), &widen(&theirs));

    // The ping-pong kernels write same-type outputs only: compare an f32 output of theirs with the default kernel's.
    let f32_options = if options.variant.available(<T as GemmElement>::NAME, "f32", options.layout) {
        options
    } else {
        GemmOptions { variant: Variant::Auto, ..options }
    };
    let (mut ours, mut theirs) = (poisoned_f32(problem.c_len()), poisoned_f32(problem.c_len()));
    GemmPlan::<T, f32>::new(gpu, shape, f32_options, &a, &b).unwrap().launch(gpu, &a, &b, &mut ours).unwrap();
    cublas.gemm_f32_out(gpu, &problem, &a, &b, &mut theirs).unwrap();
    let wide = compare_outputs(&stream.clone_dtoh(&ours).unwrap(), &stream.clone_dtoh(&theirs).unwrap());

    // Same-type outputs: each within half an ulp of the exact value plus accumulation-order noise (the bench's
    // bound). f32 outputs: two f32 accumulations of the same exact products in different orders, each off by
    // about √K·2^-24 of the largest partial sums, far below 2^-14 of max |C| for these K (the f64 checks bound
    // each against the exact value more tightly); an indexing or layout error is O(1).
    println!("{problem} {:?}: same-type {:.2e}, f32 {:.2e}", options.variant, same.max_rel, wide.max_rel);
    assert!(same.passes(T::DTYPE.check_bound()), "{problem} {options:?} seed {seed}: {same:?}");
    assert!(wide.passes(2f64.powi(-14)), "{problem} {options:?} seed {seed}: f32 output {wide:?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_layout_and_output_type_agrees_with_cublas() {
    let gpu = gpu();
    let mut cublas = CublasGemmEx::new(&gpu).unwrap();
    let seed = fresh_seed();
    for (l, layout) in GemmLayout::ALL.into_iter().enumerate() {
        for shape in [verify::odd_shape(layout), GemmShape::new(1000, 1000, 1000)] {
            for variant in Variant::CANDIDATES.into_iter().filter(|v| v.available("bf16", "bf16", layout)) {
                let options = GemmOptions { layout, variant, ..GemmOptions::default() };
                agree_with_cublas::<bf16>(&gpu, &mut cublas, shape, options, seed + l as u64);
                if variant.available("f16", "f16", layout) {
                    agree_with_cublas::<f16>(&gpu, &mut cublas, shape, options, seed + 10 + l as u64);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_arguments_are_rejected_before_launch() {
    let gpu = gpu();
    let stream = gpu.stream();
    let a = stream.clone_htod(&vec![bf16::ONE; 64 * 64]).unwrap();
    let b = stream.clone_htod(&vec![bf16::ONE; 64 * 64]).unwrap();
    let mut d = stream.clone_htod(&vec![bf16::ZERO; 64 * 64]).unwrap();
    let mut d32 = stream.clone_htod(&vec![0f32; 64 * 64]).unwrap();
    let shape = GemmShape::new(64, 64, 64);
    let run = |shape, options, d: &mut CudaSlice<bf16>| gemm::gemm(&gpu, shape, &a, &b, d, options).unwrap_err();

    let err = run(GemmShape::new(64, 64, 32), GemmOptions::default(), &mut d);
    assert!(matches!(err, Error::BadArgument { .. }) && err.to_string().contains("expected 2048"), "{err}");
    let err = run(GemmShape::new(64, 64, 0), GemmOptions::default(), &mut d);
    assert!(err.to_string().contains("at least 1"), "{err}");
    // An f32 D of the wrong length.
    let err = gemm::gemm(&gpu, shape, &a, &b, &mut d32.slice_mut(0..64 * 63), GemmOptions::default()).unwrap_err();
    assert!(matches!(err, Error::BadArgument { .. }) && err.to_string().contains("D has 4032"), "{err}");

    // A and B off 16 bytes are staged (`views_off_16_bytes_are_staged`); D is written in place and must be aligned.
    let mut d_misaligned = d.slice_mut(1..1 + 64 * 32);
    let err = gemm::gemm(
        &gpu,
        GemmShape::new(64, 32, 64),
        &a,
        &b.slice(0..64 * 32),
        &mut d_misaligned,
        GemmOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("aligned"), "{err}");
    // Nothing else ran: D still holds zeros.
    assert!(stream.clone_dtoh(&d).unwrap().iter().all(|v| *v == bf16::ZERO));
    assert!(stream.clone_dtoh(&d32).unwrap().iter().all(|v| *v == 0.0));
}

/// Shapes whose operands' rows are no multiple of 16 bytes in some layout, so that the plan reads them from staged
/// copies (every variant on each layout's all-odd shape is in
/// `bf16_matches_reference_in_every_layout_on_odd_and_edge_shapes`): f32 outputs and f16; M ≤ 16, where the skinny
/// kernel applies to aligned operands; 1500³ (rows 3000 bytes apart); and repeated launches of one plan, each
/// refreshing the copies from new inputs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn operands_tma_cannot_read_in_place_are_staged() {
    let gpu = gpu();
    let shapes = |_| vec![(4, 520, 1003), (333, 777, 265), (1500, 1500, 1500)];
    assert_pass::<bf16, bf16>(&gpu, cases::<bf16, bf16>(&[Variant::Auto], shapes));
    assert_pass::<bf16, f32>(&gpu, cases::<bf16, f32>(&[Variant::Auto], shapes));
    assert_pass::<f16, f16>(&gpu, cases::<f16, f16>(&[Variant::Auto], shapes));
    // The skinny kernel reads A and B in place: where it would apply, staged operands take the tiles.
    let skinny = GemmOptions { skinny: SkinnyChoice::WhereApplies, ..GemmOptions::default() };
    for (shape, staged) in [(GemmShape::new(4, 520, 1003), true), (GemmShape::new(4, 520, 1000), false)] {
        let report = verify::gemm_check::<bf16, bf16>(&gpu, shape, skinny, fresh_seed()).unwrap();
        assert!(report.passed(), "{report:?}");
        assert_eq!(report.kernel.contains("skinny"), !staged, "{shape:?}: {}", report.kernel);
    }
    let seed = fresh_seed();
    for layout in GemmLayout::ALL {
        let options = GemmOptions { layout, ..GemmOptions::default() };
        let reports = verify::gemm_check_launches::<bf16, bf16>(&gpu, GemmShape::new(257, 263, 131), options, seed, 3);
        let reports = reports.unwrap();
        assert!(reports.iter().all(CheckReport::passed), "seed {seed}\n{}", CheckReport::table(&reports));
    }
}

/// A and B as views starting one element into their buffers (2-byte aligned, TMA needs 16) with dimensions TMA could
/// read in place: staged, and the product matches float64 with every element written (D starts poisoned).
#[test]
#[ignore = "needs a CUDA GPU"]
fn views_off_16_bytes_are_staged() {
    let gpu = gpu();
    let stream = gpu.stream();
    let seed = fresh_seed();
    let shape = GemmShape::new(264, 136, 520);
    for (l, layout) in GemmLayout::ALL.into_iter().enumerate() {
        let options = GemmOptions { layout, ..GemmOptions::default() };
        let (a, b, d_in) = verify::gemm_inputs::<bf16, bf16>(shape, &options, seed + l as u64);
        let offset = |v: &[bf16]| stream.clone_htod(&[&[bf16::ONE][..], v].concat()).unwrap();
        let (a_dev, b_dev) = (offset(&a), offset(&b));
        let (a_view, b_view) = (a_dev.slice(1..), b_dev.slice(1..));
        let mut d = stream.clone_htod(&d_in).unwrap();
        gemm::gemm(&gpu, shape, &a_view, &b_view, &mut d, options).unwrap();
        let d = stream.clone_dtoh(&d).unwrap();
        let (positions, want) = verify::gemm_reference(shape, &options, &a, &b, &d_in, seed);
        let got = positions.iter().map(|&(i, j)| d[i * shape.n + j].to_f64());
        let comparison = reference::Comparison::of(got, want);
        assert!(comparison.passes(<bf16 as CheckValue>::gemm_bound(shape.k)), "{layout} seed {seed}: {comparison:?}");
        assert!(d.iter().all(|v| v.to_f64().is_finite()), "{layout} seed {seed}: D not wholly written");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn persistent_grids_fit_the_gpu() {
    let gpu = gpu();
    let stream = gpu.stream();
    let (m, n, k) = (8192, 8192, 64);
    let a = stream.alloc_zeros::<bf16>(m * k).unwrap();
    let b = stream.alloc_zeros::<bf16>(k * n).unwrap();
    for layout in GemmLayout::ALL {
        for variant in Variant::CANDIDATES.into_iter().filter(|v| v.available("bf16", "bf16", layout)) {
            let options = GemmOptions { layout, variant, ..GemmOptions::default() };
            let shape = GemmShape::new(m, n, k);
            let mut plans = vec![GemmPlan::<bf16, bf16>::new(&gpu, shape, options, &a, &b).unwrap().grid()];
            if variant.available("bf16", "f32", layout) {
                plans.push(GemmPlan::<bf16, f32>::new(&gpu, shape, options, &a, &b).unwrap().grid());
            }
            for (blocks, cluster) in plans {
                println!(
                    "{} {variant:?}: {blocks} blocks in clusters of {cluster} on {} SMs",
                    options.layout,
                    gpu.sm_count()
                );
                assert!(blocks > 0 && blocks <= gpu.sm_count() && blocks % cluster == 0);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tuning_times_every_candidate_and_picks_the_fastest() {
    let gpu = gpu();
    // Unblocked, as in tests/attention.rs's bench test: other tests of this binary share the context.
    let mode = oxtile::bench::TimingMode::Unblocked;
    let timing = oxtile::bench::TimingConfig { warmup: 2, runs: 5, mode, ..Default::default() };
    let tt = GemmOptions { layout: GemmLayout::Tt, ..GemmOptions::default() };
    let tuning =
        oxtile::tune::tune_gemm::<bf16, f32>(&gpu, GemmShape::new(1024, 1024, 1024), tt, &timing, 2, fresh_seed())
            .unwrap();
    // bf16 → f32: the three cooperative configurations (the ping-pong kernels write same-type outputs only).
    let available = Variant::CANDIDATES.iter().filter(|v| v.available("bf16", "f32", tt.layout));
    assert_eq!(tuning.results.len(), available.count());
    assert!(tuning.results.iter().all(|(v, _)| !matches!(v, Variant::PingPong | Variant::PingPongCluster2)));
    let times: Vec<f64> = tuning.results.iter().map(|(_, stats)| stats.as_ref().unwrap().median_ms).collect();
    assert!(times.iter().all(|t| t.is_finite() && *t > 0.0), "{times:?}");
    let best = tuning.best().unwrap();
    let best_time = tuning.results.iter().find(|(v, _)| *v == best).unwrap().1.as_ref().unwrap().median_ms;
    assert!(times.iter().all(|t| best_time <= *t));

    // bf16 → bf16 in tt has every candidate, the ping-pong kernels and the pairs sharing K-major A included.
    let tuning =
        oxtile::tune::tune_gemm::<bf16, bf16>(&gpu, GemmShape::new(1024, 1024, 1024), tt, &timing, 2, fresh_seed())
            .unwrap();
    let tuned: Vec<Variant> = tuning.results.iter().map(|(v, _)| *v).collect();
    assert_eq!(tuned, Variant::CANDIDATES);
    assert!(tuning.results.iter().all(|(_, stats)| stats.is_ok()));
}
