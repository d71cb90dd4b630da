//! Measured kernel choices. `oxtile tune gemm` times every GEMM variant per shape on the GPU and records the fastest
//! in a JSON file; [`Variant::Auto`] looks there first and falls back to the heuristic for shapes it does not hold.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::bench::device::rotation_sets;
use crate::bench::timing::{TurnEvent, time_in_rounds};
use crate::bench::{DeviceInfo, Stats, TimingConfig};
use crate::error::{Error, Result};
use crate::ops::gemm::{GemmOptions, GemmOutput, GemmPlan, GemmShape, Variant};
use crate::reference;
use crate::runtime::Gpu;
use crate::verify::{CheckElement, CheckValue};

/// The file: one entry per (GPU, input and output types, layout, shape).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TuneCache {
    pub gemm: BTreeMap<String, Variant>,
}

/// The cache key of a GEMM problem: the GPU by name and SM count (the choice depends on both), the input and output
/// types, the layout in BLAS letters and the shape, e.g. `NVIDIA H200 (132 SMs) bf16->bf16 tt 4096x4096x4096`.
/// (Keys written before layouts and output types existed, `... bf16 4096x4096x4096`, no longer match anything.)
pub fn gemm_key(device: &str, sm_count: u32, input: &str, output: &str, layout: &str, shape: GemmShape) -> String {
    format!("{device} ({sm_count} SMs) {input}->{output} {layout} {}x{}x{}", shape.m, shape.n, shape.k)
}

impl TuneCache {
    /// `$OXTILE_TUNE_CACHE`, else `$XDG_CACHE_HOME/oxtile/gemm-tune.json`, else `$HOME/.cache/oxtile/gemm-tune.json`.
    pub fn default_path() -> Option<PathBuf> {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        var("OXTILE_TUNE_CACHE")
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("oxtile/gemm-tune.json")))
            .or_else(|| var("HOME").map(|d| d.join(".cache/oxtile/gemm-tune.json")))
    }

    /// The cache at `path`; an absent file is an empty cache, an unreadable or malformed one an error.
    pub fn load(path: &Path) -> Result<TuneCache> {
        let error = |message: String| Error::TuneCache { path: path.display().to_string(), message };
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| error(format!("malformed: {e}"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TuneCache::default()),
            Err(e) => Err(error(e.to_string())),
        }
    }

    /// Writes the cache to `path` (through a temporary file, so a reader never sees half of it).
    pub fn save(&self, path: &Path) -> Result<()> {
        let error = |message: String| Error::TuneCache { path: path.display().to_string(), message };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| error(e.to_string()))?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| error(e.to_string()))?;
        let temporary = path.with_extension("json.tmp");
        std::fs::write(&temporary, text + "\n").map_err(|e| error(e.to_string()))?;
        std::fs::rename(&temporary, path).map_err(|e| error(e.to_string()))
    }
}

/// The recorded choice for this GPU, types, layout and shape, from the default cache file (read once per process).
pub(crate) fn cached_gemm_variant(
    gpu: &Gpu,
    input: &str,
    output: &str,
    layout: &str,
    shape: GemmShape,
) -> Result<Option<Variant>> {
    static CACHE: OnceLock<std::result::Result<TuneCache, (String, String)>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| match TuneCache::default_path() {
        None => Ok(TuneCache::default()),
        Some(path) => TuneCache::load(&path).map_err(|e| match e {
            Error::TuneCache { path, message } => (path, message),
            other => (path.display().to_string(), other.to_string()),
        }),
    });
    match cache {
        Ok(cache) => Ok(cache.gemm.get(&gemm_key(gpu.name(), gpu.sm_count(), input, output, layout, shape)).copied()),
        Err((path, message)) => Err(Error::TuneCache { path: path.clone(), message: message.clone() }),
    }
}

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
    let available = |v: &Variant| v.available(T::NAME, <O as GemmOutput<T>>::NAME, options.a_order, options.b_order);
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
    fn cache_round_trips_and_an_absent_file_is_empty() {
        let dir = std::env::temp_dir().join(format!("oxtile-tune-test-{}", std::process::id()));
        let path = dir.join("nested/gemm-tune.json");
        assert_eq!(TuneCache::load(&path).unwrap(), TuneCache::default());
        let mut cache = TuneCache::default();
        let shape = GemmShape::new(4096, 4096, 4096);
        cache.gemm.insert(gemm_key("NVIDIA H200", 132, "bf16", "bf16", "tn", shape), Variant::WideCluster2);
        cache.gemm.insert(gemm_key("NVIDIA H200", 132, "bf16", "f32", "nt", shape), Variant::Wide);
        cache.save(&path).unwrap();
        assert_eq!(TuneCache::load(&path).unwrap(), cache);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn keys_tell_layouts_and_output_types_apart() {
        let shape = GemmShape::new(4096, 4096, 4096);
        let key = |output, layout| gemm_key("NVIDIA H200", 132, "bf16", output, layout, shape);
        assert_eq!(key("bf16", "tt"), "NVIDIA H200 (132 SMs) bf16->bf16 tt 4096x4096x4096");
        let keys = [key("bf16", "tn"), key("bf16", "tt"), key("f32", "tn"), key("f32", "tt")];
        for (i, a) in keys.iter().enumerate() {
            assert!(keys[i + 1..].iter().all(|b| a != b), "{keys:?}");
        }
    }

    #[test]
    fn a_malformed_cache_is_a_clear_error() {
        let path = std::env::temp_dir().join(format!("oxtile-tune-bad-{}.json", std::process::id()));
        std::fs::write(&path, "{ not json").unwrap();
        let err = TuneCache::load(&path).unwrap_err().to_string();
        std::fs::remove_file(&path).unwrap();
        assert!(err.contains("malformed") && err.contains("oxtile-tune-bad"), "{err}");
    }

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
