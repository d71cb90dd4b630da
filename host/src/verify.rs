//! GPU results against float64 CPU references: fresh normal inputs, poisoned outputs, error bounds fitted to
//! each kernel's precision. Used by `oxtile check` and the GPU integration tests.
//!
//! [`attention`] holds the attention checks.

pub mod attention;

use half::{bf16, f16};
use rand::{Rng, SeedableRng};

use crate::error::Result;
use crate::exp2;
use crate::ops::elementwise;
use crate::ops::gemm::{self, GemmElement, GemmOptions, GemmOutput, GemmShape, LAYOUTS, Order, Variant};
use crate::ops::softmax::{self, Exp2Mode, Exp2Throughput};
use crate::reference::{self, Comparison, POISON_F32};
use crate::runtime::Gpu;

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

/// Every kernel at every checked size, each report handed to `on_report` as soon as it is made (a full check runs
/// for minutes; a caller can show progress, and where a check stops).
pub fn all(gpu: &Gpu, seed: u64, on_report: impl FnMut(&CheckReport)) -> Result<Vec<CheckReport>> {
    let mut reports = Reports { reports: Vec::new(), on_report };
    for (i, &len) in ELEMENTWISE_LENGTHS.iter().enumerate() {
        let seed = seed.wrapping_add(i as u64 * 3);
        reports.push(axpy_f32(gpu, len, seed)?);
        reports.push(axpy_bf16(gpu, len, seed + 1)?);
        reports.push(exp2_f32(gpu, len, seed + 2)?);
        reports.push(exp2_poly_f32(gpu, len, seed + 3)?);
    }
    for mode in Exp2Mode::ALL {
        reports.push(exp2_throughput(gpu, mode, EXP2_THROUGHPUT_ITERS)?);
    }
    // Every layout: every shape it takes with each tile configuration (bf16), then f32 output, f16 and the
    // epilogue's scalars on one odd shape.
    for (l, &(a_order, b_order)) in LAYOUTS.iter().enumerate() {
        let seed = seed + 1000 * (l as u64 + 1);
        let layout = GemmOptions { a_order, b_order, ..GemmOptions::default() };
        for (i, &(m, n, k)) in gemm_shapes(a_order, b_order).iter().enumerate() {
            let shape = GemmShape::new(m, n, k);
            for (j, variant) in Variant::CANDIDATES.into_iter().enumerate() {
                let options = GemmOptions { variant, ..layout };
                reports.push(gemm_check::<bf16, bf16>(gpu, shape, options, seed + 10 * i as u64 + j as u64)?);
            }
        }
        let odd = odd_shape(a_order, b_order);
        let scaled = GemmOptions { alpha: 0.5, beta: -1.25, ..layout };
        reports.push(gemm_check::<bf16, bf16>(gpu, odd, scaled, seed + 200)?);
        reports.push(gemm_check::<bf16, f32>(gpu, odd, layout, seed + 201)?);
        reports.push(gemm_check::<bf16, f32>(gpu, odd, scaled, seed + 202)?);
        reports.push(gemm_check::<f16, f16>(gpu, odd, layout, seed + 203)?);
        reports.push(gemm_check::<f16, f32>(gpu, odd, scaled, seed + 204)?);
    }
    for check in attention::standard_checks(gpu, seed + 300)? {
        for report in check.reports() {
            reports.push(report);
        }
    }
    Ok(reports.reports)
}

/// The reports made so far, each shown to the caller's `on_report` as it is added.
struct Reports<F: FnMut(&CheckReport)> {
    reports: Vec<CheckReport>,
    on_report: F,
}

impl<F: FnMut(&CheckReport)> Reports<F> {
    fn push(&mut self, report: CheckReport) {
        (self.on_report)(&report);
        self.reports.push(report);
    }
}

/// GEMM shapes every check covers in layout tn: single elements, odd sizes, M or N below one tile, K = 8, several
/// waves.
pub const GEMM_SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 8),
    (1000, 1000, 1000),
    (4097, 4095, 4104),
    (100, 3000, 64),
    (3000, 100, 512),
    (128, 256, 8),
    (4096, 4096, 4096),
];

/// [`GEMM_SHAPES`] as each layout can take them ([`gemm::check_layout`]: the contiguous dimension of each operand
/// is a multiple of 8). The others stay odd where the layout allows, and partial tiles stay partial: 4095 becomes
/// 4088 (a partial 64-wide box as well as a partial tile), 4097 becomes 4104 (8 rows into a new tile), 1 becomes 8,
/// 100 becomes 104. Layout nt takes any K, so it gets odd ones (1, 4097, 515).
pub fn gemm_shapes(a_order: Order, b_order: Order) -> &'static [(usize, usize, usize)] {
    match gemm::layout_name(a_order, b_order) {
        "tn" => GEMM_SHAPES,
        "tt" => &[
            (1, 8, 8),
            (1000, 1000, 1000),
            (4097, 4088, 4104),
            (100, 3000, 64),
            (3000, 104, 512),
            (128, 256, 8),
            (4096, 4096, 4096),
        ],
        "nt" => &[
            (8, 8, 1),
            (1000, 1000, 1000),
            (4104, 4088, 4097),
            (104, 3000, 64),
            (3000, 104, 515),
            (128, 256, 8),
            (4096, 4096, 4096),
        ],
        _ => &[
            (8, 1, 8),
            (1000, 1000, 1000),
            (4104, 4095, 4104),
            (104, 3000, 64),
            (3000, 100, 512),
            (128, 256, 8),
            (4096, 4096, 4096),
        ],
    }
}

/// A mid-sized shape with partial tiles in M and N, odd wherever the layout allows it: for the epilogue's
/// scalars, f32 output and f16.
pub fn odd_shape(a_order: Order, b_order: Order) -> GemmShape {
    let (m, n, k) = match gemm::layout_name(a_order, b_order) {
        "tn" => (333, 777, 264),
        "tt" => (333, 776, 264),
        "nt" => (336, 776, 263),
        _ => (336, 777, 264),
    };
    GemmShape::new(m, n, k)
}

/// Output elements checked against the float64 reference when the full product would be too slow on a CPU.
const GEMM_SAMPLES: usize = 20_000;

/// A type the GEMM check can draw, widen and poison, as input or output.
pub trait CheckValue: cudarc::driver::DeviceRepr + Copy + 'static {
    const POISON: Self;
    /// Largest relative error of a GEMM of depth `k` whose D has this type, relative to |alpha|·Σ|a·b| + |beta·c|.
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
    fn draw<V: CheckValue>(len: usize, seed: u64) -> Vec<V> {
        reference::randn(len, 1.0, seed).into_iter().map(V::from_f32).collect()
    }
    let stream = gpu.stream();
    let zeros = |len| vec![T::from_f32(0.0); len];
    let (mut a_dev, mut b_dev) = (stream.clone_htod(&zeros(m * k))?, stream.clone_htod(&zeros(k * n))?);
    let mut d_dev = stream.clone_htod(&vec![O::POISON; m * n])?;
    let plan = gemm::GemmPlan::<T, O>::new(gpu, shape, options, &a_dev, &b_dev)?;
    let kernel = plan.kernel();
    let mut reports = Vec::with_capacity(launches);
    for launch in 0..launches as u64 {
        let seed = seed.wrapping_add(launch);
        let a: Vec<T> = draw(m * k, seed);
        let b: Vec<T> = draw(k * n, seed ^ 0x51);
        let d_in: Vec<O> = if options.beta == 0.0 { vec![O::POISON; m * n] } else { draw(m * n, seed ^ 0xd) };
        stream.memcpy_htod(&a, &mut a_dev)?;
        stream.memcpy_htod(&b, &mut b_dev)?;
        stream.memcpy_htod(&d_in, &mut d_dev)?;
        plan.launch(gpu, &a_dev, &b_dev, &mut d_dev)?;
        let d = stream.clone_dtoh(&d_dev)?;

        let a_at = |i: usize, p: usize| match options.a_order {
            Order::RowMajor => a[i * k + p],
            Order::ColMajor => a[p * m + i],
        };
        let b_at = |p: usize, j: usize| match options.b_order {
            Order::RowMajor => b[p * n + j],
            Order::ColMajor => b[j * k + p],
        };
        let expected = |i: usize, j: usize| {
            let (mut dot, mut magnitude) = (0.0f64, 0.0f64);
            for p in 0..k {
                let term = a_at(i, p).to_f64() * b_at(p, j).to_f64();
                dot += term;
                magnitude += term.abs();
            }
            let c = if options.beta == 0.0 { 0.0 } else { options.beta as f64 * d_in[i * n + j].to_f64() };
            (options.alpha as f64 * dot + c, options.alpha.abs() as f64 * magnitude + c.abs())
        };
        let positions: Vec<(usize, usize)> = if m * n * k <= 1 << 27 {
            (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect()
        } else {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5a3);
            let corners = [(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
            corners
                .into_iter()
                .chain((0..GEMM_SAMPLES).map(|_| (rng.random_range(0..m), rng.random_range(0..n))))
                .collect()
        };
        let mut comparison = Comparison::of(
            positions.iter().map(|&(i, j)| d[i * n + j].to_f64()),
            positions.iter().map(|&(i, j)| expected(i, j)),
        );
        comparison.not_finite = d.iter().filter(|v| !v.to_f64().is_finite()).count();
        let types = if T::NAME == O::NAME { T::NAME.to_string() } else { format!("{}->{}", T::NAME, O::NAME) };
        let scalars = if (options.alpha, options.beta) == (1.0, 0.0) {
            String::new()
        } else {
            format!(" a={} b={}", options.alpha, options.beta)
        };
        let repeat = if launches > 1 { format!(" launch {}/{launches}", launch + 1) } else { String::new() };
        reports.push(CheckReport {
            kernel: kernel.name,
            problem: format!("{m}x{n}x{k} {} {types}{scalars}{repeat}", options.layout()),
            comparison,
            bound: O::gemm_bound(k),
        });
    }
    Ok(reports)
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
    v.iter().map(|&x| x as f64).collect()
}

fn widen_bf16(v: &[bf16]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layouts_shapes_are_loadable_and_keep_the_edge_cases() {
        for (a_order, b_order) in LAYOUTS {
            let layout = gemm::layout_name(a_order, b_order);
            let shapes = gemm_shapes(a_order, b_order);
            for &(m, n, k) in shapes.iter().chain([&(1000, 1000, 1000)]) {
                gemm::check_layout(GemmShape::new(m, n, k), a_order, b_order)
                    .unwrap_or_else(|e| panic!("{layout} {m}x{n}x{k}: {e}"));
            }
            let odd = odd_shape(a_order, b_order);
            gemm::check_layout(odd, a_order, b_order).unwrap();
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
        assert!(gemm_shapes(Order::ColMajor, Order::RowMajor).iter().any(|&(_, _, k)| !k.is_multiple_of(8)));
    }

    #[test]
    fn f32_output_bounds_grow_with_depth_and_stay_below_16_bit_ones() {
        assert!(f32::gemm_bound(8) < 2e-6);
        assert!(f32::gemm_bound(4104) < 5e-4);
        assert!(f32::gemm_bound(8192) < f16::gemm_bound(8192) && f16::gemm_bound(1) < bf16::gemm_bound(1));
    }
}
