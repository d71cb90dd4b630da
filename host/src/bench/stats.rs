//! Order statistics of timings: the median and percentiles the tables show.

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
}
