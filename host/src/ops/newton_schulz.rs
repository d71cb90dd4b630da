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
//!   Z = b·R + c·R², Q ← Q·Z + a·Q, RZ = R·Z + a·R, R ← Z·RZ + a·RZ; at each restart (after the iterations listed,
//!   default after the 2nd) X ← Q·X, R = X·Xᵀ, Q = I; finally X ← Q·X. Every product but the last (and the restarts')
//!   is of two polynomials in the same R, so symmetric: R·R, Q·Z, R·Z, Z·RZ run on the symmetric GEMM, half the tensor
//!   work of the full one, and all are n×n with n the smaller side, instead of n×m. In exact arithmetic it computes
//!   the same X as the standard iteration; in f16 the restarts keep R's spurious negative eigenvalues from growing.
//!
//! The β·C terms: the GEMMs blend into D, so C is copied into D first (`gemm_symmetric_with_c`, and a copy ahead
//! of the general GEMM); Q = Z + a·I at the first iteration after a (re)start is a copy and [`add_diagonal`].

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use half::{bf16, f16};

use super::gemm::{GemmElement, GemmLayout, GemmOptions, GemmOutput, GemmShape, gemm};
use super::gemm_symmetric::{SymmetricOptions, SymmetricShape, gemm_symmetric, gemm_symmetric_with_c};
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
    const ADD_DIAGONAL: Kernel;
    /// The scaled conversion to this type, and to f16.
    const SCALE_TO_SELF: Kernel;
    const SCALE_TO_F16: Kernel;
    /// The conversion from f16.
    const SCALE_FROM_F16: Kernel;
}

impl NsElement for bf16 {
    const SUM_SQUARES: Kernel = kernels::SUM_SQUARES_BF16;
    const ADD_DIAGONAL: Kernel = kernels::ADD_DIAGONAL_BF16;
    const SCALE_TO_SELF: Kernel = kernels::SCALE_BF16_TO_BF16;
    const SCALE_TO_F16: Kernel = kernels::SCALE_BF16_TO_F16;
    const SCALE_FROM_F16: Kernel = kernels::SCALE_F16_TO_BF16;
}

impl NsElement for f16 {
    const SUM_SQUARES: Kernel = kernels::SUM_SQUARES_F16;
    const ADD_DIAGONAL: Kernel = kernels::ADD_DIAGONAL_F16;
    const SCALE_TO_SELF: Kernel = kernels::SCALE_F16_TO_F16;
    const SCALE_TO_F16: Kernel = kernels::SCALE_F16_TO_F16;
    const SCALE_FROM_F16: Kernel = kernels::SCALE_F16_TO_F16;
}

const THREADS: u32 = 256;

/// A grid of (blocks over `work` items, `batch`) blocks of [`THREADS`].
fn stack_grid(work: usize, batch: usize) -> LaunchConfig {
    let blocks = work.div_ceil(THREADS as usize * 8).clamp(1, 1024) as u32;
    LaunchConfig { grid_dim: (blocks, batch as u32, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 }
}

/// sums[m] = ‖x_m‖_F² in f32 for each matrix of the stack (the sums are zeroed first).
fn sum_squares<T: NsElement>(gpu: &Gpu, shape: StackShape, x: &CudaSlice<T>, sums: &mut CudaSlice<f32>) -> Result<()> {
    gpu.stream().memset_zeros(sums)?;
    let per_matrix = shape.rows * shape.columns;
    let function = gpu.function(T::SUM_SQUARES)?;
    let mut launch = gpu.stream().launch_builder(&function);
    launch.arg(x).arg(&per_matrix).arg(sums);
    // SAFETY: x holds batch matrices of per_matrix elements, sums batch f32 (checked by the callers' allocation).
    unsafe { launch.launch(stack_grid(per_matrix, shape.batch)) }
        .map(drop)
        .map_err(|source| Error::Launch { kernel: T::SUM_SQUARES.name, source })
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
    unsafe { launch.launch(stack_grid(per_matrix, shape.batch)) }
        .map(drop)
        .map_err(|source| Error::Launch { kernel: kernel.name, source })
}

/// d[m] += value·I for each n×n matrix of a stack of `batch`.
fn add_diagonal<T: NsElement>(gpu: &Gpu, batch: usize, n: usize, d: &mut CudaSlice<T>, value: f32) -> Result<()> {
    assert!(d.len() == batch * n * n);
    let function = gpu.function(T::ADD_DIAGONAL)?;
    let mut launch = gpu.stream().launch_builder(&function);
    launch.arg(d).arg(&n).arg(&value);
    // SAFETY: d holds batch n×n matrices (asserted).
    unsafe { launch.launch(stack_grid(n, batch)) }
        .map(drop)
        .map_err(|source| Error::Launch { kernel: T::ADD_DIAGONAL.name, source })
}

/// Per matrix of the stack: Y ← beta·Y + P·X where X is wide (P n×n on the left), or Y ← beta·Y + X·P (P on the
/// right) where it is tall; Y holds X's shape. General GEMMs, one per matrix (the general GEMM is not batched).
#[allow(clippy::too_many_arguments)]
fn apply_polynomial<T: NsElement>(
    gpu: &Gpu,
    shape: StackShape,
    p: &CudaSlice<T>,
    x: &CudaSlice<T>,
    y: &mut CudaSlice<T>,
    beta: f32,
) -> Result<()> {
    let (n, _) = shape.sides();
    let per_matrix = shape.rows * shape.columns;
    let options = GemmOptions { layout: GemmLayout::Tt, alpha: 1.0, beta, ..GemmOptions::default() };
    let gemm_shape = GemmShape { m: shape.rows, n: shape.columns, k: n };
    for matrix in 0..shape.batch {
        let p = p.slice(matrix * n * n..(matrix + 1) * n * n);
        let x = x.slice(matrix * per_matrix..(matrix + 1) * per_matrix);
        let mut y = y.slice_mut(matrix * per_matrix..(matrix + 1) * per_matrix);
        if shape.wide() {
            gemm::<T, T>(gpu, gemm_shape, &p, &x, &mut y, options)?;
        } else {
            gemm::<T, T>(gpu, gemm_shape, &x, &p, &mut y, options)?;
        }
    }
    Ok(())
}

/// The Gram matrix of each matrix of the stack into `r` (n×n, n the smaller side): X·Xᵀ (tn) or Xᵀ·X (nt).
fn gram<T: NsElement>(gpu: &Gpu, shape: StackShape, x: &CudaSlice<T>, r: &mut CudaSlice<T>) -> Result<()> {
    let (n, m) = shape.sides();
    let layout = if shape.wide() { GemmLayout::Tn } else { GemmLayout::Nt };
    let options = SymmetricOptions { layout, ..SymmetricOptions::default() };
    gemm_symmetric::<T, T>(gpu, SymmetricShape::new(shape.batch, n, m), x, x, r, options)
}

/// D = alpha·P·S + beta·C for symmetric n×n stacks P, S, C whose product is symmetric (polynomials in one matrix).
#[allow(clippy::too_many_arguments)]
fn symmetric_product<T: NsElement>(
    gpu: &Gpu,
    batch: usize,
    n: usize,
    p: &CudaSlice<T>,
    s: &CudaSlice<T>,
    c: &CudaSlice<T>,
    d: &mut CudaSlice<T>,
    alpha: f32,
    beta: f32,
) -> Result<()> {
    let options = SymmetricOptions { alpha, beta, ..SymmetricOptions::default() };
    gemm_symmetric_with_c::<T, T>(gpu, SymmetricShape::new(batch, n, n), p, s, c, (n, n), d, options)
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

/// The standard Newton-Schulz iteration in `T` (as Muon runs it): `out` = the orthogonalized stack `x`.
pub fn newton_schulz<T: NsElement>(
    gpu: &Gpu,
    shape: StackShape,
    x: &CudaSlice<T>,
    out: &mut CudaSlice<T>,
    coefficients: &[(f64, f64, f64)],
) -> Result<()> {
    shape.check(OP)?;
    check_coefficients(OP, coefficients)?;
    check_buffers(OP, shape, x, out)?;
    let (n, _) = shape.sides();
    let stream = gpu.stream();
    let mut sums = stream.alloc_zeros::<f32>(shape.batch)?;
    let mut current = stream.alloc_zeros::<T>(shape.len())?;
    let mut next = stream.alloc_zeros::<T>(shape.len())?;
    let mut a = stream.alloc_zeros::<T>(shape.batch * n * n)?;
    let mut b = stream.alloc_zeros::<T>(shape.batch * n * n)?;
    sum_squares(gpu, shape, x, &mut sums)?;
    scale(gpu, T::SCALE_TO_SELF, shape, x, &mut current, Some(&sums))?;
    for &(ca, cb, cc) in coefficients {
        gram(gpu, shape, &current, &mut a)?;
        // B = b·A + c·A·A.
        symmetric_product(gpu, shape.batch, n, &a, &a, &a, &mut b, cc as f32, cb as f32)?;
        // X ← a·X + B·X (or X·B).
        stream.memcpy_dtod(&current, &mut next)?;
        apply_polynomial(gpu, shape, &b, &current, &mut next, ca as f32)?;
        std::mem::swap(&mut current, &mut next);
    }
    stream.memcpy_dtod(&current, out)?;
    Ok(())
}

/// Gram Newton-Schulz (see the module documentation): `out` = the orthogonalized stack `x`, iterating in f16, with
/// a restart after each iteration listed in `restarts` (1-based counts of iterations done: `[2]` restarts between
/// the 2nd and the 3rd; [`DEFAULT_RESTARTS`]).
pub fn gram_newton_schulz<T: NsElement>(
    gpu: &Gpu,
    shape: StackShape,
    x: &CudaSlice<T>,
    out: &mut CudaSlice<T>,
    coefficients: &[(f64, f64, f64)],
    restarts: &[usize],
) -> Result<()> {
    const OP: &str = "gram_newton_schulz";
    shape.check(OP)?;
    check_coefficients(OP, coefficients)?;
    check_buffers(OP, shape, x, out)?;
    let (n, _) = shape.sides();
    let batch = shape.batch;
    let stream = gpu.stream();
    let square = |stream: &std::sync::Arc<cudarc::driver::CudaStream>| stream.alloc_zeros::<f16>(batch * n * n);
    let mut sums = stream.alloc_zeros::<f32>(batch)?;
    let mut x16 = stream.alloc_zeros::<f16>(shape.len())?;
    let mut x_next = stream.alloc_zeros::<f16>(shape.len())?;
    let (mut r, mut r_next, mut z, mut rz) = (square(stream)?, square(stream)?, square(stream)?, square(stream)?);
    let (mut q, mut q_next) = (square(stream)?, square(stream)?);
    sum_squares(gpu, shape, x, &mut sums)?;
    scale(gpu, T::SCALE_TO_F16, shape, x, &mut x16, Some(&sums))?;
    gram(gpu, shape, &x16, &mut r)?;
    // Q = I is implicit until the first iteration after a (re)start sets Q = Z + a·I.
    let mut q_is_identity = true;
    let last = coefficients.len() - 1;
    for (iteration, &(ca, cb, cc)) in coefficients.iter().enumerate() {
        let (ca, cb, cc) = (ca as f32, cb as f32, cc as f32);
        if iteration > 0 && restarts.contains(&iteration) && !q_is_identity {
            // X ← Q·X, R = X·Xᵀ, Q = I.
            apply_polynomial(gpu, shape, &q, &x16, &mut x_next, 0.0)?;
            std::mem::swap(&mut x16, &mut x_next);
            gram(gpu, shape, &x16, &mut r)?;
            q_is_identity = true;
        }
        // Z = b·R + c·R².
        symmetric_product(gpu, batch, n, &r, &r, &r, &mut z, cc, cb)?;
        // Q ← Q·Z + a·Q.
        if q_is_identity {
            stream.memcpy_dtod(&z, &mut q)?;
            add_diagonal(gpu, batch, n, &mut q, ca)?;
            q_is_identity = false;
        } else {
            symmetric_product(gpu, batch, n, &q, &z, &q, &mut q_next, 1.0, ca)?;
            std::mem::swap(&mut q, &mut q_next);
        }
        // R is needed again only before another iteration (the last one's update is skipped).
        let restart_next = restarts.contains(&(iteration + 1));
        if iteration < last && !restart_next {
            // RZ = R·Z + a·R; R ← Z·RZ + a·RZ.
            symmetric_product(gpu, batch, n, &r, &z, &r, &mut rz, 1.0, ca)?;
            symmetric_product(gpu, batch, n, &z, &rz, &rz, &mut r_next, 1.0, ca)?;
            std::mem::swap(&mut r, &mut r_next);
        }
    }
    // X ← Q·X (Q = I only if there were no iterations, ruled out above).
    apply_polynomial(gpu, shape, &q, &x16, &mut x_next, 0.0)?;
    scale(gpu, T::SCALE_FROM_F16, shape, &x_next, out, None)?;
    Ok(())
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

    #[test]
    fn stacks_need_sides_in_multiples_of_8() {
        assert!(StackShape { batch: 2, rows: 64, columns: 200 }.check("t").is_ok());
        assert!(StackShape { batch: 2, rows: 200, columns: 64 }.check("t").is_ok());
        assert!(StackShape { batch: 2, rows: 63, columns: 200 }.check("t").is_err());
        assert!(StackShape { batch: 0, rows: 64, columns: 64 }.check("t").is_err());
    }
}
