//! One GEMM through the safe API: check it against float64, time it beside cuBLAS.
//!
//! `cargo run --release --example gemm -- [M N K [LAYOUT]]` (default 8192³, bf16, layout tn; LAYOUT is tn, tt, nt
//! or nn: A then B, t = row-major, n = column-major)

use cudarc::driver::sys::CUevent_flags;
use half::bf16;
use oxtile::Gpu;
use oxtile::ops::gemm::{GemmLayout, GemmOptions, GemmPlan, GemmShape};
use oxtile::reference;
use oxtile::verify;

fn main() -> Result<(), oxtile::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let layout = GemmLayout::parse(args.get(3).map_or("tn", String::as_str)).expect("LAYOUT is one of tn, tt, nt, nn");
    let options = GemmOptions { layout, ..GemmOptions::default() };
    let dims: Vec<usize> = args.iter().take(3).map(|a| a.parse().expect("M N K as integers")).collect();
    let shape = match dims[..] {
        [m, n, k] => GemmShape::new(m, n, k),
        _ => GemmShape::new(8192, 8192, 8192),
    };
    let gpu = Gpu::new(0)?;
    let seed = reference::fresh_seed();
    let report = verify::gemm_check::<bf16, bf16>(&gpu, shape, options, seed)?;
    println!("{}", verify::CheckReport::table(std::slice::from_ref(&report)));

    let stream = gpu.stream();
    let upload = |len, seed| stream.clone_htod(&reference::to_bf16(&reference::randn(len, 1.0, seed)));
    let (a, b) = (upload(shape.m * shape.k, seed)?, upload(shape.k * shape.n, seed + 1)?);
    let mut d = stream.alloc_zeros::<bf16>(shape.m * shape.n)?;
    let plan = GemmPlan::new(&gpu, shape, options, &a, &b)?;
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
        "oxtile {}x{}x{} bf16 {layout}: {ms:.3} ms, {:.1} TFLOP/s (`oxtile bench gemm` compares with cuBLAS)",
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
