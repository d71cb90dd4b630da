//! The benchmark harness on the GPU: the cuBLAS peers against a float64 CPU reference in every layout and type,
//! the CUDA-event timer and its stream hold, and the GEMM and memory benchmarks end to end on small problems.

use std::ops::Deref;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use half::{bf16, f16};
use oxtile::Gpu;
use oxtile::bench::contenders::{self, BASELINE};
use oxtile::bench::copy;
use oxtile::bench::device::block_placement;
use oxtile::bench::gemm::{self, BenchElement, GemmBenchConfig, GemmContender, GemmProblem, Operands};
use oxtile::bench::hold::{HoldOutcome, StreamHold};
use oxtile::bench::inputs::InputPool;
use oxtile::bench::peers::cublas::{CUBLAS_GEMM_EX, CUBLASLT, CUBLASLT_TUNED, CublasGemmEx, CublasLt};
use oxtile::bench::suite::GemmShape;
use oxtile::bench::timing::{GpuClock, TimingConfig, TimingMode, time_gpu};
use oxtile::bench::{DeviceInfo, report};
use oxtile::ops::elementwise;
use oxtile::reference::{self, fresh_seed};
use oxtile::runtime::ClusterShape;
use oxtile::types::{Dtype, GemmLayout};

/// The GPU, for one test at a time. The tests share the process's context, and a driver call that waits for the GPU
/// (an allocation, freeing pinned memory, a cuBLAS handle) can stall another thread's launches while that thread holds
/// its stream: the held measurement then times out, as it did on the H200 with 4 test threads. The harness itself is
/// single-threaded (`oxtile bench`, criterion), so the tests run as it does.
struct SerialGpu {
    gpu: Gpu,
    _turn: MutexGuard<'static, ()>,
}

impl Deref for SerialGpu {
    type Target = Gpu;
    fn deref(&self) -> &Gpu {
        &self.gpu
    }
}

fn gpu() -> SerialGpu {
    static TURN: Mutex<()> = Mutex::new(());
    let turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    SerialGpu { gpu: Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}")), _turn: turn }
}

/// Set by gpu-run.sh under compute-sanitizer, where kernels run many times slower: timing asserts are skipped.
fn under_sanitizer() -> bool {
    std::env::var_os("OXTILE_UNDER_SANITIZER").is_some()
}

/// Runs `contender` once on fresh normal inputs of `problem` (output poisoned first) and returns the relative
/// errors against the float64 reference: (‖out − ref‖ / ‖ref‖, max |out − ref| / max |ref|).
fn run_against_reference<T: BenchElement>(
    gpu: &Gpu,
    contender: &mut dyn GemmContender,
    problem: &GemmProblem,
    seed: u64,
) -> (f64, f64) {
    let stream = gpu.stream();
    let a: Vec<T> = reference::randn(problem.a_len(), 1.0, seed).into_iter().map(T::from_f32).collect();
    let b: Vec<T> = reference::randn(problem.b_len(), 1.0, seed + 1).into_iter().map(T::from_f32).collect();
    let a_dev = stream.clone_htod(&a).unwrap();
    let b_dev = stream.clone_htod(&b).unwrap();
    let poison = vec![T::from_f32(f32::NAN); problem.c_len()];
    let mut c_dev = stream.clone_htod(&poison).unwrap();
    contender.prepare(gpu, problem).unwrap();
    // As the harness does; cublasLt-tuned times its candidates here, writing C: poisoned again after.
    contender.bind(gpu, problem, T::operands(&a_dev, &b_dev, &mut c_dev)).unwrap();
    stream.memcpy_htod(&poison, &mut c_dev).unwrap();
    contender.launch(gpu, problem, T::operands(&a_dev, &b_dev, &mut c_dev)).unwrap();
    let out: Vec<f32> = stream.clone_dtoh(&c_dev).unwrap().into_iter().map(|v| v.to_f64() as f32).collect();
    let widen = |v: &[T]| v.iter().map(|&x| x.to_f64()).collect::<Vec<f64>>();
    let want = gemm::reference_f64(problem, &widen(&a), &widen(&b));
    assert!(
        out.iter().all(|v| v.is_finite()),
        "{problem}: {} not finite",
        out.iter().filter(|v| !v.is_finite()).count()
    );
    let (mut err2, mut ref2, mut max_err, mut max_ref) = (0f64, 0f64, 0f64, 0f64);
    for (&o, &w) in out.iter().zip(&want) {
        let e = o as f64 - w;
        err2 += e * e;
        ref2 += w * w;
        max_err = max_err.max(e.abs());
        max_ref = max_ref.max(w.abs());
    }
    ((err2 / ref2).sqrt(), max_err / max_ref)
}

/// Odd sizes, M ≠ N ≠ K: a swapped dimension, leading dimension or transpose cannot pass by accident.
const ODD: GemmShape = GemmShape::new(129, 257, 65);

fn check_peer_in_every_layout(make: impl Fn(&Gpu) -> Box<dyn GemmContender>) {
    let gpu = gpu();
    let mut contender = make(&gpu);
    let seed = fresh_seed();
    for dtype in [Dtype::Bf16, Dtype::F16] {
        for layout in GemmLayout::ALL {
            let problem = GemmProblem { shape: ODD, dtype, layout };
            let (norm, max) = match dtype {
                Dtype::Bf16 => run_against_reference::<bf16>(&gpu, contender.as_mut(), &problem, seed),
                Dtype::F16 => run_against_reference::<f16>(&gpu, contender.as_mut(), &problem, seed),
            };
            // One rounding of each output element to the output type, fp32 accumulation.
            let bound = match dtype {
                Dtype::Bf16 => 2f64.powi(-8),
                Dtype::F16 => 2f64.powi(-11),
            };
            assert!(
                norm < bound && max < 2.0 * bound,
                "{} {problem}: norm {norm:.2e}, max {max:.2e}, seed {seed}",
                contender.name()
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_matches_float64_in_every_layout_and_type() {
    check_peer_in_every_layout(|gpu| Box::new(CublasLt::new(gpu).unwrap()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn autotuned_cublaslt_matches_float64_in_every_layout_and_type() {
    check_peer_in_every_layout(|gpu| Box::new(CublasLt::tuned(gpu).unwrap()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cublas_gemm_ex_matches_float64_in_every_layout_and_type() {
    check_peer_in_every_layout(|gpu| Box::new(CublasGemmEx::new(gpu).unwrap()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn operands_of_the_wrong_length_or_type_are_refused() {
    let gpu = gpu();
    let stream = gpu.stream();
    let problem = GemmProblem { shape: GemmShape::new(64, 64, 64), dtype: Dtype::Bf16, layout: GemmLayout::Tt };
    let a = stream.alloc_zeros::<bf16>(64 * 64).unwrap();
    let short = stream.alloc_zeros::<bf16>(64 * 63).unwrap();
    let mut c = stream.alloc_zeros::<bf16>(64 * 64).unwrap();
    for mut contender in contenders::peer_contenders(&gpu).unwrap() {
        let error = contender.launch(&gpu, &problem, Operands::Bf16 { a: &a, b: &short, c: &mut c }).unwrap_err();
        assert!(matches!(error, oxtile::Error::BadArgument { .. }), "{error}");
        let a16 = stream.alloc_zeros::<f16>(64 * 64).unwrap();
        let mut c16 = stream.alloc_zeros::<f16>(64 * 64).unwrap();
        let error = contender.launch(&gpu, &problem, Operands::F16 { a: &a16, b: &a16, c: &mut c16 }).unwrap_err();
        assert!(matches!(error, oxtile::Error::BadArgument { .. }), "{error}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn timer_gives_positive_finite_times_in_every_mode() {
    let gpu = gpu();
    let stream = gpu.stream();
    let n = 1 << 24;
    let x = stream.clone_htod(&reference::randn(n, 1.0, 1)).unwrap();
    let mut y = stream.clone_htod(&reference::randn(n, 1.0, 2)).unwrap();
    for mode in [TimingMode::Queued, TimingMode::Unblocked, TimingMode::Synced, TimingMode::Batched] {
        let mut launches = 0;
        let config = TimingConfig { warmup: 3, runs: 11, mode, ..TimingConfig::default() };
        let stats = time_gpu(&gpu, &config, |_| {
            launches += 1;
            elementwise::axpy_f32(&gpu, 0.5, &x, &mut y)
        })
        .unwrap();
        assert_eq!(launches, 14);
        assert_eq!(stats.runs, 11);
        // 3 × 64 MiB moved: far more than a microsecond, far less than a second.
        assert!(stats.min_ms > 1e-3 && stats.max_ms < 1e3, "{mode:?}: {stats:?}");
        assert!(stats.min_ms <= stats.p10_ms && stats.p10_ms <= stats.median_ms && stats.median_ms <= stats.p90_ms);
    }
    let clock = GpuClock::new(&gpu);
    let start = clock.start().unwrap();
    elementwise::axpy_f32(&gpu, 0.5, &x, &mut y).unwrap();
    let ms = clock.stop_ms(&start).unwrap();
    assert!(ms.is_finite() && ms > 0.0, "{ms}");
    let error = time_gpu(&gpu, &TimingConfig { runs: 0, ..TimingConfig::default() }, |_| Ok(())).unwrap_err();
    assert!(matches!(error, oxtile::Error::BadArgument { .. }));
}

/// `settle` keeps launching untimed until the GPU has run that long, in every mode; the clock meter (NVML, present
/// wherever the driver is) samples the SM clock as the timed launches run.
#[test]
#[ignore = "needs a CUDA GPU"]
fn settling_runs_the_kernel_that_long_and_the_meter_reads_the_clock() {
    use oxtile::bench::clocks::ClockMeter;
    use oxtile::bench::timing::GpuTimer;
    let gpu = gpu();
    let stream = gpu.stream();
    // 3 × 64 MiB moved per launch: about 0.1 ms.
    let n = 1 << 24;
    let x = stream.clone_htod(&reference::randn(n, 1.0, 1)).unwrap();
    let mut y = stream.clone_htod(&reference::randn(n, 1.0, 2)).unwrap();
    let meter = ClockMeter::open(&gpu).unwrap_or_else(|reason| panic!("no clock meter on a CUDA machine: {reason}"));
    for mode in [TimingMode::Queued, TimingMode::Unblocked] {
        let settle = Duration::from_millis(60);
        let config = TimingConfig { warmup: 2, runs: 40, mode, settle, ..TimingConfig::default() };
        let mut launches = 0;
        let mut timer = GpuTimer::new(&gpu, &config).unwrap();
        let started = std::time::Instant::now();
        let (samples, clock) = timer
            .time(&gpu, config.warmup, config.runs, Some(&meter), |_| {
                launches += 1;
                elementwise::axpy_f32(&gpu, 0.5, &x, &mut y)
            })
            .unwrap();
        let wall = started.elapsed();
        assert_eq!(samples.len(), 40);
        let median = oxtile::bench::Stats::from_samples(&samples).unwrap().median_ms;
        // The settling launches alone fill 60 ms of GPU time.
        let settling = launches - 42;
        assert!(wall >= settle, "{mode:?}: {wall:?}");
        assert!(settling as f64 * median >= 60.0 * 0.8, "{mode:?}: {settling} settling launches of {median} ms");
        // One sample per batch: 40 runs are two held batches, or one unheld.
        let clock = clock.expect("clock samples with a meter");
        let batches = if mode == TimingMode::Queued { 2 } else { 1 };
        assert_eq!(clock.sm_mhz.len(), batches, "{mode:?}");
        let mhz = clock.median_sm_mhz().unwrap();
        assert!((100.0..5000.0).contains(&mhz), "{mhz} MHz");
        println!("{mode:?}: {settling} settling launches, then timed at {mhz} MHz");
    }
}

/// A host that queues a kernel of a few microseconds 200 µs apart (as a slow host path would): without the hold,
/// each sample is the host's 200 µs; behind the hold, the kernels run back to back and each sample is the kernel's.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_stream_hold_keeps_a_slow_host_out_of_the_samples() {
    let gpu = gpu();
    let stream = gpu.stream();
    // 64k f32: 768 KB moved, a few microseconds.
    let n = 1 << 16;
    let x = stream.clone_htod(&reference::randn(n, 1.0, 1)).unwrap();
    let mut y = stream.clone_htod(&reference::randn(n, 1.0, 2)).unwrap();
    let mut slow_axpy = |_: usize| {
        std::thread::sleep(Duration::from_micros(200));
        elementwise::axpy_f32(&gpu, 0.5, &x, &mut y)
    };
    // 40 runs: two batches of 20 behind two holds.
    let config = |mode| TimingConfig { warmup: 3, runs: 40, mode, ..TimingConfig::default() };
    let held = time_gpu(&gpu, &config(TimingMode::Queued), &mut slow_axpy)
        .unwrap_or_else(|error| panic!("the held measurement failed: {error}"));
    let batched = time_gpu(&gpu, &config(TimingMode::Batched), &mut slow_axpy)
        .unwrap_or_else(|error| panic!("the batched measurement failed: {error}"));
    let unblocked = time_gpu(&gpu, &config(TimingMode::Unblocked), &mut slow_axpy).unwrap();
    println!(
        "axpy_f32 of {n} elements queued 200 µs apart: median {:.1} µs held, {:.1} µs held in batches, {:.1} µs \
         unblocked",
        held.median_ms * 1e3,
        batched.median_ms * 1e3,
        unblocked.median_ms * 1e3
    );
    assert_eq!((held.runs, batched.runs), (40, 40));
    if under_sanitizer() {
        return;
    }
    assert!(held.median_ms < 0.05, "held: {held:?}");
    // No event between the launches: the batch's time per launch is at most the kernel's with its own events.
    assert!(batched.median_ms < 0.05 && batched.median_ms <= held.median_ms * 1.1, "batched: {batched:?}");
    // The control: without the hold the host's pace shows, so the test above means something.
    assert!(unblocked.median_ms > 0.15, "unblocked: {unblocked:?}");
}

/// A hold nobody releases ends by itself at its timeout and says so; a timer whose host is slower than the timeout
/// fails its measurement with that error instead of returning the host's pace as GPU time.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_hold_that_times_out_is_an_error() {
    let gpu = gpu();
    let hold = StreamHold::new(&gpu).unwrap();
    // The flag is never written: the kernel has to give up on its own.
    std::mem::forget(hold.hold(&gpu, Duration::from_millis(2)).unwrap());
    gpu.stream().synchronize().unwrap();
    assert_eq!(hold.outcome(), HoldOutcome::TimedOut);
    let error = hold.outcome().check(1, Duration::from_millis(2)).unwrap_err();
    assert!(matches!(error, oxtile::Error::Timing(_)), "{error}");
    // Released in time, the same hold reports so.
    hold.hold(&gpu, Duration::from_secs(1)).unwrap().release();
    gpu.stream().synchronize().unwrap();
    assert_eq!(hold.outcome(), HoldOutcome::Released);

    let stream = gpu.stream();
    let x = stream.clone_htod(&reference::randn(1024, 1.0, 1)).unwrap();
    let mut y = stream.clone_htod(&reference::randn(1024, 1.0, 2)).unwrap();
    let config = TimingConfig { warmup: 1, runs: 4, hold_timeout: Duration::from_millis(2), ..TimingConfig::default() };
    let error = time_gpu(&gpu, &config, |_| {
        std::thread::sleep(Duration::from_millis(10));
        elementwise::axpy_f32(&gpu, 0.5, &x, &mut y)
    })
    .unwrap_err();
    assert!(matches!(error, oxtile::Error::Timing(_)) && error.to_string().contains("timed out"), "{error}");
    // The stream is usable afterwards.
    elementwise::axpy_f32(&gpu, 0.5, &x, &mut y).unwrap();
    stream.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemm_bench_times_and_cross_checks_the_peers() {
    let gpu = gpu();
    let info = DeviceInfo::query(&gpu).unwrap();
    assert!(info.l2_bytes > 0 && info.sm_count > 0, "{info:?}");
    let pool = InputPool::new(fresh_seed());
    let mut contenders = contenders::peer_contenders(&gpu).unwrap();
    let config = GemmBenchConfig {
        timing: TimingConfig { warmup: 2, runs: 5, ..TimingConfig::default() },
        ..Default::default()
    };
    for layout in GemmLayout::ALL {
        let problem = GemmProblem { shape: GemmShape::new(256, 384, 320), dtype: Dtype::Bf16, layout };
        let mut steps = Vec::new();
        let rows = gemm::bench_gemm(&gpu, &info, &pool, &problem, &mut contenders, &config, &mut |s: &str| {
            steps.push(s.to_string())
        })
        .unwrap();
        // All checked, then timed taking turns: a run each per round, each round starting one contender later.
        let peers = [CUBLASLT, CUBLASLT_TUNED, CUBLAS_GEMM_EX];
        assert_eq!(steps.len(), peers.len() * (1 + config.rounds), "{steps:?}");
        let want = peers.iter().map(|p| format!("{p}: check")).chain((1..=config.rounds).flat_map(|round| {
            let first = (round - 1) % peers.len();
            (0..peers.len())
                .map(move |i| format!("{}: round {round}/{}", peers[(first + i) % peers.len()], config.rounds))
        }));
        assert!(steps.iter().zip(want).all(|(step, want)| step.ends_with(&want)), "{steps:?}");
        assert_eq!(rows.len(), peers.len());
        assert!(rows.iter().all(|r| r.runs == Some(5)), "{rows:?}");
        assert_eq!(rows[0].implementation, BASELINE);
        assert_eq!(rows[0].check.as_deref(), Some("ref"), "{rows:?}");
        for row in &rows[1..] {
            assert_eq!(row.check.as_deref(), Some("ok"), "{rows:?}");
            assert!(row.max_rel_err.unwrap() < Dtype::Bf16.check_bound());
        }
        // Each cuBLASLt row says which of the heuristic's algorithms ran.
        assert!(rows[0].config.as_deref().is_some_and(|c| c.starts_with("algorithm 1 of 1:")), "{rows:?}");
        assert!(rows[1].config.as_deref().is_some_and(|c| c.starts_with("algorithm ")), "{rows:?}");
        assert_eq!(rows[2].config, None);
        for row in &rows {
            assert!(row.error.is_none(), "{row:?}");
            assert!(row.tflops.unwrap() > 0.0 && row.ms.unwrap() > 0.0, "{row:?}");
            // 256×384 + 320×384 + 256×320 bf16 ≈ 0.6 MB a set: many sets to exceed three L2s.
            assert!(row.sets.unwrap() * problem.bytes_per_set() > 3 * info.l2_bytes, "{row:?}");
        }
        let mut rows = rows;
        report::fill_ratios(&mut rows, BASELINE);
        assert_eq!(rows[0].ratio, Some(1.0));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn memory_bench_measures_every_kernel_and_the_copy() {
    let gpu = gpu();
    let info = DeviceInfo::query(&gpu).unwrap();
    let pool = InputPool::with_len(1 << 20, fresh_seed());
    let timing = TimingConfig { warmup: 2, runs: 5, ..TimingConfig::default() };
    let mut rows = copy::bench_memory(&gpu, &info, &pool, 16 << 20, &timing, &mut |_: &str| {}).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r.implementation.as_str()).collect();
    assert_eq!(names, [copy::BASELINE, "axpy_f32", "axpy_bf16", "exp2_f32"]);
    for row in &rows {
        assert!(row.error.is_none(), "{row:?}");
        // GB/s is the row's bytes over its median time, in those units.
        let (gbps, work, ms) = (row.gbps.unwrap(), row.work.unwrap(), row.ms.unwrap());
        assert!(gbps > 0.0 && (gbps - work / (ms * 1e6)).abs() <= 1e-5 * gbps, "{row:?}");
        // A floor that catches a unit slip of a thousand; compute-sanitizer's instrumentation runs below it.
        assert!(under_sanitizer() || gbps > 1.0, "{row:?}");
    }
    report::fill_ratios(&mut rows, copy::BASELINE);
    assert!(rows.iter().all(|r| r.ratio.is_some()));
    assert!(copy::bench_memory(&gpu, &info, &pool, 1000, &timing, &mut |_: &str| {}).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn oxtile_gemm_is_timed_and_cross_checked_in_every_layout() {
    let gpu = gpu();
    let info = DeviceInfo::query(&gpu).unwrap();
    let pool = InputPool::new(fresh_seed());
    let mut contenders = contenders::peer_contenders(&gpu).unwrap();
    contenders.extend(contenders::oxtile_contenders(&gpu).unwrap());
    let config = GemmBenchConfig {
        timing: TimingConfig { warmup: 2, runs: 5, ..TimingConfig::default() },
        ..Default::default()
    };
    for dtype in [Dtype::Bf16, Dtype::F16] {
        for layout in GemmLayout::ALL {
            // Partial tiles in M and N; every dimension a multiple of 8, so TMA reads every layout in place.
            let problem = GemmProblem { shape: GemmShape::new(296, 520, 256), dtype, layout };
            let rows =
                gemm::bench_gemm(&gpu, &info, &pool, &problem, &mut contenders, &config, &mut |_: &str| {}).unwrap();
            assert_eq!(rows[0].check.as_deref(), Some("ref"), "{problem}: {:?}", rows[0]);
            let ours: Vec<_> = rows.iter().filter(|r| r.kind.as_deref() == Some("oxtile")).collect();
            assert!(ours.iter().any(|r| r.implementation == "oxtile"), "{problem}: {rows:?}");
            for row in ours {
                // The multicast ablation exists for bf16 tn only; the cluster kernels but the wide one, stream-K on
                // 64×128 tiles, the 128×128 and the 128×192 tiles (stream-K or not) and the 192×192 tile for bf16
                // only; elsewhere their rows say so.
                let absent_here = match row.implementation.as_str() {
                    "oxtile-wide-c2-unshared" => (dtype, layout) != (Dtype::Bf16, GemmLayout::Tn),
                    // Pairs sharing K-major A: bf16 in tn and tt only.
                    "oxtile-square-192-c2" => {
                        dtype != Dtype::Bf16 || !matches!(layout, GemmLayout::Tn | GemmLayout::Tt)
                    }
                    "oxtile-pingpong-c2" | "oxtile-streamk-c2" | "oxtile-narrow-c2" | "oxtile-flat-sk"
                    | "oxtile-square" | "oxtile-square-c2" | "oxtile-square-sk" | "oxtile-wide-192"
                    | "oxtile-wide-192-sk" | "oxtile-square-192" | "oxtile-flat-64" | "oxtile-flat-64-sk" => {
                        dtype != Dtype::Bf16
                    }
                    // M = 296: more rows than the skinny kernel takes.
                    "oxtile-skinny" => true,
                    _ => false,
                };
                if absent_here {
                    assert!(row.error.as_deref().is_some_and(|e| e.starts_with("unsupported")), "{problem}: {row:?}");
                    continue;
                }
                assert!(row.error.is_none(), "{problem}: {row:?}");
                assert_eq!(row.check.as_deref(), Some("ok"), "{problem}: {row:?}");
                assert!(row.tflops.unwrap() > 0.0);
                // The kernel that ran, by name.
                assert!(
                    row.config.as_deref().is_some_and(|k| k.starts_with("gemm_") && k.ends_with("_sm90")),
                    "{row:?}"
                );
            }
        }
    }
    // A decode-sized problem: the skinny contender runs the skinny kernel, cross-checked like the others.
    for layout in [GemmLayout::Tn, GemmLayout::Tt] {
        let problem = GemmProblem { shape: GemmShape::new(4, 520, 256), dtype: Dtype::Bf16, layout };
        let rows = gemm::bench_gemm(&gpu, &info, &pool, &problem, &mut contenders, &config, &mut |_: &str| {}).unwrap();
        let skinny = rows.iter().find(|r| r.implementation == "oxtile-skinny").expect("an oxtile-skinny row");
        assert_eq!(skinny.check.as_deref(), Some("ok"), "{problem}: {skinny:?}");
        assert!(skinny.config.as_deref().is_some_and(|k| k.contains("skinny")), "{problem}: {skinny:?}");
    }
    // A column-major A of M = 255: rows 510 bytes apart, which TMA cannot read in place. The plan stages A, and its
    // row is timed and checked like any other.
    let other = GemmProblem { shape: GemmShape::new(255, 256, 256), dtype: Dtype::Bf16, layout: GemmLayout::Nt };
    let rows = gemm::bench_gemm(&gpu, &info, &pool, &other, &mut contenders, &config, &mut |_: &str| {}).unwrap();
    let ours = rows.iter().find(|r| r.implementation == "oxtile").unwrap();
    assert!(ours.error.is_none() && ours.check.as_deref() == Some("ok"), "{ours:?}");
    assert_eq!(rows[0].check.as_deref(), Some("ref"), "{:?}", rows[0]);
}

/// cuBLASLt computing the wrong product (B's storage read as the other order): a fast wrong kernel.
struct Wrong(CublasLt);

impl GemmContender for Wrong {
    fn name(&self) -> &str {
        "wrong"
    }

    fn is_peer(&self) -> bool {
        false
    }

    fn launch(&mut self, gpu: &Gpu, problem: &GemmProblem, operands: Operands<'_>) -> oxtile::Result<()> {
        let swapped = if problem.layout == GemmLayout::Tt { GemmLayout::Tn } else { GemmLayout::Tt };
        self.0.launch(gpu, &GemmProblem { layout: swapped, ..*problem }, operands)
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_wrong_result_fails_the_cross_check() {
    let gpu = gpu();
    let info = DeviceInfo::query(&gpu).unwrap();
    let pool = InputPool::new(fresh_seed());
    let mut contenders: Vec<Box<dyn GemmContender>> =
        vec![Box::new(CublasLt::new(&gpu).unwrap()), Box::new(Wrong(CublasLt::new(&gpu).unwrap()))];
    let config = GemmBenchConfig {
        timing: TimingConfig { warmup: 1, runs: 3, ..TimingConfig::default() },
        ..Default::default()
    };
    let problem = GemmProblem { shape: GemmShape::new(512, 512, 512), dtype: Dtype::Bf16, layout: GemmLayout::Tt };
    let mut rows = gemm::bench_gemm(&gpu, &info, &pool, &problem, &mut contenders, &config, &mut |_: &str| {}).unwrap();
    assert_eq!(rows[0].check.as_deref(), Some("ref"));
    assert_eq!(rows[1].check.as_deref(), Some("FAIL"), "{:?}", rows[1]);
    assert!(rows[1].max_rel_err.unwrap() > 0.1 && rows[1].failed_check());
    // The table says so.
    report::fill_ratios(&mut rows, BASELINE);
    assert!(report::render_table(&rows, BASELINE).contains("FAIL"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn block_placement_puts_one_block_on_each_sm() {
    let gpu = gpu();
    let sms = gpu.sm_count() as usize;
    let distinct = |mut sm: Vec<u32>| {
        sm.sort_unstable();
        sm.dedup();
        sm.len()
    };
    for shape in [ClusterShape::Plain, ClusterShape::Clusters] {
        let placement = block_placement(&gpu, 1, shape).unwrap();
        assert_eq!(placement.len(), sms, "{shape:?}");
        assert_eq!(distinct(placement), sms, "{shape:?}: two blocks of a one-block-per-SM grid on one SM");
    }
    // Whole clusters of two, as many as fit at once, every block on its own SM.
    let pairs = block_placement(&gpu, 2, ClusterShape::Clusters).unwrap();
    assert!(pairs.len() >= 2 && pairs.len().is_multiple_of(2) && pairs.len() <= sms, "{} blocks", pairs.len());
    assert_eq!(distinct(pairs.clone()), pairs.len());
    // A plain grid of clusters is refused before any launch.
    assert!(block_placement(&gpu, 2, ClusterShape::Plain).is_err());
}
