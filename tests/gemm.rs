//! The Hopper GEMM on the GPU against float64 references, and its argument checks.

use half::{bf16, f16};
use oxtile::ops::gemm::{self, GemmOptions, GemmShape, Order, Variant};
use oxtile::reference::fresh_seed;
use oxtile::verify::{self, CheckElement, CheckReport, GEMM_SHAPES};
use oxtile::{Error, Gpu};

fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
}

fn assert_pass<T: CheckElement>(gpu: &Gpu, shapes: &[(usize, usize, usize)], options: GemmOptions) {
    let seed = fresh_seed();
    let reports: Vec<CheckReport> = shapes
        .iter()
        .enumerate()
        .map(|(i, &(m, n, k))| verify::gemm_check::<T>(gpu, GemmShape::new(m, n, k), options, seed + i as u64).unwrap())
        .collect();
    let table = CheckReport::table(&reports);
    println!("{table}");
    assert!(reports.iter().all(CheckReport::passed), "seed {seed}\n{table}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_tn_matches_reference_on_odd_and_edge_shapes() {
    let gpu = gpu();
    for variant in [Variant::Wide, Variant::WideCluster2, Variant::WideCluster2Unshared, Variant::Narrow] {
        assert_pass::<bf16>(&gpu, GEMM_SHAPES, GemmOptions { variant, ..GemmOptions::default() });
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_tn_matches_reference() {
    let gpu = gpu();
    for variant in [Variant::Wide, Variant::WideCluster2, Variant::Narrow] {
        let options = GemmOptions { variant, ..GemmOptions::default() };
        assert_pass::<f16>(&gpu, &[(1, 1, 8), (1000, 1000, 1000), (257, 129, 136)], options);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn alpha_and_beta_scale_product_and_existing_output() {
    let gpu = gpu();
    for (alpha, beta) in [(2.0, 0.0), (1.0, 1.0), (-0.5, 0.75)] {
        for variant in [Variant::Wide, Variant::WideCluster2, Variant::Narrow] {
            assert_pass::<bf16>(
                &gpu,
                &[(333, 777, 264)],
                GemmOptions { alpha, beta, variant, ..GemmOptions::default() },
            );
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
    let shape = GemmShape::new(64, 64, 64);
    let run = |shape, options, d: &mut _| gemm::gemm(&gpu, shape, &a, &b, d, options).unwrap_err();

    let err = run(GemmShape::new(64, 64, 32), GemmOptions::default(), &mut d);
    assert!(matches!(err, Error::BadArgument { .. }) && err.to_string().contains("expected 2048"), "{err}");
    let err = run(GemmShape::new(64, 64, 0), GemmOptions::default(), &mut d);
    assert!(err.to_string().contains("at least 1"), "{err}");
    let nn = GemmOptions { b_order: Order::RowMajor, ..GemmOptions::default() };
    assert!(matches!(run(shape, nn, &mut d), Error::Unsupported { .. }));
    let (a_odd, b_odd) = (a.slice(0..63 * 63), b.slice(0..63 * 63));
    let err = gemm::gemm(
        &gpu,
        GemmShape::new(63, 63, 63),
        &a_odd,
        &b_odd,
        &mut d.slice_mut(0..63 * 63),
        GemmOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("multiple of 8"), "{err}");
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
    // Nothing ran: D still holds zeros.
    assert!(stream.clone_dtoh(&d).unwrap().iter().all(|v| *v == bf16::ZERO));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn persistent_grids_fit_the_gpu() {
    let gpu = gpu();
    let stream = gpu.stream();
    let (m, n, k) = (8192, 8192, 64);
    let a = stream.alloc_zeros::<bf16>(m * k).unwrap();
    let b = stream.alloc_zeros::<bf16>(k * n).unwrap();
    for variant in [Variant::Wide, Variant::WideCluster2, Variant::Narrow] {
        let options = GemmOptions { variant, ..GemmOptions::default() };
        let plan = gemm::GemmPlan::new(&gpu, GemmShape::new(m, n, k), options, &a, &b).unwrap();
        let (blocks, cluster) = plan.grid();
        println!("{variant:?}: {} blocks in clusters of {cluster} on {} SMs", blocks, gpu.sm_count());
        assert!(blocks > 0 && blocks <= gpu.sm_count() && blocks % cluster == 0);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tuning_times_every_candidate_and_picks_the_fastest() {
    let gpu = gpu();
    let timing = oxtile::bench::TimingConfig { warmup: 2, runs: 5, ..Default::default() };
    let tuning =
        oxtile::tune::tune_gemm::<bf16>(&gpu, GemmShape::new(1024, 1024, 1024), &timing, fresh_seed()).unwrap();
    assert_eq!(tuning.results.len(), Variant::CANDIDATES.len());
    let times: Vec<f64> = tuning.results.iter().map(|(_, stats)| stats.as_ref().unwrap().median_ms).collect();
    assert!(times.iter().all(|t| t.is_finite() && *t > 0.0), "{times:?}");
    let best = tuning.best().unwrap();
    let best_time = tuning.results.iter().find(|(v, _)| *v == best).unwrap().1.as_ref().unwrap().median_ms;
    assert!(times.iter().all(|t| best_time <= *t));
}
