//! Attention backward in float64: the gradients every attention backward kernel is checked against.
//!
//! For the forward of [`super::attention`] (same layouts, GQA, bottom-right causal mask and scale) and an upstream
//! gradient dO of O's shape, per query row i of head h, with P_ij = exp(scale · q_i·k_j − LSE_i) over the visible
//! keys:
//!
//! - dV_j += P_ij · dO_i
//! - dP_ij = dO_i · v_j, D_i = dO_i · O_i = Σ_j P_ij dP_ij, dS_ij = P_ij (dP_ij − D_i)
//! - dQ_i = scale · Σ_j dS_ij k_j, dK_j += scale · dS_ij q_i
//!
//! dK and dV of a key/value head sum over the heads_q / heads_kv query heads that read it. A row that sees no key
//! has dQ = 0 and adds nothing to dK or dV. Each (batch, key/value head) is computed by one thread in a fixed
//! order (query heads of the group, then rows, then keys), so the result does not depend on the thread count.

use rayon::prelude::*;

use super::attention::{AttnProblem, row_scores};
use crate::ops::attention::AttnShape;

/// dQ (as q), dK and dV (as k and v), contiguous BSHD.
#[derive(Clone, Debug, PartialEq)]
pub struct AttnGradients {
    pub dq: Vec<f64>,
    pub dk: Vec<f64>,
    pub dv: Vec<f64>,
}

/// The gradients of Σ O ∘ `d_o` with respect to q, k and v. O(batch · heads_q · seq_q · seq_k · head_dim): small
/// problems only.
pub fn attention_backward(problem: &AttnProblem, q: &[f64], k: &[f64], v: &[f64], d_o: &[f64]) -> AttnGradients {
    backward(problem, q, k, v, d_o, None)
}

/// As [`attention_backward`], with D_i = dO_i · `o`_i from the O given (e.g. a kernel's 16-bit output, which is
/// what a backward kernel reads) instead of the exact one: the gradients a kernel computes from that O, exactly.
pub fn attention_backward_given_o(
    problem: &AttnProblem,
    q: &[f64],
    k: &[f64],
    v: &[f64],
    d_o: &[f64],
    o: &[f64],
) -> AttnGradients {
    assert_eq!(o.len(), q.len(), "o length");
    backward(problem, q, k, v, d_o, Some(o))
}

fn backward(problem: &AttnProblem, q: &[f64], k: &[f64], v: &[f64], d_o: &[f64], o: Option<&[f64]>) -> AttnGradients {
    let AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim: d } = problem.shape;
    assert!(
        heads_kv > 0 && heads_q.is_multiple_of(heads_kv),
        "heads_q {heads_q} is not a multiple of heads_kv {heads_kv}"
    );
    assert_eq!(q.len(), batch * seq_q * heads_q * d, "q length");
    assert_eq!(k.len(), batch * seq_k * heads_kv * d, "k length");
    assert_eq!(v.len(), k.len(), "v length");
    assert_eq!(d_o.len(), q.len(), "d_o length");
    let group = heads_q / heads_kv;
    let q_at = |b: usize, i: usize, h: usize| ((b * seq_q + i) * heads_q + h) * d;
    let kv_at = |b: usize, j: usize, h: usize| ((b * seq_k + j) * heads_kv + h) * d;
    let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();

    // One task per (batch, kv head): its dK and dV rows, and the dQ rows of the query heads that read it.
    let tasks: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)> = (0..batch * heads_kv)
        .into_par_iter()
        .map(|task| {
            let (b, kv_head) = (task / heads_kv, task % heads_kv);
            let mut dq = vec![0.0; group * seq_q * d];
            let mut dk = vec![0.0; seq_k * d];
            let mut dv = vec![0.0; seq_k * d];
            for g in 0..group {
                let head = kv_head * group + g;
                for i in 0..seq_q {
                    let visible = problem.visible_keys(i);
                    if visible == 0 {
                        continue;
                    }
                    let (q_row, do_row) = (&q[q_at(b, i, head)..][..d], &d_o[q_at(b, i, head)..][..d]);
                    let (scores, max, sum) = row_scores(problem, q_row, k, |j| kv_at(b, j, kv_head), visible);
                    let lse = max + sum.ln();
                    let p: Vec<f64> = scores.iter().map(|s| (s - lse).exp()).collect();
                    let dp: Vec<f64> = (0..visible).map(|j| dot(do_row, &v[kv_at(b, j, kv_head)..][..d])).collect();
                    // D_i = dO_i · O_i, with O_i = Σ_j P_ij v_j (or the O given).
                    let delta: f64 = match o {
                        Some(o) => dot(do_row, &o[q_at(b, i, head)..][..d]),
                        None => p.iter().zip(&dp).map(|(p, dp)| p * dp).sum(),
                    };
                    let dq_row = &mut dq[(g * seq_q + i) * d..][..d];
                    for j in 0..visible {
                        let ds = p[j] * (dp[j] - delta);
                        let k_row = &k[kv_at(b, j, kv_head)..][..d];
                        for e in 0..d {
                            dq_row[e] += problem.scale * ds * k_row[e];
                            dk[j * d + e] += problem.scale * ds * q_row[e];
                            dv[j * d + e] += p[j] * do_row[e];
                        }
                    }
                }
            }
            (dq, dk, dv)
        })
        .collect();

    let mut out = AttnGradients { dq: vec![0.0; q.len()], dk: vec![0.0; k.len()], dv: vec![0.0; v.len()] };
    for (task, (dq, dk, dv)) in tasks.into_iter().enumerate() {
        let (b, kv_head) = (task / heads_kv, task % heads_kv);
        for g in 0..group {
            for i in 0..seq_q {
                out.dq[q_at(b, i, kv_head * group + g)..][..d].copy_from_slice(&dq[(g * seq_q + i) * d..][..d]);
            }
        }
        for j in 0..seq_k {
            out.dk[kv_at(b, j, kv_head)..][..d].copy_from_slice(&dk[j * d..][..d]);
            out.dv[kv_at(b, j, kv_head)..][..d].copy_from_slice(&dv[j * d..][..d]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::attention::attention;
    use crate::reference::randn;

    fn normal(len: usize, seed: u64) -> Vec<f64> {
        randn(len, 1.0, seed).into_iter().map(f64::from).collect()
    }

    /// Σ O ∘ d_o: the scalar whose gradients [`attention_backward`] returns.
    fn loss(problem: &AttnProblem, q: &[f64], k: &[f64], v: &[f64], d_o: &[f64]) -> f64 {
        attention(problem, q, k, v).o.iter().zip(d_o).map(|(o, g)| o * g).sum()
    }

    /// Every gradient element against a central difference of the forward, with steps of 1e-5: the difference's
    /// truncation error is O(h²) ≈ 1e-10 times the third derivative, its rounding error ≈ 1e-16 / 1e-5.
    fn check_against_differences(problem: &AttnProblem, seed: u64) {
        let AttnShape { batch, seq_q, seq_k, heads_q, heads_kv, head_dim: d } = problem.shape;
        let q = normal(batch * seq_q * heads_q * d, seed);
        let k = normal(batch * seq_k * heads_kv * d, seed + 1);
        let v = normal(batch * seq_k * heads_kv * d, seed + 2);
        let d_o = normal(q.len(), seed + 3);
        let grads = attention_backward(problem, &q, &k, &v, &d_o);
        let h = 1e-5;
        let mut checked = 0;
        for (name, which, analytic) in [("dq", 0, &grads.dq), ("dk", 1, &grads.dk), ("dv", 2, &grads.dv)] {
            for x in 0..analytic.len() {
                let nudged = |delta: f64| {
                    let (mut q, mut k, mut v) = (q.clone(), k.clone(), v.clone());
                    [&mut q, &mut k, &mut v][which][x] += delta;
                    loss(problem, &q, &k, &v, &d_o)
                };
                let numeric = (nudged(h) - nudged(-h)) / (2.0 * h);
                assert!(
                    (numeric - analytic[x]).abs() <= 1e-7 * (1.0 + numeric.abs()),
                    "{problem:?}: {name}[{x}] = {} but the central difference gives {numeric}",
                    analytic[x]
                );
                checked += 1;
            }
        }
        assert_eq!(checked, q.len() + k.len() + v.len());
    }

    #[test]
    fn gradients_match_central_differences() {
        for causal in [false, true] {
            // Square, fewer queries than keys, more queries than keys (causal: rows without keys), GQA, MQA.
            for (batch, seq_q, seq_k, heads_q, heads_kv, d) in
                [(1, 3, 3, 1, 1, 4), (1, 2, 5, 2, 2, 3), (2, 5, 3, 2, 1, 3), (1, 4, 4, 4, 2, 2), (1, 3, 2, 3, 1, 2)]
            {
                let problem = AttnProblem {
                    shape: AttnShape::new(batch, seq_q, seq_k, heads_q, heads_kv, d),
                    causal,
                    scale: 0.6,
                };
                check_against_differences(&problem, 40 + seq_q as u64 * 7 + causal as u64);
            }
        }
    }

    #[test]
    fn the_exact_o_gives_the_same_gradients() {
        let problem = AttnProblem { shape: AttnShape::new(2, 5, 7, 4, 2, 3), causal: true, scale: 0.45 };
        let (q, k, v, d_o) = (normal(120, 80), normal(84, 81), normal(84, 82), normal(120, 83));
        let o = attention(&problem, &q, &k, &v).o;
        let (exact, given) = (
            attention_backward(&problem, &q, &k, &v, &d_o),
            attention_backward_given_o(&problem, &q, &k, &v, &d_o, &o),
        );
        for (a, b) in
            exact.dq.iter().chain(&exact.dk).chain(&exact.dv).zip(given.dq.iter().chain(&given.dk).chain(&given.dv))
        {
            assert!((a - b).abs() <= 1e-12 * (1.0 + a.abs()), "{a} {b}");
        }
        // dV does not depend on D; dQ and dK do.
        let shifted: Vec<f64> = o.iter().map(|x| x + 0.25).collect();
        let moved = attention_backward_given_o(&problem, &q, &k, &v, &d_o, &shifted);
        assert_eq!(moved.dv, given.dv);
        assert_ne!(moved.dq, given.dq);
    }

    #[test]
    fn one_key_passes_everything_to_v() {
        // A single visible key has P = 1: dV = Σ_i dO_i, and dS = 1 · (dP − dP) = 0, so dQ = dK = 0.
        let problem = AttnProblem { shape: AttnShape::new(1, 3, 1, 1, 1, 4), causal: false, scale: 0.5 };
        let (q, k, v, d_o) = (normal(12, 50), normal(4, 51), normal(4, 52), normal(12, 53));
        let grads = attention_backward(&problem, &q, &k, &v, &d_o);
        assert!(grads.dq.iter().chain(&grads.dk).all(|&x| x.abs() < 1e-15), "{grads:?}");
        for e in 0..4 {
            let want: f64 = (0..3).map(|i| d_o[i * 4 + e]).sum();
            assert!((grads.dv[e] - want).abs() < 1e-12, "{grads:?}");
        }
    }

    #[test]
    fn rows_without_keys_contribute_nothing() {
        // seq_q 5 > seq_k 3, causal: rows 0 and 1 see no key. Changing their q or dO changes no gradient but
        // their own dQ, which is zero.
        let problem = AttnProblem { shape: AttnShape::new(1, 5, 3, 1, 1, 4), causal: true, scale: 0.5 };
        let (q, k, v, d_o) = (normal(20, 60), normal(12, 61), normal(12, 62), normal(20, 63));
        let grads = attention_backward(&problem, &q, &k, &v, &d_o);
        assert!(grads.dq[..8].iter().all(|&x| x == 0.0));
        let (mut q2, mut d_o2) = (q.clone(), d_o.clone());
        for x in 0..8 {
            q2[x] += 1.0;
            d_o2[x] -= 2.0;
        }
        assert_eq!(attention_backward(&problem, &q2, &k, &v, &d_o2), grads);
    }

    #[test]
    fn grouped_heads_sum_the_gradients_of_repeated_heads() {
        // GQA equals MHA with each kv head repeated, its dK and dV summed over the repeats.
        let (batch, seq_q, seq_k, heads_q, heads_kv, d) = (2, 4, 5, 6, 2, 3);
        let group = heads_q / heads_kv;
        let (q, k, v) = (
            normal(batch * seq_q * heads_q * d, 70),
            normal(batch * seq_k * heads_kv * d, 71),
            normal(batch * seq_k * heads_kv * d, 72),
        );
        let d_o = normal(q.len(), 73);
        let repeat = |x: &[f64]| -> Vec<f64> {
            let mut out = Vec::new();
            for b in 0..batch {
                for j in 0..seq_k {
                    for h in 0..heads_q {
                        out.extend_from_slice(&x[((b * seq_k + j) * heads_kv + h / group) * d..][..d]);
                    }
                }
            }
            out
        };
        for causal in [false, true] {
            let grouped =
                AttnProblem { shape: AttnShape::new(batch, seq_q, seq_k, heads_q, heads_kv, d), causal, scale: 0.4 };
            let repeated = AttnProblem { shape: AttnShape::new(batch, seq_q, seq_k, heads_q, heads_q, d), ..grouped };
            let g = attention_backward(&grouped, &q, &k, &v, &d_o);
            let r = attention_backward(&repeated, &q, &repeat(&k), &repeat(&v), &d_o);
            assert_eq!(g.dq, r.dq);
            for b in 0..batch {
                for j in 0..seq_k {
                    for kv in 0..heads_kv {
                        for e in 0..d {
                            let summed = |x: &[f64]| -> f64 {
                                (0..group).map(|m| x[((b * seq_k + j) * heads_q + kv * group + m) * d + e]).sum()
                            };
                            let at = ((b * seq_k + j) * heads_kv + kv) * d + e;
                            assert!(
                                (g.dk[at] - summed(&r.dk)).abs() < 1e-12 && (g.dv[at] - summed(&r.dv)).abs() < 1e-12
                            );
                        }
                    }
                }
            }
        }
    }
}
