//! Muon's orthogonalization of one weight-shaped matrix: Gram Newton-Schulz and the standard iteration on our
//! kernels, each checked against the float64 iteration on a corner of the problem and timed.
//!
//! `cargo run --release --example muon -- [ROWS COLUMNS]` (default 4096 14336, Llama-3-8B's MLP up-projection)

use cudarc::driver::sys::CUevent_flags;
use half::bf16;
use oxtile::Gpu;
use oxtile::ops::newton_schulz::{self, DEFAULT_RESTARTS, NewtonSchulzPlan, NsMethod, StackShape};
use oxtile::reference::newton_schulz::{Matrix, singular_values};
use oxtile::reference::{self};

fn main() -> Result<(), oxtile::Error> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (rows, columns) = match args.as_slice() {
        [r, c] => (*r, *c),
        _ => (4096, 14336),
    };
    let gpu = Gpu::new(0)?;
    let stream = gpu.stream();
    let coefficients = newton_schulz::polar_express();
    let seed = reference::fresh_seed();

    // Accuracy on a small matrix of the same aspect, against float64.
    let (small_rows, small_columns) = (128, (128 * columns / rows).next_multiple_of(8));
    let small = StackShape { batch: 1, rows: small_rows, columns: small_columns };
    let x = reference::to_bf16(&reference::randn(small.len(), 1.0, seed));
    let x_dev = stream.clone_htod(&x)?;
    let mut out = stream.alloc_zeros::<bf16>(small.len())?;
    let exact = Matrix::new(small_rows, small_columns, x.iter().map(|v| v.to_f64()).collect());
    let want = oxtile::reference::newton_schulz::newton_schulz(&exact, &coefficients, newton_schulz::NORM_EPS as f64);
    for gram in [false, true] {
        if gram {
            newton_schulz::gram_newton_schulz(&gpu, small, &x_dev, &mut out, &coefficients, DEFAULT_RESTARTS)?;
        } else {
            newton_schulz::newton_schulz(&gpu, small, &x_dev, &mut out, &coefficients)?;
        }
        let got = stream.clone_dtoh(&out)?;
        let got = Matrix::new(small_rows, small_columns, got.iter().map(|v| v.to_f64()).collect());
        let error = got.combine(1.0, &want, -1.0).frobenius() / want.frobenius();
        let sv = singular_values(&got);
        println!(
            "{} {small_rows}×{small_columns}: relative error {error:.2e} against float64, singular values in [{:.3}, {:.3}]",
            if gram { "gram    " } else { "standard" },
            sv[0],
            sv[sv.len() - 1]
        );
    }

    // Time at the requested size.
    let shape = StackShape { batch: 1, rows, columns };
    let x = reference::to_bf16(&reference::randn(shape.len(), 1.0, seed + 1));
    let x_dev = stream.clone_htod(&x)?;
    let mut out = stream.alloc_zeros::<bf16>(shape.len())?;
    for gram in [false, true] {
        let method = if gram { NsMethod::Gram { restarts: DEFAULT_RESTARTS.to_vec() } } else { NsMethod::Standard };
        // Buffers and GEMM plans made once; each run only launches.
        let mut plan = NewtonSchulzPlan::<bf16>::new(&gpu, shape, &coefficients, method)?;
        plan.run(&gpu, &x_dev, &mut out)?;
        let start = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let reps = 5;
        for _ in 0..reps {
            plan.run(&gpu, &x_dev, &mut out)?;
        }
        let end = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        end.synchronize()?;
        let ms = start.elapsed_ms(&end)? as f64 / reps as f64;
        println!("{} {rows}×{columns}: {ms:.3} ms per call", if gram { "gram    " } else { "standard" });
    }
    Ok(())
}
