//! Result rows: the table, JSON and CSV files, and the merge of rows torch_reference.py wrote.
//!
//! A row's JSON is a superset of torch_reference.py's (`op`, `shape`, `impl`, `ms`, `tflops`, or `error`), so
//! `--peers` reads files of either program.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::clocks::{ClockMeter, ClockSamples};
use super::device::DATASHEET_DENSE_BF16_TFLOPS;
use super::stats::Stats;
use super::suite::{AttnShape, GemmShape};
use crate::error::{Error, Result};

/// One implementation on one problem.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Row {
    /// `gemm`, `attn` or `mem`.
    pub op: String,
    /// `MxNxK`, `B,H,S,D,full|causal`, or a buffer size such as `256MiB`.
    pub shape: String,
    #[serde(rename = "impl")]
    pub implementation: String,
    /// `oxtile` for our kernels, `peer` for everything else.
    pub kind: Option<String>,
    /// `in-process`, or `peers:FILE` for merged rows.
    pub origin: Option<String>,
    pub dtype: Option<String>,
    pub layout: Option<String>,
    /// Median time of one launch.
    pub ms: Option<f64>,
    pub tflops: Option<f64>,
    /// Bytes read plus bytes written per second, 1e9.
    pub gbps: Option<f64>,
    /// TFLOP/s as a percentage of [`DATASHEET_DENSE_BF16_TFLOPS`].
    pub pct_peak: Option<f64>,
    /// This row's TFLOP/s (or GB/s) over the baseline's for the same problem.
    pub ratio: Option<f64>,
    pub p10_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub min_ms: Option<f64>,
    pub runs: Option<usize>,
    /// Input sets rotated through.
    pub sets: Option<usize>,
    /// FLOPs (gemm, attn) or bytes moved (mem) per launch: the plot's x axis.
    pub work: Option<f64>,
    /// Output against the reference output; see `bench::gemm`.
    pub max_rel_err: Option<f64>,
    pub norm_rel_err: Option<f64>,
    /// Attention: the fraction of (warp, key tile after the first) steps in which a warp rescaled its output.
    pub rescale: Option<f64>,
    /// `ref`, `ok`, `FAIL...`, or nothing when not checked.
    pub check: Option<String>,
    /// What ran: our kernel, cuBLASLt's algorithm (see `GemmContender::describe`).
    pub config: Option<String>,
    /// Median SM clock while the timed launches ran, MHz (`bench::clocks`).
    pub sm_mhz: Option<f64>,
    pub error: Option<String>,
}

impl Row {
    pub fn new(op: &str, shape: impl Into<String>, implementation: &str) -> Row {
        Row { op: op.into(), shape: shape.into(), implementation: implementation.into(), ..Row::default() }
    }

    pub fn set_stats(&mut self, stats: &Stats) {
        self.ms = Some(stats.median_ms);
        self.p10_ms = Some(stats.p10_ms);
        self.p90_ms = Some(stats.p90_ms);
        self.min_ms = Some(stats.min_ms);
        self.runs = Some(stats.runs);
    }

    /// The median of the clock samples taken while this row's launches ran.
    pub fn set_clock(&mut self, clock: &ClockSamples) {
        self.sm_mhz = clock.median_sm_mhz();
    }

    /// TFLOP/s, or GB/s for memory-bound rows.
    pub fn rate(&self) -> Option<f64> {
        self.tflops.or(self.gbps)
    }

    /// (p90 − p10) / median.
    pub fn spread(&self) -> Option<f64> {
        let (p10, p90, ms) = (self.p10_ms?, self.p90_ms?, self.ms?);
        (ms > 0.0).then(|| (p90 - p10) / ms)
    }

    pub fn failed_check(&self) -> bool {
        self.check.as_deref().is_some_and(|c| c.starts_with("FAIL"))
    }

    /// Rows that are compared with each other: same op, shape, dtype and layout; memory-bound (`mem`) rows of
    /// one buffer size are compared across element types, since bandwidth is what they measure.
    /// Whether the summaries weigh this row: it ran in this process, without an error, and has a rate.
    pub(super) fn counts_in_summaries(&self) -> bool {
        self.error.is_none() && self.origin.as_deref() == Some("in-process") && self.rate().is_some()
    }

    /// Whether the row is one of our kernels (not a peer).
    pub(super) fn is_ours(&self) -> bool {
        self.kind.as_deref() == Some("oxtile")
    }

    pub(super) fn problem_key(&self) -> (String, String, String, String) {
        let field = |f: &Option<String>| f.clone().unwrap_or_default();
        let dtype = if self.op == "mem" { String::new() } else { field(&self.dtype) };
        (self.op.clone(), self.shape.clone(), dtype, field(&self.layout))
    }
}

/// One contender's turn in a round, for the turn log (`oxtile bench --turn-log`): what each turn read, so the
/// drift within a contender's runs (and what ran before each turn) can be seen, not just the median over them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TurnRecord {
    pub shape: String,
    #[serde(rename = "impl")]
    pub implementation: String,
    pub layout: Option<String>,
    pub round: usize,
    pub runs: usize,
    pub median_ms: Option<f64>,
    pub tflops: Option<f64>,
    pub sm_mhz: Option<f64>,
}

impl TurnRecord {
    /// The record of a turn of `row`'s contender that took `times` (ms per launch), with the clock samples taken.
    pub fn new(row: &Row, round: usize, times: &[f64], clock: Option<&ClockSamples>) -> TurnRecord {
        let median_ms = Stats::from_samples(times).map(|s| s.median_ms);
        TurnRecord {
            shape: row.shape.clone(),
            implementation: row.implementation.clone(),
            layout: row.layout.clone(),
            round,
            runs: times.len(),
            median_ms,
            tflops: row.work.zip(median_ms).map(|(work, ms)| work / (ms * 1e-3) / 1e12),
            sm_mhz: clock.and_then(ClockSamples::median_sm_mhz),
        }
    }
}

/// Writes turn records to `path` as CSV, with a header.
pub fn write_turns_csv(path: &Path, turns: &[TurnRecord]) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| file_error(path, e))?;
    write_turns_csv_to(file, turns).map_err(|e| file_error(path, e))
}

/// [`write_turns_csv`] to a writer.
pub fn write_turns_csv_to(out: impl std::io::Write, turns: &[TurnRecord]) -> std::result::Result<(), csv::Error> {
    let mut writer = csv::Writer::from_writer(out);
    for turn in turns {
        writer.serialize(turn)?;
    }
    writer.flush()?;
    Ok(())
}

/// What a benchmark tells its caller as it goes, and the clock meter it reads (if any). A closure taking the step
/// text is an observer without a meter that ignores finished turns.
pub trait BenchObserver {
    /// A short description of the step about to run (for a progress bar).
    fn step(&mut self, text: &str);
    /// A timed turn, with the row it belongs to.
    fn turn_done(&mut self, _turn: &TurnRecord) {}
    /// The meter each turn's SM clock is read from.
    fn meter(&self) -> Option<ClockMeter> {
        None
    }
}

impl<F: FnMut(&str)> BenchObserver for F {
    fn step(&mut self, text: &str) {
        self(text)
    }
}

/// Sets every row's `ratio` to its rate over that of the row named `baseline` for the same problem; rows with
/// no such baseline get none.
pub fn fill_ratios(rows: &mut [Row], baseline: &str) {
    let base: HashMap<_, f64> = rows
        .iter()
        .filter(|r| r.implementation == baseline && r.error.is_none())
        .filter_map(|r| Some((r.problem_key(), r.rate()?)))
        .collect();
    for row in rows.iter_mut() {
        row.ratio = match (row.rate(), base.get(&row.problem_key())) {
            (Some(rate), Some(&base)) if base > 0.0 => Some(rate / base),
            _ => None,
        };
    }
}

/// The fastest peer's rate per problem ([`Row::problem_key`]), over the peers' rows that count in the summaries.
pub(super) fn fastest_peer_rates(rows: &[Row]) -> HashMap<(String, String, String, String), f64> {
    let mut fastest: HashMap<_, f64> = HashMap::new();
    for row in rows.iter().filter(|r| r.counts_in_summaries() && !r.is_ours()) {
        let rate = row.rate().expect("filtered");
        let best = fastest.entry(row.problem_key()).or_insert(rate);
        *best = best.max(rate);
    }
    fastest
}

/// One line per oxtile implementation and (op, dtype, layout): the geometric mean and the lowest of its ratios over
/// the problems it ran, to `baseline` and to the fastest in-process peer of each problem (the best cuBLAS measured,
/// whichever configuration that was). Merged rows (another program's timing) take no part. Empty without oxtile
/// rows.
pub fn suite_summary(rows: &[Row], baseline: &str) -> String {
    /// One oxtile row: its shape, its ratio to the baseline and to the fastest peer.
    struct Standing {
        shape: String,
        to_baseline: Option<f64>,
        to_fastest_peer: Option<f64>,
    }
    let fastest_peer = fastest_peer_rates(rows);
    let base: HashMap<_, f64> = rows
        .iter()
        .filter(|r| r.counts_in_summaries() && !r.is_ours() && r.implementation == baseline)
        .map(|r| (r.problem_key(), r.rate().expect("filtered")))
        .collect();
    // "op dtype layout: implementation", in order of first appearance, with its rows' standings.
    let mut groups: Vec<(String, Vec<Standing>)> = Vec::new();
    for row in rows.iter().filter(|r| r.counts_in_summaries() && r.is_ours()) {
        let key = row.problem_key();
        let rate = row.rate().expect("filtered");
        let group = format!("{} {} {}: {}", key.0, key.2, key.3, row.implementation);
        let standing = Standing {
            shape: row.shape.clone(),
            to_baseline: base.get(&key).map(|b| rate / b),
            to_fastest_peer: fastest_peer.get(&key).map(|b| rate / b),
        };
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, standings)) => standings.push(standing),
            None => groups.push((group, vec![standing])),
        }
    }
    let describe = |standings: &[Standing], ratio: fn(&Standing) -> Option<f64>| -> Option<String> {
        let ratios: Vec<(&str, f64)> = standings.iter().filter_map(|s| Some((s.shape.as_str(), ratio(s)?))).collect();
        let geomean = (ratios.iter().map(|(_, r)| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let (shape, lowest) = ratios.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
        Some(format!("geomean {geomean:.3}, lowest {lowest:.3} ({shape})"))
    };
    let mut out = String::new();
    for (group, standings) in &groups {
        out.push_str(&format!("# {group} over {} problems", standings.len()));
        if let Some(text) = describe(standings, |s| s.to_baseline) {
            out.push_str(&format!("; vs {baseline}: {text}"));
        }
        if let Some(text) = describe(standings, |s| s.to_fastest_peer) {
            out.push_str(&format!("; vs the fastest peer: {text}"));
        }
        out.push('\n');
    }
    out
}

/// Stable-sorts rows so those of one problem are together, problems in order of first appearance.
pub fn group_by_problem(rows: &mut [Row]) {
    let mut order: HashMap<(String, String, String, String), usize> = HashMap::new();
    for row in rows.iter() {
        let next = order.len();
        order.entry(row.problem_key()).or_insert(next);
    }
    rows.sort_by_key(|row| order[&row.problem_key()]);
}

/// Reads a JSON array of rows written by torch_reference.py `--json` (or by `oxtile bench --json`) and makes
/// them fit beside ours: origin `peers:FILE`, kind `peer` where not given; torch_reference.py's GEMMs are bf16
/// `tt` (A M×K and B K×N, both row-major) and its attention bf16; `work` and `pct_peak` from the shape and
/// TFLOP/s. A row the shape of which cannot be parsed keeps what it had.
pub fn read_peer_rows(path: &Path) -> Result<Vec<Row>> {
    let text = std::fs::read_to_string(path).map_err(|e| file_error(path, e))?;
    let mut rows = parse_peer_rows(&text).map_err(|e| file_error(path, e))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for row in &mut rows {
        row.origin.get_or_insert_with(|| format!("peers:{name}"));
    }
    Ok(rows)
}

/// [`read_peer_rows`] on text.
pub fn parse_peer_rows(json: &str) -> std::result::Result<Vec<Row>, serde_json::Error> {
    let mut rows: Vec<Row> = serde_json::from_str(json)?;
    for row in &mut rows {
        row.kind.get_or_insert_with(|| "peer".into());
        match row.op.as_str() {
            "gemm" => {
                row.dtype.get_or_insert_with(|| "bf16".into());
                row.layout.get_or_insert_with(|| "tt".into());
                if row.work.is_none() {
                    row.work = row.shape.parse::<GemmShape>().ok().map(|s| s.flops());
                }
            }
            "attn" => {
                row.dtype.get_or_insert_with(|| "bf16".into());
                if row.work.is_none() {
                    row.work = row.shape.parse::<AttnShape>().ok().map(|s| s.flops());
                }
            }
            // scripts/torch_attn.py --backward's rows: the backward, 2.5 × the forward's FLOPs.
            "attn-bwd" => {
                row.dtype.get_or_insert_with(|| "bf16".into());
                if row.work.is_none() {
                    row.work = row.shape.parse::<AttnShape>().ok().map(|s| 2.5 * s.flops());
                }
            }
            _ => {}
        }
        if row.pct_peak.is_none() && matches!(row.op.as_str(), "gemm" | "attn" | "attn-bwd") {
            row.pct_peak = row.tflops.map(|t| 100.0 * t / DATASHEET_DENSE_BF16_TFLOPS);
        }
    }
    Ok(rows)
}

fn file_error(path: &Path, error: impl std::fmt::Display) -> Error {
    Error::Io(std::io::Error::other(format!("{}: {error}", path.display())))
}

pub fn write_json(path: &Path, rows: &[Row]) -> Result<()> {
    let text = serde_json::to_string_pretty(rows).map_err(|e| file_error(path, e))?;
    std::fs::write(path, text + "\n").map_err(|e| file_error(path, e))
}

pub fn read_json(path: &Path) -> Result<Vec<Row>> {
    let text = std::fs::read_to_string(path).map_err(|e| file_error(path, e))?;
    serde_json::from_str(&text).map_err(|e| file_error(path, e))
}

pub fn write_csv(path: &Path, rows: &[Row]) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| file_error(path, e))?;
    write_csv_to(file, rows).map_err(|e| file_error(path, e))
}

/// CSV with a header row; a missing value is an empty field.
pub fn write_csv_to(mut out: impl std::io::Write, rows: &[Row]) -> std::result::Result<(), csv::Error> {
    if rows.is_empty() {
        // serde writes the header with the first record: take it from a throwaway one.
        let mut scratch = csv::Writer::from_writer(Vec::new());
        scratch.serialize(Row::default())?;
        let bytes = scratch.into_inner().map_err(|e| csv::Error::from(e.into_error()))?;
        let header = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
        out.write_all(header)?;
        out.write_all(b"\n")?;
        return Ok(());
    }
    let mut writer = csv::Writer::from_writer(out);
    for row in rows {
        writer.serialize(row)?;
    }
    writer.flush()?;
    Ok(())
}

pub fn read_csv(path: &Path) -> Result<Vec<Row>> {
    let file = std::fs::File::open(path).map_err(|e| file_error(path, e))?;
    read_csv_from(file).map_err(|e| file_error(path, e))
}

pub fn read_csv_from(input: impl std::io::Read) -> std::result::Result<Vec<Row>, csv::Error> {
    csv::Reader::from_reader(input).deserialize().collect()
}

fn cell(value: Option<f64>, format: impl Fn(f64) -> String) -> String {
    value.map(format).unwrap_or_else(|| "-".into())
}

/// The rows as an aligned text table. `baseline` names the implementation the ratio column is relative to.
pub fn render_table(rows: &[Row], baseline: &str) -> String {
    let has_tflops = rows.iter().any(|r| r.tflops.is_some());
    let has_gbps = rows.iter().any(|r| r.gbps.is_some());
    let has_check = rows.iter().any(|r| r.check.is_some() || r.max_rel_err.is_some());
    let has_rescale = rows.iter().any(|r| r.rescale.is_some());
    let has_clock = rows.iter().any(|r| r.sm_mhz.is_some());
    let mut header = vec!["op", "shape", "impl", "dtype", "layout", "ms", "±%"];
    if has_tflops {
        header.extend(["TFLOP/s", "% peak"]);
    }
    if has_gbps {
        header.push("GB/s");
    }
    let ratio_header = format!("vs {baseline}");
    header.push(&ratio_header);
    if has_rescale {
        header.push("rescale");
    }
    if has_clock {
        header.push("MHz");
    }
    if has_check {
        header.extend(["max rel err", "check"]);
    }
    header.push("note");
    // Right-align everything numeric.
    let left = |column: &str| matches!(column, "op" | "shape" | "impl" | "dtype" | "layout" | "check" | "note");

    let mut lines: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for row in rows {
        let mut line = vec![
            row.op.clone(),
            row.shape.clone(),
            row.implementation.clone(),
            row.dtype.clone().unwrap_or_else(|| "-".into()),
            row.layout.clone().unwrap_or_else(|| "-".into()),
            cell(row.ms, |v| format!("{v:.4}")),
            cell(row.spread(), |v| format!("{:.1}", 100.0 * v)),
        ];
        if has_tflops {
            line.push(cell(row.tflops, |v| format!("{v:.1}")));
            line.push(cell(row.pct_peak, |v| format!("{v:.1}")));
        }
        if has_gbps {
            line.push(cell(row.gbps, |v| format!("{v:.0}")));
        }
        line.push(cell(row.ratio, |v| format!("{v:.3}")));
        if has_rescale {
            line.push(cell(row.rescale, |v| format!("{v:.3}")));
        }
        if has_clock {
            line.push(cell(row.sm_mhz, |v| format!("{v:.0}")));
        }
        if has_check {
            line.push(cell(row.max_rel_err, |v| format!("{v:.2e}")));
            line.push(row.check.clone().unwrap_or_else(|| "-".into()));
        }
        let mut note = Vec::new();
        if let Some(error) = &row.error {
            note.push(format!("error: {error}"));
        }
        if let Some(origin) = row.origin.as_deref().filter(|o| *o != "in-process") {
            note.push(origin.to_string());
        }
        if let Some(config) = &row.config {
            note.push(config.clone());
        }
        line.push(note.join("; "));
        lines.push(line);
    }
    let widths: Vec<usize> =
        (0..header.len()).map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for line in &lines {
        let mut text = String::new();
        for (c, value) in line.iter().enumerate() {
            if c > 0 {
                text.push_str("  ");
            }
            let pad = widths[c] - value.chars().count();
            if left(header[c]) {
                text.push_str(value);
                text.push_str(&" ".repeat(pad));
            } else {
                text.push_str(&" ".repeat(pad));
                text.push_str(value);
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What torch_reference.py `--json` writes (json.dump(rows, f, indent=1)), an error row included.
    pub(crate) const TORCH_SAMPLE: &str = r#"[
 {
  "op": "gemm",
  "shape": "4096x4096x4096",
  "impl": "cublas(torch)",
  "ms": 0.198,
  "tflops": 694.1
 },
 {
  "op": "attn",
  "shape": "4,16,8192,128,causal",
  "impl": "cudnn",
  "ms": 1.5,
  "tflops": 366.5
 },
 {
  "op": "attn",
  "shape": "4,16,8192,128,causal",
  "impl": "flash2",
  "error": "No available kernel. Aborting execution."
 }
]"#;

    fn ours(implementation: &str, tflops: f64) -> Row {
        let mut row = Row::new("gemm", "4096x4096x4096", implementation);
        row.kind = Some("peer".into());
        row.origin = Some("in-process".into());
        row.dtype = Some("bf16".into());
        row.layout = Some("tt".into());
        row.set_stats(&Stats::from_samples(&[0.19, 0.2, 0.21]).unwrap());
        row.tflops = Some(tflops);
        row.pct_peak = Some(100.0 * tflops / DATASHEET_DENSE_BF16_TFLOPS);
        row.work = Some(GemmShape::new(4096, 4096, 4096).flops());
        row.sets = Some(4);
        row
    }

    #[test]
    fn a_turn_record_has_the_rate_and_clock_of_its_turn() {
        let row = ours("oxtile", 700.0);
        let clock = ClockSamples { sm_mhz: vec![1500, 1600, 1700] };
        let turn = TurnRecord::new(&row, 2, &[0.2, 0.1, 0.3, 0.2], Some(&clock));
        assert_eq!((turn.round, turn.runs, turn.median_ms, turn.sm_mhz), (2, 4, Some(0.2), Some(1600.0)));
        let flops = GemmShape::new(4096, 4096, 4096).flops();
        assert!((turn.tflops.unwrap() - flops / 0.2e-3 / 1e12).abs() < 1e-9);
        let mut csv = Vec::new();
        write_turns_csv_to(&mut csv, &[turn]).unwrap();
        let text = String::from_utf8(csv).unwrap();
        assert!(text.starts_with("shape,impl,layout,round,runs,median_ms,tflops,sm_mhz\n"), "{text}");
        // Without a meter: the times only.
        assert_eq!(TurnRecord::new(&row, 0, &[0.2], None).sm_mhz, None);
    }

    #[test]
    fn the_summary_takes_geometric_means_against_the_baseline_and_the_fastest_peer() {
        let at = |shape: &str, implementation: &str, kind: &str, tflops: f64| {
            let mut row = ours(implementation, tflops);
            row.shape = shape.into();
            row.kind = Some(kind.into());
            row
        };
        let mut merged = at("1x1x1", "cublas(torch)", "peer", 1000.0);
        merged.origin = Some("peers:torch.json".into());
        let mut failed = at("2x2x2", "cublasLt-tuned", "peer", 1.0);
        failed.error = Some("no algorithm".into());
        let rows = vec![
            at("1x1x1", "cublasLt", "peer", 100.0),
            at("1x1x1", "cublasLt-tuned", "peer", 125.0),
            at("1x1x1", "oxtile", "oxtile", 100.0),
            merged,
            at("2x2x2", "cublasLt", "peer", 100.0),
            failed,
            at("2x2x2", "oxtile", "oxtile", 400.0),
        ];
        let summary = suite_summary(&rows, "cublasLt");
        // vs cublasLt: 1 and 4 (geomean 2); vs the fastest in-process peer: 0.8 and 4 (the merged and the failed
        // rows do not count).
        let want = "# gemm bf16 tt: oxtile over 2 problems; vs cublasLt: geomean 2.000, lowest 1.000 (1x1x1); \
                    vs the fastest peer: geomean 1.789, lowest 0.800 (1x1x1)\n";
        assert_eq!(summary, want);
        assert_eq!(suite_summary(&rows[..2], "cublasLt"), "");
    }

    #[test]
    fn backward_peer_rows_count_two_and_a_half_forwards() {
        let json =
            r#"[{"op": "attn-bwd", "shape": "4,16,8192,128,causal", "impl": "cudnn", "ms": 10.0, "tflops": 440.0}]"#;
        let rows = parse_peer_rows(json).unwrap();
        assert_eq!(rows[0].dtype.as_deref(), Some("bf16"));
        assert_eq!(rows[0].work, Some(2.5 * 4.0 * 4.0 * 16.0 * 8192f64.powi(2) * 128.0 / 2.0));
        assert!(rows[0].pct_peak.is_some());
    }

    #[test]
    fn torch_reference_rows_merge_beside_ours() {
        let peers = parse_peer_rows(TORCH_SAMPLE).unwrap();
        assert_eq!(peers.len(), 3);
        let torch = &peers[0];
        assert_eq!(torch.implementation, "cublas(torch)");
        assert_eq!((torch.dtype.as_deref(), torch.layout.as_deref()), (Some("bf16"), Some("tt")));
        assert_eq!(torch.work, Some(2.0 * 4096f64.powi(3)));
        assert!((torch.pct_peak.unwrap() - 70.18).abs() < 0.01);
        assert_eq!(peers[2].error.as_deref(), Some("No available kernel. Aborting execution."));
        assert_eq!(peers[2].tflops, None);
        assert_eq!(peers[1].work, Some(4.0 * 4.0 * 16.0 * 8192f64.powi(2) * 128.0 / 2.0));

        let mut rows = vec![ours("cublasLt", 700.0), ours("cublasGemmEx", 680.0)];
        rows.extend(peers);
        group_by_problem(&mut rows);
        fill_ratios(&mut rows, "cublasLt");
        assert_eq!(rows[0].ratio, Some(1.0));
        assert!((rows[1].ratio.unwrap() - 680.0 / 700.0).abs() < 1e-12);
        // The torch row lines up with the in-process cuBLAS rows: that ratio is the harness's acceptance test.
        assert_eq!(rows[2].implementation, "cublas(torch)");
        assert!((rows[2].ratio.unwrap() - 694.1 / 700.0).abs() < 1e-12);
        // Attention rows have no cublasLt baseline.
        assert_eq!(rows[3].ratio, None);
        fill_ratios(&mut rows, "cudnn");
        assert_eq!(rows[3].ratio, Some(1.0));
        assert_eq!(rows[4].ratio, None);
    }

    #[test]
    fn peer_files_get_their_origin() {
        let dir = std::env::temp_dir().join(format!("oxtile-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("torch.json");
        std::fs::write(&path, TORCH_SAMPLE).unwrap();
        let rows = read_peer_rows(&path).unwrap();
        assert!(rows.iter().all(|r| r.origin.as_deref() == Some("peers:torch.json")));
        let missing = read_peer_rows(&dir.join("absent.json")).unwrap_err().to_string();
        assert!(missing.contains("absent.json"), "{missing}");
        std::fs::write(&path, "{ not json").unwrap();
        assert!(read_peer_rows(&path).unwrap_err().to_string().contains("torch.json"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `rows` with every number rounded to 12 significant digits: serde_json's default float parser may differ
    /// from the shortest representation in the last bit.
    fn rounded(rows: &[Row]) -> Vec<Row> {
        let r = |v: Option<f64>| v.map(|x| format!("{x:.11e}").parse::<f64>().unwrap());
        rows.iter()
            .map(|row| Row {
                ms: r(row.ms),
                tflops: r(row.tflops),
                gbps: r(row.gbps),
                pct_peak: r(row.pct_peak),
                ratio: r(row.ratio),
                p10_ms: r(row.p10_ms),
                p90_ms: r(row.p90_ms),
                min_ms: r(row.min_ms),
                work: r(row.work),
                max_rel_err: r(row.max_rel_err),
                norm_rel_err: r(row.norm_rel_err),
                ..row.clone()
            })
            .collect()
    }

    #[test]
    fn json_and_csv_round_trip() {
        let mut rows = vec![ours("cublasLt", 700.0), ours("cublasGemmEx", 680.123456789)];
        rows[1].max_rel_err = Some(3.5e-3);
        rows[1].check = Some("ok".into());
        rows.extend(parse_peer_rows(TORCH_SAMPLE).unwrap());
        fill_ratios(&mut rows, "cublasLt");

        let json = serde_json::to_string(&rows).unwrap();
        assert!(json.contains("\"impl\":\"cublasGemmEx\""));
        assert_eq!(rounded(&serde_json::from_str::<Vec<Row>>(&json).unwrap()), rounded(&rows));

        let mut csv_bytes = Vec::new();
        write_csv_to(&mut csv_bytes, &rows).unwrap();
        let text = String::from_utf8(csv_bytes.clone()).unwrap();
        assert!(text.starts_with("op,shape,impl,kind,origin,dtype,layout,ms,tflops,"), "{text}");
        assert_eq!(text.lines().count(), rows.len() + 1);
        assert_eq!(read_csv_from(&csv_bytes[..]).unwrap(), rows);

        let dir = std::env::temp_dir().join(format!("oxtile-roundtrip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_json(&dir.join("rows.json"), &rows).unwrap();
        write_csv(&dir.join("rows.csv"), &rows).unwrap();
        assert_eq!(rounded(&read_json(&dir.join("rows.json")).unwrap()), rounded(&rows));
        assert_eq!(read_csv(&dir.join("rows.csv")).unwrap(), rows);
        // Our own JSON can be merged back as peers.
        assert_eq!(read_peer_rows(&dir.join("rows.json")).unwrap().len(), rows.len());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn empty_csv_has_a_header() {
        let mut bytes = Vec::new();
        write_csv_to(&mut bytes, &[]).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.starts_with("op,shape,impl,"), "{text:?}");
        assert_eq!(read_csv_from(text.as_bytes()).unwrap(), Vec::<Row>::new());
    }

    #[test]
    fn table_aligns_and_shows_checks_errors_and_origins() {
        let mut rows = vec![ours("cublasLt", 700.0), ours("cublasGemmEx", 680.0)];
        rows[0].check = Some("ref".into());
        rows[1].check = Some("FAIL".into());
        rows[1].max_rel_err = Some(0.25);
        let mut unsupported = Row::new("gemm", "4096x4096x4096", "oxtile");
        unsupported.error = Some("unsupported: layout tt".into());
        rows.push(unsupported);
        rows.extend(parse_peer_rows(TORCH_SAMPLE).unwrap().into_iter().take(1));
        fill_ratios(&mut rows, "cublasLt");
        let table = render_table(&rows, "cublasLt");
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 5, "{table}");
        for column in ["TFLOP/s", "% peak", "vs cublasLt", "max rel err", "check", "±%"] {
            assert!(lines[0].contains(column), "{column} missing: {table}");
        }
        assert!(!lines[0].contains("GB/s"));
        // Numbers are right-aligned: the TFLOP/s column ends at the same place on every timed line.
        let chars: Vec<Vec<char>> = lines.iter().map(|l| l.chars().collect()).collect();
        let header = lines[0];
        let end = header[..header.find("TFLOP/s").unwrap()].chars().count() + "TFLOP/s".len();
        let ending = |line: usize| chars[line][end - 5..end].iter().collect::<String>();
        assert_eq!(ending(1), "700.0", "{table}");
        assert_eq!(ending(2), "680.0", "{table}");
        assert_eq!(ending(4), "694.1", "{table}");
        assert!(lines[1].contains("1.000") && lines[1].contains("ref"));
        assert!(lines[2].contains("0.971") && lines[2].contains("2.50e-1") && lines[2].contains("FAIL"));
        assert!(lines[3].contains("error: unsupported: layout tt"));
        assert!(lines[4].contains("cublas(torch)"));
        assert!(rows[1].failed_check() && !rows[0].failed_check());
        // Spread: (p90 - p10) / median of 0.19, 0.2, 0.21 = 0.016 / 0.2 = 8%.
        assert!(lines[1].contains(" 8.0 "), "{table}");
    }

    #[test]
    fn attention_rows_line_up_with_torch_and_show_rescales() {
        let row = |name: &str, tflops: f64, rescale: f64| {
            let mut row = Row::new("attn", "4,16,8192,128,causal", name);
            row.dtype = Some("bf16".into());
            row.tflops = Some(tflops);
            row.rescale = Some(rescale);
            row.check = Some("ok".into());
            row
        };
        let mut rows = vec![row("oxtile", 400.0, 0.0), row("oxtile-eager", 380.0, 0.25)];
        rows.extend(parse_peer_rows(TORCH_SAMPLE).unwrap());
        group_by_problem(&mut rows);
        fill_ratios(&mut rows, "cudnn");
        let names: Vec<&str> = rows.iter().map(|r| r.implementation.as_str()).collect();
        assert_eq!(names, ["oxtile", "oxtile-eager", "cudnn", "flash2", "cublas(torch)"]);
        assert!((rows[0].ratio.unwrap() - 400.0 / 366.5).abs() < 1e-12);
        let table = render_table(&rows, "cudnn");
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].contains("rescale") && lines[0].contains("vs cudnn"), "{table}");
        assert!(lines[1].contains("0.000") && lines[2].contains("0.250"), "{table}");
        // Peers have no rescale count: a dash.
        assert!(lines[3].contains("cudnn") && lines[3].contains(" - "), "{table}");
        assert!(!render_table(&rows[4..], "cudnn").contains("rescale"));
    }

    #[test]
    fn memory_rows_show_bandwidth() {
        let mut copy = Row::new("mem", "256MiB", "memcpy_dtod");
        copy.gbps = Some(4000.0);
        copy.ms = Some(0.134);
        let mut axpy = Row::new("mem", "256MiB", "axpy_f32");
        axpy.gbps = Some(3600.0);
        axpy.dtype = Some("f32".into());
        let mut axpy_bf16 = Row::new("mem", "256MiB", "axpy_bf16");
        axpy_bf16.gbps = Some(3800.0);
        axpy_bf16.dtype = Some("bf16".into());
        let mut rows = vec![copy, axpy, axpy_bf16];
        group_by_problem(&mut rows);
        fill_ratios(&mut rows, "memcpy_dtod");
        // One buffer size is one problem whatever the element type: the order stays, every row gets a ratio.
        let names: Vec<&str> = rows.iter().map(|r| r.implementation.as_str()).collect();
        assert_eq!(names, ["memcpy_dtod", "axpy_f32", "axpy_bf16"]);
        assert_eq!(rows[2].ratio, Some(0.95));
        let table = render_table(&rows, "memcpy_dtod");
        assert!(table.contains("GB/s") && !table.contains("TFLOP/s") && !table.contains("check"), "{table}");
        assert!(table.contains("0.900"), "{table}");
    }
}
