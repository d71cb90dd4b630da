//! `oxtile bench`: time our kernels beside the peers in one process and print one table (JSON, CSV and SVG on
//! request). See `oxtile::bench` for the method.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oxtile::Gpu;
use oxtile::bench::attention::{self, AttnBenchConfig, AttnBenchProblem};
use oxtile::bench::clocks::ClockMeter;
use oxtile::bench::contenders::{self, BASELINE};
use oxtile::bench::gemm::{self, GemmBenchConfig, GemmProblem};
use oxtile::bench::inputs::InputPool;
use oxtile::bench::report::{self, BenchObserver, Row, TurnRecord};
use oxtile::bench::suite::{self, AttnShape, GemmShape};
use oxtile::bench::sweep;
use oxtile::bench::{DeviceInfo, TimingConfig, TimingMode, copy, exp2, ns, plot, timing};
use oxtile::types::{Dtype, GemmLayout};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand)]
enum What {
    /// GEMM: oxtile's kernels beside cuBLASLt and cublasGemmEx in this process, outputs cross-checked.
    Gemm(GemmArgs),
    /// Attention: oxtile's kernel and its ablations, checked against the GPU reference, beside the cuDNN and
    /// FlashAttention-2 rows of torch_reference.py given with --peers.
    Attn(AttnArgs),
    /// Memory-bound: the elementwise kernels against a device-to-device copy, the bandwidth ceiling.
    Copy(CopyArgs),
    /// Exponential throughput: MUFU.EX2 only, the software exp2 polynomial only, and mixes (values in registers).
    Exp2(Exp2Args),
    /// Muon's orthogonalization (issue 29): the symmetric GEMM against our full GEMM and cuBLASLt for the same
    /// X·Xᵀ, then Gram Newton-Schulz against the standard iteration on our kernels.
    Ns(NsArgs),
}

#[derive(clap::Args)]
struct Timing {
    /// Untimed launches before the timed ones.
    #[arg(long, default_value_t = 10)]
    warmup: usize,
    /// Timed launches per implementation and problem, each between its own pair of CUDA events.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// queued: batches of launches queued behind a kernel that holds the stream until the host has queued them all,
    /// then run back to back (GPU time only); unblocked: queued without the hold (for profilers and sanitizers that
    /// serialize launches; short kernels then read the host's pace); synced: wait for each launch before the next,
    /// as torch_reference.py does (adds each launch's latency); batched: as queued, but one pair of events around each
    /// batch (no event between launches; a sample is a batch's mean).
    #[arg(long, value_enum, default_value_t = TimingMode::Queued)]
    timing: TimingMode,
    /// Before every turn's timed launches, keep launching (untimed) until the GPU has run this contender for this
    /// many milliseconds, so that under the power cap each turn is timed at the clock its own kernel earns rather
    /// than the one left by whatever ran or idled before.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    settle_ms: u64,
}

impl Timing {
    fn config(&self) -> TimingConfig {
        TimingConfig {
            warmup: self.warmup,
            runs: self.runs as usize,
            mode: self.timing,
            settle: Duration::from_millis(self.settle_ms),
            ..TimingConfig::default()
        }
    }

    fn describe(&self) -> String {
        let mode = match self.timing {
            TimingMode::Queued => {
                format!("queued behind a stream hold, at most {} per hold, back to back", timing::MAX_HELD_BATCH)
            }
            TimingMode::Unblocked => "queued back to back, no stream hold".into(),
            TimingMode::Synced => "synchronized after each".into(),
            TimingMode::Batched => format!(
                "queued behind a stream hold, at most {} per hold, back to back, one pair of events per batch",
                timing::MAX_HELD_BATCH
            ),
        };
        let statistic = if self.timing == TimingMode::Batched {
            "median of the batches' CUDA-event times per launch"
        } else {
            "median of per-launch CUDA-event times"
        };
        let settle = match self.settle_ms {
            0 => String::new(),
            ms => format!(", each turn's timed launches after {ms} ms of untimed ones"),
        };
        format!("{} warm-up + {} timed launches ({mode}){settle}, {statistic}", self.warmup, self.runs)
    }
}

/// How many rounds the contenders of one problem are timed in.
#[derive(clap::Args)]
struct Rounds {
    /// Time the contenders of each problem in N rounds, each contender running its share of --runs in every round
    /// (its full warm-up before its first turn, 2 launches before each later one), so that drifts of clocks and
    /// temperature fall on all of them alike; 1 times each contender's runs in one go, one contender after another.
    #[arg(long, value_name = "N", default_value_t = timing::DEFAULT_ROUNDS as u64,
        value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
}

impl Rounds {
    fn describe(&self, runs: u64) -> String {
        let rounds = timing::effective_rounds(self.rounds as usize, runs as usize);
        if rounds == 1 {
            "each implementation timed in one go, one after another".into()
        } else {
            let share = runs as usize / rounds;
            format!("the implementations of a problem take turns in {rounds} rounds of about {share} runs each")
        }
    }
}

#[derive(clap::Args)]
struct Output {
    /// Merge rows from this file, written by ../shared/bench/torch_reference.py --json (or oxtile bench --json);
    /// may be given more than once.
    #[arg(long, value_name = "FILE")]
    peers: Vec<PathBuf>,
    /// Write the rows as JSON (an array in torch_reference.py's format, with more fields).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the rows as CSV.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Draw TFLOP/s (GB/s) against problem size for each implementation, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Write one CSV line per timed turn (round and contender): its median, TFLOP/s and SM clock.
    #[arg(long, value_name = "FILE.csv")]
    turn_log: Option<PathBuf>,
}

#[derive(clap::Args)]
struct GemmArgs {
    /// Comma-separated MxNxK (C is MxN, the inner dimension K); default: the suite of torch_reference.py.
    #[arg(long, value_delimiter = ',', value_name = "MxNxK,...", conflicts_with = "sweep")]
    shapes: Vec<GemmShape>,
    /// The sweep of shapes users run instead of the suite (host/src/bench/gemm_sweep.txt: open models'
    /// projections at 1 to 16384 tokens, squares, ragged sizes); the summary adds each class's geomean.
    #[arg(long)]
    sweep: bool,
    /// With --sweep: read the sweep from FILE (the same `CLASS LABEL MxNxK` lines) instead.
    #[arg(long, value_name = "FILE", requires = "sweep")]
    sweep_file: Option<PathBuf>,
    /// With --sweep: only these classes (e.g. model-decode,square); comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "CLASS,...", requires = "sweep")]
    class: Vec<String>,
    /// With --sweep: every N-th shape of each class (a shorter run that still spans the classes).
    #[arg(long, default_value_t = 1, value_name = "N", requires = "sweep")]
    every: usize,
    /// List the kernel Auto runs for each shape, type and layout on a GPU with `--sms` SMs, and exit, without a GPU:
    /// the heuristic for operands TMA reads in place, before the tune cache and the stream-K residency check.
    #[arg(long)]
    plan: bool,
    /// With --plan: the SM count the heuristic fits tiles to (132: H100 SXM and H200).
    #[arg(long, default_value_t = 132, value_name = "N", requires = "plan", value_parser = clap::value_parser!(u32).range(1..))]
    sms: u32,
    /// Input and output type (fp32 accumulation); comma-separated for several.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "bf16")]
    dtype: Vec<Dtype>,
    /// Storage of A then B: t = row-major, n = column-major (C is row-major). tt is torch's `a @ b` (what
    /// torch_reference.py times); tn has both operands K-major, nt both MN-major. oxtile and the cuBLAS peers run
    /// in each. Comma-separated for several.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "tt,tn")]
    layout: Vec<GemmLayout>,
    /// Skip comparing each implementation's output with cuBLASLt's.
    #[arg(long)]
    no_check: bool,
    /// Time only these implementations (row names, e.g. oxtile,cublasLt); comma-separated. Outputs are then checked
    /// against the first of them that runs.
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    only: Vec<String>,
    /// Seed of the random inputs (default: fresh from the clock).
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    timing: Timing,
    #[command(flatten)]
    rounds: Rounds,
    #[command(flatten)]
    output: Output,
}

#[derive(clap::Args)]
struct AttnArgs {
    /// Shapes B,H,S,D,full|causal, space-separated (heads_q = heads_kv = H; D = 64, 128 or 256); default:
    /// torch_reference.py's suite (D = 64 and 128). Head dim 256, e.g.: 16,16,2048,256,full 4,16,8192,256,causal.
    #[arg(long, num_args = 1.., value_name = "B,H,S,D,MASK")]
    shapes: Vec<AttnShape>,
    /// Input and output type; comma-separated for several (torch_reference.py's rows are bf16).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "bf16")]
    dtype: Vec<Dtype>,
    /// Skip comparing each kernel's output with the GPU reference kernel's.
    #[arg(long)]
    no_check: bool,
    /// Skip the extra launch per kernel that counts rescales.
    #[arg(long)]
    no_stats: bool,
    /// Time the backward instead (dQ, dK, dV from the forward's O and LSE: the preprocessing, the main kernel and
    /// the dQ conversion together); FLOPs 2.5 × the forward's, halved when causal.
    #[arg(long)]
    backward: bool,
    /// Time only these rows (e.g. oxtile, or oxtile-bwd,oxtile-bwd-det with --backward); comma-separated.
    /// scripts/adjacent_attn.sh times the default kernel alone this way.
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    only: Vec<String>,
    /// Seed of the random inputs (default: fresh from the clock).
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    timing: Timing,
    #[command(flatten)]
    rounds: Rounds,
    #[command(flatten)]
    output: Output,
}

/// `items` whose name is in `only` (all of them when it is empty), or the first name in `only` that none has.
fn select<'a, T: Copy>(items: &[T], name: impl Fn(&T) -> &str, only: &'a [String]) -> Result<Vec<T>, &'a str> {
    if let Some(unknown) = only.iter().find(|wanted| !items.iter().any(|item| name(item) == wanted.as_str())) {
        return Err(unknown);
    }
    Ok(items.iter().copied().filter(|item| only.is_empty() || only.iter().any(|wanted| wanted == name(item))).collect())
}

#[derive(clap::Args)]
struct CopyArgs {
    /// Buffer sizes, comma-separated: 256 (MiB), 256MiB, 1GiB (default: 64MiB,256MiB,1GiB).
    #[arg(long, value_delimiter = ',', value_parser = suite::parse_size, value_name = "SIZE,...")]
    sizes: Vec<usize>,
    /// Seed of the random inputs (default: fresh from the clock).
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    timing: Timing,
    #[command(flatten)]
    output: Output,
}

#[derive(clap::Args)]
struct NsArgs {
    /// X·Xᵀ problems as NxK, comma-separated (default: 4096x4096,4096x14336,8192x8192,8192x28672,2048x8192).
    #[arg(long, value_delimiter = ',', value_name = "NxK,...")]
    gemm: Vec<String>,
    /// Newton-Schulz stacks as BATCHxROWSxCOLUMNS, comma-separated (default: 1x4096x4096,1x4096x14336,
    /// 1x14336x4096,1x2048x8192,4x2048x8192,1x8192x28672); `none` for none.
    #[arg(long, value_delimiter = ',', value_name = "BxRxC,...")]
    ns: Vec<String>,
    /// Seed of the random inputs (default: fresh from the clock).
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    timing: Timing,
    #[command(flatten)]
    output: Output,
}

/// `AxBx…` as numbers.
fn parse_dims(text: &str, count: usize) -> oxtile::Result<Vec<usize>> {
    let dims: Vec<usize> = text.split('x').filter_map(|d| d.trim().parse().ok()).collect();
    if dims.len() != count {
        return Err(oxtile::Error::BadArgument {
            op: "bench ns",
            message: format!("`{text}`: expected {count} numbers joined by x"),
        });
    }
    Ok(dims)
}

#[derive(clap::Args)]
struct Exp2Args {
    /// Iterations per launch; each thread computes 32 exponentials per iteration.
    #[arg(long, default_value_t = exp2::DEFAULT_ITERS, value_parser = clap::value_parser!(u32).range(1..))]
    iters: u32,
    #[command(flatten)]
    timing: Timing,
    /// Write the rows as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the rows as CSV.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
}

pub fn run(args: &Args) -> oxtile::Result<ExitCode> {
    match &args.what {
        What::Gemm(args) => run_gemm(args),
        What::Attn(args) => run_attn(args),
        What::Copy(args) => run_copy(args),
        What::Exp2(args) => run_exp2(args),
        What::Ns(args) => run_ns(args),
    }
}

/// The GPU, or `None` after explaining why there is none.
fn open_gpu() -> oxtile::Result<Option<Gpu>> {
    match Gpu::new(0) {
        Ok(gpu) => Ok(Some(gpu)),
        Err(error @ (oxtile::Error::NoDriver(_) | oxtile::Error::NoGpu(_))) => {
            eprintln!("{error}");
            eprintln!("`oxtile bench` times kernels on a CUDA GPU; this machine has none.");
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// A progress bar that stays hidden for the first two seconds, so quick runs print nothing extra, and draws
/// only on a terminal.
struct Progress {
    bar: ProgressBar,
    started: Instant,
    shown: bool,
    done: u64,
}

impl Progress {
    fn new(steps: usize) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(steps as u64), ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("{bar:32} {pos}/{len} [{elapsed}] {msg}") {
            bar.set_style(style);
        }
        Progress { bar, started: Instant::now(), shown: false, done: 0 }
    }

    fn step(&mut self, message: &str) {
        if !self.shown && self.started.elapsed() > Duration::from_secs(2) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        self.bar.set_position(self.done);
        self.bar.set_message(message.to_string());
        self.done += 1;
    }

    fn finish(self) {
        self.bar.finish_and_clear();
    }
}

/// What `oxtile bench` watches a benchmark with: the progress bar, the clock meter, the log of turns.
struct Watch {
    progress: Progress,
    meter: Option<ClockMeter>,
    turns: Vec<TurnRecord>,
}

impl Watch {
    /// With the clock meter of `gpu` where NVML has one, saying in a comment line whether.
    fn new(gpu: &Gpu, steps: usize) -> Watch {
        let meter = match ClockMeter::open(gpu) {
            Ok(meter) => {
                println!("# MHz: median of the SM clock (NVML) sampled as each timed batch starts");
                Some(meter)
            }
            Err(reason) => {
                println!("# no clock column: {reason}");
                None
            }
        };
        Watch { progress: Progress::new(steps), meter, turns: Vec::new() }
    }

    /// Clears the progress bar and writes the turn log if one was asked for.
    fn finish(self, output: &Output) -> oxtile::Result<()> {
        self.progress.finish();
        if let Some(path) = &output.turn_log {
            report::write_turns_csv(path, &self.turns)?;
            println!("# wrote {}", path.display());
        }
        Ok(())
    }
}

impl BenchObserver for Watch {
    fn step(&mut self, text: &str) {
        self.progress.step(text);
    }

    fn turn_done(&mut self, turn: &TurnRecord) {
        self.turns.push(turn.clone());
    }

    fn meter(&self) -> Option<ClockMeter> {
        self.meter.clone()
    }
}

fn merge_peers(output: &Output, rows: &mut Vec<Row>, keep: impl Fn(&Row) -> bool) -> oxtile::Result<()> {
    for path in &output.peers {
        let peers = report::read_peer_rows(path)?;
        let before = rows.len();
        rows.extend(peers.into_iter().filter(&keep));
        println!("# merged {} rows from {}", rows.len() - before, path.display());
    }
    Ok(())
}

fn write_outputs(output: &Output, rows: &[Row], title: &str) -> oxtile::Result<()> {
    if let Some(path) = &output.json {
        report::write_json(path, rows)?;
        println!("# wrote {}", path.display());
    }
    if let Some(path) = &output.csv {
        report::write_csv(path, rows)?;
        println!("# wrote {}", path.display());
    }
    if let Some(path) = &output.plot {
        plot::write_svg(path, title, rows)?;
        println!("# wrote {}", path.display());
    }
    Ok(())
}

fn run_gemm(args: &GemmArgs) -> oxtile::Result<ExitCode> {
    // The sweep is read before the GPU is opened: a bad file is an error whatever the machine.
    let sweep = if args.sweep {
        let text = match &args.sweep_file {
            None => sweep::GEMM_SWEEP.to_string(),
            Some(path) => match std::fs::read_to_string(path) {
                Ok(text) => text,
                Err(e) => {
                    eprintln!("error: --sweep-file {}: {e}", path.display());
                    return Ok(ExitCode::FAILURE);
                }
            },
        };
        let all = match sweep::parse_sweep(&text) {
            Ok(all) => all,
            Err(e) => {
                eprintln!("error: the sweep: {e}");
                return Ok(ExitCode::FAILURE);
            }
        };
        let picked = sweep::select(&all, &args.class, args.every);
        if picked.is_empty() {
            eprintln!("error: --class {}: no shape of the sweep is in these classes", args.class.join(","));
            return Ok(ExitCode::FAILURE);
        }
        Some(picked)
    } else {
        None
    };
    let shapes: Vec<GemmShape> = match &sweep {
        Some(picked) => picked.iter().map(|s| s.shape).collect(),
        None if args.shapes.is_empty() => suite::GEMM_SUITE.to_vec(),
        None => args.shapes.clone(),
    };
    if args.plan {
        print_plan(args, &shapes);
        return Ok(ExitCode::SUCCESS);
    }
    let Some(gpu) = open_gpu()? else { return Ok(ExitCode::FAILURE) };
    let info = DeviceInfo::query(&gpu)?;
    let seed = args.seed.unwrap_or_else(oxtile::reference::fresh_seed);
    let config = GemmBenchConfig {
        timing: args.timing.config(),
        rounds: args.rounds.rounds as usize,
        check: !args.no_check,
        ..GemmBenchConfig::default()
    };

    let mut contenders = contenders::peer_contenders(&gpu)?;
    let ours = contenders::oxtile_contenders(&gpu)?;
    contenders.extend(ours);
    if !args.only.is_empty() {
        let known: Vec<String> = contenders.iter().map(|c| c.name().to_string()).collect();
        if let Some(unknown) = args.only.iter().find(|name| !known.contains(name)) {
            eprintln!("error: --only {unknown}: no such implementation (known: {})", known.join(", "));
            return Ok(ExitCode::FAILURE);
        }
        contenders.retain(|c| args.only.iter().any(|name| name == c.name()));
    }
    let has_ours = contenders.iter().any(|c| !c.is_peer());

    println!("{}", info.header());
    println!("# {}", args.timing.describe());
    println!("# {}", args.rounds.describe(args.timing.runs));
    println!(
        "# inputs N(0,1) (seed {seed}), enough sets rotated per launch to exceed {}x the L2; fp32 accumulation",
        config.l2_multiple
    );
    if !has_ours {
        println!("# no oxtile GEMM in this run: the table holds the cuBLAS peers only");
    }
    println!("# layouts (A, B; t = row-major, n = column-major): torch_reference.py's rows are tt");

    let pool = InputPool::new(seed);
    let mut problems = Vec::new();
    for &dtype in &args.dtype {
        for &layout in &args.layout {
            problems.extend(shapes.iter().map(|&shape| GemmProblem { shape, dtype, layout }));
        }
    }
    // A step for each contender's check, then one per turn.
    let mut watch = Watch::new(&gpu, problems.len() * contenders.len() * (1 + config.rounds));
    let mut rows = Vec::new();
    for problem in &problems {
        match gemm::bench_gemm(&gpu, &info, &pool, problem, &mut contenders, &config, &mut watch) {
            Ok(problem_rows) => rows.extend(problem_rows),
            Err(error) => {
                let mut row = Row::new("gemm", problem.shape.to_string(), "-");
                row.dtype = Some(problem.dtype.name().into());
                row.layout = Some(problem.layout.name().into());
                row.error = Some(error.to_string());
                rows.push(row);
            }
        }
    }
    watch.finish(&args.output)?;
    // A contender that does not take a problem (a forced oxtile variant without a kernel for the layout or type)
    // gets one line, not a row per problem.
    let mut rows = summarize_skipped(rows);

    let names: HashSet<String> = shapes.iter().map(ToString::to_string).collect();
    merge_peers(&args.output, &mut rows, |row| row.op == "gemm" && names.contains(&row.shape))?;
    report::group_by_problem(&mut rows);
    report::fill_ratios(&mut rows, BASELINE);
    println!();
    print!("{}", report::render_table(&rows, BASELINE));
    println!(
        "# vs {0}: TFLOP/s over {0}'s for the same problem; ±%: (p90 - p10) / median of the timed launches;\n\
         # max rel err: max |out - ref| / max |ref| against the output marked ref (bound 2^-6 bf16, 2^-9 f16)",
        BASELINE
    );
    print!("{}", report::suite_summary(&rows, BASELINE));
    if let Some(picked) = &sweep {
        print!("{}", sweep::class_summary(&rows, picked, BASELINE));
        print!("{}", sweep::kernel_summary(&rows));
    }
    let dtypes: Vec<&str> = args.dtype.iter().map(|d| d.name()).collect();
    write_outputs(&args.output, &rows, &format!("GEMM {} on {}", dtypes.join("/"), info.name))?;

    let failed = rows.iter().filter(|r| r.failed_check()).count();
    if failed > 0 {
        eprintln!("{failed} outputs failed the cross-check");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `oxtile bench gemm --plan`: one line per shape, type and layout with the kernel Auto runs, then how many shapes
/// each kernel takes. Stops quietly once stdout is closed (`| head`).
fn print_plan(args: &GemmArgs, shapes: &[GemmShape]) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    let mut lines =
        vec![format!("# the kernel Auto runs on {} SMs, operands read in place, before the tune cache", args.sms)];
    for &dtype in &args.dtype {
        for &layout in &args.layout {
            let options = oxtile::ops::gemm::GemmOptions { layout, ..Default::default() };
            for &shape in shapes {
                let types = (dtype.name(), dtype.name());
                let kernel = oxtile::ops::gemm::planned_kernel(shape, options, types, args.sms).unwrap_or("-");
                lines.push(format!("{:<18} {:<5} {:<3} {kernel}", shape.to_string(), dtype.name(), layout.name()));
                match counts.iter_mut().find(|(name, _)| *name == kernel) {
                    Some((_, count)) => *count += 1,
                    None => counts.push((kernel, 1)),
                }
            }
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    lines.extend(counts.into_iter().map(|(kernel, count)| format!("# {count:>4} {kernel}")));
    for line in lines {
        if writeln!(out, "{line}").is_err() {
            return;
        }
    }
}

fn run_attn(args: &AttnArgs) -> oxtile::Result<ExitCode> {
    let shapes = if args.shapes.is_empty() { suite::attn_suite() } else { args.shapes.clone() };
    let op = if args.backward { "attn-bwd" } else { "attn" };
    let keep = |row: &Row| row.op == op && row.shape.parse::<AttnShape>().is_ok_and(|s| shapes.contains(&s));
    let selected = if args.backward {
        select(&attention::BACKWARD_CONTENDERS, |c| c.0, &args.only).map(|backward| (Vec::new(), backward))
    } else {
        select(&attention::CONTENDERS, |c| c.name, &args.only).map(|forward| (forward, Vec::new()))
    };
    let (contenders, backward_contenders) = match selected {
        Ok(selected) => selected,
        Err(unknown) => {
            let known: Vec<&str> = if args.backward {
                attention::BACKWARD_CONTENDERS.iter().map(|c| c.0).collect()
            } else {
                attention::CONTENDERS.iter().map(|c| c.name).collect()
            };
            eprintln!("error: --only {unknown}: no such row (known: {})", known.join(", "));
            return Ok(ExitCode::FAILURE);
        }
    };
    let Some(gpu) = open_gpu()? else {
        // Nothing of ours can run; the peers' rows are still worth a table.
        let mut rows = Vec::new();
        merge_peers(&args.output, &mut rows, keep)?;
        if !rows.is_empty() {
            report::group_by_problem(&mut rows);
            report::fill_ratios(&mut rows, attention::BASELINE);
            print!("{}", report::render_table(&rows, attention::BASELINE));
        }
        return Ok(ExitCode::FAILURE);
    };
    let info = DeviceInfo::query(&gpu)?;
    let seed = args.seed.unwrap_or_else(oxtile::reference::fresh_seed);
    let config = AttnBenchConfig {
        timing: args.timing.config(),
        rounds: args.rounds.rounds as usize,
        check: !args.no_check,
        stats: !args.no_stats,
        ..AttnBenchConfig::default()
    };
    println!("{}", info.header());
    println!("# {}", args.timing.describe());
    println!("# {}", args.rounds.describe(args.timing.runs));
    println!(
        "# inputs N(0,1) (seed {seed}), q, k, v packed [B, S, H, D]; enough sets rotated per launch to exceed {}x the L2",
        config.l2_multiple
    );
    println!("# TFLOP/s: 4·B·H·S²·D, halved when causal (torch_reference.py's count)");

    let problems: Vec<AttnBenchProblem> = args
        .dtype
        .iter()
        .flat_map(|&dtype| shapes.iter().map(move |&shape| AttnBenchProblem { shape, dtype }))
        .collect();
    let pool = InputPool::new(seed);
    let per_problem = if args.backward { backward_contenders.len() } else { contenders.len() };
    let mut watch = Watch::new(&gpu, problems.len() * per_problem * (1 + config.rounds));
    let mut rows = Vec::new();
    let op = if args.backward { "attn-bwd" } else { "attn" };
    if args.backward {
        println!("# --backward: dQ, dK, dV from the forward kernel's O and LSE; TFLOP/s: 2.5 × the forward's count");
    }
    for problem in &problems {
        let result = if args.backward {
            attention::bench_attn_backward(&gpu, &info, &pool, problem, &backward_contenders, &config, &mut watch)
        } else {
            attention::bench_attn(&gpu, &info, &pool, problem, &contenders, &config, &mut watch)
        };
        match result {
            Ok(problem_rows) => rows.extend(problem_rows),
            Err(error) => {
                let mut row = Row::new(op, problem.shape.to_string(), "-");
                row.dtype = Some(problem.dtype.name().into());
                row.error = Some(error.to_string());
                rows.push(row);
            }
        }
    }
    watch.finish(&args.output)?;
    let mut rows = summarize_skipped(rows);
    merge_peers(&args.output, &mut rows, keep)?;
    if args.output.peers.is_empty() {
        println!(
            "# no --peers file: on the GPU machine run\n#   python3 ../shared/bench/torch_reference.py attn --json attn.json\n\
             # and pass --peers attn.json to show cuDNN and FlashAttention-2 here"
        );
    }
    report::group_by_problem(&mut rows);
    report::fill_ratios(&mut rows, attention::BASELINE);
    println!();
    print!("{}", report::render_table(&rows, attention::BASELINE));
    println!(
        "# vs {0}: TFLOP/s over {0}'s for the same problem (with --peers); rescale: share of (warp, key tile after\n\
         # the first) steps that rescaled the output (lazy: only when a row maximum grew by more than 8 in log2 units);\n\
         # max rel err: max |O - ref| / max |ref| against the GPU reference kernel (bound 2^-6 bf16, 2^-9 f16; LSE\n\
         # within the same, absolute)",
        attention::BASELINE
    );
    write_outputs(&args.output, &rows, &format!("Attention forward on {}", info.name))?;
    let failed = rows.iter().filter(|r| r.failed_check()).count();
    if failed > 0 {
        eprintln!("{failed} outputs failed the check against the GPU reference");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Rows of a contender that does not take a problem (an ablation that exists for one type and head dim only)
/// become one line per reason instead of a row per problem; the other rows are returned.
fn summarize_skipped(rows: Vec<Row>) -> Vec<Row> {
    let (skipped, rows): (Vec<Row>, Vec<Row>) =
        rows.into_iter().partition(|r| r.error.as_deref().is_some_and(|e| e.starts_with("unsupported")));
    let mut reasons: Vec<(String, String)> = Vec::new();
    for row in &skipped {
        let reason = (row.implementation.clone(), row.error.clone().unwrap_or_default());
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }
    for (implementation, reason) in &reasons {
        let count =
            skipped.iter().filter(|r| r.implementation == *implementation && r.error.as_ref() == Some(reason)).count();
        println!("# {implementation} skipped {count} problems, {reason}");
    }
    rows
}

fn run_copy(args: &CopyArgs) -> oxtile::Result<ExitCode> {
    let Some(gpu) = open_gpu()? else { return Ok(ExitCode::FAILURE) };
    let info = DeviceInfo::query(&gpu)?;
    let seed = args.seed.unwrap_or_else(oxtile::reference::fresh_seed);
    let sizes = if args.sizes.is_empty() { copy::DEFAULT_SIZES.to_vec() } else { args.sizes.clone() };
    println!("{}", info.header());
    println!("# {}", args.timing.describe());
    println!("# GB/s: bytes each launch must read plus write, over the median time; inputs N(0,1) (seed {seed})");
    let pool = InputPool::new(seed);
    let timing = args.timing.config();
    let mut progress = Progress::new(sizes.len() * 4);
    let mut rows = Vec::new();
    for &bytes in &sizes {
        match copy::bench_memory(&gpu, &info, &pool, bytes, &timing, &mut |step| progress.step(step)) {
            Ok(size_rows) => rows.extend(size_rows),
            Err(error) => {
                let mut row = Row::new("mem", suite::size_name(bytes), "-");
                row.error = Some(error.to_string());
                rows.push(row);
            }
        }
    }
    progress.finish();
    merge_peers(&args.output, &mut rows, |row| row.op == "mem")?;
    report::group_by_problem(&mut rows);
    report::fill_ratios(&mut rows, copy::BASELINE);
    println!();
    print!("{}", report::render_table(&rows, copy::BASELINE));
    println!("# vs {}: GB/s over the device-to-device copy's for the same buffer size", copy::BASELINE);
    write_outputs(&args.output, &rows, &format!("Memory-bound kernels on {}", info.name))?;
    Ok(ExitCode::SUCCESS)
}

fn run_exp2(args: &Exp2Args) -> oxtile::Result<ExitCode> {
    let Some(gpu) = open_gpu()? else { return Ok(ExitCode::FAILURE) };
    let info = DeviceInfo::query(&gpu)?;
    println!("{}", info.header());
    println!("# {}", args.timing.describe());
    println!(
        "# per launch: one wave of 256-thread blocks, 32 values per thread in registers, {} iterations of v <- 2^(v - 2)",
        args.iters
    );
    println!("# exp/clk/SM at the maximum SM clock; max rel err: per-thread sums against float64 (bound 2^-10)");
    let mut progress = Progress::new(oxtile::ops::softmax::Exp2Mode::ALL.len());
    let rows = exp2::bench_exp2(&gpu, args.iters, &args.timing.config(), &mut |step| progress.step(step))?;
    progress.finish();
    println!();
    print!("{}", exp2::render_table(&rows, &info));
    let output =
        Output { peers: Vec::new(), json: args.json.clone(), csv: args.csv.clone(), plot: None, turn_log: None };
    write_outputs(&output, &rows, "")?;
    let failed = rows.iter().filter(|r| r.failed_check() || r.error.is_some()).count();
    if failed > 0 {
        eprintln!("{failed} modes failed");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn run_ns(args: &NsArgs) -> oxtile::Result<ExitCode> {
    let Some(gpu) = open_gpu()? else { return Ok(ExitCode::FAILURE) };
    let info = DeviceInfo::query(&gpu)?;
    let seed = args.seed.unwrap_or_else(oxtile::reference::fresh_seed);
    let gemms: Vec<(usize, usize)> = if args.gemm.is_empty() {
        ns::DEFAULT_GEMMS.to_vec()
    } else if args.gemm == ["none"] {
        Vec::new()
    } else {
        args.gemm.iter().map(|g| parse_dims(g, 2).map(|d| (d[0], d[1]))).collect::<oxtile::Result<_>>()?
    };
    let stacks: Vec<(usize, usize, usize)> = if args.ns.is_empty() {
        ns::DEFAULT_NS.to_vec()
    } else if args.ns == ["none"] {
        Vec::new()
    } else {
        args.ns.iter().map(|s| parse_dims(s, 3).map(|d| (d[0], d[1], d[2]))).collect::<oxtile::Result<_>>()?
    };
    println!("{}", info.header());
    println!("# {}", args.timing.describe());
    println!(
        "# bf16; symgemm: X·Xᵀ, TFLOP/s of the full product (2·n²·k), ratio: {}'s time over each row's",
        ns::GEMM_BASELINE
    );
    println!(
        "# ns: five Polar Express steps, TFLOP/s of the standard iteration, ratio: {}'s time over each row's (seed {seed})",
        ns::NS_BASELINE
    );
    let pool = InputPool::new(seed);
    let timing = args.timing.config();
    let mut progress = Progress::new(gemms.len() * 3 + stacks.len() * 2);
    let mut rows = Vec::new();
    for &problem in &gemms {
        match ns::bench_symmetric(&gpu, &pool, problem, &timing, &mut |step| progress.step(step)) {
            Ok(problem_rows) => rows.extend(problem_rows),
            Err(error) => {
                let mut row = Row::new("symgemm", format!("{}x{}x{}", problem.0, problem.0, problem.1), "-");
                row.error = Some(error.to_string());
                rows.push(row);
            }
        }
    }
    for &stack in &stacks {
        match ns::bench_newton_schulz(&gpu, &pool, stack, &timing, &mut |step| progress.step(step)) {
            Ok(stack_rows) => rows.extend(stack_rows),
            Err(error) => {
                let mut row = Row::new("ns", format!("{}x{}x{}", stack.0, stack.1, stack.2), "-");
                row.error = Some(error.to_string());
                rows.push(row);
            }
        }
    }
    progress.finish();
    merge_peers(&args.output, &mut rows, |row| row.op == "symgemm" || row.op == "ns")?;
    // With torch's rows merged (scripts/torch_newton_schulz.py), each Newton-Schulz ratio is over torch's time.
    let torch: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| r.op == "ns" && r.implementation == "torch-ns-standard")
        .filter_map(|r| r.ms.map(|ms| (r.shape.clone(), ms)))
        .collect();
    for row in rows.iter_mut().filter(|r| r.op == "ns") {
        if let Some((_, base)) = torch.iter().find(|(shape, _)| *shape == row.shape) {
            row.ratio = row.ms.map(|ms| base / ms);
        }
    }
    report::group_by_problem(&mut rows);
    println!();
    print!("{}", report::render_table(&rows, ns::GEMM_BASELINE));
    write_outputs(&args.output, &rows, &format!("Symmetric GEMM and Newton-Schulz on {}", info.name))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::select;
    use oxtile::bench::attention;

    fn names(only: &[&str]) -> Result<Vec<&'static str>, String> {
        let only: Vec<String> = only.iter().map(|s| s.to_string()).collect();
        select(&attention::CONTENDERS, |c| c.name, &only)
            .map(|c| c.iter().map(|c| c.name).collect())
            .map_err(String::from)
    }

    #[test]
    fn only_keeps_the_named_rows_in_table_order_and_refuses_unknown_names() {
        assert_eq!(names(&[]).unwrap().len(), attention::CONTENDERS.len());
        assert_eq!(names(&["oxtile"]).unwrap(), ["oxtile"]);
        assert_eq!(names(&["oxtile-mufu", "oxtile"]).unwrap(), ["oxtile", "oxtile-mufu"]);
        assert_eq!(names(&["oxtile", "oxtile-bwd"]).unwrap_err(), "oxtile-bwd");
        let only = vec!["oxtile-bwd-det".to_string()];
        let backward = select(&attention::BACKWARD_CONTENDERS, |c| c.0, &only).unwrap();
        assert_eq!(backward.iter().map(|c| c.0).collect::<Vec<_>>(), ["oxtile-bwd-det"]);
    }
}
