//! One attention backward problem through the safe API: the forward kernel's O and LSE, then dQ, dK and dV by the
//! Hopper backward checked against the plain GPU reference kernel, then the backward alone timed.
//!
//! `cargo run --release --example attention_backward [-- B,H,S,D,full|causal [bf16|f16]]`
//! (default 2,16,4096,128,causal bf16; q, k, v packed [B, S, H, D], as many kv heads as query heads). FLOPs: 2.5 × the
//! forward's (five products against two), halved for causal.

use cudarc::driver::CudaSlice;
use cudarc::driver::sys::CUevent_flags;
use half::{bf16, f16};
use oxtile::bench::inputs::InputPool;
use oxtile::bench::suite::AttnShape as SuiteShape;
use oxtile::ops::attention::{self, AttnElement, AttnOptions, AttnShape};
use oxtile::ops::attention_backward::{AttnBwdPlan, attention_backward_reference};
use oxtile::reference;
use oxtile::verify::CheckElement;
use oxtile::{Error, Gpu};

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: attention_backward [B,H,S,D,full|causal [bf16|f16]]";
    let suite: SuiteShape = match args.first() {
        Some(text) => text.parse().unwrap_or_else(|e| panic!("{e}\n{usage}")),
        None => "2,16,4096,128,causal".parse().expect("default shape"),
    };
    let shape = AttnShape::new(suite.batch, suite.seq, suite.seq, suite.heads, suite.heads, suite.head_dim);
    let gpu = Gpu::new(0)?;
    let passed = match args.get(1).map(String::as_str) {
        None | Some("bf16") => run::<bf16>(&gpu, shape, suite.causal)?,
        Some("f16" | "fp16") => run::<f16>(&gpu, shape, suite.causal)?,
        Some(other) => panic!("unknown type {other}\n{usage}"),
    };
    if !passed {
        std::process::exit(1);
    }
    Ok(())
}

/// Largest |ours − reference| over the largest |reference|.
fn relative_error<T: CheckElement>(gpu: &Gpu, ours: &CudaSlice<T>, reference: &CudaSlice<f32>) -> Result<f64, Error> {
    let ours = gpu.stream().clone_dtoh(ours)?;
    let reference = gpu.stream().clone_dtoh(reference)?;
    let scale = reference.iter().fold(0.0f64, |m, &r| m.max((r as f64).abs())).max(f64::MIN_POSITIVE);
    let worst = ours.iter().zip(&reference).fold(0.0f64, |m, (o, &r)| {
        let error = (o.to_f64() - r as f64).abs();
        if error.is_nan() { f64::INFINITY } else { m.max(error) }
    });
    Ok(worst / scale)
}

/// Checks, then times the problem; whether the check passed (2^-6 of the largest |reference| for bf16, 2^-8 for
/// f16, as tests/attention_backward.rs).
fn run<T: CheckElement + AttnElement>(gpu: &Gpu, shape: AttnShape, causal: bool) -> Result<bool, Error> {
    let seed = reference::fresh_seed();
    let stream = gpu.stream();
    let pool = InputPool::new(seed);
    let q_len = shape.rows() * shape.head_dim;
    let kv_len = shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim;
    let q = stream.clone_htod(&pool.fill::<T>(q_len, InputPool::offset(0, 0)))?;
    let k = stream.clone_htod(&pool.fill::<T>(kv_len, InputPool::offset(0, 1)))?;
    let v = stream.clone_htod(&pool.fill::<T>(kv_len, InputPool::offset(1, 0)))?;
    let d_o = stream.clone_htod(&pool.fill::<T>(q_len, InputPool::offset(1, 1)))?;
    let mut o = stream.alloc_zeros::<T>(q_len)?;
    let mut lse = stream.alloc_zeros::<f32>(shape.rows())?;
    let options = AttnOptions { causal, ..AttnOptions::default() };
    attention::attention::<T>(gpu, shape, &q, &k, &v, &mut o, &mut lse, options)?;

    let plan = AttnBwdPlan::new(gpu, shape, options, &q, &k, &v, &d_o)?;
    let (mut dq, mut dk, mut dv) =
        (stream.alloc_zeros::<T>(q_len)?, stream.alloc_zeros::<T>(kv_len)?, stream.alloc_zeros::<T>(kv_len)?);
    plan.launch(gpu, &q, &k, &v, &o, &lse, &d_o, &mut dq, &mut dk, &mut dv)?;
    let (mut rq, mut rk, mut rv) =
        (stream.alloc_zeros::<f32>(q_len)?, stream.alloc_zeros::<f32>(kv_len)?, stream.alloc_zeros::<f32>(kv_len)?);
    attention_backward_reference::<T>(gpu, shape, &q, &k, &v, &o, &lse, &d_o, &mut rq, &mut rk, &mut rv, options)?;
    let bound = if T::NAME == "bf16" { 2f64.powi(-6) } else { 2f64.powi(-8) };
    let errors = [relative_error(gpu, &dq, &rq)?, relative_error(gpu, &dk, &rk)?, relative_error(gpu, &dv, &rv)?];
    let passed = errors.iter().all(|&e| e <= bound);
    println!(
        "{} (seed {seed}): dq {:.2e} dk {:.2e} dv {:.2e} of the largest |reference| (bound {bound:.2e})",
        if passed { "ok" } else { "FAIL" },
        errors[0],
        errors[1],
        errors[2]
    );

    for _ in 0..3 {
        plan.launch(gpu, &q, &k, &v, &o, &lse, &d_o, &mut dq, &mut dk, &mut dv)?;
    }
    let reps = 10;
    let start = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    for _ in 0..reps {
        plan.launch(gpu, &q, &k, &v, &o, &lse, &d_o, &mut dq, &mut dk, &mut dv)?;
    }
    let end = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    end.synchronize()?;
    let ms = start.elapsed_ms(&end)? as f64 / reps as f64;
    println!(
        "{} {shape} {} {}: backward (preprocessing, main kernel, dQ conversion) {ms:.3} ms, {:.1} TFLOP/s",
        plan.kernel().name,
        if causal { "causal" } else { "full" },
        T::NAME,
        2.5 * shape.flops(causal) / ms / 1e9
    );
    Ok(passed)
}
