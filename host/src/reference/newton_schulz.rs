//! Float64 references for Newton-Schulz (crate::ops::newton_schulz): the standard iteration and Gram Newton-Schulz
//! with restarts, on one row-major matrix, and the singular values of a result (eigenvalues of X·Xᵀ by cyclic
//! Jacobi rotations), to check that they landed in the band the coefficients promise.

/// A row-major `rows × columns` matrix of f64.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub rows: usize,
    pub columns: usize,
    pub data: Vec<f64>,
}

impl Matrix {
    pub fn new(rows: usize, columns: usize, data: Vec<f64>) -> Self {
        assert_eq!(data.len(), rows * columns);
        Matrix { rows, columns, data }
    }

    pub fn identity(n: usize) -> Self {
        let mut m = Matrix::new(n, n, vec![0.0; n * n]);
        for i in 0..n {
            m.data[i * n + i] = 1.0;
        }
        m
    }

    pub fn at(&self, r: usize, c: usize) -> f64 {
        self.data[r * self.columns + c]
    }

    pub fn transpose(&self) -> Matrix {
        let mut t = vec![0.0; self.data.len()];
        for r in 0..self.rows {
            for c in 0..self.columns {
                t[c * self.rows + r] = self.at(r, c);
            }
        }
        Matrix::new(self.columns, self.rows, t)
    }

    pub fn matmul(&self, other: &Matrix) -> Matrix {
        assert_eq!(self.columns, other.rows);
        let mut out = vec![0.0; self.rows * other.columns];
        for r in 0..self.rows {
            for k in 0..self.columns {
                let a = self.at(r, k);
                if a == 0.0 {
                    continue;
                }
                let row = &other.data[k * other.columns..(k + 1) * other.columns];
                for (o, b) in out[r * other.columns..(r + 1) * other.columns].iter_mut().zip(row) {
                    *o += a * b;
                }
            }
        }
        Matrix::new(self.rows, other.columns, out)
    }

    /// alpha·self + beta·other.
    pub fn combine(&self, alpha: f64, other: &Matrix, beta: f64) -> Matrix {
        assert_eq!((self.rows, self.columns), (other.rows, other.columns));
        let data = self.data.iter().zip(&other.data).map(|(a, b)| alpha * a + beta * b).collect();
        Matrix::new(self.rows, self.columns, data)
    }

    pub fn frobenius(&self) -> f64 {
        self.data.iter().map(|v| v * v).sum::<f64>().sqrt()
    }

    pub fn scaled(&self, factor: f64) -> Matrix {
        Matrix::new(self.rows, self.columns, self.data.iter().map(|v| v * factor).collect())
    }
}

/// X / (‖X‖_F + eps), transposed where rows > columns (so the result is wide), and whether it was.
fn normalized_wide(x: &Matrix, eps: f64) -> (Matrix, bool) {
    let x = x.scaled(1.0 / (x.frobenius() + eps));
    if x.rows > x.columns { (x.transpose(), true) } else { (x, false) }
}

/// The standard quintic iteration: X ← X / (‖X‖_F + eps); per (a, b, c): A = X·Xᵀ, X ← a·X + (b·A + c·A²)·X.
pub fn newton_schulz(x: &Matrix, coefficients: &[(f64, f64, f64)], eps: f64) -> Matrix {
    let (mut x, transposed) = normalized_wide(x, eps);
    for &(a, b, c) in coefficients {
        let gram = x.matmul(&x.transpose());
        let poly = gram.combine(b, &gram.matmul(&gram), c);
        x = x.combine(a, &poly.matmul(&x), 1.0);
    }
    if transposed { x.transpose() } else { x }
}

/// Gram Newton-Schulz: R = X·Xᵀ, Q = I; per (a, b, c): Z = b·R + c·R², Q ← Q·Z + a·Q, RZ = R·Z + a·R,
/// R ← Z·RZ + a·RZ; after the iterations counted in `restarts`: X ← Q·X, R = X·Xᵀ, Q = I; finally Q·X. Equal to
/// [`newton_schulz`] in exact arithmetic (a test below holds them together).
pub fn gram_newton_schulz(x: &Matrix, coefficients: &[(f64, f64, f64)], restarts: &[usize], eps: f64) -> Matrix {
    let (mut x, transposed) = normalized_wide(x, eps);
    let n = x.rows;
    let mut r = x.matmul(&x.transpose());
    let mut q = Matrix::identity(n);
    for (iteration, &(a, b, c)) in coefficients.iter().enumerate() {
        if iteration > 0 && restarts.contains(&iteration) {
            x = q.matmul(&x);
            r = x.matmul(&x.transpose());
            q = Matrix::identity(n);
        }
        let z = r.combine(b, &r.matmul(&r), c);
        q = q.matmul(&z).combine(1.0, &q, a);
        let rz = r.matmul(&z).combine(1.0, &r, a);
        r = z.matmul(&rz).combine(1.0, &rz, a);
    }
    let x = q.matmul(&x);
    if transposed { x.transpose() } else { x }
}

/// Eigenvalues of a symmetric matrix, ascending, by cyclic Jacobi rotations (to 1e-13 of the off-diagonal mass).
pub fn symmetric_eigenvalues(m: &Matrix) -> Vec<f64> {
    assert_eq!(m.rows, m.columns);
    let n = m.rows;
    let mut a = m.data.clone();
    let norm = m.frobenius().max(f64::MIN_POSITIVE);
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j].powi(2))
            .sum();
        if off.sqrt() <= 1e-13 * norm {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let (app, aqq) = (a[p * n + p], a[q * n + q]);
                let theta = (aqq - app) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
            }
        }
    }
    let mut eigenvalues: Vec<f64> = (0..n).map(|i| a[i * n + i]).collect();
    eigenvalues.sort_by(f64::total_cmp);
    eigenvalues
}

/// The singular values of X (the smaller side's count), ascending: √ of the eigenvalues of the smaller Gram matrix.
pub fn singular_values(x: &Matrix) -> Vec<f64> {
    let gram = if x.rows <= x.columns { x.matmul(&x.transpose()) } else { x.transpose().matmul(x) };
    symmetric_eigenvalues(&gram).into_iter().map(|e| e.max(0.0).sqrt()).collect()
}

/// Where the singular values of a Polar Express result lie for inputs whose normalized singular values are in
/// [1e-3, 1.05]: the composition of the five odd polynomials σ ↦ aσ + bσ³ + cσ⁵ maps that interval into
/// [0.7290, 1.1236] (`the_polar_express_polynomials_map_into_the_band` evaluates it on a fine grid), rounded outwards.
/// The GPU tests hold their half-precision results to it, widened by the precision's error.
pub const POLAR_EXPRESS_BAND: (f64, f64) = (0.72, 1.13);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::newton_schulz::polar_express;

    /// A deterministic pseudo-normal matrix (sum of uniforms from a small LCG), with its singular values spread over
    /// `decades` decades when given (scaled columns of a random matrix).
    fn random(rows: usize, columns: usize, seed: u64, decades: f64) -> Matrix {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut uniform = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut data = Vec::with_capacity(rows * columns);
        for _ in 0..rows * columns {
            data.push((0..12).map(|_| uniform()).sum::<f64>() - 6.0);
        }
        let mut m = Matrix::new(rows, columns, data);
        if decades > 0.0 {
            let short = rows.min(columns);
            for r in 0..rows {
                for c in 0..columns {
                    let index = if rows <= columns { r } else { c };
                    let scale = 10f64.powf(-decades * index as f64 / (short - 1).max(1) as f64);
                    m.data[r * columns + c] *= scale;
                }
            }
        }
        m
    }

    #[test]
    fn gram_newton_schulz_is_newton_schulz_in_exact_arithmetic() {
        let coefficients = polar_express();
        for (rows, columns, seed) in [(16, 40, 1), (40, 16, 2), (24, 24, 3)] {
            let x = random(rows, columns, seed, 0.0);
            let standard = newton_schulz(&x, &coefficients, 1e-7);
            for restarts in [&[][..], &[2], &[2, 4]] {
                let gram = gram_newton_schulz(&x, &coefficients, restarts, 1e-7);
                let diff = standard.combine(1.0, &gram, -1.0).frobenius();
                assert!(diff < 1e-9 * standard.frobenius(), "{rows}×{columns} restarts {restarts:?}: {diff}");
            }
        }
    }

    #[test]
    fn jacobi_finds_the_eigenvalues_of_a_known_matrix() {
        // Q·diag·Qᵀ for a rotation Q: the eigenvalues come back.
        let (c, s) = (0.6f64, 0.8f64);
        let q = Matrix::new(3, 3, vec![c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0]);
        let d = Matrix::new(3, 3, vec![3.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.5]);
        let m = q.matmul(&d).matmul(&q.transpose());
        let e = symmetric_eigenvalues(&m);
        for (found, want) in e.iter().zip([-1.0, 0.5, 3.0]) {
            assert!((found - want).abs() < 1e-12, "{e:?}");
        }
    }

    #[test]
    fn the_polar_express_polynomials_map_into_the_band() {
        let coefficients = polar_express();
        let (low_end, high_end) = (1e-3f64.ln(), 1.05f64.ln());
        let steps = 100_000;
        let (mut low, mut high) = (f64::MAX, 0.0f64);
        for i in 0..=steps {
            let mut s = (low_end + (high_end - low_end) * i as f64 / steps as f64).exp();
            for &(a, b, c) in &coefficients {
                s = a * s + b * s.powi(3) + c * s.powi(5);
            }
            low = low.min(s);
            high = high.max(s);
        }
        assert!((0.7289..0.7291).contains(&low) && (1.1235..1.1237).contains(&high), "[{low}, {high}]");
        assert!(low >= POLAR_EXPRESS_BAND.0 && high <= POLAR_EXPRESS_BAND.1);
    }

    #[test]
    fn the_polar_express_band_holds_in_float64() {
        let coefficients = polar_express();
        let (mut low, mut high) = (f64::MAX, 0.0f64);
        for (rows, columns, seed, decades) in
            [(32, 96, 1, 0.0), (96, 32, 2, 0.0), (48, 48, 3, 0.0), (32, 96, 4, 2.0), (48, 160, 5, 2.0)]
        {
            let x = random(rows, columns, seed, decades);
            // Only inputs whose normalized singular values stay above 1e-3: what the band is promised for.
            let normalized = singular_values(&x.scaled(1.0 / x.frobenius()));
            assert!(normalized[0] > 1e-3, "{normalized:?}");
            let sv = singular_values(&newton_schulz(&x, &coefficients, 1e-7));
            low = low.min(sv[0]);
            high = high.max(*sv.last().unwrap());
        }
        println!("singular values in [{low}, {high}]");
        assert!(low >= POLAR_EXPRESS_BAND.0 && high <= POLAR_EXPRESS_BAND.1, "[{low}, {high}]");
    }
}
