//! The GEMM sweep of `oxtile bench gemm --sweep`: the shapes users run, by class ([`GEMM_SWEEP`], the file
//! gemm_sweep.txt beside this one, which scripts/gemm-sweep.py writes: projections of open models at token counts
//! from 1 to 16384, square sizes that are not powers of two, ragged sizes), and its summaries per class and per kernel.

use std::collections::HashSet;

use super::report::{Row, fastest_peer_rates, suite_summary};
use super::suite::{GemmShape, ShapeError};

/// The sweep as the project ships it: `CLASS LABEL MxNxK` per line, `#` comments.
pub const GEMM_SWEEP: &str = include_str!("gemm_sweep.txt");

/// One shape of a sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepShape {
    /// What kind of problem it is (e.g. `model-decode`, `square`): the summary's groups.
    pub class: String,
    /// Where it comes from (e.g. `llama3-8b.gate_up`).
    pub label: String,
    pub shape: GemmShape,
}

/// A sweep file that could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SweepError {
    #[error("line {line}: expected `CLASS LABEL MxNxK`, found `{text}`")]
    Format { line: usize, text: String },
    #[error("line {line}: {source}")]
    Shape { line: usize, source: ShapeError },
    #[error("line {line}: {shape} is listed twice")]
    Duplicate { line: usize, shape: GemmShape },
    #[error("no shapes in the sweep")]
    Empty,
}

/// Every shape of a sweep file, in order.
pub fn parse_sweep(text: &str) -> Result<Vec<SweepShape>, SweepError> {
    let mut shapes = Vec::new();
    let mut seen = HashSet::new();
    for (index, raw) in text.lines().enumerate() {
        let (line, content) = (index + 1, raw.split('#').next().unwrap_or("").trim());
        if content.is_empty() {
            continue;
        }
        let fields: Vec<&str> = content.split_whitespace().collect();
        let [class, label, shape] = fields[..] else {
            return Err(SweepError::Format { line, text: raw.to_string() });
        };
        let shape: GemmShape = shape.parse().map_err(|source| SweepError::Shape { line, source })?;
        if !seen.insert(shape) {
            return Err(SweepError::Duplicate { line, shape });
        }
        shapes.push(SweepShape { class: class.to_string(), label: label.to_string(), shape });
    }
    if shapes.is_empty() { Err(SweepError::Empty) } else { Ok(shapes) }
}

/// The shapes of the given classes (all when `classes` is empty), then every `every`-th of those (1: all), so a
/// short run still spans each class.
pub fn select(shapes: &[SweepShape], classes: &[String], every: usize) -> Vec<SweepShape> {
    let every = every.max(1);
    let mut picked = Vec::new();
    for class in class_order(shapes).into_iter().filter(|c| classes.is_empty() || classes.iter().any(|want| want == c))
    {
        picked.extend(shapes.iter().filter(|s| s.class == class).step_by(every).cloned());
    }
    picked
}

/// The classes of `shapes`, in order of first appearance.
fn class_order(shapes: &[SweepShape]) -> Vec<&str> {
    let mut order: Vec<&str> = Vec::new();
    for shape in shapes {
        if !order.contains(&shape.class.as_str()) {
            order.push(&shape.class);
        }
    }
    order
}

/// The suite summary (geomean and lowest ratio to the baseline and to the fastest peer) per class of the sweep.
pub fn class_summary(rows: &[Row], shapes: &[SweepShape], baseline: &str) -> String {
    let mut out = String::new();
    for class in class_order(shapes) {
        let names: HashSet<String> = shapes.iter().filter(|s| s.class == class).map(|s| s.shape.to_string()).collect();
        let in_class: Vec<Row> = rows.iter().filter(|r| names.contains(&r.shape)).cloned().collect();
        for line in suite_summary(&in_class, baseline).lines() {
            out.push_str(&format!("# [{class}] {}\n", line.trim_start_matches("# ")));
        }
    }
    out
}

/// What each kernel [`crate::kernels::Variant::Auto`] ran costs the geomean of Auto's rows against the fastest
/// in-process peer: per kernel (its name without the layout, so a tile's rows in every layout count together), its
/// rows, their geomean and lowest ratio, and the factor its rows put on the geomean of all of Auto's rows (their log
/// ratios summed over the count of all rows, exponentiated: below 1 where they lose). Costliest first: where a fix
/// moves the sweep most.
pub fn kernel_summary(rows: &[Row]) -> String {
    let fastest_peer = fastest_peer_rates(rows);
    // Kernel → (shape and layout, ratio) of each of Auto's rows that has a peer.
    let mut kernels: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    for row in rows.iter().filter(|r| r.counts_in_summaries() && r.implementation == "oxtile") {
        let (Some(config), Some(peer)) = (&row.config, fastest_peer.get(&row.problem_key())) else { continue };
        let layout = row.layout.as_deref().unwrap_or_default();
        let kernel = config.replacen(&format!("_{layout}_"), "_", 1);
        let standing = (format!("{} {layout}", row.shape), row.rate().expect("filtered") / peer);
        match kernels.iter_mut().find(|(k, _)| *k == kernel) {
            Some((_, standings)) => standings.push(standing),
            None => kernels.push((kernel, vec![standing])),
        }
    }
    let total: usize = kernels.iter().map(|(_, s)| s.len()).sum();
    let log_sum = |standings: &[(String, f64)]| standings.iter().map(|(_, r)| r.ln()).sum::<f64>();
    kernels.sort_by(|a, b| log_sum(&a.1).total_cmp(&log_sum(&b.1)));
    let mut out = String::new();
    for (kernel, standings) in &kernels {
        let sum = log_sum(standings);
        let (lowest_at, lowest) = standings.iter().min_by(|a, b| a.1.total_cmp(&b.1)).expect("a group has a row");
        out.push_str(&format!(
            "# [by kernel] {kernel}: {} row{}, geomean {:.3} vs the fastest peer, lowest {lowest:.3} ({lowest_at}); \
             the geomean of all {total} ×{:.4} for them\n",
            standings.len(),
            if standings.len() == 1 { "" } else { "s" },
            (sum / standings.len() as f64).exp(),
            (sum / total as f64).exp(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_sweep_covers_every_class() {
        let sweep = parse_sweep(GEMM_SWEEP).unwrap();
        assert!(sweep.len() >= 500, "{} shapes", sweep.len());
        for class in ["model-decode", "model-mid", "model-large", "square", "ragged"] {
            assert!(sweep.iter().filter(|s| s.class == class).count() >= 10, "class {class}");
        }
        for s in &sweep {
            let GemmShape { m, n, k } = s.shape;
            // oxtile's kernels need 16-byte rows for TMA in every layout: N and K multiples of 8 (M is free).
            assert!(n % 8 == 0 && k % 8 == 0, "{}: {}", s.label, s.shape);
            match s.class.as_str() {
                "model-decode" => assert!(m <= 64, "{}", s.shape),
                "model-mid" => assert!(m > 64 && m <= 1024, "{}", s.shape),
                "model-large" => assert!(m > 1024, "{}", s.shape),
                "square" => assert!(m == n && n == k, "{}", s.shape),
                "ragged" => assert!([m, n, k].iter().any(|d| d % 64 != 0), "{}", s.shape),
                other => panic!("unknown class {other}"),
            }
        }
        // Decode sizes, odd token counts and the largest problems are all there.
        let has = |m, n, k| sweep.iter().any(|s| s.shape == GemmShape::new(m, n, k));
        assert!(has(1, 28672, 4096) && has(77, 4096, 14336) && has(16384, 57344, 8192) && has(3000, 3000, 3000));
    }

    #[test]
    fn auto_has_a_kernel_for_every_shape_of_the_sweep() {
        // The heuristic was written for the suite; every shape users run must still resolve to a kernel that
        // exists, in every type pair and layout, and so must its fallback without stream-K (H100 and H200 SM counts).
        use crate::kernels::Variant;
        use crate::types::GemmLayout;
        let sweep = parse_sweep(GEMM_SWEEP).unwrap();
        for sm_count in [114, 132] {
            for (input, output) in [("bf16", "bf16"), ("bf16", "f32"), ("f16", "f16"), ("f16", "f32")] {
                for layout in GemmLayout::ALL {
                    for s in &sweep {
                        let variant = Variant::Auto.resolve_for(s.shape, sm_count, (input, output), layout);
                        let plain = variant.data_parallel();
                        let what = format!("{} {} {input} → {output} {layout} on {sm_count} SMs", s.label, s.shape);
                        assert!(variant.available(input, output, layout), "{variant:?} for {what}");
                        assert!(plain.available(input, output, layout), "{plain:?} for {what}");
                    }
                }
            }
        }
    }

    #[test]
    fn parse_errors_name_the_line() {
        assert_eq!(parse_sweep("# nothing\n\n"), Err(SweepError::Empty));
        assert!(matches!(parse_sweep("a b 1x2x3\nsquare\n"), Err(SweepError::Format { line: 2, .. })));
        assert!(matches!(parse_sweep("a b 1x0x3"), Err(SweepError::Shape { line: 1, .. })));
        let twice = parse_sweep("a b 8x8x8 # first\nc d 8x8x8");
        assert_eq!(twice, Err(SweepError::Duplicate { line: 2, shape: GemmShape::new(8, 8, 8) }));
        let one = parse_sweep("  square  sq  64x64x64   # comment").unwrap();
        assert_eq!(
            one,
            vec![SweepShape { class: "square".into(), label: "sq".into(), shape: GemmShape::new(64, 64, 64) }]
        );
    }

    #[test]
    fn selection_keeps_each_class_and_samples_within_it() {
        let sweep = parse_sweep("a x 8x8x8\na x 16x8x8\na x 24x8x8\nb y 8x16x8\nb y 8x24x8\n").unwrap();
        let shapes =
            |picked: Vec<SweepShape>| picked.into_iter().map(|s| s.shape.m * 100 + s.shape.n).collect::<Vec<_>>();
        assert_eq!(shapes(select(&sweep, &[], 1)), [808, 1608, 2408, 816, 824]);
        assert_eq!(shapes(select(&sweep, &[], 2)), [808, 2408, 816]);
        assert_eq!(shapes(select(&sweep, &["b".to_string()], 1)), [816, 824]);
        assert_eq!(shapes(select(&sweep, &[], 0)), shapes(select(&sweep, &[], 1)));
    }

    #[test]
    fn the_kernel_summary_puts_the_costliest_kernel_first() {
        let row = |shape: &str, layout: &str, implementation: &str, kind: &str, tflops: f64, config: Option<&str>| {
            let mut row = Row::new("gemm", shape, implementation);
            row.kind = Some(kind.into());
            row.origin = Some("in-process".into());
            row.dtype = Some("bf16".into());
            row.layout = Some(layout.into());
            row.tflops = Some(tflops);
            row.config = config.map(Into::into);
            row
        };
        let rows = vec![
            // 8x8x8: the wide tile at half the fastest peer's rate in tn, at parity in tt.
            row("8x8x8", "tn", "cublasLt", "peer", 100.0, None),
            row("8x8x8", "tn", "cublasGemmEx", "peer", 200.0, None),
            row("8x8x8", "tn", "oxtile", "oxtile", 100.0, Some("gemm_bf16_tn_128x256_sm90")),
            row("8x8x8", "tt", "cublasLt", "peer", 100.0, None),
            row("8x8x8", "tt", "oxtile", "oxtile", 100.0, Some("gemm_bf16_tt_128x256_sm90")),
            // 16x8x8: the skinny kernel 10% ahead; a forced variant's row and a row without a peer count nowhere.
            row("16x8x8", "tn", "cublasLt", "peer", 100.0, None),
            row("16x8x8", "tn", "oxtile", "oxtile", 110.0, Some("gemm_bf16_tn_skinny_sm90")),
            row("16x8x8", "tn", "oxtile-wide", "oxtile", 10.0, Some("gemm_bf16_tn_128x256_sm90")),
            row("24x8x8", "tn", "oxtile", "oxtile", 10.0, Some("gemm_bf16_tn_64x128_sm90")),
        ];
        let summary = kernel_summary(&rows);
        let lines: Vec<&str> = summary.lines().collect();
        assert_eq!(lines.len(), 2, "{summary}");
        // Two rows at 0.5 and 1.0: geomean √0.5; over all three rows ×0.5^(1/3).
        assert!(lines[0].starts_with("# [by kernel] gemm_bf16_128x256_sm90: 2 rows, geomean 0.707"), "{summary}");
        assert!(lines[0].contains("lowest 0.500 (8x8x8 tn)") && lines[0].ends_with("×0.7937 for them"), "{summary}");
        assert!(lines[1].starts_with("# [by kernel] gemm_bf16_skinny_sm90: 1 row, geomean 1.100"), "{summary}");
    }
}
