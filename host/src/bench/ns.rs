//! Issue 29's benchmark: the symmetric GEMM against our full GEMM and cuBLASLt for the same n×n output X·Xᵀ, and
//! Gram Newton-Schulz against the standard iteration on our kernels, all in this process.
//!
//! GEMM rows count the full product's 2·n²·k FLOPs whatever each computes, so TFLOP/s compare times; the ratio
//! column is cuBLASLt's time over each row's (above 1: faster than cuBLASLt). Newton-Schulz rows: the ratio is the
//! standard iteration's time over each row's (torch's, when its rows are merged). Newton-Schulz is timed as
//! [`NewtonSchulzPlan`]s made before the timing: each timed call only launches kernels (its work buffers and GEMM
//! plans exist already), as the GEMM rows time plans.

use cudarc::driver::CudaSlice;
use half::bf16;

use super::gemm::{GemmContender, GemmProblem, Operands};
use super::inputs::InputPool;
use super::peers::cublas::CublasLt;
use super::report::Row;
use super::stats::Stats;
use super::timing::{TimingConfig, time_gpu};
use crate::error::Result;
use crate::kernels;
use crate::ops::gemm::{self, GemmLayout, GemmOptions, GemmShape};
use crate::ops::gemm_symmetric::{SymmetricOptions, SymmetricPlan, SymmetricShape, SymmetricVariant};
use crate::ops::newton_schulz::{self, NewtonSchulzPlan, NsMethod, StackShape};
use crate::runtime::Gpu;
use crate::types::Dtype;

/// The symmetric GEMM's default problems (n, k): n = 4096 and 8192 with the k of Llama-3-8B/70B and Qwen3-class
/// projections (4096, 14336; 8192, 28672) and the square Gram products of Newton-Schulz (k = n).
pub const DEFAULT_GEMMS: [(usize, usize); 5] = [(4096, 4096), (4096, 14336), (8192, 8192), (8192, 28672), (2048, 8192)];

/// Newton-Schulz's default stacks (batch, rows, columns): the MLP and attention weights of Llama-3-8B/70B-class
/// models, wide, tall and square, single and stacked.
pub const DEFAULT_NS: [(usize, usize, usize); 6] =
    [(1, 4096, 4096), (1, 4096, 14336), (1, 14336, 4096), (1, 2048, 8192), (4, 2048, 8192), (1, 8192, 28672)];

/// The baseline of the GEMM rows.
pub const GEMM_BASELINE: &str = "cublasLt";
/// The baseline of the Newton-Schulz rows: the standard iteration on our GEMMs.
pub const NS_BASELINE: &str = "oxtile-ns-standard";
/// Gram Newton-Schulz on the symmetric GEMM.
pub const NS_GRAM: &str = "oxtile-ns-gram";

fn row(op: &str, shape: &str, name: &str, peer: bool, work: f64, result: Result<Stats>) -> Row {
    let mut row = Row::new(op, shape.to_string(), name);
    row.kind = Some(if peer { "peer" } else { "oxtile" }.into());
    row.origin = Some("in-process".into());
    row.dtype = Some("bf16".into());
    row.work = Some(work);
    match result {
        Ok(stats) => {
            row.set_stats(&stats);
            row.tflops = Some(work / (stats.median_ms * 1e-3) / 1e12);
        }
        Err(error) => row.error = Some(error.to_string()),
    }
    row
}

/// Ratios to the row named `baseline`: its median time over each row's.
fn ratios(rows: &mut [Row], baseline: &str) {
    let Some(base) = rows.iter().find(|r| r.implementation == baseline).and_then(|r| r.ms) else { return };
    for row in rows.iter_mut() {
        row.ratio = row.ms.map(|ms| base / ms);
    }
}

/// X·Xᵀ for a bf16 X (n×k, row-major) by the symmetric GEMM, our full GEMM (layout tn, A = B = X) and cuBLASLt.
pub fn bench_symmetric(
    gpu: &Gpu,
    pool: &InputPool,
    (n, k): (usize, usize),
    timing: &TimingConfig,
    on_step: &mut dyn FnMut(&str),
) -> Result<Vec<Row>> {
    let stream = gpu.stream();
    let shape_name = format!("{n}x{n}x{k}");
    let work = 2.0 * (n * n) as f64 * k as f64;
    let x: CudaSlice<bf16> = stream.clone_htod(&pool.fill::<bf16>(n * k, 0))?;
    let mut d = stream.alloc_zeros::<bf16>(n * n)?;
    // A C for the blended rows (what Newton-Schulz's polynomial reads: W = a·I + b·R + c·R²).
    let c: CudaSlice<bf16> = stream.clone_htod(&pool.fill::<bf16>(n * n, 1))?;
    let mut rows = Vec::new();

    // Auto's choice, then every configured variant with a bf16 → bf16 kernel (the ablations of Auto's rule).
    let variants = SymmetricVariant::CONFIGURED
        .iter()
        .copied()
        .filter(|&variant| kernels::find_gemm_symmetric("bf16", "bf16", GemmLayout::Tn, variant).is_some());
    for variant in std::iter::once(SymmetricVariant::Auto).chain(variants) {
        let name = match variant {
            SymmetricVariant::Auto => "oxtile-sym".to_string(),
            variant => format!("oxtile-{}", variant.label()),
        };
        on_step(&format!("{shape_name} {name}"));
        let options = SymmetricOptions { variant, ..SymmetricOptions::default() };
        let result = (|| {
            let plan = SymmetricPlan::<bf16, bf16>::new(gpu, SymmetricShape::new(1, n, k), options, &x, &x, &mut d)?;
            time_gpu(gpu, timing, |_| plan.launch(gpu, &x, &x, &mut d))
        })();
        rows.push(row("symgemm", &shape_name, &name, false, work, result));
        // The same with the epilogue Newton-Schulz's polynomial runs: beta·C read and a diagonal added.
        let blend = format!("{name}+c");
        on_step(&format!("{shape_name} {blend}"));
        let options = SymmetricOptions { variant, beta: -0.75, diagonal: 1.5, ..SymmetricOptions::default() };
        let result = (|| {
            let plan = SymmetricPlan::<bf16, bf16>::new(gpu, SymmetricShape::new(1, n, k), options, &x, &x, &mut d)?;
            time_gpu(gpu, timing, |_| plan.launch_with_c(gpu, &x, &x, &c, &mut d))
        })();
        rows.push(row("symgemm", &shape_name, &blend, false, work, result));
    }

    on_step(&format!("{shape_name} oxtile"));
    let result = (|| {
        let shape = GemmShape::new(n, n, k);
        let plan = gemm::GemmPlan::<bf16, bf16>::new(gpu, shape, GemmOptions::default(), &x, &x)?;
        plan.bind_output(gpu, &mut d)?;
        time_gpu(gpu, timing, |_| plan.launch(gpu, &x, &x, &mut d))
    })();
    rows.push(row("symgemm", &shape_name, "oxtile", false, work, result));

    on_step(&format!("{shape_name} {GEMM_BASELINE}"));
    let result = (|| {
        let problem = GemmProblem { shape: GemmShape::new(n, n, k), dtype: Dtype::Bf16, layout: GemmLayout::Tn };
        let mut peer = CublasLt::new(gpu)?;
        peer.prepare(gpu, &problem)?;
        peer.bind(gpu, &problem, Operands::Bf16 { a: &x, b: &x, c: &mut d })?;
        time_gpu(gpu, timing, |_| peer.launch(gpu, &problem, Operands::Bf16 { a: &x, b: &x, c: &mut d }))
    })();
    rows.push(row("symgemm", &shape_name, GEMM_BASELINE, true, work, result));
    ratios(&mut rows, GEMM_BASELINE);
    Ok(rows)
}

/// Gram Newton-Schulz and the standard iteration (five Polar Express steps) on a bf16 stack.
pub fn bench_newton_schulz(
    gpu: &Gpu,
    pool: &InputPool,
    (batch, rows, columns): (usize, usize, usize),
    timing: &TimingConfig,
    on_step: &mut dyn FnMut(&str),
) -> Result<Vec<Row>> {
    let stream = gpu.stream();
    let shape = StackShape { batch, rows, columns };
    let shape_name = format!("{batch}x{rows}x{columns}");
    let coefficients = newton_schulz::polar_express();
    let x: CudaSlice<bf16> = stream.clone_htod(&pool.fill::<bf16>(shape.len(), 0))?;
    let mut out = stream.alloc_zeros::<bf16>(shape.len())?;
    // The standard iteration's FLOPs (torch's): per step X·Xᵀ, A², B·X in full.
    let (n, m) = (rows.min(columns) as f64, rows.max(columns) as f64);
    let work = batch as f64 * coefficients.len() as f64 * (2.0 * n * n * m * 2.0 + 2.0 * n * n * n);
    let mut rows_out = Vec::new();

    let gram = || NsMethod::Gram { restarts: newton_schulz::DEFAULT_RESTARTS.to_vec() };
    let mut methods = vec![
        (NS_BASELINE.to_string(), NsMethod::Standard, SymmetricVariant::Auto),
        (NS_GRAM.to_string(), gram(), SymmetricVariant::Auto),
    ];
    // Gram with every product on one 16-bit variant: the ablations of Auto's choice between them.
    for variant in [
        SymmetricVariant::SymmetricPingPong,
        SymmetricVariant::SymmetricStreamK,
        SymmetricVariant::SymmetricStreamKPingPong,
    ] {
        methods.push((format!("{NS_GRAM}-{}", variant.label()), gram(), variant));
    }
    for (name, method, variant) in methods {
        on_step(&format!("{shape_name} {name}"));
        let result = (|| {
            let mut plan =
                NewtonSchulzPlan::<bf16>::with_symmetric_variant(gpu, shape, &coefficients, method, variant)?;
            let timing = TimingConfig { operations_per_launch: plan.operations(), ..*timing };
            time_gpu(gpu, &timing, |_| plan.run(gpu, &x, &mut out))
        })();
        rows_out.push(row("ns", &shape_name, &name, false, work, result));
    }
    ratios(&mut rows_out, NS_BASELINE);
    Ok(rows_out)
}
