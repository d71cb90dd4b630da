//! The exponential-throughput microbenchmark: MUFU.EX2 only, the software exp2 polynomial only, and mixes
//! (gpu/kernels/support/src/exp2.rs). Each kernel keeps its values in registers, so it measures the units, not
//! memory; every launch's output is checked against float64 so the timed kernels compute real values.
//!
//! Rates: exponentials per launch (threads × 32 values × iterations) over the median time; per SM per clock at
//! the device's maximum SM clock (a GPU running below it under load makes these underestimates). Each
//! exponential includes the subtraction v − bias that stands for the softmax's max subtraction.

use super::device::DeviceInfo;
use super::report::Row;
use super::timing::{TimingConfig, time_gpu};
use crate::error::Result;
use crate::exp2::REL_ERROR_BOUND;
use crate::ops::softmax::{Exp2Mode, Exp2Throughput, THROUGHPUT_BIAS};
use crate::runtime::Gpu;
use crate::verify;

/// Iterations per launch by default: about a millisecond per launch on an H200.
pub const DEFAULT_ITERS: u32 = 1024;

/// The row every ratio is relative to.
pub const BASELINE: &str = "mufu";

/// Times every [`Exp2Mode`] with `iters` iterations per launch; one row per mode (`op` = `exp2`, `work` =
/// exponentials per launch, `ratio` = exponentials per second over MUFU-only's). `on_step` is called before each.
pub fn bench_exp2(gpu: &Gpu, iters: u32, timing: &TimingConfig, on_step: &mut dyn FnMut(&str)) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for mode in Exp2Mode::ALL {
        on_step(&mode.name());
        let mut row = Row::new("exp2", format!("{iters} iters"), &mode.name());
        row.kind = Some("oxtile".into());
        row.origin = Some("in-process".into());
        row.dtype = Some("f32".into());
        let result = (|| -> Result<_> {
            let kernel = Exp2Throughput::new(gpu, mode)?;
            let mut out = gpu.stream().alloc_zeros::<f32>(kernel.threads())?;
            let stats = time_gpu(gpu, timing, |_| kernel.launch(gpu, iters, THROUGHPUT_BIAS, &mut out))?;
            let comparison = verify::exp2_throughput_comparison(&gpu.stream().clone_dtoh(&out)?, iters);
            Ok((kernel.exponentials(iters), stats, comparison))
        })();
        match result {
            Ok((exponentials, stats, comparison)) => {
                row.work = Some(exponentials);
                row.set_stats(&stats);
                row.max_rel_err = Some(comparison.max_rel_error);
                row.check = Some(if comparison.passes(REL_ERROR_BOUND) { "ok".into() } else { "FAIL".into() });
            }
            Err(error) => row.error = Some(error.to_string()),
        }
        rows.push(row);
    }
    let base = rows.iter().find(|r| r.implementation == BASELINE).and_then(exponentials_per_second);
    for row in &mut rows {
        row.ratio = base.zip(exponentials_per_second(row)).map(|(base, rate)| rate / base);
    }
    Ok(rows)
}

/// A row's exponentials per second.
pub fn exponentials_per_second(row: &Row) -> Option<f64> {
    let (work, ms) = (row.work?, row.ms?);
    (ms > 0.0).then(|| work / (ms * 1e-3))
}

/// The rows as a table: median time, G exp/s, exponentials per SM per clock, ratio to MUFU-only, the check.
pub fn render_table(rows: &[Row], info: &DeviceInfo) -> String {
    let clock_hz = info.max_clock_khz.map(|k| k as f64 * 1e3);
    let mut out = format!(
        "{:<20} {:>10} {:>7} {:>10} {:>12} {:>9} {:>12}  {}\n",
        "mode", "ms", "±%", "G exp/s", "exp/clk/SM", "vs mufu", "max rel err", "check"
    );
    for row in rows {
        if let Some(error) = &row.error {
            out += &format!("{:<20} error: {error}\n", row.implementation);
            continue;
        }
        let rate = exponentials_per_second(row);
        let per_clock = rate.zip(clock_hz).map(|(rate, hz)| rate / hz / info.sm_count as f64);
        let cell = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
        out += &format!(
            "{:<20} {:>10} {:>7} {:>10} {:>12} {:>9} {:>12}  {}\n",
            row.implementation,
            cell(row.ms, 4),
            cell(row.spread().map(|s| 100.0 * s), 1),
            cell(rate.map(|r| r / 1e9), 1),
            cell(per_clock, 2),
            cell(row.ratio, 3),
            row.max_rel_err.map_or("-".into(), |e| format!("{e:.2e}")),
            row.check.as_deref().unwrap_or("-")
        );
    }
    out
}
