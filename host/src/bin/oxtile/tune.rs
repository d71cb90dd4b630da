//! `oxtile tune gemm`: time every GEMM kernel variant per shape and record the fastest for `Variant::Auto`.

use std::path::PathBuf;
use std::process::ExitCode;

use half::{bf16, f16};
use oxtile::Gpu;
use oxtile::bench::TimingConfig;
use oxtile::bench::suite::{self, GEMM_SUITE};
use oxtile::ops::gemm::{GemmOptions, GemmShape, Variant};
use oxtile::tune::{self, GemmTuning};
use oxtile::tune_cache::{self, Saved, TuneCache};
use oxtile::types::{Dtype, GemmLayout};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand)]
enum What {
    /// Time each sm90 GEMM variant (wide, wide in clusters of 2, narrow, ping-pong, ping-pong in clusters of 2,
    /// where they exist for the types) per shape and layout; store the fastest.
    Gemm(GemmArgs),
}

#[derive(clap::Args)]
struct GemmArgs {
    /// Comma-separated MxNxK; default: the benchmark suite.
    #[arg(long)]
    shapes: Option<String>,
    /// Element type of A and B.
    #[arg(long, value_enum, default_value = "bf16")]
    dtype: Dtype,
    /// Element type of D: that of A and B, or f32.
    #[arg(long, default_value = "same", value_parser = ["same", "f32"])]
    output: String,
    /// Layouts of A then B (t = row-major, n = column-major), comma-separated; each gets its own entries.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "tn,tt,nt,nn")]
    layout: Vec<GemmLayout>,
    /// The cache file to update (default: $OXTILE_TUNE_CACHE, else ~/.cache/oxtile/gemm-tune.json).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Timed launches per variant and shape.
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// The variants of a shape take turns in this many rounds, each timing its share of --runs in every round.
    #[arg(long, default_value_t = oxtile::bench::timing::DEFAULT_ROUNDS)]
    rounds: usize,
    /// Before every turn, run the variant untimed for this many ms of GPU time, so each is timed at the clock it
    /// settles to under the power cap rather than the one it finds (see `oxtile bench --settle-ms`).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    settle_ms: u64,
}

pub fn run(args: &Args) -> oxtile::Result<ExitCode> {
    let What::Gemm(args) = &args.what;
    let shapes: Vec<GemmShape> = match &args.shapes {
        Some(list) => suite::parse_gemm_list(list)
            .map_err(|e| oxtile::Error::BadArgument { op: "tune gemm", message: e.to_string() })?,
        None => GEMM_SUITE.to_vec(),
    };
    let path = args.cache.clone().or_else(TuneCache::default_path).ok_or_else(|| oxtile::Error::TuneCache {
        path: "(none)".into(),
        message: "no cache path: pass --cache or set OXTILE_TUNE_CACHE".into(),
    })?;
    let gpu = Gpu::new(0)?;
    let timing = TimingConfig {
        runs: args.runs,
        settle: std::time::Duration::from_millis(args.settle_ms),
        ..TimingConfig::default()
    };
    // This run's winners only: `save` merges them into the file as it is when the run ends (other runs may have
    // written it meanwhile).
    let mut cache = TuneCache::default();
    let columns: Vec<String> = Variant::CANDIDATES.iter().map(|v| format!(" {:>11}", v.label())).collect();
    println!("{:<20} {:<6} {}  best (ms)", "shape", "layout", columns.join(""));
    let input = args.dtype.name();
    let output = if args.output == "f32" { "f32" } else { input };
    for &layout in &args.layout {
        let options = GemmOptions { layout, ..GemmOptions::default() };
        for (i, &shape) in shapes.iter().enumerate() {
            let seed = oxtile::reference::fresh_seed() + i as u64;
            let tuning = match (input, output) {
                ("f16", "f32") => tune::tune_gemm::<f16, f32>(&gpu, shape, options, &timing, args.rounds, seed)?,
                ("f16", _) => tune::tune_gemm::<f16, f16>(&gpu, shape, options, &timing, args.rounds, seed)?,
                (_, "f32") => tune::tune_gemm::<bf16, f32>(&gpu, shape, options, &timing, args.rounds, seed)?,
                _ => tune::tune_gemm::<bf16, bf16>(&gpu, shape, options, &timing, args.rounds, seed)?,
            };
            println!("{}", row(&tuning));
            if let Some(best) = tuning.best() {
                cache.gemm.insert(tune_cache::gemm_key(gpu.name(), gpu.sm_count(), input, output, layout, shape), best);
            }
        }
    }
    match cache.save(&path)? {
        Saved::Created | Saved::Merged => {}
        Saved::Replaced(reason) => eprintln!("replaced an unreadable tune cache ({reason})"),
    }
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
    let best = tuning.best().map_or("none", Variant::label);
    let columns: Vec<String> = Variant::CANDIDATES.iter().map(|&v| format!(" {:>11}", ms(v))).collect();
    format!("{:<20} {:<6} {}  {best}", format!("{m}x{n}x{k}"), tuning.options.layout, columns.join(""))
}
