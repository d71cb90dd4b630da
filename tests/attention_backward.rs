//! Attention backward on the GPU: the plain reference kernel against the float64 CPU gradients on small odd shapes
//! (S = 1, odd lengths, seq_q ≠ seq_k causal, GQA and MQA, both head dims and input types), and its argument checks.
//!
//! Inputs are fresh normal 16-bit values; the forward's O (rounded to the input type, as a kernel writes it) and
//! LSE (f32) come from the float64 forward. The CPU side computes the gradients of those exact 16-bit inputs with
//! D from the same rounded O (`attention_backward_given_o`), so what remains is the kernel's f32 arithmetic: dot
//! products of head_dim terms, ex2.approx (2 ulp), and sums over up to a few hundred rows. Bound: every element of
//! dQ, dK, dV within 2^-12 of the tensor's largest |reference| (≈ 30× the f32 error expected here), every output
//! element written (outputs are poisoned with NaN first).

use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use oxtile::ops::attention::{AttnElement, AttnOptions, AttnShape, AttnStrides};
use oxtile::ops::attention_backward::attention_backward_reference;
use oxtile::reference::attention::{AttnProblem, attention};
use oxtile::reference::attention_backward::attention_backward_given_o;
use oxtile::reference::{fresh_seed, randn};
use oxtile::verify::CheckValue;
use oxtile::{Error, Gpu};

fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
}

/// Largest |gpu − reference| over largest |reference|, and whether every element was written (finite).
fn relative_error(gpu: &[f32], reference: &[f64]) -> (f64, bool) {
    let scale = reference.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(f64::MIN_POSITIVE);
    let worst = gpu.iter().zip(reference).fold(0.0f64, |m, (g, r)| m.max((*g as f64 - r).abs()));
    (worst / scale, gpu.iter().all(|g| g.is_finite()))
}

/// One problem: returns a line describing it, and whether it passed.
fn check_case<T: AttnElement + CheckValue>(gpu: &Gpu, shape: AttnShape, causal: bool, seed: u64) -> (String, bool) {
    let stream = gpu.stream();
    let scale = 1.0 / (shape.head_dim as f64).sqrt();
    let problem = AttnProblem { shape, causal, scale };
    let q_len = shape.rows() * shape.head_dim;
    let kv_len = shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim;
    // 16-bit inputs and their exact values.
    let draw = |len, seed| -> (Vec<T>, Vec<f64>) {
        let values: Vec<T> = randn(len, 1.0, seed).into_iter().map(T::from_f32).collect();
        let exact = values.iter().map(|v| v.to_f64()).collect();
        (values, exact)
    };
    let (q, q64) = draw(q_len, seed);
    let (k, k64) = draw(kv_len, seed + 1);
    let (v, v64) = draw(kv_len, seed + 2);
    let (d_o, d_o64) = draw(q_len, seed + 3);
    let forward = attention(&problem, &q64, &k64, &v64);
    let o: Vec<T> = forward.o.iter().map(|&x| T::from_f32(x as f32)).collect();
    let o64: Vec<f64> = o.iter().map(|v| v.to_f64()).collect();
    let lse: Vec<f32> = forward.lse.iter().map(|&x| x as f32).collect();
    let want = attention_backward_given_o(&problem, &q64, &k64, &v64, &d_o64, &o64);

    let up = |x: &[T]| stream.clone_htod(x).unwrap();
    let poisoned = |len| stream.clone_htod(&vec![f32::NAN; len]).unwrap();
    let (q_d, k_d, v_d, o_d, d_o_d) = (up(&q), up(&k), up(&v), up(&o), up(&d_o));
    let lse_d: CudaSlice<f32> = stream.clone_htod(&lse).unwrap();
    let (mut dq, mut dk, mut dv) = (poisoned(q_len), poisoned(kv_len), poisoned(kv_len));
    let options = AttnOptions { causal, scale: Some(scale as f32), ..AttnOptions::default() };
    attention_backward_reference::<T>(
        gpu, shape, &q_d, &k_d, &v_d, &o_d, &lse_d, &d_o_d, &mut dq, &mut dk, &mut dv, options,
    )
    .unwrap();
    let down = |x: &CudaSlice<f32>| stream.clone_dtoh(x).unwrap();
    let bound = 2f64.powi(-12);
    let mut passed = true;
    let mut line = format!("{} {shape} {}:", T::NAME, if causal { "causal" } else { "full" });
    for (name, got, reference) in
        [("dq", down(&dq), &want.dq), ("dk", down(&dk), &want.dk), ("dv", down(&dv), &want.dv)]
    {
        let (error, written) = relative_error(&got, reference);
        passed &= written && error <= bound;
        line += &format!(" {name} {error:.2e}{}", if written { "" } else { " (unwritten elements)" });
    }
    (line, passed)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reference_kernel_matches_float64_gradients() {
    let gpu = gpu();
    let seed = fresh_seed();
    let shapes = [
        AttnShape::new(1, 1, 1, 1, 1, 64),
        AttnShape::new(2, 77, 129, 4, 2, 64),
        AttnShape::new(1, 129, 77, 3, 1, 128),
        AttnShape::new(1, 200, 200, 2, 2, 128),
        AttnShape::new(2, 33, 31, 8, 1, 64),
    ];
    let mut lines = Vec::new();
    let mut failed = 0;
    for (i, &shape) in shapes.iter().enumerate() {
        for causal in [false, true] {
            let case_seed = seed + 10 * i as u64 + 5 * causal as u64;
            for (line, passed) in
                [check_case::<bf16>(&gpu, shape, causal, case_seed), check_case::<f16>(&gpu, shape, causal, case_seed)]
            {
                failed += !passed as usize;
                lines.push(format!("{} {line}", if passed { "ok  " } else { "FAIL" }));
            }
        }
    }
    let table = lines.join("\n");
    println!("{table}");
    assert_eq!(failed, 0, "seed {seed}, bound 2^-12 of the largest |reference|:\n{table}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_arguments_are_refused_before_launch() {
    let gpu = gpu();
    let stream = gpu.stream();
    let shape = AttnShape::new(1, 8, 8, 2, 1, 64);
    let (q_len, kv_len) = (8 * 2 * 64, 8 * 64);
    let buffer = |len| stream.alloc_zeros::<bf16>(len).unwrap();
    let (q, k, v, o, d_o) = (buffer(q_len), buffer(kv_len), buffer(kv_len), buffer(q_len), buffer(q_len));
    let lse = stream.alloc_zeros::<f32>(16).unwrap();
    let outputs = |dq_len| {
        let zeros = |len| stream.alloc_zeros::<f32>(len).unwrap();
        (zeros(dq_len), zeros(kv_len), zeros(kv_len))
    };
    let run = |shape: AttnShape, dq_len: usize, options: AttnOptions| {
        let (mut dq, mut dk, mut dv) = outputs(dq_len);
        attention_backward_reference::<bf16>(
            &gpu, shape, &q, &k, &v, &o, &lse, &d_o, &mut dq, &mut dk, &mut dv, options,
        )
    };
    run(shape, q_len, AttnOptions::default()).unwrap();
    // A short output, a head dim without a kernel, heads that do not group, strided tensors.
    assert!(matches!(run(shape, q_len - 1, AttnOptions::default()), Err(Error::BadArgument { .. })));
    let odd_head_dim = AttnShape::new(1, 8, 8, 2, 1, 96);
    assert!(matches!(run(odd_head_dim, q_len, AttnOptions::default()), Err(Error::Unsupported { .. })));
    let ungrouped = AttnShape::new(1, 8, 8, 3, 2, 64);
    assert!(matches!(run(ungrouped, q_len, AttnOptions::default()), Err(Error::BadArgument { .. })));
    let mut strides = AttnStrides::packed(shape);
    strides.q.seq *= 2;
    let strided = AttnOptions { strides: Some(strides), ..AttnOptions::default() };
    assert!(matches!(run(shape, q_len, strided), Err(Error::Unsupported { .. })));
}
