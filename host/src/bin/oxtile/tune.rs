//! `oxtile tune gemm`: time every GEMM kernel variant per shape and record the fastest for `Variant::Auto`.

use std::path::PathBuf;
use std::process::ExitCode;

use half::{bf16, f16};
use oxtile::Gpu;
use oxtile::bench::TimingConfig;
use oxtile::bench::suite::{self, GEMM_SUITE};
use oxtile::ops::gemm::{GemmShape, Variant};
use oxtile::tune::{self, GemmTuning, TuneCache};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand)]
enum What {
    /// Time each sm90 GEMM variant (wide, wide in clusters of 2, narrow) per shape; store the fastest.
    Gemm(GemmArgs),
}

#[derive(clap::Args)]
struct GemmArgs {
    /// Comma-separated MxNxK; default: the benchmark suite.
    #[arg(long)]
    shapes: Option<String>,
    /// Element type of A, B and D.
    #[arg(long, default_value = "bf16", value_parser = ["bf16", "fp16"])]
    dtype: String,
    /// The cache file to update (default: $OXTILE_TUNE_CACHE, else ~/.cache/oxtile/gemm-tune.json).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Timed launches per variant and shape.
    #[arg(long, default_value_t = 30)]
    runs: usize,
}

pub fn run(args: &Args) -> oxtile::Result<ExitCode> {
    let What::Gemm(args) = &args.what;
    let shapes: Vec<GemmShape> = match &args.shapes {
        Some(list) => suite::parse_gemm_list(list)
            .map_err(|e| oxtile::Error::BadArgument { op: "tune gemm", message: e.to_string() })?
            .into_iter()
            .map(|s| GemmShape::new(s.m, s.n, s.k))
            .collect(),
        None => GEMM_SUITE.iter().map(|s| GemmShape::new(s.m, s.n, s.k)).collect(),
    };
    let path = args.cache.clone().or_else(TuneCache::default_path).ok_or_else(|| oxtile::Error::TuneCache {
        path: "(none)".into(),
        message: "no cache path: pass --cache or set OXTILE_TUNE_CACHE".into(),
    })?;
    let gpu = Gpu::new(0)?;
    let timing = TimingConfig { runs: args.runs, ..TimingConfig::default() };
    let mut cache = TuneCache::load(&path)?;
    println!("{:<20} {:>10} {:>10} {:>10}  best", "shape", "wide ms", "c2 ms", "narrow ms");
    for (i, &shape) in shapes.iter().enumerate() {
        let seed = oxtile::reference::fresh_seed() + i as u64;
        let tuning = match args.dtype.as_str() {
            "fp16" => tune::tune_gemm::<f16>(&gpu, shape, &timing, seed)?,
            _ => tune::tune_gemm::<bf16>(&gpu, shape, &timing, seed)?,
        };
        println!("{}", row(&tuning));
        if let Some(best) = tuning.best() {
            let element = if args.dtype == "fp16" { "f16" } else { "bf16" };
            cache.gemm.insert(tune::gemm_key(gpu.name(), gpu.sm_count(), element, shape), best);
        }
    }
    cache.save(&path)?;
    println!("wrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}

fn row(tuning: &GemmTuning) -> String {
    let ms = |variant: Variant| {
        tuning
            .results
            .iter()
            .find(|(v, _)| *v == variant)
            .and_then(|(_, stats)| stats.as_ref().ok())
            .map_or("-".to_string(), |s| format!("{:.4}", s.median_ms))
    };
    let GemmShape { m, n, k } = tuning.shape;
    let best = tuning.best().map_or("none".to_string(), |v| format!("{v:?}"));
    format!(
        "{:<20} {:>10} {:>10} {:>10}  {best}",
        format!("{m}x{n}x{k}"),
        ms(Variant::Wide),
        ms(Variant::WideCluster2),
        ms(Variant::Narrow)
    )
}
