//! The GEMM benchmark's toolbox: problems, the [`GemmContender`] interface every implementation (ours and the peers)
//! plugs into, input sets rotated past the L2, the output cross-check, and the rows it all produces. The contenders
//! themselves are listed in [`super::contenders`].
//!
//! C (M×N) = A (M×K) · B (K×N), C always row-major, as in torch and `oxtile::ops::gemm`; A and B are stored as the
//! problem's [`GemmLayout`] says. `tt` is torch's `a @ b` (what torch_reference.py times).
//!
//! Every contender's output on input set 0 is compared with that of the first contender that ran correctly
//! (cuBLASLt, unless it failed), within [`Dtype::check_bound`] ([`super::outputs`]). The output is poisoned (all
//! bits set: NaN) before that run, so an element left unwritten shows up as not finite.

use cudarc::driver::CudaSlice;
use half::{bf16, f16};

use super::device::{DATASHEET_DENSE_BF16_TFLOPS, DeviceInfo, rotation_sets};
use super::inputs::InputPool;
use super::outputs::{OutputDiff, compare_outputs, poison};
use super::report::{BenchObserver, Row, TurnRecord};
use super::timing::{
    DEFAULT_HOLD_TIMEOUT, DEFAULT_ROUNDS, TimingConfig, TurnEvent, effective_rounds, time_gpu, time_in_rounds,
};
use crate::error::{Error, Result};
use crate::runtime::Gpu;
use crate::types::{Dtype, GemmElement, GemmLayout, GemmShape, Order};
use crate::verify::CheckElement;

/// How the tuned contenders (`cublasLt-tuned`, `oxtile-tuned`) time each candidate: a few launches queued back to
/// back, in [`TUNING_ROUNDS`] rounds over the candidates so none is timed only on a cooler or hotter chip than the
/// others; a candidate's time is the lower of its medians.
const TUNING: TimingConfig = TimingConfig {
    warmup: 2,
    runs: 8,
    mode: super::timing::TimingMode::Unblocked,
    hold_timeout: DEFAULT_HOLD_TIMEOUT,
    settle: std::time::Duration::ZERO,
    operations_per_launch: 1,
};
const TUNING_ROUNDS: usize = 2;

/// The fastest of `candidates` candidates, timing `launch(candidate)` as described at [`TUNING`]; a candidate whose
/// launches fail is left out. `None` when none ran.
pub fn fastest_candidate(gpu: &Gpu, candidates: usize, mut launch: impl FnMut(usize) -> Result<()>) -> Option<usize> {
    let mut best = vec![f64::INFINITY; candidates];
    for _ in 0..TUNING_ROUNDS {
        for (candidate, best) in best.iter_mut().enumerate() {
            if let Ok(stats) = time_gpu(gpu, &TUNING, |_| launch(candidate)) {
                *best = best.min(stats.median_ms);
            }
        }
    }
    (0..candidates).filter(|&i| best[i].is_finite()).min_by(|&i, &j| best[i].total_cmp(&best[j]))
}

/// One GEMM to benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmProblem {
    pub shape: GemmShape,
    pub dtype: Dtype,
    pub layout: GemmLayout,
}

impl GemmProblem {
    /// Rows and columns of A as stored (row-major).
    pub fn a_dims(&self) -> (usize, usize) {
        let GemmShape { m, k, .. } = self.shape;
        if self.layout.a_order() == Order::ColMajor { (k, m) } else { (m, k) }
    }

    /// Rows and columns of B as stored (row-major).
    pub fn b_dims(&self) -> (usize, usize) {
        let GemmShape { n, k, .. } = self.shape;
        if self.layout.b_order() == Order::ColMajor { (n, k) } else { (k, n) }
    }

    pub fn a_len(&self) -> usize {
        self.shape.m * self.shape.k
    }

    pub fn b_len(&self) -> usize {
        self.shape.k * self.shape.n
    }

    pub fn c_len(&self) -> usize {
        self.shape.m * self.shape.n
    }

    /// Index in A's storage of the element at row `i`, column `p` of the M×K operand.
    pub fn a_index(&self, i: usize, p: usize) -> usize {
        if self.layout.a_order() == Order::ColMajor { p * self.shape.m + i } else { i * self.shape.k + p }
    }

    /// Index in B's storage of the element at row `p`, column `j` of the K×N operand.
    pub fn b_index(&self, p: usize, j: usize) -> usize {
        if self.layout.b_order() == Order::ColMajor { j * self.shape.k + p } else { p * self.shape.n + j }
    }

    /// Bytes of A, B and C together: what one launch touches at least once.
    pub fn bytes_per_set(&self) -> usize {
        (self.a_len() + self.b_len() + self.c_len()) * 2
    }

    pub fn flops(&self) -> f64 {
        self.shape.flops()
    }
}

impl std::fmt::Display for GemmProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.shape, self.dtype.name(), self.layout.name())
    }
}

/// C = A·B in float64 on the CPU, row-major M×N, reading A and B in `problem`'s layout. O(MNK): small shapes only.
pub fn reference_f64(problem: &GemmProblem, a: &[f64], b: &[f64]) -> Vec<f64> {
    let GemmShape { m, n, k } = problem.shape;
    assert_eq!((a.len(), b.len()), (problem.a_len(), problem.b_len()), "operand lengths");
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let a_ip = a[problem.a_index(i, p)];
            for j in 0..n {
                c[i * n + j] += a_ip * b[problem.b_index(p, j)];
            }
        }
    }
    c
}

/// The device buffers of one launch, typed by the problem's dtype: A, B as the layout stores them, C row-major
/// M×N, each exactly `a_len()`, `b_len()`, `c_len()` elements.
pub enum Operands<'a> {
    Bf16 { a: &'a CudaSlice<bf16>, b: &'a CudaSlice<bf16>, c: &'a mut CudaSlice<bf16> },
    F16 { a: &'a CudaSlice<f16>, b: &'a CudaSlice<f16>, c: &'a mut CudaSlice<f16> },
}

/// An element type the GEMM benchmark runs: the kernels' input types ([`GemmElement`]), drawn and widened as the
/// checks draw and widen them ([`CheckElement`]), and passed to the contenders as [`Operands`].
pub trait BenchElement: GemmElement + CheckElement + Unpin {
    fn operands<'a>(a: &'a CudaSlice<Self>, b: &'a CudaSlice<Self>, c: &'a mut CudaSlice<Self>) -> Operands<'a>;
}

impl BenchElement for bf16 {
    fn operands<'a>(a: &'a CudaSlice<bf16>, b: &'a CudaSlice<bf16>, c: &'a mut CudaSlice<bf16>) -> Operands<'a> {
        Operands::Bf16 { a, b, c }
    }
}

impl BenchElement for f16 {
    fn operands<'a>(a: &'a CudaSlice<f16>, b: &'a CudaSlice<f16>, c: &'a mut CudaSlice<f16>) -> Operands<'a> {
        Operands::F16 { a, b, c }
    }
}

/// One GEMM implementation in the benchmark: ours or a peer's. The harness calls, for each problem,
/// [`supports`](Self::supports), then [`prepare`](Self::prepare) once and [`bind`](Self::bind) once per input
/// set (untimed), then [`launch`](Self::launch) once for the output check and many times under the CUDA-event
/// timer.
pub trait GemmContender {
    /// Name printed in the table's `impl` column, e.g. "oxtile", "cublasLt".
    fn name(&self) -> &str;

    /// A peer (cuBLAS) rather than one of our kernels.
    fn is_peer(&self) -> bool;

    /// `Err(reason)` for a problem this contender cannot run (a dtype or layout it lacks, a shape it does not
    /// tile); the table then shows the reason instead of a time.
    fn supports(&self, problem: &GemmProblem) -> std::result::Result<(), String> {
        let _ = problem;
        Ok(())
    }

    /// Per-problem set-up kept out of the timing: descriptors, algorithm choice, tensor maps, tuning.
    fn prepare(&mut self, gpu: &Gpu, problem: &GemmProblem) -> Result<()> {
        let _ = (gpu, problem);
        Ok(())
    }

    /// Called once for every input set, after [`prepare`](Self::prepare) and before any launch on it, untimed:
    /// for a contender whose launch state is tied to the buffers (our GEMM's plans hold TMA descriptors that
    /// encode the addresses of A and B, and of C for the TMA-store epilogue).
    fn bind(&mut self, gpu: &Gpu, problem: &GemmProblem, operands: Operands<'_>) -> Result<()> {
        let _ = (gpu, problem, operands);
        Ok(())
    }

    /// What this contender runs for the problem it was last prepared and bound for (our kernel's name, cuBLASLt's
    /// algorithm), for the table's note column; `None` when there is nothing to tell.
    fn describe(&self) -> Option<String> {
        None
    }

    /// Enqueues C = A·B on `gpu.stream()`. Must not synchronize: the timer brackets each call with CUDA events
    /// and enqueues many calls ahead. Errors of the enqueue (bad argument, failed launch) are returned.
    fn launch(&mut self, gpu: &Gpu, problem: &GemmProblem, operands: Operands<'_>) -> Result<()>;
}

#[derive(Clone, Copy, Debug)]
pub struct GemmBenchConfig {
    pub timing: TimingConfig,
    /// The contenders of a problem take turns in this many rounds ([`super::timing::round_robin`]).
    pub rounds: usize,
    /// Compare every contender's output with the reference's.
    pub check: bool,
    /// Rotate through enough input sets to exceed this many L2s.
    pub l2_multiple: f64,
    /// At most this many sets (a 64×64×64 problem would want thousands).
    pub max_sets: usize,
}

impl Default for GemmBenchConfig {
    fn default() -> GemmBenchConfig {
        GemmBenchConfig {
            timing: TimingConfig::default(),
            rounds: DEFAULT_ROUNDS,
            check: true,
            l2_multiple: 3.0,
            max_sets: 1024,
        }
    }
}

/// Runs every contender on `problem` and returns one row per contender, in order. Each contender is prepared and
/// its output checked, one after another; then those prepared (whatever their check found) are timed in
/// `config.rounds` rounds ([`super::timing::round_robin`]), with the observer's clock meter if it has one. A
/// contender that does not support the problem, or fails, gets a row with its error; the others still run.
/// `observer` hears of each contender's preparation and each of its turns before they run, and of each turn's
/// figures after.
pub fn bench_gemm(
    gpu: &Gpu,
    info: &DeviceInfo,
    pool: &InputPool,
    problem: &GemmProblem,
    contenders: &mut [Box<dyn GemmContender>],
    config: &GemmBenchConfig,
    observer: &mut dyn BenchObserver,
) -> Result<Vec<Row>> {
    match problem.dtype {
        Dtype::Bf16 => bench_typed::<bf16>(gpu, info, pool, problem, contenders, config, observer),
        Dtype::F16 => bench_typed::<f16>(gpu, info, pool, problem, contenders, config, observer),
    }
}

/// The input sets of one problem on the device.
struct Sets<T> {
    a: Vec<CudaSlice<T>>,
    b: Vec<CudaSlice<T>>,
    c: Vec<CudaSlice<T>>,
}

fn bench_typed<T: BenchElement>(
    gpu: &Gpu,
    info: &DeviceInfo,
    pool: &InputPool,
    problem: &GemmProblem,
    contenders: &mut [Box<dyn GemmContender>],
    config: &GemmBenchConfig,
    observer: &mut dyn BenchObserver,
) -> Result<Vec<Row>> {
    let stream = gpu.stream();
    let (free, _) = gpu.context().mem_get_info()?;
    // Leave room for the workspaces, cuBLAS's own allocations and the check's host round trip.
    let budget = free / 10 * 7;
    if problem.bytes_per_set() > budget {
        return Err(Error::bad_argument(
            "bench gemm",
            format!(
                "{problem} needs {:.1} GiB, {:.1} GiB of device memory is free",
                gib(problem.bytes_per_set()),
                gib(free)
            ),
        ));
    }
    // An unknown L2 size (0) still gets two sets; assume a large one instead.
    let l2 = if info.l2_bytes > 0 { info.l2_bytes } else { 128 << 20 };
    let count = rotation_sets(problem.bytes_per_set(), l2, config.l2_multiple, config.max_sets, budget);
    let mut sets = Sets::<T> { a: Vec::new(), b: Vec::new(), c: Vec::new() };
    for set in 0..count {
        sets.a.push(stream.clone_htod(&pool.fill::<T>(problem.a_len(), InputPool::offset(set, 0)))?);
        sets.b.push(stream.clone_htod(&pool.fill::<T>(problem.b_len(), InputPool::offset(set, 1)))?);
        sets.c.push(stream.alloc_zeros::<T>(problem.c_len())?);
    }
    stream.synchronize()?;

    let mut reference: Option<Vec<f32>> = None;
    let mut rows = Vec::with_capacity(contenders.len());
    let mut ready = Vec::with_capacity(contenders.len());
    for (index, contender) in contenders.iter_mut().enumerate() {
        observer.step(&format!("{} {}: check", problem, contender.name()));
        let mut row = Row::new("gemm", problem.shape.to_string(), contender.name());
        row.kind = Some(if contender.is_peer() { "peer" } else { "oxtile" }.to_string());
        row.origin = Some("in-process".into());
        row.dtype = Some(problem.dtype.name().into());
        row.layout = Some(problem.layout.name().into());
        row.work = Some(problem.flops());
        row.sets = Some(count);
        match contender.supports(problem) {
            Err(reason) => row.error = Some(format!("unsupported: {reason}")),
            Ok(()) => match prepare_and_check(gpu, contender.as_mut(), problem, &mut sets, config, &mut reference) {
                Ok(check) => {
                    if let Some(check) = check {
                        row.apply_check(&check, problem.dtype.check_bound());
                    }
                    row.config = contender.describe();
                    ready.push(index);
                }
                Err(error) => row.error = Some(error.to_string()),
            },
        }
        rows.push(row);
    }

    let names: Vec<String> = contenders.iter().map(|c| c.name().to_string()).collect();
    let rounds = effective_rounds(config.rounds, config.timing.runs);
    let meter = observer.meter();
    let timed = time_in_rounds(
        gpu,
        &config.timing,
        &ready,
        config.rounds,
        meter.as_ref(),
        &mut |event| match event {
            TurnEvent::Start(turn) => {
                observer.step(&format!("{problem} {}: round {}/{rounds}", names[turn.contender], turn.round + 1))
            }
            TurnEvent::Done(turn, times, clock) => {
                observer.turn_done(&TurnRecord::new(&rows[turn.contender], turn.round, times, clock))
            }
        },
        &mut |contender, i| {
            let s = i % count;
            contenders[contender].launch(gpu, problem, T::operands(&sets.a[s], &sets.b[s], &mut sets.c[s]))
        },
    );
    for (contender, outcome) in timed {
        let row = &mut rows[contender];
        match outcome {
            Ok((stats, clock)) => {
                row.set_stats(&stats);
                if let Some(clock) = &clock {
                    row.set_clock(clock);
                }
                let tflops = problem.flops() / (stats.median_ms * 1e-3) / 1e12;
                row.tflops = Some(tflops);
                row.pct_peak = Some(100.0 * tflops / DATASHEET_DENSE_BF16_TFLOPS);
            }
            Err(error) => row.error = Some(error.to_string()),
        }
    }
    Ok(rows)
}

/// The outcome of a contender's output check.
enum Check {
    /// Its output became the reference (it was the first to run, and all finite).
    Reference,
    /// Its output failed to be all finite, and there was no reference yet.
    NotFinite(usize),
    /// Compared with the reference.
    Compared(OutputDiff),
}

impl Row {
    fn apply_check(&mut self, check: &Check, bound: f64) {
        match check {
            Check::Reference => self.check = Some("ref".into()),
            Check::NotFinite(count) => self.check = Some(format!("FAIL: {count} not finite")),
            Check::Compared(diff) => {
                self.max_rel_err = Some(diff.max_rel);
                self.norm_rel_err = Some(diff.norm_rel);
                self.check = Some(if diff.passes(bound) {
                    "ok".into()
                } else if diff.not_finite > 0 {
                    format!("FAIL: {} not finite", diff.not_finite)
                } else {
                    "FAIL".into()
                });
            }
        }
    }
}

/// Prepares `contender` for `problem`, binds it to every input set, and (with `config.check`) checks its output on
/// set 0 against `reference`, which the first contender with an all-finite output provides.
fn prepare_and_check<T: BenchElement>(
    gpu: &Gpu,
    contender: &mut dyn GemmContender,
    problem: &GemmProblem,
    sets: &mut Sets<T>,
    config: &GemmBenchConfig,
    reference: &mut Option<Vec<f32>>,
) -> Result<Option<Check>> {
    let stream = gpu.stream();
    contender.prepare(gpu, problem)?;
    for s in 0..sets.a.len() {
        contender.bind(gpu, problem, T::operands(&sets.a[s], &sets.b[s], &mut sets.c[s]))?;
    }
    if !config.check {
        return Ok(None);
    }
    poison(gpu, &mut sets.c[0])?;
    contender.launch(gpu, problem, T::operands(&sets.a[0], &sets.b[0], &mut sets.c[0]))?;
    let out: Vec<f32> = stream.clone_dtoh(&sets.c[0])?.into_iter().map(|v| v.to_f64() as f32).collect();
    stream.synchronize()?;
    gpu.context().check_err()?;
    Ok(Some(match reference {
        Some(reference) => Check::Compared(compare_outputs(&out, reference)),
        None => match out.iter().filter(|v| !v.is_finite()).count() {
            0 => {
                *reference = Some(out);
                Check::Reference
            }
            bad => Check::NotFinite(bad),
        },
    }))
}

fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::reference;

    /// A bf16 problem of this shape and layout.
    pub(crate) fn problem(m: usize, n: usize, k: usize, layout: GemmLayout) -> GemmProblem {
        GemmProblem { shape: GemmShape::new(m, n, k), dtype: Dtype::Bf16, layout }
    }

    /// `len` normal random values (seeded), widened to f64.
    pub(crate) fn values(len: usize, seed: u64) -> Vec<f64> {
        reference::randn(len, 1.0, seed).into_iter().map(f64::from).collect()
    }

    #[test]
    fn layouts_store_the_same_product() {
        let (m, n, k) = (5, 3, 4);
        let base = problem(m, n, k, GemmLayout::Tt);
        let a = values(m * k, 1);
        let b = values(k * n, 2);
        let want = reference_f64(&base, &a, &b);
        // Direct check of one element against the definition.
        let c01: f64 = (0..k).map(|p| a[p] * b[p * n + 1]).sum();
        assert!((want[1] - c01).abs() < 1e-12);
        for layout in GemmLayout::ALL {
            let p = problem(m, n, k, layout);
            let mut a_stored = vec![0.0; p.a_len()];
            let mut b_stored = vec![0.0; p.b_len()];
            for i in 0..m {
                for q in 0..k {
                    a_stored[p.a_index(i, q)] = a[base.a_index(i, q)];
                }
            }
            for q in 0..k {
                for j in 0..n {
                    b_stored[p.b_index(q, j)] = b[base.b_index(q, j)];
                }
            }
            assert_eq!(p.a_dims().0 * p.a_dims().1, p.a_len());
            assert_eq!(p.b_dims().0 * p.b_dims().1, p.b_len());
            let got = reference_f64(&p, &a_stored, &b_stored);
            assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-12), "{layout:?}");
        }
    }

    #[test]
    fn bytes_and_names() {
        let p = GemmProblem { shape: GemmShape::new(128, 8192, 8192), dtype: Dtype::F16, layout: GemmLayout::Nt };
        assert_eq!(p.bytes_per_set(), (128 * 8192 * 2 + 8192 * 8192) * 2);
        assert_eq!(p.to_string(), "128x8192x8192 f16 nt");
        assert_eq!(p.a_dims(), (8192, 128));
        assert_eq!(p.b_dims(), (8192, 8192));
    }
}
