//! The host API's refusals that need a GPU to reach: buffers of another CUDA context, outputs that share bytes with
//! inputs (built by aliasing an allocation, which safe Rust cannot do), and the stream-K guarantees (Auto kept off
//! stream-K, one plan launched from two streams, explicit stream-K variants fitting the GPU at once). Every refusal
//! must come before any launch, so the buffers are checked unchanged afterwards.

use std::mem::ManuallyDrop;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, sys};
use half::bf16;
use oxtile::ops::attention::{self, AttnOptions, AttnShape};
use oxtile::ops::elementwise;
use oxtile::ops::gemm::{self, GemmOptions, GemmPlan, GemmShape, Variant};
use oxtile::reference::{self, fresh_seed};
use oxtile::{Error, Gpu};

fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU: {e}"))
}

/// A second slice over `len` elements of `T` from byte `offset` of `buf`, never freed (ManuallyDrop: `buf` owns the
/// memory). The only way to make outputs that overlap inputs, which the borrow rules keep safe code from.
fn alias<T, U>(stream: &Arc<CudaStream>, buf: &CudaSlice<U>, offset: u64, len: usize) -> ManuallyDrop<CudaSlice<T>> {
    let (address, _use) = buf.device_ptr(stream);
    assert!(offset as usize + len * std::mem::size_of::<T>() <= buf.num_bytes());
    // SAFETY: the range lies inside `buf`, which outlives every use in these tests; the alias is never dropped, so
    // the memory is freed once, by `buf`. The refused calls launch nothing through it.
    ManuallyDrop::new(unsafe { stream.upgrade_device_ptr(address + offset, len) })
}

/// A context of its own on GPU 0 (not the primary context every `Gpu` shares), with a stream.
fn foreign_context() -> (Arc<CudaContext>, Arc<CudaStream>) {
    let primary = gpu();
    let device = primary.context().cu_device();
    let mut raw: sys::CUcontext = std::ptr::null_mut();
    let mut params = sys::CUctxCreateParams_st {
        execAffinityParams: std::ptr::null_mut(),
        numExecAffinityParams: 0,
        cigParams: std::ptr::null_mut(),
    };
    // SAFETY: plain creation parameters; the handle goes to `from_raw_context`, which destroys it when dropped.
    unsafe { sys::cuCtxCreate_v4(&mut raw, &mut params, 0, device) }.result().unwrap();
    // SAFETY: `raw` was just created on `device`, and nothing else owns it.
    let ctx = unsafe { CudaContext::from_raw_context(0, device, raw) }.unwrap();
    assert!(ctx.cu_ctx() != primary.context().cu_ctx());
    let stream = ctx.new_stream().unwrap();
    (ctx, stream)
}

fn ones(gpu: &Gpu, len: usize) -> CudaSlice<bf16> {
    gpu.stream().clone_htod(&vec![bf16::ONE; len]).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemm_refuses_d_overlapping_a_or_b_before_launch() {
    let gpu = gpu();
    let stream = gpu.stream();
    let shape = GemmShape::new(128, 128, 64);
    let (a_len, b_len, d_len) = (shape.m * shape.k, shape.k * shape.n, shape.m * shape.n);
    // A then B in one allocation, and a gap after.
    let ab = ones(&gpu, a_len + b_len + d_len);
    let a = ab.slice(0..a_len);
    let b = ab.slice(a_len..a_len + b_len);
    let element = 2u64;
    // D over A's second half, over B's last bytes, and an f32 D whose bytes reach into B; then one just past B.
    let cases: [(u64, &str); 2] = [(a_len as u64 / 2 * element, "A"), ((a_len + b_len - 8) as u64 * element, "B")];
    for (offset, other) in cases {
        let mut d = alias::<bf16, _>(stream, &ab, offset, d_len);
        let err = gemm::gemm(&gpu, shape, &a, &b, &mut *d, GemmOptions::default()).unwrap_err();
        assert!(matches!(&err, Error::Overlap { output, other: o, .. } if output == "D" && o == other), "{err}");
        for variant in [Variant::Flat, Variant::StreamK, Variant::WideCluster2] {
            let options = GemmOptions { variant, ..GemmOptions::default() };
            let plan = GemmPlan::<bf16, bf16>::new(&gpu, shape, options, &a, &b).unwrap();
            assert!(matches!(plan.bind_output(&gpu, &mut *d), Err(Error::Overlap { .. })), "{variant:?}");
            assert!(matches!(plan.launch(&gpu, &a, &b, &mut *d), Err(Error::Overlap { .. })), "{variant:?}");
        }
    }
    // 16 bytes before B's end: aligned as TMA wants D, so the overlap is what is refused.
    let mut d32 = alias::<f32, _>(stream, &ab, (a_len + b_len - 8) as u64 * element, d_len / 2);
    let half = GemmShape::new(64, 128, 64);
    let err = gemm::gemm(&gpu, half, &ab.slice(0..64 * 64), &b, &mut *d32, GemmOptions::default()).unwrap_err();
    assert!(matches!(&err, Error::Overlap { other, .. } if other == "B"), "{err}");
    // Nothing ran: A and B still hold ones. A D right after B is fine.
    assert!(stream.clone_dtoh(&ab).unwrap().iter().all(|v| *v == bf16::ONE));
    let mut d = alias::<bf16, _>(stream, &ab, (a_len + b_len) as u64 * element, d_len);
    gemm::gemm(&gpu, shape, &a, &b, &mut *d, GemmOptions::default()).unwrap();
    let product = stream.clone_dtoh(&ab.slice(a_len + b_len..)).unwrap();
    assert!(product.iter().all(|v| v.to_f32() == shape.k as f32), "each element sums K ones");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn attention_refuses_outputs_overlapping_inputs_or_each_other() {
    let gpu = gpu();
    let stream = gpu.stream();
    let shape = AttnShape::new(1, 128, 128, 2, 2, 64);
    let len = shape.seq_q * shape.heads_q * shape.head_dim;
    let rows = shape.rows();
    let qkv = ones(&gpu, 4 * len);
    let (q, k, v) = (qkv.slice(0..len), qkv.slice(len..2 * len), qkv.slice(2 * len..3 * len));
    let mut lse = stream.alloc_zeros::<f32>(rows).unwrap();
    let options = AttnOptions::default();
    // O over K, O over the end of V.
    for (offset, other) in [(len as u64 * 2, "k"), ((3 * len - 64) as u64 * 2, "v")] {
        let mut o = alias::<bf16, _>(stream, &qkv, offset, len);
        let err = attention::attention(&gpu, shape, &q, &k, &v, &mut *o, &mut lse, options).unwrap_err();
        assert!(matches!(&err, Error::Overlap { output, other: x, .. } if output == "o" && x == other), "{err}");
    }
    // O in the free quarter; LSE over Q, and over O.
    let o_offset = 3 * len as u64 * 2;
    for (offset, other) in [(0, "q"), (o_offset + 256, "o")] {
        let mut o = alias::<bf16, _>(stream, &qkv, o_offset, len);
        let mut lse = alias::<f32, _>(stream, &qkv, offset, rows);
        let err = attention::attention(&gpu, shape, &q, &k, &v, &mut *o, &mut *lse, options).unwrap_err();
        assert!(matches!(&err, Error::Overlap { output, other: x, .. } if output == "lse" && x == other), "{err}");
    }
    assert!(stream.clone_dtoh(&qkv).unwrap().iter().all(|v| *v == bf16::ONE), "nothing ran");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn buffers_of_another_context_are_refused_before_launch() {
    let gpu = gpu();
    let stream = gpu.stream();
    let (_ctx, foreign) = foreign_context();
    let shape = GemmShape::new(128, 128, 64);
    let (a, b) = (ones(&gpu, shape.m * shape.k), ones(&gpu, shape.k * shape.n));
    let mut d = stream.alloc_zeros::<bf16>(shape.m * shape.n).unwrap();
    let a_elsewhere = foreign.clone_htod(&vec![bf16::ONE; shape.m * shape.k]).unwrap();
    let mut d_elsewhere = foreign.alloc_zeros::<bf16>(shape.m * shape.n).unwrap();
    let wrong = |err: Error, what: &str| {
        assert!(matches!(&err, Error::WrongContext { what: w, .. } if w == what), "{err}");
    };
    wrong(gemm::gemm(&gpu, shape, &a_elsewhere, &b, &mut d, GemmOptions::default()).unwrap_err(), "A");
    wrong(gemm::gemm(&gpu, shape, &a, &b, &mut d_elsewhere, GemmOptions::default()).unwrap_err(), "D");
    let plan = GemmPlan::<bf16, bf16>::new(&gpu, shape, GemmOptions::default(), &a, &b).unwrap();
    wrong(plan.launch(&gpu, &a, &b, &mut d_elsewhere).unwrap_err(), "D");

    let x = foreign.alloc_zeros::<f32>(1024).unwrap();
    let mut y = stream.alloc_zeros::<f32>(1024).unwrap();
    wrong(elementwise::axpy_f32(&gpu, 2.0, &x, &mut y).unwrap_err(), "x");

    let attn = AttnShape::new(1, 128, 128, 2, 2, 64);
    let len = attn.seq_q * attn.heads_q * attn.head_dim;
    let (q, k, v) = (ones(&gpu, len), ones(&gpu, len), ones(&gpu, len));
    let mut o = stream.alloc_zeros::<bf16>(len).unwrap();
    let mut lse_elsewhere = foreign.alloc_zeros::<f32>(attn.rows()).unwrap();
    let options = AttnOptions::default();
    wrong(attention::attention(&gpu, attn, &q, &k, &v, &mut o, &mut lse_elsewhere, options).unwrap_err(), "lse");
    let k_elsewhere = foreign.clone_htod(&vec![bf16::ONE; len]).unwrap();
    let mut lse = stream.alloc_zeros::<f32>(attn.rows()).unwrap();
    wrong(attention::attention(&gpu, attn, &q, &k_elsewhere, &v, &mut o, &mut lse, options).unwrap_err(), "k");
    // Nothing ran: D, y and O still hold zeros.
    assert!(stream.clone_dtoh(&d).unwrap().iter().all(|v| *v == bf16::ZERO));
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|v| *v == 0.0));
    assert!(stream.clone_dtoh(&o).unwrap().iter().all(|v| *v == bf16::ZERO));
    // A second `Gpu` on the same device shares the primary context: its buffers are accepted.
    let other = self::gpu();
    let a_other = ones(&other, shape.m * shape.k);
    gemm::gemm(&gpu, shape, &a_other, &b, &mut d, GemmOptions::default()).unwrap();
    gpu.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn auto_can_be_kept_off_stream_k() {
    let gpu = gpu();
    let stream = gpu.stream();
    // Shapes whose Auto choice is stream-K on 132 SMs (unit tests of Variant::resolve): in clusters, single blocks,
    // on 64×128 tiles.
    for (m, n, k) in [(8192, 8192, 8192), (2560, 2560, 2560), (128, 4096, 14336)] {
        let shape = GemmShape::new(m, n, k);
        let a = stream.alloc_zeros::<bf16>(m * k).unwrap();
        let b = stream.alloc_zeros::<bf16>(k * n).unwrap();
        let off = GemmOptions { auto_stream_k: false, ..GemmOptions::default() };
        let plan = GemmPlan::<bf16, bf16>::new(&gpu, shape, off, &a, &b).unwrap();
        assert!(plan.stream_k().is_none() && !plan.kernel().name.contains("_sk"), "{shape:?}: {}", plan.kernel().name);
        let on = GemmPlan::<bf16, bf16>::new(&gpu, shape, GemmOptions::default(), &a, &b).unwrap();
        println!("{m}x{n}x{k}: Auto runs {}, with stream-K off {}", on.kernel().name, plan.kernel().name);
        // Auto's choice is the heuristic's unless a tune cache holds the shape.
        let cached = oxtile::tune_cache::TuneCache::default_path().is_some_and(|path| path.exists());
        if GemmOptions::default().auto_may_stream_k() && !cached {
            assert!(on.stream_k().is_some(), "{shape:?}: {} (is the tune cache choosing?)", on.kernel().name);
        }
        // An explicit request is not affected, and fits the GPU at once (no StreamKNotResident on an idle H200).
        let explicit = GemmOptions { variant: Variant::StreamK, auto_stream_k: false, ..GemmOptions::default() };
        let plan = GemmPlan::<bf16, bf16>::new(&gpu, shape, explicit, &a, &b).unwrap();
        assert!(plan.stream_k().is_some() && plan.grid().0 <= gpu.sm_count());
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_stream_k_plan_launched_from_two_streams_stays_exact() {
    // Two `Gpu` handles share the primary context but each has its own stream: launches of one plan alternate
    // between them, each into its own D. The workspace is taken with write intent, so each launch waits for the one
    // before; sharing it unordered would hand reducers the other launch's partials or leave flags counting.
    let (first, second) = (gpu(), gpu());
    let shape = GemmShape::new(2048, 2048, 2048);
    let seed = fresh_seed();
    let draw = |len, seed| -> Vec<bf16> { reference::randn(len, 1.0, seed).into_iter().map(bf16::from_f32).collect() };
    let a = first.stream().clone_htod(&draw(shape.m * shape.k, seed)).unwrap();
    let b = first.stream().clone_htod(&draw(shape.k * shape.n, seed + 1)).unwrap();
    for variant in [Variant::StreamK, Variant::StreamKCluster2, Variant::SquareStreamK] {
        let options = GemmOptions { variant, ..GemmOptions::default() };
        let plan = GemmPlan::<bf16, bf16>::new(&first, shape, options, &a, &b).unwrap();
        assert!(plan.stream_k().is_some_and(|s| s.sk_tiles() > 0), "{variant:?} has a tail at 2048³");
        let mut expected = first.stream().alloc_zeros::<bf16>(shape.m * shape.n).unwrap();
        plan.launch(&first, &a, &b, &mut expected).unwrap();
        first.synchronize().unwrap();
        let expected = first.stream().clone_dtoh(&expected).unwrap();
        let mut outputs: Vec<CudaSlice<bf16>> = Vec::new();
        for round in 0..8 {
            let gpu = if round % 2 == 0 { &first } else { &second };
            let mut d = gpu.stream().alloc_zeros::<bf16>(shape.m * shape.n).unwrap();
            plan.launch(gpu, &a, &b, &mut d).unwrap();
            outputs.push(d);
        }
        first.synchronize().unwrap();
        second.synchronize().unwrap();
        for (round, d) in outputs.iter().enumerate() {
            let got = first.stream().clone_dtoh(d).unwrap();
            let same = got.iter().zip(&expected).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "seed {seed}: {variant:?} launch {round} differs from the single-stream result");
        }
        assert!(plan.stream_k_flags(&first).unwrap().iter().all(|&f| f == 0), "{variant:?}");
    }
}
