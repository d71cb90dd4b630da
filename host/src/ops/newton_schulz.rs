//! Newton-Schulz orthogonalization (Muon's), batched, on our kernels: the standard quintic iteration on the
//! rectangular X, and Gram Newton-Schulz, which iterates on the square Gram matrix R = X·Xᵀ with the symmetric GEMM
//! ([`super::gemm_symmetric`]).
//!
//! Both take a stack of `batch` matrices X (rows × columns, row-major, packed) and a list of coefficient triples
//! (a, b, c), one per iteration, and return the same shape. Where rows > columns, both work on the transpose without
//! moving data: the Gram matrix is then Xᵀ·X (the symmetric GEMM's `nt` layout over the same buffer) and the
//! polynomial multiplies X from the right.
//!
//! - Standard ([`newton_schulz`]), in the input type: X ← X / (‖X‖_F + ε), then per (a, b, c): A = X·Xᵀ,
//!   B = b·A + c·A², X ← a·X + B·X.
//! - Gram ([`gram_newton_schulz`]), after the public description of Zhang, Amsel, Chen and Dao (Dao AI Lab, 2026,
//!   "Gram Newton-Schulz"): X normalized in f32 and cast to f16, R = X·Xᵀ, Q = I; per (a, b, c):
//!   Z = b·R + c·R², Q ← Q·Z + a·Q, RZ = R·Z + a·R, R ← Z·RZ + a·RZ; at each restart (before the iterations listed,
//!   0-based, default before the 3rd) X ← Q·X, R = X·Xᵀ, Q = I; finally X ← Q·X. Every product but the last (and the
//!   restarts') is of two polynomials in the same R, so symmetric, and runs on the symmetric GEMM, half the tensor
//!   work of the full one, all n×n with n the smaller side instead of n×m. We compute the same products with the
//!   constant term folded into the polynomial: W = a·I + b·R + c·R² (one symmetric product whose epilogue adds b·R
//!   and a on the diagonal), Q ← Q·W, RW = R·W, R ← W·RW (Q·Z + a·Q = Q·W, and so on). After a (re)start Q = W
//!   itself. In exact arithmetic it computes the same X as the standard iteration; in f16 the restarts keep R's
//!   spurious negative eigenvalues from growing. (The reference itself runs square matrices through the standard
//!   iteration, where Gram saves no work; here the caller chooses.)
//!
//! Both are a [`Program`] (the iteration as a list of steps over numbered buffers, written out once at plan
//! creation) bound to GEMM plans by [`NewtonSchulzPlan`], which allocates and encodes once and then only launches.
//! The β·C terms are read by the GEMMs' epilogues: the symmetric GEMM's from a separate C, the general GEMM's from D,
//! into which the standard iteration copies X first.

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use half::{bf16, f16};

use super::gemm::{GemmElement, GemmLayout, GemmOptions, GemmOutput, GemmPlan, GemmShape};
use super::gemm_symmetric::{SymmetricOptions, SymmetricPlan, SymmetricShape, SymmetricVariant};
use crate::error::{Error, Result};
use crate::kernels::{self, Kernel};
use crate::runtime::Gpu;

const OP: &str = "newton_schulz";

/// The Polar Express coefficients for five iterations (Amsel, Persson, Musco, Gower, "The Polar Express: Optimal
/// Matrix Sign Methods and Their Application to the Muon Algorithm", arXiv 2505.16932; num_iters = 5,
/// safety factor 2e-2, cushion 2), as published, before [`POLAR_EXPRESS_SAFETY`].
pub const POLAR_EXPRESS_UNSCALED: [(f64, f64, f64); 5] = [
    (8.28721201814563, -23.595886519098837, 17.300387312530933),
    (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
    (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
    (3.3184196573706015, -2.488488024314874, 0.51004894012372),
    (2.300652019954817, -1.6689039845747493, 0.4188073119525673),
];

/// The Gram Newton-Schulz reference divides each polynomial's argument by 1.05 (a ← a/1.05, b ← b/1.05³,
/// c ← c/1.05⁵): singular values up to 5% above 1 (from half-precision rounding) still map into the band.
pub const POLAR_EXPRESS_SAFETY: f64 = 1.05;

/// The default coefficients: [`POLAR_EXPRESS_UNSCALED`] with [`POLAR_EXPRESS_SAFETY`] applied.
pub fn polar_express() -> Vec<(f64, f64, f64)> {
    let s = POLAR_EXPRESS_SAFETY;
    POLAR_EXPRESS_UNSCALED.iter().map(|&(a, b, c)| (a / s, b / s.powi(3), c / s.powi(5))).collect()
}

/// The Frobenius normalization's ε: X / (‖X‖_F + ε).
pub const NORM_EPS: f32 = 1e-7;

/// The default restarts of Gram Newton-Schulz: after the 2nd iteration.
pub const DEFAULT_RESTARTS: &[usize] = &[2];

/// A stack of `batch` row-major `rows × columns` matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackShape {
    pub batch: usize,
    pub rows: usize,
    pub columns: usize,
}

impl StackShape {
    pub fn len(&self) -> usize {
        self.batch * self.rows * self.columns
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The smaller side (the Gram matrix's) and the larger.
    fn sides(&self) -> (usize, usize) {
        (self.rows.min(self.columns), self.rows.max(self.columns))
    }

    /// Rows ≤ columns: X·Xᵀ and polynomials applied from the left; else Xᵀ·X and from the right.
    fn wide(&self) -> bool {
        self.rows <= self.columns
    }

    fn check(&self, op: &'static str) -> Result<()> {
        let (n, m) = self.sides();
        if self.batch == 0 || n == 0 {
            return Err(Error::bad_argument(op, format!("an empty stack: {self:?}")));
        }
        // The small kernels put the matrix in gridDim.y.
        if self.batch > MAX_BATCH {
            return Err(Error::unsupported(op, format!("a stack of {}: at most {MAX_BATCH} matrices", self.batch)));
        }
        // TMA: both sides are some operand's contiguous dimension.
        if !n.is_multiple_of(8) || !m.is_multiple_of(8) {
            return Err(Error::unsupported(
                op,
                format!("{}×{}: both sides must be multiples of 8", self.rows, self.columns),
            ));
        }
        Ok(())
    }
}

/// The 16-bit types Newton-Schulz runs on, with their small kernels.
pub trait NsElement: GemmElement + GemmOutput<Self> + cudarc::driver::ValidAsZeroBits + Copy + 'static {
    const SUM_SQUARES: Kernel;
    /// The scaled conversion to this type, and to f16.
    const SCALE_TO_SELF: Kernel;
    const SCALE_TO_F16: Kernel;
    /// The conversion from f16.
    const SCALE_FROM_F16: Kernel;
}

impl NsElement for bf16 {
    const SUM_SQUARES: Kernel = kernels::SUM_SQUARES_BF16;
    const SCALE_TO_SELF: Kernel = kernels::SCALE_BF16_TO_BF16;
    const SCALE_TO_F16: Kernel = kernels::SCALE_BF16_TO_F16;
    const SCALE_FROM_F16: Kernel = kernels::SCALE_F16_TO_BF16;
}

impl NsElement for f16 {
    const SUM_SQUARES: Kernel = kernels::SUM_SQUARES_F16;
    const SCALE_TO_SELF: Kernel = kernels::SCALE_F16_TO_F16;
    const SCALE_TO_F16: Kernel = kernels::SCALE_F16_TO_F16;
    const SCALE_FROM_F16: Kernel = kernels::SCALE_F16_TO_F16;
}

const THREADS: u32 = 256;

/// The deepest stack: the norm, scaling and diagonal kernels put the matrix in gridDim.y, at most 65535.
const MAX_BATCH: usize = 65535;

/// Blocks of [`THREADS`] per SM that a streaming kernel's grid fills: 2048 threads, the most an SM holds, so that
/// enough 16-byte loads are in flight to reach the memory's bandwidth.
const BLOCKS_PER_SM: usize = 8;

/// The grid of the kernels that stream a stack of `batch` matrices of `per_matrix` elements (the norm's first step, the
/// scaled conversions): (blocks per matrix, `batch`) blocks of [`THREADS`], each thread moving eight elements per
/// step, at most [`BLOCKS_PER_SM`] blocks per SM over the stack (at least one per matrix); with the shared memory of
/// the block sum (4 bytes per warp).
fn stream_grid(gpu: &Gpu, per_matrix: usize, batch: usize) -> LaunchConfig {
    let most = (BLOCKS_PER_SM * gpu.sm_count() as usize / batch.max(1)).max(1);
    let blocks = per_matrix.div_ceil(8 * THREADS as usize).clamp(1, most) as u32;
    LaunchConfig { grid_dim: (blocks, batch as u32, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: THREADS / 8 }
}

/// The f32 partial sums [`sum_squares`] needs for a stack of this shape: one per block of its grid.
fn partials_len(gpu: &Gpu, shape: StackShape) -> usize {
    let grid = stream_grid(gpu, shape.rows * shape.columns, shape.batch);
    shape.batch * grid.grid_dim.0 as usize
}

/// sums[m] = ‖x_m‖_F² in f32 for each matrix of the stack: each warp's share into `partials`, then added in order
/// (the same bits every run).
fn sum_squares<T: NsElement>(
    gpu: &Gpu,
    shape: StackShape,
    x: &CudaSlice<T>,
    partials: &mut CudaSlice<f32>,
    sums: &mut CudaSlice<f32>,
) -> Result<()> {
    let per_matrix = shape.rows * shape.columns;
    let count = partials_len(gpu, shape) / shape.batch;
    assert!(x.len() == shape.len() && partials.len() == shape.batch * count && sums.len() == shape.batch);
    let function = gpu.function(T::SUM_SQUARES)?;
    let mut launch = gpu.stream().launch_builder(&function);
    launch.arg(x).arg(&per_matrix).arg(&mut *partials);
    // SAFETY: x holds batch matrices of per_matrix elements and partials one f32 per block of the grid per matrix
    // (asserted); THREADS is a multiple of 32 and the grid has the block sum's shared memory.
    unsafe { launch.launch(stream_grid(gpu, per_matrix, shape.batch)) }
        .map_err(|source| Error::Launch { kernel: T::SUM_SQUARES.name, source })?;
    let function = gpu.function(kernels::SUM_PARTIALS_F32)?;
    let mut launch = gpu.stream().launch_builder(&function);
    launch.arg(&*partials).arg(&count).arg(sums);
    let config = LaunchConfig {
        grid_dim: (1, shape.batch as u32, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: THREADS / 8,
    };
    // SAFETY: partials holds batch × count f32 and sums batch (asserted); one block per matrix, a multiple of 32
    // threads, with the block sum's shared memory.
    unsafe { launch.launch(config) }
        .map(drop)
        .map_err(|source| Error::Launch { kernel: kernels::SUM_PARTIALS_F32.name, source })
}

/// y = x / (√sums[m] + ε) per matrix, or y = x converted where `sums` is `None`.
fn scale<I, O>(
    gpu: &Gpu,
    kernel: Kernel,
    shape: StackShape,
    x: &CudaSlice<I>,
    y: &mut CudaSlice<O>,
    sums: Option<&CudaSlice<f32>>,
) -> Result<()> {
    let per_matrix = shape.rows * shape.columns;
    assert!(x.len() == shape.len() && y.len() == shape.len());
    let function = gpu.function(kernel)?;
    let mut launch = gpu.stream().launch_builder(&function);
    let null = 0u64;
    launch.arg(x).arg(y).arg(&per_matrix);
    match sums {
        Some(sums) => launch.arg(sums),
        None => launch.arg(&null),
    };
    launch.arg(&NORM_EPS);
    // SAFETY: x and y hold the stack (asserted), distinct buffers; sums is null or holds batch f32.
    unsafe { launch.launch(stream_grid(gpu, per_matrix, shape.batch)) }
        .map(drop)
        .map_err(|source| Error::Launch { kernel: kernel.name, source })
}

/// A work buffer of a [`Program`]: an index into its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Buf(usize);

/// One step of a Newton-Schulz program, on buffers of the stack (X-shaped or n×n per matrix, n the smaller side).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    /// D = X·Xᵀ (wide X) or Xᵀ·X (tall): the symmetric GEMM over the stack.
    Gram { x: Buf, d: Buf },
    /// D = alpha·A·B + beta·C + diagonal·I of n×n polynomials in one matrix (a symmetric product): the symmetric
    /// GEMM, its epilogue reading C (none where beta = 0).
    Symmetric { a: Buf, b: Buf, c: Option<Buf>, d: Buf, alpha: f32, beta: f32, diagonal: f32 },
    /// D = P·X (wide) or X·P (tall) + beta·X, P n×n: general GEMMs, one per matrix (the general GEMM is not batched),
    /// X copied into D first where beta ≠ 0.
    Apply { p: Buf, x: Buf, d: Buf, beta: f32 },
}

/// A Newton-Schulz iteration as a straight list of steps: which buffer holds the normalized input, which the
/// result, and the buffers' shapes (`true`: X-shaped, `false`: n×n).
#[derive(Clone, Debug, PartialEq)]
struct Program {
    buffers: Vec<bool>,
    input: Buf,
    output: Buf,
    ops: Vec<Op>,
}

impl Program {
    fn buffer(&mut self, x_shaped: bool) -> Buf {
        self.buffers.push(x_shaped);
        Buf(self.buffers.len() - 1)
    }

    /// The standard iteration: per (a, b, c): A = X·Xᵀ, B = b·A + c·A², X ← a·X + B·X.
    fn standard(coefficients: &[(f64, f64, f64)]) -> Program {
        let mut program = Program { buffers: Vec::new(), input: Buf(0), output: Buf(0), ops: Vec::new() };
        let (mut x, mut x_next) = (program.buffer(true), program.buffer(true));
        let (gram, poly) = (program.buffer(false), program.buffer(false));
        program.input = x;
        for &(a, b, c) in coefficients {
            let (a, b, c) = (a as f32, b as f32, c as f32);
            program.ops.push(Op::Gram { x, d: gram });
            let square = Op::Symmetric { a: gram, b: gram, c: Some(gram), d: poly, alpha: c, beta: b, diagonal: 0.0 };
            program.ops.push(square);
            program.ops.push(Op::Apply { p: poly, x, d: x_next, beta: a });
            std::mem::swap(&mut x, &mut x_next);
        }
        program.output = x;
        program
    }

    /// Gram Newton-Schulz (the module documentation): R = X·Xᵀ, Q = I; per (a, b, c): W = a·I + b·R + c·R²,
    /// Q ← Q·W, RW = R·W, R ← W·RW; before each iteration listed in `restarts` (0-based, as counts of iterations
    /// done) X ← Q·X, R = X·Xᵀ, Q = I; finally X ← Q·X. Q = I is implicit after a (re)start: the first iteration
    /// writes W into Q's buffer and uses it from there. R is not updated where nothing reads it again (after the last
    /// iteration and before a restart).
    fn gram(coefficients: &[(f64, f64, f64)], restarts: &[usize]) -> Program {
        let mut program = Program { buffers: Vec::new(), input: Buf(0), output: Buf(0), ops: Vec::new() };
        let (mut x, mut x_next) = (program.buffer(true), program.buffer(true));
        let (mut r, mut r_next) = (program.buffer(false), program.buffer(false));
        let (mut q, mut q_next) = (program.buffer(false), program.buffer(false));
        let (w, rw) = (program.buffer(false), program.buffer(false));
        program.input = x;
        program.ops.push(Op::Gram { x, d: r });
        let mut q_is_identity = true;
        let last = coefficients.len() - 1;
        let product = |a: Buf, b: Buf, d: Buf| Op::Symmetric { a, b, c: None, d, alpha: 1.0, beta: 0.0, diagonal: 0.0 };
        for (iteration, &(a, b, c)) in coefficients.iter().enumerate() {
            let (a, b, c) = (a as f32, b as f32, c as f32);
            if restarts.contains(&iteration) && !q_is_identity {
                program.ops.push(Op::Apply { p: q, x, d: x_next, beta: 0.0 });
                std::mem::swap(&mut x, &mut x_next);
                program.ops.push(Op::Gram { x, d: r });
                q_is_identity = true;
            }
            // W = c·R·R + b·R + a·I, into Q's buffer when Q = I (then Q·W = W).
            let w = if q_is_identity { q } else { w };
            program.ops.push(Op::Symmetric { a: r, b: r, c: Some(r), d: w, alpha: c, beta: b, diagonal: a });
            if !q_is_identity {
                program.ops.push(product(q, w, q_next));
                std::mem::swap(&mut q, &mut q_next);
            }
            q_is_identity = false;
            if iteration < last && !restarts.contains(&(iteration + 1)) {
                program.ops.push(product(r, w, rw));
                program.ops.push(product(w, rw, r_next));
                std::mem::swap(&mut r, &mut r_next);
            }
        }
        program.ops.push(Op::Apply { p: q, x, d: x_next, beta: 0.0 });
        program.output = x_next;
        program
    }
}

/// Which iteration a [`NewtonSchulzPlan`] runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NsMethod {
    /// The standard quintic iteration in the input type ([`newton_schulz`]).
    Standard,
    /// Gram Newton-Schulz in f16 with restarts before the iterations listed ([`gram_newton_schulz`];
    /// [`DEFAULT_RESTARTS`]).
    Gram { restarts: Vec<usize> },
}

/// A [`Program`] step bound to its buffers: GEMM plans made once.
enum BoundOp<E: NsElement> {
    Gram {
        plan: SymmetricPlan<E, E>,
        x: Buf,
        d: Buf,
    },
    Symmetric {
        plan: SymmetricPlan<E, E>,
        a: Buf,
        b: Buf,
        c: Option<Buf>,
        d: Buf,
    },
    /// One plan per matrix of the stack.
    Apply {
        plans: Vec<GemmPlan<E, E>>,
        p: Buf,
        x: Buf,
        d: Buf,
        copy_x: bool,
    },
}

/// The work buffers of a program (in `E`: the input type for the standard iteration, f16 for Gram) and its steps.
struct Bound<E: NsElement> {
    /// Each buffer is taken out while a step writes it, so that the step can read the others.
    buffers: Vec<Option<CudaSlice<E>>>,
    input: Buf,
    output: Buf,
    ops: Vec<BoundOp<E>>,
}

impl<E: NsElement> Bound<E> {
    fn new(gpu: &Gpu, shape: StackShape, program: &Program, variant: SymmetricVariant) -> Result<Self> {
        let (n, _) = shape.sides();
        let mut buffers = Vec::with_capacity(program.buffers.len());
        for &x_shaped in &program.buffers {
            let len = if x_shaped { shape.len() } else { shape.batch * n * n };
            buffers.push(Some(gpu.stream().alloc_zeros::<E>(len)?));
        }
        let mut bound = Bound { buffers, input: program.input, output: program.output, ops: Vec::new() };
        for op in &program.ops {
            let op = bound.bind(gpu, shape, *op, variant)?;
            bound.ops.push(op);
        }
        Ok(bound)
    }

    fn get(&self, buf: Buf) -> &CudaSlice<E> {
        self.buffers[buf.0].as_ref().expect("a buffer is only taken out while a step writes it")
    }

    fn take(&mut self, buf: Buf) -> CudaSlice<E> {
        self.buffers[buf.0].take().expect("a step writes a buffer it does not read")
    }

    /// The GEMM plans of one step, the symmetric products on `variant`.
    fn bind(&mut self, gpu: &Gpu, shape: StackShape, op: Op, variant: SymmetricVariant) -> Result<BoundOp<E>> {
        let (n, m) = shape.sides();
        Ok(match op {
            Op::Gram { x, d } => {
                let layout = if shape.wide() { GemmLayout::Tn } else { GemmLayout::Nt };
                let options = SymmetricOptions { layout, variant, ..SymmetricOptions::default() };
                let mut out = self.take(d);
                let plan = SymmetricPlan::new(
                    gpu,
                    SymmetricShape::new(shape.batch, n, m),
                    options,
                    self.get(x),
                    self.get(x),
                    &mut out,
                );
                self.buffers[d.0] = Some(out);
                BoundOp::Gram { plan: plan?, x, d }
            }
            Op::Symmetric { a, b, c, d, alpha, beta, diagonal } => {
                let options = SymmetricOptions { alpha, beta, diagonal, variant, ..SymmetricOptions::default() };
                let mut out = self.take(d);
                let shape = SymmetricShape::new(shape.batch, n, n);
                let plan = SymmetricPlan::new(gpu, shape, options, self.get(a), self.get(b), &mut out);
                self.buffers[d.0] = Some(out);
                BoundOp::Symmetric { plan: plan?, a, b, c, d }
            }
            Op::Apply { p, x, d, beta } => {
                let options = GemmOptions { layout: GemmLayout::Tt, alpha: 1.0, beta, ..GemmOptions::default() };
                let gemm_shape = GemmShape { m: shape.rows, n: shape.columns, k: n };
                let per_matrix = shape.rows * shape.columns;
                let mut out = self.take(d);
                let mut plans = Vec::with_capacity(shape.batch);
                let result: Result<()> = (|| {
                    for matrix in 0..shape.batch {
                        let p = self.get(p).slice(matrix * n * n..(matrix + 1) * n * n);
                        let x = self.get(x).slice(matrix * per_matrix..(matrix + 1) * per_matrix);
                        let mut y = out.slice_mut(matrix * per_matrix..(matrix + 1) * per_matrix);
                        let plan = if shape.wide() {
                            GemmPlan::new(gpu, gemm_shape, options, &p, &x)?
                        } else {
                            GemmPlan::new(gpu, gemm_shape, options, &x, &p)?
                        };
                        // Encodes D's map (and allocates a stream-K workspace) now, not at the first run.
                        plan.bind_output(gpu, &mut y)?;
                        plans.push(plan);
                    }
                    Ok(())
                })();
                self.buffers[d.0] = Some(out);
                result?;
                BoundOp::Apply { plans, p, x, d, copy_x: beta != 0.0 }
            }
        })
    }

    /// The stream operations [`Bound::run`] queues: one kernel per symmetric product (its epilogue reads C), one GEMM
    /// per matrix for Apply (and a copy of X before a blended one).
    fn operations(&self, batch: usize) -> usize {
        self.ops
            .iter()
            .map(|op| match op {
                BoundOp::Gram { .. } | BoundOp::Symmetric { .. } => 1,
                BoundOp::Apply { copy_x, .. } => batch + usize::from(*copy_x),
            })
            .sum()
    }

    /// Launches every step in order on the stream: no allocation, no encoding, no synchronization.
    fn run(&mut self, gpu: &Gpu, shape: StackShape) -> Result<()> {
        let (n, _) = shape.sides();
        let per_matrix = shape.rows * shape.columns;
        let stream = gpu.stream();
        for index in 0..self.ops.len() {
            let written = match &self.ops[index] {
                BoundOp::Gram { d, .. } | BoundOp::Symmetric { d, .. } | BoundOp::Apply { d, .. } => *d,
            };
            let mut out = self.take(written);
            let result = match &self.ops[index] {
                BoundOp::Gram { plan, x, .. } => plan.launch(gpu, self.get(*x), self.get(*x), &mut out),
                BoundOp::Symmetric { plan, a, b, c: Some(c), .. } => {
                    plan.launch_with_c(gpu, self.get(*a), self.get(*b), self.get(*c), &mut out)
                }
                BoundOp::Symmetric { plan, a, b, c: None, .. } => {
                    plan.launch(gpu, self.get(*a), self.get(*b), &mut out)
                }
                BoundOp::Apply { plans, p, x, copy_x, .. } => (|| {
                    if *copy_x {
                        stream.memcpy_dtod(self.get(*x), &mut out)?;
                    }
                    for (matrix, plan) in plans.iter().enumerate() {
                        let p = self.get(*p).slice(matrix * n * n..(matrix + 1) * n * n);
                        let x = self.get(*x).slice(matrix * per_matrix..(matrix + 1) * per_matrix);
                        let mut y = out.slice_mut(matrix * per_matrix..(matrix + 1) * per_matrix);
                        if shape.wide() {
                            plan.launch(gpu, &p, &x, &mut y)?;
                        } else {
                            plan.launch(gpu, &x, &p, &mut y)?;
                        }
                    }
                    Ok(())
                })(),
            };
            self.buffers[written.0] = Some(out);
            result?;
        }
        Ok(())
    }
}

/// The iteration's buffers, in the type it runs in.
enum Work<T: NsElement> {
    Standard(Bound<T>),
    Gram(Bound<f16>),
}

/// Newton-Schulz on a stack of a fixed shape, made once: the work buffers allocated and every GEMM plan (tensor
/// maps) encoded at creation, so that [`NewtonSchulzPlan::run`] only launches kernels (no allocation, no encoding,
/// no host synchronization) and can be queued back to back. The symmetric products run over the whole stack in one
/// launch each; the products of the n×n polynomial with the rectangular X (B·X, Q·X) are general GEMMs, one launch
/// per matrix of the stack (the general GEMM is not batched).
pub struct NewtonSchulzPlan<T: NsElement> {
    shape: StackShape,
    method: NsMethod,
    partials: CudaSlice<f32>,
    sums: CudaSlice<f32>,
    work: Work<T>,
}

impl<T: NsElement> NewtonSchulzPlan<T> {
    /// Checks the shape (every side a multiple of 8, a non-empty stack) and the coefficients (at least one triple,
    /// all finite), allocates and encodes.
    pub fn new(gpu: &Gpu, shape: StackShape, coefficients: &[(f64, f64, f64)], method: NsMethod) -> Result<Self> {
        Self::with_symmetric_variant(gpu, shape, coefficients, method, SymmetricVariant::Auto)
    }

    /// [`NewtonSchulzPlan::new`] with the symmetric products on a given symmetric GEMM variant rather than the one
    /// [`SymmetricVariant::Auto`] picks per product (the benchmark's ablations). A variant without a kernel for a
    /// product is an error.
    pub fn with_symmetric_variant(
        gpu: &Gpu,
        shape: StackShape,
        coefficients: &[(f64, f64, f64)],
        method: NsMethod,
        variant: SymmetricVariant,
    ) -> Result<Self> {
        let op = method.op();
        shape.check(op)?;
        check_coefficients(op, coefficients)?;
        let partials = gpu.stream().alloc_zeros::<f32>(partials_len(gpu, shape))?;
        let sums = gpu.stream().alloc_zeros::<f32>(shape.batch)?;
        let work = match &method {
            NsMethod::Standard => Work::Standard(Bound::new(gpu, shape, &Program::standard(coefficients), variant)?),
            NsMethod::Gram { restarts } => {
                Work::Gram(Bound::new(gpu, shape, &Program::gram(coefficients, restarts), variant)?)
            }
        };
        Ok(NewtonSchulzPlan { shape, method, partials, sums, work })
    }

    pub fn shape(&self) -> StackShape {
        self.shape
    }

    pub fn method(&self) -> &NsMethod {
        &self.method
    }

    /// The stream operations (kernel launches and copies) one [`NewtonSchulzPlan::run`] queues: the norm's two
    /// kernels, the scaling, the program's steps and the final copy or conversion.
    pub fn operations(&self) -> usize {
        let steps = match &self.work {
            Work::Standard(bound) => bound.operations(self.shape.batch),
            Work::Gram(bound) => bound.operations(self.shape.batch),
        };
        2 + 1 + steps + 1
    }

    /// `out` = the orthogonalized stack `x` (both of the plan's shape, on the GPU's context: checked first).
    pub fn run(&mut self, gpu: &Gpu, x: &CudaSlice<T>, out: &mut CudaSlice<T>) -> Result<()> {
        let (op, shape) = (self.method.op(), self.shape);
        check_buffers(op, shape, x, out)?;
        let context = gpu.stream().context();
        super::check_context(op, "X", x.stream().context(), context)?;
        super::check_context(op, "the output", out.stream().context(), context)?;
        sum_squares(gpu, shape, x, &mut self.partials, &mut self.sums)?;
        match &mut self.work {
            Work::Standard(bound) => {
                let mut input = bound.take(bound.input);
                let scaled = scale(gpu, T::SCALE_TO_SELF, shape, x, &mut input, Some(&self.sums));
                bound.buffers[bound.input.0] = Some(input);
                scaled?;
                bound.run(gpu, shape)?;
                gpu.stream().memcpy_dtod(bound.get(bound.output), out)?;
            }
            Work::Gram(bound) => {
                let mut input = bound.take(bound.input);
                let scaled = scale(gpu, T::SCALE_TO_F16, shape, x, &mut input, Some(&self.sums));
                bound.buffers[bound.input.0] = Some(input);
                scaled?;
                bound.run(gpu, shape)?;
                scale(gpu, T::SCALE_FROM_F16, shape, bound.get(bound.output), out, None)?;
            }
        }
        Ok(())
    }
}

impl NsMethod {
    fn op(&self) -> &'static str {
        match self {
            NsMethod::Standard => OP,
            NsMethod::Gram { .. } => "gram_newton_schulz",
        }
    }
}

fn check_coefficients(op: &'static str, coefficients: &[(f64, f64, f64)]) -> Result<()> {
    if coefficients.is_empty()
        || coefficients.iter().any(|&(a, b, c)| !(a.is_finite() && b.is_finite() && c.is_finite()))
    {
        return Err(Error::bad_argument(op, "coefficients: at least one triple, all finite"));
    }
    Ok(())
}

fn check_buffers<T>(op: &'static str, shape: StackShape, x: &CudaSlice<T>, out: &CudaSlice<T>) -> Result<()> {
    for (what, len) in [("X", x.len()), ("the output", out.len())] {
        if len != shape.len() {
            return Err(Error::bad_argument(op, format!("{what} has {len} elements, the stack {}", shape.len())));
        }
    }
    Ok(())
}

/// The standard Newton-Schulz iteration in `T` (as Muon runs it): `out` = the orthogonalized stack `x`. Makes a
/// [`NewtonSchulzPlan`] and runs it once; keep the plan to repeat.
pub fn newton_schulz<T: NsElement>(
    gpu: &Gpu,
    shape: StackShape,
    x: &CudaSlice<T>,
    out: &mut CudaSlice<T>,
    coefficients: &[(f64, f64, f64)],
) -> Result<()> {
    check_buffers(OP, shape, x, out)?;
    NewtonSchulzPlan::new(gpu, shape, coefficients, NsMethod::Standard)?.run(gpu, x, out)
}

/// Gram Newton-Schulz (see the module documentation): `out` = the orthogonalized stack `x`, iterating in f16, with
/// a restart before each iteration listed in `restarts` (0-based, so the count of iterations done: `[2]` restarts
/// between the 2nd and the 3rd; [`DEFAULT_RESTARTS`]; 0 and indices past the last iteration do nothing). Makes a
/// [`NewtonSchulzPlan`] and runs it once; keep the plan to repeat.
pub fn gram_newton_schulz<T: NsElement>(
    gpu: &Gpu,
    shape: StackShape,
    x: &CudaSlice<T>,
    out: &mut CudaSlice<T>,
    coefficients: &[(f64, f64, f64)],
    restarts: &[usize],
) -> Result<()> {
    let method = NsMethod::Gram { restarts: restarts.to_vec() };
    check_buffers(method.op(), shape, x, out)?;
    NewtonSchulzPlan::new(gpu, shape, coefficients, method)?.run(gpu, x, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_coefficients_are_polar_express_with_the_safety_factor() {
        let c = polar_express();
        assert_eq!(c.len(), 5);
        assert!((c[0].0 - 8.28721201814563 / 1.05).abs() < 1e-12);
        assert!((c[0].1 + 23.595886519098837 / 1.05f64.powi(3)).abs() < 1e-12);
        assert!((c[4].2 - 0.4188073119525673 / 1.05f64.powi(5)).abs() < 1e-12);
    }

    /// The Gram program with the default restart, step by step: what the module documentation (and the public
    /// description) says, with R's update left out after the 2nd iteration (a restart follows) and the 5th (last).
    #[test]
    fn the_gram_program_restarts_before_the_third_iteration() {
        let coefficients = polar_express();
        let program = Program::gram(&coefficients, DEFAULT_RESTARTS);
        // Buffers: X, X', R, R', Q, Q', W, RW.
        let (x, x2, r, r2, q, q2, w, rw) = (Buf(0), Buf(1), Buf(2), Buf(3), Buf(4), Buf(5), Buf(6), Buf(7));
        // W = c·R·R + b·R + a·I.
        let poly = |i: usize, r: Buf, d: Buf| {
            let (a, b, c) = coefficients[i];
            Op::Symmetric { a: r, b: r, c: Some(r), d, alpha: c as f32, beta: b as f32, diagonal: a as f32 }
        };
        let product = |a: Buf, b: Buf, d: Buf| Op::Symmetric { a, b, c: None, d, alpha: 1.0, beta: 0.0, diagonal: 0.0 };
        let mut want = vec![Op::Gram { x, d: r }];
        // Iteration 0: Q = W, written into Q; R·Q into RW, Q·RW into R'.
        want.extend([poly(0, r, q), product(r, q, rw), product(q, rw, r2)]);
        // Iteration 1 on R': W, Q·W into Q'; no R update (a restart follows).
        want.extend([poly(1, r2, w), product(q, w, q2)]);
        // Restart: X' = Q'·X, R' = X'·X'ᵀ; iteration 2: Q = W again (into Q'), R' updated into R.
        want.extend([Op::Apply { p: q2, x, d: x2, beta: 0.0 }, Op::Gram { x: x2, d: r2 }]);
        want.extend([poly(2, r2, q2), product(r2, q2, rw), product(q2, rw, r)]);
        // Iteration 3 on R: Q'·W into Q, R into R'. Iteration 4 on R': Q·W into Q', no R update.
        want.extend([poly(3, r, w), product(q2, w, q), product(r, w, rw), product(w, rw, r2)]);
        want.extend([poly(4, r2, w), product(q, w, q2)]);
        // X'' = Q'·X' into X.
        want.push(Op::Apply { p: q2, x: x2, d: x, beta: 0.0 });
        assert_eq!(program.ops, want);
        assert_eq!((program.input, program.output), (x, x));
        assert_eq!(program.buffers, [true, true, false, false, false, false, false, false]);
        // Symmetric GEMMs: X·Xᵀ twice, W five times, Q·W three times, R·W and W·RW three times each.
        let symmetric = program.ops.iter().filter(|op| matches!(op, Op::Gram { .. } | Op::Symmetric { .. })).count();
        assert_eq!(symmetric, 2 + 5 + 3 + 2 * 3);
    }

    /// A dense row-major float64 matrix, just enough to run a program (the library's float64 references sit above
    /// `ops` and are not imported here: tests/layering.rs).
    #[derive(Clone)]
    struct Mat {
        rows: usize,
        columns: usize,
        data: Vec<f64>,
    }

    impl Mat {
        fn zeros(rows: usize, columns: usize) -> Mat {
            Mat { rows, columns, data: vec![0.0; rows * columns] }
        }

        fn identity(n: usize) -> Mat {
            let mut m = Mat::zeros(n, n);
            (0..n).for_each(|i| m.data[i * n + i] = 1.0);
            m
        }

        fn matmul(&self, other: &Mat) -> Mat {
            assert_eq!(self.columns, other.rows);
            let mut out = Mat::zeros(self.rows, other.columns);
            for i in 0..self.rows {
                for k in 0..self.columns {
                    for j in 0..other.columns {
                        out.data[i * other.columns + j] +=
                            self.data[i * self.columns + k] * other.data[k * other.columns + j];
                    }
                }
            }
            out
        }

        fn transpose(&self) -> Mat {
            let mut out = Mat::zeros(self.columns, self.rows);
            for i in 0..self.rows {
                for j in 0..self.columns {
                    out.data[j * self.rows + i] = self.data[i * self.columns + j];
                }
            }
            out
        }

        /// alpha·self + beta·other.
        fn combine(&self, alpha: f32, other: &Mat, beta: f32) -> Mat {
            let (alpha, beta) = (alpha as f64, beta as f64);
            let data = self.data.iter().zip(&other.data).map(|(x, y)| alpha * x + beta * y).collect();
            Mat { data, ..*self }
        }

        /// ‖self − other‖_F / ‖other‖_F.
        fn relative_distance(&self, other: &Mat) -> f64 {
            let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
            norm(&mut self.data.iter().zip(&other.data).map(|(x, y)| x - y)) / norm(&mut other.data.iter().copied())
        }
    }

    /// Runs a program in float64 on one wide matrix, each step as its [`Op`] documents it.
    fn interpret(program: &Program, x: &Mat) -> Mat {
        let n = x.rows;
        let mut buffers: Vec<Mat> = program
            .buffers
            .iter()
            .map(|&x_shaped| if x_shaped { Mat::zeros(n, x.columns) } else { Mat::zeros(n, n) })
            .collect();
        buffers[program.input.0] = x.clone();
        for op in &program.ops {
            let (d, value) = match *op {
                Op::Gram { x, d } => (d, buffers[x.0].matmul(&buffers[x.0].transpose())),
                Op::Symmetric { a, b, c, d, alpha, beta, diagonal } => {
                    let product = buffers[a.0].matmul(&buffers[b.0]);
                    let blended = match c {
                        Some(c) => product.combine(alpha, &buffers[c.0], beta),
                        None => {
                            assert_eq!(beta, 0.0, "a product without C has no beta");
                            product.combine(alpha, &product, 0.0)
                        }
                    };
                    (d, blended.combine(1.0, &Mat::identity(n), diagonal))
                }
                Op::Apply { p, x, d, beta } => {
                    (d, buffers[p.0].matmul(&buffers[x.0]).combine(1.0, &buffers[x.0], beta))
                }
            };
            buffers[d.0] = value;
        }
        buffers[program.output.0].clone()
    }

    /// Both programs, run step by step in float64, compute the standard iteration (X ← a·X + (b·A + c·A²)·X,
    /// A = X·Xᵀ, with the programs' f32 coefficients), which Gram Newton-Schulz equals in exact arithmetic whatever
    /// the restarts: the steps' buffers, α, β and C are wired as the iteration says.
    #[test]
    fn the_programs_compute_the_standard_iteration_in_float64() {
        let coefficients = polar_express();
        let (n, m) = (12, 40);
        let data = (0..n * m).map(|i| ((i * 7919 % 1013) as f64 / 1013.0 - 0.5) * (1.0 + (i % 5) as f64)).collect();
        let x = Mat { rows: n, columns: m, data };
        let norm = x.data.iter().map(|v| v * v).sum::<f64>().sqrt();
        let x = x.combine((1.0 / norm) as f32, &x, 0.0);
        let mut want = x.clone();
        for &(a, b, c) in &coefficients {
            let gram = want.matmul(&want.transpose());
            let poly = gram.combine(b as f32, &gram.matmul(&gram), c as f32);
            want = want.combine(a as f32, &poly.matmul(&want), 1.0);
        }
        let error = interpret(&Program::standard(&coefficients), &x).relative_distance(&want);
        assert!(error < 1e-12, "standard: relative error {error:e}");
        for restarts in [&[][..], &[2], &[1, 3], &[1, 2, 3, 4]] {
            let error = interpret(&Program::gram(&coefficients, restarts), &x).relative_distance(&want);
            assert!(error < 1e-9, "gram, restarts {restarts:?}: relative error {error:e}");
        }
    }

    #[test]
    fn restarts_at_zero_or_past_the_end_change_nothing() {
        let coefficients = polar_express();
        let plain = Program::gram(&coefficients, &[]);
        assert_eq!(Program::gram(&coefficients, &[0, 5, 9]), plain);
        // Without restarts: X·Xᵀ once, every iteration's products, R updated after all but the last, Q·X at the end.
        let applies = plain.ops.iter().filter(|op| matches!(op, Op::Apply { .. })).count();
        assert_eq!((plain.ops.len(), applies), (1 + 3 + 3 * 4 + 2 + 1, 1));
    }

    #[test]
    fn the_standard_program_alternates_two_x_buffers() {
        let coefficients = polar_express();
        let program = Program::standard(&coefficients);
        let (x, x2, gram, poly) = (Buf(0), Buf(1), Buf(2), Buf(3));
        let mut want = Vec::new();
        for (i, &(a, b, c)) in coefficients.iter().enumerate() {
            let (from, to) = if i % 2 == 0 { (x, x2) } else { (x2, x) };
            want.push(Op::Gram { x: from, d: gram });
            let (alpha, beta) = (c as f32, b as f32);
            want.push(Op::Symmetric { a: gram, b: gram, c: Some(gram), d: poly, alpha, beta, diagonal: 0.0 });
            want.push(Op::Apply { p: poly, x: from, d: to, beta: a as f32 });
        }
        assert_eq!(program.ops, want);
        assert_eq!((program.input, program.output), (x, x2));
    }

    #[test]
    fn stacks_need_sides_in_multiples_of_8() {
        assert!(StackShape { batch: 2, rows: 64, columns: 200 }.check("t").is_ok());
        assert!(StackShape { batch: 2, rows: 200, columns: 64 }.check("t").is_ok());
        assert!(StackShape { batch: 2, rows: 63, columns: 200 }.check("t").is_err());
        assert!(StackShape { batch: 0, rows: 64, columns: 64 }.check("t").is_err());
        assert!(StackShape { batch: 65535, rows: 8, columns: 8 }.check("t").is_ok());
        assert!(matches!(StackShape { batch: 65536, rows: 8, columns: 8 }.check("t"), Err(Error::Unsupported { .. })));
    }
}
