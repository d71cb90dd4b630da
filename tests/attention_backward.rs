//! Attention backward on the GPU: the plain reference kernel against the float64 CPU gradients on small odd shapes
//! (S = 1, odd lengths, seq_q ≠ seq_k causal, GQA and MQA, head dims 64, 128 and 256, both input types), and its argument checks;
//! the Hopper kernels (`attention_backward`) against the float64 gradients on the same kind of shapes and against the
//! reference kernel on large ones, and their argument checks.
//!
//! Bounds of the Hopper kernels (16-bit outputs), every element within a fraction of its tensor's largest
//! |reference|: 2^-6 for bf16, 2^-8 for f16. What they have to absorb, in units of u (the unit roundoff: 2^-8 bf16,
//! 2^-11 f16): the output's own rounding (≤ 1 u of the largest element); P rounded to 16 bits as the A operand of
//! dV = Pᵀ·dO and dS rounded to 16 bits as the A operand of dK = dSᵀ·Q and dQ = dS·K (each term within 1 u, errors of
//! independent signs, so a sum's error is ≈ u · sqrt(Σ term²), which is of the order of u times the sum itself for
//! these random inputs); the exponential (ex2.approx, 2 ulp of f32) and f32 accumulation (negligible against u). So
//! about 1–2 u are expected (RMS rounding u/√3 per term, plus the output's); the bounds allow 4 u (bf16) and 8 u
//! (f16), while a wrong mask, scale, tile or operand layout moves elements by O(1) of the largest.
//!
//! The reference kernel: inputs are fresh normal 16-bit values; the forward's O (rounded to the input type, as a kernel writes it) and
//! LSE (f32) come from the float64 forward. The CPU side computes the gradients of those exact 16-bit inputs with
//! D from the same rounded O (`attention_backward_given_o`), so what remains is the kernel's f32 arithmetic: dot
//! products of head_dim terms, ex2.approx (2 ulp), and sums over up to a few hundred rows. Bound: every element of
//! dQ, dK, dV within 2^-12 of the tensor's largest |reference| (≈ 30× the f32 error expected here), every output
//! element written (outputs are poisoned with NaN first).

use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use oxtile::ops::attention::{self, AttnElement, AttnOptions, AttnShape, AttnStrides};
use oxtile::ops::attention_backward::{AttnBwdPlan, DqOrder, attention_backward, attention_backward_reference};
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
    relative_error_at_least(gpu, reference, 0.0)
}

/// As [`relative_error`], the scale being at least `floor`: dQ and dK come from dS = P∘(dP − D), which cancels
/// (with one key dP = D exactly, so their reference is 0 and the kernel's values are the rounding of dP − D); they
/// are measured against the larger of their own largest |reference| and dV's, whose products do not cancel.
fn relative_error_at_least(gpu: &[f32], reference: &[f64], floor: f64) -> (f64, bool) {
    let scale = reference.iter().fold(floor, |m, x| m.max(x.abs())).max(f64::MIN_POSITIVE);
    let worst = gpu.iter().zip(reference).fold(0.0f64, |m, (g, r)| m.max((*g as f64 - r).abs()));
    (worst / scale, gpu.iter().all(|g| g.is_finite()))
}

/// The largest |x|.
fn largest(x: &[f64]) -> f64 {
    x.iter().fold(0.0f64, |m, v| m.max(v.abs()))
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
        AttnShape::new(1, 90, 70, 4, 2, 256),
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

/// Set by scripts/gpu-run.sh --memcheck: kernels run tens of times slower under compute-sanitizer, so the large
/// problems shrink.
fn under_sanitizer() -> bool {
    std::env::var_os("OXTILE_UNDER_SANITIZER").is_some()
}

/// The Hopper kernels' bound: a fraction of the largest |reference| (module documentation).
fn fast_bound<T: AttnElement>() -> f64 {
    if T::NAME == "bf16" { 2f64.powi(-6) } else { 2f64.powi(-8) }
}

/// 16-bit device values as f64.
fn widen<T: AttnElement + CheckValue>(gpu: &Gpu, x: &CudaSlice<T>) -> Vec<f64> {
    gpu.stream().clone_dtoh(x).unwrap().into_iter().map(|v| v.to_f64()).collect()
}

/// A buffer of `len` poison values (NaN), so an element the kernel never writes shows.
fn poisoned<T: AttnElement + CheckValue>(gpu: &Gpu, len: usize) -> CudaSlice<T> {
    gpu.stream().clone_htod(&vec![T::POISON; len]).unwrap()
}

/// One problem for the Hopper kernels against float64, on fresh normal inputs: returns a line describing it, and
/// whether it passed.
fn check_fast_case<T: AttnElement + CheckValue>(
    gpu: &Gpu,
    shape: AttnShape,
    causal: bool,
    seed: u64,
) -> (String, bool) {
    let q_len = shape.rows() * shape.head_dim;
    let kv_len = shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim;
    let inputs = [randn(q_len, 1.0, seed), randn(kv_len, 1.0, seed + 1), randn(kv_len, 1.0, seed + 2)];
    check_fast_inputs::<T>(gpu, shape, causal, inputs, randn(q_len, 1.0, seed + 3))
}

/// [`check_fast_case`] on the given q, k, v and dO (rounded to `T`).
fn check_fast_inputs<T: AttnElement + CheckValue>(
    gpu: &Gpu,
    shape: AttnShape,
    causal: bool,
    [q, k, v]: [Vec<f32>; 3],
    d_o: Vec<f32>,
) -> (String, bool) {
    let stream = gpu.stream();
    let scale = 1.0 / (shape.head_dim as f64).sqrt();
    let problem = AttnProblem { shape, causal, scale };
    let q_len = shape.rows() * shape.head_dim;
    let kv_len = shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim;
    let round = |x: Vec<f32>| -> (Vec<T>, Vec<f64>) {
        let values: Vec<T> = x.into_iter().map(T::from_f32).collect();
        let exact = values.iter().map(|v| v.to_f64()).collect();
        (values, exact)
    };
    let (q, q64) = round(q);
    let (k, k64) = round(k);
    let (v, v64) = round(v);
    let (d_o, d_o64) = round(d_o);
    let forward = attention(&problem, &q64, &k64, &v64);
    let o: Vec<T> = forward.o.iter().map(|&x| T::from_f32(x as f32)).collect();
    let o64: Vec<f64> = o.iter().map(|v| v.to_f64()).collect();
    let lse: Vec<f32> = forward.lse.iter().map(|&x| x as f32).collect();
    let want = attention_backward_given_o(&problem, &q64, &k64, &v64, &d_o64, &o64);

    let up = |x: &[T]| stream.clone_htod(x).unwrap();
    let (q_d, k_d, v_d, o_d, d_o_d) = (up(&q), up(&k), up(&v), up(&o), up(&d_o));
    let lse_d: CudaSlice<f32> = stream.clone_htod(&lse).unwrap();
    let (mut dq, mut dk, mut dv) = (poisoned::<T>(gpu, q_len), poisoned::<T>(gpu, kv_len), poisoned::<T>(gpu, kv_len));
    let options = AttnOptions { causal, scale: Some(scale as f32), ..AttnOptions::default() };
    attention_backward::<T>(gpu, shape, &q_d, &k_d, &v_d, &o_d, &lse_d, &d_o_d, &mut dq, &mut dk, &mut dv, options)
        .unwrap();
    let bound = fast_bound::<T>();
    let mut passed = true;
    let mut line = format!("{} {shape} {}:", T::NAME, if causal { "causal" } else { "full" });
    for (name, got, reference) in
        [("dq", widen(gpu, &dq), &want.dq), ("dk", widen(gpu, &dk), &want.dk), ("dv", widen(gpu, &dv), &want.dv)]
    {
        let got: Vec<f32> = got.iter().map(|&x| x as f32).collect();
        let (error, written) = relative_error_at_least(&got, reference, largest(&want.dv));
        passed &= written && error <= bound;
        line += &format!(" {name} {error:.2e}{}", if written { "" } else { " (unwritten elements)" });
    }
    (line, passed)
}

/// Runs `cases` (shape, causal) for both input types and fails with the table if any did not pass.
fn run_fast_cases(cases: &[(AttnShape, bool)]) {
    let gpu = gpu();
    let seed = fresh_seed();
    let mut lines = Vec::new();
    let mut failed = 0;
    for (i, &(shape, causal)) in cases.iter().enumerate() {
        let case_seed = seed + 10 * i as u64;
        for (line, passed) in [
            check_fast_case::<bf16>(&gpu, shape, causal, case_seed),
            check_fast_case::<f16>(&gpu, shape, causal, case_seed + 5),
        ] {
            failed += !passed as usize;
            lines.push(format!("{} {line}", if passed { "ok  " } else { "FAIL" }));
        }
    }
    let table = lines.join("\n");
    println!("{table}");
    assert_eq!(failed, 0, "seed {seed}, bounds 2^-6 (bf16) and 2^-8 (f16) of the largest |reference|:\n{table}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fast_kernel_matches_float64_on_odd_and_edge_sizes() {
    let mut cases = Vec::new();
    for shape in [
        AttnShape::new(1, 1, 1, 1, 1, 64),
        AttnShape::new(1, 1, 1, 1, 1, 128),
        AttnShape::new(2, 77, 77, 2, 2, 64),
        AttnShape::new(1, 129, 129, 2, 1, 128),
        AttnShape::new(1, 64, 128, 1, 1, 128),
        AttnShape::new(1, 200, 200, 2, 2, 64),
        AttnShape::new(1, 1, 1, 1, 1, 256),
        AttnShape::new(1, 129, 129, 2, 1, 256),
        AttnShape::new(2, 64, 64, 2, 2, 256),
    ] {
        cases.push((shape, false));
        cases.push((shape, true));
    }
    run_fast_cases(&cases);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fast_kernel_matches_float64_when_seq_q_and_seq_k_differ() {
    // Bottom-right causal: with seq_q > seq_k the first rows see no key (LSE = −∞, gradients 0); with seq_q < seq_k
    // every row sees the keys before the diagonal block.
    let mut cases = Vec::new();
    for shape in [
        AttnShape::new(2, 77, 129, 4, 2, 64),
        AttnShape::new(1, 129, 77, 3, 1, 128),
        AttnShape::new(1, 1, 300, 2, 1, 128),
        AttnShape::new(1, 300, 1, 2, 1, 64),
        AttnShape::new(1, 190, 260, 2, 2, 128),
        AttnShape::new(1, 100, 190, 2, 1, 256),
        AttnShape::new(1, 190, 65, 2, 2, 256),
    ] {
        cases.push((shape, false));
        cases.push((shape, true));
    }
    run_fast_cases(&cases);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fast_kernel_sums_dk_and_dv_over_grouped_and_multi_query_heads() {
    let mut cases = Vec::new();
    for shape in [
        AttnShape::new(1, 100, 100, 4, 2, 128),
        AttnShape::new(2, 65, 130, 4, 2, 64),
        AttnShape::new(1, 150, 150, 8, 1, 64),
        AttnShape::new(1, 70, 200, 3, 1, 128),
        AttnShape::new(1, 100, 140, 4, 2, 256),
        AttnShape::new(1, 70, 130, 4, 1, 256),
    ] {
        cases.push((shape, false));
        cases.push((shape, true));
    }
    run_fast_cases(&cases);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn row_kernels_loop_over_more_batch_head_pairs_than_one_grid_dimension() {
    // The preprocessing and dQ conversion put the (batch, head) pairs on the grid's y, at most 65535 of them, each
    // block looping over the rest: 2 × 33,000 pairs takes a second pass for 465 of them. Not under the sanitizer
    // (66,000 main-kernel blocks).
    if under_sanitizer() {
        return;
    }
    run_fast_cases(&[
        (AttnShape::new(2, 3, 5, 33_000, 33_000, 64), false),
        (AttnShape::new(2, 3, 5, 33_000, 11_000, 64), true),
    ]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn keys_past_the_last_key_block_do_not_poison_dq() {
    // Every key near one vector u and every query near −α·u, so every scaled logit is about −32 and each row's LSE
    // about −28: a key past seq_k (loaded as zeros, score 0) would have a probability near e^28 and, in f16, a dS
    // past 65504, NaN in dQ once multiplied by its zero K row. seq_k is not a multiple of any key tile (128, 64).
    let seed = fresh_seed();
    let gpu = gpu();
    let mut lines = Vec::new();
    let mut failed = 0;
    for (i, head_dim) in [64usize, 128, 256].into_iter().enumerate() {
        let shape = AttnShape::new(1, 70, 100, 2, 1, head_dim);
        let seed = seed + 10 * i as u64;
        let alpha = 32.0 / (head_dim as f32).sqrt();
        let u = randn(head_dim, 1.0, seed);
        let near = |rows: usize, factor: f32, seed: u64| -> Vec<f32> {
            let noise = randn(rows * head_dim, 0.05, seed);
            (0..rows * head_dim).map(|e| factor * u[e % head_dim] + noise[e]).collect()
        };
        let (q_rows, kv_rows) = (shape.rows(), shape.batch * shape.seq_k * shape.heads_kv);
        let inputs =
            [near(q_rows, -alpha, seed + 1), near(kv_rows, 1.0, seed + 2), randn(kv_rows * head_dim, 1.0, seed + 3)];
        let d_o = randn(q_rows * head_dim, 1.0, seed + 4);
        for (line, passed) in [
            check_fast_inputs::<f16>(&gpu, shape, false, inputs.clone(), d_o.clone()),
            check_fast_inputs::<bf16>(&gpu, shape, false, inputs, d_o),
        ] {
            failed += !passed as usize;
            lines.push(format!("{} {line}", if passed { "ok  " } else { "FAIL" }));
        }
    }
    let table = lines.join("\n");
    println!("{table}");
    assert_eq!(failed, 0, "seed {seed}, bounds 2^-6 (bf16) and 2^-8 (f16) of the largest |reference|:\n{table}");
}

/// A large problem: the forward kernel's O and LSE, then the Hopper backward (poisoned outputs) and the plain
/// reference kernel (f32 outputs, its own error ~1e-6 relative, negligible here) on the same inputs; dK and dV
/// (no atomics) must also come out bit for bit the same from a second launch of the plan.
fn check_large<T: AttnElement + CheckValue>(gpu: &Gpu, shape: AttnShape, causal: bool, seed: u64) -> (String, bool) {
    let stream = gpu.stream();
    let q_len = shape.rows() * shape.head_dim;
    let kv_len = shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim;
    let draw = |len, seed| -> CudaSlice<T> {
        let values: Vec<T> = randn(len, 1.0, seed).into_iter().map(T::from_f32).collect();
        stream.clone_htod(&values).unwrap()
    };
    let (q, k, v, d_o) = (draw(q_len, seed), draw(kv_len, seed + 1), draw(kv_len, seed + 2), draw(q_len, seed + 3));
    let options = AttnOptions { causal, ..AttnOptions::default() };
    let mut o = stream.alloc_zeros::<T>(q_len).unwrap();
    let mut lse = stream.alloc_zeros::<f32>(shape.rows()).unwrap();
    attention::attention::<T>(gpu, shape, &q, &k, &v, &mut o, &mut lse, options).unwrap();

    let plan = AttnBwdPlan::<T>::new(gpu, shape, options, &q, &k, &v, &d_o).unwrap();
    let (mut dq, mut dk, mut dv) = (poisoned::<T>(gpu, q_len), poisoned::<T>(gpu, kv_len), poisoned::<T>(gpu, kv_len));
    plan.launch(gpu, &q, &k, &v, &o, &lse, &d_o, &mut dq, &mut dk, &mut dv).unwrap();
    let (dk_first, dv_first) = (stream.clone_dtoh(&dk).unwrap(), stream.clone_dtoh(&dv).unwrap());
    plan.launch(gpu, &q, &k, &v, &o, &lse, &d_o, &mut dq, &mut dk, &mut dv).unwrap();
    let repeatable = stream.clone_dtoh(&dk).unwrap().iter().zip(&dk_first).all(|(a, b)| a.to_bits() == b.to_bits())
        && stream.clone_dtoh(&dv).unwrap().iter().zip(&dv_first).all(|(a, b)| a.to_bits() == b.to_bits());

    let zeros = |len| stream.alloc_zeros::<f32>(len).unwrap();
    let (mut rq, mut rk, mut rv) = (zeros(q_len), zeros(kv_len), zeros(kv_len));
    attention_backward_reference::<T>(gpu, shape, &q, &k, &v, &o, &lse, &d_o, &mut rq, &mut rk, &mut rv, options)
        .unwrap();
    let down = |x: &CudaSlice<f32>| -> Vec<f64> { stream.clone_dtoh(x).unwrap().into_iter().map(f64::from).collect() };
    let bound = fast_bound::<T>();
    let mut passed = repeatable;
    let mut line = format!("{} {shape} {}:", T::NAME, if causal { "causal" } else { "full" });
    for (name, got, reference) in
        [("dq", widen(gpu, &dq), down(&rq)), ("dk", widen(gpu, &dk), down(&rk)), ("dv", widen(gpu, &dv), down(&rv))]
    {
        let got: Vec<f32> = got.iter().map(|&x| x as f32).collect();
        let (error, written) = relative_error(&got, &reference);
        passed &= written && error <= bound;
        line += &format!(" {name} {error:.2e}{}", if written { "" } else { " (unwritten elements)" });
    }
    if !repeatable {
        line += " (dK or dV differ between two launches)";
    }
    (line, passed)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_shapes_match_the_reference_kernel() {
    let gpu = gpu();
    let seed = fresh_seed();
    let shapes = if under_sanitizer() {
        vec![
            AttnShape::new(1, 300, 300, 2, 1, 128),
            AttnShape::new(1, 257, 257, 2, 2, 64),
            AttnShape::new(1, 200, 230, 2, 1, 256),
        ]
    } else {
        vec![
            AttnShape::new(2, 2048, 2048, 16, 16, 128),
            AttnShape::new(1, 4096, 4096, 8, 2, 64),
            AttnShape::new(1, 1000, 3000, 8, 8, 128),
            AttnShape::new(1, 2048, 2048, 8, 2, 256),
        ]
    };
    let mut lines = Vec::new();
    let mut failed = 0;
    for (i, &shape) in shapes.iter().enumerate() {
        for causal in [false, true] {
            let case_seed = seed + 10 * i as u64 + 5 * causal as u64;
            let mut results = vec![check_large::<bf16>(&gpu, shape, causal, case_seed)];
            if i == 0 {
                results.push(check_large::<f16>(&gpu, shape, causal, case_seed + 1));
            }
            for (line, passed) in results {
                failed += !passed as usize;
                lines.push(format!("{} {line}", if passed { "ok  " } else { "FAIL" }));
            }
        }
    }
    let table = lines.join("\n");
    println!("{table}");
    assert_eq!(failed, 0, "seed {seed}, bounds 2^-6 (bf16) and 2^-8 (f16) of the largest |reference|:\n{table}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn blocks_walking_several_key_blocks_match_the_reference_kernel() {
    // Full attention launches a GPU's worth of blocks, each walking every n-th key block: more key blocks than the
    // GPU holds at once (a partial last one, GQA) make each block reload K and V, carry its ring, K/V parity and
    // dQ staging turns across walks, and store dK and dV between them. At head dims 64 and 128 the last round is
    // split across every block (`WalkSplit`): pieces of a walk's query tiles over every query head of its group,
    // whose dK and dV partials the piece-summing kernel adds up (the shapes assume one block per SM, as the tiles'
    // shared memory has it: 133 and 160 walks leave a short last round).
    let gpu = gpu();
    let stream = gpu.stream();
    let seed = fresh_seed();
    let shapes = if under_sanitizer() {
        vec![
            AttnShape::new(1, 64, 150 * 128 - 5, 2, 1, 64),
            AttnShape::new(1, 64, 150 * 128 - 5, 2, 1, 128),
            AttnShape::new(1, 64, 150 * 64 - 5, 2, 1, 256),
            AttnShape::new(1, 500, 133 * 128 - 5, 2, 1, 64),
            AttnShape::new(1, 250, 133 * 128 - 5, 2, 1, 128),
        ]
    } else {
        vec![
            AttnShape::new(2, 1000, 5000, 4, 2, 64),
            AttnShape::new(2, 1000, 5000, 4, 2, 128),
            AttnShape::new(1, 700, 9000, 4, 2, 256),
        ]
    };
    let mut lines = Vec::new();
    let mut failed = 0;
    for (i, &shape) in shapes.iter().enumerate() {
        let q_len = shape.rows() * shape.head_dim;
        let kv_len = shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim;
        let buffer = |len| stream.alloc_zeros::<bf16>(len).unwrap();
        let (q, k, v, d_o) = (buffer(q_len), buffer(kv_len), buffer(kv_len), buffer(q_len));
        let plan = AttnBwdPlan::<bf16>::new(&gpu, shape, AttnOptions::default(), &q, &k, &v, &d_o).unwrap();
        let order = plan.launch_order();
        let walks = order.key_blocks * order.groups;
        let split = plan.walk_split().split_walks;
        if shape.head_dim == 256 || i < 3 && under_sanitizer() {
            assert!(plan.grid().0 < walks, "{shape}: grid {:?} for {walks} walks: no block walks twice", plan.grid());
        } else {
            assert!(split > 0, "{shape}: {walks} walks on {} blocks, none split", plan.grid().0);
        }
        let (line, passed) = check_large::<bf16>(&gpu, shape, false, seed + i as u64);
        failed += !passed as usize;
        lines.push(format!(
            "{} {line} ({walks} walks on {} blocks, the last {split} split)",
            if passed { "ok  " } else { "FAIL" },
            plan.grid().0
        ));
    }
    let table = lines.join("\n");
    println!("{table}");
    assert_eq!(failed, 0, "seed {seed}:\n{table}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fast_kernel_refuses_bad_arguments_before_launch() {
    let gpu = gpu();
    let stream = gpu.stream();
    let shape = AttnShape::new(1, 8, 8, 2, 1, 64);
    let (q_len, kv_len) = (8 * 2 * 64, 8 * 64);
    let buffer = |len| stream.alloc_zeros::<bf16>(len).unwrap();
    let (q, k, v, o, d_o) = (buffer(q_len), buffer(kv_len), buffer(kv_len), buffer(q_len), buffer(q_len));
    let lse = stream.alloc_zeros::<f32>(16).unwrap();
    let run = |shape: AttnShape, dq_len: usize, lse: &CudaSlice<f32>, options: AttnOptions| {
        let (mut dq, mut dk, mut dv) = (buffer(dq_len), buffer(kv_len), buffer(kv_len));
        attention_backward::<bf16>(&gpu, shape, &q, &k, &v, &o, lse, &d_o, &mut dq, &mut dk, &mut dv, options)
    };
    run(shape, q_len, &lse, AttnOptions::default()).unwrap();
    // A short output, a short LSE, a head dim without a kernel, heads that do not group, an output's strides that
    // collide (q broadcast over heads: fine to read, not to write dQ with).
    assert!(matches!(run(shape, q_len - 1, &lse, AttnOptions::default()), Err(Error::BadArgument { .. })));
    let short_lse = stream.alloc_zeros::<f32>(15).unwrap();
    assert!(matches!(run(shape, q_len, &short_lse, AttnOptions::default()), Err(Error::BadArgument { .. })));
    let odd_head_dim = AttnShape::new(1, 8, 8, 2, 1, 96);
    assert!(matches!(run(odd_head_dim, q_len, &lse, AttnOptions::default()), Err(Error::Unsupported { .. })));
    let ungrouped = AttnShape::new(1, 8, 8, 3, 2, 64);
    assert!(matches!(run(ungrouped, q_len, &lse, AttnOptions::default()), Err(Error::BadArgument { .. })));
    let mut strides = AttnStrides::packed(shape);
    strides.q.head = 0;
    let broadcast = AttnOptions { strides: Some(strides), ..AttnOptions::default() };
    assert!(matches!(run(shape, q_len, &lse, broadcast), Err(Error::BadArgument { .. })));
    // A plan is bound to its inputs.
    let plan = AttnBwdPlan::<bf16>::new(&gpu, shape, AttnOptions::default(), &q, &k, &v, &d_o).unwrap();
    let other_q = buffer(q_len);
    let (mut dq, mut dk, mut dv) = (buffer(q_len), buffer(kv_len), buffer(kv_len));
    let err = plan.launch(&gpu, &other_q, &k, &v, &o, &lse, &d_o, &mut dq, &mut dk, &mut dv).unwrap_err();
    assert!(matches!(err, Error::BadArgument { .. }), "{err}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn deterministic_mode_repeats_dq_bit_for_bit() {
    // Several key tiles add to every dQ tile (and, causal, a different number to each); with GQA the blocks of one
    // key/value head serve several query heads. In each order, five launches: dQ must not move by a bit, and dQ,
    // dK and dV match the reference (nothing zeroes the accumulator: each launch's first turn at a tile must replace
    // the last launch's sums). The shapes have fewer key blocks than query tiles (the staggered walks start
    // mid-way and wrap) and more (several blocks start at one tile and take its turns by block), and seq_k > seq_q
    // causal (blocks that share their first tile). The last shapes have more walks than the GPU holds blocks: full
    // attention's staggered launch is then persistent, whole groups a round, and some blocks walk twice.
    let gpu = gpu();
    let stream = gpu.stream();
    let seed = fresh_seed();
    let shapes = if under_sanitizer() {
        vec![
            AttnShape::new(1, 200, 300, 2, 1, 64),
            AttnShape::new(1, 100, 900, 1, 1, 64),
            AttnShape::new(1, 150, 400, 2, 1, 256),
            AttnShape::new(8, 64, 640, 4, 4, 64),
        ]
    } else {
        vec![
            AttnShape::new(2, 1024, 1024, 8, 2, 128),
            AttnShape::new(1, 777, 1500, 4, 4, 64),
            AttnShape::new(1, 2000, 700, 2, 1, 128),
            AttnShape::new(1, 300, 3000, 4, 2, 64),
            AttnShape::new(1, 1000, 1500, 4, 2, 256),
            AttnShape::new(8, 300, 1000, 8, 4, 128),
            AttnShape::new(4, 777, 640, 8, 8, 64),
            AttnShape::new(4, 130, 1100, 8, 8, 256),
        ]
    };
    let mut lines = Vec::new();
    let mut failed = 0;
    // Launches whose conversion kernel converted dQ, and launches whose main kernel did (the staggered kernels at
    // full attention with enough key blocks): both paths must be taken.
    let mut converted = [0, 0];
    for (i, &shape) in shapes.iter().enumerate() {
        for causal in [false, true] {
            let seed = seed + 10 * i as u64 + 5 * causal as u64;
            let q_len = shape.rows() * shape.head_dim;
            let kv_len = shape.batch * shape.seq_k * shape.heads_kv * shape.head_dim;
            let draw = |len, seed| -> CudaSlice<bf16> {
                stream.clone_htod(&randn(len, 1.0, seed).into_iter().map(bf16::from_f32).collect::<Vec<_>>()).unwrap()
            };
            let (q, k, v, d_o) =
                (draw(q_len, seed), draw(kv_len, seed + 1), draw(kv_len, seed + 2), draw(q_len, seed + 3));
            let options = AttnOptions { causal, ..AttnOptions::default() };
            let mut o = stream.alloc_zeros::<bf16>(q_len).unwrap();
            let mut lse = stream.alloc_zeros::<f32>(shape.rows()).unwrap();
            attention::attention::<bf16>(&gpu, shape, &q, &k, &v, &mut o, &mut lse, options).unwrap();
            let zeros = |len| stream.alloc_zeros::<f32>(len).unwrap();
            let (mut rq, mut rk, mut rv) = (zeros(q_len), zeros(kv_len), zeros(kv_len));
            attention_backward_reference::<bf16>(
                &gpu, shape, &q, &k, &v, &o, &lse, &d_o, &mut rq, &mut rk, &mut rv, options,
            )
            .unwrap();
            let down =
                |x: &CudaSlice<f32>| -> Vec<f64> { stream.clone_dtoh(x).unwrap().into_iter().map(f64::from).collect() };
            let references = [down(&rq), down(&rk), down(&rv)];
            // The order new_deterministic picks (staggered: these shapes' key blocks are all resident), then the
            // ascending one.
            let chosen = AttnBwdPlan::<bf16>::new_deterministic(&gpu, shape, options, &q, &k, &v, &d_o).unwrap();
            assert_eq!(chosen.dq_order(), Some(DqOrder::Staggered), "{shape}");
            let order = chosen.launch_order();
            let walks = order.key_blocks * order.groups;
            let blocks = chosen.grid().0;
            if !causal && walks > gpu.sm_count() {
                assert!(
                    blocks < walks && blocks.is_multiple_of(order.key_blocks),
                    "{shape}: {walks} walks on {blocks} blocks"
                );
            }
            let ascending =
                AttnBwdPlan::<bf16>::new_deterministic_in(&gpu, shape, options, &q, &k, &v, &d_o, DqOrder::Ascending)
                    .unwrap();
            for plan in [chosen, ascending] {
                assert!(plan.is_deterministic());
                converted[plan.converts_in_kernel() as usize] += 1;
                let mut first: Option<Vec<u16>> = None;
                let mut repeatable = true;
                let (mut dq, mut dk, mut dv) =
                    (poisoned::<bf16>(&gpu, q_len), poisoned::<bf16>(&gpu, kv_len), poisoned::<bf16>(&gpu, kv_len));
                for _ in 0..5 {
                    plan.launch(&gpu, &q, &k, &v, &o, &lse, &d_o, &mut dq, &mut dk, &mut dv).unwrap();
                    let bits: Vec<u16> = stream.clone_dtoh(&dq).unwrap().iter().map(|x| x.to_bits()).collect();
                    match &first {
                        None => first = Some(bits),
                        Some(first) => repeatable &= *first == bits,
                    }
                }
                let mut passed = repeatable;
                let mut errors = String::new();
                for (name, got, reference) in
                    [("dq", &dq, &references[0]), ("dk", &dk, &references[1]), ("dv", &dv, &references[2])]
                {
                    let got: Vec<f32> = widen(&gpu, got).into_iter().map(|x| x as f32).collect();
                    let (error, written) = relative_error(&got, reference);
                    passed &= written && error <= fast_bound::<bf16>();
                    errors += &format!(" {name} {error:.2e}{}", if written { "" } else { " (unwritten elements)" });
                }
                failed += !passed as usize;
                lines.push(format!(
                    "{} bf16 {shape} {} {:?} on {} blocks{}:{errors}{}",
                    if passed { "ok  " } else { "FAIL" },
                    if causal { "causal" } else { "full" },
                    plan.dq_order().unwrap(),
                    plan.grid().0,
                    if plan.converts_in_kernel() { ", dQ converted in the kernel" } else { "" },
                    if repeatable { "" } else { " (dQ differs between launches)" }
                ));
            }
        }
    }
    let table = lines.join("\n");
    println!("{table}");
    assert_eq!(failed, 0, "seed {seed}:\n{table}");
    assert!(converted[0] > 0 && converted[1] > 0, "dQ converted after / in the main kernel: {converted:?}\n{table}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_staggered_order_needs_every_key_block_of_a_head_resident_unless_it_launches_in_turn_order() {
    // More key blocks per key/value head than the GPU holds at once (one block per SM at these tiles' shared
    // memory). Full attention, and causal at head dim 128: the deterministic mode falls back to the ascending
    // order, and asking for the staggered one is a typed error before any launch. Causal at head dim 64: the
    // staggered kernels launch the key blocks in their turns' order (`DqSchedule::launches_descending`), need no
    // residency and are taken; with seq_k far past seq_q every block sees the one query tile, whose turns then run
    // through all of them, across waves. Each way dQ comes out bit for bit twice and matches the reference.
    let gpu = gpu();
    let stream = gpu.stream();
    let seed = fresh_seed();
    let seq_k = 128 * (2 * gpu.sm_count() as usize + 1);
    for (head_dim, causal, staggered_taken) in [(64, false, false), (64, true, true), (128, true, false)] {
        let shape = AttnShape::new(1, 100, seq_k, 1, 1, head_dim);
        let q_len = shape.rows() * shape.head_dim;
        let kv_len = shape.seq_k * shape.head_dim;
        let draw = |len, seed| -> CudaSlice<bf16> {
            stream.clone_htod(&randn(len, 1.0, seed).into_iter().map(bf16::from_f32).collect::<Vec<_>>()).unwrap()
        };
        let seed = seed + head_dim as u64 + causal as u64;
        let (q, k, v, d_o) = (draw(q_len, seed), draw(kv_len, seed + 1), draw(kv_len, seed + 2), draw(q_len, seed + 3));
        let case = format!("seed {seed}, head dim {head_dim}, causal {causal}");
        let options = AttnOptions { causal, ..AttnOptions::default() };
        let staggered =
            AttnBwdPlan::<bf16>::new_deterministic_in(&gpu, shape, options, &q, &k, &v, &d_o, DqOrder::Staggered);
        let plan = if staggered_taken {
            staggered.unwrap()
        } else {
            let err = staggered.err().expect("the staggered order refused");
            assert!(matches!(err, Error::Unsupported { .. }) && err.to_string().contains("resident"), "{case}: {err}");
            AttnBwdPlan::<bf16>::new_deterministic(&gpu, shape, options, &q, &k, &v, &d_o).unwrap()
        };
        let order = if staggered_taken { DqOrder::Staggered } else { DqOrder::Ascending };
        assert_eq!(plan.dq_order(), Some(order), "{case}");
        let chosen = AttnBwdPlan::<bf16>::new_deterministic(&gpu, shape, options, &q, &k, &v, &d_o).unwrap();
        assert_eq!(chosen.dq_order(), Some(order), "{case}: the order new_deterministic picks");
        let mut o = stream.alloc_zeros::<bf16>(q_len).unwrap();
        let mut lse = stream.alloc_zeros::<f32>(shape.rows()).unwrap();
        attention::attention::<bf16>(&gpu, shape, &q, &k, &v, &mut o, &mut lse, options).unwrap();
        let (mut dq, mut dk, mut dv) =
            (poisoned::<bf16>(&gpu, q_len), poisoned::<bf16>(&gpu, kv_len), poisoned::<bf16>(&gpu, kv_len));
        let mut runs = Vec::new();
        for _ in 0..2 {
            plan.launch(&gpu, &q, &k, &v, &o, &lse, &d_o, &mut dq, &mut dk, &mut dv).unwrap();
            runs.push(stream.clone_dtoh(&dq).unwrap().iter().map(|x| x.to_bits()).collect::<Vec<u16>>());
        }
        assert!(runs[0] == runs[1], "{case}: dQ differs between launches");
        let zeros = |len| stream.alloc_zeros::<f32>(len).unwrap();
        let (mut rq, mut rk, mut rv) = (zeros(q_len), zeros(kv_len), zeros(kv_len));
        attention_backward_reference::<bf16>(
            &gpu, shape, &q, &k, &v, &o, &lse, &d_o, &mut rq, &mut rk, &mut rv, options,
        )
        .unwrap();
        let reference: Vec<f64> = stream.clone_dtoh(&rq).unwrap().into_iter().map(f64::from).collect();
        let got: Vec<f32> = widen(&gpu, &dq).into_iter().map(|x| x as f32).collect();
        let (error, written) = relative_error(&got, &reference);
        assert!(written && error <= fast_bound::<bf16>(), "{case}: dq {error:.2e}, written {written}");
    }
}
