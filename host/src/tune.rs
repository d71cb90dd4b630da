//! `oxtile tune gemm`: times every GEMM variant per shape on the GPU with the benchmark's timing, for the tune cache
//! ([`crate::tune_cache`]) to record the fastest.

use crate::bench::device::rotation_sets;
use crate::bench::timing::{TurnEvent, time_in_rounds};
use crate::bench::{DeviceInfo, Stats, TimingConfig};
use crate::error::{Error, Result};
use crate::ops::gemm::{GemmOptions, GemmOutput, GemmPlan, GemmShape, Variant};
use crate::reference;
use crate::runtime::Gpu;
use crate::verify::{CheckElement, CheckValue};

/// One problem's measurements: each candidate's timing, or why it could not run.
#[derive(Debug)]
pub struct GemmTuning {
    pub shape: GemmShape,
    /// Operand orders and scalars of the problem (the variant field is ignored).
    pub options: GemmOptions,
    pub results: Vec<(Variant, Result<Stats>)>,
}

impl GemmTuning {
    /// The candidate with the lowest median time.
    pub fn best(&self) -> Option<Variant> {
        self.results
            .iter()
            .filter_map(|(variant, stats)| stats.as_ref().ok().map(|s| (*variant, s.median_ms)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(variant, _)| variant)
    }
}

/// Times every [`Variant::CANDIDATES`] kernel that exists for `T` → `O` in the layout of `options`
/// ([`Variant::available`]) on `shape` (randn inputs, several input sets rotated past the L2), the candidates taking
/// turns in `rounds` rounds as the benchmarks' contenders do ([`time_in_rounds`]), so that none is timed only on a
/// cooler or hotter chip than the others; `timing.settle` settles the clock before every turn.
pub fn tune_gemm<T: CheckElement, O: GemmOutput<T> + CheckValue>(
    gpu: &Gpu,
    shape: GemmShape,
    options: GemmOptions,
    timing: &TimingConfig,
    rounds: usize,
    seed: u64,
) -> Result<GemmTuning> {
    let bytes_per_set = 2 * (shape.m * shape.k + shape.k * shape.n);
    let l2_bytes = DeviceInfo::query(gpu)?.l2_bytes;
    let sets = rotation_sets(bytes_per_set, l2_bytes, 3.0, 8, 16 << 30);
    let stream = gpu.stream();
    let upload = |len, seed| -> Result<_> {
        let values: Vec<T> = reference::randn(len, 1.0, seed).into_iter().map(T::from_f32).collect();
        Ok(stream.clone_htod(&values)?)
    };
    let operands = (0..sets)
        .map(|i| {
            Ok((upload(shape.m * shape.k, seed + 2 * i as u64)?, upload(shape.k * shape.n, seed + 2 * i as u64 + 1)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut d = stream.clone_htod(&vec![O::from_f32(0.0); shape.m * shape.n])?;
    let available = |v: &Variant| v.available(T::NAME, <O as GemmOutput<T>>::NAME, options.layout);
    let variants: Vec<Variant> = Variant::CANDIDATES.into_iter().filter(available).collect();
    // Each candidate's plans, one per input set, or why it has none.
    let mut plans: Vec<Result<Vec<GemmPlan<T, O>>>> = Vec::with_capacity(variants.len());
    for &variant in &variants {
        let options = GemmOptions { variant, ..options };
        let made: Result<Vec<_>> =
            operands.iter().map(|(a, b)| GemmPlan::<T, O>::new(gpu, shape, options, a, b)).collect();
        // D's tensor map is encoded here, not in the first timed launches.
        let bound = made.and_then(|made| {
            made.iter().try_for_each(|plan| plan.bind_output(gpu, &mut d))?;
            Ok(made)
        });
        plans.push(bound);
    }
    let ready: Vec<usize> = (0..variants.len()).filter(|&c| plans[c].is_ok()).collect();
    let timed = time_in_rounds(gpu, timing, &ready, rounds, None, &mut |_: TurnEvent| {}, &mut |c, i| {
        let (a, b) = &operands[i % sets];
        let candidate = plans[c].as_ref().map_err(|_| Error::bad_argument("tune gemm", "a candidate without plans"))?;
        candidate[i % sets].launch(gpu, a, b, &mut d)
    });
    let mut results: Vec<(Variant, Result<Stats>)> = Vec::with_capacity(variants.len());
    let mut timed = timed.into_iter();
    for (c, (variant, made)) in variants.into_iter().zip(plans).enumerate() {
        let measured = match made {
            Err(error) => Err(error),
            Ok(_) => {
                let (index, outcome) = timed.next().expect("every ready candidate has an outcome");
                debug_assert_eq!(index, c);
                outcome.map(|(stats, _)| stats)
            }
        };
        results.push((variant, measured));
    }
    Ok(GemmTuning { shape, options, results })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fastest_candidate_wins_and_failures_are_skipped() {
        let stats = |ms| Stats::from_samples(&[ms]).unwrap();
        let tuning = GemmTuning {
            shape: GemmShape::new(1, 1, 8),
            options: GemmOptions::default(),
            results: vec![
                (Variant::Wide, Ok(stats(2.0))),
                (Variant::WideCluster2, Err(Error::unsupported("gemm", "no"))),
                (Variant::Narrow, Ok(stats(1.5))),
            ],
        };
        assert_eq!(tuning.best(), Some(Variant::Narrow));
    }
}
