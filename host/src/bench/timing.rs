//! GPU timing with CUDA events: warm-up, many timed launches, order statistics of the per-launch times.
//!
//! Every launch is bracketed by its own pair of events, so a sample is the GPU time of that launch alone. In
//! [`TimingMode::Queued`] (the default) all launches and events are enqueued before the one synchronize at the
//! end: the GPU runs them back to back and the host's launch overhead stays out of the samples as long as the
//! host keeps ahead of the GPU. [`TimingMode::Synced`] waits for each launch before enqueueing the next, the way
//! torch_reference.py does, so each sample also holds the launch latency of an idle GPU (a few microseconds:
//! it matters only for the smallest problems).

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

use crate::error::{Error, Result};
use crate::runtime::Gpu;

/// Order statistics of a set of timings, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub runs: usize,
    pub median_ms: f64,
    pub mean_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub p10_ms: f64,
    pub p90_ms: f64,
}

impl Stats {
    /// Statistics of `samples`; `None` when there are none or any is negative, NaN or infinite.
    pub fn from_samples(samples: &[f64]) -> Option<Stats> {
        if samples.is_empty() || samples.iter().any(|s| !s.is_finite() || *s < 0.0) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Stats {
            runs: sorted.len(),
            median_ms: percentile(&sorted, 0.5),
            mean_ms: sorted.iter().sum::<f64>() / sorted.len() as f64,
            min_ms: sorted[0],
            max_ms: sorted[sorted.len() - 1],
            p10_ms: percentile(&sorted, 0.1),
            p90_ms: percentile(&sorted, 0.9),
        })
    }

    /// (p90 − p10) / median: how much the middle 80% of the runs spread, relative to the median.
    pub fn spread(&self) -> f64 {
        if self.median_ms > 0.0 { (self.p90_ms - self.p10_ms) / self.median_ms } else { 0.0 }
    }
}

/// The `q`-quantile (0 ≤ q ≤ 1) of ascending `sorted`, interpolating linearly between the two nearest ranks
/// (numpy's default): q = 0.5 of an even count is the mean of the middle two.
///
/// Panics if `sorted` is empty.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "percentile of nothing");
    let position = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    let fraction = position - below as f64;
    sorted[below] + (sorted[above] - sorted[below]) * fraction
}

/// The median of ascending `sorted`.
pub fn median(sorted: &[f64]) -> f64 {
    percentile(sorted, 0.5)
}

/// How launches are timed; see the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TimingMode {
    /// Enqueue every timed launch, synchronize once: GPU time only.
    #[default]
    Queued,
    /// Synchronize after every launch, as torch_reference.py does: includes each launch's latency.
    Synced,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimingConfig {
    /// Untimed launches first: module loading, handle set-up, clocks ramping up.
    pub warmup: usize,
    /// Timed launches; the statistics are over these.
    pub runs: usize,
    pub mode: TimingMode,
}

impl Default for TimingConfig {
    fn default() -> TimingConfig {
        TimingConfig { warmup: 10, runs: 50, mode: TimingMode::Queued }
    }
}

/// Times `launch(i)` for i = 0, 1, 2, ...: `config.warmup` untimed calls, then `config.runs` calls each between a
/// pair of CUDA events on the GPU's stream. `launch` must only enqueue work on `gpu.stream()` (no
/// synchronization); `i` lets it rotate among input sets. Any error of the launches, including one raised
/// asynchronously on the GPU, fails the whole measurement.
pub fn time_gpu(gpu: &Gpu, config: &TimingConfig, mut launch: impl FnMut(usize) -> Result<()>) -> Result<Stats> {
    if config.runs == 0 {
        return Err(Error::bad_argument("bench", "the number of timed runs must be at least 1"));
    }
    let stream = gpu.stream();
    let ctx = gpu.context();
    for i in 0..config.warmup {
        launch(i)?;
    }
    stream.synchronize()?;
    ctx.check_err()?;
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let events =
        (0..config.runs).map(|_| Ok((ctx.new_event(flags)?, ctx.new_event(flags)?))).collect::<Result<Vec<_>>>()?;
    for (i, (start, end)) in events.iter().enumerate() {
        start.record(stream)?;
        launch(config.warmup + i)?;
        end.record(stream)?;
        if config.mode == TimingMode::Synced {
            end.synchronize()?;
        }
    }
    stream.synchronize()?;
    ctx.check_err()?;
    let samples = events.iter().map(|(start, end)| Ok(start.elapsed_ms(end)? as f64)).collect::<Result<Vec<f64>>>()?;
    Stats::from_samples(&samples)
        .ok_or_else(|| Error::bad_argument("bench", format!("CUDA events gave unusable times: {samples:?}")))
}

/// A stopwatch on a stream, for timing a batch of launches as a whole (criterion's measurement uses it).
#[derive(Clone)]
pub struct GpuClock {
    stream: Arc<CudaStream>,
}

impl GpuClock {
    pub fn new(gpu: &Gpu) -> GpuClock {
        GpuClock { stream: gpu.stream().clone() }
    }

    /// Records a start event on the stream.
    pub fn start(&self) -> Result<CudaEvent> {
        Ok(self.stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?)
    }

    /// Records an end event, waits for it, and returns the GPU time since `start` in milliseconds.
    pub fn stop_ms(&self, start: &CudaEvent) -> Result<f64> {
        let end = self.stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        end.synchronize()?;
        self.stream.context().check_err()?;
        Ok(start.elapsed_ms(&end)? as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[1.0, 2.0, 3.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 3.0, 10.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
    }

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let sorted: Vec<f64> = (0..=10).map(f64::from).collect();
        assert_eq!(percentile(&sorted, 0.0), 0.0);
        assert_eq!(percentile(&sorted, 0.1), 1.0);
        assert_eq!(percentile(&sorted, 0.9), 9.0);
        assert_eq!(percentile(&sorted, 1.0), 10.0);
        assert!((percentile(&[0.0, 1.0], 0.25) - 0.25).abs() < 1e-12);
        assert_eq!(percentile(&sorted, 2.0), 10.0);
    }

    #[test]
    fn stats_sort_their_samples() {
        let stats = Stats::from_samples(&[5.0, 1.0, 4.0, 2.0, 3.0]).unwrap();
        assert_eq!(stats.runs, 5);
        assert_eq!(stats.median_ms, 3.0);
        assert_eq!(stats.mean_ms, 3.0);
        assert_eq!(stats.min_ms, 1.0);
        assert_eq!(stats.max_ms, 5.0);
        assert!((stats.p10_ms - 1.4).abs() < 1e-12);
        assert!((stats.p90_ms - 4.6).abs() < 1e-12);
        assert!((stats.spread() - 3.2 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn stats_refuse_empty_and_non_finite_samples() {
        assert_eq!(Stats::from_samples(&[]), None);
        assert_eq!(Stats::from_samples(&[1.0, f64::NAN]), None);
        assert_eq!(Stats::from_samples(&[1.0, f64::INFINITY]), None);
        assert_eq!(Stats::from_samples(&[-1.0]), None);
    }
}
