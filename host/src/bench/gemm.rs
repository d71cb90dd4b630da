//! The GEMM benchmark: problems, the [`GemmContender`] interface every implementation (ours and the peers)
//! plugs into, input sets rotated past the L2, the output cross-check, and the rows it all produces.
//!
//! # Layouts
//!
//! C (M×N) = A (M×K) · B (K×N), C always row-major, as in torch and `oxtile::ops::gemm`. The layout names how A
//! then B are stored, in the project's convention (that of `ops::gemm::Order`): `t` = row-major, `n` =
//! column-major. So `tt` is torch's `a @ b` (both row-major, what torch_reference.py times), and `tn` (A
//! row-major, B column-major, i.e. stored N×K: both operands K-major, like `x @ W.T`); our sm90 kernels take all
//! four. [`Layout::blas_name`] gives the op letters of the column-major cuBLAS call that computes it.
//!
//! # Output check
//!
//! Every contender's output on input set 0 is compared with that of the first contender that ran correctly
//! (cuBLASLt, unless it failed): the largest |out − ref| over all elements divided by the largest |ref| (an
//! element-wise relative error would blow up where the sum cancels to near zero, which randn inputs make
//! common), and ‖out − ref‖₂ / ‖ref‖₂. Two correct results differ by the rounding of each to the output type
//! (half an ulp of the element each) plus fp32 accumulation-order noise, so the bound is 2⁻⁶ for bf16 and 2⁻⁹ for
//! fp16, each a few ulps. The output is poisoned (all bits set: NaN) before that run, so an element left
//! unwritten shows up as not finite.

use cudarc::driver::{CudaSlice, DevicePtrMut, DeviceRepr, ValidAsZeroBits};
use half::{bf16, f16};
use serde::{Deserialize, Serialize};

use super::device::{DATASHEET_DENSE_BF16_TFLOPS, DeviceInfo, rotation_sets};
use super::report::{BenchObserver, Row, TurnRecord};
use super::suite::GemmShape;
use super::timing::{
    DEFAULT_HOLD_TIMEOUT, DEFAULT_ROUNDS, TimingConfig, TurnEvent, effective_rounds, time_gpu, time_in_rounds,
};
use crate::error::{Error, Result};
use crate::reference;
use crate::runtime::Gpu;

/// The peer every ratio is taken against.
pub const BASELINE: &str = super::peers::cublas::CUBLASLT;

/// How the tuned contenders (`cublasLt-tuned`, `oxtile-tuned`) time each candidate: a few launches queued back to
/// back, in [`TUNING_ROUNDS`] rounds over the candidates so none is timed only on a cooler or hotter chip than the
/// others; a candidate's time is the lower of its medians.
const TUNING: TimingConfig = TimingConfig {
    warmup: 2,
    runs: 8,
    mode: super::timing::TimingMode::Unblocked,
    hold_timeout: DEFAULT_HOLD_TIMEOUT,
    settle: std::time::Duration::ZERO,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
pub enum Dtype {
    #[value(name = "bf16")]
    #[serde(rename = "bf16")]
    Bf16,
    #[value(name = "fp16", alias = "f16")]
    #[serde(rename = "fp16")]
    F16,
}

impl Dtype {
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "fp16",
        }
    }

    /// Largest accepted max-relative difference from the reference output; see the module documentation.
    pub fn check_bound(self) -> f64 {
        match self {
            Dtype::Bf16 => 2f64.powi(-6),
            Dtype::F16 => 2f64.powi(-9),
        }
    }
}

/// Storage of A and B; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// A row-major, B column-major: both K-major.
    Tn,
    /// A and B row-major: torch's `a @ b`.
    Tt,
    /// A column-major, B row-major.
    Nt,
    /// A and B column-major.
    Nn,
}

impl Layout {
    pub const ALL: [Layout; 4] = [Layout::Tn, Layout::Tt, Layout::Nt, Layout::Nn];

    /// A is stored column-major, that is as a K×M row-major array.
    pub fn a_col_major(self) -> bool {
        matches!(self, Layout::Nt | Layout::Nn)
    }

    /// B is stored column-major, that is as an N×K row-major array.
    pub fn b_col_major(self) -> bool {
        matches!(self, Layout::Tn | Layout::Nn)
    }

    pub fn name(self) -> &'static str {
        match self {
            Layout::Tn => "tn",
            Layout::Tt => "tt",
            Layout::Nt => "nt",
            Layout::Nn => "nn",
        }
    }

    /// The op letters (first operand, second operand) of the column-major BLAS call that computes this
    /// layout's row-major C: see [`BlasCall`].
    pub fn blas_name(self) -> &'static str {
        let call = BlasCall::of(&GemmProblem { shape: GemmShape::new(1, 1, 1), dtype: Dtype::Bf16, layout: self });
        match (call.transa, call.transb) {
            (false, false) => "NN",
            (true, false) => "TN",
            (false, true) => "NT",
            (true, true) => "TT",
        }
    }
}

/// One GEMM to benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmProblem {
    pub shape: GemmShape,
    pub dtype: Dtype,
    pub layout: Layout,
}

impl GemmProblem {
    /// Rows and columns of A as stored (row-major).
    pub fn a_dims(&self) -> (usize, usize) {
        let GemmShape { m, k, .. } = self.shape;
        if self.layout.a_col_major() { (k, m) } else { (m, k) }
    }

    /// Rows and columns of B as stored (row-major).
    pub fn b_dims(&self) -> (usize, usize) {
        let GemmShape { n, k, .. } = self.shape;
        if self.layout.b_col_major() { (n, k) } else { (k, n) }
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
        if self.layout.a_col_major() { p * self.shape.m + i } else { i * self.shape.k + p }
    }

    /// Index in B's storage of the element at row `p`, column `j` of the K×N operand.
    pub fn b_index(&self, p: usize, j: usize) -> usize {
        if self.layout.b_col_major() { j * self.shape.k + p } else { p * self.shape.n + j }
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

/// The arguments of a column-major BLAS GEMM (cublasGemmEx, cublasLtMatmul) that computes `problem`'s row-major
/// C = A·B. Row-major C is column-major Cᵀ = Bᵀ·Aᵀ, so BLAS's first operand is our B buffer and its second our
/// A buffer; `m`, `n`, `k` and the leading dimensions are in BLAS's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlasCall {
    /// op(first) = firstᵀ: our B is column-major.
    pub transa: bool,
    /// op(second) = secondᵀ: our A is column-major.
    pub transb: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
}

impl BlasCall {
    pub fn of(problem: &GemmProblem) -> BlasCall {
        let GemmShape { m, n, k } = problem.shape;
        let transa = problem.layout.b_col_major();
        let transb = problem.layout.a_col_major();
        BlasCall {
            transa,
            transb,
            m: n,
            n: m,
            k,
            lda: if transa { k } else { n },
            ldb: if transb { m } else { k },
            ldc: n,
        }
    }

    /// Rows and columns of the first operand as stored, column-major (what a cuBLASLt matrix layout describes).
    pub fn first_dims(&self) -> (usize, usize) {
        if self.transa { (self.k, self.m) } else { (self.m, self.k) }
    }

    /// Rows and columns of the second operand as stored, column-major.
    pub fn second_dims(&self) -> (usize, usize) {
        if self.transb { (self.n, self.k) } else { (self.k, self.n) }
    }
}

/// The device buffers of one launch, typed by the problem's dtype: A, B as the layout stores them, C row-major
/// M×N, each exactly `a_len()`, `b_len()`, `c_len()` elements.
pub enum Operands<'a> {
    Bf16 { a: &'a CudaSlice<bf16>, b: &'a CudaSlice<bf16>, c: &'a mut CudaSlice<bf16> },
    F16 { a: &'a CudaSlice<f16>, b: &'a CudaSlice<f16>, c: &'a mut CudaSlice<f16> },
}

/// An element type the GEMM benchmark runs.
pub trait GemmElement: DeviceRepr + ValidAsZeroBits + Copy + Unpin + Send + Sync + 'static {
    const DTYPE: Dtype;
    fn from_f32(value: f32) -> Self;
    fn to_f32(self) -> f32;
    fn operands<'a>(a: &'a CudaSlice<Self>, b: &'a CudaSlice<Self>, c: &'a mut CudaSlice<Self>) -> Operands<'a>;
}

impl GemmElement for bf16 {
    const DTYPE: Dtype = Dtype::Bf16;
    fn from_f32(value: f32) -> bf16 {
        bf16::from_f32(value)
    }
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    fn operands<'a>(a: &'a CudaSlice<bf16>, b: &'a CudaSlice<bf16>, c: &'a mut CudaSlice<bf16>) -> Operands<'a> {
        Operands::Bf16 { a, b, c }
    }
}

impl GemmElement for f16 {
    const DTYPE: Dtype = Dtype::F16;
    fn from_f32(value: f32) -> f16 {
        f16::from_f32(value)
    }
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
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

/// Our GEMM kernels, benchmarked beside the peers: each implements [`GemmContender`] (see
/// [`super::oxtile::OxtileSm90`]) and is listed here; every `oxtile bench gemm` run and the criterion GEMM bench
/// then time it, and the harness checks its output against cuBLASLt's.
pub fn oxtile_contenders(gpu: &Gpu) -> Result<Vec<Box<dyn GemmContender>>> {
    let _ = gpu;
    use super::oxtile::OxtileSm90;
    use crate::ops::gemm::Variant;
    Ok(vec![
        Box::new(OxtileSm90::new()),
        Box::new(OxtileSm90::tuned()),
        Box::new(OxtileSm90::variant("oxtile-wide", Variant::Wide)),
        Box::new(OxtileSm90::variant("oxtile-wide-c2", Variant::WideCluster2)),
        Box::new(OxtileSm90::variant("oxtile-wide-c2-unshared", Variant::WideCluster2Unshared)),
        Box::new(OxtileSm90::variant("oxtile-narrow", Variant::Narrow)),
        Box::new(OxtileSm90::variant("oxtile-narrow-c2", Variant::NarrowCluster2)),
        Box::new(OxtileSm90::variant("oxtile-flat", Variant::Flat)),
        Box::new(OxtileSm90::variant("oxtile-flat-sk", Variant::FlatStreamK)),
        Box::new(OxtileSm90::variant("oxtile-square", Variant::Square)),
        Box::new(OxtileSm90::variant("oxtile-square-c2", Variant::SquareCluster2)),
        Box::new(OxtileSm90::variant("oxtile-square-sk", Variant::SquareStreamK)),
        Box::new(OxtileSm90::through_cluster_path("oxtile-narrow-cluster-path", Variant::Narrow)),
        Box::new(OxtileSm90::without_dependent_launch("oxtile-no-pdl", Variant::Auto)),
        Box::new(OxtileSm90::variant("oxtile-pingpong", Variant::PingPong)),
        Box::new(OxtileSm90::variant("oxtile-pingpong-c2", Variant::PingPongCluster2)),
        Box::new(OxtileSm90::variant("oxtile-streamk", Variant::StreamK)),
        Box::new(OxtileSm90::variant("oxtile-streamk-c2", Variant::StreamKCluster2)),
    ])
}

/// The in-process peers, the reference first: cuBLASLt (heuristic's best algorithm, 32 MiB workspace), cuBLASLt
/// autotuned over the heuristic's first few algorithms, then cublasGemmEx.
pub fn peer_contenders(gpu: &Gpu) -> Result<Vec<Box<dyn GemmContender>>> {
    use super::peers::cublas::{CublasGemmEx, CublasLt};
    Ok(vec![Box::new(CublasLt::new(gpu)?), Box::new(CublasLt::tuned(gpu)?), Box::new(CublasGemmEx::new(gpu)?)])
}

/// How far one output is from the reference output; see the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OutputDiff {
    /// max |out − ref| / max |ref|, over the finite elements of `out`.
    pub max_rel: f64,
    /// ‖out − ref‖₂ / ‖ref‖₂ over the same elements.
    pub norm_rel: f64,
    /// Elements of `out` that are NaN or infinite (the poison included).
    pub not_finite: usize,
    /// Elements of the reference that are NaN or infinite: the comparison means nothing when this is not 0.
    pub reference_not_finite: usize,
}

impl OutputDiff {
    pub fn passes(&self, bound: f64) -> bool {
        self.not_finite == 0 && self.reference_not_finite == 0 && self.max_rel <= bound
    }
}

pub fn compare_outputs(out: &[f32], reference: &[f32]) -> OutputDiff {
    assert_eq!(out.len(), reference.len(), "output lengths");
    let mut diff = OutputDiff::default();
    let (mut max_ref, mut max_err, mut sq_ref, mut sq_err) = (0f64, 0f64, 0f64, 0f64);
    for (&o, &r) in out.iter().zip(reference) {
        let (o, r) = (o as f64, r as f64);
        if !r.is_finite() {
            diff.reference_not_finite += 1;
            continue;
        }
        max_ref = max_ref.max(r.abs());
        sq_ref += r * r;
        if !o.is_finite() {
            diff.not_finite += 1;
            continue;
        }
        max_err = max_err.max((o - r).abs());
        sq_err += (o - r) * (o - r);
    }
    diff.max_rel = max_err / max_ref.max(f64::MIN_POSITIVE);
    diff.norm_rel = (sq_err / sq_ref.max(f64::MIN_POSITIVE)).sqrt();
    diff
}

/// Normal random values to fill input sets from. Drawing every element of a 16384² operand one at a time would
/// take seconds per set, so each operand is a window of this pool starting at its own offset, wrapping around.
/// The pool's length is odd, so the rows of an operand (whose length is a power of two or a multiple of one in
/// every suite shape) start at different points of the pool and are not copies of each other.
pub struct InputPool {
    values: Vec<f32>,
    pub seed: u64,
}

impl InputPool {
    pub const LEN: usize = (1 << 24) + 1021;

    pub fn new(seed: u64) -> InputPool {
        InputPool::with_len(Self::LEN, seed)
    }

    pub fn with_len(len: usize, seed: u64) -> InputPool {
        InputPool { values: reference::randn(len.max(1), 1.0, seed), seed }
    }

    /// `len` values starting at `offset` (modulo the pool's length), converted to `T`.
    pub fn fill<T: GemmElement>(&self, len: usize, offset: usize) -> Vec<T> {
        let mut out = Vec::with_capacity(len);
        let mut at = offset % self.values.len();
        while out.len() < len {
            let take = (len - out.len()).min(self.values.len() - at);
            out.extend(self.values[at..at + take].iter().map(|&v| T::from_f32(v)));
            at = 0;
        }
        out
    }

    /// `len` values starting at `offset` (modulo the pool's length), as f32.
    pub fn fill_f32(&self, len: usize, offset: usize) -> Vec<f32> {
        let mut out = Vec::with_capacity(len);
        let mut at = offset % self.values.len();
        while out.len() < len {
            let take = (len - out.len()).min(self.values.len() - at);
            out.extend_from_slice(&self.values[at..at + take]);
            at = 0;
        }
        out
    }

    /// The offset of operand `which` (0: A, 1: B) of input set `set`.
    pub fn offset(set: usize, which: usize) -> usize {
        (set * 2 + which) * 1_000_003
    }
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

fn bench_typed<T: GemmElement>(
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
fn prepare_and_check<T: GemmElement>(
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
    let out: Vec<f32> = stream.clone_dtoh(&sets.c[0])?.into_iter().map(T::to_f32).collect();
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

/// Sets every byte of `c` to 0xFF: NaN in bf16 and fp16.
fn poison<T: GemmElement>(gpu: &Gpu, c: &mut CudaSlice<T>) -> Result<()> {
    let stream = gpu.stream();
    let bytes = c.len() * std::mem::size_of::<T>();
    let (ptr, _use) = c.device_ptr_mut(stream);
    // SAFETY: `ptr` addresses `bytes` bytes of `c`, which outlives the memset on this stream.
    unsafe { cudarc::driver::result::memset_d8_async(ptr, 0xFF, bytes, stream.cu_stream()) }?;
    Ok(())
}

fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(m: usize, n: usize, k: usize, layout: Layout) -> GemmProblem {
        GemmProblem { shape: GemmShape::new(m, n, k), dtype: Dtype::Bf16, layout }
    }

    /// A column-major BLAS GEMM on the CPU: C = op(first)·op(second), as cuBLAS defines it.
    fn blas_gemm(call: &BlasCall, first: &[f64], second: &[f64]) -> Vec<f64> {
        let mut c = vec![0.0; call.ldc * call.n];
        for j in 0..call.n {
            for i in 0..call.m {
                let mut sum = 0.0;
                for p in 0..call.k {
                    let x = if call.transa { first[p + i * call.lda] } else { first[i + p * call.lda] };
                    let y = if call.transb { second[j + p * call.ldb] } else { second[p + j * call.ldb] };
                    sum += x * y;
                }
                c[i + j * call.ldc] = sum;
            }
        }
        c
    }

    fn values(len: usize, seed: u64) -> Vec<f64> {
        reference::randn(len, 1.0, seed).into_iter().map(f64::from).collect()
    }

    #[test]
    fn layouts_store_the_same_product() {
        let (m, n, k) = (5, 3, 4);
        let base = problem(m, n, k, Layout::Tt);
        let a = values(m * k, 1);
        let b = values(k * n, 2);
        let want = reference_f64(&base, &a, &b);
        // Direct check of one element against the definition.
        let c01: f64 = (0..k).map(|p| a[p] * b[p * n + 1]).sum();
        assert!((want[1] - c01).abs() < 1e-12);
        for layout in Layout::ALL {
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
    fn blas_arguments_compute_the_row_major_product() {
        // Odd sizes, M ≠ N ≠ K, so a swapped dimension or leading dimension cannot pass by accident.
        let (m, n, k) = (7, 5, 3);
        for layout in Layout::ALL {
            let p = problem(m, n, k, layout);
            let a = values(p.a_len(), 3);
            let b = values(p.b_len(), 4);
            let call = BlasCall::of(&p);
            let (rows, cols) = call.first_dims();
            assert_eq!(rows * cols, p.b_len());
            assert!(call.lda >= rows, "{layout:?}: lda {} < rows {rows}", call.lda);
            let (rows, cols) = call.second_dims();
            assert_eq!(rows * cols, p.a_len());
            assert!(call.ldb >= rows, "{layout:?}: ldb {} < rows {rows}", call.ldb);
            // BLAS's first operand is our B, its second our A; its column-major C is our row-major C.
            let got = blas_gemm(&call, &b, &a);
            let want = reference_f64(&p, &a, &b);
            assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-12), "{layout:?}");
        }
        // torch's a @ b is cuBLAS NN on swapped operands; our kernel's tn is cuBLAS TN.
        assert_eq!(Layout::Tt.blas_name(), "NN");
        assert_eq!(Layout::Tn.blas_name(), "TN");
        assert_eq!(Layout::Nt.blas_name(), "NT");
        assert_eq!(Layout::Nn.blas_name(), "TT");
        let call = BlasCall::of(&problem(7, 5, 3, Layout::Tt));
        assert_eq!((call.transa, call.transb, call.m, call.n, call.k), (false, false, 5, 7, 3));
    }

    #[test]
    fn output_comparison() {
        let reference = [1.0, -4.0, 2.0, 0.0];
        let same = compare_outputs(&reference, &reference);
        assert_eq!(same, OutputDiff::default());
        assert!(same.passes(0.0));
        let diff = compare_outputs(&[1.0, -4.0, 2.0, 0.04], &reference);
        assert!((diff.max_rel - 0.01).abs() < 1e-9, "{diff:?}");
        assert!((diff.norm_rel - 0.04 / 21f64.sqrt()).abs() < 1e-9, "{diff:?}");
        assert!(diff.passes(Dtype::Bf16.check_bound()));
        assert!(!diff.passes(Dtype::F16.check_bound()));
        let poisoned = compare_outputs(&[1.0, f32::NAN, 2.0, 0.0], &reference);
        assert_eq!(poisoned.not_finite, 1);
        assert!(!poisoned.passes(1.0));
        let bad_reference = compare_outputs(&reference, &[1.0, f32::INFINITY, 2.0, 0.0]);
        assert_eq!(bad_reference.reference_not_finite, 1);
        assert!(!bad_reference.passes(1.0));
    }

    #[test]
    fn pool_windows_wrap_and_differ() {
        let pool = InputPool::with_len(101, 9);
        let a: Vec<bf16> = pool.fill(250, InputPool::offset(0, 0));
        let b: Vec<bf16> = pool.fill(250, InputPool::offset(0, 1));
        assert_eq!(a.len(), 250);
        assert_eq!(a[0], a[101]);
        assert_ne!(a, b);
        assert!(a.iter().all(|v| v.to_f32().is_finite()) && a.iter().any(|v| v.to_f32() != 0.0));
        assert_eq!(InputPool::LEN % 2, 1);
    }

    #[test]
    fn bytes_and_names() {
        let p = GemmProblem { shape: GemmShape::new(128, 8192, 8192), dtype: Dtype::F16, layout: Layout::Nt };
        assert_eq!(p.bytes_per_set(), (128 * 8192 * 2 + 8192 * 8192) * 2);
        assert_eq!(p.to_string(), "128x8192x8192 fp16 nt");
        assert_eq!(p.a_dims(), (8192, 128));
        assert_eq!(p.b_dims(), (8192, 8192));
    }
}
