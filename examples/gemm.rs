//! One GEMM through the safe API: check it against float64, time it beside cuBLAS.
//!
//! `cargo run --release --example gemm -- [M N K]` (default 8192³, bf16, TN)

use cudarc::driver::sys::CUevent_flags;
use half::bf16;
use oxtile::Gpu;
use oxtile::ops::gemm::{GemmOptions, GemmPlan, GemmShape};
use oxtile::reference;
use oxtile::verify;

fn main() -> Result<(), oxtile::Error> {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("M N K as integers")).collect();
    let shape = match args[..] {
        [m, n, k] => GemmShape::new(m, n, k),
        _ => GemmShape::new(8192, 8192, 8192),
    };
    let gpu = Gpu::new(0)?;
    let seed = reference::fresh_seed();
    let report = verify::gemm_check::<bf16>(&gpu, shape, GemmOptions::default(), seed)?;
    println!("{}", verify::CheckReport::table(std::slice::from_ref(&report)));

    let stream = gpu.stream();
    let upload = |len, seed| stream.clone_htod(&reference::to_bf16(&reference::randn(len, 1.0, seed)));
    let (a, b) = (upload(shape.m * shape.k, seed)?, upload(shape.k * shape.n, seed + 1)?);
    let mut d = stream.alloc_zeros::<bf16>(shape.m * shape.n)?;
    let plan = GemmPlan::new(&gpu, shape, GemmOptions::default(), &a, &b)?;
    for _ in 0..5 {
        plan.launch(&gpu, &a, &b, &mut d)?;
    }
    let reps = 20;
    let start = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    for _ in 0..reps {
        plan.launch(&gpu, &a, &b, &mut d)?;
    }
    let end = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    end.synchronize()?;
    let ms = start.elapsed_ms(&end)? as f64 / reps as f64;
    println!(
        "oxtile {}x{}x{} bf16 tn: {ms:.3} ms, {:.1} TFLOP/s (`oxtile bench gemm` compares with cuBLAS)",
        shape.m,
        shape.n,
        shape.k,
        shape.flops() / ms / 1e9
    );
    if !report.passed() {
        std::process::exit(1);
    }
    Ok(())
}
