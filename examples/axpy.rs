//! y ← alpha·x + y on 64 Mi bf16 elements: launch through the safe API, check against float64, time it.
//!
//! `cargo run --release --example axpy`

use cudarc::driver::sys::CUevent_flags;
use oxtile::Gpu;
use oxtile::ops::elementwise;
use oxtile::reference::{self, Comparison};

fn main() -> Result<(), oxtile::Error> {
    let gpu = Gpu::new(0)?;
    let n = 64 << 20;
    let alpha = 0.5f32;
    let seed = reference::fresh_seed();
    let x = reference::to_bf16(&reference::randn(n, 1.0, seed));
    let y = reference::to_bf16(&reference::randn(n, 1.0, seed + 1));
    let stream = gpu.stream();
    let x_dev = stream.clone_htod(&x)?;
    let mut y_dev = stream.clone_htod(&y)?;

    elementwise::axpy_bf16(&gpu, alpha, &x_dev, &mut y_dev)?;
    let out = stream.clone_dtoh(&y_dev)?;
    let want = reference::axpy(
        alpha as f64,
        &x.iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
        &y.iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
    );
    let cmp = Comparison::of(out.iter().map(|v| v.to_f64()), want);
    println!("axpy_bf16 n={n}: max rel error {:.2e} ({} non-finite)", cmp.max_rel_error, cmp.not_finite);

    let start = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let reps = 20;
    for _ in 0..reps {
        elementwise::axpy_bf16(&gpu, alpha, &x_dev, &mut y_dev)?;
    }
    let end = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    end.synchronize()?;
    let ms = start.elapsed_ms(&end)? as f64 / reps as f64;
    let bytes = 3.0 * 2.0 * n as f64;
    println!("{ms:.3} ms per call, {:.2} TB/s (read x, read y, write y)", bytes / ms / 1e9);
    if !cmp.passes(2f64.powi(-8) + 1e-6) {
        std::process::exit(1);
    }
    Ok(())
}
