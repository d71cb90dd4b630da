//! `oxtile._oxtile`: the native half of the Python package. The Python half (python/oxtile) takes PyTorch tensors
//! apart into device addresses, element counts and strides, allocates the outputs through PyTorch, and calls these
//! functions with PyTorch's current stream; here those become [`ExternalBuffer`]s on a [`Gpu`] handle borrowing
//! that stream, and the host library's ops check and launch as they do for Rust callers.
//!
//! Errors: every [`oxtile::Error`] becomes a Python exception with the same message, `ValueError` for what the
//! caller passed (shapes, dtypes, strides, alignment, overlaps, memory of another GPU) and `RuntimeError` for the
//! GPU and driver (no driver or GPU, launch and driver failures, a GPU that is not Hopper). A Rust panic becomes a
//! `RuntimeError` too, never an abort of the interpreter.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use half::{bf16, f16};
use oxtile::external::ExternalBuffer;
use oxtile::ops::attention::{self as attn, AttnElement, AttnOptions, AttnShape, AttnStrides, CheckedProblem, Strides};
use oxtile::ops::attention_backward::{self as attn_bwd, AttnBwdPlan};
use oxtile::ops::gemm::{self, GemmElement, GemmLayout, GemmOptions, GemmOutput, GemmShape, Order};
use oxtile::{Error, Gpu};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// One handle per GPU ordinal, opened at its first use: the context (the device's primary context, which PyTorch
/// uses too) and the kernel modules, loaded once per process. Each call borrows PyTorch's stream through it
/// ([`Gpu::on_stream`]).
static GPUS: Mutex<BTreeMap<usize, Arc<Gpu>>> = Mutex::new(BTreeMap::new());

fn gpu(ordinal: usize) -> oxtile::Result<Arc<Gpu>> {
    let mut gpus = GPUS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(gpu) = gpus.get(&ordinal) {
        return Ok(gpu.clone());
    }
    let gpu = Arc::new(Gpu::new(ordinal)?);
    gpus.insert(ordinal, gpu.clone());
    Ok(gpu)
}

/// A handle on GPU `ordinal` that launches on `stream` (a `cudaStream_t` as an integer; 0 is the legacy default
/// stream).
fn gpu_on_stream(ordinal: usize, stream: usize) -> oxtile::Result<Gpu> {
    let base = gpu(ordinal)?;
    // SAFETY: the Python layer passes PyTorch's current stream of the tensors' device, which PyTorch keeps alive
    // (streams from its pool are never destroyed; a user's torch.cuda.Stream lives while it is current). The handle
    // is dropped before this call returns; what was launched through it is ordered on that stream.
    unsafe { base.on_stream(stream as cudarc::driver::sys::CUstream) }
}

/// The Python exception for `error`: `ValueError` for bad arguments, `RuntimeError` for the rest.
fn to_py(error: Error) -> PyErr {
    let message = error.to_string();
    match error {
        Error::BadArgument { .. } | Error::Overlap { .. } | Error::WrongContext { .. } | Error::Unsupported { .. } => {
            PyValueError::new_err(message)
        }
        _ => PyRuntimeError::new_err(message),
    }
}

/// Runs `work` without the GIL (a first call loads the kernel module, about a second), a panic caught and reported
/// as a `RuntimeError` rather than unwinding into Python.
fn run<F>(py: Python<'_>, work: F) -> PyResult<()>
where
    F: FnOnce() -> oxtile::Result<()> + Send,
{
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(work)));
    match outcome {
        Ok(result) => result.map_err(to_py),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            Err(PyRuntimeError::new_err(format!("oxtile panicked, a bug in oxtile: {what}")))
        }
    }
}

fn order(name: &str) -> PyResult<Order> {
    match name {
        "row" => Ok(Order::RowMajor),
        "col" => Ok(Order::ColMajor),
        _ => Err(PyValueError::new_err(format!("order {name:?}: expected \"row\" or \"col\""))),
    }
}

/// D = A·B with A M×K and B K×N in the given orders ("row" or "col") at device addresses `a` and `b`, D M×N
/// row-major at `d`; `dtype` is A's and B's type ("bf16" or "f16"), `out_dtype` D's ("bf16", "f16" or "f32").
/// The layout and dtype are checked before any GPU is touched; then each address against the driver's record of
/// its allocation, and the GEMM's own checks (alignment, overlap, context) before the launch on `stream`.
#[pyfunction]
#[pyo3(signature = (device, stream, dtype, out_dtype, m, n, k, a, a_order, b, b_order, d))]
#[allow(clippy::too_many_arguments)]
fn matmul(
    py: Python<'_>,
    device: usize,
    stream: usize,
    dtype: &str,
    out_dtype: &str,
    m: usize,
    n: usize,
    k: usize,
    a: u64,
    a_order: &str,
    b: u64,
    b_order: &str,
    d: u64,
) -> PyResult<()> {
    let options = GemmOptions { layout: GemmLayout::of(order(a_order)?, order(b_order)?), ..GemmOptions::default() };
    let shape = GemmShape::new(m, n, k);
    let job = GemmJob { device, stream, shape, options, a, b, d };
    match (dtype, out_dtype) {
        ("bf16", "bf16") => run(py, move || job.run::<bf16, bf16>()),
        ("bf16", "f32") => run(py, move || job.run::<bf16, f32>()),
        ("f16", "f16") => run(py, move || job.run::<f16, f16>()),
        ("f16", "f32") => run(py, move || job.run::<f16, f32>()),
        _ => Err(PyValueError::new_err(format!(
            "matmul takes bf16 or f16 inputs and gives the input type or f32, not {dtype} → {out_dtype}"
        ))),
    }
}

struct GemmJob {
    device: usize,
    stream: usize,
    shape: GemmShape,
    options: GemmOptions,
    a: u64,
    b: u64,
    d: u64,
}

impl GemmJob {
    fn run<T: GemmElement, O: GemmOutput<T>>(self) -> oxtile::Result<()> {
        let gpu = gpu_on_stream(self.device, self.stream)?;
        let GemmShape { m, n, k } = self.shape;
        // SAFETY: the Python layer keeps the tensors alive across the call and PyTorch orders their uses on the
        // stream the kernel runs on (the caller's current stream), as for its own kernels.
        let (a, b, mut d) = unsafe {
            (
                ExternalBuffer::<T>::new(&gpu, "gemm", "A", self.a, m * k)?,
                ExternalBuffer::<T>::new(&gpu, "gemm", "B", self.b, k * n)?,
                ExternalBuffer::<O>::new(&gpu, "gemm", "D", self.d, m * n)?,
            )
        };
        gemm::gemm::<T, O>(&gpu, self.shape, &a, &b, &mut d, self.options)
    }
}

/// A strided BSHD tensor as the Python layer describes it: device address, elements its storage holds from that
/// address on, and the batch, seq and head strides in elements (head_dim contiguous).
type Tensor4 = (u64, usize, (usize, usize, usize));

fn strides((_, _, (batch, seq, head)): Tensor4) -> Strides {
    Strides { batch, seq, head }
}

/// Attention forward: O and LSE of q [B, Sq, Hq, D], k and v [B, Sk, Hkv, D] (`shape` = (B, Sq, Sk, Hq, Hkv, D)),
/// `dtype` "bf16" or "f16"; LSE f32 [B, Hq, Sq] contiguous at `lse`. `scale` None is 1/√D. The problem (shape,
/// strides, scale) is checked before any GPU is touched; then each address against the driver's record of its
/// allocation, and the op's own checks (alignment, overlap, context) before the launch on `stream`.
#[pyfunction]
#[pyo3(signature = (device, stream, dtype, shape, q, k, v, o, lse, causal, scale))]
#[allow(clippy::too_many_arguments)]
fn attention(
    py: Python<'_>,
    device: usize,
    stream: usize,
    dtype: &str,
    shape: (usize, usize, usize, usize, usize, usize),
    q: Tensor4,
    k: Tensor4,
    v: Tensor4,
    o: Tensor4,
    lse: u64,
    causal: bool,
    scale: Option<f32>,
) -> PyResult<()> {
    let (batch, seq_q, seq_k, heads_q, heads_kv, head_dim) = shape;
    let shape = AttnShape::new(batch, seq_q, seq_k, heads_q, heads_kv, head_dim);
    let strides = AttnStrides { q: strides(q), k: strides(k), v: strides(v), o: strides(o) };
    let options = AttnOptions { causal, scale, strides: Some(strides), ..AttnOptions::default() };
    CheckedProblem::new(shape, &options).map_err(to_py)?;
    let job = AttnJob { device, stream, shape, options, tensors: [q, k, v, o], lse };
    match dtype {
        "bf16" => run(py, move || job.run::<bf16>()),
        "f16" => run(py, move || job.run::<f16>()),
        _ => Err(PyValueError::new_err(format!("attention takes bf16 or f16 tensors, not {dtype}"))),
    }
}

struct AttnJob {
    device: usize,
    stream: usize,
    shape: AttnShape,
    options: AttnOptions,
    tensors: [Tensor4; 4],
    lse: u64,
}

impl AttnJob {
    fn run<T: AttnElement>(self) -> oxtile::Result<()> {
        let gpu = gpu_on_stream(self.device, self.stream)?;
        let [q, k, v, o] = self.tensors;
        let buffer = |what, (address, len, _): Tensor4| {
            // SAFETY: as in GemmJob::run.
            unsafe { ExternalBuffer::<T>::new(&gpu, "attention", what, address, len) }
        };
        let (q, k, v, mut o) = (buffer("q", q)?, buffer("k", k)?, buffer("v", v)?, buffer("o", o)?);
        // SAFETY: as above.
        let mut lse = unsafe { ExternalBuffer::<f32>::new(&gpu, "attention", "lse", self.lse, self.shape.rows())? };
        attn::attention::<T>(&gpu, self.shape, &q, &k, &v, &mut o, &mut lse, self.options)
    }
}

/// Attention backward: dQ, dK and dV of the forward that gave O (`o`) and LSE (`lse`, f32 [B, Hq, Sq] contiguous)
/// from q, k and v, for the upstream gradient `d_o`; `shape` and `dtype` as [`attention`]'s. dO must have O's
/// strides and dQ, dK, dV q's, k's and v's (the Python layer allocates them so; checked here). `deterministic`:
/// dQ added in a fixed order (`AttnBwdPlan::new_deterministic`), bit for bit the same from every call. The problem
/// is checked before any GPU is touched (a head dim without a backward kernel is refused when the kernel is
/// looked up), then each address and the op's own checks (alignment, overlap, context) before the launches on
/// `stream`. The workspaces (the f32 dQ accumulator: 4 bytes per element of q, padded to whole query tiles) are
/// allocated and freed on `stream` by each call, outside PyTorch's caching allocator.
#[pyfunction]
#[pyo3(signature = (device, stream, dtype, shape, q, k, v, o, lse, d_o, dq, dk, dv, causal, scale, deterministic))]
#[allow(clippy::too_many_arguments)]
fn attention_backward(
    py: Python<'_>,
    device: usize,
    stream: usize,
    dtype: &str,
    shape: (usize, usize, usize, usize, usize, usize),
    q: Tensor4,
    k: Tensor4,
    v: Tensor4,
    o: Tensor4,
    lse: u64,
    d_o: Tensor4,
    dq: Tensor4,
    dk: Tensor4,
    dv: Tensor4,
    causal: bool,
    scale: Option<f32>,
    deterministic: bool,
) -> PyResult<()> {
    let (batch, seq_q, seq_k, heads_q, heads_kv, head_dim) = shape;
    let shape = AttnShape::new(batch, seq_q, seq_k, heads_q, heads_kv, head_dim);
    let layout = AttnStrides { q: strides(q), k: strides(k), v: strides(v), o: strides(o) };
    for (name, gradient, of, like) in
        [("d_o", d_o, "o", layout.o), ("dq", dq, "q", layout.q), ("dk", dk, "k", layout.k), ("dv", dv, "v", layout.v)]
    {
        if strides(gradient) != like {
            return Err(PyValueError::new_err(format!(
                "attention_backward: {name} must have {of}'s strides {like:?}, got {:?}",
                strides(gradient)
            )));
        }
    }
    let options = AttnOptions { causal, scale, strides: Some(layout), ..AttnOptions::default() };
    attn_bwd::check_backward(shape, &options).map_err(to_py)?;
    let job = AttnBwdJob { device, stream, shape, options, tensors: [q, k, v, o, d_o, dq, dk, dv], lse, deterministic };
    match dtype {
        "bf16" => run(py, move || job.run::<bf16>()),
        "f16" => run(py, move || job.run::<f16>()),
        _ => Err(PyValueError::new_err(format!("attention_backward takes bf16 or f16 tensors, not {dtype}"))),
    }
}

struct AttnBwdJob {
    device: usize,
    stream: usize,
    shape: AttnShape,
    options: AttnOptions,
    /// q, k, v, o, dO, dQ, dK, dV.
    tensors: [Tensor4; 8],
    lse: u64,
    deterministic: bool,
}

impl AttnBwdJob {
    fn run<T: AttnElement>(self) -> oxtile::Result<()> {
        let gpu = gpu_on_stream(self.device, self.stream)?;
        let [q, k, v, o, d_o, dq, dk, dv] = self.tensors;
        let buffer = |what, (address, len, _): Tensor4| {
            // SAFETY: as in GemmJob::run.
            unsafe { ExternalBuffer::<T>::new(&gpu, "attention_backward", what, address, len) }
        };
        let (q, k, v, o, d_o) =
            (buffer("q", q)?, buffer("k", k)?, buffer("v", v)?, buffer("o", o)?, buffer("d_o", d_o)?);
        let (mut dq, mut dk, mut dv) = (buffer("dq", dq)?, buffer("dk", dk)?, buffer("dv", dv)?);
        // SAFETY: as above.
        let lse =
            unsafe { ExternalBuffer::<f32>::new(&gpu, "attention_backward", "lse", self.lse, self.shape.rows())? };
        let (shape, options) = (self.shape, self.options);
        if self.deterministic {
            let plan = AttnBwdPlan::<T>::new_deterministic(&gpu, shape, options, &q, &k, &v, &d_o)?;
            plan.launch(&gpu, &q, &k, &v, &o, &lse, &d_o, &mut dq, &mut dk, &mut dv)
        } else {
            attn_bwd::attention_backward::<T>(
                &gpu, shape, &q, &k, &v, &o, &lse, &d_o, &mut dq, &mut dk, &mut dv, options,
            )
        }
    }
}

/// Name, compute capability and SM count of GPU `device`, as oxtile sees it (opens it at the first call).
#[pyfunction]
fn device_info<'py>(py: Python<'py>, device: usize) -> PyResult<Bound<'py, PyDict>> {
    let gpu = gpu(device).map_err(to_py)?;
    let info = PyDict::new(py);
    info.set_item("name", gpu.name())?;
    info.set_item("compute_capability", gpu.compute_capability())?;
    info.set_item("sm_count", gpu.sm_count())?;
    Ok(info)
}

#[pymodule]
fn _oxtile(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(matmul, module)?)?;
    module.add_function(wrap_pyfunction!(attention, module)?)?;
    module.add_function(wrap_pyfunction!(attention_backward, module)?)?;
    module.add_function(wrap_pyfunction!(device_info, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
