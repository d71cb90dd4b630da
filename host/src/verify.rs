//! GPU results against float64 CPU references: fresh normal inputs, poisoned outputs, error bounds fitted to
//! each kernel's precision. Used by `oxtile check` and the GPU integration tests.
//!
//! [`attention`] holds the attention checks.

pub mod attention;

use std::borrow::Cow;

use half::{bf16, f16};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::error::Result;
use crate::exp2;
use crate::ops::elementwise;
use crate::ops::gemm::{self, GemmOptions, GemmShape, SkinnyChoice, Variant};
use crate::ops::softmax::{self, Exp2Mode, Exp2Throughput};
use crate::reference::{self, Comparison, POISON_F32};
use crate::runtime::Gpu;
use crate::types::{GemmElement, GemmLayout, GemmOutput, Order};

/// Lengths every elementwise kernel is checked at: empty-tail, odd, one short of and one past a vector, and
/// large enough for the grid-stride loop to wrap.
pub const ELEMENTWISE_LENGTHS: &[usize] = &[1, 3, 7, 8, 9, 1000, 4097, (1 << 20) + 3, 10_000_019];

/// One kernel at one size against its reference.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub kernel: &'static str,
    /// The problem in words, e.g. `n=4097` or `1000x1000x1000 tn`.
    pub problem: String,
    pub comparison: Comparison,
    /// Largest relative error the kernel's precision allows.
    pub bound: f64,
}

impl CheckReport {
    pub fn passed(&self) -> bool {
        self.comparison.passes(self.bound)
    }

    pub fn table(reports: &[CheckReport]) -> String {
        let mut out = format!("{}\n", CheckReport::header());
        for r in reports {
            out += &format!("{}\n", r.row());
        }
        out
    }

    /// The column names of [`CheckReport::table`].
    pub fn header() -> String {
        format!("{:<36} {:>26} {:>12} {:>10} {:>8}  {}", "kernel", "problem", "max rel err", "bound", "bad", "result")
    }

    /// This report as a row of [`CheckReport::table`].
    pub fn row(&self) -> String {
        format!(
            "{:<36} {:>26} {:>12.3e} {:>10.1e} {:>8}  {}",
            self.kernel,
            self.problem,
            self.comparison.max_rel_error,
            self.bound,
            self.comparison.not_finite,
            if self.passed() { "ok" } else { "FAIL" }
        )
    }
}

/// Which problems `oxtile check` runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sweep {
    /// Every kernel at every checked size: the elementwise kernels at every one of [`ELEMENTWISE_LENGTHS`], every
    /// GEMM variant at every shape of its layout ([`gemm_shapes`]) and the type and scalar checks on
    /// [`odd_shape`], every attention check.
    #[default]
    Full,
    /// One problem per kernel, in seconds: the elementwise kernels at the largest length (a partial vector at the
    /// end and a grid-stride loop that wraps), every GEMM variant on its layout's [`odd_shape`] (partial tiles in M
    /// and N, compared in full) plus the type and scalar checks there, and the attention checks, which are all
    /// small but the one against the GPU reference.
    Quick,
}

/// One check of a sweep, not yet run: what it is, about how much work it takes, and the check itself.
pub struct PlannedCheck {
    /// E.g. `gemm tn 4096x4096x4096 bf16 wide`, for a progress line; the reports name the kernel.
    pub what: String,
    /// Work in units of about one float64 multiply-add or one random draw (what dominates a check's time), plus
    /// [`CHECK_OVERHEAD`] for the launch and the copies: progress and the time left are counted in it.
    pub cost: u64,
    run: CheckRun,
}

/// A planned check's body: its reports, made on the given GPU.
type CheckRun = Box<dyn FnOnce(&Gpu) -> Result<Vec<CheckReport>>>;

/// The cost of a check beyond its arithmetic (allocations, copies, the launch), in [`PlannedCheck::cost`] units.
pub const CHECK_OVERHEAD: u64 = 1 << 20;

impl PlannedCheck {
    pub fn new(
        what: impl Into<String>,
        work: u64,
        run: impl FnOnce(&Gpu) -> Result<Vec<CheckReport>> + 'static,
    ) -> PlannedCheck {
        PlannedCheck { what: what.into(), cost: work + CHECK_OVERHEAD, run: Box::new(run) }
    }

    /// Runs the check: its reports (one, or two for attention's O and LSE), in table order.
    pub fn run(self, gpu: &Gpu) -> Result<Vec<CheckReport>> {
        (self.run)(gpu)
    }
}

/// The checks of `sweep` in the order they run, each with its own inputs drawn from `seed` and its position.
pub fn plan(sweep: Sweep, seed: u64) -> Vec<PlannedCheck> {
    let mut plan = Vec::new();
    for (i, &len) in ELEMENTWISE_LENGTHS.iter().enumerate() {
        if sweep == Sweep::Quick && i + 1 != ELEMENTWISE_LENGTHS.len() {
            continue;
        }
        let seed = seed.wrapping_add(i as u64 * 3);
        let work = 3 * len as u64;
        plan.push(PlannedCheck::new(format!("axpy_f32 n={len}"), work, move |gpu| Ok(vec![axpy_f32(gpu, len, seed)?])));
        plan.push(PlannedCheck::new(format!("axpy_bf16 n={len}"), work, move |gpu| {
            Ok(vec![axpy_bf16(gpu, len, seed + 1)?])
        }));
        plan.push(PlannedCheck::new(format!("exp2_f32 n={len}"), work, move |gpu| {
            Ok(vec![exp2_f32(gpu, len, seed + 2)?])
        }));
        plan.push(PlannedCheck::new(format!("exp2_poly_f32 n={len}"), work, move |gpu| {
            Ok(vec![exp2_poly_f32(gpu, len, seed + 3)?])
        }));
    }
    for mode in Exp2Mode::ALL {
        plan.push(PlannedCheck::new(format!("exp2 throughput {mode:?}"), 0, move |gpu| {
            Ok(vec![exp2_throughput(gpu, mode, EXP2_THROUGHPUT_ITERS)?])
        }));
    }
    // Every layout: every shape it takes with each tile configuration that has a kernel in it (bf16; the quick sweep
    // only the odd shape), then f32 output, f16 and the epilogue's scalars on the odd shape.
    for (l, layout) in GemmLayout::ALL.into_iter().enumerate() {
        let seed = seed + 1000 * (l as u64 + 1);
        let odd = odd_shape(layout);
        let layout = GemmOptions { layout, ..GemmOptions::default() };
        let shapes: Vec<(u64, GemmShape)> = match sweep {
            Sweep::Full => gemm_shapes(layout.layout)
                .iter()
                .enumerate()
                .map(|(i, &(m, n, k))| (seed + 10 * i as u64, GemmShape::new(m, n, k)))
                .collect(),
            Sweep::Quick => vec![(seed + 100, odd)],
        };
        for (shape_seed, shape) in shapes {
            let here = |variant: &Variant| variant.available("bf16", "bf16", layout.layout);
            for (j, variant) in Variant::CANDIDATES.into_iter().filter(here).enumerate() {
                let options = GemmOptions { variant, ..layout };
                plan.push(planned_gemm::<bf16, bf16>(shape, options, shape_seed + j as u64));
            }
        }
        let scaled = GemmOptions { alpha: 0.5, beta: -1.25, ..layout };
        plan.push(planned_gemm::<bf16, bf16>(odd, scaled, seed + 200));
        plan.push(planned_gemm::<bf16, f32>(odd, layout, seed + 201));
        plan.push(planned_gemm::<bf16, f32>(odd, scaled, seed + 202));
        plan.push(planned_gemm::<f16, f16>(odd, layout, seed + 203));
        plan.push(planned_gemm::<f16, f32>(odd, scaled, seed + 204));
        // The skinny kernel (M ≤ 16, A row-major), wherever it applies: 1000 columns split 8 ways with a shorter last
        // range (the quick sweep), and 576 columns split 16 ways over a deep K.
        if layout.layout.a_order() == Order::RowMajor {
            let skinny = GemmOptions { skinny: SkinnyChoice::WhereApplies, ..layout };
            let scaled = GemmOptions { alpha: 0.5, beta: -1.25, ..skinny };
            let few = GemmShape::new(3, 1000, 2056);
            plan.push(planned_gemm::<bf16, bf16>(few, skinny, seed + 210));
            plan.push(planned_gemm::<f16, f32>(few, scaled, seed + 211));
            if sweep == Sweep::Full {
                plan.push(planned_gemm::<bf16, bf16>(GemmShape::new(16, 576, 7168), skinny, seed + 212));
            }
        }
    }
    plan.extend(attention::standard_plan(seed + 300));
    plan
}

/// Every check of the full sweep in order, each report handed to `on_report` as soon as it is made (a caller can
/// show progress, and where a check stops).
pub fn all(gpu: &Gpu, seed: u64, mut on_report: impl FnMut(&CheckReport)) -> Result<Vec<CheckReport>> {
    let mut reports = Vec::new();
    for check in plan(Sweep::Full, seed) {
        for report in check.run(gpu)? {
            on_report(&report);
            reports.push(report);
        }
    }
    Ok(reports)
}

/// [`gemm_check`] as a step of a sweep, its cost the random draws and the float64 multiply-adds it compares.
fn planned_gemm<T: CheckElement, O: GemmOutput<T> + CheckValue>(
    shape: GemmShape,
    options: GemmOptions,
    seed: u64,
) -> PlannedCheck {
    let GemmShape { m, n, k } = shape;
    let draws = m * k + k * n + if options.beta == 0.0 { 0 } else { m * n };
    let compared = if gemm_compares_all(shape) { m * n } else { GEMM_SAMPLES + 4 };
    let types = if T::NAME == O::NAME { T::NAME.to_string() } else { format!("{}->{}", T::NAME, O::NAME) };
    let scalars = if options.beta == 0.0 { String::new() } else { format!(" a={} b={}", options.alpha, options.beta) };
    let kernel = match (options.variant, options.skinny) {
        (Variant::Auto, SkinnyChoice::WhereApplies) => "skinny",
        (variant, _) => variant.label(),
    };
    let what = format!("gemm {} {m}x{n}x{k} {types} {kernel}{scalars}", options.layout);
    PlannedCheck::new(what, (2 * draws + compared * k) as u64, move |gpu| {
        Ok(vec![gemm_check::<T, O>(gpu, shape, options, seed)?])
    })
}

/// GEMM shapes every check covers in layout tn: single elements, odd sizes, M or N below one tile, K = 8, several
/// waves, and every dimension odd: then each operand's rows are no multiple of 16 bytes in every layout, so the plan
/// reads both from staged copies ([`crate::ops::gemm`]).
pub const GEMM_SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 8),
    (1000, 1000, 1000),
    (4097, 4095, 4104),
    (100, 3000, 64),
    (3000, 100, 512),
    (128, 256, 8),
    (4096, 4096, 4096),
    (1001, 999, 1003),
];

/// [`GEMM_SHAPES`] as each layout reads them in place, but for the last, which no layout does (TMA reads an operand
/// in place when its contiguous dimension is a multiple of 8). The others stay odd where the layout allows, and
/// partial tiles stay partial: 4095 becomes 4088 (a partial 64-wide box as well as a partial tile), 4097 becomes
/// 4104 (8 rows into a new tile), 1 becomes 8, 100 becomes 104. GemmLayout nt reads any K in place, so it gets odd
/// ones (1, 4097, 515).
pub fn gemm_shapes(layout: GemmLayout) -> &'static [(usize, usize, usize)] {
    match layout {
        GemmLayout::Tn => GEMM_SHAPES,
        GemmLayout::Tt => &[
            (1, 8, 8),
            (1000, 1000, 1000),
            (4097, 4088, 4104),
            (100, 3000, 64),
            (3000, 104, 512),
            (128, 256, 8),
            (4096, 4096, 4096),
            (1001, 999, 1003),
        ],
        GemmLayout::Nt => &[
            (8, 8, 1),
            (1000, 1000, 1000),
            (4104, 4088, 4097),
            (104, 3000, 64),
            (3000, 104, 515),
            (128, 256, 8),
            (4096, 4096, 4096),
            (1001, 999, 1003),
        ],
        GemmLayout::Nn => &[
            (8, 1, 8),
            (1000, 1000, 1000),
            (4104, 4095, 4104),
            (104, 3000, 64),
            (3000, 100, 512),
            (128, 256, 8),
            (4096, 4096, 4096),
            (1001, 999, 1003),
        ],
    }
}

/// A mid-sized shape with partial tiles in M and N, odd wherever the layout allows it: for the epilogue's
/// scalars, f32 output and f16.
pub fn odd_shape(layout: GemmLayout) -> GemmShape {
    let (m, n, k) = match layout {
        GemmLayout::Tn => (333, 777, 264),
        GemmLayout::Tt => (333, 776, 264),
        GemmLayout::Nt => (336, 776, 263),
        GemmLayout::Nn => (336, 777, 264),
    };
    GemmShape::new(m, n, k)
}

/// Output elements checked against the float64 reference when the full product would be too slow on a CPU.
const GEMM_SAMPLES: usize = 20_000;

/// Whether the GEMM check compares every element of D with float64 (up to 2^27 multiply-adds), or the corners
/// and [`GEMM_SAMPLES`] random ones.
fn gemm_compares_all(shape: GemmShape) -> bool {
    shape.m * shape.n * shape.k <= 1 << 27
}

/// An operand of `lines` rows (A) or columns (B) of `k` values each, with each line's values consecutive:
/// `values` itself when `contiguous`, or else its transpose (`values` holds p·lines + line), built on every core.
fn k_contiguous<T: Copy + Send + Sync>(values: &[T], lines: usize, k: usize, contiguous: bool) -> Cow<'_, [T]> {
    if contiguous || values.is_empty() {
        return Cow::Borrowed(values);
    }
    // Blocks of lines, so that the reads of one p are a run of BLOCK consecutive values.
    const BLOCK: usize = 64;
    let mut out = vec![values[0]; values.len()];
    out.par_chunks_mut(BLOCK * k).enumerate().for_each(|(block, out)| {
        let first = block * BLOCK;
        for p in 0..k {
            let column = &values[p * lines + first..][..out.len() / k];
            for (line, &value) in out.chunks_mut(k).zip(column) {
                line[p] = value;
            }
        }
    });
    Cow::Owned(out)
}

/// A type the GEMM check can draw, widen and poison, as input or output.
pub trait CheckValue:
    cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy + Send + Sync + 'static
{
    const POISON: Self;
    /// The smallest positive normal value. Below it the type's spacing stops shrinking with the value, so an error is
    /// measured relative to at least this much: a product of two normal draws can land among f16's subnormals
    /// (|a·b| < 6.1e-5, a few elements in ten thousand), where one rounding is up to 2^-25 absolute, far more than 2^-12
    /// of the value.
    const SMALLEST_NORMAL: f64;
    /// Largest relative error of a GEMM of depth `k` whose D has this type, relative to |alpha|·Σ|a·b| + |beta·c|
    /// (at least [`CheckValue::SMALLEST_NORMAL`]).
    fn gemm_bound(k: usize) -> f64;
    fn from_f32(v: f32) -> Self;
    fn to_f64(self) -> f64;
    /// The raw bits, widened: tells one NaN pattern (the poison) from another.
    fn to_bits(self) -> u32;
}

/// An input type of the checked GEMM.
pub trait CheckElement: GemmElement + CheckValue {}

impl<T: GemmElement + CheckValue> CheckElement for T {}

impl CheckValue for bf16 {
    const POISON: Self = reference::POISON_BF16;
    const SMALLEST_NORMAL: f64 = 1.1754943508222875e-38;
    /// One rounding of the output (2^-9 of it) plus f32 accumulation, with margin.
    fn gemm_bound(_k: usize) -> f64 {
        1e-2
    }
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn to_bits(self) -> u32 {
        bf16::to_bits(self) as u32
    }
}

impl CheckValue for f16 {
    const POISON: Self = f16::from_bits(0x7e5e);
    const SMALLEST_NORMAL: f64 = 6.103515625e-5;
    /// One rounding of the output (2^-12 of it) plus f32 accumulation, with margin.
    fn gemm_bound(_k: usize) -> f64 {
        2e-3
    }
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn to_bits(self) -> u32 {
        f16::to_bits(self) as u32
    }
}

impl CheckValue for f32 {
    const POISON: Self = POISON_F32;
    const SMALLEST_NORMAL: f64 = f32::MIN_POSITIVE as f64;
    /// No output rounding to speak of, so the bound is the accumulation's: the products of two bf16 or f16 values
    /// are exact in f32, and each of the k additions and the epilogue's two operations loses at most one f32 ulp
    /// of a magnitude no larger than the reference scale (one ulp, not half: the tensor cores' adders need not
    /// round to nearest). (k + 4)·2^-23: 4.9e-4 at k = 4104, 1.4e-6 at k = 8 — far tighter than the 16-bit
    /// outputs' bounds, so these checks also catch a wrong k-slice that output rounding would hide.
    fn gemm_bound(k: usize) -> f64 {
        (k as f64 + 4.0) * 2f64.powi(-23)
    }
    fn from_f32(v: f32) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn to_bits(self) -> u32 {
        f32::to_bits(self)
    }
}

/// D = alpha·A·B + beta·D on the GPU against float64, A and B of type `T` in the layout of `options`, D of type
/// `O`: every element must be written (poison, or a random D when beta ≠ 0) and finite; all elements (small
/// problems) or a random sample are compared with the exact dot product, relative to |alpha|·Σ|a·b| + |beta·d|.
pub fn gemm_check<T: CheckElement, O: GemmOutput<T> + CheckValue>(
    gpu: &Gpu,
    shape: GemmShape,
    options: GemmOptions,
    seed: u64,
) -> Result<CheckReport> {
    let mut reports = gemm_check_launches::<T, O>(gpu, shape, options, seed, 1)?;
    Ok(reports.remove(0))
}

/// [`gemm_check`] for `launches` launches of one plan, one report each: launch `i` draws new A, B and D from
/// `seed + i` into the same buffers (a plan is bound to its operands' addresses), so state a launch leaves behind in
/// the plan (the stream-K flags and partials) cannot pass for the next one's results.
pub fn gemm_check_launches<T: CheckElement, O: GemmOutput<T> + CheckValue>(
    gpu: &Gpu,
    shape: GemmShape,
    options: GemmOptions,
    seed: u64,
    launches: usize,
) -> Result<Vec<CheckReport>> {
    let GemmShape { m, n, k } = shape;
    let stream = gpu.stream();
    // Every launch uploads its own A, B and D before it runs.
    let (mut a_dev, mut b_dev) = (stream.alloc_zeros::<T>(m * k)?, stream.alloc_zeros::<T>(k * n)?);
    let mut d_dev = stream.alloc_zeros::<O>(m * n)?;
    let plan = gemm::GemmPlan::<T, O>::new(gpu, shape, options, &a_dev, &b_dev)?;
    let kernel = plan.kernel();
    let mut reports = Vec::with_capacity(launches);
    for launch in 0..launches as u64 {
        let seed = seed.wrapping_add(launch);
        let (a, b, d_in) = gemm_inputs::<T, O>(shape, &options, seed);
        stream.memcpy_htod(&a, &mut a_dev)?;
        stream.memcpy_htod(&b, &mut b_dev)?;
        stream.memcpy_htod(&d_in, &mut d_dev)?;
        plan.launch(gpu, &a_dev, &b_dev, &mut d_dev)?;
        let d = stream.clone_dtoh(&d_dev)?;

        let (positions, want) = gemm_reference(shape, &options, &a, &b, &d_in, seed);
        let want = want.into_iter().map(|(value, scale)| (value, scale.max(O::SMALLEST_NORMAL)));
        let mut comparison = Comparison::of(positions.iter().map(|&(i, j)| d[i * n + j].to_f64()), want);
        comparison.not_finite = d.par_iter().filter(|v| !v.to_f64().is_finite()).count();
        let types = if T::NAME == O::NAME { T::NAME.to_string() } else { format!("{}->{}", T::NAME, O::NAME) };
        let scalars = if (options.alpha, options.beta) == (1.0, 0.0) {
            String::new()
        } else {
            format!(" a={} b={}", options.alpha, options.beta)
        };
        let repeat = if launches > 1 { format!(" launch {}/{launches}", launch + 1) } else { String::new() };
        reports.push(CheckReport {
            kernel: kernel.name,
            problem: format!("{m}x{n}x{k} {} {types}{scalars}{repeat}", options.layout),
            comparison,
            bound: O::gemm_bound(k),
        });
    }
    Ok(reports)
}

/// N(0, 1) values drawn from `seed` (on every core) and rounded to `V`.
fn draw<V: CheckValue>(len: usize, seed: u64) -> Vec<V> {
    reference::randn(len, 1.0, seed).into_par_iter().map(V::from_f32).collect()
}

/// Fresh A, B and D of one launch of a GEMM check, drawn from `seed`: D is poison unless beta ≠ 0 reads it.
pub fn gemm_inputs<T: CheckValue, O: CheckValue>(
    shape: GemmShape,
    options: &GemmOptions,
    seed: u64,
) -> (Vec<T>, Vec<T>, Vec<O>) {
    let GemmShape { m, n, k } = shape;
    let d_in = if options.beta == 0.0 { vec![O::POISON; m * n] } else { draw(m * n, seed ^ 0xd) };
    (draw(m * k, seed), draw(k * n, seed ^ 0x51), d_in)
}

/// The (row, column) positions a GEMM check compares, and for each the exact value and its magnitude.
pub type GemmReference = (Vec<(usize, usize)>, Vec<(f64, f64)>);

/// The float64 reference of D = alpha·A·B + beta·D_in (A and B in the orders of `options`) at the elements a
/// check compares: all of them ([`gemm_compares_all`]) or the four corners and [`GEMM_SAMPLES`] drawn from `seed`.
/// Returns those (row, column) positions and, for each, the exact value and the magnitude
/// |alpha|·Σ|a·b| + |beta·d| the error bounds are relative to; computed on every core.
pub fn gemm_reference<T: CheckValue, O: CheckValue>(
    shape: GemmShape,
    options: &GemmOptions,
    a: &[T],
    b: &[T],
    d_in: &[O],
    seed: u64,
) -> GemmReference {
    let GemmShape { m, n, k } = shape;
    // A's rows and B's columns with their K values consecutive, so that each dot product streams through
    // memory instead of striding across it (one cache line per term in the MN-major layouts).
    let a_rows = k_contiguous(a, m, k, options.layout.a_order() == Order::RowMajor);
    let b_cols = k_contiguous(b, n, k, options.layout.b_order() == Order::ColMajor);
    // Each element alone, its terms summed in order of p: the same float64 values on any number of threads.
    let expected = |i: usize, j: usize| {
        let (mut dot, mut magnitude) = (0.0f64, 0.0f64);
        for (x, y) in a_rows[i * k..][..k].iter().zip(&b_cols[j * k..][..k]) {
            let term = x.to_f64() * y.to_f64();
            dot += term;
            magnitude += term.abs();
        }
        let c = if options.beta == 0.0 { 0.0 } else { options.beta as f64 * d_in[i * n + j].to_f64() };
        (options.alpha as f64 * dot + c, options.alpha.abs() as f64 * magnitude + c.abs())
    };
    let positions: Vec<(usize, usize)> = if gemm_compares_all(shape) {
        (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect()
    } else {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5a3);
        let corners = [(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
        corners.into_iter().chain((0..GEMM_SAMPLES).map(|_| (rng.random_range(0..m), rng.random_range(0..n)))).collect()
    };
    let want = positions.par_iter().map(|&(i, j)| expected(i, j)).collect();
    (positions, want)
}

pub fn axpy_f32(gpu: &Gpu, len: usize, seed: u64) -> Result<CheckReport> {
    let alpha = 1.5f32;
    let x = reference::randn(len, 1.0, seed);
    let y = reference::randn(len, 1.0, seed ^ 0x9e37_79b9);
    let stream = gpu.stream();
    let x_dev = stream.clone_htod(&x)?;
    let mut y_dev = stream.clone_htod(&y)?;
    elementwise::axpy_f32(gpu, alpha, &x_dev, &mut y_dev)?;
    let out = stream.clone_dtoh(&y_dev)?;
    let want = reference::axpy(alpha as f64, &widen(&x), &widen(&y));
    // f32 fma or mul+add: within two f32 roundings of the magnitude.
    let bound = 2.0 * f32::EPSILON as f64;
    Ok(CheckReport {
        kernel: "axpy_f32",
        problem: format!("n={len}"),
        comparison: Comparison::of(out.iter().map(|&v| v as f64), want),
        bound,
    })
}

pub fn axpy_bf16(gpu: &Gpu, len: usize, seed: u64) -> Result<CheckReport> {
    let alpha = 1.5f32;
    let x = reference::to_bf16(&reference::randn(len, 1.0, seed));
    let y = reference::to_bf16(&reference::randn(len, 1.0, seed ^ 0x9e37_79b9));
    let stream = gpu.stream();
    let x_dev = stream.clone_htod(&x)?;
    let mut y_dev = stream.clone_htod(&y)?;
    elementwise::axpy_bf16(gpu, alpha, &x_dev, &mut y_dev)?;
    let out = stream.clone_dtoh(&y_dev)?;
    let want = reference::axpy(alpha as f64, &widen_bf16(&x), &widen_bf16(&y));
    // One rounding to bf16 (8 significant bits): half an ulp, 2^-8 relative, plus f32 arithmetic.
    let bound = 2f64.powi(-8) + 4.0 * f32::EPSILON as f64;
    Ok(CheckReport {
        kernel: "axpy_bf16",
        problem: format!("n={len}"),
        comparison: Comparison::of(out.iter().map(|v| v.to_f64()), want),
        bound,
    })
}

pub fn exp2_f32(gpu: &Gpu, len: usize, seed: u64) -> Result<CheckReport> {
    // Spread over [-100, 100] so results stay normal: ex2.approx.ftz flushes subnormals.
    let x: Vec<f32> = reference::randn(len, 30.0, seed).into_iter().map(|v| v.clamp(-100.0, 100.0)).collect();
    let stream = gpu.stream();
    let x_dev = stream.clone_htod(&x)?;
    let mut y_dev = stream.clone_htod(&vec![POISON_F32; len])?;
    elementwise::exp2_f32(gpu, &x_dev, &mut y_dev)?;
    let out = stream.clone_dtoh(&y_dev)?;
    let want = reference::exp2(&widen(&x));
    // PTX ISA: ex2.approx.f32 has a maximum relative error of 2^-22 over the normal range; allow rounding to f32.
    let bound = 2f64.powi(-22) + f32::EPSILON as f64;
    let comparison = Comparison::of(out.iter().map(|&v| v as f64), want.into_iter().map(|w| (w, w)));
    Ok(CheckReport { kernel: "exp2_f32", problem: format!("n={len}"), comparison, bound })
}

/// y = exp2_poly(x) (the attention softmax's polynomial exp2) for x uniform in [−126, 0], the range the
/// attention kernel feeds it, against float64 2^x; bound 2^-10.
pub fn exp2_poly_f32(gpu: &Gpu, len: usize, seed: u64) -> Result<CheckReport> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let x: Vec<f32> = (0..len).map(|_| rng.random_range(-126.0f32..=0.0)).collect();
    let stream = gpu.stream();
    let x_dev = stream.clone_htod(&x)?;
    let mut y_dev = stream.clone_htod(&vec![POISON_F32; len])?;
    softmax::exp2_poly_f32(gpu, &x_dev, &mut y_dev)?;
    let out = stream.clone_dtoh(&y_dev)?;
    let want = reference::exp2(&widen(&x));
    let comparison = Comparison::of(out.iter().map(|&v| v as f64), want.into_iter().map(|w| (w, w)));
    Ok(CheckReport { kernel: "exp2_poly_f32", problem: format!("n={len}"), comparison, bound: exp2::REL_ERROR_BOUND })
}

/// Iterations of the throughput kernels in `oxtile check`: enough for the values to settle.
pub const EXP2_THROUGHPUT_ITERS: u32 = 64;

/// One launch of a throughput kernel: every thread's sum against float64 iterations with exact exponentials
/// (the output starts poisoned); bound 2^-10.
pub fn exp2_throughput(gpu: &Gpu, mode: Exp2Mode, iters: u32) -> Result<CheckReport> {
    let kernel = Exp2Throughput::new(gpu, mode)?;
    let stream = gpu.stream();
    let mut out_dev = stream.clone_htod(&vec![POISON_F32; kernel.threads()])?;
    kernel.launch(gpu, iters, softmax::THROUGHPUT_BIAS, &mut out_dev)?;
    let out = stream.clone_dtoh(&out_dev)?;
    Ok(CheckReport {
        kernel: mode.kernel().map_or("-", |k| k.name),
        problem: format!("{} threads x {iters} iters", kernel.threads()),
        comparison: exp2_throughput_comparison(&out, iters),
        bound: exp2::REL_ERROR_BOUND,
    })
}

/// Per-thread sums of a throughput kernel against [`exp2::throughput_reference`].
pub fn exp2_throughput_comparison(out: &[f32], iters: u32) -> Comparison {
    let want = [0, 1].map(|parity| exp2::throughput_reference(parity, iters, softmax::THROUGHPUT_BIAS));
    Comparison::of(out.iter().map(|&v| v as f64), (0..out.len()).map(|t| (want[t % 2], want[t % 2])))
}

fn widen(v: &[f32]) -> Vec<f64> {
    v.par_iter().map(|&x| x as f64).collect()
}

fn widen_bf16(v: &[bf16]) -> Vec<f64> {
    v.par_iter().map(|x| x.to_f64()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layouts_shapes_are_read_in_place_but_one_and_keep_the_edge_cases() {
        for layout in GemmLayout::ALL {
            let shapes = gemm_shapes(layout);
            let (last, in_place) = shapes.split_last().unwrap();
            for &(m, n, k) in in_place.iter().chain([&(1000, 1000, 1000)]) {
                gemm::check_tma_rows(GemmShape::new(m, n, k), layout)
                    .unwrap_or_else(|e| panic!("{layout} {m}x{n}x{k}: {e}"));
            }
            assert!([last.0, last.1, last.2].iter().all(|d| d % 2 == 1), "{layout}: {last:?} stages both operands");
            let odd = odd_shape(layout);
            gemm::check_tma_rows(odd, layout).unwrap();
            // Partial tiles in both M and N on the odd shapes (tile 128×256 and 128×64).
            assert!(!odd.m.is_multiple_of(128) && !odd.n.is_multiple_of(64), "{layout} {odd:?}");
            let has = |f: &dyn Fn(usize, usize, usize) -> bool| shapes.iter().any(|&(m, n, k)| f(m, n, k));
            assert!(has(&|m, n, _| m * n <= 64), "{layout}: no tiny problem");
            assert!(has(&|m, _, _| m < 128) && has(&|_, n, _| n < 256), "{layout}: no M or N below a tile");
            assert!(has(&|_, _, k| k <= 8), "{layout}: no shallow K");
            assert!(
                has(&|m, n, _| !m.is_multiple_of(128) && !n.is_multiple_of(256) && m > 4096),
                "{layout}: no large partial tiles"
            );
            assert!(has(&|m, n, _| m * n >= 4096 * 4096), "{layout}: nothing spans several waves");
        }
        // nt is the layout whose K is free: its shapes use odd K.
        assert!(gemm_shapes(GemmLayout::Nt).iter().any(|&(_, _, k)| !k.is_multiple_of(8)));
    }

    #[test]
    fn sweeps_plan_every_check_once() {
        // 4 elementwise kernels at 9 lengths, 5 throughput modes, 19 variants in the 2 layouts with A row-major and
        // 18 in the others at 8 shapes plus 5 checks on the odd shape, the skinny kernel's 3 checks (quick: 2) in the
        // 2 layouts with A row-major, 15 attention checks (two rows each).
        let full = plan(Sweep::Full, 1);
        assert_eq!(full.len(), 4 * 9 + 5 + 2 * (19 * 8 + 5) + 2 * (18 * 8 + 5) + 2 * 3 + 15);
        let quick = plan(Sweep::Quick, 1);
        assert_eq!(quick.len(), 4 + 5 + 2 * (19 + 5) + 2 * (18 + 5) + 2 * 2 + 15);
        for sweep in [&full, &quick] {
            let names: std::collections::HashSet<&str> = sweep.iter().map(|c| c.what.as_str()).collect();
            assert_eq!(names.len(), sweep.len(), "each check says which it is");
        }
        let work = |plan: &[PlannedCheck]| plan.iter().map(|c| c.cost).sum::<u64>();
        assert!(work(&quick) * 3 < work(&full), "quick {} of full {}", work(&quick), work(&full));
    }

    #[test]
    fn transposed_operands_give_the_strided_products() {
        // Every layout of a small GEMM against the dot products read straight from the stored orders.
        let (m, n, k) = (70, 9, 131);
        for layout in GemmLayout::ALL {
            let options = GemmOptions { layout, alpha: 0.5, beta: 2.0, ..GemmOptions::default() };
            let (a_order, b_order) = (layout.a_order(), layout.b_order());
            let shape = GemmShape::new(m, n, k);
            let (a, b, d_in) = gemm_inputs::<bf16, f32>(shape, &options, 3);
            let (positions, want) = gemm_reference(shape, &options, &a, &b, &d_in, 3);
            assert_eq!(positions.len(), m * n);
            for (&(i, j), &(value, magnitude)) in positions.iter().zip(&want) {
                let a_at = |p: usize| if a_order == Order::RowMajor { a[i * k + p] } else { a[p * m + i] };
                let b_at = |p: usize| if b_order == Order::RowMajor { b[p * n + j] } else { b[j * k + p] };
                let terms: Vec<f64> = (0..k).map(|p| a_at(p).to_f64() * b_at(p).to_f64()).collect();
                let c = 2.0 * d_in[i * n + j] as f64;
                assert_eq!(value, 0.5 * terms.iter().sum::<f64>() + c);
                assert_eq!(magnitude, 0.5 * terms.iter().map(|t| t.abs()).sum::<f64>() + c.abs());
            }
        }
    }

    /// The CPU side of one GEMM check: its inputs, the reference, the scan of D for unwritten elements.
    fn gemm_cpu_side<T: CheckElement, O: GemmOutput<T> + CheckValue>(shape: GemmShape, options: GemmOptions) {
        let (a, b, d_in) = gemm_inputs::<T, O>(shape, &options, 5);
        let (positions, want) = gemm_reference(shape, &options, &a, &b, &d_in, 5);
        let d = vec![O::from_f32(1.0); shape.m * shape.n];
        let cmp = Comparison::of(positions.iter().map(|&(i, j)| d[i * shape.n + j].to_f64()), want);
        assert_eq!(d.par_iter().filter(|v| !v.to_f64().is_finite()).count() + cmp.not_finite, 0);
    }

    /// What `oxtile check` does on the CPU, without a GPU: every input drawn and every float64 reference the full
    /// sweep compares with, on all of this machine's cores; prints wall and CPU seconds per part.
    #[test]
    #[ignore = "a timing: cargo test -p oxtile --release --lib cpu_side -- --ignored --nocapture"]
    fn cpu_side_of_the_full_sweep() {
        use std::time::Instant;

        use crate::reference::attention::{AttnProblem, attention as attention_f64, attention_row};

        // Wall and CPU seconds since `start` (the CPU time of the whole process, from /proc/self/stat, in ticks of
        // 1/100 s: what the parts cost whatever else the machine runs).
        let cpu = || {
            let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
            let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
            let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
            (ticks(11) + ticks(12)) / 100.0
        };
        let since = |(wall, cpu_start): (Instant, f64)| (wall.elapsed().as_secs_f64(), cpu() - cpu_start);
        let sweep = || {
            let start = (Instant::now(), cpu());
            for &len in ELEMENTWISE_LENGTHS {
                // axpy f32 and bf16: two inputs and a reference each; exp2 and its polynomial: one input each.
                for _ in 0..2 {
                    let (x, y) = (widen(&reference::randn(len, 1.0, 1)), widen(&reference::randn(len, 1.0, 2)));
                    let want = reference::axpy(1.5, &x, &y);
                    assert!(Comparison::of(y, want).not_finite == 0);
                }
                for _ in 0..2 {
                    let x = widen(&reference::randn(len, 30.0, 3));
                    let want: Vec<(f64, f64)> = reference::exp2(&x).into_iter().map(|w| (w, w)).collect();
                    assert!(Comparison::of(x, want).not_finite == 0);
                }
            }
            let elementwise = since(start);
            let start = (Instant::now(), cpu());
            for layout in GemmLayout::ALL {
                let odd = odd_shape(layout);
                let layout = GemmOptions { layout, ..GemmOptions::default() };
                for &(m, n, k) in gemm_shapes(layout.layout) {
                    for _ in Variant::CANDIDATES.iter().filter(|v| v.available("bf16", "bf16", layout.layout)) {
                        gemm_cpu_side::<bf16, bf16>(GemmShape::new(m, n, k), layout);
                    }
                }
                let scaled = GemmOptions { alpha: 0.5, beta: -1.25, ..layout };
                gemm_cpu_side::<bf16, bf16>(odd, scaled);
                gemm_cpu_side::<bf16, f32>(odd, layout);
                gemm_cpu_side::<bf16, f32>(odd, scaled);
                gemm_cpu_side::<f16, f16>(odd, layout);
                gemm_cpu_side::<f16, f32>(odd, scaled);
                if layout.layout.a_order() == Order::RowMajor {
                    gemm_cpu_side::<bf16, bf16>(GemmShape::new(3, 1000, 2056), layout);
                    gemm_cpu_side::<f16, f32>(GemmShape::new(3, 1000, 2056), scaled);
                    gemm_cpu_side::<bf16, bf16>(GemmShape::new(16, 576, 7168), layout);
                }
            }
            let gemm = since(start);
            let start = (Instant::now(), cpu());
            let widened = |x: &[f32]| x.iter().map(|&x| bf16::from_f32(x).to_f64()).collect::<Vec<f64>>();
            for (case, _, against, _) in attention::standard_cases() {
                let inputs = attention::AttnInputs::random(case.shape, 7);
                let (q, k, v) = (widened(&inputs.q), widened(&inputs.k), widened(&inputs.v));
                let problem = AttnProblem { shape: case.shape, causal: case.causal, scale: 0.1 };
                if against == attention::Against::Float64 {
                    assert!(attention_f64(&problem, &q, &k, &v).lse.iter().all(|x| !x.is_nan()));
                }
            }
            let (case, rows, _) = attention::STANDARD_REFERENCE_CHECK;
            let inputs = attention::AttnInputs::random(case.shape, 8);
            let (q, k, v) = (widened(&inputs.q), widened(&inputs.k), widened(&inputs.v));
            let problem = AttnProblem { shape: case.shape, causal: true, scale: 0.1 };
            let lse: f64 =
                (0..rows).into_par_iter().map(|i| attention_row(&problem, &q, &k, &v, 0, 1, i * 15).lse).sum();
            assert!(lse.is_finite());
            [("elementwise", elementwise), ("gemm", gemm), ("attention", since(start))]
        };
        let parts = sweep();
        println!("{} threads, wall and CPU seconds:", rayon::current_num_threads());
        for (part, (wall, cpu)) in parts {
            println!("  {part:<12} {wall:>7.1} s wall {cpu:>7.1} s CPU");
        }
        let total = |f: fn(&(f64, f64)) -> f64| parts.iter().map(|(_, t)| f(t)).sum::<f64>();
        println!("  {:<12} {:>7.1} s wall {:>7.1} s CPU", "total", total(|t| t.0), total(|t| t.1));
    }

    #[test]
    fn f32_output_bounds_grow_with_depth_and_stay_below_16_bit_ones() {
        assert!(f32::gemm_bound(8) < 2e-6);
        assert!(f32::gemm_bound(4104) < 5e-4);
        assert!(f32::gemm_bound(8192) < f16::gemm_bound(8192) && f16::gemm_bound(1) < bf16::gemm_bound(1));
    }
}
