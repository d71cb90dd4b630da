//! Attention forward in float64: the definition every attention kernel is checked against.
//!
//! Tensors are contiguous BSHD: q [batch, seq_q, heads_q, head_dim], k and v [batch, seq_k, heads_kv, head_dim];
//! query head h reads key/value head h / (heads_q / heads_kv). Row i of a causal problem sees keys
//! j ≤ i + seq_k − seq_q (bottom-right aligned, as flash-attn): none when that is negative. For each row,
//! p_j = exp(scale · q·k_j) / Σ_j' exp(scale · q·k_j') over the visible keys, O = Σ_j p_j v_j, and
//! LSE = ln Σ_j exp(scale · q·k_j) (natural log); a row with no visible key has O = 0 and LSE = −∞.

use rayon::prelude::*;

use crate::ops::attention::AttnShape;

/// One attention problem as the reference sees it: the shape, the mask, the softmax scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttnProblem {
    pub shape: AttnShape,
    pub causal: bool,
    pub scale: f64,
}

impl AttnProblem {
    /// Keys query row `i` sees: all of them, or the first i + seq_k − seq_q + 1 when causal (none when that is
    /// not positive).
    pub fn visible_keys(&self, i: usize) -> usize {
        visible_keys(self.shape.seq_q, self.shape.seq_k, self.causal, i)
    }
}

/// Keys query row `i` of `seq_q` sees among `seq_k`, bottom-right causal or not.
pub fn visible_keys(seq_q: usize, seq_k: usize, causal: bool, i: usize) -> usize {
    if causal { (i + seq_k + 1).saturating_sub(seq_q).min(seq_k) } else { seq_k }
}

/// One query row's result.
#[derive(Clone, Debug, PartialEq)]
pub struct AttnRow {
    /// head_dim values.
    pub o: Vec<f64>,
    /// Σ_j p_j · |v_jd| per element: the size any kernel's rounding error in O scales with (|O_d| ≤ this).
    pub o_magnitude: Vec<f64>,
    pub lse: f64,
}

/// The whole problem's result, contiguous: O and its magnitudes [batch, seq_q, heads_q, head_dim], LSE
/// [batch, heads_q, seq_q].
#[derive(Clone, Debug, PartialEq)]
pub struct AttnOutput {
    pub o: Vec<f64>,
    pub o_magnitude: Vec<f64>,
    pub lse: Vec<f64>,
}

/// A row's scaled scores `scale · q_row · k_j` over its `visible` keys (`key_row(j)`: where key j starts in `k`),
/// their maximum, and Σ_j exp(score_j − maximum) (at least 1).
pub(crate) fn row_scores(
    problem: &AttnProblem,
    q_row: &[f64],
    k: &[f64],
    key_row: impl Fn(usize) -> usize,
    visible: usize,
) -> (Vec<f64>, f64, f64) {
    let d = q_row.len();
    let scores: Vec<f64> = (0..visible)
        .map(|j| problem.scale * q_row.iter().zip(&k[key_row(j)..][..d]).map(|(a, b)| a * b).sum::<f64>())
        .collect();
    // Subtracting the maximum keeps every exponential in (0, 1]; it cancels in p and is added back to the LSE.
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum = scores.iter().map(|s| (s - max).exp()).sum();
    (scores, max, sum)
}

/// Row `i` of head `head` of batch `b`. `q`, `k`, `v` are contiguous BSHD as the module describes.
pub fn attention_row(
    problem: &AttnProblem,
    q: &[f64],
    k: &[f64],
    v: &[f64],
    b: usize,
    head: usize,
    i: usize,
) -> AttnRow {
    let AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim: d } = problem.shape;
    assert!(
        heads_kv > 0 && heads_q.is_multiple_of(heads_kv),
        "heads_q {heads_q} is not a multiple of heads_kv {heads_kv}"
    );
    assert_eq!(q.len(), batch * seq_q * heads_q * d, "q length");
    assert_eq!(k.len(), batch * seq_k * heads_kv * d, "k length");
    assert_eq!(v.len(), k.len(), "v length");
    let kv_head = head / (heads_q / heads_kv);
    let q_row = &q[((b * seq_q + i) * heads_q + head) * d..][..d];
    let kv_row = |j: usize| ((b * seq_k + j) * heads_kv + kv_head) * d;
    let visible = problem.visible_keys(i);
    if visible == 0 {
        return AttnRow { o: vec![0.0; d], o_magnitude: vec![0.0; d], lse: f64::NEG_INFINITY };
    }
    let (scores, max, sum) = row_scores(problem, q_row, k, kv_row, visible);
    let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let mut o = vec![0.0; d];
    let mut o_magnitude = vec![0.0; d];
    for (j, w) in weights.iter().enumerate() {
        let p = w / sum;
        for (e, value) in v[kv_row(j)..][..d].iter().enumerate() {
            o[e] += p * value;
            o_magnitude[e] += p * value.abs();
        }
    }
    AttnRow { o, o_magnitude, lse: max + sum.ln() }
}

/// Every row of the problem, the rows spread over every core (each row is computed alone, so the result does not
/// depend on the thread count). O(batch · heads_q · seq_q · seq_k · head_dim): small problems only.
pub fn attention(problem: &AttnProblem, q: &[f64], k: &[f64], v: &[f64]) -> AttnOutput {
    let AttnShape { batch, seq_q, heads_q, head_dim: d, .. } = problem.shape;
    let rows = batch * seq_q * heads_q;
    // Packed row r is (b, i, head) of BSHD order.
    let computed: Vec<AttnRow> = (0..rows)
        .into_par_iter()
        .map(|r| attention_row(problem, q, k, v, r / (seq_q * heads_q), r % heads_q, r / heads_q % seq_q))
        .collect();
    let mut out = AttnOutput { o: vec![0.0; rows * d], o_magnitude: vec![0.0; rows * d], lse: vec![0.0; rows] };
    for (r, row) in computed.into_iter().enumerate() {
        let (b, i, head) = (r / (seq_q * heads_q), r / heads_q % seq_q, r % heads_q);
        out.o[r * d..][..d].copy_from_slice(&row.o);
        out.o_magnitude[r * d..][..d].copy_from_slice(&row.o_magnitude);
        out.lse[(b * heads_q + head) * seq_q + i] = row.lse;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::randn;

    fn shape(batch: usize, seq_q: usize, seq_k: usize, heads_q: usize, heads_kv: usize, d: usize) -> AttnShape {
        AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim: d }
    }

    fn normal(len: usize, seed: u64) -> Vec<f64> {
        randn(len, 1.0, seed).into_iter().map(f64::from).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn two_keys_by_hand() {
        // Scores 0 and ln 3: p = (1/4, 3/4), O = 1/4 · 1 + 3/4 · 5 = 4, LSE = ln(1 + 3).
        let problem = AttnProblem { shape: shape(1, 1, 2, 1, 1, 1), causal: false, scale: 1.0 };
        let row = attention_row(&problem, &[1.0], &[0.0, 3f64.ln()], &[1.0, -5.0], 0, 0, 0);
        assert!(close(row.o[0], 0.25 - 3.75), "{row:?}");
        assert!(close(row.o_magnitude[0], 0.25 + 3.75), "{row:?}");
        assert!(close(row.lse, 4f64.ln()), "{row:?}");
        // The scale multiplies the scores: scale 2 is q doubled.
        let scaled = AttnProblem { scale: 2.0, ..problem };
        let doubled = attention_row(&problem, &[2.0], &[0.0, 3f64.ln()], &[1.0, -5.0], 0, 0, 0);
        assert_eq!(attention_row(&scaled, &[1.0], &[0.0, 3f64.ln()], &[1.0, -5.0], 0, 0, 0), doubled);
        // 1 + 9 = 10: p = (0.1, 0.9).
        assert!(close(doubled.o[0], 0.1 - 4.5) && close(doubled.lse, 10f64.ln()), "{doubled:?}");
    }

    #[test]
    fn softmax_rows_sum_to_one() {
        // V = identity (one key per dimension): each output row is the row's probabilities.
        let (seq_q, d) = (7, 16);
        let problem = AttnProblem { shape: shape(1, seq_q, d, 1, 1, d), causal: false, scale: 0.3 };
        let q = normal(seq_q * d, 1);
        let k = normal(d * d, 2);
        let identity: Vec<f64> = (0..d * d).map(|x| if x / d == x % d { 1.0 } else { 0.0 }).collect();
        let out = attention(&problem, &q, &k, &identity);
        for i in 0..seq_q {
            let p = &out.o[i * d..][..d];
            assert!(close(p.iter().sum::<f64>(), 1.0), "row {i}: {p:?}");
            for (j, &pj) in p.iter().enumerate() {
                let score: f64 = problem.scale * (0..d).map(|e| q[i * d + e] * k[j * d + e]).sum::<f64>();
                assert!(pj > 0.0 && close(pj, (score - out.lse[i]).exp()), "row {i} key {j}");
            }
        }
    }

    #[test]
    fn grouped_query_heads_equal_repeated_kv_heads() {
        let (batch, seq_q, seq_k, heads_q, heads_kv, d) = (2, 5, 9, 8, 2, 8);
        let q = normal(batch * seq_q * heads_q * d, 3);
        let k = normal(batch * seq_k * heads_kv * d, 4);
        let v = normal(batch * seq_k * heads_kv * d, 5);
        // k and v with each kv head repeated for the heads_q / heads_kv query heads that read it.
        let repeat = |x: &[f64]| -> Vec<f64> {
            let mut out = Vec::new();
            for b in 0..batch {
                for j in 0..seq_k {
                    for h in 0..heads_q {
                        let kv = h / (heads_q / heads_kv);
                        out.extend_from_slice(&x[((b * seq_k + j) * heads_kv + kv) * d..][..d]);
                    }
                }
            }
            out
        };
        for causal in [false, true] {
            let grouped = AttnProblem { shape: shape(batch, seq_q, seq_k, heads_q, heads_kv, d), causal, scale: 0.35 };
            let repeated = AttnProblem { shape: shape(batch, seq_q, seq_k, heads_q, heads_q, d), ..grouped };
            assert_eq!(attention(&grouped, &q, &k, &v), attention(&repeated, &q, &repeat(&k), &repeat(&v)));
        }
        // Multi-query: one kv head for all.
        let mqa = AttnProblem { shape: shape(1, 3, 4, 4, 1, 8), causal: false, scale: 0.5 };
        let (q, k, v) = (normal(3 * 4 * 8, 6), normal(4 * 8, 7), normal(4 * 8, 8));
        let out = attention(&mqa, &q, &k, &v);
        let single = AttnProblem { shape: shape(1, 3, 4, 1, 1, 8), ..mqa };
        for h in 0..4 {
            let q_h: Vec<f64> = (0..3).flat_map(|i| q[(i * 4 + h) * 8..][..8].to_vec()).collect();
            let alone = attention(&single, &q_h, &k, &v);
            for i in 0..3 {
                assert_eq!(&out.o[(i * 4 + h) * 8..][..8], &alone.o[i * 8..][..8]);
            }
        }
    }

    #[test]
    fn causal_is_bottom_right_aligned() {
        let d = 4;
        for (seq_q, seq_k) in [(3, 5), (5, 5), (6, 3)] {
            let problem = AttnProblem { shape: shape(1, seq_q, seq_k, 1, 1, d), causal: true, scale: 0.7 };
            let (q, k, v) = (normal(seq_q * d, 9), normal(seq_k * d, 10), normal(seq_k * d, 11));
            for i in 0..seq_q {
                // Row i sees keys 0..=i + seq_k − seq_q: the same as full attention over just those keys.
                let last = i as i64 + seq_k as i64 - seq_q as i64;
                assert_eq!(problem.visible_keys(i) as i64, (last + 1).max(0));
                let row = attention_row(&problem, &q, &k, &v, 0, 0, i);
                if last < 0 {
                    assert_eq!(row.o, vec![0.0; d]);
                    assert_eq!(row.lse, f64::NEG_INFINITY);
                    continue;
                }
                let n = last as usize + 1;
                let truncated = AttnProblem { shape: shape(1, 1, n, 1, 1, d), causal: false, ..problem };
                let want = attention_row(&truncated, &q[i * d..][..d], &k[..n * d], &v[..n * d], 0, 0, 0);
                assert_eq!(row, want, "seq_q {seq_q} seq_k {seq_k} row {i}");
            }
        }
        // Square causal: the last row sees everything, the first only key 0 (O = v_0 exactly, LSE = its score).
        let problem = AttnProblem { shape: shape(1, 4, 4, 1, 1, 2), causal: true, scale: 1.0 };
        let out = attention(
            &problem,
            &[1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            &[3.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            &[0.5, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        );
        assert_eq!(&out.o[..2], &[0.5, -2.0]);
        assert_eq!(out.lse[0], 5.0);
        assert_eq!(visible_keys(4, 4, false, 0), 4);
    }

    #[test]
    fn rows_without_keys_are_zero_with_minus_infinity_lse() {
        // seq_q > seq_k, causal: rows 0 and 1 of 5 see no key (i + 3 − 5 < 0).
        let problem = AttnProblem { shape: shape(2, 5, 3, 2, 1, 4), causal: true, scale: 0.5 };
        let out = attention(&problem, &normal(2 * 5 * 2 * 4, 12), &normal(2 * 3 * 4, 13), &normal(2 * 3 * 4, 14));
        for b in 0..2 {
            for h in 0..2 {
                for i in 0..5 {
                    let lse = out.lse[(b * 2 + h) * 5 + i];
                    let o = &out.o[((b * 5 + i) * 2 + h) * 4..][..4];
                    if i < 2 {
                        assert!(lse == f64::NEG_INFINITY && o.iter().all(|&x| x == 0.0), "b {b} h {h} i {i}");
                    } else {
                        assert!(lse.is_finite() && o.iter().any(|&x| x != 0.0), "b {b} h {h} i {i}");
                    }
                }
            }
        }
    }
}
