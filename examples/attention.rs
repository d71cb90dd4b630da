//! One attention problem through the safe API: checked against the plain GPU reference kernel, then timed.
//!
//! `cargo run --release --example attention [-- B,H,S,D,full|causal [bf16|f16] [auto|poly|mufu|eager|nopingpong]]`
//! (default 2,16,4096,128,causal bf16 auto; q, k, v packed [B, S, H, D], as many kv heads as query heads)

use cudarc::driver::sys::CUevent_flags;
use half::{bf16, f16};
use oxtile::bench::inputs::InputPool;
use oxtile::bench::suite::AttnShape as SuiteShape;
use oxtile::ops::attention::{AttnElement, AttnOptions, AttnPlan, AttnShape, AttnVariant};
use oxtile::reference;
use oxtile::verify::CheckElement;
use oxtile::verify::attention::{Against, AttnCase, check};
use oxtile::{Error, Gpu};

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: attention [B,H,S,D,full|causal [bf16|f16] [auto|poly|mufu|eager|nopingpong]]";
    let suite: SuiteShape = match args.first() {
        Some(text) => text.parse().unwrap_or_else(|e| panic!("{e}\n{usage}")),
        None => "2,16,4096,128,causal".parse().expect("default shape"),
    };
    let variant = match args.get(2).map(String::as_str) {
        None | Some("auto") => AttnVariant::Auto,
        Some("poly") => AttnVariant::Poly,
        Some("mufu") => AttnVariant::Mufu,
        Some("eager") => AttnVariant::Eager,
        Some("nopingpong") => AttnVariant::NoPingpong,
        Some(other) => panic!("unknown variant {other}\n{usage}"),
    };
    let shape = AttnShape::new(suite.batch, suite.seq, suite.seq, suite.heads, suite.heads, suite.head_dim);
    let gpu = Gpu::new(0)?;
    let passed = match args.get(1).map(String::as_str) {
        None | Some("bf16") => run::<bf16>(&gpu, shape, suite.causal, variant)?,
        Some("f16" | "fp16") => run::<f16>(&gpu, shape, suite.causal, variant)?,
        Some(other) => panic!("unknown type {other}\n{usage}"),
    };
    if !passed {
        std::process::exit(1);
    }
    Ok(())
}

/// Checks, then times the problem; whether the check passed.
fn run<T: CheckElement + AttnElement>(
    gpu: &Gpu,
    shape: AttnShape,
    causal: bool,
    variant: AttnVariant,
) -> Result<bool, Error> {
    let seed = reference::fresh_seed();
    let case = AttnCase::new(shape).causal(causal).variant(variant);
    let result = check::<T>(gpu, &case, Against::GpuReference, seed)?;
    println!("{} (seed {seed})", if result.passed() { "ok" } else { "FAIL" });
    println!("{result}");

    let stream = gpu.stream();
    let pool = InputPool::new(seed);
    let q_len = shape.batch * shape.seq_q * shape.heads_q * shape.head_dim;
    let kv_len = shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim;
    let q = stream.clone_htod(&pool.fill::<T>(q_len, InputPool::offset(0, 0)))?;
    let k = stream.clone_htod(&pool.fill::<T>(kv_len, InputPool::offset(0, 1)))?;
    let v = stream.clone_htod(&pool.fill::<T>(kv_len, InputPool::offset(1, 0)))?;
    let mut o = stream.alloc_zeros::<T>(q_len)?;
    let mut lse = stream.alloc_zeros::<f32>(shape.rows())?;
    let options = AttnOptions { causal, variant, ..AttnOptions::default() };
    let plan = AttnPlan::new(gpu, shape, options, &q, &k, &v, &mut o)?;
    for _ in 0..5 {
        plan.launch(gpu, &q, &k, &v, &mut o, &mut lse)?;
    }
    let reps = 20;
    let start = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    for _ in 0..reps {
        plan.launch(gpu, &q, &k, &v, &mut o, &mut lse)?;
    }
    let end = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    end.synchronize()?;
    let ms = start.elapsed_ms(&end)? as f64 / reps as f64;
    println!(
        "{} {shape} {} {}: {ms:.3} ms, {:.1} TFLOP/s (`oxtile bench attn` compares with cuDNN)",
        plan.kernel().name,
        if causal { "causal" } else { "full" },
        T::NAME,
        shape.flops(causal) / ms / 1e9
    );
    Ok(result.passed())
}
